"""Response alignment: the rules, and feedback that credits the memories the answer used."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo_mcp.core import alignment as al
from mnemo_mcp.errors import InvalidInput

RULE = al.AlignmentRule()
unit = st.floats(0.0, 1.0)


@given(unit, unit)
def test_link_step_keeps_weights_within_the_edge_bounds(weight, aligned):
    new, step = al.link_step(weight, aligned, RULE)
    assert RULE.edge_min <= new <= RULE.edge_max or (step == 0 and new == weight)


@given(unit)
def test_nothing_moves_between_the_weaken_and_strengthen_thresholds(weight):
    for aligned in (RULE.align_weaken, 0.3, 0.4, RULE.align_strengthen):
        assert al.link_step(weight, aligned, RULE) == (weight, 0)


def test_strengthening_is_proportional_to_alignment_and_weakening_is_a_fixed_step():
    assert al.link_step(0.5, 0.9, RULE) == (pytest.approx(0.5 + 0.1 * 0.9), 1)
    assert al.link_step(0.5, 0.1, RULE) == (pytest.approx(0.45), -1)
    assert al.link_step(0.02, 0.0, RULE) == (RULE.edge_min, -1)
    assert al.link_step(0.98, 1.0, RULE) == (RULE.edge_max, 1)


@given(unit, unit)
def test_credit_is_the_alignment_with_a_floor(aligned, floor):
    w = al.credit_weight(aligned, floor)
    assert max(aligned, floor) == pytest.approx(w) and 0.0 <= w <= 1.0


def test_the_best_matching_sentence_decides_lexical_alignment():
    idf = {"backoff": 2.0, "webhook": 2.0, "retry": 1.0, "tailwind": 3.0}
    memory = {"backoff", "webhook", "retry"}
    sentences = [{"tailwind"}, {"webhook", "retry", "backoff", "use"}]
    assert al.lexical_alignment(memory, sentences, idf) == 1.0
    assert al.lexical_alignment(memory, [{"tailwind"}], idf) == 0.0
    assert al.sentences("First one. Second one!\ncode_line()") == ["First one.", "Second one!", "code_line()"]


def test_tension_pairs_are_supersedes_or_same_subject():
    pairs = al.tension_pairs(["a", "b", "c"], {("a", "b"): 0.9, ("a", "c"): 0.2}, {("c", "b")}, 0.85)
    assert {(a, b) for a, b, _ in pairs} == {("a", "b"), ("b", "c")}


# --- through the service, with the real model ---------------------------------------------------

BACKOFF = "Webhook retries use exponential backoff starting at two seconds."
TAILWIND = "The frontend is styled with tailwind utility classes."
ANSWER = (
    "I changed the client so webhook retries use exponential backoff, starting at two seconds. Then I ran the tests."
)


def test_an_outcome_with_the_response_credits_the_memory_the_answer_followed(service):
    a, b = service.write(BACKOFF).id, service.write(TAILWIND).id
    r = service.feedback([a, b], outcome=1.0, query_concepts=["webhook", "retry"], response=ANSWER)
    assert r.alignment[a] > 0.6 > 0.2 > r.alignment[b]
    assert r.credit[a] == pytest.approx(r.alignment[a], abs=1e-3) and r.credit[b] == service.settings.align_min_credit
    va, vb = service.quality(a).valence, service.quality(b).valence
    assert va > vb > 0 and va == pytest.approx(0.3 * r.credit[a], abs=1e-3)
    assert r.associations_strengthened > 0 and r.associations_weakened > 0


def test_a_response_alone_moves_links_but_never_valence(service):
    a = service.write(BACKOFF).id
    r = service.feedback([a], outcome=None, query_concepts=["webhook"], response=ANSWER)
    assert r.updated == [] and service.quality(a).valence == 0 and service.quality(a).feedback_count == 0
    assert r.associations_strengthened > 0


def test_tension_between_recalled_memories_names_the_side_the_answer_took(service):
    old = service.write("The API rate limit is 100 requests per minute per token.").id
    new = service.write("The API rate limit is 120 requests per minute per token.", allow_duplicate=True).id
    r = service.feedback(
        [old, new],
        outcome=1.0,
        query_concepts=["rate", "limit"],
        response="Per the docs the rate limit is 120 requests per minute per token.",
    )
    assert [(t.followed, t.weakened) for t in r.tension] == [(new, old)]
    assert r.credit[old] == service.settings.align_min_credit and r.credit[new] > r.credit[old]


def test_feedback_needs_an_outcome_or_a_response_and_changes_nothing_otherwise(service):
    a = service.write(BACKOFF).id
    with pytest.raises(InvalidInput, match="outcome"):
        service.feedback([a], outcome=None)
    with pytest.raises(InvalidInput, match="response"):
        service.feedback([a], outcome=1.0, response="")
    assert service.stats().feedback_events == 0 and service.stats().associations == service.stats().associations


def test_alignment_credit_can_be_switched_off(settings, real_embedder):
    from mnemo_mcp.service import MemoryService

    svc = MemoryService(settings.model_copy(update={"align_credit": False}), real_embedder)
    try:
        a, b = svc.write(BACKOFF).id, svc.write(TAILWIND).id
        r = svc.feedback([a, b], outcome=1.0, response=ANSWER)
        assert r.credit is None and svc.quality(a).valence == svc.quality(b).valence == pytest.approx(0.3)
    finally:
        svc.close()


def test_precomputed_alignments_credit_each_memory_by_its_share(hash_service):
    a, b = hash_service.write(BACKOFF).id, hash_service.write(TAILWIND).id
    r = hash_service.feedback_aligned([a, b], alignments={a: 0.9, b: 0.0}, outcome=1.0, source="test")
    floor = hash_service.settings.align_min_credit
    assert r.credit == {a: 0.9, b: floor}
    assert hash_service.quality(a).valence == pytest.approx(0.3 * 0.9, abs=1e-6)
    assert hash_service.quality(b).valence == pytest.approx(0.3 * floor, abs=1e-6)


def test_precomputed_feedback_without_alignments_is_refused_and_changes_nothing(hash_service):
    a = hash_service.write(BACKOFF).id
    with pytest.raises(InvalidInput, match="alignments"):
        hash_service.feedback_aligned([a], alignments={}, outcome=1.0, source="test")
    assert hash_service.stats().feedback_events == 0
