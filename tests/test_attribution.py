"""Credit what was acted on: the attribution rules, the session service crediting only what the
assistant's actions followed, and each hook event as one unit of work."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo_mcp.config import Settings
from mnemo_mcp.core import attribution
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService

FIX = "Verify webhook signatures with hmac.compare_digest over the raw request body, not the parsed JSON."
WRONG = "Webhook signature failures mean clock skew: raise the tolerance window to 600 seconds."
NEAR = "Webhook deliveries that keep failing go to the dead letter table after eight attempts."


# --- the rules ---------------------------------------------------------------------------------


def test_code_identifiers_and_prose_share_their_words_and_count_whole_too():
    split = attribution.split_words("return hmac.compare_digest(expected)")
    assert "compare digest" in split and split.endswith(" comparedigest")
    assert attribution.split_words("compareDigest") == "compare Digest comparedigest"


def test_a_sentence_that_sets_a_note_aside_is_no_evidence_for_it():
    answer = (
        "The saved note says to raise the tolerance window, but that is not the cause. I switched to compare_digest."
    )
    kept = attribution.affirmed(answer)
    assert "tolerance" not in kept and "compare_digest" in kept


def test_words_several_shown_memories_hold_say_little_about_which_was_followed():
    idf = {"webhook": 1.0, "signatur": 1.0, "hmac": 3.0, "toler": 3.0}
    memories = {"fix": {"webhook", "signatur", "hmac"}, "wrong": {"webhook", "signatur", "toler"}}
    both = attribution.followed(memories, [{"webhook", "signatur"}], idf)
    assert both["fix"] == both["wrong"] and attribution.credit(both["fix"]) == 0.0
    fix = attribution.followed(memories, [{"webhook", "signatur", "hmac"}], idf)
    assert attribution.credit(fix["fix"]) > 0 and attribution.credit(fix["wrong"]) == 0.0


def test_a_change_that_also_does_much_else_follows_a_note_less():
    idf = {"hmac": 3.0, "digest": 3.0, "retri": 3.0, "backoff": 3.0, "jitter": 3.0}
    memories = {"fix": {"hmac", "digest"}}
    alone = attribution.followed(memories, [{"hmac", "digest"}], idf)["fix"]
    among = attribution.followed(memories, [{"hmac", "digest", "retri", "backoff", "jitter"}], idf)["fix"]
    assert alone > among > 0


def test_the_problems_own_words_are_no_evidence():
    idf = {"webhook": 2.0, "hmac": 3.0}
    got = attribution.followed({"m": {"webhook", "hmac"}}, [{"webhook"}], idf, background={"webhook"})
    assert got["m"] == 0.0


def test_credit_is_nothing_below_the_floor_and_the_whole_outcome_from_full():
    assert attribution.credit(attribution.FOLLOW_FLOOR - 0.01) == 0.0
    assert 0 < attribution.credit(attribution.FOLLOW_FLOOR) < 1.0
    assert attribution.credit(attribution.FULL_CREDIT) == attribution.credit(0.95) == 1.0


def test_a_failure_needs_a_memory_followed_more_closely_than_a_success_does():
    between = (attribution.FOLLOW_FLOOR + attribution.BLAME_FLOOR) / 2
    assert attribution.share(between, outcome=0.5) > 0
    assert attribution.share(between, outcome=-0.5) == 0.0  # resembled, not carried out: no blame
    assert attribution.share(attribution.BLAME_FLOOR, outcome=-0.5) == attribution.credit(attribution.BLAME_FLOOR)


@given(st.floats(0, 1), st.floats(-1, 1))
def test_no_alignment_takes_more_of_a_failure_than_of_a_success(a, outcome):
    assert attribution.share(a, -abs(outcome)) <= attribution.share(a, abs(outcome))


@given(st.floats(0, 1), st.floats(0, 1))
def test_credit_never_decreases_with_alignment(a, b):
    lo, hi = sorted((a, b))
    assert attribution.credit(lo) <= attribution.credit(hi)


def test_a_notes_specific_code_added_verbatim_follows_it_fully_a_lone_name_does_not():
    note = "If go:embed misses the frontend, point it at `//go:embed ../../web/dist` and keep `APP_VERSION`."
    spans = attribution.snippets(note)
    assert spans == ("//go:embed ../../web/dist",)  # a lone identifier names the subject only
    assert attribution.snippets("raise `statement_timeout` or `github.event.pull_request.head`") == ()
    assert attribution.carried_out(spans, "//go:embed ../../web/dist\nvar distFS embed.FS", "//go:embed web/dist")
    assert not attribution.carried_out(spans, "//go:embed dist\nvar Dist embed.FS", "")
    # already there before the action (in the replaced text or the ask): no evidence
    assert not attribution.carried_out(spans, "//go:embed ../../web/dist", "x //go:embed  ../../web/dist")
    idf = {"web": 1.0, "dist": 1.0, "embed": 1.0}
    carried = attribution.followed({"m": {"web", "dist", "embed"}}, [set()], idf, carried=["m"])
    assert attribution.credit(carried["m"]) == 1.0


def test_a_notes_code_written_without_backticks_counts_when_an_action_carries_it_out():
    note = "In a Makefile recipe, change directory with $(shell cd build) so the following commands run inside build/."
    runs = attribution.code_runs(note)
    assert "$(shell cd build" in runs
    assert attribution.carried_out(runs, "$(shell cd build)\ncmake .. -G Ninja", "cd build\ncmake ..")
    assert not attribution.carried_out(runs, "cd build && cmake ..", "")
    # prose alone, or a lone code-like name, is no code to carry out
    assert attribution.code_runs("Run the tests before you push, every time.") == ()
    assert attribution.code_runs("The registry secret is k8s/configmap.yaml for now.") == ()


def test_the_prose_between_two_short_code_spans_is_not_a_span():
    note = "a `cd build` line doesn't affect the next line and an `export CC=clang` line is lost"
    assert attribution.snippets(note) == ("export cc=clang",)


def test_words_explained_by_the_code_one_note_carried_are_no_evidence_for_another():
    idf = {t: 1.0 for t in ("node", "resolution", "specifier", "experimental", "tsconfig", "module")}
    notes = {
        "wrong": {"node", "experimental", "specifier", "resolution"},
        "fix": {"node", "resolution", "specifier", "tsconfig"},
    }
    action = [{"node", "experimental", "specifier", "resolution"}]
    plain = attribution.followed(notes, action, idf, carried=["wrong"])
    explained = attribution.followed(
        notes, action, idf, carried=["wrong"], explained={"node", "experimental", "specifier", "resolution"}
    )
    assert attribution.credit(plain["fix"]) > 0  # shares the words, so without explaining it gets blamed too
    assert explained["fix"] == 0.0 and attribution.credit(explained["wrong"]) == 1.0


def test_an_answer_that_sets_a_recalled_note_aside_vetoes_it_a_plain_negation_does_not():
    answer = (
        "I did not apply the saved tip to raise the tolerance window. The runner wasn't slow: I used compare_digest."
    )
    aside = attribution.set_aside(answer)
    assert "tolerance" in aside and "runner" not in aside and "compare_digest" not in aside
    assert attribution.vetoed({"wrong": 0.0, "fix": 0.4}, {"wrong": 0.3, "fix": 0.2}, 0.15) == {"wrong"}
    assert attribution.vetoed({"wrong": 0.28}, {"wrong": 0.3}, 0.15) == set()  # the answer also follows it


# --- the session service --------------------------------------------------------------------------


def _service(folder: Path) -> MemoryService:
    s = Settings(db=folder / "m.db", project="shop", auto_consolidate=False, auto_backup=False)
    return MemoryService(s, HashEmbedder())


@pytest.fixture
def svc(tmp_path):
    s = _service(tmp_path)
    yield s
    s.close()


def _ids(svc: MemoryService) -> dict[str, str]:
    return {name: svc.write(text).id for name, text in (("fix", FIX), ("wrong", WRONG), ("near", NEAR))}


EDITS = {
    "fix": ("    return expected == signature", "    return hmac.compare_digest(expected, signature)"),
    "wrong": ("TOLERANCE = 300", "TOLERANCE_WINDOW = 600  # seconds of clock skew allowed"),
    "own": ("retries = 3", "retries = 5"),
}


class Story:
    """A session driven through the service's session calls, as the hooks drive it."""

    def __init__(self, svc: MemoryService, sid: str = "s-1"):
        self.svc, self.sid, self.n = svc, sid, 0

    def show(self, ids: list[str]) -> None:
        self.svc.session_recall(self.sid, memory_ids=ids, source="inject")

    def edit(self, follows: str) -> None:
        self.n += 1
        old, new = EDITS[follows]
        action = (f"e{self.n}", "Edit", {"file_path": "shop/webhook.py", "old_string": old, "new_string": new})
        self.svc.session_actions(self.sid, actions=[action])

    def check(self, ok: bool):
        self.n += 1
        return self.svc.session_check(
            self.sid, status="pass" if ok else "fail", command="pytest -q", tool_use_id=f"c{self.n}"
        )

    def prompt(self, text: str):
        return self.svc.session_user_prompt(self.sid, prompt=text)


