"""Vectors on PostgreSQL: the nearest memories by cosine, exact or through pgvector's HNSW index.

The vectors' column has no dimension (pgschema migration 3: a member without CREATE rights can
bind the model), and an HNSW index needs one, so the index is on the expression
`embedding::vector(<bound dimension>)` and its queries order by that same expression. Making an
index needs the table's owner: the owner's process makes it when it binds the model or starts
(`ensure_vector_index`); a member's never tries, and searches exactly until it exists.

Which search runs is chosen by the store's size (`HNSW_FROM`): below it an exact scan is already
fast and returns the true nearest; above it the scan grows with every vector while the index does
not (figures: benchmarks/pg_reads.py, the README's PostgreSQL section). With the index,
`hnsw.ef_search` is set to at least k for the read (the default 40 returns fewer than k = 100), and
pgvector 0.8's iterative scan goes on past filtered-out rows (domain, archived, tags) until k are
found; when a filter leaves it short, the exact search answers instead, so k rows come whenever k
exist. A domain that is a small part of the store is read through the btree on the vectors' domain
(migration 5): the planner prefers it to the graph then, and it scans that domain's vectors only.
On an older pgvector the parts it lacks are left out: no iterative scan before 0.8 (the exact
fallback gives k rows then), no index before 0.5. A mixin of `PgStore`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .pgschema import MIGRATE_LOCK
from .rows import vector_literal

if TYPE_CHECKING:
    import numpy as np

HNSW_INDEX = "memory_vectors_hnsw"
# Exact below this many vectors, HNSW from it. Measured here (2 shared cores, LoCoMo vectors, k = 100):
# the exact scan costs ~1 us a vector (7-11 ms at 10k), the index ~2.5 ms at 10k with recall@10 1.0;
# below ~5k the scan costs under ~5 ms and returns the true nearest, so the index is not worth its
# approximation there (benchmarks/pg_reads.py; the README's PostgreSQL section).
HNSW_FROM = 5_000
# The size and the index's presence are looked up once a minute, not once a read.
MODE_TTL_S = 60.0
# The index's build is much faster when its graph fits in memory (pgvector's documentation); the
# graph takes about 2 kB a vector of 384 dimensions, past PostgreSQL's default 64 MB from ~30k on.
BUILD_MEMORY = "512MB"


def version(text: str) -> tuple[int, ...]:
    """pgvector's version as numbers ("0.8.1" -> (0, 8, 1)); what is not a number counts as 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("."))


HNSW_SINCE = (0, 5)  # pgvector's first HNSW
ITERATIVE_SINCE = (0, 8)  # its iterative index scans: an older server rejects the setting's name


