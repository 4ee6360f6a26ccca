"""Reading: candidates from both retrievers, relevance, the learned re-ranking, usage upkeep."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from .. import validate
from ..core import rules
from ..core.text import extract_concepts, fts_match_expression, query_words
from ..models import MemoryItem, ReadResult
from .base import ServiceBase, iso, rnd

LEXICAL_SCORED = 2000  # keyword matches scored per read (see _candidates)


@dataclass
class Candidate:
    rowid: int
    cosine: float | None = None
    bm25: float | None = None
    expanded_bm25: float | None = None  # keyword score against the linked concepts


class ReadingMixin(ServiceBase):
    def read(
        self,
        query: str,
        top_k: int = 5,
        tags: list[str] | None = None,
        domain: str | None = None,
        min_relevance: float | None = None,
        include_archived: bool = False,
        expand_associations: bool | None = None,
        *,
        now: datetime | None = None,
        record: bool = True,
    ) -> ReadResult:
        s = self.settings
        query = validate.text(query, "query", s.max_content_chars)
        k = validate.top_k(top_k, s)
        tag_filter = validate.tags(tags, s, what="tags filter") or None
        dom = validate.domain(domain)
        floor = None if min_relevance is None else validate.unit_number(min_relevance, "min_relevance", 0.0, 1.0)
        validate.flag(include_archived, "include_archived")
        expand = s.expand_associations if expand_associations is None else validate.flag(expand_associations, "expand_associations")
        q_concepts = extract_concepts(query)
        qvec = self._embed_query(query)
        ranked, expanded = self._rank(query, qvec, q_concepts, k, tag_filter, dom, include_archived, expand)
        if floor is not None:
            ranked = [r for r in ranked if r[1] >= floor]
        ranked = ranked[:k]

        read_id = secrets.token_hex(8)
        shown_expansion = expanded if expand else None
        if not record:
            with self.store.db.read():
                rows = self.store.by_rowids([r[0] for r in ranked])
                items = [self._item(rows[r[0]], r, expanded) for r in ranked if r[0] in rows]
            return ReadResult(read_id=read_id, query_concepts=q_concepts, items=items, expanded_concepts=shown_expansion)
        stamp = iso(now or self.clock())
        items = []
        with self.store.db.write():
            rows = self.store.by_rowids([r[0] for r in ranked])
            for r in ranked:
                if r[0] not in rows:  # deleted by another process since ranking
                    continue
                row = rows[r[0]]
                self._count_retrieval(row, len(items) + 1, stamp)
                items.append(self._item(row, r, expanded))
            self.store.record_read(
                {
                    "id": read_id,
                    "query": query,
                    "query_concepts": q_concepts,
                    "domain": dom,
                    "results": [[it.id, i] for i, it in enumerate(items, start=1)],
                    "created_at": stamp,
                },
                keep=s.read_log_limit,
            )
        return ReadResult(read_id=read_id, query_concepts=q_concepts, items=items, expanded_concepts=shown_expansion)

    def _count_retrieval(self, row: dict[str, Any], rank: int, stamp: str) -> None:
        """A read returned this memory at `rank`: update its usage and quality (inside a write)."""
        row["access_count"] += 1
        row["retrieval_count"] += 1
        row["reciprocal_rank_sum"] += 1.0 / rank
        self._refresh_quality(row)
        self.store.update(
            row["id"],
            access_count=row["access_count"],
            retrieval_count=row["retrieval_count"],
            reciprocal_rank_sum=row["reciprocal_rank_sum"],
            last_accessed_at=stamp,
            quality=row["quality"],
            metadata=row["metadata"],
        )

    def _item(self, row: dict[str, Any], ranked: tuple[int, float, float, bool], expanded: list[str]) -> MemoryItem:
        _, rel, score, via_link = ranked
        via = None
        if via_link:
            # Name the linked concept that reached it (the first whose tokens the memory holds).
            held = set(self.store.tokenize(row["content"]))
            via = next((c for c in expanded if set(self.store.tokenize(c)) <= held), expanded[0] if expanded else None)
        return MemoryItem(
            id=row["id"],
            content=row["content"],
            tags=row["tags"],
            memory_type=row["memory_type"],
            domain=row["domain"] or None,
            relevance=rnd(rel),
            valence=rnd(row["valence"]),
            quality=rnd(row["quality"]),
            score=rnd(score),
            created_at=row["created_at"],
            tier=row["tier"],
            archived=row["archived"],
            superseded_by=row["superseded_by"],
            expanded_via=via,
        )

    def _candidates(
        self,
        query: str,
        qvec: np.ndarray,
        pool: int,
        tags: list[str] | None,
        domain: str | None,
        archived: bool,
        expanded: list[str],
    ) -> tuple[dict[int, Candidate], float, float]:
        """Union of vector, keyword and (with `expanded`) linked-concept candidates, each with its
        scores filled in. -> (candidates, IDF total of the query, IDF total of the expansion)."""
        st = self.store
        words = query_words(query)
        match = fts_match_expression(words)
        tokens = list(dict.fromkeys(t for w in words for t in st.tokenize(w)))
        cands: dict[int, Candidate] = {}
        for rowid, cos in st.knn(qvec, pool, domain=domain, include_archived=archived, tags=tags):
            cands[rowid] = Candidate(rowid, cosine=cos)
        idf_total = 0.0
        if match and tokens:
            # FTS5 scores every match to sort them anyway, so one pass that returns up to
            # LEXICAL_SCORED rows costs about what the top `pool` cost: the first `pool` are keyword
            # candidates, the rest give vector candidates their BM25. (A second query filtered by
            # rowid took 14 ms of a 15 ms read.) A vector candidate below that depth keeps BM25 None.
            scored = st.fts(match, max(pool, LEXICAL_SCORED), domain=domain, include_archived=archived, tags=tags)
            for i, (rowid, bm) in enumerate(scored):
                if i < pool:
                    cands.setdefault(rowid, Candidate(rowid)).bm25 = bm
                elif rowid in cands:
                    cands[rowid].bm25 = bm
            total, counts = st.term_document_counts(tokens)
            idf_total = sum(rules.fts5_idf(total, n) for n in counts.values())
        idf_expanded = 0.0
        match_expanded = fts_match_expression(expanded)
        if match_expanded:
            for rowid, bm in st.fts(match_expanded, pool, domain=domain, include_archived=archived, tags=tags):
                cands.setdefault(rowid, Candidate(rowid)).expanded_bm25 = bm
            exp_tokens = list(dict.fromkeys(t for c in expanded for t in st.tokenize(c)))
            total, counts = st.term_document_counts(exp_tokens)
            idf_expanded = sum(rules.fts5_idf(total, n) for n in counts.values())
        missing_cos = [c.rowid for c in cands.values() if c.cosine is None]
        for rowid, cos in st.cosines(qvec, missing_cos).items():
            cands[rowid].cosine = cos
        return cands, idf_total, idf_expanded

    def _rank(
        self,
        query: str,
        qvec: np.ndarray,
        q_concepts: list[str],
        k: int,
        tags: list[str] | None,
        domain: str | None,
        archived: bool,
        expand: bool = False,
    ) -> tuple[list[tuple[int, float, float, bool]], list[str]]:
        """Every candidate as (rowid, relevance, score, reached through a link), best first, and
        the concepts the query was expanded with."""
        s = self.settings
        pool = max(s.candidates, 2 * k)
        with self.store.db.read():
            expanded = []
            if expand:
                expanded = [b for _, b, _ in self.store.strongest_links(q_concepts, s.expand_concepts, s.expand_min_weight)]
            cands, idf_total, idf_expanded = self._candidates(query, qvec, pool, tags, domain, archived, expanded)
            rows = self.store.scoring_rows(cands)
            cue_map = self.store.cue_values([r["id"] for r in rows.values()], q_concepts) if s.boost_enabled else {}
            concept_weights = self._concept_weights(q_concepts) if cue_map else {}
        out = []
        for rowid, c in cands.items():
            row = rows.get(rowid)
            if row is None:
                continue
            rel = rules.relevance(
                rules.semantic_score(c.cosine, s.sem_floor, s.sem_ceil),
                rules.lexical_score(c.bm25, idf_total),
                s.sem_weight,
            )
            via_link = False
            if c.expanded_bm25 is not None:
                # Reached through a linked concept: counts, but for less than a direct match.
                linked = s.expand_weight * rules.lexical_score(c.expanded_bm25, idf_expanded)
                if linked > rel:
                    rel, via_link = linked, True
            score = rel
            if s.boost_enabled:
                explicit = row["feedback_count"] + row["rating_count"]
                g = rules.global_signal(row["valence"], row["quality"], explicit, s.valence_share)
                ctx = rules.context_signal(cue_map.get(row["id"], {}), concept_weights, s.context_sharpness)
                score = rules.final_score(
                    rel,
                    g,
                    ctx,
                    global_weight=s.global_weight,
                    context_weight=s.context_weight,
                    context_gate=s.context_gate,
                    context_gate_floor=s.context_gate_floor,
                )
            out.append((rowid, rel, score, via_link, row["created_at"], row["id"]))
        out.sort(key=lambda t: (-t[2], -t[1], t[4], t[5]))
        return [t[:4] for t in out], expanded

    def _concept_weights(self, concepts: list[str]) -> dict[str, float]:
        """Each concept's specificity: the IDF of its rarest token in the full-text index."""
        tokens = {c: self.store.tokenize(c) for c in concepts}
        total, counts = self.store.term_document_counts(sorted({t for ts in tokens.values() for t in ts}))
        return {
            c: max((rules.concept_weight(total, counts[t]) for t in ts), default=0.0) for c, ts in tokens.items()
        }

