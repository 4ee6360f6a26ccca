"""Result shapes shared by the service, the MCP tools and the CLI's JSON output.

Kept compact on purpose: Claude Code shows the model the structured JSON as it is.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import SkipJsonSchema


class SimilarMemory(BaseModel):
    id: str
    similarity: float = Field(description="cosine similarity to the new memory")
    differs: list[str] = Field(
        description="what changed: numbers, versions, paths, names on either side, or 'negation'"
    )


class WriteResult(BaseModel):
    id: str
    created: bool = Field(description="false when the same content was already stored (tags merged)")
    concepts: list[str]
    tags: list[str]
    tier: str = "working"
    duplicate_of: str | None = Field(
        None,
        description="not stored: this near-duplicate memory exists (write with allow_duplicate=true to store anyway)",
    )
    similarity: float | None = Field(None, description="cosine similarity to duplicate_of")
    superseded: list[str] | None = Field(None, description="ids archived and replaced by this memory")
    similar: list[SimilarMemory] | None = Field(
        None,
        description="stored, but these say the same with a fact changed: pass supersedes=[id] if this replaces one",
    )
    quarantined: str | None = Field(
        None, description="set when the note reads as instructions to the assistant: why, and who may release it"
    )

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self))


class MemoryItem(BaseModel):
    id: str
    content: str
    tags: list[str]
    memory_type: str
    domain: str | None = None
    relevance: float = Field(description="calibrated similarity to the query, 0..1")
    valence: float = Field(description="learned outcome, -1 (misled) .. +1 (helped)")
    quality: float = Field(description="quality score 0..1 (0.5 = new)")
    score: float = Field(description="final ranking score: relevance plus learned signals")
    created_at: str
    # The lifecycle tier, for the command line and the dashboard: never shown to the model, which
    # read "working" beside a negative valence as "this works" (it has `outcome` in words instead).
    tier: SkipJsonSchema[str] = Field("working", exclude=True)
    archived: bool = False
    superseded_by: str | None = Field(None, description="the memory that replaced this one")
    expanded_via: str | None = Field(None, description="reached through this associated concept, not the query's words")
    source: str | None = Field(None, description="who stored it: mcp, capture, cli, import, api")
    quarantined: str | None = Field(
        None,
        description="reads as instructions to the assistant (why): text withheld unless asked for; never injected",
    )
    provenance: str | None = Field(None, description="for a quarantined note: who stored it, when, from which session")
    outcome: str | None = Field(
        None, description='what happened when it was used: "worked before (2x)", "tried before, failed (1x)", "new"'
    )
    # The parts of relevance, for the prompt hook's decision (core.recall): never shown to the model.
    semantic: SkipJsonSchema[float | None] = Field(None, exclude=True)
    lexical: SkipJsonSchema[float | None] = Field(None, exclude=True)

    @model_serializer(mode="wrap")
    def _drop_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Shown to the model as JSON on every read: leave out what says nothing (no domain, live).
        data = _without_none(handler(self))
        if data.get("archived") is False:
            data.pop("archived", None)
        return data


class ReadResult(BaseModel):
    read_id: str = Field(description="pass to memory_feedback so it learns for this kind of question")
    query_concepts: list[str]
    items: list[MemoryItem]
    expanded_concepts: list[str] | None = Field(None, description="concepts added through learned associations")
    warning: str | None = Field(
        None,
        description="set when the read could not be recorded (disk full): its read_id is unknown to memory_feedback",
    )

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self))


class ValenceChange(BaseModel):
    id: str
    valence_before: float
    valence_after: float


class TensionPair(BaseModel):
    followed: str = Field(description="the memory the answer agreed with (strengthened)")
    weakened: str = Field(description="the one it did not (little credit, links weakened)")
    reason: str


class FeedbackResult(BaseModel):
    updated: list[ValenceChange]
    not_found: list[str]
    associations_strengthened: int
    associations_weakened: int = 0
    context_links_updated: int = Field(0, description="query-concept -> memory links taught by this call")
    alignment: dict[str, float] | None = Field(None, description="how closely the response followed each memory, 0..1")
    credit: dict[str, float] | None = Field(None, description="share of the outcome each memory took")
    tension: list[TensionPair] | None = None

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self))


class RatingEntry(BaseModel):
    rating: int
    reason: str | None = None
    at: str
    user: str | None = None  # who rated (settings.user); None for ratings from before it was kept


class RateResult(BaseModel):
    id: str
    user_rating: int
    quality_score: float
    rating_count: int


class FeedbackEvent(BaseModel):
    outcome: float
    valence_after: float
    read_id: str | None
    source: str
    at: str


class QualityReport(BaseModel):
    id: str
    content_preview: str
    quality_score: float
    components: dict[str, float]
    valence: float
    access_count: int
    retrieval_count: int
    feedback_count: int
    rating_count: int
    user_rating: int | None
    rating_history: list[RatingEntry]
    recent_feedback: list[FeedbackEvent]
    archived: bool
    tier: str = "working"
    source: str = "write"
    archive_reason: str | None = None
    superseded_by: str | None = None
    supersedes: list[str] = Field(default_factory=list, description="memories this one replaced or absorbed")
    provenance: dict[str, Any] = Field(
        default_factory=dict, description="who stored it and when (for captures, the session)"
    )
    quarantine: dict[str, Any] | None = Field(
        None, description="set: it reads as instructions, is never injected; only a person releases it"
    )


class StatsResult(BaseModel):
    total: int = Field(description="live (not archived) memories")
    archived: int
    avg_valence: float | None
    avg_quality: float | None
    quality_histogram: list[int] = Field(description="live memories per quality tenth: [0-0.1), ... [0.9-1]")
    by_type: dict[str, int]
    by_domain: dict[str, int]
    by_tier: dict[str, int] = Field(default_factory=dict)
    feedback_events: int
    associations: int
    db_size_bytes: int
    embedding_model: str | None
    embedding_dim: int | None
    last_consolidation: str | None = Field(None, description="as-of date of the last consolidation run")
    last_backup: str | None = Field(None, description="when the newest automatic backup was taken (UTC)")
    last_backup_age_hours: float | None = Field(None, description="how old that backup is")
    backups: int = Field(0, description="automatic backups kept")


class DeleteResult(BaseModel):
    id: str
    deleted: bool
    content_preview: str


class ImportResult(BaseModel):
    memories_added: int
    memories_skipped: int
    feedback_events: int
    associations: int
    context_links: int


class LifecycleChange(BaseModel):
    id: str
    preview: str
    reason: str
    tier: str | None = None
    into: str | None = None

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self))


class ConsolidationReport(BaseModel):
    as_of: str
    dry_run: bool
    examined: int = Field(description="live memories looked at")
    counts: dict[str, int] = Field(
        description="archived, promoted, demoted, merged, quality_updated, recovered, links_decayed, links_pruned"
    )
    archived: list[LifecycleChange]
    promoted: list[LifecycleChange]
    demoted: list[LifecycleChange]
    merged: list[LifecycleChange]
    truncated: bool = Field(False, description="lists hold the first entries only; counts are complete")


class LifecycleResult(BaseModel):
    id: str
    archived: bool
    tier: str
    content_preview: str
    changed: bool = Field(description="false when it already was in that state")


class ReleaseResult(BaseModel):
    id: str
    released: bool = Field(description="false when it was not quarantined")
    reason: str | None = Field(None, description="why it had been quarantined")
    content_preview: str


class SessionCredit(BaseModel):
    signal: str
    outcome: float
    memory_ids: list[str] = Field(description="memories whose valence this signal moved")
    note: str | None = None


class SessionPrompt(BaseModel):
    new_turn: bool = Field(description="false: not a prompt the user typed in a new turn (nothing happened)")
    credit: SessionCredit | None = Field(None, description="the reaction to the previous turn, when it was one")


class HealthCheck(BaseModel):
    name: str
    ok: bool
    found: int = Field(0, description="problems found")
    detail: str | None = None


class DoctorReport(BaseModel):
    ok: bool = Field(description="true when every check passes (after repairs, with repair)")
    memories: int
    checks: list[HealthCheck]
    repaired: list[str] = Field(default_factory=list)
    advice: list[str] = Field(default_factory=list, description="what to do about problems a repair cannot fix")


class BackupResult(BaseModel):
    path: str
    memories: int
    bytes: int


class BackupInfo(BaseModel):
    path: str
    taken_at: str = Field(description="UTC time from the file name")
    bytes: int


class FileDiagnosis(BaseModel):
    """What `doctor` can say about a database file that the service cannot open."""

    path: str
    exists: bool
    bytes: int = 0
    problem: str = Field(description="damaged, foreign, disk_full, unavailable or none")
    detail: str = Field(description="the error, as SQLite or the system reported it")
    integrity: list[str] = Field(default_factory=list, description="the first problems SQLite's quick_check lists")
    memories_listed: int | None = Field(None, description="memories the file still counts (None: cannot tell)")
    latest_backup: BackupInfo | None = None
    advice: list[str] = Field(default_factory=list)


class SalvageReport(BaseModel):
    source: str = Field(description="the damaged file, left as it was")
    output: str | None = Field(description="the new database holding what was recovered (None: nothing was)")
    memories_recovered: int
    memories_listed: int | None = Field(None, description="memories the damaged file still counts (None: cannot tell)")
    memories_skipped: int = Field(
        0, description="rows that read but failed their content check (id != hash of content)"
    )
    unreadable_regions: int = Field(0, description="ranges of rows SQLite could not read and that were skipped")
    vectors_copied: int = 0
    vectors_reembedded: int = 0
    feedback_events: int = 0
    context_links: int = 0
    associations: int = 0
    notes: list[str] = Field(default_factory=list)


class RestoreResult(BaseModel):
    restored_from: str
    database: str
    memories: int
    previous_kept_at: str | None = Field(None, description="the file that was replaced, kept under this name")


def _without_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def preview(content: str, n: int = 80) -> str:
    flat = " ".join(content.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"