def valence(svc: MemoryService, mid: str) -> float:
    return svc.quality(mid).valence


def test_a_failing_check_lowers_only_the_memory_the_changes_followed(svc):
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show([ids["fix"], ids["wrong"], ids["near"]])
    s.edit("wrong")
    credit = s.check(ok=False)
    assert credit.memory_ids == [ids["wrong"]]
    assert valence(svc, ids["wrong"]) < 0
    assert valence(svc, ids["fix"]) == valence(svc, ids["near"]) == 0.0
    assert svc.quality(ids["fix"]).feedback_count == 0  # not even an event with no share


def test_a_check_before_any_change_and_a_rerun_with_nothing_changed_credit_nothing(svc):
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show(list(ids.values()))
    assert s.check(ok=False) is None  # the starting point
    s.edit("fix")
    s.check(ok=False)
    blamed = valence(svc, ids["fix"])
    assert blamed < 0
    assert s.check(ok=False) is None and valence(svc, ids["fix"]) == blamed  # the same failure again


def test_a_pass_after_the_changes_credits_what_they_followed_and_the_thanks_too(svc):
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show(list(ids.values()))
    s.check(ok=False)
    s.edit("wrong")
    s.check(ok=False)
    s.edit("fix")
    s.check(ok=True)
    svc.session_response(s.sid, response="Signatures are now compared with hmac.compare_digest, so the check passes.")
    after_pass = valence(svc, ids["fix"])
    s.prompt("thanks, that worked")
    assert valence(svc, ids["fix"]) > after_pass > 0
    assert valence(svc, ids["wrong"]) < 0  # refuted by the failing check, not credited by the thanks
    assert valence(svc, ids["near"]) == 0.0


