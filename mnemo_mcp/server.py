"""The MCP server: its lifespan (the store opened, the model loaded off the handshake, the hook
socket, automatic upkeep) and how it stops on a signal. The tools are in tools.py."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import ToolManager

from . import __version__, request_state
from .errors import MnemoError
from .probe import INSTRUCTIONS, NAME, TITLE

if TYPE_CHECKING:  # imported by the thread that opens the store, not before `initialize` is answered
    from .config import Settings
    from .hooks.channel import Listener
    from .service import MemoryService

log = logging.getLogger(__name__)


ServiceFactory = Callable[["Settings"], "MemoryService"]


@dataclass
class AppState:
    """What the tools share: the service, or the error that kept it from opening."""

    settings: Settings | None  # None: read from the environment by the thread that opens the store
    service: MemoryService | None = None
    error: str | None = None
    warmup: threading.Thread | None = field(default=None, repr=False)
    consolidation: threading.Thread | None = field(default=None, repr=False)
    hooks: Listener | None = field(default=None, repr=False)
    hook_host: Any = field(default=None, repr=False)
    factory: ServiceFactory | None = field(default=None, repr=False)
    opener: threading.Thread | None = field(default=None, repr=False)
    _open_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _start_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self) -> None:
        """Open the store and start the model loading, hooks and upkeep in a background thread,
        once (idempotent). Called when the client's first message after `initialize` arrives
        (or a second after start at the latest): before that, the service's imports and the
        file's opening would compete with the handshake, which a bare MCPServer answers without
        them. A tool call waits for the opening."""
        with self._start_lock:
            if self.opener is not None:
                return

            def run() -> None:
                self.open()
                if self.service is None:
                    from .hooks import channel

                    if channel.EARLY is not None:  # hooks that found the socket early stop waiting
                        channel.EARLY.attach(lambda _request: "the server cannot open its store")
                        channel.EARLY.stop(remove_folder=True)  # nothing left beside a file we refuse
                if self.service is not None:
                    self._may_host_model()
                    self.warmup = threading.Thread(target=self._warm_up, name="mnemo-warmup", daemon=True)
                    self.warmup.start()
                    self.consolidate_in_background(after=self.warmup)
                    self.listen_for_hooks()

            self.opener = threading.Thread(target=run, name="mnemo-open", daemon=True)
            self.opener.start()

    def _may_host_model(self) -> None:
        """Before the warm-up loads the model: a server already listening (the launcher's early
        socket, which the hook host attaches to next) may hold it for the others."""
        from . import paths
        from .hooks import channel
        from .hooks.shared_model import SharedEmbedder

        embedder = self.service.embedder
        early = channel.EARLY
        if isinstance(embedder, SharedEmbedder) and early is not None and early.db == paths.db_key(self.settings.db):
            embedder.host_through(early)

    def _warm_up(self) -> None:
        from .lean import give_back_freed_memory

        self.service.warm_up()
        give_back_freed_memory()  # what the imports and the model's loading freed (~5 MB)

    def start_soon(self, delay_s: float) -> None:
        timer = threading.Timer(delay_s, self.start)
        timer.daemon = True
        timer.start()

    def _opened(self) -> None:
        self.start()
        opener = self.opener
        if opener is not None and opener is not threading.current_thread():
            opener.join()

    def open(self) -> None:
        try:
            self.service = self.factory(self._settings())
            self.error = None
        except MnemoError as err:
            # Logged once: each tool call tries again and would repeat it.
            (log.info if str(err) == self.error else log.error)("mnemo-mcp cannot open its store: %s", err)
            self.error = str(err)

    def _settings(self) -> Settings:
        """The settings, read from MNEMO_* (and the project folder) on first need: the bare
        `mnemo-mcp` server answers `initialize` before importing them. A bad value makes every
        tool answer with what is wrong, as a store that cannot open does."""
        if self.settings is None:
            from pydantic import ValidationError

            from .config import Settings
            from .project import scoped

            try:
                self.settings = scoped(Settings())
            except ValidationError as err:
                raise MnemoError(f"invalid MNEMO_ setting: {err}") from None
            logging.getLogger().setLevel(self.settings.log_level.upper())
        return self.settings

    def usable_service(self) -> MemoryService:
        """The service, opened again when it could not be before (the disk had no room, the file
        was damaged and a backup has been restored since): the server never has to restart."""
        self._opened()
        with self._open_lock:
            svc = self.service
            if svc is not None and svc.store_replaced_since_damage():
                svc.close()
                self.service = svc = None
            if svc is None and self.factory is not None:
                self.open()
                svc = self.service
        if svc is None:
            raise ToolError(self.error or "the memory store is not open")
        return svc

    def listen_for_hooks(self) -> None:
        """Answer Claude Code hooks with this process's model (see hooks.channel)."""
        if self.service is None or not self.settings.hook_server:
            return
        from .hooks.host import HookHost
        from .hooks.shared_model import SharedEmbedder

        svc = self.service
        host = HookHost(
            self.settings,
            svc.embedder,
            ready=lambda: svc.ready,
            loading=lambda: self.warmup is not None and self.warmup.is_alive(),
        )
        listener = host.listener()
        if listener.start():
            self.hooks, self.hook_host = listener, host
            _on_exit.append(listener.stop)
            if isinstance(svc.embedder, SharedEmbedder):
                svc.embedder.host_through(listener)

    def close(self) -> None:
        if self.opener is not None:
            self.opener.join()
        if self.hooks is not None:
            self.hooks.stop()
            self.hook_host.close()
        if self.service is not None:
            for thread in (self.warmup, self.consolidation):
                if thread is not None:
                    thread.join(timeout=30)
            self.service.close()
            from .hooks.shared_model import SharedEmbedder

            if isinstance(self.service.embedder, SharedEmbedder):
                self.service.embedder.release()  # the next server to need the model takes it

    def consolidate_in_background(self, after: threading.Thread | None = None) -> None:
        """Start automatic consolidation and backup if due and none is running in this process.
        Runs off the request path: a tool call never waits for more than one page of it."""
        svc = self.service
        if svc is None or not (self.settings.auto_consolidate or self.settings.auto_backup):
            return
        if self.consolidation is not None and self.consolidation.is_alive():
            return

        def run() -> None:
            if after is not None:
                after.join()
            # The backup first: it is a copy from before the day's bulk changes, and its check
            # finds a damaged file before consolidation would write into it.
            for name, upkeep in (("backup", svc.maybe_backup), ("consolidation", svc.maybe_consolidate)):
                try:
                    report = upkeep()
                    if report is not None:
                        log.info("automatic %s: %s", name, getattr(report, "counts", report))
                except Exception as err:  # never take the server down for upkeep
                    log.warning("automatic %s failed: %s", name, err)

        self.consolidation = threading.Thread(target=run, name="mnemo-consolidate", daemon=True)
        self.consolidation.start()


