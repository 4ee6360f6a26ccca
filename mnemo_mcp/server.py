"""The MCP interface: tool definitions over the service API. No SQL, no ranking logic here."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, AsyncIterator, Callable, Iterator

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import ToolManager
from mcp.types import ToolAnnotations
from pydantic import BeforeValidator, Field

from . import __version__
from .config import Settings
from .errors import MnemoError
from .models import (
    ConsolidationReport,
    DeleteResult,
    FeedbackResult,
    LifecycleResult,
    QualityReport,
    RateResult,
    ReadResult,
    StatsResult,
    WriteResult,
)
from .hooks.channel import Listener
from .project import scoped

if TYPE_CHECKING:  # imported by the thread that opens the store, not before `initialize` is answered
    from .service import MemoryService

log = logging.getLogger(__name__)


def _not_bool(value: Any) -> Any:
    """JSON true/false is not a number: pydantic's lax mode would turn it into 1/0 before the
    service's own check (which names the argument) could refuse it."""
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean (true/false)")
    return value


NotBool = BeforeValidator(_not_bool)

# Claude Code defers MCP tools behind ToolSearch, whose keyword search did not return memory_read
# for "memory" or any mnemo tool for "remember this" (measured with 2.1.332). These three are what
# a model needs in every session, so they are loaded up front; the rest stay deferred.
ALWAYS_LOAD = {"anthropic/alwaysLoad": True}

INSTRUCTIONS = """\
mnemo is a long-term memory that learns from outcomes.
- Before non-trivial work, call memory_read with what you are about to do; keep its read_id.
- Save durable facts, decisions, fixes and user preferences with memory_write (one idea each).
- When you KNOW whether a recalled memory helped (tests passed, the user confirmed, or it was
  wrong), call memory_feedback with the read_id. Do not guess outcomes.
"""


ServiceFactory = Callable[[Settings], "MemoryService"]


@dataclass
class AppState:
    """What the tools share: the service, or the error that kept it from opening."""

    settings: Settings
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
                if self.service is not None:
                    self.warmup = threading.Thread(target=self.service.warm_up, name="mnemo-warmup", daemon=True)
                    self.warmup.start()
                    self.consolidate_in_background(after=self.warmup)
                    self.listen_for_hooks()

            self.opener = threading.Thread(target=run, name="mnemo-open", daemon=True)
            self.opener.start()

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
            self.service = self.factory(self.settings)
            self.error = None
        except MnemoError as err:
            # Logged once: each tool call tries again and would repeat it.
            (log.info if str(err) == self.error else log.error)("mnemo-mcp cannot open its store: %s", err)
            self.error = str(err)

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

        svc = self.service
        warmup = self.warmup
        host = HookHost(
            self.settings, svc.embedder, ready=lambda: svc.ready, loading=lambda: warmup is not None and warmup.is_alive()
        )
        listener = host.listener()
        if listener.start():
            self.hooks, self.hook_host = listener, host
            _on_exit.append(listener.stop)

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

    def __init__(self, warn_on_duplicate_tools: bool = True):
        super().__init__(warn_on_duplicate_tools)
        self._pending: list[tuple[Callable[..., Any], dict[str, Any]]] | None = []
        self._build_lock = threading.Lock()

    def add_tool(self, fn: Callable[..., Any], **kwargs: Any):  # type: ignore[override]
        if self._pending is not None:
            self._pending.append((fn, kwargs))
            return None
        return super().add_tool(fn, **kwargs)

    def _built(self) -> None:
        with self._build_lock:
            pending, self._pending = self._pending, None
            for fn, kwargs in pending or ():
                super().add_tool(fn, **kwargs)

    def get_tool(self, name: str):  # type: ignore[override]
        self._built()
        return super().get_tool(name)

    def list_tools(self):  # type: ignore[override]
        self._built()
        return super().list_tools()

    def remove_tool(self, name: str) -> None:
        self._built()
        super().remove_tool(name)


def _defer_tools(server: MCPServer) -> None:
    """Swap in the deferred tool manager (an SDK attribute: left alone if this SDK has none)."""
    current = getattr(server, "_tool_manager", None)
    if type(current) is ToolManager and not current.list_tools():
        server._tool_manager = _DeferredTools(current.warn_on_duplicate_tools)