def _wrong_refuted(svc: MemoryService) -> tuple[dict[str, str], Story, float]:
    """A session that followed the wrong note and failed: its ids, the story, the wrong note's valence."""
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show(list(ids.values()))
    s.edit("wrong")
    s.check(ok=False)
    blamed = valence(svc, ids["wrong"])
    assert blamed < 0
    return ids, s, blamed


def test_what_one_failing_check_refuted_another_failing_check_does_not_blame_again(svc):
    ids, s, blamed = _wrong_refuted(svc)
    other = svc.session_check(s.sid, status="fail", command="mypy shop", tool_use_id="other-check")
    assert other is None and valence(svc, ids["wrong"]) == blamed


@pytest.mark.parametrize(
    "verdict",
    [
        "no, still failing with the same error in production",
        "better, the signature check passes but retries still fail",  # only partly worked
    ],
)
def test_a_pass_after_the_user_said_it_failed_or_only_partly_worked_credits_the_changes_since(svc, verdict):
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show(list(ids.values()))
    s.edit("own")
    s.check(ok=True)  # passes, but the user says it is not done
    s.prompt(verdict)
    s.edit("fix")
    credit = s.check(ok=True)
    assert credit is not None and credit.memory_ids == [ids["fix"]]
    assert valence(svc, ids["fix"]) > 0