OPEN_AT_THE_LATEST_S = 1.0  # a client that sends nothing after `initialize` still gets its store opened


async def _open_after_handshake(ctx: Any, call_next: Any) -> Any:
    """Middleware: any message but `initialize` (first `notifications/initialized`) starts the
    opening of the store; see AppState.start."""
    if ctx.method != "initialize" and isinstance(ctx.lifespan_context, AppState):
        ctx.lifespan_context.start()
    return await call_next(ctx)


class _DeferredTools(ToolManager):
    """Builds the tools from their functions when they are first listed or called. Building them
    (pydantic models of every tool's arguments and result) took 16 ms, which a bare MCPServer
    does not spend before answering `initialize`; the client lists the tools only after it."""

    def __init__(self, warn_on_duplicate_tools: bool = True, loader: Callable[[], None] | None = None):
        super().__init__(warn_on_duplicate_tools)
        self._pending: list[tuple[Callable[..., Any], dict[str, Any]]] | None = []
        self._loader = loader  # registers the tools (imports tools.py and the result models)
        self._build_lock = threading.Lock()

    def add_tool(self, fn: Callable[..., Any], **kwargs: Any):  # type: ignore[override]
        if self._pending is not None:
            self._pending.append((fn, kwargs))
            return None
        return super().add_tool(fn, **kwargs)

    def _built(self) -> None:
        with self._build_lock:
            loader, self._loader = self._loader, None
            if loader is not None:
                loader()
            pending, self._pending = self._pending, None
            if pending:
                from .results import CompactResults

                for fn, kwargs in pending:
                    tool = super().add_tool(fn, **kwargs)
                    tool.fn_metadata = CompactResults.of(tool.fn_metadata)

    def get_tool(self, name: str):  # type: ignore[override]
        self._built()
        return super().get_tool(name)

    def list_tools(self):  # type: ignore[override]
        self._built()
        return super().list_tools()

    def remove_tool(self, name: str) -> None:
        self._built()
        super().remove_tool(name)


