"""Full text on PostgreSQL: the keyword side of a read ranked by BM25 as FTS5 ranks it.

The tokens are FTS5's (fulltext.py); each memory's postings (a term's weighted count in it) are
kept in `text_terms` with what scoring and the filters need beside each one (the document's length
in tokens, its domain, archived: pgschema migration 4), so a read touches the postings of its words
and nothing else: no lookup of each hit's memory. Its length is also in `memories.text_length`. The
totals BM25 needs (documents, tokens) are an append-only log (`text_totals_log`) read from its last
whole row: one row updated by every write left a dead version per write, which every read then
stepped over until a vacuum. All of it changes in the transaction that changes the memory; writers
take one lock (pgstore.WRITE_LOCK). A mixin of `PgStore`.
"""

from __future__ import annotations

from typing import Any

from . import fulltext

# The log is folded into one whole row when this many changes follow the last whole one.
FOLD_EVERY = 1000
_LAST_WHOLE = "(SELECT coalesce(max(seq), 0) FROM text_totals_log WHERE whole)"
_TOTALS = (  # as floats (sums of bigint are numeric, slow in the arithmetic per posting); exact below 2**53
    "SELECT coalesce(sum(documents), 0)::float8, coalesce(sum(tokens), 0)::float8 FROM text_totals_log "
    f"WHERE seq >= {_LAST_WHOLE}"
)
_AVGDL = "greatest(t.tokens, 1) / greatest(t.documents, 1)"
_IDF = "greatest(ln((t.documents - c.n + 0.5) / (c.n + 0.5)), 1e-6)"  # FTS5's, over every document
_TF = "%(k1p)s / ({f} + %(k1)s * (1 - %(b)s + %(b)s * {length} / w.avgdl))"

