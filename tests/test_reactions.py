"""The reaction classifier's rules, one behaviour each (figures: python -m benchmarks.reactions)."""

from __future__ import annotations

import pytest

from mnemo_mcp.core.reactions import FAILED, PARTIAL, UNKNOWN, WORKED, classify


@pytest.mark.parametrize(
    "text",
    [
        "thanks, that fixed it",
        "works now 👍",
        "no errors now",
        "tests pass now",
        "lgtm, merging",
        "thanks! now add tests for the parser",
        "```\n===== 12 passed in 0.8s =====\n```",
    ],
)
def test_success_and_thanks_are_worked(text):
    assert classify(text).label == "worked"


@pytest.mark.parametrize(
    "text",
    [
        "still failing",
        "doesn't work",
        "that didn't help",
        "same error:\n```\nTraceback (most recent call last):\n```",
        "no, that's wrong",
        "you broke the build",
        "thanks, but it still crashes",
        "great, now nothing compiles",
        "why is it still returning 500?",
    ],
)
def test_failures_corrections_and_sarcasm_are_failed(text):
    assert classify(text).label == "failed"


@pytest.mark.parametrize(
    "text",
    [
        "almost there",
        "better but test_export still fails",
        "works on chrome, not on safari",
        "compiles now, but segfaults at runtime",
        "3 of the 5 tests pass now",
    ],
)
def test_progress_with_something_left_is_partial(text):
    assert classify(text).label == "partial"


@pytest.mark.parametrize(
    "text",
    [
        "ok",
        "yes",
        "no thanks",
        "add a --dry-run flag",
        "how do I fix the failing test in utils?",
        "add a test that checks the parser fails on empty input",
        "users report that export doesn't work, investigate",
        "> it's not working, same error\n\nthat's what the customer wrote. thoughts?",
        "thanks, I'll try it after lunch",
        "rename `still_failing` to `flaky`",
        "",
        "   ",
    ],
)
def test_anything_that_is_not_clearly_a_reaction_is_unknown(text):
    assert classify(text).label == "unknown"


def test_the_deciding_phrase_is_reported():
    r = classify("nope, still the same error")
    assert r.label == "failed" and r.cue and "still" in r.cue


@pytest.mark.parametrize(
    "text",
    [
        "still times out, now after 20s lol",
        "still 413",
        "same panic, Cannot start a runtime from within a runtime",
        "failed again on ci tonight",
        "nope. E0277 again, now it says required by a bound",
        "yeah, reclone did nothing",
        "yeah that's worse, and we need cookies",
        "not like this. do it properly",
    ],
)
def test_terse_reports_of_the_same_failure_are_failed(text):
    assert classify(text).label == FAILED


@pytest.mark.parametrize(
    "text",
    [
        "all good now",
        "it's live now",
        "staging signups work",
        "restarts stopped",
        "test job green as well",
        "builds, great",
    ],
)
def test_terse_reports_that_it_works_where_it_is_used_are_worked(text):
    assert classify(text).label == WORKED


@pytest.mark.parametrize(
    "text",
    ["still investigating", "still need to add docs for it", "deliveries are 200 again, thanks"],
)
def test_terse_rules_leave_ongoing_work_and_good_news_alone(text):
    assert classify(text).label in (UNKNOWN, WORKED)
    assert classify(text).label != FAILED


@pytest.mark.parametrize(
    "text",
    [
        "pod is running now",
        "downloads properly now",
        "comments are on now. do i have to remember the restart every time though?",
        "reset mails have https links now",
        "about page says 1.10 now",
    ],
)
def test_a_state_reported_as_it_is_now_is_worked(text):
    assert classify(text).label == WORKED


@pytest.mark.parametrize(
    "text",
    [
        "the build takes 10 minutes now",
        "the sidebar is gone now",
        "it only happens on mac now",
        "it uses 4GB now",
        "i am deploying it now",
        "running it now",
        "viewer accounts can delete documents right now",
        "switched node versions and now",
        "everything is red now",
        "login page shows a blank screen now",
        "still locked. that ci run got cancelled yesterday, nothing is running now",
    ],
)
def test_a_complaint_or_the_users_own_doing_now_is_not_worked(text):
    assert classify(text).label != WORKED


@pytest.mark.parametrize(
    "text", ["tests panic now: called from outside of a LocalSet", "the worker dies now", "now it panics"]
)
def test_what_broke_said_as_a_state_is_failed(text):
    assert classify(text).label == FAILED


@pytest.mark.parametrize(
    "text",
    [
        "green",
        "rebased, green.",
        "rollout went through",
        "the hotfix went out this morning",
        "pushed fine",
        "heap back to ~90M after a day",
        "zero timeouts overnight",
        "it was the trailing slash. fixed",
        "build time went from 9 to 4 min, nice",
    ],
)
def test_a_state_back_where_it_should_be_or_work_that_went_out_is_worked(text):
    assert classify(text).label == WORKED


@pytest.mark.parametrize(
    "text",
    [
        "login works 👍 but the logout button 500s now",
        "migrations run fine now. but the seed job now takes 10 min",
        "deploy went through, but every page loads twice as slow",
        "fewer 502s but still a handful every hour",
        "better i think, but the flaky one failed once more",
    ],
)
def test_a_success_with_trouble_after_but_is_partial(text):
    assert classify(text).label == PARTIAL


@pytest.mark.parametrize(
    "text", ["works, but why does that matter?", "it works! but thanks for explaining the lock too"]
)
def test_a_but_that_asks_or_thanks_leaves_a_success_worked(text):
    assert classify(text).label == WORKED


@pytest.mark.parametrize(
    "text", ["still 403s on the admin routes", "deployed it. still duplicates the invoices", "same ECONNRESET"]
)
def test_what_persists_said_with_its_own_verb_or_status_is_failed(text):
    assert classify(text).label == FAILED


@pytest.mark.parametrize("text", ["it still does the job", "the advice still applies", "still sounds good to me"])
def test_what_still_holds_is_no_failure(text):
    assert classify(text).label != FAILED


@pytest.mark.parametrize(
    "text",
    [
        "cool. can you also make validateFile reject anything over 25 MB, with a test",
        "ok, now do the same for the orders table",
        "cool, makes sense",
        "nice, next: the export button",
    ],
)
def test_a_bare_acknowledgement_that_moves_on_to_something_else_is_no_verdict(text):
    assert classify(text).label == "unknown"


@pytest.mark.parametrize(
    ("text", "label"),
    [("ok, now it works", "worked"), ("ok, now the tests fail again", "failed"), ("nice. can you push it", "worked")],
)
def test_an_acknowledgement_followed_by_a_verdict_keeps_it(text, label):
    assert classify(text).label == label
