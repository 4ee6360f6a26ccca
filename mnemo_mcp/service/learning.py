"""Learning: outcome feedback (valence, query->memory links, Hebbian concept links) and ratings."""

from __future__ import annotations

from datetime import datetime

from .. import validate
from ..core import alignment, lifecycle, rules
from ..core.secrets import masked, secret_like_word
from ..errors import InvalidInput, NotFound
from ..models import (
    FeedbackEvent,
    FeedbackResult,
    QualityReport,
    RateResult,
    RatingEntry,
    TensionPair,
    ValenceChange,
    preview,
)
from .base import Part, iso, rnd

# Pairs per memory in one Hebbian step: query concepts x memory concepts, bounded so one call
# stays a few hundred row writes at most.
ASSOC_CONCEPTS = 8


def _outcome(outcome: float | None) -> float | None:
    return None if outcome is None else validate.unit_number(outcome, "outcome", -1.0, 1.0)


class Learning(Part):
    # --- feedback ----------------------------------------------------------------------

    def feedback(
        self,
        memory_ids: list[str],
        *,
        outcome: float | None = None,
        read_id: str | None = None,
        query_concepts: list[str] | None = None,
        response: str | None = None,
        source: str = "memory_feedback",
        now: datetime | None = None,
    ) -> FeedbackResult:
        """Report an outcome for recalled memories, the answer they led to, or both.

        With `response` each memory's share of the outcome follows how closely the answer
        followed it, and concept links move by the alignment rule. A response alone moves
        links, never valence."""
        refs = validate.memory_refs(memory_ids)
        value = _outcome(outcome)
        answer = None if response is None else validate.text(response, "response", self.settings.max_response_chars)
        if value is None and answer is None:
            raise InvalidInput("give an outcome (-1.0 failure .. 1.0 success), the response text, or both")
        concepts = validate.concepts(query_concepts)
        read_id = validate.read_id(read_id)
        alignments = None if answer is None else self.align(refs, answer)
        return self._apply_feedback(refs, value, read_id, concepts, alignments, source, now)

    def feedback_aligned(
        self,
        memory_ids: list[str],
        *,
        alignments: dict[str, float],
        outcome: float | None = None,
        read_id: str | None = None,
        query_concepts: list[str] | None = None,
        source: str,
        now: datetime | None = None,
    ) -> FeedbackResult:
        """Feedback whose alignments (full ids -> [0, 1]) were measured already: the hooks
        measure the answer once per turn and credit each recall's memories by it."""
        if not alignments:
            raise InvalidInput("alignments must map at least one memory id to its alignment in [0, 1]")
        refs = validate.memory_refs(memory_ids)
        aligned = {k: min(1.0, max(0.0, float(v))) for k, v in alignments.items()}
        return self._apply_feedback(
            refs, _outcome(outcome), validate.read_id(read_id), validate.concepts(query_concepts), aligned, source, now
        )

    def feedback_credited(
        self,
        memory_ids: list[str],
        *,
        credits: dict[str, float],
        outcome: float,
        read_id: str | None = None,
        query_concepts: list[str] | None = None,
        source: str,
        now: datetime | None = None,
    ) -> FeedbackResult:
        """An outcome for memories whose shares of it were judged already (the hooks judge what
        the assistant did: core.attribution). A memory with no share is left exactly as it was:
        shown is not followed."""
        refs = validate.memory_refs(memory_ids)
        shares = {k: min(1.0, max(0.0, float(v))) for k, v in credits.items()}
        return self._apply_feedback(
            refs,
            _outcome(outcome),
            validate.read_id(read_id),
            validate.concepts(query_concepts),
            None,
            source,
            now,
            shares=shares,
        )

    def _apply_feedback(
        self,
        refs: list[str],
        value: float | None,
        read_id: str | None,
        concepts: list[str] | None,
        alignments: dict[str, float] | None,
        source: str,
        now: datetime | None,
        *,
        shares: dict[str, float] | None = None,
    ) -> FeedbackResult:
        """Resolve the memories, weigh each one's credit, apply the outcome: one transaction, the
        rows and links read once and written back a statement per table."""
        s = self.settings
        stamp = iso(now or self.clock())
        use_alignment = alignments is not None and (value is None or s.align_credit)
        tensions: list[TensionPair] = []
        with self.store.db.write():
            rows, missing, concepts = self._resolve_feedback(refs, read_id, concepts)
            losers: set[str] = set()
            credit: dict[str, float] = {}
            if shares is not None:
                credit = {mid: shares.get(mid, 0.0) for mid in rows}
            elif use_alignment:
                tensions, losers = self._tensions(rows, alignments)
                credit = {
                    mid: s.align_min_credit
                    if mid in losers
                    else alignment.credit_weight(alignments.get(mid, 0.0), s.align_min_credit)
                    for mid in rows
                }
            touched = {mid: row for mid, row in rows.items() if shares is None or credit[mid] > 0}
            updated = self._apply_outcomes(touched, value, credit, read_id, source, stamp) if value is not None else []
            cue_updates = self._teach_cues(touched, concepts, value, credit, stamp) if value is not None else 0
            links, weakened = self._links(
                touched, concepts, value, alignments if use_alignment else None, losers, stamp
            )
        shown = use_alignment or shares is not None
        return FeedbackResult(
            updated=updated,
            not_found=missing,
            associations_strengthened=links,
            associations_weakened=weakened,
            context_links_updated=cue_updates,
            alignment={k: rnd(v) for k, v in alignments.items() if k in credit} if use_alignment else None,
            credit={k: rnd(v) for k, v in credit.items()} if shown and value is not None else None,
            tension=tensions or None,
        )

    def _resolve_feedback(
        self, refs: list[str], read_id: str | None, concepts: list[str] | None
    ) -> tuple[dict[str, dict], list[str], list[str] | None]:
        """The rows the feedback is about, the ids not found, and the query concepts (the read's
        when none are given). Raises, changing nothing, when the read or every memory is unknown."""
        if read_id is not None:
            read = self.store.get_read(read_id.strip())
            if read is None:
                raise InvalidInput(
                    f"no read has read_id {read_id[:40]!r} (reads are kept {self.settings.read_log_days} days, "
                    f"at most {self.settings.read_log_limit}); "
                    "pass query_concepts instead, or omit read_id"
                )
            if concepts is None:
                concepts = read["query_concepts"]
        found, missing = self._resolve_many(refs)
        if not found:
            raise NotFound(f"none of the memory_ids exist: {', '.join(missing)}; nothing was changed")
        rows = self.store.rows_by_ids(found)
        if concepts:  # a secret given as a concept would be kept in the links it makes
            concepts = [c for c in concepts if not secret_like_word(c)]
        return {mid: rows[mid] for mid in found if mid in rows}, missing, concepts

    def _apply_outcomes(
        self,
        rows: dict[str, dict],
        value: float,
        credit: dict[str, float],
        read_id: str | None,
        source: str,
        stamp: str,
    ) -> list[ValenceChange]:
        """The delta rule on each memory's valence, at the learning rate scaled by its credit;
        the memories and their feedback events written in one statement each."""
        changes, updates, events = [], [], []
        for mid, row in rows.items():
            before = row["valence"]
            rate = self.settings.learning_rate * credit.get(mid, 1.0)
            after = rules.delta_rule(before, value, rate)
            meta = row["metadata"]
            meta["last_outcome"] = round(value, 4)
            meta["feedback_source"] = source
            meta["outcomes"] = rules.count_outcome(meta.get("outcomes"), value, rate)
            meta["outcome_at"], meta["valence_at_outcome"] = stamp, round(after, 6)  # for recovery
            updates.append(
                {
                    "id": mid,
                    "valence": after,
                    "feedback_count": row["feedback_count"] + 1,
                    "metadata": meta,
                    "updated_at": stamp,
                }
            )
            events.append(
                {
                    "memory_id": mid,
                    "read_id": read_id,
                    "outcome": value,
                    "rate": rate,
                    "valence_before": before,
                    "valence_after": after,
                    "source": source,
                    "created_at": stamp,
                    "by_user": self.settings.user,
                }
            )
            changes.append(ValenceChange(id=mid, valence_before=rnd(before, 6), valence_after=rnd(after, 6)))
        self.store.record_outcomes(updates)
        self.store.add_feedback_events(events)
        return changes

    def align(self, refs: list[str], answer: str, *, semantic: bool = True) -> dict[str, float]:
        """Each memory's alignment with the answer's best-matching sentence: the mean of the
        semantic measure (cosine, mapped from the relevance floor to 1; a model that sees "100"
        and "120 requests per minute" as near-identical needs the words too) and the lexical one
        (IDF-weighted share of the memory's words in the sentence). `semantic=False` skips the
        model, for short-lived hook processes."""
        s = self.settings
        # The whole answer counts as one more "sentence": a memory of several sentences that the
        # answer repeats is spread over several of its sentences, and no single one holds it all.
        parts = alignment.sentences(answer)
        if len(parts) > 1:
            parts.append(answer)
        with self.store.db.read():
            found, _ = self._resolve_many(refs)
            rows = {mid: self.store.get(mid) for mid in found}
            vectors = self._memory_vectors(rows) if semantic else {}
            mem_tokens = {mid: set(self.store.tokenize(r["content"])) for mid, r in rows.items()}
            sent_tokens = [set(self.store.tokenize(p)) for p in parts]
            vocab = sorted(set().union(*mem_tokens.values())) if mem_tokens else []
            total, counts = self.store.term_document_counts(vocab)
        idf = {t: rules.concept_weight(total, n) for t, n in counts.items()}
        lexical = {mid: alignment.lexical_alignment(toks, sent_tokens, idf) for mid, toks in mem_tokens.items()}
        if not vectors or not parts:
            return lexical
        sent_vecs = [[float(x) for x in v] for v in self.embed_passages(parts)]
        out = {}
        for mid in found:
            if mid not in vectors:
                out[mid] = lexical[mid]
                continue
            sem = alignment.semantic_alignment(
                [alignment.cosine(vectors[mid], sv) for sv in sent_vecs], s.sem_floor, 1.0
            )
            out[mid] = 0.5 * sem + 0.5 * lexical[mid]
        return out

    def _memory_vectors(self, rows: dict[str, dict]) -> dict[str, list[float]]:
        """The stored vector of each memory (by its row), for alignment and agreement."""
        if not self.store.has_vector_table():
            return {}
        out = {}
        for mid, row in rows.items():
            vec = self.store.vector_of(row["rowid"])
            if vec is not None:
                out[mid] = [float(x) for x in vec]
        return out

    def _tensions(self, rows: dict[str, dict], aligned: dict[str, float]) -> tuple[list[TensionPair], set[str]]:
        """Recalled memories that disagree, and which side the answer followed."""
        s = self.settings
        ids = list(rows)
        superseded = {(mid, r["superseded_by"]) for mid, r in rows.items() if r["superseded_by"] in rows}
        vectors = self._memory_vectors(rows)
        similarity = {
            (a, b): alignment.cosine(vectors[a], vectors[b])
            for i, a in enumerate(ids)
            for b in ids[i + 1 :]
            if a in vectors and b in vectors
        }
        pairs, losers = [], set()
        for a, b, why in alignment.tension_pairs(ids, similarity, superseded, s.tension_similarity):
            gap = aligned.get(a, 0.0) - aligned.get(b, 0.0)
            if abs(gap) < s.tension_margin:
                continue  # the answer does not clearly take a side
            kept, lost = (a, b) if gap > 0 else (b, a)
            losers.add(lost)
            pairs.append(TensionPair(followed=kept, weakened=lost, reason=why))
        return pairs, losers

    def _links(
        self,
        rows: dict[str, dict],
        concepts: list[str] | None,
        value: float | None,
        alignments: dict[str, float] | None,
        losers: set[str],
        stamp: str,
    ) -> tuple[int, int]:
        """Move the concept links between the query's concepts and each memory's: by the
        alignment rule when the answer was weighed, else Hebbian with the outcome. The links are
        read once and written back in one statement. -> (strengthened, weakened)."""
        if not concepts or (alignments is None and value is None):
            return 0, 0
        s = self.settings
        plan = {
            mid: [(a, b) for a in concepts[:ASSOC_CONCEPTS] for b in row["concepts"][:ASSOC_CONCEPTS] if a != b]
            for mid, row in rows.items()
        }
        state = self.store.associations_between(list(dict.fromkeys(p for ps in plan.values() for p in ps)))
        rule = s.alignment_rule(scale=1.0 if value is not None else s.response_only_scale)
        changed: dict[tuple[str, str], tuple[float, float, int]] = {}
        up = down = 0
        for mid, pairs in plan.items():
            aligned = None if alignments is None else (0.0 if mid in losers else alignments.get(mid, 0.0))
            for pair in pairs:
                key = (min(pair), max(pair))
                weight, valence, count = changed.get(key) or state.get(key) or (0.0, 0.0, 0)
                moved = self._link_step(weight, valence, value, aligned, rule)
                if moved is None:
                    continue
                weight, valence, direction = moved
                changed[key] = (weight, valence, count + 1)
                up, down = up + (direction > 0), down + (direction < 0)
        self.store.put_associations([(a, b, w, v, n, stamp) for (a, b), (w, v, n) in changed.items()])
        return up, down

    def _link_step(
        self, weight: float, valence: float, value: float | None, aligned: float | None, rule
    ) -> tuple[float, float, int] | None:
        """One link's step -> (weight, valence, +1 / -1 / 0), or None to leave it alone."""
        rate = self.settings.association_rate
        if aligned is not None:  # the alignment rule; with an outcome the link's valence follows it
            new_weight, direction = alignment.link_step(weight, aligned, rule)
            if direction == 0:
                return None
            return new_weight, rules.delta_rule(valence, value, rate) if value is not None else valence, direction
        # Hebbian: co-activation in a useful recall strengthens, in a misleading one weakens.
        if value > 0:
            weight, direction = rules.strengthen(weight, rate * value), 1
        elif value < 0:
            weight, direction = lifecycle.weaken(weight, rate * -value), -1
        else:
            direction = 0
        return weight, rules.delta_rule(valence, value, rate), direction

    def _teach_cues(
        self, rows: dict[str, dict], concepts: list[str] | None, value: float, credit: dict[str, float], stamp: str
    ) -> int:
        """The query -> memory links: each moves toward the outcome at the memory's credit."""
        if not concepts or not rows:
            return 0
        old = self.store.cues_between(list(rows), concepts)
        out = []
        for mid in rows:
            for concept in concepts:
                cue, count = old.get((mid, concept), (0.0, 0))
                target = value * credit.get(mid, 1.0)
                out.append(
                    (mid, concept, rules.link_update(cue, count, target, self.settings.context_rate), count + 1, stamp)
                )
        self.store.put_cues(out)
        return len(out)

    # --- ratings and quality -----------------------------------------------------------

    def rate(
        self, memory_id: str, *, rating: int, reason: str | None = None, now: datetime | None = None
    ) -> RateResult:
        ref = validate.memory_ref(memory_id)
        value = validate.rating(rating)
        if reason is not None:
            reason = validate.text(reason, "reason", 500, allow_empty=True).strip() or None
        stamp = iso(now or self.clock())
        with self.store.db.write():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            meta = row["metadata"]
            meta["user_rating"] = value
            meta["outcome"] = {1: "positive", -1: "negative", 0: "neutral"}[value]
            meta["feedback_source"] = "rate_memory"
            meta["rating_sum"] = float(meta.get("rating_sum", 0.0)) + value
            meta["rating_count"] = int(meta.get("rating_count", 0)) + 1
            history = list(meta.get("rating_history", []))
            history.append(
                {
                    "rating": value,
                    "reason": masked(reason) if reason else reason,
                    "at": stamp,
                    "user": self.settings.user,
                }
            )
            meta["rating_history"] = history[-rules.RATING_HISTORY_LIMIT :]
            quality = self._refresh_quality(row)
            self.store.update(mid, metadata=meta, quality=quality, updated_at=stamp)
        return RateResult(id=mid, user_rating=value, quality_score=rnd(quality), rating_count=meta["rating_count"])

    def quality(self, memory_id: str) -> QualityReport:
        ref = validate.memory_ref(memory_id)
        with self.store.db.read():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            events = self.store.feedback_events(mid, limit=10)
            replaced = self.store.superseded_ids(mid)
        quality, components = self._quality_fields(row)
        meta = row["metadata"]
        return QualityReport(
            id=mid,
            content_preview=preview(row["content"]),
            quality_score=rnd(quality),
            components={k: rnd(v) for k, v in components.items()},
            valence=rnd(row["valence"]),
            access_count=row["access_count"],
            retrieval_count=row["retrieval_count"],
            feedback_count=row["feedback_count"],
            rating_count=int(meta.get("rating_count", 0)),
            user_rating=meta.get("user_rating"),
            rating_history=[RatingEntry(**h) for h in meta.get("rating_history", [])],
            recent_feedback=[
                FeedbackEvent(
                    outcome=e["outcome"],
                    valence_after=rnd(e["valence_after"]),
                    read_id=e["read_id"],
                    source=e["source"],
                    at=e["created_at"],
                )
                for e in events
            ],
            archived=row["archived"],
            tier=row["tier"],
            source=row["source"],
            archive_reason=row["archive_reason"],
            superseded_by=row["superseded_by"],
            supersedes=replaced,
            provenance=row["provenance"],
            quarantine=row["quarantine"],
        )
