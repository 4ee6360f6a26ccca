"""The MCP tools: module-level functions over the service's facade, and the table that names
them, titles them and says what they may change. `server.build_server` registers the table.
A tool's description is its docstring (what the model reads to choose it); its arguments'
descriptions are in their annotations."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BeforeValidator, Field

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

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from .server import AppState
    from .service import MemoryService


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


def state_of(ctx: Context) -> AppState:
    return ctx.request_context.lifespan_context


def client_name(ctx: Context) -> str | None:
    """The MCP client as it named itself when it connected ("gemini-cli-mcp-client", ...): the
    provenance of what its model writes. None when it did not say (a stateless request)."""
    try:
        params = ctx.session.client_params
    except Exception:  # noqa: BLE001 - no session (a stateless request, an in-process test)
        return None
    info = getattr(params, "client_info", None) or getattr(params, "clientInfo", None)
    name = getattr(info, "name", None)
    return str(name)[:80] if isinstance(name, str) and name else None


def service_of(ctx: Context) -> MemoryService:
    return state_of(ctx).usable_service()


@contextmanager
def tool_errors() -> Iterator[None]:
    """The service's errors become tool errors: the model reads what was wrong and how to fix it."""
    try:
        yield
    except MnemoError as err:
        raise ToolError(str(err)) from err


# What each tool may change (MCP tool annotations): clients use them to decide what to confirm.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
CHANGES_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DESTROYS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def memory_write(
    ctx: Context,
    content: Annotated[str, Field(description="The memory text, 1..10,000 characters, self-contained.")],
    tags: Annotated[list[str], Field(description="Up to 20 short labels, e.g. ['python', 'ci'].")] = [],  # noqa: B006
    memory_type: Annotated[str, Field(description="Kind: note, decision, fix, preference, fact, ...")] = "note",
    metadata: Annotated[dict[str, Any], Field(description="Optional JSON object (max 16 KB).")] = {},  # noqa: B006
    domain: Annotated[
        str | None, Field(description="Optional scope, e.g. the project name; '@me' for your own.")
    ] = None,
    supersedes: Annotated[
        list[str] | None,
        Field(description="Ids of memories this one corrects: they are archived and point to this one."),
    ] = None,
    allow_duplicate: Annotated[bool, Field(description="Store even if a near-duplicate exists.")] = False,
) -> WriteResult:
    """Remember something for later sessions: save one durable piece of knowledge to long-term memory,
    so you remember it next time (a fix that worked, a decision, a project convention, a lesson
    learned, a user preference, a gotcha). Write it self-contained (it will be read without this
    conversation). Writing the same content again is safe: it returns the same id with
    created=false and merges the tags; a near-duplicate is not stored and comes back as
    duplicate_of. To correct a wrong memory, write the right one with supersedes=[its id]. Do not
    store secrets."""
    with tool_errors():
        svc = service_of(ctx)
        result = svc.write(
            content,
            tags=tags,
            memory_type=memory_type,
            metadata=metadata,
            domain=domain,
            supersedes=supersedes,
            allow_duplicate=allow_duplicate,
            by="mcp",
            client=client_name(ctx),
        )
    if result.created and svc.upkeep_due_after_write():
        state_of(ctx).consolidate_in_background()
    return result


