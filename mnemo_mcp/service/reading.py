"""Reading: candidates from both retrievers, relevance, the learned re-ranking, usage upkeep."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .. import validate
from ..core import rules
from ..core.secrets import masked, without_secrets
from ..core.text import extract_concepts, query_words
from ..errors import DiskFull, InvalidInput
from ..models import MemoryItem, ReadResult
from .base import Part, iso, rnd
from .trust import provenance_line, shown_text

if TYPE_CHECKING:  # numpy costs 50 ms to import; hook processes never need it
    import numpy as np

LEXICAL_SCORED = 2000  # keyword matches scored per read (see _candidates)

NOT_RECORDED = (
    "the disk is full: this read was not recorded, so memory_feedback cannot use its read_id "
    "(pass query_concepts instead) and usage statistics were not updated; free some disk space"
)

log = logging.getLogger("mnemo_mcp.reading")


def _days_since(now: datetime, stamp: str | None) -> float:
    try:
        then = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return 0.0
    return max((now - then).total_seconds() / 86400.0, 0.0) if then else 0.0


@dataclass
class Candidate:
    rowid: int
    cosine: float | None = None
    bm25: float | None = None
    linked: float = 0.0  # relevance through the best linked concept (expansion)
    via: str | None = None  # that concept


def _searchable(query: str) -> str:
    """The query without its secrets: a secret pasted into a prompt is not searched for, learned
    as a concept or logged."""
    clean = without_secrets(query)
    if not clean.strip():
        raise InvalidInput("the query is only a secret; search for the words around it instead")
    return clean


class Reading(Part):
    def read(
        self,
        query: str,
        *,
        top_k: int = 5,
        tags: list[str] | None = None,
        domain: str | None = None,
        min_relevance: float | None = None,
        include_archived: bool = False,
        expand_associations: bool | None = None,
        keyword_only: bool = False,
        exclude_quarantined: bool = False,
        include_quarantined: bool = False,
        now: datetime | None = None,
        record: bool = True,
    ) -> ReadResult:
        """Memories for a query, best first. `keyword_only` skips the embedding model (the
        full-text index and the learned signals only): for short-lived processes such as hooks,
        which cannot wait a second for the model to load. A quarantined note is listed last, with
        its id, reason and provenance and its text withheld, unless `include_quarantined` (then
        its text is fenced and marked as data); `exclude_quarantined` leaves it out (the hooks)."""
        s = self.settings
        query = self._query_text(query)
        k = validate.top_k(top_k, s)
        tag_filter = validate.tags(tags, s, what="tags filter") or None
        domains = self._read_scope(validate.domain(domain))
        floor = None if min_relevance is None else validate.unit_number(min_relevance, "min_relevance", 0.0, 1.0)
        validate.flag(include_archived, "include_archived")
        show = validate.flag(include_quarantined, "include_quarantined")
        expand = (
            s.expand_associations
            if expand_associations is None
            else validate.flag(expand_associations, "expand_associations")
        )
        q_concepts = extract_concepts(query)
        # The query is embedded on another thread while this one runs the keyword pass.
        vector = None if keyword_only else self._embed_query_soon(query)
        ranked, expanded, idf_total = self._rank(
            query,
            vector,
            q_concepts,
            k,
            tag_filter,
            domains,
            include_archived,
            expand,
            exclude_quarantined=exclude_quarantined,
            now=now,
        )
        if floor is not None:
            ranked = [r for r in ranked if r[1] >= floor]
        ranked = [self._with_parts(r, idf_total) for r in ranked[:k]]

        read_id = secrets.token_hex(8)
        shown_expansion = expanded if expand else None
        if record:
            try:
                when = now or self.clock()
                since = iso(when - timedelta(days=self.settings.read_log_days))
                items = self._record_read(read_id, q_concepts, domains, ranked, iso(when), show, since)
                return ReadResult(
                    read_id=read_id, query_concepts=q_concepts, items=items, expanded_concepts=shown_expansion
                )
            except DiskFull:
                # A full disk must not make the memory unreadable: answer without the bookkeeping.
                log.warning(
                    "disk full: a read was answered without recording it (read log and usage statistics not updated)"
                )
        with self.store.db.read():
            rows = self.store.by_rowids([r[0] for r in ranked])
            items = [self._item(rows[r[0]], r, show) for r in ranked if r[0] in rows]
        return ReadResult(
            read_id=read_id,
            query_concepts=q_concepts,
            items=items,
            expanded_concepts=shown_expansion,
            warning=NOT_RECORDED if record else None,
        )

    def _query_text(self, query: str) -> str:
        """What a read of `query` searches for and embeds."""
        return _searchable(validate.text(query, "query", self.settings.max_content_chars))

    def embed_query_ahead(self, query: str) -> None:
        """Start embedding what a read of `query` will embed, so that the read, when it comes,
        waits only for what is left of it (the prompt hook: while the hook confirms the event and
        the turn is logged). Nothing when the query is not one a read would take."""
        try:
            text = self._query_text(query)
        except InvalidInput:
            return
        self.ctx.embed_ahead(text)

    def _record_read(
        self,
        read_id: str,
        q_concepts: list[str],
        domains: list[str] | None,
        ranked: list,
        stamp: str,
        show_quarantined: bool,
        since: str,
    ) -> list[MemoryItem]:
        """Count each returned memory's use and log the read for feedback (one write) -> the items.
        The log keeps reads for `read_log_days` (and at most `read_log_limit`): feedback by
        read_id comes in the session that read."""
        items: list[MemoryItem] = []
        usage: list[dict[str, Any]] = []
        with self.store.db.write():
            rows = self.store.by_rowids([r[0] for r in ranked])
            for r in ranked:
                if r[0] not in rows:  # deleted by another process since ranking
                    continue
                row = rows[r[0]]
                usage.append(self._count_retrieval(row, len(items) + 1, stamp))
                items.append(self._item(row, r, show_quarantined))
            self.store.record_usage(usage)  # one statement for all of them
            self.store.record_read(
                {
                    "id": read_id,
                    # Not the query's text: feedback needs only its concepts and what was returned.
                    "query": "",
                    "query_concepts": q_concepts,
                    "domain": ",".join(domains) if domains is not None else None,
                    "results": [[it.id, i] for i, it in enumerate(items, start=1)],
                    "created_at": stamp,
                },
                keep=self.settings.read_log_limit,
                since=since,
            )
        return items

    def _count_retrieval(self, row: dict[str, Any], rank: int, stamp: str) -> dict[str, Any]:
        """A read returned this memory at `rank`: its new usage and quality (the caller stores them)."""
        row["access_count"] += 1
        row["retrieval_count"] += 1
        row["reciprocal_rank_sum"] += 1.0 / rank
        self._refresh_quality(row)
        return {
            "id": row["id"],
            "access_count": row["access_count"],
            "retrieval_count": row["retrieval_count"],
            "reciprocal_rank_sum": row["reciprocal_rank_sum"],
            "last_accessed_at": stamp,
            "quality": row["quality"],
            "metadata": row["metadata"],
        }

    def _item(self, row: dict[str, Any], ranked: tuple, show_quarantined: bool = False) -> MemoryItem:
        _, rel, score, via, (semantic, lexical) = ranked
        quarantine = row.get("quarantine")
        return MemoryItem(
            id=row["id"],
            # Masked whatever the store holds: a note written with MNEMO_SECRETS=allow, or
            # imported, is checked again each time it is shown.
            content=shown_text(row, show_quarantined) if quarantine else masked(row["content"]),
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
            source=(row.get("provenance") or {}).get("by"),
            quarantined=quarantine.get("reason") if quarantine else None,
            provenance=provenance_line(row) if quarantine else None,
            outcome=rules.outcome_label(row["metadata"].get("outcomes"), row["valence"]),
            semantic=semantic,
            lexical=lexical,
        )

    def _candidates(
        self,
        query: str,
        vector: Callable[[], np.ndarray] | None,
        pool: int,
        tags: list[str] | None,
        domains: list[str] | None,
        archived: bool,
        expanded: list[tuple[str, float]],
    ) -> tuple[dict[int, Candidate], float, dict[int, tuple]]:
        """Union of vector, keyword and (with `expanded`: linked concepts and link strengths)
        linked-concept candidates, each with its scores filled in -> (candidates, query IDF, their
        scoring rows). `vector` gives the query's embedding, computed meanwhile (None: keywords only)."""
        st = self.store
        words = query_words(query)
        total, per_word = st.word_document_counts(words)
        tokens = {t: n for toks in per_word.values() for t, n in toks}  # each index token once
        if vector is not None:
            st.prepare_vector_search()
        scored: list[tuple[int, float]] = []
        idf_total = 0.0
        if words and tokens:
            # FTS5 scores every match to sort them anyway, so one pass that returns up to
            # LEXICAL_SCORED rows costs about what the top `pool` cost: the first `pool` are keyword
            # candidates, the rest give vector candidates their BM25. (A second query filtered by
            # rowid took 14 ms of a 15 ms read.) A vector candidate below that depth keeps BM25 None.
            scored = st.fts(words, max(pool, LEXICAL_SCORED), domains=domains, include_archived=archived, tags=tags)
            idf_total = sum(rules.fts5_idf(total, n) for n in tokens.values())
        # What does not need the query's vector is done before waiting for it.
        deeper = dict(scored[pool:])
        rows = st.scoring_rows(r for r, _ in scored[:pool])
        qvec = vector() if vector is not None else None
        cands: dict[int, Candidate] = {}
        if qvec is not None:
            for rowid, cos in st.knn(qvec, pool, domains=domains, include_archived=archived, tags=tags):
                cands[rowid] = Candidate(rowid, cosine=cos, bm25=deeper.get(rowid))
        for rowid, bm in scored[:pool]:
            cands.setdefault(rowid, Candidate(rowid)).bm25 = bm
        # One keyword query per linked concept, so each memory reached is credited by the link
        # that reached it: relevance = expand_weight * link strength * keyword score.
        for concept, strength in expanded:
            c_total, c_words = st.word_document_counts([concept])
            c_tokens = dict(c_words.get(concept) or [])
            if not concept or not c_tokens:
                continue
            idf_c = sum(rules.fts5_idf(c_total, n) for n in c_tokens.values())
            weight = self.settings.expand_weight * strength
            for rowid, bm in st.fts([concept], pool, domains=domains, include_archived=archived, tags=tags):
                cand = cands.setdefault(rowid, Candidate(rowid))
                linked = weight * rules.lexical_score(bm, idf_c)
                if linked > cand.linked:
                    cand.linked, cand.via = linked, concept
        if qvec is not None:
            missing_cos = [c.rowid for c in cands.values() if c.cosine is None]
            for rowid, cos in st.cosines(qvec, missing_cos).items():
                cands[rowid].cosine = cos
        rows.update(st.scoring_rows(r for r in cands if r not in rows))
        return cands, idf_total, rows

    def _rank(
        self,
        query: str,
        vector: Callable[[], np.ndarray] | None,
        q_concepts: list[str],
        k: int,
        tags: list[str] | None,
        domains: list[str] | None,
        archived: bool,
        expand: bool = False,
        *,
        exclude_quarantined: bool = False,
        now: datetime | None = None,
    ) -> tuple[list[tuple], list[str], float | None]:
        """Every candidate as (rowid, relevance, score, the linked concept it was reached through
        or None, its Candidate), best first; the concepts the query was expanded with; and the
        query's IDF for the candidates' lexical parts (None without a query vector: no parts)."""
        s = self.settings
        pool = max(s.candidates, 2 * k)
        # Without a query vector, relevance is the keyword score alone (not 60% of it).
        sem_weight = s.sem_weight if vector is not None else 0.0
        with self.store.db.read():
            expanded = []
            if expand:
                expanded = [
                    (b, w) for _, b, w in self.store.strongest_links(q_concepts, s.expand_concepts, s.expand_min_weight)
                ]
            cands, idf_total, rows = self._candidates(query, vector, pool, tags, domains, archived, expanded)
            cue_map = self._cues([r[0] for r in rows.values()], q_concepts, now) if s.boost_enabled else {}
            concept_weights = self._concept_weights(q_concepts) if cue_map else {}
        out = []
        for rowid, c in cands.items():
            row = rows.get(rowid)
            if row is None:
                continue
            mid, valence, quality, explicit, created_at, quarantined = row
            if exclude_quarantined and quarantined:
                continue
            rel = rules.candidate_relevance(c.cosine, c.bm25, idf_total, s.sem_floor, s.sem_ceil, sem_weight)
            via = None
            if c.linked > rel:  # reached through a linked concept rather than the query's words
                rel, via = c.linked, c.via
            score = rel
            # A memory nobody judged (no valence, ratings, feedback or links) scores its relevance
            # exactly (the learned terms are 0.0): most candidates, so their arithmetic is skipped.
            if s.boost_enabled and (valence or explicit or mid in cue_map):
                g = rules.global_signal(valence, quality, explicit, s.valence_share)
                ctx = rules.context_signal(cue_map.get(mid, {}), concept_weights, s.context_sharpness)
                score = rules.final_score(
                    rel,
                    g,
                    ctx,
                    global_weight=s.global_weight,
                    context_weight=s.context_weight,
                    context_gate=s.context_gate,
                    context_gate_floor=s.context_gate_floor,
                )
            out.append((rowid, rel, score, via, created_at, mid, bool(quarantined), c))
        # A quarantined note comes after every other: however relevant, it is never the first answer.
        out.sort(key=lambda t: (t[6], -t[2], -t[1], t[4], t[5]))
        return [(*t[:4], t[7]) for t in out], [c for c, _ in expanded], idf_total if vector is not None else None

    def _with_parts(self, ranked: tuple, idf_total: float | None) -> tuple:
        """A ranked candidate with its (semantic, lexical) parts, (None, None) without a query
        vector: computed for the memories shown, not for every candidate."""
        *head, c = ranked
        if idf_total is None:
            return (*head, (None, None))
        s = self.settings
        semantic = rules.semantic_score(c.cosine, s.sem_floor, s.sem_ceil)
        return (*head, (semantic, rules.lexical_score(c.bm25, idf_total)))

    def _cues(self, memory_ids: list[str], concepts: list[str], now: datetime | None) -> dict[str, dict[str, float]]:
        """The query->memory links of these memories for the query's concepts, faded by the time
        since each was last taught (MNEMO_CUE_HALF_LIFE_DAYS)."""
        now, half_life = now or self.clock(), self.settings.cue_half_life_days
        out: dict[str, dict[str, float]] = {}
        for mid, links in self.store.cue_values(memory_ids, concepts).items():
            out[mid] = {c: rules.faded(v, _days_since(now, at), half_life) for c, (v, at) in links.items()}
        return out

    def _concept_weights(self, concepts: list[str]) -> dict[str, float]:
        """Each concept's specificity: the IDF of its rarest token in the full-text index."""
        total, per_word = self.store.word_document_counts(concepts)
        return {c: max((rules.concept_weight(total, n) for _, n in toks), default=0.0) for c, toks in per_word.items()}
