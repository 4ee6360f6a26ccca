"""The rest of the PostgreSQL store: the hooks' session events, captured cases, concept links'
upkeep, the lifecycle's reads and records, stats, and doctor's checks and repairs. A mixin of
`PgStore`; each method answers as the SQLite store's does (tests/test_store_contract.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from . import scrub
from .rows import MEMORY_COLUMNS, decode_row, vector_literal
from .shared import SESSION_COLUMNS, session_event, useful_by_concept

if TYPE_CHECKING:
    import numpy as np

_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)
_CASE_KEY = "(m.metadata::jsonb) #>> '{case,key}'"
_CASE_SIGNATURE = "(m.metadata::jsonb) #>> '{case,signature}'"


class _Qmark:
    """A psycopg connection that takes SQLite's `?` placeholders, for the SQL both stores share
    (scrub.py's)."""

    def __init__(self, conn: Any):
        self.conn = conn

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self.conn.execute(sql.replace("?", "%s"), params)


class PgMore:
    conn: Any
    rebuild_text_index: Any  # PgText's

    # --- session events (hooks) -------------------------------------------------------------

    def next_session_seq(self) -> int:
        return int(self.conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM session_events").fetchone()[0])

    def add_session_events(self, events: list[dict[str, Any]], keep: int) -> None:
        if not events:
            return
        cols: list[list[Any]] = [[] for _ in SESSION_COLUMNS]
        for e in events:
            values = (
                e["seq"],
                e["session_id"],
                e["kind"],
                json.dumps(list(e.get("memory_ids", []))),
                e.get("read_id"),
                json.dumps(e.get("detail", {})),
                e["created_at"],
            )
            for col, value in zip(cols, values):
                col.append(value)
        self.conn.execute(
            "INSERT INTO session_events(seq, session_id, kind, memory_ids, read_id, detail, created_at) "
            "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
            "%s::text[])",
            [self._no_nul_list(c) for c in cols],
        )
        self.conn.execute("DELETE FROM session_events WHERE seq <= %s", (max(e["seq"] for e in events) - keep,))

    @staticmethod
    def _no_nul_list(values: list[Any]) -> list[Any]:
        # Session details are what agents print: a NUL there is dropped, not a reason to lose the event.
        return [v.replace("\x00", "") if isinstance(v, str) else v for v in values]

    def session_events(self, session_id: str, after_seq: int = 0) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM session_events WHERE session_id = %s AND seq > %s ORDER BY seq",
            (session_id, after_seq),
        )
        return [session_event(r) for r in rows]

    # --- cases --------------------------------------------------------------------------------

    def case_by_key(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            _SELECT + f" FROM memories m WHERE m.memory_type = 'case' AND {_CASE_KEY} = %s LIMIT 1", (key,)
        ).fetchone()
        return decode_row(row) if row else None

    def case_signatures(self, domains: list[str] | None, limit: int) -> list[tuple[str, str]]:
        where = "m.memory_type = 'case' AND m.archived = 0 AND m.quarantine IS NULL"
        params: list[Any] = []
        if domains is not None:
            where += " AND m.domain = ANY(%s)"
            params.append(list(domains))
        rows = self.conn.execute(
            f"SELECT m.id, {_CASE_SIGNATURE} AS s FROM memories m WHERE {where} AND {_CASE_SIGNATURE} IS NOT NULL "
            "ORDER BY m.rowid DESC LIMIT %s",
            (*params, int(limit)),
        )
        return [(a, b) for a, b in rows]

    # --- concept links ------------------------------------------------------------------------

    def useful_concepts(self, min_weight: float) -> dict[str, float]:
        return useful_by_concept(
            self.conn.execute(
                "SELECT a, b, weight * valence FROM associations WHERE valence > 0 AND weight >= %s", (min_weight,)
            )
        )

    def strongest_links(self, concepts: list[str], limit: int, min_weight: float) -> list[tuple[str, str, float]]:
        if not concepts or limit <= 0:
            return []
        rows = self.conn.execute(
            "WITH l(src, dst, strength) AS ("
            "  SELECT a, b, weight * (1 + valence) / 2 FROM associations WHERE a = ANY(%(cs)s) AND weight >= %(w)s"
            "  UNION ALL SELECT b, a, weight * (1 + valence) / 2 FROM associations "
            "  WHERE b = ANY(%(cs)s) AND weight >= %(w)s), "
            "best AS (SELECT DISTINCT ON (dst) src, dst, strength FROM l WHERE dst <> ALL(%(cs)s) "
            "  ORDER BY dst, strength DESC, src) "
            "SELECT src, dst, strength FROM best ORDER BY strength DESC, dst LIMIT %(n)s",
            {"cs": list(concepts), "w": min_weight, "n": int(limit)},
        )
        return [(a, b, float(w)) for a, b, w in rows]

    def links_unused_since_decay(self, now: str) -> list[tuple[str, str, float, float, float]]:
        since = (
            "extract(epoch FROM (%(now)s::timestamptz - "
            "greatest(updated_at, coalesce(decayed_at, updated_at))::timestamptz)) / 86400.0"
        )
        rows = self.conn.execute(
            f"SELECT a, b, weight, valence, days FROM (SELECT a, b, weight, valence, {since} AS days "
            "FROM associations) s WHERE days > 0",
            {"now": now},
        )
        return [(a, b, w, v, float(d)) for a, b, w, v, d in rows]

    def apply_link_decay(self, now: str, weights: list[tuple[str, str, float]], dropped: list[tuple[str, str]]) -> None:
        if dropped:
            self.conn.execute(
                "DELETE FROM associations s USING unnest(%s::text[], %s::text[]) AS d(a, b) "
                "WHERE s.a = d.a AND s.b = d.b",
                ([a for a, _ in dropped], [b for _, b in dropped]),
            )
        if weights:
            self.conn.execute(
                "UPDATE associations s SET weight = d.w, decayed_at = %s "
                "FROM unnest(%s::text[], %s::text[], %s::float8[]) AS d(a, b, w) WHERE s.a = d.a AND s.b = d.b",
                (now, [a for a, _, _ in weights], [b for _, b, _ in weights], [w for _, _, w in weights]),
            )

    def move_cues(self, from_id: str, to_id: str) -> None:
        self.conn.execute(
            "INSERT INTO cues(memory_id, concept, value, count, updated_at) "
            "SELECT %s, concept, value, count, updated_at FROM cues WHERE memory_id = %s "
            "ON CONFLICT (memory_id, concept) DO NOTHING",
            (to_id, from_id),
        )

    # --- the lifecycle ------------------------------------------------------------------------

    def record_consolidation(self, as_of: str, started_at: str, finished_at: str, trigger: str, report: dict) -> None:
        self.conn.execute(
            "INSERT INTO consolidation_runs(as_of, started_at, finished_at, trigger, report) "
            "VALUES (%s, %s, %s, %s, %s)",
            (as_of, started_at, finished_at, trigger, json.dumps(report)),
        )

    def top_memories(
        self, domains: list[str] | None, limit: int, *, valence_weight: float, min_valence: float | None = None
    ) -> list[dict[str, Any]]:
        where, params = "m.archived = 0 AND m.quarantine IS NULL", {"limit": int(limit), "vw": valence_weight}
        if domains is not None:
            where += " AND m.domain = ANY(%(domains)s)"
            params["domains"] = list(domains)
        if min_valence is not None:
            where += " AND m.valence >= %(min_valence)s"
            params["min_valence"] = min_valence
        rows = self.conn.execute(
            _SELECT + f" FROM memories m WHERE {where} ORDER BY (m.tier = 'pattern') DESC, (m.tier = 'history') DESC, "
            "m.quality + %(vw)s * m.valence DESC, m.rowid LIMIT %(limit)s",
            params,
        )
        return [decode_row(r) for r in rows]

    def scoring_rows(self, rowids: Any) -> dict[int, tuple[str, float, float, int, str, int]]:
        ids = list(rowids)
        if not ids:
            return {}
        rows = self.conn.execute(
            "SELECT rowid, id, valence, quality, feedback_count + coalesce(((metadata::jsonb) ->> 'rating_count')"
            "::numeric, 0)::bigint, created_at, (quarantine IS NOT NULL)::int FROM memories WHERE rowid = ANY(%s)",
            (ids,),
        )
        return {r[0]: tuple(r[1:]) for r in rows}

    def prepare_vector_search(self) -> None:  # the server keeps its own caches
        pass

    def stats(self) -> dict[str, Any]:
        c = self.conn
        total, archived, avg_v, avg_q = c.execute(
            "SELECT count(*) FILTER (WHERE archived = 0), count(*) FILTER (WHERE archived = 1), "
            "avg(valence) FILTER (WHERE archived = 0), avg(quality) FILTER (WHERE archived = 0) FROM memories"
        ).fetchone()
        buckets = [0] * 10
        for b, n in c.execute(
            "SELECT least(floor(quality * 10)::int, 9), count(*) FROM memories WHERE archived = 0 GROUP BY 1"
        ):
            buckets[int(b)] = n

        def grouped(col: str) -> dict[str, int]:
            return dict(c.execute(f"SELECT {col}, count(*) FROM memories WHERE archived = 0 GROUP BY 1 ORDER BY 1"))

        def count(table: str) -> int:
            return c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

        return {
            "total": total or 0,
            "archived": archived or 0,
            "avg_valence": avg_v,
            "avg_quality": avg_q,
            "quality_histogram": buckets,
            "by_type": grouped("memory_type"),
            "by_domain": grouped("domain"),
            "by_tier": grouped("tier"),
            "feedback_events": count("feedback_events"),
            "reads_logged": count("reads"),
            "associations": count("associations"),
            "cues": count("cues"),
            "db_size_bytes": c.execute("SELECT pg_database_size(current_database())").fetchone()[0],
        }

    # --- doctor -------------------------------------------------------------------------------

    def integrity_problems(self) -> list[str]:
        return []  # PostgreSQL checks its own pages (data checksums, amcheck: the administrator's)

    def memories_without_vector(self) -> list[int]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT m.rowid FROM memories m WHERE NOT EXISTS "
                "(SELECT 1 FROM memory_vectors v WHERE v.rowid = m.rowid) ORDER BY m.rowid"
            )
        ]

    def vectors_without_memory(self) -> list[int]:
        return []  # a vector's row references its memory's (ON DELETE CASCADE): none can be left

    def vector_filters_out_of_step(self) -> list[int]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT v.rowid FROM memory_vectors v JOIN memories m ON m.rowid = v.rowid "
                "WHERE v.archived != m.archived OR v.domain != m.domain ORDER BY v.rowid"
            )
        ]

    def add_vector(self, rowid: int, vector: np.ndarray) -> None:
        self.conn.execute(
            "INSERT INTO memory_vectors(rowid, embedding, archived, domain) "
            "SELECT rowid, %s::vector, archived, domain FROM memories WHERE rowid = %s",
            (vector_literal(vector), rowid),
        )

    def drop_vector(self, rowid: int) -> None:
        self.conn.execute("DELETE FROM memory_vectors WHERE rowid = %s", (rowid,))

    def sync_vector_filters(self, rowid: int) -> None:
        self.conn.execute(
            "UPDATE memory_vectors v SET archived = m.archived, domain = m.domain FROM memories m "
            "WHERE m.rowid = %s AND v.rowid = m.rowid",
            (rowid,),
        )

    def orphan_counts(self) -> dict[str, int]:
        def orphans(table: str) -> int:
            sql = f"SELECT count(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = t.memory_id)"
            return self.conn.execute(sql).fetchone()[0]

        return {"cues": orphans("cues"), "feedback_events": orphans("feedback_events")}

    def delete_orphans(self) -> None:
        for table in ("cues", "feedback_events"):
            self.conn.execute(
                f"DELETE FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = t.memory_id)"
            )

    def secrets_at_rest(self) -> dict[str, Any]:
        return scrub.secrets_at_rest(_Qmark(self.conn))

    def scrub_secrets(self) -> dict[str, int]:
        return scrub.scrub(_Qmark(self.conn), lambda _conn: self.rebuild_text_index())

    def secrets_migration_report(self) -> dict[str, Any] | None:
        return None  # PostgreSQL stores began after the upgrade that masked what older versions kept
