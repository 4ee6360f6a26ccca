"""Browsing: what the dashboard shows. Lists, facets, one memory's whole story, store-wide
distributions. Searching goes through `read` (not recorded), so the dashboard's order is the
order the model sees; everything else is read-only SQL in storage/browse.py."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from .. import validate
from ..core import lifecycle
from ..errors import InvalidInput, NotFound
from ..models import QualityReport, StatsResult
from ..storage import browse as sql
from .base import Part, ServiceContext, rnd
from .health import Health
from .learning import Learning
from .reading import Reading

PAGE_LIMIT = 200
ACTIVITY_DAYS = 60


class MemoryRow(BaseModel):
    id: str
    content: str
    tags: list[str]
    memory_type: str
    domain: str
    tier: str
    source: str = "write"
    by: str | None = Field(None, description="who stored it (provenance)")
    quarantine: str | None = Field(None, description="why it is kept out of injection; a person can release it")
    quality: float
    valence: float
    archived: bool
    superseded_by: str | None = None
    created_at: str
    updated_at: str
    last_accessed_at: str | None = None
    access_count: int
    feedback_count: int
    rating_count: int
    user_rating: int | None = None
    relevance: float | None = Field(None, description="set on search results")
    score: float | None = Field(None, description="set on search results: what the read ranked by")


class BrowsePage(BaseModel):
    items: list[MemoryRow]
    total: int = Field(description="memories matching the filters (search: results shown)")
    offset: int
    limit: int
    query: str | None = None
    query_concepts: list[str] = Field(default_factory=list)
    scope: list[str] | None = Field(None, description="domains listed; None = every domain")


class Facets(BaseModel):
    tags: list[tuple[str, int]]
    types: list[tuple[str, int]]
    tiers: list[tuple[str, int]]
    domains: list[tuple[str, int]]
    sources: list[tuple[str, int]] = Field(default_factory=list)


class LinkedConcept(BaseModel):
    concept: str
    value: float
    count: int
    updated_at: str


class ConceptLink(BaseModel):
    concept: str
    other: str
    weight: float
    valence: float
    count: int


class MemoryRef(BaseModel):
    id: str
    content: str | None = Field(None, description="None when that memory was deleted")
    archived: bool = False


class FeedbackRecord(BaseModel):
    outcome: float
    valence_before: float
    valence_after: float
    source: str
    read_id: str | None
    at: str


class MemoryDetail(BaseModel):
    memory: MemoryRow
    concepts: list[str]
    user_metadata: dict[str, Any]
    source: str
    archived_at: str | None
    archive_reason: str | None
    quality: QualityReport
    feedback: list[FeedbackRecord] = Field(description="oldest first; the latest ones when there are many")
    feedback_total: int
    cues: list[LinkedConcept] = Field(description="query concepts feedback linked to this memory")
    associations: list[ConceptLink] = Field(description="learned links from this memory's concepts")
    superseded_by: MemoryRef | None = None
    supersedes: list[MemoryRef] = Field(default_factory=list)


class DayActivity(BaseModel):
    day: str
    positive: int = 0
    negative: int = 0
    neutral: int = 0
    thumbs_up: int = 0
    thumbs_down: int = 0


class TierTypeCount(BaseModel):
    tier: str
    memory_type: str
    live: int
    archived: int


class Analytics(BaseModel):
    stats: StatsResult
    quality_histogram: list[int] = Field(description="live memories per quality tenth")
    valence_histogram: list[int] = Field(description="live memories per valence twentieth of [-1, 1]")
    activity: list[DayActivity] = Field(description="every day of the window, oldest first")
    tier_type: list[TierTypeCount]


def _memory_row(row: dict[str, Any], relevance: float | None = None, score: float | None = None) -> MemoryRow:
    meta = row["metadata"]
    return MemoryRow(
        id=row["id"],
        content=row["content"],
        tags=row["tags"],
        memory_type=row["memory_type"],
        domain=row["domain"],
        tier=row["tier"],
        source=row["source"],
        by=(row.get("provenance") or {}).get("by"),
        quarantine=(row.get("quarantine") or {}).get("reason") if row.get("quarantine") else None,
        quality=rnd(row["quality"]),
        valence=rnd(row["valence"]),
        archived=row["archived"],
        superseded_by=row["superseded_by"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        last_accessed_at=row["last_accessed_at"],
        access_count=row["access_count"],
        feedback_count=row["feedback_count"],
        rating_count=int(meta.get("rating_count", 0)),
        user_rating=meta.get("user_rating"),
        relevance=relevance,
        score=score,
    )


class Browse(Part):
    def __init__(self, ctx: ServiceContext, *, reading: Reading, learning: Learning, health: Health):
        super().__init__(ctx)
        self.reading, self.learning, self.health = reading, learning, health

    def default_scope(self) -> list[str] | None:
        """The domains a read searches when no domain is named (None: every domain)."""
        return self._read_scope(None)

    def browse_list(
        self,
        query: str | None = None,
        *,
        tags: list[str] | None = None,
        memory_type: str | None = None,
        tier: str | None = None,
        source: str | None = None,
        quarantined: bool = False,
        archived: str = "live",
        domain: str | None = None,
        sort: str = "newest",
        limit: int = 50,
        offset: int = 0,
    ) -> BrowsePage:
        """Memories in the read scope. With a query: the read's ranking (top `max_top_k`, not
        recorded, so browsing does not count as use), then the type/tier filters; without one,
        a page of the whole scope in `sort` order."""
        if archived not in sql.ARCHIVED_CHOICES:
            raise InvalidInput(f"archived must be one of {', '.join(sql.ARCHIVED_CHOICES)}")
        if tier is not None and tier not in lifecycle.TIERS:
            raise InvalidInput(f"tier must be one of {', '.join(lifecycle.TIERS)}")
        tag_filter = validate.tags(tags, self.settings, what="tags filter") or None
        domains = self._read_scope(validate.domain(domain))
        limit = max(1, min(int(limit), PAGE_LIMIT))
        offset = max(0, int(offset))
        query = (query or "").strip() or None
        if query is None:
            with self.store.db.read():
                rows, total = self.store.memories_page(
                    domains=domains,
                    archived=archived,
                    tags=tag_filter,
                    memory_type=memory_type or None,
                    tier=tier,
                    source=source or None,
                    quarantined=quarantined,
                    sort=sort,
                    limit=limit,
                    offset=offset,
                )
            return BrowsePage(
                items=[_memory_row(r) for r in rows], total=total, offset=offset, limit=limit, scope=domains
            )
        result = self.reading.read(
            query,
            top_k=min(limit, self.settings.max_top_k),
            tags=tag_filter,
            domain=domain or None,
            include_archived=archived != "live",
            record=False,
        )
        with self.store.db.read():
            rows = self.store.rows_by_ids([it.id for it in result.items])
        items = [
            _memory_row(rows[it.id], it.relevance, it.score)
            for it in result.items
            if it.id in rows
            and (archived != "archived" or it.archived)
            and (not memory_type or it.memory_type == memory_type)
            and (not tier or it.tier == tier)
            and (not source or rows[it.id]["source"] == source)
            and (not quarantined or rows[it.id]["quarantine"] is not None)
        ]
        return BrowsePage(
            items=items,
            total=len(items),
            offset=0,
            limit=limit,
            query=query,
            query_concepts=result.query_concepts,
            scope=domains,
        )

    def browse_facets(self) -> Facets:
        with self.store.db.read():
            return Facets(**self.store.facets())

    def browse_memory(self, memory_id: str, *, feedback_limit: int = 500) -> MemoryDetail:
        """Everything about one memory: content, metadata, ratings, outcomes, learned links."""
        report = self.learning.quality(memory_id)  # resolves prefixes, raises NotFound
        mid = report.id
        with self.store.db.read():
            row = self.store.get(mid)
            if row is None:  # deleted by another process a moment ago
                raise NotFound(f"no memory has id {mid}")
            events, total = self.store.feedback_page(mid, feedback_limit)
            cues = self.store.cues_of(mid)
            links = self.store.associations_of(row["concepts"])
            related = [i for i in [row["superseded_by"], *report.supersedes] if i]
            shown = self.store.previews(related)

        def ref(i: str) -> MemoryRef:
            content, archived = shown.get(i, (None, False))
            return MemoryRef(id=i, content=content, archived=archived)

        return MemoryDetail(
            memory=_memory_row(row),
            concepts=row["concepts"],
            user_metadata={k: v for k, v in row["metadata"].items() if k not in validate.RESERVED_METADATA_KEYS},
            source=row["source"],
            archived_at=row["archived_at"],
            archive_reason=row["archive_reason"],
            quality=report,
            feedback=[
                FeedbackRecord(
                    outcome=e["outcome"],
                    valence_before=rnd(e["valence_before"]),
                    valence_after=rnd(e["valence_after"]),
                    source=e["source"],
                    read_id=e["read_id"],
                    at=e["created_at"],
                )
                for e in events
            ],
            feedback_total=total,
            cues=[LinkedConcept(**{**c, "value": rnd(c["value"])}) for c in cues],
            associations=[
                ConceptLink(**{**a, "weight": rnd(a["weight"]), "valence": rnd(a["valence"])}) for a in links
            ],
            superseded_by=ref(row["superseded_by"]) if row["superseded_by"] else None,
            supersedes=[ref(i) for i in report.supersedes],
        )

    def browse_analytics(self, *, days: int = ACTIVITY_DAYS, now: datetime | None = None) -> Analytics:
        """Distributions of the live store and outcome activity per day over the last `days`."""
        stats = self.health.stats()
        today = (now or self.clock()).date()
        first = today - timedelta(days=max(1, days) - 1)
        with self.store.db.read():
            quality = self.store.quality_histogram()
            valence = self.store.valence_histogram()
            by_day = self.store.feedback_by_day(first.isoformat())
            tier_type = [
                TierTypeCount(tier=t, memory_type=m, live=lv, archived=ar)
                for t, m, lv, ar in self.store.counts_by_tier_and_type()
            ]
        activity = []
        for i in range((today - first).days + 1):
            day = (first + timedelta(days=i)).isoformat()
            activity.append(DayActivity(day=day, **by_day.get(day, {})))
        return Analytics(
            stats=stats, quality_histogram=quality, valence_histogram=valence, activity=activity, tier_type=tier_type
        )