def test_output_pasted_back_after_a_change_is_a_failed_reaction_and_before_any_change_none(svc):
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("TypeError: compare_digest() argument 2 must be bytes, not str")  # the problem, not a reaction
    s.show(list(ids.values()))
    assert svc.session_user_prompt(s.sid, prompt="TypeError: expected bytes").credit is None  # nothing changed yet
    s.edit("fix")
    credit = s.prompt("TypeError: compare_digest() argument 2 must be bytes, not str")
    assert credit.credit is not None and credit.credit.signal == "failed"
    assert valence(svc, ids["fix"]) < 0 and valence(svc, ids["wrong"]) == 0.0
    s.edit("wrong")
    assert s.prompt("why does it say TypeError: expected bytes?").credit is None  # a question about it


def test_a_note_that_failed_earlier_in_the_session_is_not_credited_again_for_work_in_its_words(svc):
    ids, s, blamed = _wrong_refuted(svc)
    # the work goes on in the same words (the tolerance window), doing something else
    rework = (
        "e-9",
        "Edit",
        {
            "file_path": "shop/webhook.py",
            "old_string": "x = 1",
            "new_string": "tolerance_window = clock_skew_seconds()",
        },
    )
    svc.session_actions(s.sid, actions=[rework])
    s.check(ok=True)
    assert valence(svc, ids["wrong"]) == blamed
    # carrying out a refuted note's own code verbatim is following it again
    note = svc.write("Replay failures: set `REPLAY_WINDOW = 900  # seconds` in shop/replay.py.").id
    s.show([note])

    def change(n: int, new: str) -> None:
        call = ("e-" + str(n), "Edit", {"file_path": "shop/replay.py", "old_string": "z = 0", "new_string": new})
        svc.session_actions(s.sid, actions=[call])

    change(10, "REPLAY_WINDOW = replay_seconds  # failures replay")
    s.check(ok=False)
    refuted = valence(svc, note)
    assert refuted < 0
    change(11, "REPLAY_WINDOW = 900  # seconds")
    s.check(ok=True)
    assert valence(svc, note) > refuted


def test_doing_what_a_note_forbids_is_not_following_it(svc):
    keep, forbid = attribution.prescribed("Keep the trigger. Never switch to pull_request_target. Don't rely on it.")
    assert keep == "Keep the trigger." and "pull_request_target" in forbid and "rely" in forbid
    note = svc.write(
        "Fork PRs get no secrets: skip the preview job for forks. Never switch the workflow to "
        "pull_request_target with a checkout of the fork's head."
    ).id
    s = Story(svc)
    s.prompt("the preview deploy fails on PRs from forks")
    s.show([note])
    change = "on:\n  pull_request_target:\nsteps:\n  - uses: actions/checkout@v4\n    with:\n      ref: head"
    svc.session_actions(
        s.sid, actions=[("e-1", "Edit", {"file_path": "ci.yml", "old_string": "", "new_string": change})]
    )
    s.check(ok=False)
    assert valence(svc, note) == 0.0


def test_a_reaction_does_not_credit_a_note_the_answer_set_aside(svc):
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show([ids["wrong"], ids["near"]])
    s.edit("wrong")  # the edit shares the wrong note's words...
    svc.session_response(
        s.sid,
        response="I did not apply the saved tip about the clock skew tolerance window. It was the dead letter table.",
    )
    s.prompt("thanks, that worked")
    assert valence(svc, ids["wrong"]) == 0.0  # ...but the answer said it did not follow it


def test_the_digest_counts_as_shown_and_never_lists_a_memory_that_misled(svc):
    ids = _ids(svc)
    for _ in range(3):
        svc.rate(ids["wrong"], rating=1)
        svc.rate(ids["fix"], rating=1)
    svc.feedback([ids["wrong"]], outcome=-1.0)
    digest = svc.session_start("s-1", source="startup", limit=5)
    assert ids["fix"] in [m["id"] for m in digest] and ids["wrong"] not in [m["id"] for m in digest]
    s = Story(svc)
    s.prompt("webhook signatures fail")
    s.edit("fix")
    s.check(ok=False)
    assert valence(svc, ids["fix"]) < 0  # followed from the digest: it takes the outcome


