"""Lifecycle: consolidation (quality upkeep, tiers, retention, merging near-duplicates, link
decay), archive and restore, supersede. Archiving is never deletion: every row stays."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import validate
from ..core import dedup, lifecycle, rules
from ..core.text import query_words
from ..models import ConsolidationReport, LifecycleChange, LifecycleResult, preview
from .base import Part, ServiceContext, iso
from .trust import Trust

if TYPE_CHECKING:  # numpy costs 50 ms to import; hook processes never need it
    import numpy as np

log = logging.getLogger("mnemo_mcp.lifecycle")

PAGE = 500  # memories per consolidation transaction: other sessions wait at most one page
REPORT_LIMIT = 50  # entries per list in a report (counts stay complete)
DUP_WORDS = 8  # rarest words of a memory used to find near-duplicate candidates
DUP_CANDIDATES = 20
DUP_COMMON_FLOOR = 50  # a word in more than max(this, 1% of memories) is common
MERGE_FLOOR = 0.6  # below this cosine two memories are never one (the word rule decides above it)
CLAIM_MINUTES = 10  # a consolidation claimed by another process is left to it this long
USEFUL_LINK = 0.05  # weakest link counted as a useful connection


def _parse(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    return datetime.fromisoformat(stamp)


def _days(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds() / 86400.0


class Lifecycle(Part):
    def __init__(self, ctx: ServiceContext, *, trust: Trust):
        super().__init__(ctx)
        self.trust = trust

    # --- near-duplicates and supersede -------------------------------------------------

    def similar_live(
        self, content: str, vector: np.ndarray, domain: str, exclude_rowid: int | None
    ) -> list[tuple[str, float]]:
        """Live memories of the same domain by cosine to `vector`, best first, among those that
        share the content's rarest indexed words. Looking only there keeps a write's duplicate
        check a few milliseconds at any store size (a full vector scan costs 80 ms at 100k),
        and texts within 0.95 cosine share most of their rare words."""
        words = query_words(content)
        total, per_word = self.store.word_document_counts(words)
        indexed = sorted(
            (min(n for _, n in toks), i, w)
            for i, (w, toks) in enumerate(per_word.items())
            if toks and all(n for _, n in toks)
        )
        # Common words cost the full-text query most (every match is scored) and tell least:
        # a near-duplicate shares the rare ones. Keep the common ones only if nothing is rare.
        cap = max(DUP_COMMON_FLOOR, total // 100)
        rare = [w for n, _, w in indexed if n <= cap]
        rarest = (rare or [w for _, _, w in indexed[:3]])[:DUP_WORDS]
        if not rarest:
            return []
        rowids = self.store.near_duplicate_candidates(
            rarest, DUP_CANDIDATES, domain=domain, exclude_rowid=exclude_rowid
        )
        cos = self.store.cosines(vector, rowids, few=True)
        ids = self.store.by_rowids(cos)
        hits = [(ids[r]["id"], c) for r, c in cos.items() if r in ids]
        return sorted(hits, key=lambda h: (-h[1], h[0]))

    def supersede(self, old_ids: list[str], new_id: str, stamp: str) -> None:
        for mid in old_ids:
            self.store.update(
                mid,
                archived=True,
                superseded_by=new_id,
                archived_at=stamp,
                archive_reason=f"superseded by {new_id[:12]}",
            )

    # --- archive and restore -----------------------------------------------------------

    def archive(self, memory_id: str, *, reason: str | None = None, now: datetime | None = None) -> LifecycleResult:
        ref = validate.memory_ref(memory_id)
        why = "archived by request"
        if reason is not None:
            why = validate.text(reason, "reason", 500, allow_empty=True).strip() or why
        stamp = iso(now or self.clock())
        with self.store.db.write():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            changed = not row["archived"]
            if changed:
                self.store.update(mid, archived=True, archived_at=stamp, archive_reason=why)
        return LifecycleResult(
            id=mid, archived=True, tier=row["tier"], content_preview=preview(row["content"]), changed=changed
        )

    def restore(self, memory_id: str, *, now: datetime | None = None) -> LifecycleResult:
        """Bring an archived memory back into reads, with everything it learned. Its retention
        clock restarts (restoring is a use), and a supersede link is cleared: the user chose it."""
        ref = validate.memory_ref(memory_id)
        stamp = iso(now or self.clock())
        with self.store.db.write():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            changed = row["archived"]
            if changed:
                meta = row["metadata"]
                meta["restored_at"] = stamp
                self.store.update(
                    mid,
                    archived=False,
                    superseded_by=None,
                    archived_at=None,
                    archive_reason=None,
                    metadata=meta,
                    updated_at=stamp,
                )
        return LifecycleResult(
            id=mid, archived=False, tier=row["tier"], content_preview=preview(row["content"]), changed=changed
        )

    # --- consolidation -------------------------------------------------------------------

    def consolidation_due(self, *, now: datetime | None = None) -> str | None:
        """Why an automatic consolidation should run now ('interval' or 'writes'), or None."""
        s = self.settings
        if not s.auto_consolidate:
            return None
        as_of = now or self.clock()
        with self.store.db.read():
            last = self.store.last_consolidation()
            watermark = int(self.store.get_meta("consolidated_rowid") or 0)
            top = self.store.max_rowid()
        if top == 0:
            return None
        if (
            last is None
            or _days(as_of, _parse(last["finished_at"] or last["as_of"])) * 24 >= s.consolidate_interval_hours
        ):
            return "interval"
        if s.consolidate_every_writes and top - watermark >= s.consolidate_every_writes:
            return "writes"
        return None

    def maybe_consolidate(self, *, now: datetime | None = None) -> ConsolidationReport | None:
        """Run consolidation if it is due and no other process is running it (safe to call from
        every server and often: the claim is taken in a write transaction)."""
        trigger = self.consolidation_due(now=now)
        if trigger is None:
            return None
        wall = iso(self.clock())
        with self.store.db.write():
            claim = _parse(self.store.get_meta("consolidation_claim"))
            if claim is not None and _days(self.clock(), claim) * 1440 < CLAIM_MINUTES:
                return None
            self.store.set_meta("consolidation_claim", wall)
        try:
            return self.consolidate(now=now, trigger=trigger)
        finally:
            with self.store.db.write():
                self.store.set_meta("consolidation_claim", "")

    def consolidate(
        self, *, dry_run: bool = False, now: datetime | None = None, trigger: str = "manual"
    ) -> ConsolidationReport:
        """One pass over the store as of `now`: refresh the consolidation part of quality, move
        tiers, archive what outlived its retention window, merge near-duplicates, decay links.
        With dry_run nothing is written and the report is the same."""
        dry_run = validate.flag(dry_run, "dry_run")
        as_of = now or self.clock()
        stamp = iso(as_of)
        started = iso(self.clock())
        report: dict[str, list[LifecycleChange]] = {"archived": [], "promoted": [], "demoted": [], "merged": []}
        counts = dict.fromkeys(
            (
                "archived",
                "promoted",
                "demoted",
                "merged",
                "quality_updated",
                "recovered",
                "links_decayed",
                "links_pruned",
            ),
            0,
        )

        def note(kind: str, change: LifecycleChange | None = None) -> None:
            counts[kind] += 1
            if change is not None and len(report[kind]) < REPORT_LIMIT:
                report[kind].append(change)

        txn = self.store.db.read if dry_run else self.store.db.write
        if not dry_run:
            # Memories stored before provenance and quarantine existed are judged, a page at a time.
            while self.trust.assess_unchecked(now=as_of):
                pass
        with self.store.db.read():
            useful = self.store.useful_concepts(USEFUL_LINK)
            top = self.store.max_rowid()
        examined = 0
        last = 0
        while True:
            with txn():
                page = self.store.memories_after(last, PAGE)
                if not page:
                    break
                last = page[-1]["rowid"]
                live = [r for r in page if not r["archived"]]
                positives = self.store.positive_outcomes([r["id"] for r in live])
                for row in live:
                    examined += 1
                    self._consolidate_one(row, as_of, stamp, useful, positives.get(row["id"], 0), dry_run, note)
        merged = self._merge_pass(as_of, stamp, dry_run, note)
        with txn():
            decayed, pruned = self._decay_links(stamp, apply=not dry_run)
        counts["links_decayed"], counts["links_pruned"] = decayed, pruned
        result = ConsolidationReport(
            as_of=stamp,
            dry_run=dry_run,
            examined=examined,
            counts=counts,
            truncated=any(counts[k] > len(v) for k, v in report.items()),
            **report,
        )
        if not dry_run:
            with self.store.db.write():
                self.store.set_meta("consolidated_rowid", str(max(top, merged)))
                self.store.record_consolidation(
                    stamp, started, iso(self.clock()), trigger, {"counts": counts, "examined": examined}
                )
        return result

    def _consolidate_one(
        self,
        row: dict[str, Any],
        as_of: datetime,
        stamp: str,
        useful: dict[str, float],
        positive_events: int,
        dry_run: bool,
        note,
    ) -> None:
        s = self.settings
        last_use = max(
            d for d in (_parse(row["created_at"]), _parse(row["last_accessed_at"]), _parse(row["updated_at"])) if d
        )
        idle = _days(as_of, last_use)
        meta = row["metadata"]
        old_quality = row["quality"]
        connection = lifecycle.connection_strength(row["concepts"], useful)
        score = lifecycle.consolidation_score(idle, row["access_count"], connection, s.recency_half_life_days)
        meta.setdefault("quality_components", {})["consolidation_score"] = round(score, 6)
        quality = self._refresh_quality(row)
        # The window is chosen by the quality the memory had when last used: quality's recency
        # part already falls with idle time, and counting idleness twice would shrink the window
        # the longer a memory waits (a memory read once would go at ~100 days, not 180).
        kept_quality = self._quality_with_consolidation(
            row, lifecycle.consolidation_score(0.0, row["access_count"], connection, s.recency_half_life_days)
        )
        fields: dict[str, Any] = {}
        if abs(quality - old_quality) > 1e-6:
            fields.update(quality=quality, metadata=meta)
            note("quality_updated")
        recovered = self._recovered(row, as_of)
        if recovered is not None:
            fields["valence"] = recovered
            note("recovered")
        thumbs_up = sum(1 for h in meta.get("rating_history", []) if h.get("rating") == 1)
        tier, why = lifecycle.next_tier(
            row["tier"],
            lifecycle.standing(quality, row["valence"]),
            row["access_count"],
            positive_events + thumbs_up,
            s.tier_policy(),
        )
        short = preview(row["content"], 60)
        if why is not None:
            up = lifecycle.tier_rank(tier) > lifecycle.tier_rank(row["tier"])
            note(
                "promoted" if up else "demoted",
                LifecycleChange(id=row["id"], preview=short, reason=f"{row['tier']} -> {tier}: {why}", tier=tier),
            )
            fields["tier"] = tier
        # A pattern demoted in this run is not archived in the same run: it was a pattern when
        # the run began, and patterns are never archived automatically.
        if lifecycle.PATTERN not in (row["tier"], tier):
            automatic = lifecycle.is_automatic(row["source"])
            window = lifecycle.retention_days(kept_quality, s.retention_policy(), automatic=automatic)
            if idle > window:
                reason = f"unused for {idle:.0f} days; window {window:.0f} days at quality {kept_quality:.2f}" + (
                    " (captured automatically)" if automatic else ""
                )
                note("archived", LifecycleChange(id=row["id"], preview=short, reason=reason, tier=tier))
                fields.update(archived=True, archived_at=stamp, archive_reason=reason)
        if not dry_run and fields:
            self.store.update(row["id"], **fields)

    def _recovered(self, row: dict[str, Any], as_of: datetime) -> float | None:
        """The valence a memory that misled has recovered to since its last outcome, when that
        moves it (core.lifecycle.recovered_valence); None otherwise."""
        meta = row["metadata"]
        at = _parse(meta.get("outcome_at"))
        if at is None or "valence_at_outcome" not in meta:
            return None
        value = lifecycle.recovered_valence(
            float(meta["valence_at_outcome"]), _days(as_of, at), self.settings.recovery_half_life_days
        )
        return value if value is not None and value > row["valence"] + 1e-6 else None

    def _decay_links(self, stamp: str, *, apply: bool) -> tuple[int, int]:
        """Unused concept links lose weight by elapsed time; the weak ones nothing taught go
        (core.lifecycle.decay_link). -> (decayed, pruned)"""
        s = self.settings
        weights, dropped = [], []
        for a, b, weight, valence, days in self.store.links_unused_since_decay(stamp):
            decayed = lifecycle.decay_link(weight, valence, days, s.link_half_life_days, s.link_prune_below)
            if decayed is None:
                dropped.append((a, b))
            else:
                weights.append((a, b, decayed))
        if apply:
            self.store.apply_link_decay(stamp, weights, dropped)
        return len(weights), len(dropped)

    def _merge_pass(self, as_of: datetime, stamp: str, dry_run: bool, note) -> int:
        """Merge near-duplicate pairs written before the write-time check existed (or by imports,
        or by writers racing each other). Walks forward from where the last run stopped, at most
        `merge_scan_per_run` memories per run. -> the highest rowid scanned."""
        s = self.settings
        with self.store.db.read():
            start = int(self.store.get_meta("merge_scan_rowid") or 0)
        budget = s.merge_scan_per_run
        if budget <= 0:
            return start
        gone: set[str] = set()
        last = start
        txn = self.store.db.read if dry_run else self.store.db.write
        while budget > 0:
            with txn():
                page = self.store.memories_after(last, min(PAGE, budget))
                if not page:
                    break
                for row in page:
                    last = row["rowid"]
                    budget -= 1
                    if row["archived"] or row["id"] in gone or row["metadata"].get("duplicate_allowed"):
                        continue
                    vector = self.store.vector_of(row["rowid"])
                    if vector is None:
                        continue
                    for other_id, sim in self.similar_live(row["content"], vector, row["domain"], row["rowid"]):
                        if sim < MERGE_FLOOR:
                            break
                        if other_id in gone:
                            continue
                        other = self.store.get(other_id)
                        if other is None or other["metadata"].get("duplicate_allowed"):
                            continue
                        # One memory said twice merges; an update (a fact changed) never does.
                        verdict = self._dedup_verdict(row["content"], other["content"], sim)
                        if verdict.kind != dedup.DUPLICATE:
                            continue
                        keeper, loser = self._merge_roles(row, other)
                        note(
                            "merged",
                            LifecycleChange(
                                id=loser["id"],
                                preview=preview(loser["content"], 60),
                                reason=f"near-duplicate (similarity {sim:.3f})",
                                into=keeper["id"],
                            ),
                        )
                        gone.add(loser["id"])
                        if not dry_run:
                            self._merge(keeper, loser, sim, stamp)
                        if loser["id"] == row["id"]:
                            break
                        row = keeper
            if not dry_run:
                with self.store.db.write():
                    self.store.set_meta("merge_scan_rowid", str(last))
        return last

    @staticmethod
    def _merge_roles(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        def key(r: dict[str, Any]) -> tuple:
            explicit = r["feedback_count"] + int(r["metadata"].get("rating_count", 0))
            return lifecycle.merge_order_key(r["valence"], explicit, r["quality"], r["created_at"]) + (r["id"],)

        return (a, b) if key(a) <= key(b) else (b, a)

    def _merge(self, keeper: dict[str, Any], loser: dict[str, Any], sim: float, stamp: str) -> None:
        """The survivor keeps its own valence history (the better one) and gains the other's tags,
        ratings, usage and taught links; the other is archived, pointing at the survivor."""
        kmeta, lmeta = keeper["metadata"], loser["metadata"]
        tags = (keeper["tags"] + [t for t in loser["tags"] if t not in keeper["tags"]])[: self.settings.max_tags]
        kmeta["rating_sum"] = float(kmeta.get("rating_sum", 0.0)) + float(lmeta.get("rating_sum", 0.0))
        kmeta["rating_count"] = int(kmeta.get("rating_count", 0)) + int(lmeta.get("rating_count", 0))
        history = sorted(
            kmeta.get("rating_history", []) + lmeta.get("rating_history", []), key=lambda h: h.get("at", "")
        )
        if history:
            kmeta["rating_history"] = history[-rules.RATING_HISTORY_LIMIT :]
        kmeta["merged_from"] = (kmeta.get("merged_from", []) + [loser["id"]])[-lifecycle.MERGED_FROM_LIMIT :]
        for key in ("access_count", "retrieval_count", "reciprocal_rank_sum"):
            keeper[key] += loser[key]
        quality = self._refresh_quality(keeper)
        self.store.update(
            keeper["id"],
            tags=tags,
            metadata=kmeta,
            quality=quality,
            access_count=keeper["access_count"],
            retrieval_count=keeper["retrieval_count"],
            reciprocal_rank_sum=keeper["reciprocal_rank_sum"],
        )
        keeper["tags"] = tags
        self.store.move_cues(loser["id"], keeper["id"])
        self.store.update(
            loser["id"],
            archived=True,
            superseded_by=keeper["id"],
            archived_at=stamp,
            archive_reason=f"merged into {keeper['id'][:12]} (near-duplicate, similarity {sim:.3f})",
        )
