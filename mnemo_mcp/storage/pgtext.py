"""Full text on PostgreSQL: the keyword side of a read ranked by BM25 as FTS5 ranks it.

The tokens are FTS5's (fulltext.py); each memory's postings (a term's weighted count in it) are
kept in `text_terms`, its length in tokens in `memories.text_length`, and the totals BM25 needs
(documents, tokens) in one row of `text_totals`, all changed in the transaction that changes the
memory. Writers take one lock (pgstore.WRITE_LOCK), so the totals row is no hot spot. A mixin of
`PgStore`.
"""

from __future__ import annotations

from typing import Any

from . import fulltext

_SCORE = (
    "WITH q AS (SELECT * FROM unnest(%(ph)s::int[], %(terms)s::text[]) AS q(ph, term)), "
    "need AS (SELECT ph, count(*) AS n FROM q GROUP BY ph), "
    "hit AS (SELECT p.rowid, q.ph, min(p.tf) AS f, count(*) AS n FROM q JOIN text_terms p ON p.term = q.term "
    "        GROUP BY p.rowid, q.ph), "
    "fullhit AS (SELECT h.rowid, h.ph, h.f FROM hit h JOIN need USING (ph) WHERE h.n = need.n), "
    "tot AS (SELECT documents::float8 AS d, greatest(tokens, 1)::float8 / greatest(documents, 1) AS avgdl "
    "        FROM text_totals), "
    "idf AS (SELECT ph, greatest(ln((tot.d - count(*) + 0.5) / (count(*) + 0.5)), 1e-6) AS w "
    "        FROM fullhit, tot GROUP BY ph, tot.d) "
    "SELECT h.rowid, sum(idf.w * h.f * %(k1p)s / (h.f + %(k1)s * (1 - %(b)s + %(b)s * m.text_length / tot.avgdl))) "
    "AS score FROM fullhit h JOIN idf USING (ph) JOIN memories m ON m.rowid = h.rowid, tot "
)


def _query(words: list[str]) -> dict[str, Any] | None:
    """The phrases of the words as parameters (phrase number, term), or None when none has a token."""
    ph: list[int] = []
    terms: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for word in words:
        phrase = tuple(dict.fromkeys(fulltext.phrase_terms(word)))
        if not phrase or phrase in seen:
            continue
        seen.add(phrase)
        for term in phrase:
            ph.append(len(seen))
            terms.append(term)
    if not terms:
        return None
    return {"ph": ph, "terms": terms, "k1": fulltext.K1, "k1p": fulltext.K1 + 1, "b": fulltext.B}


class PgText:
    conn: Any

    # --- the index, kept with the memories ------------------------------------------------

    def _index_text(self, rowid: int, content: str, tags_json: str, *, new: bool) -> None:
        """(Re)index one memory's text: a new memory adds a document, a changed one replaces its own."""
        old = 0
        if not new:
            old = self.conn.execute("SELECT text_length FROM memories WHERE rowid = %s", (rowid,)).fetchone()[0]
            self.conn.execute("DELETE FROM text_terms WHERE rowid = %s", (rowid,))
        terms, length = fulltext.postings(content, tags_json)
        self.conn.execute(
            "INSERT INTO text_terms(term, rowid, tf) SELECT t, %s, f FROM unnest(%s::text[], %s::float8[]) AS x(t, f)",
            (rowid, list(terms), list(terms.values())),
        )
        self.conn.execute("UPDATE memories SET text_length = %s WHERE rowid = %s", (length, rowid))
        self._add_totals(1 if new else 0, length - old)

    def _add_totals(self, documents: int, tokens: int) -> None:
        self.conn.execute(
            "UPDATE text_totals SET documents = documents + %s, tokens = tokens + %s", (documents, tokens)
        )

    def text_index_ok(self) -> bool:
        """The postings and totals are what the memories' text gives (a full recount: doctor only)."""
        want_docs, want_tokens, want_terms = 0, 0, 0
        for content, tags, length in self.conn.execute("SELECT content, tags, text_length FROM memories").fetchall():
            terms, n = fulltext.postings(content, tags)
            if n != length:
                return False
            want_docs, want_tokens, want_terms = want_docs + 1, want_tokens + n, want_terms + len(terms)
        docs, tokens = self.conn.execute("SELECT documents, tokens FROM text_totals").fetchone()
        terms = self.conn.execute("SELECT count(*) FROM text_terms").fetchone()[0]
        return (docs, tokens, terms) == (want_docs, want_tokens, want_terms)

    def rebuild_text_index(self) -> None:
        self.conn.execute("DELETE FROM text_terms")
        self.conn.execute("UPDATE memories SET text_length = 0")
        self.conn.execute("UPDATE text_totals SET documents = 0, tokens = 0")
        for rowid, content, tags in self.conn.execute("SELECT rowid, content, tags FROM memories").fetchall():
            self._index_text(rowid, content, tags, new=True)

    # --- reads ----------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        return fulltext.tokenize(text)

    def term_document_counts(self, tokens: list[str]) -> tuple[int, dict[str, int]]:
        total = self.conn.execute("SELECT documents FROM text_totals").fetchone()[0]
        counts = dict(
            self.conn.execute(
                "SELECT term, count(*) FROM text_terms WHERE term = ANY(%s) GROUP BY term", (list(tokens),)
            ).fetchall()
        )
        return total, {t: counts.get(t, 0) for t in tokens}

    def fts(
        self,
        words: list[str],
        k: int,
        *,
        domains: list[str] | None,
        include_archived: bool,
        tags: list[str] | None,
    ) -> list[tuple[int, float]]:
        """(rowid, BM25) of the best k memories holding any of the words, as FTS5's bm25()."""
        params = _query(words)
        if params is None:
            return []
        where = []
        if domains is not None:
            where.append("m.domain = ANY(%(domains)s)")
            params["domains"] = list(domains)
        if not include_archived:
            where.append("m.archived = 0")
        if tags:
            where.append("EXISTS (SELECT 1 FROM json_array_elements_text(m.tags::json) t WHERE t = ANY(%(tags)s))")
            params["tags"] = list(tags)
        sql = _SCORE + (" WHERE " + " AND ".join(where) if where else "")
        sql += " GROUP BY h.rowid ORDER BY score DESC, h.rowid LIMIT %(k)s"
        return [(r[0], float(r[1])) for r in self.conn.execute(sql, {**params, "k": int(k)})]

    def near_duplicate_candidates(
        self, words: list[str], limit: int, *, domain: str, exclude_rowid: int | None = None
    ) -> list[int]:
        params = _query(words)
        if params is None:
            return []
        params.update(d=domain, x=exclude_rowid if exclude_rowid is not None else -1, k=int(limit))
        sql = _SCORE + (
            "WHERE m.domain = %(d)s AND m.archived = 0 AND h.rowid != %(x)s "
            "GROUP BY h.rowid ORDER BY score DESC, h.rowid LIMIT %(k)s"
        )
        return [r[0] for r in self.conn.execute(sql, params)]