def _default_service(settings: Settings) -> MemoryService:
    from .service import MemoryService

    return MemoryService(settings)


def build_server(settings: Settings | None = None, service_factory: ServiceFactory | None = None) -> MCPServer:
    settings = scoped(settings or Settings())
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
        name="mnemo",
        title="mnemo memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        middleware=[_open_after_handshake],
    )
    _defer_tools(server)

    def state_of(ctx: Context) -> AppState:
        return ctx.request_context.lifespan_context

    def service_of(ctx: Context) -> MemoryService:
        return state_of(ctx).usable_service()

    @contextmanager
    def tool_errors() -> Iterator[None]:
        try:
            yield
        except MnemoError as err:
            raise ToolError(str(err)) from err

    @server.tool(
        name="memory_write",
        title="Remember: save a memory",
        description=(
            "Remember something for later sessions: save one durable piece of knowledge to long-term memory "
            "(a fix that worked, a decision, a project convention, a lesson learned, a user preference, a "
            "gotcha). Write it self-contained (it will be read without this conversation). Writing the same "
            "content again is safe: it returns the same id with created=false and merges the tags; a "
            "near-duplicate is not stored and comes back as duplicate_of. To correct a wrong memory, write "
            "the right one with supersedes=[its id]. Do not store secrets."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
        meta=ALWAYS_LOAD,
    )
    def memory_write(
        ctx: Context,
        content: Annotated[str, Field(description="The memory text, 1..10,000 characters, self-contained.")],
        tags: Annotated[list[str], Field(description="Up to 20 short labels, e.g. ['python', 'ci'].")] = [],  # noqa: B006
        memory_type: Annotated[str, Field(description="Kind: note, decision, fix, preference, fact, ...")] = "note",
        metadata: Annotated[dict[str, Any], Field(description="Optional JSON object (max 16 KB).")] = {},  # noqa: B006
        domain: Annotated[str | None, Field(description="Optional scope, e.g. the project name.")] = None,
        supersedes: Annotated[
            list[str] | None,
            Field(description="Ids of memories this one corrects: they are archived and point to this one."),
        ] = None,
        allow_duplicate: Annotated[bool, Field(description="Store even if a near-duplicate exists.")] = False,
    ) -> WriteResult:
        with tool_errors():
            svc = service_of(ctx)
            result = svc.write(
                content, tags, memory_type, metadata, domain, supersedes=supersedes, allow_duplicate=allow_duplicate
            )
        if result.created and (svc.consolidation_due() == "writes" or svc.backup_due()):
            state_of(ctx).consolidate_in_background()
        return result

    @server.tool(
        name="memory_read",
        title="Recall memories: past fixes, decisions, lessons",
        description=(
            "Recall from long-term memory what earlier sessions learned: past fixes, decisions, project "
            "conventions, lessons and user preferences, found by meaning and by keywords and ranked by what "
            "helped before. Call it before non-trivial work and when an error looks familiar. Keep the "
            "returned read_id: pass it to memory_feedback once you know whether the memories helped."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
        meta=ALWAYS_LOAD,
    )
    def memory_read(
        ctx: Context,
        query: Annotated[str, Field(description="What you need to know, in plain words.")],
        top_k: Annotated[int, Field(ge=1, le=50, description="How many memories to return (1..50)."), NotBool] = 5,
        tags: Annotated[list[str] | None, Field(description="Only memories with at least one of these tags.")] = None,
        domain: Annotated[str | None, Field(description="Only memories of this scope.")] = None,
        min_relevance: Annotated[
            float | None,
            Field(ge=0.0, le=1.0, description="Drop results below this relevance (0..1). Default: none."),
            NotBool,
        ] = None,
        include_archived: Annotated[bool, Field(description="Also search archived memories.")] = False,
        expand_associations: Annotated[
            bool | None,
            Field(description="Also follow learned links between concepts to related memories (default: server setting)."),
        ] = None,
    ) -> ReadResult:
        with tool_errors():
            return service_of(ctx).read(query, top_k, tags, domain, min_relevance, include_archived, expand_associations)

    @server.tool(
        name="memory_feedback",
        title="Report whether recalled memories helped",
        description=(
            "Report what happened after using recalled memories (did the past fix or lesson work?): outcome "
            "+1.0 = they led to success, "
            "-1.0 = they misled (failure), values between for partial help. Pass the read_id from "
            "memory_read so the ranking learns for this kind of question, and your answer as response "
            "so the memories you actually used take the credit. Only report outcomes you actually "
            "know (a test result, the user's confirmation); never guess."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
        meta=ALWAYS_LOAD,
    )
    def memory_feedback(
        ctx: Context,
        memory_ids: Annotated[list[str], Field(description="Ids (or 8+ character prefixes) of the memories used.")],
        outcome: Annotated[
            float | None, Field(ge=-1.0, le=1.0, description="-1.0 failure .. +1.0 success; omit if unknown."), NotBool
        ] = None,
        read_id: Annotated[str | None, Field(description="The read_id of the memory_read that returned them.")] = None,
        query_concepts: Annotated[
            list[str] | None, Field(description="The query_concepts of that read, if you have no read_id.")
        ] = None,
        response: Annotated[
            str | None,
            Field(description="Your answer that used them: credit goes to the memories it actually followed."),
        ] = None,
    ) -> FeedbackResult:
        with tool_errors():
            return service_of(ctx).feedback(memory_ids, outcome, read_id, query_concepts, response)

    @server.tool(
        name="rate_memory",
        title="Rate a memory",
        description=(
            "Thumbs up (1), neutral (0) or thumbs down (-1) on one remembered memory, e.g. when the user says a "
            "memory is right or wrong, or it proved out of date. Changes its quality score."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    )
    def rate_memory(
        ctx: Context,
        memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
        rating: Annotated[int, Field(ge=-1, le=1, description="-1 thumbs down, 0 neutral, 1 thumbs up."), NotBool],
        reason: Annotated[str | None, Field(description="Why, in a few words (kept in the rating history).")] = None,
    ) -> RateResult:
        with tool_errors():
            return service_of(ctx).rate(memory_id, rating, reason)

    @server.tool(
        name="get_memory_quality",
        title="Inspect a memory's quality",
        description="Show a memory's quality score with its components, valence, usage counts and rating history.",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    )
    def get_memory_quality(
        ctx: Context,
        memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
    ) -> QualityReport:
        with tool_errors():
            return service_of(ctx).quality(memory_id)

    @server.tool(
        name="memory_stats",
        title="Memory store statistics",
        description="Counts, average valence and quality, quality histogram, types, size and embedding model.",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    )
    def memory_stats(ctx: Context) -> StatsResult:
        with tool_errors():
            return service_of(ctx).stats()

    @server.tool(
        name="memory_delete",
        title="Delete a memory permanently",
        description=(
            "Erase one memory and its learned state for good. Only when the user asks for it; to fix a "
            "wrong memory, write the corrected one and rate the old one down instead."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False),
    )
    def memory_delete(
        ctx: Context,
        memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
    ) -> DeleteResult:
        with tool_errors():
            return service_of(ctx).delete(memory_id)

    @server.tool(
        name="memory_consolidate",
        title="Consolidate the memory store",
        description=(
            "Tidy the store: refresh quality, promote proven memories (working -> history -> pattern) and "
            "demote ones that stopped helping, archive memories unused past their retention window, merge "
            "near-duplicates, decay unused concept links. Nothing is deleted; archived memories can be "
            "restored. It also runs by itself daily. Use dry_run=true to see what it would do."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    )
    def memory_consolidate(
        ctx: Context,
        dry_run: Annotated[bool, Field(description="Report what would change without changing anything.")] = False,
    ) -> ConsolidationReport:
        with tool_errors():
            return service_of(ctx).consolidate(dry_run=dry_run)

    @server.tool(
        name="memory_restore",
        title="Restore an archived memory",
        description="Bring an archived (or superseded) memory back into reads, with everything it learned.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    )
    def memory_restore(
        ctx: Context,
        memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
    ) -> LifecycleResult:
        with tool_errors():
            return service_of(ctx).restore(memory_id)

    return server


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
    build_server(settings).run()