def test_read_results_say_what_happened_in_words(svc):
    ids = _ids(svc)
    items = {it.id: it for it in svc.read("webhook signature", top_k=5).items}
    assert items[ids["fix"]].outcome == "new"
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show([ids["fix"], ids["wrong"]])
    s.edit("wrong")
    s.check(ok=False)
    s.edit("fix")
    s.check(ok=True)
    items = {it.id: it for it in svc.read("webhook signature", top_k=5).items}
    assert items[ids["fix"]].outcome == "worked before (1x)"
    assert items[ids["wrong"]].outcome == "tried before, failed (1x)"


STEPS = st.lists(
    st.sampled_from(
        ["show fix", "show wrong", "show both", "edit fix", "edit own", "pass", "fail", "worked", "failed"]
    ),
    max_size=14,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS)
def test_no_sequence_of_events_credits_an_unfollowed_memory_more_than_a_followed_one(steps):
    # The wrong note is shown as often as the fix but never acted on; only the fix is followed.
    with tempfile.TemporaryDirectory() as tmp:
        svc = _service(Path(tmp))
        try:
            ids = _ids(svc)
            s = Story(svc)
            s.prompt("webhook signature verification is broken")
            for step in steps:
                kind, _, what = step.partition(" ")
                if kind == "show":
                    s.show([ids["fix"], ids["wrong"]] if what == "both" else [ids[what]])
                elif kind == "edit":
                    s.edit(what)
                elif kind in ("pass", "fail"):
                    s.check(ok=kind == "pass")
                else:
                    s.prompt("thanks, that worked" if kind == "worked" else "no, still failing with the same error")
            moved_fix = abs(valence(svc, ids["fix"]))
            assert valence(svc, ids["wrong"]) == 0.0 and svc.quality(ids["wrong"]).feedback_count == 0
            assert valence(svc, ids["near"]) == 0.0
            assert moved_fix >= 0.0
        finally:
            svc.close()


# --- one unit of work per hook event ---------------------------------------------------------------


def test_a_session_unit_commits_its_learning_and_its_log_together_or_not_at_all(svc):
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show([ids["fix"]])
    s.edit("fix")

    class Killed(Exception):
        pass

    with pytest.raises(Killed):
        with svc.session_unit("s-1"):
            s.check(ok=False)  # credits the fix and logs the check...
            assert valence(svc, ids["fix"]) < 0
            raise Killed  # ...then the process dies before the event ends
    assert valence(svc, ids["fix"]) == 0.0
    assert svc.quality(ids["fix"]).feedback_count == 0
    with svc.session_unit("s-1"):
        s.check(ok=False)  # the event again, whole: counted once
    assert svc.quality(ids["fix"]).feedback_count == 1


def test_a_caught_failure_inside_a_unit_undoes_only_its_own_part(svc):
    ids = _ids(svc)
    with svc.session_unit("s-1"):
        svc.session_recall("s-1", memory_ids=[ids["fix"]])
        with pytest.raises(Exception, match="none of the memory_ids exist"):
            svc.feedback(["0" * 64], outcome=1.0)
        svc.feedback([ids["near"]], outcome=1.0)
    assert valence(svc, ids["near"]) > 0
    assert [e["kind"] for e in svc.ctx.store.session_events("s-1")] == ["recall"]


CHILD = r"""
import json, os, sys
from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.hooks import handlers
from mnemo_mcp.service import MemoryService

db, kill_at, payload = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
settings = Settings(db=db, project="shop", auto_consolidate=False, auto_backup=False)
svc = MemoryService(settings, HashEmbedder())
seen = [0]

def trace(cursor, sql, bindings):
    seen[0] += 1
    if seen[0] == kill_at:
        os._exit(9)  # as kill -9: no rollback, no cleanup, mid-event
    return True

svc.store.db.conn.exec_trace = trace
handlers.run(payload["hook_event_name"], payload, settings, svc, semantic=True)
print(seen[0])
"""


