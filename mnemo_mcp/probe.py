"""The MCP 2026-07-28 `server/discover` probe, answered before the MCP SDK is imported.

Claude Code 2.1.332 first sends `server/discover` and gives a stdio server 3 s to answer before it
falls back to `initialize` (measured: 3.4 s to "Connected" when the probe timed out). Importing
the SDK alone takes about a second, more on a loaded machine. So the launcher reads the client's
first message itself: the probe is answered at once, from what this module knows (the same answer
the SDK gives: a test compares the two), and everything after it is the SDK's; any other first
message (`initialize` from an older client) is handed back to the SDK untouched. Standard
library only.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from . import __version__

NAME, TITLE = "mnemo", "mnemo memory"
INSTRUCTIONS = """\
mnemo is a long-term memory that learns from outcomes.
- Before non-trivial work, call memory_read with what you are about to do; keep its read_id.
- Save durable facts, decisions, fixes and user preferences with memory_write (one idea each).
- When you KNOW whether a recalled memory helped (tests passed, the user confirmed, or it was
  wrong), call memory_feedback with the read_id. Do not guess outcomes.
"""
MODERN_VERSIONS = ("2026-07-28",)
# What the SDK's server advertises for mnemo, which serves no subscriptions/listen (its tools never
# change: server._no_listen); tests/test_stdio.py checks the two agree.
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
MAX_FIRST_LINE = 1 << 20


def discover_result() -> dict[str, Any]:
    return {
        "cacheScope": "private",
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "resultType": "complete",
        "supportedVersions": list(MODERN_VERSIONS),
        "ttlMs": 0,
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": NAME, "title": TITLE, "version": __version__}},
    }


def _read_line(fd: int) -> bytes:
    """One message: the bytes up to and including the first newline (or EOF), no more, so the
    rest of the stream is left for whoever reads next."""
    out = bytearray()
    while len(out) < MAX_FIRST_LINE:
        chunk = os.read(fd, 1)
        if not chunk:
            break
        out += chunk
        if chunk == b"\n":
            break
    return bytes(out)


def _is_probe(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("method") != "server/discover" or "id" not in message:
        return False
    meta = (message.get("params") or {}).get("_meta") or {}
    return meta.get("io.modelcontextprotocol/protocolVersion") in MODERN_VERSIONS


_held: list[bytes] = []  # the first message, when it was not the probe: the next reader's


def take_held() -> bytes:
    """The first message read here and not answered, for the reader of stdin to take first
    (stdio.streams feeds it to its reader); empty when there is none."""
    line = b"".join(_held)
    _held.clear()
    return line


def hand_back_held(fd: int = 0) -> None:
    """For a reader that reads `fd` itself (the SDK's own stdio transport): the held message put
    back in front of the stream."""
    line = take_held()
    if line:
        _hand_back(line, fd)


def _hand_back(line: bytes, fd: int = 0) -> None:
    """Put `line` back in front of the rest of the stream at `fd` (a pipe fed by a thread: every
    later message then takes a hop through it, hence only where nothing can take `line` itself)."""
    read_end, write_end = os.pipe()
    source = os.dup(fd)
    os.dup2(read_end, fd)
    os.close(read_end)

    def relay() -> None:
        try:
            os.write(write_end, line)
            while chunk := os.read(source, 65536):
                os.write(write_end, chunk)
        except OSError:  # the reader went away: nothing left to hand over
            pass
        finally:
            os.close(write_end)
            os.close(source)

    threading.Thread(target=relay, name="mnemo-stdin", daemon=True).start()


FIRST_MESSAGE_WAIT_S = 0.5  # a client writes its first message at once; one that does not is the SDK's


def answer_early(stdin: int = 0, stdout: int = 1, wait_s: float = FIRST_MESSAGE_WAIT_S) -> bool:
    """Read the client's first message: answer it when it is the discover probe (-> True);
    otherwise hold it for the reader of stdin (take_held, hand_back_held) (-> False). A client
    that sends nothing within `wait_s` is left to the SDK, nothing read."""
    import select

    try:
        readable, _, _ = select.select([stdin], [], [], wait_s)
    except (OSError, ValueError):
        return False
    if not readable:
        return False
    line = _read_line(stdin)
    try:
        message = json.loads(line) if line.strip() else None
    except ValueError:
        message = None
    if _is_probe(message):
        response = {"jsonrpc": "2.0", "id": message["id"], "result": discover_result()}
        os.write(stdout, json.dumps(response, separators=(",", ":")).encode() + b"\n")
        return True
    if line:
        _held.append(line)
    return False
