"""What the prompt hook shows (core.recall): by confidence when the read gives its semantic and
lexical parts, by relevance floors otherwise."""

from __future__ import annotations

import json

from mnemo_mcp.config import Settings
from mnemo_mcp.core import recall
from mnemo_mcp.core.recall import Candidate, RecallPolicy
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.models import MemoryItem, ReadResult
from mnemo_mcp.service import MemoryService

POLICY = RecallPolicy(full_confidence=0.3, best_confidence=0.22, pointer_confidence=0.3, notes=3)


def cand(sem: float, lex: float, *, lift: float = 0.0, failed: bool = False, worked: bool = False) -> Candidate:
    rel = 0.4 * sem + 0.6 * lex
    return Candidate(relevance=rel, score=rel + lift, semantic=sem, lexical=lex, failed=failed, worked=worked)


def test_a_candidate_that_stands_out_from_its_neighbours_is_more_confident_than_one_among_equals():
    alone = recall.confidences([cand(0.6, 0.5), cand(0.3, 0.1), cand(0.25, 0.1)])
    crowded = recall.confidences([cand(0.6, 0.5), cand(0.58, 0.5), cand(0.57, 0.48)])
    assert alone is not None and crowded is not None
    assert alone[0] > crowded[0]
    assert all(0.0 <= c <= 1.0 for c in alone + crowded)


def test_the_clear_answer_is_shown_in_full_and_its_weak_neighbours_not_at_all():
    full, pointers = recall.plan([cand(0.75, 0.7), cand(0.3, 0.1), cand(0.2, 0.05)], POLICY)
    assert (full, pointers) == ([0], [])


def test_neighbours_that_score_alike_are_not_shown_in_full():
    # Same relevance as a clear answer, but no lead: at most pointers, never a note in full.
    candidates = [cand(0.62, 0.45), cand(0.61, 0.45), cand(0.6, 0.44)]
    full, pointers = recall.plan(candidates, POLICY)
    assert full == []
    by_relevance = recall.plan(candidates, RecallPolicy(full_floor=0.5, lead_floor=0.4, pointer_floor=0.3))
    assert by_relevance[0] == [0]  # the relevance floors alone would have shown one whole


def test_nothing_is_shown_for_weak_candidates():
    assert recall.plan([cand(0.2, 0.05), cand(0.18, 0.0)], POLICY) == ([], [])


def test_what_was_learned_for_a_memory_makes_it_confident():
    weak = [cand(0.4, 0.2), cand(0.38, 0.2)]
    assert recall.plan(weak, POLICY)[0] == []
    taught = [cand(0.4, 0.2, lift=0.3), cand(0.38, 0.2)]
    assert recall.plan(taught, POLICY)[0] == [0]
    blamed = [cand(0.75, 0.7, lift=-0.5), cand(0.3, 0.1)]
    assert recall.plan(blamed, POLICY)[0] == []


def test_a_memory_that_failed_is_never_in_full_and_comes_after_the_others():
    candidates = [cand(0.8, 0.8, failed=True), cand(0.7, 0.7)]
    conf = recall.confidences(candidates)
    assert conf is not None and conf[0] >= POLICY.pointer_confidence
    full, pointers = recall.plan(candidates, POLICY)
    assert 0 not in full and pointers[-1] == 0


def test_a_plausible_memory_that_worked_before_is_shown_in_full():
    plausible = [cand(0.45, 0.3), cand(0.3, 0.2)]
    conf = recall.confidences(plausible)
    assert conf is not None and POLICY.best_confidence <= conf[0] < POLICY.full_confidence
    assert recall.plan(plausible, POLICY) == ([], [0])
    assert recall.plan([cand(0.45, 0.3, worked=True), cand(0.3, 0.2)], POLICY) == ([0], [])


def test_without_the_semantic_part_the_relevance_floors_decide():
    keyword = [Candidate(relevance=0.8, score=0.8), Candidate(relevance=0.1, score=0.1)]
    assert recall.confidences(keyword) is None
    assert recall.plan(keyword, POLICY) == ([0], [])


def test_settings_give_the_confidence_floors_only_with_the_model():
    s = Settings()
    assert s.recall_policy(True).full_confidence == s.inject_full_confidence
    assert s.recall_policy(False).full_confidence is None
    assert Settings(inject_by_confidence=False).recall_policy(True).full_confidence is None


def test_the_parts_of_relevance_are_never_shown_to_the_model():
    item = MemoryItem(
        id="a", content="x", tags=[], memory_type="note", relevance=0.5, valence=0.0, quality=0.5, score=0.5,
        created_at="2026-01-01T00:00:00+00:00", semantic=0.4, lexical=0.6,
    )  # fmt: skip
    assert item.semantic == 0.4 and "semantic" not in item.model_dump_json() and "lexical" not in item.model_dump()
    schema = json.dumps(ReadResult.model_json_schema())
    assert "semantic" not in schema and "lexical" not in schema


def test_a_read_with_the_model_gives_each_item_its_parts_and_a_keyword_read_none(tmp_path):
    svc = MemoryService(Settings(db=tmp_path / "m.db", project="app", auto_consolidate=False), HashEmbedder())
    try:
        svc.write("the staging database listens on port 5433", allow_duplicate=True)
        svc.write("deploys go out on tuesdays after the standup", allow_duplicate=True)
        semantic = svc.read("which port does the staging database use", record=False)
        top = semantic.items[0]
        assert top.semantic is not None and top.lexical is not None and top.lexical > 0
        assert abs(top.relevance - (0.4 * top.semantic + 0.6 * top.lexical)) < 1e-3
        keyword = svc.read("which port does the staging database use", keyword_only=True, record=False)
        assert all(it.semantic is None and it.lexical is None for it in keyword.items)
    finally:
        svc.close()


def test_a_failed_attempt_at_the_same_problem_is_no_rival_for_the_fix():
    fix = cand(0.5, 0.4, worked=True)
    with_failed = recall.confidences([fix, cand(0.5, 0.4, failed=True), cand(0.2, 0.05)])
    with_rival = recall.confidences([fix, cand(0.5, 0.4), cand(0.2, 0.05)])
    assert with_failed is not None and with_rival is not None
    assert with_failed[0] > with_rival[0]


def test_what_worked_before_is_shown_in_full_at_the_relevance_floor_for_what_worked_even_among_look_alikes():
    policy = RecallPolicy(full_confidence=0.3, best_confidence=0.22, pointer_confidence=0.3, worked_floor=0.35, notes=3)
    alike = [cand(0.5, 0.3, worked=True), cand(0.5, 0.3), cand(0.49, 0.3)]
    conf = recall.confidences(alike)
    assert conf is not None and conf[0] < policy.best_confidence
    assert alike[0].strength >= policy.worked_floor
    assert recall.plan(alike, policy)[0] == [0]
    unproven = [cand(0.5, 0.3), cand(0.5, 0.3), cand(0.49, 0.3)]
    assert recall.plan(unproven, policy) == ([], [])