def _state(db: Path) -> tuple:
    svc = MemoryService(Settings(db=db, project="shop", auto_consolidate=False, auto_backup=False), HashEmbedder())
    try:
        with svc.store.db.read():
            events = [(e["kind"], e["detail"].get("status")) for e in svc.store.session_events("s-1")]
            learned = [(m["id"], m["valence"], m["feedback_count"]) for m in svc.store.all_memories()]
            feedback = len(svc.store.feedback_events())
        return events, sorted(learned), feedback
    finally:
        svc.close()


@pytest.mark.slow
def test_a_hook_event_killed_at_any_statement_leaves_its_learning_and_its_log_both_or_neither(tmp_path):
    import shutil
    import subprocess
    import sys

    base = tmp_path / "base.db"
    svc = _service(tmp_path)
    ids = _ids(svc)
    s = Story(svc)
    s.prompt("webhook signature verification is broken")
    s.show(list(ids.values()))
    s.edit("fix")
    svc.close()
    for f in tmp_path.glob("m.db*"):
        shutil.copy(f, base.parent / f.name.replace("m.db", "base.db"))
    check = {
        "session_id": "s-1",
        "cwd": str(tmp_path),
        "transcript_path": "/nonexistent",
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q"},
        "tool_use_id": "t-fail",
        "error": "Exit code 1\nE   AssertionError: valid signature rejected",
    }

    def run(kill_at: int) -> subprocess.CompletedProcess:
        db = tmp_path / f"k{kill_at}.db"
        for f in tmp_path.glob("base.db*"):
            shutil.copy(f, tmp_path / f.name.replace("base.db", db.name))
        return subprocess.run(
            [sys.executable, "-c", CHILD, str(db), str(kill_at), json.dumps(check)],
            capture_output=True,
            text=True,
            timeout=60,
        ), db

    done, whole = run(0)
    assert done.returncode == 0, done.stderr
    statements = int(done.stdout.split()[-1])
    before, after = _state(base), _state(whole)
    assert before != after and after[2] == before[2] + 1  # the event credits the fix once, and logs
    for kill_at in range(1, statements + 1):
        killed, db = run(kill_at)
        assert killed.returncode == 9, (kill_at, killed.stderr)
        assert _state(db) in (before, after), f"killed at statement {kill_at} of {statements}: a half-done event"


def test_an_outcome_credits_only_the_memories_aligned_close_to_the_best_aligned_one():
    assert attribution.leading({"fix": 0.9, "wrong": 0.65, "near": 0.4}, 0.7) == {"fix", "wrong"}
    assert attribution.leading({"fix": 0.9, "wrong": 0.4}, 0.0) == {"fix", "wrong"}
    assert attribution.leading({}, 0.7) == set()


@pytest.mark.parametrize("ratio, credited", [(0.7, {"fix"}), (0.0, {"fix", "wrong"})])
def test_a_pass_does_not_credit_a_neighbour_that_only_passed_the_floor_beside_the_note_carried_out(
    tmp_path, monkeypatch, ratio, credited
):
    from mnemo_mcp.service import credit

    s = Settings(db=tmp_path / "m.db", project="shop", auto_consolidate=False, auto_backup=False, credit_ratio=ratio)
    svc = MemoryService(s, HashEmbedder())
    try:
        ids = _ids(svc)
        story = Story(svc)
        story.prompt("webhook signature verification is broken")
        story.show(list(ids.values()))
        story.check(ok=False)
        story.edit("fix")
        # The edit's alignment as the hooks would have measured it: the fix carried out, the wrong
        # note over the floor only by the subject's words.
        monkeypatch.setattr(credit, "aligned", lambda actions: {ids["fix"]: 0.9, ids["wrong"]: 0.4})
        result = story.check(ok=True)
        names = {name for name, mid in ids.items() if mid in result.memory_ids}
        assert names == credited
        assert (valence(svc, ids["wrong"]) > 0) == ("wrong" in credited)
    finally:
        svc.close()
