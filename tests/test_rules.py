"""The pure ranking and learning rules (mnemo_mcp.core.rules): examples and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mnemo_mcp.config import Settings
from mnemo_mcp.core import rules

EPS = 1e-12

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
signed = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
rate_open = st.floats(min_value=0.01, max_value=0.99, allow_nan=False)
counts = st.integers(min_value=0, max_value=10_000)
positive_weight = st.floats(min_value=1e-3, max_value=10.0, allow_nan=False)

# The defaults the ranking guarantees are stated for (see the brief of the rules module).
DEFAULT_GLOBAL_WEIGHT = 0.1
DEFAULT_CONTEXT_WEIGHT = 1.0
DEFAULT_CONTEXT_GATE = 0.3


# --- delta rule ------------------------------------------------------------------------------


@given(value=signed, outcome=signed, rate=unit)
def test_delta_rule_stays_within_minus_one_and_one(value, outcome, rate):
    assert -1.0 <= rules.delta_rule(value, outcome, rate) <= 1.0


@given(value=signed, outcome=signed, rate=st.floats(min_value=1.0, max_value=3.0))
def test_delta_rule_clamps_an_overshooting_rate_to_minus_one_and_one(value, outcome, rate):
    assert -1.0 <= rules.delta_rule(value, outcome, rate) <= 1.0


@given(value=signed, outcome=signed, rate=rate_open)
def test_delta_rule_moves_toward_the_outcome_without_overshooting(value, outcome, rate):
    assume(abs(outcome - value) > 1e-6)
    new = rules.delta_rule(value, outcome, rate)
    assert abs(new - outcome) < abs(value - outcome)
    # Same direction as the outcome, and not past it.
    assert (new - value) * (outcome - value) > 0
    assert min(value, outcome) <= new <= max(value, outcome)


def test_delta_rule_example_moves_rate_fraction_of_the_gap():
    assert rules.delta_rule(0.0, 1.0, 0.3) == pytest.approx(0.3)
    assert rules.delta_rule(0.5, -1.0, 0.2) == pytest.approx(0.2)


@given(value=signed, outcome=signed, rate=rate_open)
def test_second_identical_feedback_moves_valence_less_than_first(value, outcome, rate):
    assume(abs(outcome - value) > 1e-3)
    first = rules.delta_rule(value, outcome, rate)
    second = rules.delta_rule(first, outcome, rate)
    assert abs(second - first) < abs(first - value)


@given(value=signed, outcome=signed, rate=st.floats(min_value=0.05, max_value=1.0))
def test_repeated_identical_feedback_converges_to_the_outcome(value, outcome, rate):
    v = value
    gaps = [abs(v - outcome)]
    for _ in range(300):
        v = rules.delta_rule(v, outcome, rate)
        gaps.append(abs(v - outcome))
    assert all(b <= a + EPS for a, b in zip(gaps, gaps[1:]))
    assert v == pytest.approx(outcome, abs=1e-4)


def test_zero_rate_leaves_the_value_unchanged():
    assert rules.delta_rule(0.4, -1.0, 0.0) == 0.4


# --- Hebbian strengthening ---------------------------------------------------------------------


@given(weight=unit, rate=unit)
def test_strengthen_stays_within_zero_and_one(weight, rate):
    assert 0.0 <= rules.strengthen(weight, rate) <= 1.0


@given(a=unit, b=unit, rate=unit)
def test_strengthen_is_monotone_in_the_weight(a, b, rate):
    lo, hi = min(a, b), max(a, b)
    assert rules.strengthen(lo, rate) <= rules.strengthen(hi, rate) + EPS


@given(weight=unit, r1=unit, r2=unit)
def test_strengthen_with_a_larger_rate_never_gives_a_smaller_weight(weight, r1, r2):
    lo, hi = min(r1, r2), max(r1, r2)
    assert rules.strengthen(weight, lo) <= rules.strengthen(weight, hi) + EPS


@given(weight=st.floats(min_value=0.0, max_value=0.99), rate=rate_open)
def test_strengthen_never_weakens_and_takes_diminishing_steps(weight, rate):
    once = rules.strengthen(weight, rate)
    twice = rules.strengthen(once, rate)
    assert once > weight
    assert twice - once < once - weight


def test_repeated_strengthening_approaches_one_without_exceeding_it():
    w = 0.0
    for _ in range(200):
        w = rules.strengthen(w, 0.2)
        assert w <= 1.0
    assert w == pytest.approx(1.0, abs=1e-6)


# --- relevance -------------------------------------------------------------------------------


@st.composite
def floor_and_ceil(draw):
    floor = draw(st.floats(min_value=-1.0, max_value=0.95))
    ceil = draw(st.floats(min_value=floor + 0.01, max_value=1.0))
    return floor, ceil


@given(cosine=signed, fc=floor_and_ceil())
def test_semantic_score_is_within_zero_and_one(cosine, fc):
    assert 0.0 <= rules.semantic_score(cosine, *fc) <= 1.0


@given(a=signed, b=signed, fc=floor_and_ceil())
def test_semantic_score_is_monotone_in_cosine(a, b, fc):
    lo, hi = min(a, b), max(a, b)
    assert rules.semantic_score(lo, *fc) <= rules.semantic_score(hi, *fc)


def test_semantic_score_maps_floor_to_zero_and_ceil_to_one():
    assert rules.semantic_score(0.1, 0.1, 0.8) == 0.0
    assert rules.semantic_score(0.8, 0.1, 0.8) == 1.0
    assert rules.semantic_score(0.45, 0.1, 0.8) == pytest.approx(0.5)
    assert rules.semantic_score(-0.5, 0.1, 0.8) == 0.0
    assert rules.semantic_score(0.99, 0.1, 0.8) == 1.0


def test_semantic_score_of_missing_or_nan_cosine_is_zero():
    assert rules.semantic_score(None, 0.1, 0.8) == 0.0
    assert rules.semantic_score(math.nan, 0.1, 0.8) == 0.0


@given(bm25=st.floats(min_value=0.0, max_value=100.0), idf=st.floats(min_value=1e-6, max_value=100.0))
def test_lexical_score_is_within_zero_and_one(bm25, idf):
    assert 0.0 <= rules.lexical_score(bm25, idf) <= 1.0


@given(
    a=st.floats(min_value=0.0, max_value=100.0),
    b=st.floats(min_value=0.0, max_value=100.0),
    idf=st.floats(min_value=1e-3, max_value=100.0),
)
def test_lexical_score_is_monotone_in_bm25(a, b, idf):
    lo, hi = min(a, b), max(a, b)
    assert rules.lexical_score(lo, idf) <= rules.lexical_score(hi, idf)


@given(
    bm25=st.floats(min_value=0.0, max_value=100.0),
    a=st.floats(min_value=1e-3, max_value=100.0),
    b=st.floats(min_value=1e-3, max_value=100.0),
)
def test_lexical_score_falls_as_the_query_idf_total_grows(bm25, a, b):
    lo, hi = min(a, b), max(a, b)
    assert rules.lexical_score(bm25, hi) <= rules.lexical_score(bm25, lo)


def test_lexical_score_is_bm25_over_idf_total_and_zero_without_a_match():
    assert rules.lexical_score(1.5, 3.0) == pytest.approx(0.5)
    assert rules.lexical_score(None, 3.0) == 0.0
    assert rules.lexical_score(math.nan, 3.0) == 0.0
    assert rules.lexical_score(2.0, 0.0) == 0.0


@given(data=st.data())
def test_fts5_idf_is_positive(data):
    total = data.draw(st.integers(min_value=0, max_value=1_000_000))
    with_term = data.draw(st.integers(min_value=0, max_value=total))
    idf = rules.fts5_idf(total, with_term)
    assert idf > 0
    assert math.isfinite(idf)


def test_fts5_idf_is_larger_for_rarer_terms():
    assert rules.fts5_idf(1000, 1) > rules.fts5_idf(1000, 10) > rules.fts5_idf(1000, 100)


def test_fts5_idf_matches_the_sqlite_formula_for_a_rare_term():
    assert rules.fts5_idf(100, 3) == pytest.approx(math.log((100 - 3 + 0.5) / (3 + 0.5)))


@given(sem=unit, lex=unit, w=unit)
def test_relevance_is_within_zero_and_one(sem, lex, w):
    assert 0.0 <= rules.relevance(sem, lex, w) <= 1.0


@given(a=unit, b=unit, lex=unit, w=unit)
def test_relevance_is_monotone_in_semantic_score(a, b, lex, w):
    lo, hi = min(a, b), max(a, b)
    assert rules.relevance(lo, lex, w) <= rules.relevance(hi, lex, w) + EPS


@given(sem=unit, a=unit, b=unit, w=unit)
def test_relevance_is_monotone_in_lexical_score(sem, a, b, w):
    lo, hi = min(a, b), max(a, b)
    assert rules.relevance(sem, lo, w) <= rules.relevance(sem, hi, w) + EPS


def test_relevance_is_the_weighted_mean_of_semantic_and_lexical():
    assert rules.relevance(1.0, 0.0, 0.7) == pytest.approx(0.7)
    assert rules.relevance(0.2, 0.6, 0.5) == pytest.approx(0.4)


# --- quality ---------------------------------------------------------------------------------


def _new_memory_components():
    return rules.quality_components(
        rating_sum=0.0, rating_count=0, access_count=0, reciprocal_rank_sum=0.0, retrievals=0
    )


def test_quality_components_of_a_new_memory_are_all_neutral():
    comps = _new_memory_components()
    assert set(comps) == {"user_rating", "access_frequency", "retrieval_ranking", "consolidation_score"}
    assert all(v == pytest.approx(0.5) for v in comps.values())


def test_quality_score_of_a_new_memory_is_neutral():
    assert rules.quality_score(_new_memory_components(), rules.QualityWeights()) == pytest.approx(0.5)
    assert rules.NEUTRAL_QUALITY == 0.5


def test_rating_component_rises_with_each_thumbs_up():
    values = [rules.rating_component(float(n), n) for n in range(0, 6)]
    assert values[0] == pytest.approx(0.5)
    assert all(b > a for a, b in zip(values, values[1:]))
    assert all(v <= 1.0 for v in values)


def test_rating_component_falls_with_each_thumbs_down():
    values = [rules.rating_component(-float(n), n) for n in range(0, 6)]
    assert all(b < a for a, b in zip(values, values[1:]))
    assert all(v >= 0.0 for v in values)


def test_a_thumbs_down_after_a_thumbs_up_lowers_the_rating_component():
    up = rules.rating_component(1.0, 1)
    up_then_down = rules.rating_component(0.0, 2)
    assert up_then_down < up


@given(
    rating_sum=st.integers(min_value=-50, max_value=50),
    extra=st.integers(min_value=0, max_value=50),
    access=counts,
    rrs=st.floats(min_value=0.0, max_value=1000.0),
    retrievals=counts,
    consolidation=st.floats(min_value=-2.0, max_value=2.0),
)
def test_quality_components_are_within_zero_and_one(rating_sum, extra, access, rrs, retrievals, consolidation):
    rating_count = abs(rating_sum) + extra
    assume(rrs <= retrievals)  # a reciprocal rank is at most 1 per retrieval
    comps = rules.quality_components(
        rating_sum=float(rating_sum),
        rating_count=rating_count,
        access_count=access,
        reciprocal_rank_sum=rrs,
        retrievals=retrievals,
        consolidation=consolidation,
    )
    assert all(0.0 <= v <= 1.0 for v in comps.values())


def test_access_component_rises_with_use_and_saturates_at_one():
    values = [rules.access_component(n) for n in (0, 1, 4, 16, rules.ACCESS_SATURATION)]
    assert all(b > a for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(1.0)
    assert rules.access_component(10 * rules.ACCESS_SATURATION) == 1.0


@given(
    c=st.tuples(unit, unit, unit, unit),
    w=st.tuples(positive_weight, positive_weight, positive_weight, positive_weight),
)
def test_quality_score_is_a_weighted_mean_within_zero_and_one(c, w):
    comps = dict(zip(("user_rating", "access_frequency", "retrieval_ranking", "consolidation_score"), c))
    q = rules.quality_score(comps, rules.QualityWeights(*w))
    assert 0.0 <= q <= 1.0
    assert min(c) - 1e-9 <= q <= max(c) + 1e-9


def test_quality_score_follows_the_heaviest_weighted_component():
    comps = {"user_rating": 1.0, "access_frequency": 0.0, "retrieval_ranking": 0.0, "consolidation_score": 0.0}
    assert rules.quality_score(comps, rules.QualityWeights(rating=3.0, access=1.0, ranking=0.0, consolidation=0.0)) == (
        pytest.approx(0.75)
    )


# --- learned signals -------------------------------------------------------------------------


def test_evidence_confidence_is_zero_without_explicit_signals():
    assert rules.evidence_confidence(0) == 0.0
    assert rules.evidence_confidence(-3) == 0.0


def test_evidence_confidence_increases_with_each_signal_and_stays_below_one():
    values = [rules.evidence_confidence(n) for n in range(0, 50)]
    assert all(b > a for a, b in zip(values, values[1:]))
    assert values[1] == pytest.approx(0.5)
    assert all(v < 1.0 for v in values)


@given(valence=signed, quality=unit, n=counts)
def test_global_signal_is_within_minus_one_and_one(valence, quality, n):
    assert -1.0 <= rules.global_signal(valence, quality, n) <= 1.0


@given(n=counts)
def test_global_signal_is_zero_for_neutral_valence_and_quality(n):
    assert rules.global_signal(0.0, rules.NEUTRAL_QUALITY, n) == 0.0


@given(valence=signed, quality=unit)
def test_global_signal_ignores_quality_without_explicit_signals(valence, quality):
    assert rules.global_signal(valence, quality, 0) == pytest.approx(0.5 * valence)


@given(a=signed, b=signed, quality=unit, n=counts)
def test_global_signal_is_monotone_in_valence(a, b, quality, n):
    lo, hi = min(a, b), max(a, b)
    assert rules.global_signal(lo, quality, n) <= rules.global_signal(hi, quality, n) + EPS


concept_names = st.sampled_from(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"])


@given(
    links=st.dictionaries(concept_names, signed, max_size=6),
    weights=st.dictionaries(concept_names, st.floats(min_value=0.0, max_value=20.0), max_size=6),
)
def test_context_signal_is_within_minus_one_and_one(links, weights):
    assert -1.0 <= rules.context_signal(links, weights) <= 1.0


def test_context_signal_is_zero_without_links_or_query_concepts():
    assert rules.context_signal({}, {"a": 1.0}) == 0.0
    assert rules.context_signal({"a": 0.8}, {}) == 0.0
    assert rules.context_signal({"a": 0.8}, {"b": 2.0}) == 0.0


def test_context_signal_gives_the_full_taught_value_for_the_same_question():
    assert rules.context_signal({"a": 0.9, "b": 0.9}, {"a": 1.0, "b": 3.0}) == pytest.approx(0.9)


def test_context_signal_barely_moves_for_a_question_sharing_only_a_common_concept():
    # "caroline" is in half the memories (IDF ~0), "painting" is specific to this question.
    taught = {"caroline": 1.0}
    weights = {"caroline": 0.2, "painting": 4.0}
    assert 0 < rules.context_signal(taught, weights) < 0.01
    assert rules.context_signal({"painting": 1.0}, weights) > 0.8


@given(a=st.floats(min_value=0.0, max_value=10.0), b=st.floats(min_value=0.01, max_value=10.0), v=signed)
def test_context_signal_grows_with_the_share_of_the_query_that_was_taught(a, b, v):
    partial = rules.context_signal({"x": v}, {"x": a, "y": b})
    full = rules.context_signal({"x": v, "y": v}, {"x": a, "y": b})
    assert abs(partial) <= abs(full) + EPS


def test_first_link_report_counts_fully_and_later_ones_average():
    v1 = rules.link_update(0.0, 0, 1.0, 0.2)
    v2 = rules.link_update(v1, 1, 1.0, 0.2)
    v3 = rules.link_update(v2, 2, -1.0, 0.2)
    assert v1 == 1.0 and v2 == 1.0
    assert v3 == pytest.approx(1.0 / 3.0)  # mean of +1, +1, -1


@given(value=signed, count=counts, outcome=signed, floor=st.floats(min_value=0.01, max_value=1.0))
def test_link_update_stays_in_range_and_moves_toward_the_outcome(value, count, outcome, floor):
    new = rules.link_update(value, count, outcome, floor)
    assert -1.0 <= new <= 1.0
    assert abs(new - outcome) <= abs(value - outcome) + EPS


def test_link_update_never_steps_less_than_the_floor():
    v = rules.link_update(1.0, 1000, -1.0, 0.2)
    assert v == pytest.approx(1.0 - 0.2 * 2.0)


# --- final score -----------------------------------------------------------------------------


gate_settings = st.tuples(
    st.floats(min_value=0.0, max_value=1.0),  # global_weight
    st.floats(min_value=0.0, max_value=2.0),  # context_weight
    st.floats(min_value=0.01, max_value=1.0),  # context_gate
)


@given(rel=unit, s=gate_settings)
def test_final_score_equals_relevance_when_learned_signals_are_zero(rel, s):
    gw, cw, gate = s
    assert rules.final_score(rel, 0.0, 0.0, global_weight=gw, context_weight=cw, context_gate=gate) == rel


@given(rel=unit, g=signed, c=signed, s=gate_settings)
def test_learned_terms_never_move_the_score_more_than_max_lift(rel, g, c, s):
    gw, cw, gate = s
    score = rules.final_score(rel, g, c, global_weight=gw, context_weight=cw, context_gate=gate)
    bound = rules.max_lift(rel, global_weight=gw, context_weight=cw, context_gate=gate)
    assert abs(score - rel) <= bound + 1e-9


@given(rel=unit, s=gate_settings)
def test_max_lift_is_reached_by_maximal_learned_signals(rel, s):
    gw, cw, gate = s
    score = rules.final_score(rel, 1.0, 1.0, global_weight=gw, context_weight=cw, context_gate=gate)
    bound = rules.max_lift(rel, global_weight=gw, context_weight=cw, context_gate=gate)
    assert score - rel == pytest.approx(bound, abs=1e-9)


@given(a=unit, b=unit, s=gate_settings)
def test_max_lift_does_not_shrink_as_relevance_grows(a, b, s):
    gw, cw, gate = s
    lo, hi = min(a, b), max(a, b)
    kw = dict(global_weight=gw, context_weight=cw, context_gate=gate)
    assert rules.max_lift(lo, **kw) <= rules.max_lift(hi, **kw) + EPS


@given(rel=unit, g=signed, c1=signed, c2=signed, s=gate_settings)
def test_final_score_is_monotone_in_the_context_signal(rel, g, c1, c2, s):
    gw, cw, gate = s
    lo, hi = min(c1, c2), max(c1, c2)
    kw = dict(global_weight=gw, context_weight=cw, context_gate=gate)
    assert rules.final_score(rel, g, lo, **kw) <= rules.final_score(rel, g, hi, **kw) + EPS


def _max_learned_signals():
    """The strongest global and context signals the rules can produce (and the range maximum)."""
    g = max(rules.global_signal(1.0, 1.0, 10**9), 1.0)
    c = max(rules.context_signal({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 2.0}), 1.0)
    assert g == 1.0 and c == 1.0
    return g, c


@given(low=st.floats(min_value=0.0, max_value=0.15), high=st.floats(min_value=0.9, max_value=1.0))
def test_gate_keeps_an_unrelated_memory_with_maximal_learning_below_a_relevant_neutral_one(low, high):
    g, c = _max_learned_signals()
    kw = dict(
        global_weight=DEFAULT_GLOBAL_WEIGHT, context_weight=DEFAULT_CONTEXT_WEIGHT, context_gate=DEFAULT_CONTEXT_GATE
    )
    boosted_unrelated = rules.final_score(low, g, c, **kw)
    neutral_relevant = rules.final_score(high, rules.global_signal(0.0, rules.NEUTRAL_QUALITY, 0), 0.0, **kw)
    assert boosted_unrelated < neutral_relevant


def _configured_gate_kwargs() -> dict:
    """The ranking settings as shipped (field defaults, not the environment)."""
    fields = Settings.model_fields
    kw = {
        "global_weight": fields["global_weight"].default,
        "context_weight": fields["context_weight"].default,
        "context_gate": fields["context_gate"].default,
    }
    if "context_gate_floor" in fields:
        kw["context_gate_floor"] = fields["context_gate_floor"].default
    return kw


@given(low=st.floats(min_value=0.0, max_value=0.15), high=st.floats(min_value=0.9, max_value=1.0))
def test_gate_with_shipped_settings_keeps_an_unrelated_memory_below_a_relevant_neutral_one(low, high):
    g, c = _max_learned_signals()
    kw = _configured_gate_kwargs()
    assert rules.final_score(low, g, c, **kw) < rules.final_score(high, 0.0, 0.0, **kw)


def test_without_the_gate_maximal_learning_would_lift_an_unrelated_memory_past_a_relevant_one():
    # Shows the gate test above is not vacuous: an ungated context term would invert the order.
    ungated = DEFAULT_GLOBAL_WEIGHT * 1.0 + DEFAULT_CONTEXT_WEIGHT * 1.0
    assert 0.15 + ungated > 0.9
    gated = rules.final_score(
        0.15,
        1.0,
        1.0,
        global_weight=DEFAULT_GLOBAL_WEIGHT,
        context_weight=DEFAULT_CONTEXT_WEIGHT,
        context_gate=DEFAULT_CONTEXT_GATE,
    )
    assert gated < 0.15 + ungated


def test_gate_opens_fully_at_the_context_gate_relevance():
    kw = dict(global_weight=0.0, context_weight=1.0, context_gate=0.3)
    assert rules.final_score(0.3, 0.0, 1.0, **kw) == pytest.approx(1.3)
    assert rules.final_score(0.6, 0.0, 1.0, **kw) == pytest.approx(1.6)
    assert rules.final_score(0.15, 0.0, 1.0, **kw) == pytest.approx(0.15 + 0.5)
    assert rules.final_score(0.0, 0.0, 1.0, **kw) == 0.0


# --- relevance gate with a floor ---------------------------------------------------------------


@st.composite
def gate_and_floor(draw):
    gate = draw(st.floats(min_value=0.01, max_value=1.0))
    floor = draw(st.floats(min_value=0.0, max_value=1.0))
    return gate, floor


@given(rel=unit, gf=gate_and_floor())
def test_relevance_gate_is_within_zero_and_one(rel, gf):
    assert 0.0 <= rules.relevance_gate(rel, *gf) <= 1.0


@given(a=unit, b=unit, gf=gate_and_floor())
def test_relevance_gate_is_monotone_in_relevance(a, b, gf):
    lo, hi = min(a, b), max(a, b)
    assert rules.relevance_gate(lo, *gf) <= rules.relevance_gate(hi, *gf)


def test_relevance_gate_is_closed_at_the_floor_and_open_at_the_gate():
    assert rules.relevance_gate(0.05, 0.35, 0.1) == 0.0
    assert rules.relevance_gate(0.1, 0.35, 0.1) == 0.0
    assert rules.relevance_gate(0.225, 0.35, 0.1) == pytest.approx(0.5)
    assert rules.relevance_gate(0.35, 0.35, 0.1) == 1.0
    assert rules.relevance_gate(0.9, 0.35, 0.1) == 1.0


def test_context_signal_cannot_move_a_memory_below_the_gate_floor():
    kw = dict(global_weight=0.1, context_weight=1.0, context_gate=0.35, context_gate_floor=0.1)
    assert rules.final_score(0.08, 0.0, 1.0, **kw) == 0.08
    assert rules.final_score(0.08, 0.0, -1.0, **kw) == 0.08


@given(rel=unit, g=signed, c=signed, s=gate_settings, floor=unit)
def test_learned_terms_never_move_the_score_more_than_max_lift_with_a_gate_floor(rel, g, c, s, floor):
    gw, cw, gate = s
    kw = dict(global_weight=gw, context_weight=cw, context_gate=gate, context_gate_floor=floor)
    assert abs(rules.final_score(rel, g, c, **kw) - rel) <= rules.max_lift(rel, **kw) + 1e-9


def test_candidate_relevance_is_the_same_float_as_its_three_steps() -> None:
    import random

    from mnemo_mcp.core import rules

    rng = random.Random(4)
    values = [None, float("nan"), -0.5, 0.0, 0.1, 0.8, 1.0, 2.5] + [rng.uniform(-1, 3) for _ in range(200)]
    for _ in range(5000):
        cos, bm = rng.choice(values), rng.choice(values)
        idf = rng.choice([0.0, -1.0, 1e-6, 0.7, 3.2, 11.0])
        floor, ceil, weight = rng.choice([(0.1, 0.8, 0.4), (0.0, 1.0, 0.0), (0.2, 0.7, 1.0), (-0.3, 0.9, 0.55)])
        steps = rules.relevance(rules.semantic_score(cos, floor, ceil), rules.lexical_score(bm, idf), weight)
        assert rules.candidate_relevance(cos, bm, idf, floor, ceil, weight) == steps