class PgVectors:
    conn: Any
    db: Any  # PgStore's PgDatabase
    get_meta: Any  # PgStore's
    hnsw_from: int = HNSW_FROM  # tests set 0 to take the index at any size
    pgvector: tuple[int, ...] = ITERATIVE_SINCE  # the server's, set when the store opens
    # (when looked up, the indexed dimension or None, the vectors counted)
    _vector_mode: tuple[float, int | None, int] | None = None

    # --- the index ------------------------------------------------------------------------

    def vector_index(self) -> tuple[bool, bool]:
        """(whether the HNSW index exists, whether this login may make it: the table's owner)."""
        row = self.conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL, pg_has_role(c.relowner, 'USAGE') FROM pg_class c "
            "WHERE c.oid = 'memory_vectors'::regclass",
            (HNSW_INDEX,),
        ).fetchone()
        return bool(row[0]), bool(row[1])

    def ensure_vector_index(self) -> bool:
        """Make the HNSW index if a model is bound, it is missing and this login owns the table
        -> whether it exists now. A member (no right to) gets False, and no error."""
        # In transactions of the store's own: its connection is shared by the server's threads, and
        # a statement of another thread between BEGIN and a read's SET TRANSACTION breaks that read.
        with self.db.read():
            dim = self.get_meta("embedding_dim")
            exists, may = self.vector_index()
        if dim is None or exists or not may or self.pgvector < HNSW_SINCE:
            return exists
        # Under the migrations' lock too, so that owner processes starting at once make it once.
        with self.db.write():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            self.conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
            self.conn.execute(
                f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON memory_vectors "
                f"USING hnsw ((embedding::vector({int(dim)})) vector_cosine_ops)"
            )
        self._vector_mode = None
        return True

    def use_hnsw_from(self, vectors: int) -> None:
        """Take the index from this many vectors on (0: always when it exists; tests and benchmarks
        compare it with exact search on one store)."""
        self.hnsw_from, self._vector_mode = int(vectors), None

    def _hnsw_dimension(self) -> int | None:
        """The dimension to cast to when the index is to be used for this read, else None."""
        now = time.monotonic()
        if self._vector_mode is not None and now - self._vector_mode[0] < MODE_TTL_S:
            return self._vector_mode[1]
        with self.db.read():
            found = self.conn.execute(
                "SELECT c.reltuples, to_regclass(%s) IS NOT NULL, (SELECT value FROM meta WHERE key = 'embedding_dim') "
                "FROM pg_class c WHERE c.oid = 'memory_vectors'::regclass",
                (HNSW_INDEX,),
            ).fetchone()
            rows, indexed, dim = found
            if indexed and rows < 0:  # never analyzed yet: count once (a young store, so cheap)
                rows = self.conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
        use = int(dim) if indexed and dim is not None and rows >= self.hnsw_from else None
        self._vector_mode = (now, use, max(0, int(rows)))
        return use

    # --- reads ----------------------------------------------------------------------------

    def knn(
        self, vector: np.ndarray, k: int, *, domains: list[str] | None, include_archived: bool, tags: list[str] | None
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the k nearest, best first (ties: the newer first)."""
        where, params = [], {"q": vector_literal(vector), "k": int(k)}
        if domains is not None:
            where.append("v.domain = ANY(%(domains)s)")
            params["domains"] = list(domains)
        if not include_archived:
            where.append("v.archived = 0")
        if tags:
            where.append("EXISTS (SELECT 1 FROM memories m, json_array_elements_text(m.tags::json) t "
                         "WHERE m.rowid = v.rowid AND t = ANY(%(tags)s))")  # fmt: skip
            params["tags"] = list(tags)
        filters = " WHERE " + " AND ".join(where) if where else ""
        dim = self._hnsw_dimension() if k > 0 else None
        if dim is not None:
            found = self._knn_hnsw(dim, filters, params)
            if len(found) >= k:
                return found
        sql = (
            "SELECT v.rowid, 1 - (v.embedding <=> q.e) AS cos FROM memory_vectors v, (SELECT %(q)s::vector AS e) q"
            + filters
            + " ORDER BY v.embedding <=> q.e, v.rowid DESC LIMIT %(k)s"
        )
        return [(r[0], float(r[1])) for r in self.conn.execute(sql, params)]

    def _knn_hnsw(self, dim: int, filters: str, params: dict[str, Any]) -> list[tuple[int, float]]:
        """The k nearest through the index (ordered by the indexed expression, with the query's
        vector as a parameter: the form the planner matches to the index), then sorted as the
        exact search sorts (a relaxed-order scan may return them slightly out of order)."""
        typed = f"v.embedding::vector({dim})"
        sql = (
            f"SELECT rowid, 1 - d FROM (SELECT v.rowid, {typed} <=> %(q)s::vector({dim}) AS d "
            f"FROM memory_vectors v{filters} ORDER BY {typed} <=> %(q)s::vector({dim}) LIMIT %(k)s) s "
            "ORDER BY d, rowid DESC"
        )
        # ef_search is the candidates the scan keeps, set for this transaction only (SET LOCAL). A
        # bigger graph needs more for the same recall: measured with k = 100 (benchmarks/pg_reads.py,
        # LoCoMo vectors), recall@10 at 10k 0.989 with ef = k and 1.000 with 2k; at 100k 0.867 with
        # 2k (4.2 ms), 0.948 with 4k (7.0 ms), 0.969 with 1000 (14.5 ms; exact 86 ms). So 2k, and k
        # per 25k vectors past 50k; at least pgvector's default 40, at most its limit 1000.
        vectors = self._vector_mode[2] if self._vector_mode else 0
        ef = max(2 * params["k"], params["k"] * vectors // 25_000, 40)
        with self.db.read():  # SET LOCAL needs a transaction: the caller's (read or write), or one now
            return self._hnsw_rows(sql, params, ef)

    def _hnsw_rows(self, sql: str, params: dict[str, Any], ef: int) -> list[tuple[int, float]]:
        settings = f"SET LOCAL hnsw.ef_search = {min(int(ef), 1000)}"
        if self.pgvector >= ITERATIVE_SINCE:  # before 0.8, a filtered scan short of k falls back to exact
            settings += "; SET LOCAL hnsw.iterative_scan = relaxed_order"
        self.conn.execute(settings)
        return [(r[0], float(r[1])) for r in self.conn.execute(sql, params)]

    def cosines(self, vector: np.ndarray, rowids: Iterable[int], *, few: bool = False) -> dict[int, float]:
        ids = list(rowids)
        if not ids:
            return {}
        rows = self.conn.execute(
            "SELECT rowid, 1 - (embedding <=> %s::vector) FROM memory_vectors WHERE rowid = ANY(%s)",
            (vector_literal(vector), ids),
        )
        return {r[0]: float(r[1]) for r in rows}

    def vector_of(self, rowid: int) -> np.ndarray | None:
        import numpy as np

        row = self.conn.execute("SELECT embedding::text FROM memory_vectors WHERE rowid = %s", (rowid,)).fetchone()
        return None if row is None else np.array([float(x) for x in row[0].strip("[]").split(",")], dtype=np.float32)
