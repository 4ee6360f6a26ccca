"""The dashboard's SQL on PostgreSQL: browse.py's listings, facets, histories and distributions,
answering as they do. A mixin of `PgStore`, called inside one `db.read()` snapshot."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .browse import ARCHIVED_CHOICES, SORTS, VALENCE_BINS
from .rows import MEMORY_COLUMNS, decode_row
from .shared import feedback_day, links_from

_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in MEMORY_COLUMNS) + " FROM memories m"
_PG_SORTS = {**SORTS, "used": "m.last_accessed_at IS NULL, m.last_accessed_at DESC, m.rowid DESC"}
_TAGS = "EXISTS (SELECT 1 FROM json_array_elements_text(m.tags::json) t WHERE t = ANY(%(tags)s))"


def _where(filters: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if filters.get("domains") is not None:
        params["domains"] = list(filters["domains"])
        clauses.append("m.domain = ANY(%(domains)s)")
    archived = filters.get("archived", "live")
    if archived == "live":
        clauses.append("m.archived = 0")
    elif archived == "archived":
        clauses.append("m.archived = 1")
    if filters.get("tags"):
        params["tags"] = list(filters["tags"])
        clauses.append(_TAGS)
    for col in ("memory_type", "tier", "source"):
        if filters.get(col):
            params[col] = filters[col]
            clauses.append(f"m.{col} = %({col})s")
    if filters.get("quarantined"):
        clauses.append("m.quarantine IS NOT NULL")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class PgBrowse:
    conn: Any

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
        if archived not in ARCHIVED_CHOICES:
            raise ValueError(f"archived must be one of {ARCHIVED_CHOICES}")
        where, params = _where(
            {
                "domains": domains,
                "archived": archived,
                "tags": tags,
                "memory_type": memory_type,
                "tier": tier,
                "source": source,
                "quarantined": quarantined,
            }
        )
        total = self.conn.execute("SELECT count(*) FROM memories m" + where, params).fetchone()[0]
        rows = self.conn.execute(
            _SELECT + where + f" ORDER BY {_PG_SORTS.get(sort, SORTS['newest'])} LIMIT %(limit)s OFFSET %(offset)s",
            {**params, "limit": int(limit), "offset": int(offset)},
        )
        return [decode_row(r) for r in rows], total

    def previews(self, ids: Iterable[str]) -> dict[str, tuple[str, bool]]:
        rows = self.conn.execute("SELECT id, content, archived FROM memories WHERE id = ANY(%s)", (list(ids),))
        return {mid: (content, bool(archived)) for mid, content, archived in rows}

    def facets(self, *, tag_limit: int = 300) -> dict[str, list[tuple[str, int]]]:
        def grouped(col: str, order: str) -> list[tuple[str, int]]:
            return [
                tuple(r) for r in self.conn.execute(f"SELECT {col}, count(*) FROM memories GROUP BY 1 ORDER BY {order}")
            ]

        tags = self.conn.execute(
            "SELECT t, count(*) AS n FROM memories m, json_array_elements_text(m.tags::json) t "
            "GROUP BY t ORDER BY n DESC, t LIMIT %s",
            (int(tag_limit),),
        )
        return {
            "tags": [tuple(r) for r in tags],
            "types": grouped("memory_type", "2 DESC, 1"),
            "tiers": grouped("tier", "1"),
            "sources": grouped("source", "2 DESC, 1"),
            "domains": grouped("domain", "2 DESC, 1"),
        }

    def feedback_page(self, memory_id: str, limit: int = 500) -> tuple[list[dict[str, Any]], int]:
        total = self.conn.execute("SELECT count(*) FROM feedback_events WHERE memory_id = %s", (memory_id,)).fetchone()[
            0
        ]
        cols = ("seq", "read_id", "outcome", "valence_before", "valence_after", "source", "created_at")
        rows = self.conn.execute(
            f"SELECT {', '.join(cols)} FROM (SELECT * FROM feedback_events WHERE memory_id = %s "
            "ORDER BY seq DESC LIMIT %s) e ORDER BY seq",
            (memory_id, int(limit)),
        )
        return [dict(zip(cols, r)) for r in rows], total

    def cues_of(self, memory_id: str, limit: int = 40) -> list[dict[str, Any]]:
        cols = ("concept", "value", "count", "updated_at")
        rows = self.conn.execute(
            "SELECT concept, value, count, updated_at FROM cues WHERE memory_id = %s "
            "ORDER BY abs(value) DESC, count DESC, concept LIMIT %s",
            (memory_id, int(limit)),
        )
        return [dict(zip(cols, r)) for r in rows]

    def associations_of(self, concepts: list[str], limit: int = 15) -> list[dict[str, Any]]:
        if not concepts:
            return []
        rows = self.conn.execute(
            "SELECT a, b, weight, valence, count FROM associations WHERE a = ANY(%(cs)s) OR b = ANY(%(cs)s) "
            "ORDER BY weight DESC, a, b LIMIT %(n)s",
            {"cs": list(concepts), "n": int(limit)},
        )
        return links_from(rows, concepts)

    def _histogram(self, expr: str, bins: int, archived: bool) -> list[int]:
        buckets = [0] * bins
        for b, n in self.conn.execute(
            f"SELECT least(greatest(floor({expr})::int, 0), {bins - 1}), count(*) FROM memories "
            "WHERE archived = %s GROUP BY 1",
            (int(archived),),
        ):
            buckets[int(b)] = n
        return buckets

    def quality_histogram(self, *, archived: bool = False) -> list[int]:
        return self._histogram("quality * 10", 10, archived)

    def valence_histogram(self, *, archived: bool = False) -> list[int]:
        return self._histogram(f"(valence + 1.0) * {VALENCE_BINS // 2}", VALENCE_BINS, archived)

    def feedback_by_day(self, since: str) -> dict[str, dict[str, int]]:
        days: dict[str, dict[str, int]] = {}

        for day, pos, neg, zero in self.conn.execute(
            "SELECT substr(created_at, 1, 10) AS d, count(*) FILTER (WHERE outcome > 0), "
            "count(*) FILTER (WHERE outcome < 0), count(*) FILTER (WHERE outcome = 0) "
            "FROM feedback_events WHERE created_at >= %s GROUP BY d",
            (since,),
        ):
            s = feedback_day(days, day)
            s["positive"], s["negative"], s["neutral"] = pos, neg, zero
        for day, up, down in self.conn.execute(
            "SELECT substr(h ->> 'at', 1, 10) AS d, count(*) FILTER (WHERE (h ->> 'rating')::float8 > 0), "
            "count(*) FILTER (WHERE (h ->> 'rating')::float8 < 0) FROM memories m, "
            "jsonb_array_elements(coalesce((m.metadata::jsonb) -> 'rating_history', '[]'::jsonb)) h "
            "WHERE h ->> 'at' >= %s GROUP BY d",
            (since,),
        ):
            s = feedback_day(days, day)
            s["thumbs_up"], s["thumbs_down"] = up, down
        return dict(sorted(days.items()))

    def counts_by_tier_and_type(self) -> list[tuple[str, str, int, int]]:
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT tier, memory_type, count(*) FILTER (WHERE archived = 0), count(*) FILTER (WHERE archived = 1) "
                "FROM memories GROUP BY 1, 2 ORDER BY 1, 2"
            )
        ]
