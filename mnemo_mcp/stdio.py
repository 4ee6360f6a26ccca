"""The server's stdio transport: the SDK's `stdio_server`, given the standard streams as asyncio
pipes read and written on the event loop. The SDK's own streams go through a worker thread for
every line read, every write and every flush: three thread hops of each tool call, which on a busy
two-core machine cost more than the rest of the transport.

As the SDK does, the process's fd 0 then points at the null device and fd 1 at stderr while it
serves (a stray `print()` or a child's output never lands in the protocol stream), the protocol
going through private duplicates of both; they are put back when it ends. Where the standard
streams are not pipes, sockets or terminals (a regular file, Windows), `streams()` yields None and
the caller uses the SDK's transport as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

LINE_LIMIT = 1 << 30  # a JSON-RPC line of any size the SDK's own reader takes (memory_import)


def _pipe_like(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _Lines:
    """stdin as the SDK's transport iterates it: text lines, newline included."""

    def __init__(self, reader: asyncio.StreamReader):
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Out:
    """stdout as the SDK's transport writes it: `write` then `flush` (which waits for the pipe)."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of `fd` (close-on-exec, above the standard range), and `fd` pointed at
    `diversion`."""
    import fcntl

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(diversion, fd)
    except OSError:
        os.close(private)
        raise
    return private


@asynccontextmanager
async def streams() -> AsyncIterator[tuple[_Lines, _Out] | None]:
    """(stdin, stdout) for `mcp.server.stdio.stdio_server`, or None where they do not apply.
    A first message the launcher read and did not answer (probe.py) is the first line read."""
    from . import probe

    if sys.platform == "win32" or not (_pipe_like(0) and _pipe_like(1)):
        probe.hand_back_held()  # the SDK's transport reads fd 0 itself
        yield None
        return
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        wire_in = _claim(0, null)
    finally:
        os.close(null)
    try:
        err = os.dup(2)
    except OSError:  # no stderr: stray output goes nowhere
        err = os.open(os.devnull, os.O_WRONLY)
    try:
        wire_out = _claim(1, err)
    except OSError:
        os.dup2(wire_in, 0)
        os.close(wire_in)
        raise
    finally:
        os.close(err)
    loop = asyncio.get_running_loop()
    transports: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        held = probe.take_held()
        if held:
            reader.feed_data(held)
        # closefd=False: the private descriptors are ours to put back and close below.
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", 0, closefd=False)
        )
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", 0, closefd=False)
        )
        transports.append(write_transport)
        yield _Lines(reader), _Out(asyncio.StreamWriter(write_transport, protocol, None, loop))
    finally:
        for transport in transports:
            transport.close()
        for fd in (wire_in, wire_out):  # asyncio made them non-blocking: the process's streams again
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)
        os.close(wire_out)
        os.close(wire_in)
