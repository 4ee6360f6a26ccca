"""Result shapes shared by the service, the MCP tools and the CLI's JSON output.

Kept compact on purpose: Claude Code shows the model the structured JSON as it is.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer


class WriteResult(BaseModel):
    id: str
    created: bool = Field(description="false when the same content was already stored (tags merged)")
    concepts: list[str]
    tags: list[str]


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
    archived: bool = False

    @model_serializer(mode="wrap")
    def _drop_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Shown to the model as JSON on every read: leave out what says nothing (no domain, live).
        data = handler(self)
        if data.get("domain") is None:
            data.pop("domain", None)
        if data.get("archived") is False:
            data.pop("archived", None)
        return data


class ReadResult(BaseModel):
    read_id: str = Field(description="pass to memory_feedback so it learns for this kind of question")
    query_concepts: list[str]
    items: list[MemoryItem]


class ValenceChange(BaseModel):
    id: str
    valence_before: float
    valence_after: float


class FeedbackResult(BaseModel):
    updated: list[ValenceChange]
    not_found: list[str]
    associations_strengthened: int
    context_links_updated: int = Field(0, description="query-concept -> memory links taught by this call")


class RatingEntry(BaseModel):
    rating: int
    reason: str | None = None
    at: str


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


class StatsResult(BaseModel):
    total: int = Field(description="live (not archived) memories")
    archived: int
    avg_valence: float | None
    avg_quality: float | None
    quality_histogram: list[int] = Field(description="live memories per quality tenth: [0-0.1), ... [0.9-1]")
    by_type: dict[str, int]
    by_domain: dict[str, int]
    feedback_events: int
    associations: int
    db_size_bytes: int
    embedding_model: str | None
    embedding_dim: int | None


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


def preview(content: str, n: int = 80) -> str:
    flat = " ".join(content.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"