def _register_tools(server: MCPServer) -> None:
    from . import tools

    tools.register(server)


def _defer_tools(server: MCPServer) -> None:
    """Swap in the deferred tool manager (an SDK attribute: registered at once if this SDK has none)."""
    current = getattr(server, "_tool_manager", None)
    if type(current) is ToolManager and not current.list_tools():
        server._tool_manager = _DeferredTools(current.warn_on_duplicate_tools, loader=lambda: _register_tools(server))
    else:
        _register_tools(server)


def _default_service(settings: Settings) -> MemoryService:
    from .service import MemoryService

    return MemoryService(settings, server_embedder(settings))


def server_embedder(settings: Settings):
    """The embedder of a server: the bundled or a fastembed model, shared with the other
    servers of the database over the hook socket (hooks.shared_model) unless turned off."""
    from .embedding import FastEmbedEmbedder, make_embedder

    local = make_embedder(settings.embed_model, settings.model_cache_dir, settings.embed_weights)
    if not (settings.share_model and settings.hook_server and isinstance(local, FastEmbedEmbedder)):
        return local
    from .hooks.shared_model import SharedEmbedder

    return SharedEmbedder(local, settings.db)


def build_server(settings: Settings | None = None, service_factory: ServiceFactory | None = None) -> MCPServer:
    """The MCP server. `settings` None: read from the environment once the handshake is done."""
    if settings is not None:
        from .project import scoped

        settings = scoped(settings)
    factory = service_factory or _default_service

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[AppState]:
        # Runs before the initialize reply: the database is opened and the model loaded in the
        # background, so the handshake never waits for them. A tool call that comes first waits;
        # if the store cannot be opened, the tools answer with why (and try again on each call).
        state = AppState(settings, factory=factory)
        state.start_soon(OPEN_AT_THE_LATEST_S)
        try:
            yield state
        finally:
            state.close()

    server = MCPServer(
        name=NAME,
        title=TITLE,
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        middleware=[_open_after_handshake],
        # Ours, on hmac: the SDK's default codec is AES-GCM from `cryptography`, which the
        # launcher keeps out of the server (request_state.py says why that is enough here).
        request_state_security=request_state.security(),
    )
    _defer_tools(server)
    _no_listen(server)
    return server


def _no_listen(server: MCPServer) -> None:
    """mnemo's tools never change while it runs, so it serves no `subscriptions/listen`: at MCP
    2026-07-28 the server then advertises no `listChanged`, and Claude Code counts the
    connection made once `server/discover` is answered (the launcher answers it at once,
    probe.py) instead of waiting for a listen stream the SDK opens only after its import."""
    handlers = getattr(getattr(server, "_lowlevel_server", None), "_request_handlers", None)
    if isinstance(handlers, dict):
        handlers.pop("subscriptions/listen", None)


# Run before the process ends on a signal: the hook socket is removed, so no hook waits on it.
_on_exit: list[Callable[[], None]] = []


def _exit_now(signum: int, _frame: Any) -> None:
    """SIGINT / SIGTERM: Claude Code sends SIGINT, then SIGTERM ~100 ms later, when it quits.
    The stdio transport reads stdin in a worker thread that no cancellation can wake, so the
    event loop would wait forever: leave at once instead. Every write is its own transaction,
    so a process ending here leaves the database whole."""
    for cleanup in reversed(_on_exit):
        try:
            cleanup()
        except Exception:  # leaving anyway
            pass
    log.info("mnemo-mcp: stopped by signal %d", signum)
    sys.stderr.flush()
    os._exit(0)


def serve(settings: Settings | None = None) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit_now)
    from .hooks import channel

    if channel.EARLY is not None:
        _on_exit.append(channel.EARLY.stop)
    server = build_server(settings)
    if hasattr(server, "_lowlevel_server"):  # an SDK attribute: its own run() where this SDK has none
        import anyio

        anyio.run(_run_stdio, server)
    else:
        from .probe import hand_back_held

        hand_back_held()  # the first message, if the launcher read it: the SDK reads fd 0 itself
        server.run()


async def _run_stdio(server: MCPServer) -> None:
    """`server.run()` over stdio, its streams read and written on the event loop (stdio.py)."""
    from mcp.server.stdio import stdio_server

    from .stdio import streams

    async with streams() as ours:
        if ours is None:
            await server.run_stdio_async()
            return
        lowlevel = server._lowlevel_server
        async with stdio_server(*ours) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
