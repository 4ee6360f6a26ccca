"""The pure lifecycle rules: retention windows, tiers, the consolidation score, link decay."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from mnemo_mcp.core import lifecycle as lc

POLICY = lc.RetentionPolicy()
TIERS = lc.TierPolicy()
unit = st.floats(0.0, 1.0)


def test_retention_window_follows_the_quality_bands():
    assert [lc.retention_days(q, POLICY) for q in (0.0, 0.29, 0.3, 0.49, 0.5, 0.69, 0.7, 1.0)] == [
        30,
        30,
        90,
        90,
        180,
        180,
        365,
        365,
    ]


def test_automatic_captures_get_a_shorter_window_than_deliberate_writes():
    for q in (0.1, 0.4, 0.6, 0.9):
        assert lc.retention_days(q, POLICY, automatic=True) == lc.retention_days(q, POLICY) * POLICY.auto_factor
    assert lc.is_automatic("hook") and lc.is_automatic("transcript")
    assert not lc.is_automatic("write") and not lc.is_automatic("import")


def test_a_fresh_unused_unconnected_memory_scores_neutral():
    assert lc.consolidation_score(0.0, 0, 0.0, 30.0) == 0.5


def test_consolidation_score_falls_with_idle_time_and_rises_with_use_and_connection():
    assert (
        lc.consolidation_score(60, 0, 0, 30)
        < lc.consolidation_score(30, 0, 0, 30)
        < lc.consolidation_score(0, 0, 0, 30)
    )
    assert lc.consolidation_score(30, 8, 0, 30) > lc.consolidation_score(30, 1, 0, 30)
    assert lc.consolidation_score(30, 1, 0.9, 30) > lc.consolidation_score(30, 1, 0.0, 30)
    assert math.isclose(lc.consolidation_score(30, 0, 0, 30), 0.25)  # recency halves per half-life


@given(st.floats(0, 1e5), st.integers(0, 10**6), st.floats(-5, 5), st.floats(0.1, 1000))
def test_consolidation_score_stays_in_unit_interval(days, uses, connection, half_life):
    assert 0.0 <= lc.consolidation_score(days, uses, connection, half_life) <= 1.0


def test_new_memory_standing_is_neutral_and_valence_and_quality_move_it():
    assert lc.standing(0.5, 0.0) == 0.5
    assert lc.standing(0.5, 1.0) > lc.standing(0.5, 0.0) > lc.standing(0.5, -1.0)
    assert lc.standing(0.9, 0.0) > lc.standing(0.5, 0.0)


def test_promotion_needs_standing_and_uses_and_goes_one_tier_per_run():
    assert lc.next_tier("working", 0.9, 1, 9, TIERS)[0] == "working"  # used once only
    tier, why = lc.next_tier("working", 0.9, 9, 9, TIERS)
    assert tier == "history" and "uses" in why  # not straight to pattern
    assert lc.next_tier("history", 0.9, 9, 9, TIERS)[0] == "pattern"
    assert lc.next_tier("history", 0.9, 9, 2, TIERS)[0] == "history"  # too few positive outcomes
    assert lc.next_tier("history", 0.7, 9, 9, TIERS)[0] == "history"  # standing short of pattern


def test_demotion_happens_below_the_keep_threshold_only():
    between = (TIERS.pattern_keep + TIERS.pattern_standing) / 2
    assert lc.next_tier("pattern", between, 0, 0, TIERS) == ("pattern", None)  # no flapping
    assert lc.next_tier("pattern", TIERS.pattern_keep - 0.01, 0, 0, TIERS)[0] == "history"
    between = (TIERS.history_keep + TIERS.history_standing) / 2
    assert lc.next_tier("history", between, 0, 0, TIERS) == ("history", None)
    assert lc.next_tier("history", TIERS.history_keep - 0.01, 0, 0, TIERS)[0] == "working"


@given(unit, unit)
def test_weakening_stays_in_bounds_and_never_grows(weight, rate):
    w = lc.weaken(weight, rate)
    assert 0.0 <= w <= weight


@given(st.floats(0, 1e4), st.floats(0.01, 1e4))
def test_decay_factor_is_a_fraction_and_halves_per_half_life(days, half_life):
    f = lc.decay_factor(days, half_life)
    assert 0.0 <= f <= 1.0
    assert math.isclose(lc.decay_factor(half_life, half_life), 0.5)


@given(unit, st.floats(-1, 1), st.floats(0, 1e4), st.floats(0.01, 1e3), st.floats(0, 0.5))
def test_a_decayed_link_goes_only_when_weak_and_never_taught(weight, valence, days, half_life, floor):
    after = lc.decay_link(weight, valence, days, half_life, floor)
    expected = weight * lc.decay_factor(days, half_life)
    if after is None:
        assert valence == 0 and expected < floor
    else:
        assert math.isclose(after, expected) and (valence != 0 or after >= floor)


def test_the_digest_puts_patterns_first_then_quality_plus_half_the_valence():
    items = [("working", 0.9, 0.0), ("pattern", 0.5, 0.0), ("history", 0.5, 0.0), ("working", 0.5, 0.9)]
    ordered = sorted(items, key=lambda t: lc.digest_order(*t))
    assert ordered == [("pattern", 0.5, 0.0), ("history", 0.5, 0.0), ("working", 0.5, 0.9), ("working", 0.9, 0.0)]


def test_connection_strength_averages_the_leading_concepts():
    useful = {"webhook": 0.8, "retry": 0.4}
    assert lc.connection_strength(["webhook", "retry", "other", "more"], useful) == (0.8 + 0.4) / 4
    assert lc.connection_strength([], useful) == 0.0


def test_merge_survivor_is_the_better_learned_history():
    keys = {
        "older_neutral": lc.merge_order_key(0.0, 0, 0.5, "2026-01-01"),
        "newer_helpful": lc.merge_order_key(0.6, 2, 0.5, "2026-02-01"),
        "newer_neutral": lc.merge_order_key(0.0, 0, 0.5, "2026-02-01"),
    }
    assert min(keys, key=keys.get) == "newer_helpful"
    assert keys["older_neutral"] < keys["newer_neutral"]  # tie: the older one stays
