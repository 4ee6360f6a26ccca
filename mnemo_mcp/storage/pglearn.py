"""The PostgreSQL store's learned state and logs: outcomes and feedback events, concept links
(Hebbian associations) and query -> memory cues, the read log, and the lifecycle's pages. The same
contract as the SQLite store's (tests/test_store_contract.py); each batch is one statement, an
`unnest` of arrays, so a feedback costs few round trips."""

from __future__ import annotations

import json
from typing import Any

from .interface import FEEDBACK_EVENT_FIELDS
from .rows import FEEDBACK_COLUMNS, MEMORY_COLUMNS, READ_COLUMNS, decode_read, decode_row, feedback_events_sql

_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in MEMORY_COLUMNS) + " FROM memories m"


class PgLearning:
    conn: Any

    # --- outcomes and their log ----------------------------------------------------------

    def record_outcomes(self, updates: list[dict[str, Any]]) -> None:
        if not updates:
            return
        self.conn.execute(
            "UPDATE memories m SET valence = u.valence, feedback_count = u.n, metadata = u.meta, updated_at = u.at "
            "FROM unnest(%s::text[], %s::float8[], %s::int[], %s::text[], %s::text[]) AS u(id, valence, n, meta, at) "
            "WHERE m.id = u.id",
            (
                [u["id"] for u in updates],
                [u["valence"] for u in updates],
                [u["feedback_count"] for u in updates],
                [json.dumps(u["metadata"]) for u in updates],
                [u["updated_at"] for u in updates],
            ),
        )

    def record_usage(self, usage: list[dict[str, Any]]) -> None:
        if not usage:
            return
        with self.conn.cursor() as cur:
            cur.executemany(
                "UPDATE memories SET access_count = %(access_count)s, retrieval_count = %(retrieval_count)s, "
                "reciprocal_rank_sum = %(reciprocal_rank_sum)s, last_accessed_at = %(last_accessed_at)s, "
                "quality = %(quality)s, metadata = %(metadata)s WHERE id = %(id)s",
                [{**u, "metadata": json.dumps(u["metadata"])} for u in usage],
            )

    def add_feedback_events(self, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        cols = ", ".join(FEEDBACK_EVENT_FIELDS)
        marks = ", ".join(["%s"] * len(FEEDBACK_EVENT_FIELDS))
        # executemany in order: identity values follow the events' order.
        with self.conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO feedback_events({cols}) VALUES ({marks})",
                [[e.get(f) for f in FEEDBACK_EVENT_FIELDS] for e in events],
            )

    def feedback_events(self, memory_id: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        sql, params = feedback_events_sql("%s", memory_id, limit)
        return [dict(zip(FEEDBACK_COLUMNS, r)) for r in self.conn.execute(sql, params)]

    def positive_outcomes(self, memory_ids: list[str]) -> dict[str, int]:
        if not memory_ids:
            return {}
        rows = self.conn.execute(
            "SELECT memory_id, count(*) FROM feedback_events WHERE outcome > 0 AND memory_id = ANY(%s) "
            "GROUP BY memory_id",
            (list(memory_ids),),
        )
        return {mid: int(n) for mid, n in rows}

    # --- concept links and cues ----------------------------------------------------------

    def associations_between(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, float, int]]:
        if not pairs:
            return {}
        keys = list(dict.fromkeys((min(a, b), max(a, b)) for a, b in pairs))
        rows = self.conn.execute(
            "SELECT s.a, s.b, s.weight, s.valence, s.count FROM associations s "
            "JOIN unnest(%s::text[], %s::text[]) AS k(a, b) ON s.a = k.a AND s.b = k.b",
            ([a for a, _ in keys], [b for _, b in keys]),
        )
        return {(a, b): (w, v, n) for a, b, w, v, n in rows}

    def put_associations(self, rows: list[tuple[str, str, float, float, int, str]]) -> None:
        if not rows:
            return
        # One value per key (the last given), as SQLite's upsert of a batch leaves it.
        data = {(min(a, b), max(a, b)): (w, v, n, at) for a, b, w, v, n, at in rows}
        keys = list(data)
        self.conn.execute(
            "INSERT INTO associations(a, b, weight, valence, count, updated_at) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::float8[], %s::float8[], %s::int[], %s::text[]) "
            "ON CONFLICT (a, b) DO UPDATE SET weight = excluded.weight, valence = excluded.valence, "
            "count = excluded.count, updated_at = excluded.updated_at",
            (
                [a for a, _ in keys],
                [b for _, b in keys],
                [data[k][0] for k in keys],
                [data[k][1] for k in keys],
                [data[k][2] for k in keys],
                [data[k][3] for k in keys],
            ),
        )

    def cues_between(self, memory_ids: list[str], concepts: list[str]) -> dict[tuple[str, str], tuple[float, int]]:
        if not memory_ids or not concepts:
            return {}
        rows = self.conn.execute(
            "SELECT memory_id, concept, value, count FROM cues WHERE memory_id = ANY(%s) AND concept = ANY(%s)",
            (list(memory_ids), list(concepts)),
        )
        return {(mid, c): (v, n) for mid, c, v, n in rows}

    def put_cues(self, rows: list[tuple[str, str, float, int, str]]) -> None:
        if not rows:
            return
        data = {(mid, c): (v, n, at) for mid, c, v, n, at in rows}
        keys = list(data)
        self.conn.execute(
            "INSERT INTO cues(memory_id, concept, value, count, updated_at) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::float8[], %s::int[], %s::text[]) "
            "ON CONFLICT (memory_id, concept) DO UPDATE SET value = excluded.value, count = excluded.count, "
            "updated_at = excluded.updated_at",
            (
                [m for m, _ in keys],
                [c for _, c in keys],
                [data[k][0] for k in keys],
                [data[k][1] for k in keys],
                [data[k][2] for k in keys],
            ),
        )

    def cue_values(self, memory_ids: list[str], concepts: list[str]) -> dict[str, dict[str, tuple[float, str]]]:
        if not memory_ids or not concepts:
            return {}
        out: dict[str, dict[str, tuple[float, str]]] = {}
        rows = self.conn.execute(
            "SELECT memory_id, concept, value, updated_at FROM cues WHERE memory_id = ANY(%s) AND concept = ANY(%s)",
            (list(memory_ids), list(concepts)),
        )
        for mid, concept, value, updated_at in rows:
            out.setdefault(mid, {})[concept] = (value, updated_at)
        return out

    # --- the read log ---------------------------------------------------------------------

    def record_read(self, read: dict[str, Any], keep: int, since: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO reads(id, query, query_concepts, domain, results, created_at) VALUES (%s, %s, %s, %s, %s, %s)",
            (
                read["id"],
                read["query"],
                json.dumps(read["query_concepts"]),
                read["domain"],
                json.dumps(read["results"]),
                read["created_at"],
            ),
        )
        self.conn.execute(
            "DELETE FROM reads WHERE seq <= (SELECT max(seq) FROM reads) - %s OR created_at < %s", (keep, since or "")
        )

    def get_read(self, read_id: str) -> dict[str, Any] | None:
        sql = f"SELECT {', '.join(READ_COLUMNS)} FROM reads WHERE id = %s"
        return decode_read(self.conn.execute(sql, (read_id,)).fetchone())

    # --- lifecycle pages -------------------------------------------------------------------

    def memories_after(self, rowid: int, limit: int) -> list[dict[str, Any]]:
        rows = self.conn.execute(_SELECT + " WHERE m.rowid > %s ORDER BY m.rowid LIMIT %s", (rowid, limit))
        return [decode_row(r) for r in rows]

    def unjudged(self, version: int, limit: int) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            _SELECT + " WHERE coalesce((m.provenance::json ->> 'judged')::int, 0) < %s ORDER BY m.rowid LIMIT %s",
            (version, limit),
        )
        return [decode_row(r) for r in rows]

    def superseded_ids(self, memory_id: str) -> list[str]:
        rows = self.conn.execute("SELECT id FROM memories WHERE superseded_by = %s ORDER BY rowid", (memory_id,))
        return [r[0] for r in rows]
