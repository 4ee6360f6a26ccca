"""Lifecycle rules: retention, tiers, the consolidation score, link decay, merge choice.

Pure functions with every input explicit (ages in days, not clocks), so consolidation can run
"as of" any date and tests can walk a memory through a year in microseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .rules import clamp

WORKING, HISTORY, PATTERN = "working", "history", "pattern"
TIERS = (WORKING, HISTORY, PATTERN)
# Sources that mean a person or the assistant chose to keep this; anything else (a hook's
# automatic capture, say) is unproven and expires faster.
DELIBERATE_SOURCES = frozenset({"write", "import"})

# Ids a merged memory remembers it absorbed (its merged_from), newest last.
MERGED_FROM_LIMIT = 20


@dataclass(frozen=True)
class RetentionPolicy:
    """Days a memory may go unused before it is archived, by quality band."""

    below_0_3: float = 30.0
    below_0_5: float = 90.0
    below_0_7: float = 180.0
    otherwise: float = 365.0
    auto_factor: float = 0.5  # automatically captured memories keep this share of the window


def retention_days(quality: float, policy: RetentionPolicy, *, automatic: bool = False) -> float:
    if quality < 0.3:
        days = policy.below_0_3
    elif quality < 0.5:
        days = policy.below_0_5
    elif quality < 0.7:
        days = policy.below_0_7
    else:
        days = policy.otherwise
    return days * (policy.auto_factor if automatic else 1.0)


def is_automatic(source: str) -> bool:
    return source not in DELIBERATE_SOURCES


def standing(quality: float, valence: float) -> float:
    """One number in [0, 1] for tier decisions: half quality, half valence (0.5 when new)."""
    return clamp(0.5 * quality + 0.25 * (valence + 1.0), 0.0, 1.0)


@dataclass(frozen=True)
class TierPolicy:
    history_standing: float = 0.6
    history_uses: int = 2
    pattern_standing: float = 0.75
    pattern_uses: int = 5
    pattern_positive: int = 3
    # Demotion thresholds sit below the promotion ones, so a memory near a line does not flap.
    history_keep: float = 0.5
    pattern_keep: float = 0.65


def next_tier(
    tier: str, standing_value: float, uses: int, positives: int, policy: TierPolicy
) -> tuple[str, str | None]:
    """The tier after one consolidation, and why it changed (None: unchanged). One step per run:
    a memory earns `pattern` only after it has been `history`, and falls back one step at a time."""
    p = policy
    if tier == PATTERN:
        if standing_value < p.pattern_keep:
            return HISTORY, f"standing {standing_value:.2f} fell below {p.pattern_keep}"
        return PATTERN, None
    if tier == HISTORY:
        if standing_value < p.history_keep:
            return WORKING, f"standing {standing_value:.2f} fell below {p.history_keep}"
        if standing_value >= p.pattern_standing and uses >= p.pattern_uses and positives >= p.pattern_positive:
            return PATTERN, f"standing {standing_value:.2f}, {uses} uses, {positives} positive outcomes"
        return HISTORY, None
    if standing_value >= p.history_standing and uses >= p.history_uses:
        return HISTORY, f"standing {standing_value:.2f}, {uses} uses"
    return WORKING, None


# A session starts with the memories that proved themselves: patterns, then history, then by
# quality plus this share of valence (quality carries ratings and use; valence the outcomes).
DIGEST_VALENCE_WEIGHT = 0.5


def digest_order(tier: str, quality: float, valence: float) -> tuple[int, float]:
    """Sort key (ascending) of the session-start digest; storage orders by the same rule."""
    return (-tier_rank(tier), -(quality + DIGEST_VALENCE_WEIGHT * valence))


def recovered_valence(valence_at_outcome: float, days_since: float, half_life_days: float) -> float | None:
    """Spontaneous recovery (as after extinction in conditioning): a memory that misled, and was
    not tried since, drifts back toward neutral, half of the way in each `half_life_days`, so a
    fix blamed once for a failure it may not have caused is shown again some day; tried again
    and failing, it sinks again. Positive valence does not fade. None: nothing to recover."""
    if valence_at_outcome >= 0 or half_life_days <= 0 or days_since <= 0:
        return None
    return valence_at_outcome * 0.5 ** (days_since / half_life_days)


def worth_a_digest(tier: str, quality: float, valence: float, rating_sum: float = 0.0) -> bool:
    """Shown at the start of a session unasked, as "most useful": a memory that has proven itself
    (a tier above working, a good quality or a helpful record), never one merely new, and never
    one whose learned signal is negative (it misled, or was voted down)."""
    if valence < 0 or rating_sum < 0:
        return False
    return tier != WORKING or quality >= 0.6 or valence >= 0.3


def tier_rank(tier: str) -> int:
    return TIERS.index(tier) if tier in TIERS else 0


# --- the consolidation component of quality --------------------------------------------------

USAGE_SATURATION = 16  # uses at which the usage part is full


def consolidation_score(days_since_use: float, uses: int, connection: float, half_life_days: float) -> float:
    """0.5 * recency + 0.3 * usage + 0.2 * connection, in [0, 1].

    - recency halves every `half_life_days` without use: 1 the day it was used;
    - usage grows on a log scale with the times it was recalled (1 at USAGE_SATURATION);
    - connection: how strongly its concepts are linked to concepts that proved useful in feedback.
    A fresh, unused, unconnected memory scores exactly 0.5, the neutral quality of a new memory.
    """
    recency = 0.5 ** (max(days_since_use, 0.0) / half_life_days) if half_life_days > 0 else 0.0
    usage = min(1.0, math.log1p(max(uses, 0)) / math.log1p(USAGE_SATURATION))
    return clamp(0.5 * recency + 0.3 * usage + 0.2 * clamp(connection, 0.0, 1.0), 0.0, 1.0)


def connection_strength(concepts: list[str], useful: dict[str, float], limit: int = 8) -> float:
    """Mean over a memory's leading concepts of their strongest useful link (0 when none)."""
    head = concepts[:limit]
    if not head:
        return 0.0
    return sum(useful.get(c, 0.0) for c in head) / len(head)


# --- associations ----------------------------------------------------------------------------


def decay_factor(days: float, half_life_days: float) -> float:
    if half_life_days <= 0:
        return 1.0
    return 0.5 ** (max(days, 0.0) / half_life_days)


def decay_link(weight: float, valence: float, days: float, half_life_days: float, prune_below: float) -> float | None:
    """A concept link unused for `days`: its weight after decay, or None when it should go (it
    decayed below `prune_below` and feedback never gave it a valence: nothing learned is lost)."""
    decayed = weight * decay_factor(days, half_life_days)
    if decayed < prune_below and valence == 0:
        return None
    return decayed


def weaken(weight: float, rate: float) -> float:
    """Anti-Hebbian step: lose a share of the weight, never below 0."""
    return clamp(weight * (1.0 - clamp(rate, 0.0, 1.0)), 0.0, 1.0)


# --- merging near-duplicates -----------------------------------------------------------------


def merge_order_key(valence: float, explicit_signals: int, quality: float, created_at: str) -> tuple:
    """Sort key, best first: the survivor of a merge is the one with the better learned history
    (higher valence, then more feedback behind it, then quality), the older one on a tie."""
    return (-valence, -explicit_signals, -quality, created_at)
