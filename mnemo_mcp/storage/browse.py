"""The SQL behind the dashboard: listing memories with filters, facets, per-memory history and
store-wide distributions. Read-only; a part of `Store` (see store.py), called inside one of its
`db.read()` transactions, so a page is one consistent snapshot."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import apsw

from .rows import HAS_A_TAG, SELECT_MEMORIES, decode_row, in_list
from .shared import feedback_day, links_from

ARCHIVED_CHOICES = ("live", "archived", "all")
# Orderings of the unsearched list; the second key keeps pages stable when the first ties.
SORTS = {
    "newest": "m.rowid DESC",
    "updated": "m.updated_at DESC, m.rowid DESC",
    "quality": "m.quality DESC, m.rowid DESC",
    "worst": "m.quality ASC, m.rowid DESC",
    "valence": "m.valence DESC, m.rowid DESC",
    "used": "m.last_accessed_at IS NULL, m.last_accessed_at DESC, m.rowid DESC",
}
VALENCE_BINS = 20


def _where(
    *,
    domains: list[str] | None,
    archived: str,
    tags: list[str] | None,
    memory_type: str | None,
    tier: str | None,
    source: str | None = None,
    quarantined: bool = False,
) -> tuple[str, dict[str, Any]]:
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if domains is not None:
        in_domains, domain_params = in_list(domains)
        params.update(domain_params)
        clauses.append("m.domain IN " + in_domains)
    if archived == "live":
        clauses.append("m.archived = 0")
    elif archived == "archived":
        clauses.append("m.archived = 1")
    if tags:
        params["tags"] = json.dumps(tags)
        clauses.append(HAS_A_TAG)
    if memory_type:
        params["memory_type"] = memory_type
        clauses.append("m.memory_type = :memory_type")
    if tier:
        params["tier"] = tier
        clauses.append("m.tier = :tier")
    if source:
        params["source"] = source
        clauses.append("m.source = :source")
    if quarantined:
        clauses.append("m.quarantine IS NOT NULL")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class BrowseQueries:
    conn: apsw.Connection

    def memories_page(
        self,
        *,
        domains: list[str] | None = None,
        archived: str = "live",
        tags: list[str] | None = None,
        memory_type: str | None = None,
        tier: str | None = None,
        source: str | None = None,
        quarantined: bool = False,
        sort: str = "newest",
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[dict[str, Any]], int]:
        """One page of memories matching the filters, and how many match in all."""
        if archived not in ARCHIVED_CHOICES:
            raise ValueError(f"archived must be one of {ARCHIVED_CHOICES}")
        where, params = _where(
            domains=domains,
            archived=archived,
            tags=tags,
            memory_type=memory_type,
            tier=tier,
            source=source,
            quarantined=quarantined,
        )
        total = self.conn.execute("SELECT count(*) FROM memories m" + where, params).fetchone()[0]
        rows = self.conn.execute(
            SELECT_MEMORIES + where + f" ORDER BY {SORTS.get(sort, SORTS['newest'])} LIMIT :limit OFFSET :offset",
            {**params, "limit": int(limit), "offset": int(offset)},
        )
        return [decode_row(r) for r in rows], total

    def rows_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self.conn.execute(
            SELECT_MEMORIES + " WHERE m.id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)
        )
        return {r["id"]: r for r in map(decode_row, rows)}

    def previews(self, ids: Iterable[str]) -> dict[str, tuple[str, bool]]:
        """{id: (content, archived)} for the memories that still exist."""
        rows = self.conn.execute(
            "SELECT id, content, archived FROM memories WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        )
        return {mid: (content, bool(archived)) for mid, content, archived in rows}

    def facets(self, *, tag_limit: int = 300) -> dict[str, list[tuple[str, int]]]:
        """The values each filter can take, with how many memories (archived too) carry them."""
        return {
            "tags": list(
                self.conn.execute(
                    "SELECT t.value, count(*) AS n FROM memories m, json_each(m.tags) t "
                    "GROUP BY t.value ORDER BY n DESC, t.value LIMIT ?",
                    (tag_limit,),
                )
            ),
            "types": list(
                self.conn.execute("SELECT memory_type, count(*) FROM memories GROUP BY 1 ORDER BY 2 DESC, 1")
            ),
            "tiers": list(self.conn.execute("SELECT tier, count(*) FROM memories GROUP BY 1 ORDER BY 1")),
            "sources": list(self.conn.execute("SELECT source, count(*) FROM memories GROUP BY 1 ORDER BY 2 DESC, 1")),
            "domains": list(self.conn.execute("SELECT domain, count(*) FROM memories GROUP BY 1 ORDER BY 2 DESC, 1")),
        }

    def feedback_page(self, memory_id: str, limit: int = 500) -> tuple[list[dict[str, Any]], int]:
        """The latest `limit` feedback events of a memory, oldest first, and how many it has."""
        total = self.conn.execute("SELECT count(*) FROM feedback_events WHERE memory_id = ?", (memory_id,)).fetchone()[
            0
        ]
        cols = ("seq", "read_id", "outcome", "valence_before", "valence_after", "source", "created_at")
        rows = self.conn.execute(
            f"SELECT {', '.join(cols)} FROM (SELECT * FROM feedback_events WHERE memory_id = ? "
            "ORDER BY seq DESC LIMIT ?) ORDER BY seq",
            (memory_id, int(limit)),
        )
        return [dict(zip(cols, r)) for r in rows], total

    def cues_of(self, memory_id: str, limit: int = 40) -> list[dict[str, Any]]:
        """Query concepts that feedback linked to this memory, strongest (either sign) first."""
        cols = ("concept", "value", "count", "updated_at")
        rows = self.conn.execute(
            "SELECT concept, value, count, updated_at FROM cues WHERE memory_id = ? "
            "ORDER BY abs(value) DESC, count DESC, concept LIMIT ?",
            (memory_id, int(limit)),
        )
        return [dict(zip(cols, r)) for r in rows]

    def associations_of(self, concepts: list[str], limit: int = 15) -> list[dict[str, Any]]:
        """Hebbian links from these concepts to others, strongest first (each pair once)."""
        if not concepts:
            return []
        rows = self.conn.execute(
            "WITH q(c) AS (SELECT value FROM json_each(:cs)) "
            "SELECT a, b, weight, valence, count FROM associations WHERE a IN q OR b IN q "
            "ORDER BY weight DESC, a, b LIMIT :n",
            {"cs": json.dumps(concepts), "n": int(limit)},
        )
        return links_from(rows, concepts)

    def quality_histogram(self, *, archived: bool = False) -> list[int]:
        """Memories per quality tenth: [0, 0.1), ..., [0.9, 1]."""
        buckets = [0] * 10
        for b, n in self.conn.execute(
            "SELECT min(max(CAST(quality * 10 AS INTEGER), 0), 9), count(*) FROM memories WHERE archived = ? GROUP "
            "BY 1",
            (int(archived),),
        ):
            buckets[int(b)] = n
        return buckets

    def valence_histogram(self, *, archived: bool = False) -> list[int]:
        """Memories per valence bin of width 0.1 from -1 to 1 (a new memory's 0 falls in [0, 0.1))."""
        buckets = [0] * VALENCE_BINS
        half = VALENCE_BINS // 2
        for b, n in self.conn.execute(
            f"SELECT min(max(CAST((valence + 1.0) * {half} AS INTEGER), 0), {VALENCE_BINS - 1}), count(*) "
            "FROM memories WHERE archived = ? GROUP BY 1",
            (int(archived),),
        ):
            buckets[int(b)] = n
        return buckets

    def feedback_by_day(self, since: str) -> dict[str, dict[str, int]]:
        """{day: counts} of outcome reports and ratings from `since` (ISO date) on, by UTC day."""
        days: dict[str, dict[str, int]] = {}

        for day, pos, neg, zero in self.conn.execute(
            "SELECT substr(created_at, 1, 10) AS d, sum(outcome > 0), sum(outcome < 0), sum(outcome = 0) "
            "FROM feedback_events WHERE created_at >= ? GROUP BY d",
            (since,),
        ):
            s = feedback_day(days, day)
            s["positive"], s["negative"], s["neutral"] = pos, neg, zero
        # Ratings live in each memory's metadata (its last 20), not in a table of their own.
        for day, up, down in self.conn.execute(
            "SELECT substr(json_extract(h.value, '$.at'), 1, 10) AS d, "
            "sum(json_extract(h.value, '$.rating') > 0), sum(json_extract(h.value, '$.rating') < 0) "
            "FROM memories m, json_each(m.metadata, '$.rating_history') h "
            "WHERE json_extract(h.value, '$.at') >= ? GROUP BY d",
            (since,),
        ):
            s = feedback_day(days, day)
            s["thumbs_up"], s["thumbs_down"] = up, down
        return dict(sorted(days.items()))

    def counts_by_tier_and_type(self) -> list[tuple[str, str, int, int]]:
        """(tier, memory type, live, archived) for every pair present."""
        return list(
            self.conn.execute(
                "SELECT tier, memory_type, sum(archived = 0), sum(archived = 1) FROM memories GROUP BY 1, 2 ORDER BY "
                "1, 2"
            )
        )
