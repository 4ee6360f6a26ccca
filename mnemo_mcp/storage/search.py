"""SQL for reads: nearest vectors, cosines, full-text matches and their statistics. A mixin of
`Store`. The vector side and the keyword side's filters are answered by the in-memory
`VectorIndex` when the file has its change log (see vectors.py), with the same results as the
SQL below, which stays for tag filters and files without the log."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import apsw

from ..core.text import fts_match_expression
from . import vectors
from .rows import HAS_A_TAG, in_list, json_list, pack_vector

if TYPE_CHECKING:
    import numpy as np

    from .db import Database

log = logging.getLogger(__name__)


class SearchQueries:
    conn: apsw.Connection
    db: Database
    _tokenizer: Any
    _index: vectors.VectorIndex | None
    _index_checked: bool
    _index_synced: int = -1  # the transaction the index was last brought up to

    def tokenize(self, text: str) -> list[str]:
        """Tokens exactly as the full-text index stores them (porter-stemmed, folded)."""
        toks = self._tokenizer(text.encode("utf-8", "replace"), apsw.FTS5_TOKENIZE_QUERY, None)
        return [t[2] for t in toks]

    @classmethod
    def _filters(cls, domains: list[str] | None, include_archived: bool, tags: list[str] | None) -> list[str]:
        """SQL conditions on `memories m` for the read filters (named parameters :d<i>, :tags)."""
        clauses = []
        if domains is not None:
            clauses.append("m.domain IN " + in_list(domains)[0])
        if not include_archived:
            clauses.append("m.archived = 0")
        if tags:
            clauses.append(HAS_A_TAG)
        return clauses

    # --- the in-memory index -------------------------------------------------------------

    def vector_index(self, attach: bool = True) -> vectors.VectorIndex | None:
        """The process's index of this file's vectors, brought up to this transaction's snapshot,
        or None when the file has no change log yet (no model bound, or made read-only).
        `attach=False` only uses an index a vector search already attached: a keyword-only read
        (a hook process without the model) must not load every vector for its filters."""
        if not self._index_checked and attach:
            self._index_checked = True
            dim = self.conn.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
            if dim and str(dim[0]).isdigit() and vectors.has_log(self.conn):
                self._index = vectors.shared_index(str(self.db.path), self.db.identity, int(dim[0]))
        index = self._index
        if index is None:
            return None
        if self._index_synced != self.db.transactions or not self.db.in_transaction:
            with index.lock:
                index.sync(self.conn)
            self._index_synced = self.db.transactions
        return index

    def scan_knn(self, vector: np.ndarray, k: int, *, live_only: bool = False) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the k nearest by sqlite-vec's own exact scan, bypassing the
        in-memory index: the floor and the reference that the speed benchmark measures against."""
        where = "embedding MATCH ? AND k = ?" + (" AND archived = 0" if live_only else "")
        return list(
            self.conn.execute(f"SELECT rowid, distance FROM memory_vectors WHERE {where}", (pack_vector(vector), k))
        )

    def prepare_vector_search(self) -> None:
        """A read that searches by vector is about to start: the in-memory index is attached
        first, so the keyword pass that runs before the vector is ready filters through it too."""
        self.vector_index()

    def _use_index(self, tags: list[str] | None, attach: bool = True) -> vectors.VectorIndex | None:
        return None if tags else self.vector_index(attach)

    # --- vectors -------------------------------------------------------------------------

    def knn(
        self, vector: np.ndarray, k: int, *, domains: list[str] | None, include_archived: bool, tags: list[str] | None
    ) -> list[tuple[int, float]]:
        """Nearest memories by cosine distance; filters are applied inside the KNN query."""
        index = self._use_index(tags)
        if index is not None:
            with index.lock:
                return index.knn(vector, k, index.allowed(domains, include_archived))
        in_domains, dparams = in_list(domains or [])
        params: dict[str, Any] = {"v": pack_vector(vector), "k": k, "tags": json_list(tags or []), **dparams}
        where = ["embedding MATCH :v", "k = :k"]
        if tags:
            allowed = " AND ".join(self._filters(domains, include_archived, tags))
            where.append(f"rowid IN (SELECT m.rowid FROM memories m WHERE {allowed})")
        else:
            if domains is not None:
                where.append("domain IN " + in_domains)
            if not include_archived:
                where.append("archived = 0")
        sql = "SELECT rowid, distance FROM memory_vectors WHERE " + " AND ".join(where)
        return [(r, 1.0 - d) for r, d in self.conn.execute(sql, params)]

    def cosines(self, vector: np.ndarray, rowids: Iterable[int], *, few: bool = False) -> dict[int, float]:
        """Cosine to the given memories. vec0 answers `rowid IN (...)` by scanning every vector
        (2 ms at 10k, growing with the store) and a single-rowid lookup in ~0.2 ms at any size,
        so a handful of ids (`few`, as writes ask) are looked up one by one; reads ask the index."""
        ids = list(rowids)
        if not ids:
            return {}
        if few:
            out = {}
            v = pack_vector(vector)
            for rowid in ids:
                row = self.conn.execute(
                    "SELECT vec_distance_cosine(embedding, ?) FROM memory_vectors WHERE rowid = ?", (v, rowid)
                ).fetchone()
                if row:
                    out[rowid] = 1.0 - row[0]
            return out
        index = self.vector_index()
        if index is not None:
            with index.lock:
                return index.cosines(vector, ids)
        rows = self.conn.execute(
            "SELECT rowid, vec_distance_cosine(embedding, ?) FROM memory_vectors "
            "WHERE rowid IN (SELECT value FROM json_each(?))",
            (pack_vector(vector), json_list(ids)),
        )
        return {r: 1.0 - d for r, d in rows}

    # --- keywords ------------------------------------------------------------------------

    def fts(
        self,
        words: list[str],
        k: int,
        *,
        domains: list[str] | None,
        include_archived: bool,
        tags: list[str] | None,
    ) -> list[tuple[int, float]]:
        """BM25 (positive, higher is better) of the best k memories holding any of the words."""
        match = fts_match_expression(words)
        if match is None:
            return []
        index = self._use_index(tags, attach=False)
        if index is not None:
            return self._fts_unjoined(match, k, index, domains, include_archived)
        params: dict[str, Any] = {"q": match, "k": k, "tags": json_list(tags or []), **in_list(domains or [])[1]}
        # The full-text match drives the query and the filters are checked on the joined row:
        # `rowid IN (filter subquery)` made SQLite rescan the filter per match (80 ms at 1k rows).
        where = ["f.memories_fts MATCH :q", *self._filters(domains, include_archived, tags)]
        sql = (
            "SELECT f.rowid, -bm25(f.memories_fts, 1.0, 0.5) AS score FROM memories_fts f "
            "JOIN memories m ON m.rowid = f.rowid WHERE " + " AND ".join(where) + " ORDER BY score DESC LIMIT :k"
        )
        return list(self.conn.execute(sql, params))

    def _fts_unjoined(
        self, match: str, k: int, index: vectors.VectorIndex, domains: list[str] | None, include_archived: bool
    ) -> list[tuple[int, float]]:
        """The same rows as the joined query, filtered by the index instead of a join: looking up
        each match's `memories` row was 80% of the keyword pass (every match is visited to be
        scored). Matches the filters leave out take places in the LIMIT, so when some are left
        out the query asks for more until k pass or the matches run out."""
        sql = (
            "SELECT rowid, -bm25(memories_fts, 1.0, 0.5) AS score FROM memories_fts "
            "WHERE memories_fts MATCH ? ORDER BY score DESC LIMIT ?"
        )
        with index.lock:  # the mask must stay the index's own until the last lookup
            mask = index.allowed(domains, include_archived)
            excluded = index.excluded(mask)
            limit = k
            while True:
                rows = self.conn.execute(sql, (match, limit)).fetchall()
                if not excluded:
                    return rows
                kept = [r for r, ok in zip(rows, index.passing([r[0] for r in rows], mask)) if ok]
                if len(kept) >= k or len(rows) < limit or limit >= k + excluded:
                    return kept[:k]
                limit = min(k + excluded, 2 * limit + (k - len(kept)))

    def term_document_counts(self, tokens: list[str]) -> tuple[int, dict[str, int]]:
        """(documents in the index, documents holding each token), for IDF."""
        total = self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        counts = dict(
            self.conn.execute(
                "SELECT term, doc FROM memories_fts_vocab WHERE term IN (SELECT value FROM json_each(?))",
                (json_list(tokens),),
            )
        )
        return total, {t: counts.get(t, 0) for t in tokens}
