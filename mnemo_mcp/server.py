"""The MCP interface: tool definitions over the service API. No SQL, no ranking logic here."""

from __future__ import annotations

import logging
import threading
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, AsyncIterator, Callable, Iterator

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from . import __version__
from .config import Settings
from .errors import MnemoError
from .models import (
    DeleteResult,
    FeedbackResult,
    QualityReport,
    RateResult,
    ReadResult,
    StatsResult,
    WriteResult,
)
from .service import MemoryService

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
mnemo is a long-term memory that learns from outcomes.
- Before non-trivial work, call memory_read with what you are about to do; keep its read_id.
- Save durable facts, decisions, fixes and user preferences with memory_write (one idea each).
- When you KNOW whether a recalled memory helped (tests passed, the user confirmed, or it was
  wrong), call memory_feedback with the read_id. Do not guess outcomes.
"""


@dataclass
class AppState:
    """What the tools share: the service, or the error that kept it from opening."""

    settings: Settings
    service: MemoryService | None = None
    error: str | None = None
    warmup: threading.Thread | None = field(default=None, repr=False)


ServiceFactory = Callable[[Settings], MemoryService]


def build_server(settings: Settings | None = None, service_factory: ServiceFactory | None = None) -> MCPServer:
    settings = settings or Settings()
    factory = service_factory or (lambda s: MemoryService(s))

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[AppState]:
        # Runs before the initialize reply: open the database (milliseconds) and load the model in
        # the background, so the handshake never waits for it. A read that comes first waits.
        state = AppState(settings)
        try:
            state.service = factory(settings)
        except MnemoError as err:
            state.error = str(err)
            log.error("mnemo-mcp cannot open its store: %s", err)
        if state.service is not None:
            state.warmup = threading.Thread(target=state.service.warm_up, name="mnemo-warmup", daemon=True)
            state.warmup.start()
        try:
            yield state
        finally:
            if state.service is not None:
                if state.warmup is not None:
                    state.warmup.join(timeout=30)
                state.service.close()

    server = MCPServer(
        name="mnemo",
        title="mnemo memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
    )

    def service_of(ctx: Context) -> MemoryService:
        state: AppState = ctx.request_context.lifespan_context
        if state.service is None:
            raise ToolError(state.error or "the memory store is not open")
        return state.service

    @contextmanager
    def tool_errors() -> Iterator[None]:
        try:
            yield
        except MnemoError as err:
            raise ToolError(str(err)) from err

    @server.tool(
        name="memory_write",
        title="Save a memory",
        description=(
            "Store one durable piece of knowledge for later sessions: a decision, a fix that worked, a "
            "project convention, a user preference, a gotcha. Write it self-contained (it will be read "
            "without this conversation). Writing the same content again is safe: it returns the same id "
            "with created=false and merges the tags. Do not store secrets."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    )
    def memory_write(
        ctx: Context,
        content: Annotated[str, Field(description="The memory text, 1..10,000 characters, self-contained.")],
        tags: Annotated[list[str], Field(description="Up to 20 short labels, e.g. ['python', 'ci'].")] = [],  # noqa: B006
        memory_type: Annotated[str, Field(description="Kind: note, decision, fix, preference, fact, ...")] = "note",
        metadata: Annotated[dict[str, Any], Field(description="Optional JSON object (max 16 KB).")] = {},  # noqa: B006
        domain: Annotated[str | None, Field(description="Optional scope, e.g. the project name.")] = None,
    ) -> WriteResult:
        with tool_errors():
            return service_of(ctx).write(content, tags, memory_type, metadata, domain)

    @server.tool(
        name="memory_read",
        title="Recall memories",
        description=(
            "Find stored memories relevant to a query, by meaning and by keywords, ranked by relevance "
            "and by what past feedback taught. Call it before non-trivial work. Keep the returned "
            "read_id: pass it to memory_feedback once you know whether the memories helped."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    )
    def memory_read(
        ctx: Context,
        query: Annotated[str, Field(description="What you need to know, in plain words.")],
        top_k: Annotated[int, Field(ge=1, le=50, description="How many memories to return (1..50).")] = 5,
        tags: Annotated[list[str] | None, Field(description="Only memories with at least one of these tags.")] = None,
        domain: Annotated[str | None, Field(description="Only memories of this scope.")] = None,
        min_relevance: Annotated[
            float | None, Field(ge=0.0, le=1.0, description="Drop results below this relevance (0..1). Default: none.")
        ] = None,
        include_archived: Annotated[bool, Field(description="Also search archived memories.")] = False,
    ) -> ReadResult:
        with tool_errors():
            return service_of(ctx).read(query, top_k, tags, domain, min_relevance, include_archived)

    @server.tool(
        name="memory_feedback",
        title="Report an outcome",
        description=(
            "Report what happened after using recalled memories: outcome +1.0 = they led to success, "
            "-1.0 = they misled (failure), values between for partial help. Pass the read_id from "
            "memory_read so the ranking learns for this kind of question. Only report outcomes you "
            "actually know (a test result, the user's confirmation); never guess."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    )
    def memory_feedback(
        ctx: Context,
        memory_ids: Annotated[list[str], Field(description="Ids (or 8+ character prefixes) of the memories used.")],
        outcome: Annotated[float, Field(ge=-1.0, le=1.0, description="-1.0 failure .. +1.0 success.")],
        read_id: Annotated[str | None, Field(description="The read_id of the memory_read that returned them.")] = None,
        query_concepts: Annotated[
            list[str] | None, Field(description="The query_concepts of that read, if you have no read_id.")
        ] = None,
    ) -> FeedbackResult:
        with tool_errors():
            return service_of(ctx).feedback(memory_ids, outcome, read_id, query_concepts)

    @server.tool(
        name="rate_memory",
        title="Rate a memory",
        description=(
            "Thumbs up (1), neutral (0) or thumbs down (-1) on one memory, e.g. when the user says a "
            "memory is right or wrong, or it proved out of date. Changes its quality score."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    )
    def rate_memory(
        ctx: Context,
        memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
        rating: Annotated[int, Field(ge=-1, le=1, description="-1 thumbs down, 0 neutral, 1 thumbs up.")],
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

    return server


def serve(settings: Settings | None = None) -> None:
    build_server(settings).run()