def memory_read(
    ctx: Context,
    query: Annotated[str, Field(description="What you need to know, in plain words.")],
    top_k: Annotated[int, Field(ge=1, le=50, description="How many memories to return (1..50)."), NotBool] = 5,
    tags: Annotated[list[str] | None, Field(description="Only memories with at least one of these tags.")] = None,
    domain: Annotated[str | None, Field(description="Only memories of this scope ('@me': your own).")] = None,
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
    include_quarantined: Annotated[
        bool,
        Field(description="Show quarantined notes' text, fenced as data (withheld by default; they are never advice)."),
    ] = False,
) -> ReadResult:
    """Recall from long-term memory what earlier sessions learned: past fixes, what worked and what
    failed, decisions, project conventions, lessons and user preferences, found by meaning and by
    keywords and ranked by what helped before. Call it to recall before non-trivial work and when
    an error looks familiar. Keep
    the returned read_id: pass it to memory_feedback once you know whether the memories helped."""
    with tool_errors():
        return service_of(ctx).read(
            query,
            top_k=top_k,
            tags=tags,
            domain=domain,
            min_relevance=min_relevance,
            include_archived=include_archived,
            expand_associations=expand_associations,
            include_quarantined=include_quarantined,
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
    """Report what happened after using recalled memories (did the past fix or lesson work?): outcome
    +1.0 = they led to success, -1.0 = they misled (failure), values between for partial help.
    Pass the read_id from memory_read so the ranking learns for this kind of question, and your
    answer as response so the memories you actually used take the credit. Only report outcomes
    you actually know (a test result, the user's confirmation); never guess."""
    with tool_errors():
        return service_of(ctx).feedback(
            memory_ids, outcome=outcome, read_id=read_id, query_concepts=query_concepts, response=response
        )


def rate_memory(
    ctx: Context,
    memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
    rating: Annotated[int, Field(ge=-1, le=1, description="-1 thumbs down, 0 neutral, 1 thumbs up."), NotBool],
    reason: Annotated[str | None, Field(description="Why, in a few words (kept in the rating history).")] = None,
) -> RateResult:
    """Thumbs up (1), neutral (0) or thumbs down (-1) on one remembered memory, e.g. when the user says
    a memory is right or wrong, or it proved out of date. Changes its quality score."""
    with tool_errors():
        return service_of(ctx).rate(memory_id, rating=rating, reason=reason)


def get_memory_quality(
    ctx: Context,
    memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
) -> QualityReport:
    """Show a memory's quality score with its components, valence, usage counts and rating history."""
    with tool_errors():
        return service_of(ctx).quality(memory_id)


def memory_stats(ctx: Context) -> StatsResult:
    """Counts, average valence and quality, quality histogram, types, size and embedding model."""
    with tool_errors():
        return service_of(ctx).stats()


def memory_delete(
    ctx: Context,
    memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
) -> DeleteResult:
    """Erase one memory and its learned state for good. Only when the user asks for it; to fix a wrong
    memory, write the corrected one and rate the old one down instead."""
    with tool_errors():
        return service_of(ctx).delete(memory_id)


def memory_consolidate(
    ctx: Context,
    dry_run: Annotated[bool, Field(description="Report what would change without changing anything.")] = False,
) -> ConsolidationReport:
    """Tidy the store: refresh quality, promote proven memories (working -> history -> pattern) and
    demote ones that stopped helping, archive memories unused past their retention window, merge
    near-duplicates, decay unused concept links. Nothing is deleted; archived memories can be
    restored. It also runs by itself daily. Use dry_run=true to see what it would do."""
    with tool_errors():
        return service_of(ctx).consolidate(dry_run=dry_run)


def memory_restore(
    ctx: Context,
    memory_id: Annotated[str, Field(description="Memory id or a unique prefix of 8+ characters.")],
) -> LifecycleResult:
    """Bring an archived (or superseded) memory back into reads, with everything it learned."""
    with tool_errors():
        return service_of(ctx).restore(memory_id)


@dataclass(frozen=True)
class Tool:
    fn: Callable[..., Any]
    title: str
    annotations: ToolAnnotations
    always_load: bool = False

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def description(self) -> str:
        return " ".join(inspect.cleandoc(self.fn.__doc__ or "").split())


TOOLS: tuple[Tool, ...] = (
    Tool(memory_write, "Remember: save a memory", CHANGES_IDEMPOTENT, always_load=True),
    Tool(memory_read, "Recall memories: past fixes, decisions, lessons", CHANGES, always_load=True),
    Tool(memory_feedback, "Report whether recalled memories helped", CHANGES, always_load=True),
    Tool(rate_memory, "Rate a memory", CHANGES),
    Tool(get_memory_quality, "Inspect a memory's quality", READ_ONLY),
    Tool(memory_stats, "Memory store statistics", READ_ONLY),
    Tool(memory_delete, "Delete a memory permanently", DESTROYS),
    Tool(memory_consolidate, "Consolidate the memory store", CHANGES),
    Tool(memory_restore, "Restore an archived memory", CHANGES_IDEMPOTENT),
)


def register(server: MCPServer) -> None:
    for tool in TOOLS:
        server.add_tool(
            tool.fn,
            name=tool.name,
            title=tool.title,
            description=tool.description,
            annotations=tool.annotations,
            meta=ALWAYS_LOAD if tool.always_load else None,
        )