# Every phrase one term (the usual case): one pass over those terms' postings, summed per memory.
# The weights' rows are few (one per term); each term's document count is an index scan of its own.
# OFFSET 0 keeps each part a subquery of its own. Flattened, the IDF was computed again for every
# posting; and a planner without statistics yet (a young store before its first analyze) joined the
# postings by scanning them all (112 ms on 2k memories): a lateral subquery per term reads only that
# term's postings, through the index.
_POSTINGS = (
    "CROSS JOIN LATERAL (SELECT p.rowid, p.tf, p.text_length FROM text_terms p WHERE p.term = {term}{where} OFFSET 0) p"
)
_SINGLE = (
    "SELECT p.rowid, sum(w.idf * p.tf * " + _TF.format(f="p.tf", length="p.text_length") + ") AS score "
    f"FROM (SELECT q.term, {_IDF} AS idf, {_AVGDL} AS avgdl FROM unnest(%(terms)s::text[]) AS q(term) "
    "      CROSS JOIN LATERAL (SELECT count(*) AS n FROM text_terms c WHERE c.term = q.term) c "
    f"     CROSS JOIN ({_TOTALS}) AS t(documents, tokens) OFFSET 0) w "
    + _POSTINGS.format(term="w.term", where="{where}")
    + " GROUP BY p.rowid"
)
# Phrases of several terms (a word of 3+ tokens: its adjacent pairs): a memory matches a phrase
# when it holds all its terms (its count: the least of theirs), and a phrase's document count is
# of the memories holding all its terms.
_PHRASES = (
    "SELECT h.rowid, sum(w.idf * h.f * " + _TF.format(f="h.f", length="h.len") + ") AS score "
    "FROM (SELECT p.rowid, q.ph, min(p.tf) AS f, min(p.text_length) AS len, count(*) AS n "
    "      FROM unnest(%(ph)s::int[], %(terms)s::text[]) AS q(ph, term) "
    + _POSTINGS.format(term="q.term", where="{where}")
    + " GROUP BY p.rowid, q.ph) h "
    f"JOIN (SELECT q.ph, q.need, {_IDF} AS idf, {_AVGDL} AS avgdl "
    "      FROM (SELECT ph, count(*) AS need, array_agg(term) AS terms FROM unnest(%(ph)s::int[], %(terms)s::text[]) "
    "            AS x(ph, term) GROUP BY ph) q "
    "      CROSS JOIN LATERAL (SELECT count(*) AS n FROM (SELECT c.rowid FROM text_terms c WHERE c.term = ANY(q.terms) "
    "            GROUP BY c.rowid HAVING count(*) = q.need) z) c "
    f"     CROSS JOIN ({_TOTALS}) AS t(documents, tokens) OFFSET 0) w ON w.ph = h.ph AND w.need = h.n "
    "GROUP BY h.rowid"
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


def _scored(params: dict[str, Any], where: list[str], tags: bool) -> str:
    """The scoring statement for these phrases and filters (on the postings; tags on the memory,
    once per memory scored), best first, ties by rowid as FTS5's order."""
    single = len(set(params["ph"])) == len(params["ph"])
    sql = (_SINGLE if single else _PHRASES).format(where="".join(" AND " + w for w in where))
    if tags:
        sql = (
            f"SELECT s.rowid, s.score FROM ({sql}) s WHERE EXISTS (SELECT 1 FROM memories m, "
            "json_array_elements_text(m.tags::json) t WHERE m.rowid = s.rowid AND t = ANY(%(tags)s))"
        )
    return f"SELECT rowid, score FROM ({sql}) r ORDER BY score DESC, rowid LIMIT %(k)s"


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
        self.conn.execute("UPDATE memories SET text_length = %s WHERE rowid = %s", (length, rowid))
        self.conn.execute(
            "INSERT INTO text_terms(term, rowid, tf, text_length, domain, archived) "
            "SELECT x.t, m.rowid, x.f, m.text_length, m.domain, m.archived "
            "FROM unnest(%s::text[], %s::float8[]) AS x(t, f), memories m WHERE m.rowid = %s",
            (list(terms), list(terms.values()), rowid),
        )
        self._add_totals(1 if new else 0, length - old)

    def _sync_text_filters(self, memory_id: str) -> None:
        """A memory's domain or archived changed: its postings carry them too."""
        self.conn.execute(
            "UPDATE text_terms p SET domain = m.domain, archived = m.archived FROM memories m "
            "WHERE m.id = %s AND p.rowid = m.rowid AND (p.domain != m.domain OR p.archived != m.archived)",
            (memory_id,),
        )

    def _add_totals(self, documents: int, tokens: int) -> None:
        """One change appended to the totals' log; past FOLD_EVERY changes, the log since the last
        whole row becomes one whole row and what came before it goes (rows no read visits: reads
        start at the last whole row, through the index)."""
        seq, whole = self.conn.execute(
            f"INSERT INTO text_totals_log(documents, tokens) VALUES (%s, %s) RETURNING seq, {_LAST_WHOLE}",
            (documents, tokens),
        ).fetchone()
        if seq - whole >= FOLD_EVERY:
            self.conn.execute(
                "WITH w AS (INSERT INTO text_totals_log(documents, tokens, whole) "
                "  SELECT coalesce(sum(documents), 0), coalesce(sum(tokens), 0), true FROM text_totals_log "
                f"  WHERE seq >= {_LAST_WHOLE} RETURNING seq) "
                "DELETE FROM text_totals_log WHERE seq < (SELECT seq FROM w)"
            )

    def text_totals(self) -> tuple[int, int]:
        """(documents, tokens) as BM25 counts them."""
        docs, tokens = self.conn.execute(_TOTALS).fetchone()
        return int(docs), int(tokens)

    def text_index_ok(self) -> bool:
        """The postings, what they carry and the totals are what the memories give (a full recount: doctor only)."""
        want_docs, want_tokens, want_terms = 0, 0, 0
        for content, tags, length in self.conn.execute("SELECT content, tags, text_length FROM memories").fetchall():
            terms, n = fulltext.postings(content, tags)
            if n != length:
                return False
            want_docs, want_tokens, want_terms = want_docs + 1, want_tokens + n, want_terms + len(terms)
        terms = self.conn.execute("SELECT count(*) FROM text_terms").fetchone()[0]
        drifted = self.conn.execute(
            "SELECT count(*) FROM text_terms p JOIN memories m ON m.rowid = p.rowid "
            "WHERE p.text_length != m.text_length OR p.domain != m.domain OR p.archived != m.archived"
        ).fetchone()[0]
        return (*self.text_totals(), terms, drifted) == (want_docs, want_tokens, want_terms, 0)

    def rebuild_text_index(self) -> None:
        self.conn.execute("DELETE FROM text_terms")
        self.conn.execute("UPDATE memories SET text_length = 0")
        self.conn.execute("DELETE FROM text_totals_log")
        self.conn.execute("INSERT INTO text_totals_log(documents, tokens, whole) VALUES (0, 0, true)")
        for rowid, content, tags in self.conn.execute("SELECT rowid, content, tags FROM memories").fetchall():
            self._index_text(rowid, content, tags, new=True)

    # --- reads ----------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        return fulltext.tokenize(text)

    def term_document_counts(self, tokens: list[str]) -> tuple[int, dict[str, int]]:
        total = self.text_totals()[0]
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
            where.append("p.domain = ANY(%(domains)s)")
            params["domains"] = list(domains)
        if not include_archived:
            where.append("p.archived = 0")
        if tags:
            params["tags"] = list(tags)
        params["k"] = int(k)
        return [(r[0], float(r[1])) for r in self.conn.execute(_scored(params, where, bool(tags)), params)]

    def near_duplicate_candidates(
        self, words: list[str], limit: int, *, domain: str, exclude_rowid: int | None = None
    ) -> list[int]:
        params = _query(words)
        if params is None:
            return []
        params.update(d=domain, x=exclude_rowid if exclude_rowid is not None else -1, k=int(limit))
        where = ["p.domain = %(d)s", "p.archived = 0", "p.rowid != %(x)s"]
        return [r[0] for r in self.conn.execute(_scored(params, where, False), params)]
