"""Learning: outcome feedback (valence, query->memory links, Hebbian concept links) and ratings."""

from __future__ import annotations

from datetime import datetime

from .. import validate
from ..core import lifecycle, rules
from ..errors import InvalidInput, NotFound
from ..models import (
    FeedbackEvent,
    FeedbackResult,
    QualityReport,
    RateResult,
    RatingEntry,
    ValenceChange,
    preview,
)
from .base import ServiceBase, iso, rnd

RATING_HISTORY_LIMIT = 20
# Pairs per memory in one Hebbian step: query concepts x memory concepts, bounded so one call
# stays a few hundred row writes at most.
ASSOC_CONCEPTS = 8


class LearningMixin(ServiceBase):
    # --- feedback ----------------------------------------------------------------------

    def feedback(
        self,
        memory_ids: list[str],
        outcome: float,
        read_id: str | None = None,
        query_concepts: list[str] | None = None,
        *,
        source: str = "memory_feedback",
        now: datetime | None = None,
    ) -> FeedbackResult:
        s = self.settings
        refs = validate.memory_refs(memory_ids)
        value = validate.unit_number(outcome, "outcome", -1.0, 1.0)
        concepts = validate.concepts(query_concepts)
        if read_id is not None and (not isinstance(read_id, str) or not read_id.strip()):
            raise InvalidInput("read_id must be the read_id string returned by memory_read")
        stamp = iso(now or self.clock())
        updated: list[ValenceChange] = []
        links = weakened = 0
        cue_updates = 0
        with self.store.db.write():
            if read_id is not None:
                read = self.store.get_read(read_id.strip())
                if read is None:
                    raise InvalidInput(
                        f"no read has read_id {read_id[:40]!r} (only the last {s.read_log_limit} reads are kept); "
                        "pass query_concepts instead, or omit read_id"
                    )
                if concepts is None:
                    concepts = read["query_concepts"]
            found, missing = self._resolve_many(refs)
            if not found:
                raise NotFound(f"none of the memory_ids exist: {', '.join(missing)}; nothing was changed")
            for mid in found:
                row = self.store.get(mid)
                before = row["valence"]
                after = rules.delta_rule(before, value, s.learning_rate)
                meta = row["metadata"]
                meta["last_outcome"] = round(value, 4)
                meta["feedback_source"] = source
                self.store.update(
                    mid, valence=after, feedback_count=row["feedback_count"] + 1, metadata=meta, updated_at=stamp
                )
                self.store.add_feedback_event(
                    {
                        "memory_id": mid,
                        "read_id": read_id,
                        "outcome": value,
                        "rate": s.learning_rate,
                        "valence_before": before,
                        "valence_after": after,
                        "source": source,
                        "created_at": stamp,
                    }
                )
                updated.append(ValenceChange(id=mid, valence_before=rnd(before, 6), valence_after=rnd(after, 6)))
                if concepts:
                    cue_updates += self._teach_cues(mid, concepts, value, stamp)
                    up, down = self._hebbian(concepts, row["concepts"], value, stamp)
                    links += up
                    weakened += down
        return FeedbackResult(
            updated=updated,
            not_found=missing,
            associations_strengthened=links,
            associations_weakened=weakened,
            context_links_updated=cue_updates,
        )

    def _teach_cues(self, memory_id: str, concepts: list[str], outcome: float, stamp: str) -> int:
        for concept in concepts:
            old = self.store.get_cue(memory_id, concept)
            value, count = old if old else (0.0, 0)
            self.store.put_cue(
                memory_id, concept, rules.link_update(value, count, outcome, self.settings.context_rate), count + 1, stamp
            )
        return len(concepts)

    def _hebbian(self, query_concepts: list[str], memory_concepts: list[str], outcome: float, stamp: str) -> tuple[int, int]:
        """Co-activation in a useful recall strengthens concept links, in a misleading one weakens
        them; their valence follows the outcome either way. -> (strengthened, weakened)."""
        rate = self.settings.association_rate
        up = down = 0
        for a in query_concepts[:ASSOC_CONCEPTS]:
            for b in memory_concepts[:ASSOC_CONCEPTS]:
                if a == b:
                    continue
                old = self.store.get_association(a, b)
                weight, valence, count = old if old else (0.0, 0.0, 0)
                if outcome > 0:
                    weight, up = rules.strengthen(weight, rate * outcome), up + 1
                elif outcome < 0:
                    weight, down = lifecycle.weaken(weight, rate * -outcome), down + 1
                self.store.put_association(a, b, weight, rules.delta_rule(valence, outcome, rate), count + 1, stamp)
        return up, down

    # --- ratings and quality -----------------------------------------------------------

    def rate(self, memory_id: str, rating: int, reason: str | None = None, *, now: datetime | None = None) -> RateResult:
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
            history.append({"rating": value, "reason": reason, "at": stamp})
            meta["rating_history"] = history[-RATING_HISTORY_LIMIT:]
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
        )
