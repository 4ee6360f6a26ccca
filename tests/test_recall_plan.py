"""What the prompt hook shows (core.recall): in full, as a pointer, or nothing; what worked
before leads over what merely shares more of the prompt's words."""

from __future__ import annotations

from mnemo_mcp.core.recall import Candidate, RecallPolicy, plan

POLICY = RecallPolicy(full_floor=0.7, lead_floor=0.6, worked_floor=0.35, pointer_floor=0.3)


def test_a_memory_that_worked_leads_over_an_untried_one_worded_more_like_the_prompt():
    untried = Candidate(relevance=0.49, score=0.49)
    proven = Candidate(relevance=0.34, score=0.36, worked=True)
    full, pointers = plan([untried, proven], POLICY)
    assert full == [1]  # the fix that worked, whole
    assert pointers == [0]  # the untried advice stays reachable, after it


def test_what_worked_does_not_lead_when_it_is_far_from_the_best_candidate():
    untried = Candidate(relevance=0.9, score=0.9)
    proven = Candidate(relevance=0.35, score=0.36, worked=True)
    full, pointers = plan([untried, proven], POLICY)
    assert full == [0] and 1 not in pointers


def test_what_failed_is_never_first_and_comes_after_what_did_not():
    failed = Candidate(relevance=0.8, score=0.8, failed=True)
    other = Candidate(relevance=0.7, score=0.7)
    full, pointers = plan([failed, other], POLICY)
    assert full == [1] and pointers == [0]


def test_without_outcomes_the_reads_order_decides():
    a, b = Candidate(relevance=0.72, score=0.72), Candidate(relevance=0.65, score=0.65)
    assert plan([a, b], POLICY) == ([0], [1])


def test_what_worked_leads_when_the_hook_decides_by_confidence_too():
    policy = RecallPolicy(
        full_floor=0.7,
        lead_floor=0.6,
        worked_floor=0.35,
        pointer_floor=0.3,
        full_confidence=0.3,
        best_confidence=0.22,
        pointer_confidence=0.3,
    )
    untried = Candidate(relevance=0.5, score=0.5, semantic=0.6, lexical=0.5)
    proven = Candidate(relevance=0.4, score=0.42, semantic=0.58, lexical=0.48, worked=True)
    assert plan([untried, proven], policy)[0] == [1]
    untried_too = Candidate(relevance=0.4, score=0.42, semantic=0.58, lexical=0.48)
    assert plan([untried, untried_too], policy) == ([], [0])  # without an outcome: the read's lead, a pointer


def test_by_confidence_what_worked_is_a_pointer_first_when_only_plausible_and_nothing_when_not():
    policy = RecallPolicy(
        worked_floor=0.35, pointer_floor=0.3, full_confidence=0.3, best_confidence=0.22, pointer_confidence=0.3
    )
    other = Candidate(relevance=0.5, score=0.5, semantic=0.6, lexical=0.5)
    # plausible only (little confidence, a relevance under the floor for what worked): first, but as
    # a twenty-token pointer that says it worked, never in full; the untried advice a pointer after it
    case = Candidate(relevance=0.32, score=0.42, semantic=0.45, lexical=0.2, worked=True)
    assert plan([other, case], policy) == ([], [1, 0])
    # not plausible (under the pointer floor, or far from the best candidate): nothing of it
    weak = Candidate(relevance=0.2, score=0.28, semantic=0.3, lexical=0.1, worked=True)
    assert 1 not in plan([other, weak], policy)[1]
    far = Candidate(relevance=0.32, score=0.33, semantic=0.45, lexical=0.2, worked=True)
    strong = Candidate(relevance=0.9, score=0.9, semantic=0.9, lexical=0.8)
    assert plan([strong, far], policy) == ([0], [])
    # as relevant as what worked needs to be, it leads in full even with little confidence
    relevant = Candidate(relevance=0.4, score=0.42, semantic=0.45, lexical=0.2, worked=True)
    assert plan([other, relevant], policy)[0] == [1]
