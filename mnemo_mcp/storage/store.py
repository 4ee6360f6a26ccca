"""The SQLite store: `storage.interface.MemoryStore` on one file (apsw, sqlite-vec, FTS5).

The memories' own reads and writes are here; reads, upkeep, cases and the dashboard's listings are
mixins in search.py, maintenance.py, cases.py and browse.py, so each file stays readable. The
service calls these methods inside `db.write()` / `db.read()` blocks; no SQL lives outside
`storage/`."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from ..core.text import fts_match_expression
from ..errors import MnemoError
from . import vectors
from .browse import BrowseQueries
from .cases import CaseQueries
from .db import Database
from .interface import FEEDBACK_EVENT_FIELDS
from .maintenance import MaintenanceQueries
from .migrations import migrate
from .rows import (
    FEEDBACK_COLUMNS,
    MEMORY_COLUMNS,
    READ_COLUMNS,
    SELECT_MEMORIES,
    decode_read,
    decode_row,
    encode,
    feedback_events_sql,
    id_key,
    in_list,
    json_list,
    one_id,
    pack_vector,
    refuse_other_model,
)
from .search import SearchQueries
from .shared import SharedQueries, useful_by_concept

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # imported where vectors are handled: hook processes never need numpy
    import numpy as np


class Store(SharedQueries, SearchQueries, MaintenanceQueries, CaseQueries, BrowseQueries):
    def __init__(self, path: Path | str, busy_timeout_ms: int = 10_000, *, vector_index: bool = True):
        self.db = Database(path, busy_timeout_ms)
        try:
            migrate(self.db)
        except BaseException:
            self.db.close()
            raise
        self._tokenizer = self.db.conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
        self._index: vectors.VectorIndex | None = None
        self._index_wanted = vector_index
        self._index_checked = not vector_index  # looked for on first use; off: never

    def close(self) -> None:
        self._index = None  # the process's copy of the vectors goes when no open Store uses it
        self.db.close()

    @property
    def conn(self) -> apsw.Connection:
        return self.db.conn

    # --- model binding -----------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def check_model(self, name: str, dim: int | None = None) -> None:
        """Refuse to mix vectors of two models (dim None: check the name only)."""
        refuse_other_model(str(self.db.path), self.bound_model(), name, dim)

    def bind_model(self, name: str, dim: int) -> None:
        self.check_model(name, dim)
        with self.db.read():
            bound = self.get_meta("embedding_model") is not None and self.has_vector_table()
            logged = vectors.has_log(self.conn)
        if bound and logged:  # nothing to write: a read must not need a free byte of disk
            return
        if bound:
            self._add_vector_log()
            return
        with self.db.write() as conn:
            if self.get_meta("embedding_model") is None:
                self.set_meta("embedding_model", name)
                self.set_meta("embedding_dim", str(dim))
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS memory_vectors USING vec0("
                f"embedding float[{int(dim)}] distance_metric=cosine, archived integer, domain text)"
            )
            vectors.create_log(conn)
        self._index_checked = not self._index_wanted

    def _add_vector_log(self) -> None:
        """A file bound before the in-memory index existed gets its change log once. Not a
        numbered migration: like the vector table it belongs with the bound model, and a file
        without it (a full disk now, an older mnemo-mcp's file) is still read, through SQL."""
        try:
            with self.db.write() as conn:
                vectors.create_log(conn)
        except MnemoError as err:  # a full disk, a read-only file: reads work as before
            log.warning("could not add the vector change log (%s): reads use sqlite-vec's scan", err)
            return
        self._index_checked = not self._index_wanted

    # --- memories ------------------------------------------------------------------------

    def get(self, memory_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(SELECT_MEMORIES + " WHERE m.id = ?", (memory_id,)).fetchone()
        return decode_row(row) if row else None

    def resolve(self, id_or_prefix: str) -> str:
        """A full id, or a unique prefix of at least MIN_PREFIX hex characters -> the full id."""
        key = id_key(id_or_prefix)
        if len(key) == 64:
            hits = [key] if self.conn.execute("SELECT 1 FROM memories WHERE id = ?", (key,)).fetchone() else []
        else:
            hits = [
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT 51", (key, key + "g")
                )
            ]
        return one_id(key, hits)

    def by_rowids(self, rowids: Iterable[int]) -> dict[int, dict[str, Any]]:
        ids = list(rowids)
        if not ids:
            return {}
        rows = self.conn.execute(
            SELECT_MEMORIES + " WHERE m.rowid IN (SELECT value FROM json_each(?))", (json_list(ids),)
        )
        return {r[0]: decode_row(r) for r in rows}

    def scoring_rows(self, rowids: Iterable[int]) -> dict[int, tuple[str, float, float, int, str, int]]:
        """Just what ranking needs of each candidate, as plain tuples (no content, no JSON
        parsing, no dict per row): rowid -> (id, valence, quality, ratings + feedback events,
        created_at, quarantined 0/1)."""
        ids = list(rowids)
        if not ids:
            return {}
        rows = self.conn.execute(
            "SELECT rowid, id, valence, quality, feedback_count + coalesce(json_extract(metadata, '$.rating_count'), "
            "0), "
            "created_at, quarantine IS NOT NULL FROM memories WHERE rowid IN (SELECT value FROM json_each(?))",
            (json_list(ids),),
        )
        return {r[0]: r[1:] for r in rows}

    def insert(self, row: dict[str, Any], vector: np.ndarray) -> int:
        cols = [c for c in MEMORY_COLUMNS if c != "rowid" and c in row]
        values = [encode(c, row[c]) for c in cols]
        self.conn.execute(f"INSERT INTO memories({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", values)
        rowid = self.conn.last_insert_rowid()
        self.conn.execute(
            "INSERT INTO memory_vectors(rowid, embedding, archived, domain) VALUES (?, ?, ?, ?)",
            (rowid, pack_vector(vector), int(row.get("archived", False)), row.get("domain", "")),
        )
        return rowid

    def update(self, memory_id: str, **fields: Any) -> None:
        if not fields:
            return
        unknown = set(fields) - set(MEMORY_COLUMNS) - {"rowid"}
        if unknown or "rowid" in fields or "id" in fields:
            raise ValueError(f"not updatable memory columns: {sorted(unknown | ({'rowid', 'id'} & set(fields)))}")
        sets = ", ".join(f"{c} = ?" for c in fields)
        values = [encode(c, v) for c, v in fields.items()]
        self.conn.execute(f"UPDATE memories SET {sets} WHERE id = ?", (*values, memory_id))
        if "archived" in fields or "domain" in fields:
            self.conn.execute(
                "UPDATE memory_vectors SET archived = m.archived, domain = m.domain "
                "FROM (SELECT rowid, archived, domain FROM memories WHERE id = ?) AS m "
                "WHERE memory_vectors.rowid = m.rowid",
                (memory_id,),
            )

    def record_usage(self, usage: list[dict[str, Any]]) -> None:
        """A read's bookkeeping for the memories it returned: usage counts, quality, metadata."""
        if not usage:
            return
        self.conn.executemany(
            "UPDATE memories SET access_count = :access_count, retrieval_count = :retrieval_count, "
            "reciprocal_rank_sum = :reciprocal_rank_sum, last_accessed_at = :last_accessed_at, "
            "quality = :quality, metadata = :metadata WHERE id = :id",
            [{**u, "metadata": json.dumps(u["metadata"])} for u in usage],
        )

    def delete(self, memory_id: str) -> bool:
        row = self.conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if not row:
            return False
        self.conn.execute("DELETE FROM memory_vectors WHERE rowid = ?", (row[0],))
        self.conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        self.conn.execute("DELETE FROM cues WHERE memory_id = ?", (memory_id,))
        self.conn.execute("DELETE FROM feedback_events WHERE memory_id = ?", (memory_id,))
        return True

    def all_memories(self) -> Iterable[dict[str, Any]]:
        for r in self.conn.execute(SELECT_MEMORIES + " ORDER BY m.rowid"):
            yield decode_row(r)

    # --- learning state ------------------------------------------------------------------

    def cue_values(self, memory_ids: list[str], concepts: list[str]) -> dict[str, dict[str, tuple[float, str]]]:
        """{memory id: {concept: (link value, when it was last taught)}} for the given memories and
        query concepts."""
        if not memory_ids or not concepts:
            return {}
        out: dict[str, dict[str, tuple[float, str]]] = {}
        rows = self.conn.execute(
            "SELECT memory_id, concept, value, updated_at FROM cues "
            "WHERE memory_id IN (SELECT value FROM json_each(?)) AND concept IN (SELECT value FROM json_each(?))",
            (json_list(memory_ids), json_list(concepts)),
        )
        for mid, concept, value, updated_at in rows:
            out.setdefault(mid, {})[concept] = (value, updated_at)
        return out

    def cues_between(self, memory_ids: list[str], concepts: list[str]) -> dict[tuple[str, str], tuple[float, int]]:
        """{(memory id, concept): (value, count)} of the links that exist among these (one query)."""
        if not memory_ids or not concepts:
            return {}
        rows = self.conn.execute(
            "SELECT memory_id, concept, value, count FROM cues WHERE memory_id IN (SELECT value FROM json_each(?)) "
            "AND concept IN (SELECT value FROM json_each(?))",
            (json_list(memory_ids), json_list(concepts)),
        )
        return {(mid, c): (v, n) for mid, c, v, n in rows}

    def put_cues(self, rows: list[tuple[str, str, float, int, str]]) -> None:
        """Set (memory id, concept, value, count, updated_at) links, inserting or replacing (one
        statement)."""
        if not rows:
            return
        self.conn.execute(
            "INSERT INTO cues(memory_id, concept, value, count, updated_at) "
            "SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?) WHERE true "
            "ON CONFLICT(memory_id, concept) DO UPDATE SET value = excluded.value, count = excluded.count, "
            "updated_at = excluded.updated_at",
            (json.dumps([list(r) for r in rows]),),
        )

    def associations_between(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, float, int]]:
        """{(a, b): (weight, valence, count)} of the concept links that exist among these pairs,
        keyed with a < b whatever order a pair was asked in. One query."""
        if not pairs:
            return {}
        keys = list(dict.fromkeys((min(a, b), max(a, b)) for a, b in pairs))
        rows = self.conn.execute(
            "SELECT a, b, weight, valence, count FROM associations WHERE (a, b) IN "
            "(SELECT value ->> 0, value ->> 1 FROM json_each(?))",
            (json.dumps([list(k) for k in keys]),),
        )
        return {(a, b): (w, v, n) for a, b, w, v, n in rows}

    def put_associations(self, rows: list[tuple[str, str, float, float, int, str]]) -> None:
        """Set (a, b, weight, valence, count, updated_at) concept links, inserting or replacing
        (one statement)."""
        if not rows:
            return
        data = [[min(a, b), max(a, b), w, v, n, at] for a, b, w, v, n, at in rows]
        self.conn.execute(
            "INSERT INTO associations(a, b, weight, valence, count, updated_at) "
            "SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(?) "
            "WHERE true ON CONFLICT(a, b) DO UPDATE SET weight = excluded.weight, valence = excluded.valence, "
            "count = excluded.count, updated_at = excluded.updated_at",
            (json.dumps(data),),
        )

    def add_feedback_events(self, events: list[dict[str, Any]]) -> None:
        """Record feedback events (the keys of FEEDBACK_EVENT_FIELDS), in order, in one statement."""
        if not events:
            return
        picks = ", ".join(f"value ->> {i}" for i in range(len(FEEDBACK_EVENT_FIELDS)))
        self.conn.execute(
            f"INSERT INTO feedback_events({', '.join(FEEDBACK_EVENT_FIELDS)}) SELECT {picks} FROM json_each(?) "
            "ORDER BY key",
            (json.dumps([[e.get(f) for f in FEEDBACK_EVENT_FIELDS] for e in events]),),
        )

    def record_outcomes(self, updates: list[dict[str, Any]]) -> None:
        """Learning's changes to memories (id, valence, feedback_count, metadata, updated_at),
        in one statement."""
        if not updates:
            return
        self.conn.execute(
            "UPDATE memories SET valence = u.value ->> 1, feedback_count = u.value ->> 2, "
            "metadata = u.value ->> 3, updated_at = u.value ->> 4 "
            "FROM json_each(?) AS u WHERE memories.id = u.value ->> 0",
            (
                json.dumps(
                    [
                        [u["id"], u["valence"], u["feedback_count"], json.dumps(u["metadata"]), u["updated_at"]]
                        for u in updates
                    ]
                ),
            ),
        )

    def existing_ids(self, ids: list[str]) -> set[str]:
        """Which of these full ids are stored (one query)."""
        if not ids:
            return set()
        return {
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?))", (json_list(ids),)
            )
        }

    def feedback_events(self, memory_id: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        sql, params = feedback_events_sql("?", memory_id, limit)
        return [dict(zip(FEEDBACK_COLUMNS, r)) for r in self.conn.execute(sql, params)]

    # --- reads ---------------------------------------------------------------------------

    def record_read(self, read: dict[str, Any], keep: int, since: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO reads(id, query, query_concepts, domain, results, created_at) "
            "VALUES (:id, :query, :query_concepts, :domain, :results, :created_at)",
            {**read, "query_concepts": json.dumps(read["query_concepts"]), "results": json.dumps(read["results"])},
        )
        # Bounded log, in one statement: drop the oldest reads beyond `keep` (the rowid order is
        # insertion order) and those from before `since`.
        self.conn.execute(
            "DELETE FROM reads WHERE rowid <= (SELECT max(rowid) FROM reads) - ? OR created_at < ?", (keep, since or "")
        )

    def get_read(self, read_id: str) -> dict[str, Any] | None:
        sql = f"SELECT {', '.join(READ_COLUMNS)} FROM reads WHERE id = ?"
        return decode_read(self.conn.execute(sql, (read_id,)).fetchone())

    # --- lifecycle -----------------------------------------------------------------------

    def memories_after(self, rowid: int, limit: int) -> list[dict[str, Any]]:
        """A page of memories in rowid order (consolidation walks the store page by page)."""
        return [
            decode_row(r)
            for r in self.conn.execute(SELECT_MEMORIES + " WHERE m.rowid > ? ORDER BY m.rowid LIMIT ?", (rowid, limit))
        ]

    def unjudged(self, version: int, limit: int) -> list[dict[str, Any]]:
        """Memories whose trust judgement is older than `version` (or that have none), oldest first."""
        return [
            decode_row(r)
            for r in self.conn.execute(
                SELECT_MEMORIES
                + " WHERE coalesce(json_extract(m.provenance, '$.judged'), 0) < ? ORDER BY m.rowid LIMIT ?",
                (version, limit),
            )
        ]

    def max_rowid(self) -> int:
        return self.conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]

    def superseded_ids(self, memory_id: str) -> list[str]:
        """Ids of the memories that `memory_id` replaced (supersede) or absorbed (merge)."""
        return [
            r[0]
            for r in self.conn.execute("SELECT id FROM memories WHERE superseded_by = ? ORDER BY rowid", (memory_id,))
        ]

    def positive_outcomes(self, memory_ids: list[str]) -> dict[str, int]:
        """Feedback events with a positive outcome, per memory."""
        if not memory_ids:
            return {}
        rows = self.conn.execute(
            "SELECT memory_id, count(*) FROM feedback_events WHERE outcome > 0 "
            "AND memory_id IN (SELECT value FROM json_each(?)) GROUP BY memory_id",
            (json_list(memory_ids),),
        )
        return dict(rows)

    def useful_concepts(self, min_weight: float) -> dict[str, float]:
        """Per concept, its strongest link that feedback found useful (weight x positive valence)."""
        return useful_by_concept(
            self.conn.execute(
                "SELECT a, b, weight * valence FROM associations WHERE valence > 0 AND weight >= ?", (min_weight,)
            )
        )

    def strongest_links(self, concepts: list[str], limit: int, min_weight: float) -> list[tuple[str, str, float]]:
        """(query concept, linked concept, weight x (1 + valence) / 2) for the strongest links of
        `concepts` to concepts outside them: links that misled count for less."""
        if not concepts or limit <= 0:
            return []
        rows = self.conn.execute(
            "WITH q(c) AS (SELECT value FROM json_each(:cs)), "
            "l(src, dst, strength) AS ("
            "  SELECT a, b, weight * (1 + valence) / 2 FROM associations WHERE a IN q AND weight >= :w"
            "  UNION ALL SELECT b, a, weight * (1 + valence) / 2 FROM associations WHERE b IN q AND weight >= :w) "
            "SELECT src, dst, max(strength) AS s FROM l WHERE dst NOT IN q GROUP BY dst "
            "ORDER BY s DESC, dst LIMIT :n",
            {"cs": json_list(concepts), "w": min_weight, "n": limit},
        )
        return [(a, b, w) for a, b, w in rows]

    def links_unused_since_decay(self, now: str) -> list[tuple[str, str, float, float, float]]:
        """(a, b, weight, valence, days) of each link with time since the later of its last use
        and its last decay, so running consolidation often decays no faster than running it rarely."""
        since = "julianday(:now) - julianday(max(updated_at, coalesce(decayed_at, updated_at)))"
        return list(
            self.conn.execute(
                f"SELECT a, b, weight, valence, {since} AS days FROM associations WHERE {since} > 0", {"now": now}
            )
        )

    def apply_link_decay(self, now: str, weights: list[tuple[str, str, float]], dropped: list[tuple[str, str]]) -> None:
        self.conn.executemany("DELETE FROM associations WHERE a = ? AND b = ?", dropped)
        self.conn.executemany(
            "UPDATE associations SET weight = ?, decayed_at = ? WHERE a = ? AND b = ?",
            [(w, now, a, b) for a, b, w in weights],
        )

    def near_duplicate_candidates(
        self, words: list[str], limit: int, *, domain: str, exclude_rowid: int | None = None
    ) -> list[int]:
        """Live memories of the same domain sharing any of the words (the caller checks cosine)."""
        match = fts_match_expression(words)
        if match is None:
            return []
        rows = self.conn.execute(
            "SELECT f.rowid FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
            "WHERE f.memories_fts MATCH :q AND m.domain = :d AND m.archived = 0 AND f.rowid != :x "
            "ORDER BY bm25(f.memories_fts, 1.0, 0.5) LIMIT :k",
            {"q": match, "d": domain, "x": exclude_rowid if exclude_rowid is not None else -1, "k": limit},
        )
        return [r[0] for r in rows]

    def vector_of(self, rowid: int) -> np.ndarray | None:
        import numpy as np

        row = self.conn.execute("SELECT embedding FROM memory_vectors WHERE rowid = ?", (rowid,)).fetchone()
        return np.frombuffer(row[0], dtype=np.float32) if row else None

    def move_cues(self, from_id: str, to_id: str) -> None:
        """Hand a merged memory's taught links to its survivor where the survivor has none."""
        self.conn.execute(
            "INSERT OR IGNORE INTO cues(memory_id, concept, value, count, updated_at) "
            "SELECT ?, concept, value, count, updated_at FROM cues WHERE memory_id = ?",
            (to_id, from_id),
        )

    def record_consolidation(self, as_of: str, started_at: str, finished_at: str, trigger: str, report: dict) -> None:
        self.conn.execute(
            "INSERT INTO consolidation_runs(as_of, started_at, finished_at, trigger, report) VALUES (?, ?, ?, ?, ?)",
            (as_of, started_at, finished_at, trigger, json.dumps(report)),
        )

    def top_memories(
        self, domains: list[str] | None, limit: int, *, valence_weight: float, min_valence: float | None = None
    ) -> list[dict[str, Any]]:
        """Live memories, patterns first, then history, then by quality + valence_weight * valence
        (core.lifecycle.digest_order): what a session starts with (`min_valence`: none below it)."""
        in_domains, params = in_list(domains or [])
        where = "m.archived = 0 AND m.quarantine IS NULL" + (
            f" AND m.domain IN {in_domains}" if domains is not None else ""
        )
        if min_valence is not None:
            where += " AND m.valence >= :min_valence"
            params["min_valence"] = min_valence
        rows = self.conn.execute(
            SELECT_MEMORIES + f" WHERE {where} ORDER BY (m.tier = 'pattern') DESC, (m.tier = 'history') DESC, "
            "m.quality + :vw * m.valence DESC, m.rowid LIMIT :limit",
            {**params, "limit": limit, "vw": valence_weight},
        )
        return [decode_row(r) for r in rows]

    # --- stats ---------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        c = self.conn
        total, archived, avg_v, avg_q = c.execute(
            "SELECT sum(archived = 0), sum(archived = 1), avg(CASE WHEN archived = 0 THEN valence END), "
            "avg(CASE WHEN archived = 0 THEN quality END) FROM memories"
        ).fetchone()
        buckets = [0] * 10
        for b, n in c.execute(
            "SELECT min(CAST(quality * 10 AS INTEGER), 9), count(*) FROM memories WHERE archived = 0 GROUP BY 1"
        ):
            buckets[int(b)] = n
        by_type = dict(c.execute("SELECT memory_type, count(*) FROM memories WHERE archived = 0 GROUP BY 1 ORDER BY 1"))
        by_domain = dict(c.execute("SELECT domain, count(*) FROM memories WHERE archived = 0 GROUP BY 1 ORDER BY 1"))
        by_tier = dict(c.execute("SELECT tier, count(*) FROM memories WHERE archived = 0 GROUP BY 1 ORDER BY 1"))
        events = c.execute("SELECT count(*) FROM feedback_events").fetchone()[0]
        reads = c.execute("SELECT count(*) FROM reads").fetchone()[0]
        links = c.execute("SELECT count(*) FROM associations").fetchone()[0]
        cues = c.execute("SELECT count(*) FROM cues").fetchone()[0]
        page_count = c.execute("PRAGMA page_count").fetchone()[0]
        page_size = c.execute("PRAGMA page_size").fetchone()[0]
        return {
            "total": total or 0,
            "archived": archived or 0,
            "avg_valence": avg_v,
            "avg_quality": avg_q,
            "quality_histogram": buckets,
            "by_type": by_type,
            "by_domain": by_domain,
            "by_tier": by_tier,
            "feedback_events": events,
            "reads_logged": reads,
            "associations": links,
            "cues": cues,
            "db_size_bytes": page_count * page_size,
        }
