"""Learning without being told: pending cases, their outcomes, error -> fix cases from checks,
merging, expiry and the secrets guard, through the session service with an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.core import cases, dedup
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
FAIL = "E   ModuleNotFoundError: No module named 'httpx'\nFAILED tests/test_client.py::test_get - ModuleNotFoundError"
ASK = "pytest can't import httpx even though pip says it is installed"
WRONG = "It is a broken install. Reinstall it:\n\n```bash\npip install --force-reinstall httpx\n```"
FIX = "pytest runs outside the venv. Activate it first: `source .venv/bin/activate`, then `python -m pytest`."


def edit_action(file: str) -> tuple[str, str, dict]:
    """An Edit of `file` as the hooks report it (a fresh tool_use id each time)."""
    edit_action.n = getattr(edit_action, "n", 0) + 1
    return f"edit-{edit_action.n}", "Edit", {"file_path": file, "old_string": "a", "new_string": "b", "_file": file}


@pytest.fixture
def svc(db):
    s = MemoryService(Settings(db=db, project="billing", auto_consolidate=False, auto_backup=False), HashEmbedder())
    yield s
    s.close()


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def captured(svc: MemoryService):
    return svc.browse_list(None, source="capture", archived="all").items


def turn(svc, sid, prompt, minute, pid=None):
    return svc.session_user_prompt(sid, prompt=prompt, prompt_id=pid or f"{sid}-{minute}", now=at(minute))


def calls(*commands: str, start: int = 0) -> list[tuple[str, str, str]]:
    return [(f"toolu_{start + i}", "Bash", c) for i, c in enumerate(commands)]


# --- core rules ---------------------------------------------------------------------------------


def test_an_error_signature_masks_what_changes_between_runs_and_keeps_what_failed():
    one = cases.error_signature(
        'Exit code 1\nTraceback (most recent call last):\n  File "/home/dana/src/app/cli.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'httpx'\nFAILED tests/test_cli.py::test_run - boom at 0x7f3a2b1c 0.42s"
    )
    other = cases.error_signature(
        'Exit code 1\nTraceback (most recent call last):\n  File "/Users/ci/work/x/app/cli.py", line 9, in <module>\n'
        "ModuleNotFoundError: No module named 'httpx'\nFAILED tests/test_cli.py::test_run - boom at 0x55aa01 1.9s"
    )
    assert one == other
    assert "tests/test_cli.py::test_run" in one and "No module named 'httpx'" in one
    assert "0x7f3a2b1c" not in one and "0.42s" not in one and "/home/dana" not in one
    assert cases.error_signature("all good\n3 passed in 0.1s") is None


def test_two_failures_in_the_same_words_are_told_apart_by_what_they_name():
    httpx = cases.error_signature("E   ModuleNotFoundError: No module named 'httpx'")
    ledger = cases.error_signature("E   ModuleNotFoundError: No module named 'ledger'")
    again = cases.error_signature("E   ModuleNotFoundError: No module named 'httpx'\nERROR tests/test_other.py")
    assert cases.signature_similarity(httpx, again) >= cases.SIGNATURE_MATCH
    assert cases.signature_similarity(httpx, ledger) < cases.SIGNATURE_MATCH


def test_the_actionable_part_of_an_answer_is_kept_verbatim_and_bounded():
    text = cases.actionable(
        FIX + '\n\nThat is all. Also:\n\n```toml\n[tool.pytest.ini_options]\nasyncio_mode = "auto"\n```'
    )
    assert "`source .venv/bin/activate`" in text and 'asyncio_mode = "auto"' in text
    assert "That is all" not in text
    assert cases.actionable("I think it is a caching problem, try again later.") == ""
    assert len(cases.actionable("`x`. " * 1000, limit=300)) <= 300


def test_checks_chained_with_and_are_one_check_and_a_change_before_a_check_only_when_it_passes():
    from mnemo_mcp.core import checks

    assert checks.check_kind("cargo build && cargo test") == "cargo test"
    assert checks.check_kind("ruff check . && pytest -q") == "pytest -q"
    assert checks.check_kind("make deploy && pytest") is None  # a change first: its failure could be the deploy's
    assert checks.passed_check("make deploy && pytest") == "pytest"
    assert checks.passed_check("rm -rf build || pytest") is None
    assert checks.passed_check("make deploy; pytest") is None
    assert checks.passed_check("pytest -q") == checks.check_kind("pytest -q") == "pytest -q"


def test_the_same_check_with_other_arguments_is_one_check():
    assert cases.check_identity("pytest -q tests/test_x.py") == cases.check_identity("python -m pytest")
    assert cases.check_identity("npm test") != cases.check_identity("npm run build")
    assert not cases.is_change("git status") and cases.is_change("pip install -e .")


@pytest.mark.parametrize(
    "command",
    [
        "python manage.py makemigrations --check --dry-run",
        "kubectl apply --dry-run=client -f k8s/app.yaml",
        "terraform fmt -check",
        "git push --dry-run origin main",
    ],
)
def test_a_run_that_says_it_changes_nothing_is_no_change(command):
    """A dry run or a --check is a look: the notes its words name were not carried out by it."""
    assert not cases.is_change(command)
    assert cases.is_change(command.replace(" --dry-run", "").replace(" --check", "").replace(" -check", ""))
    assert cases.is_change(command + " > report.txt")  # unless it writes a file


@pytest.mark.parametrize(
    "a, b, cosine, kind",
    [  # cosines as the default model gives them
        (
            "Always pin numpy to 1.21 for this service.",
            "Always pin numpy to version 1.21 for this service!",
            0.921,
            dedup.DUPLICATE,
        ),
        (
            "Always pin numpy to 1.21 for this service.",
            "Always pin numpy to 1.24 for this service.",
            0.97,
            dedup.UPDATE,
        ),
        ("The staging DB listens on port 5433.", "The staging DB listens on port 5434.", 0.98, dedup.UPDATE),
        ("Use Postgres for the billing service queue.", "Use Redis for the billing service queue.", 0.86, dedup.UPDATE),
        ("Run the migrations before the tests.", "Do not run the migrations before the tests.", 0.9, dedup.UPDATE),
        ("Use ruff for lint.", "Deploys go through GitHub Actions on main.", 0.1, dedup.DIFFERENT),
    ],
)
def test_one_word_edits_are_duplicates_and_changed_facts_are_updates(a, b, cosine, kind):
    verdict = dedup.compare(a, b, cosine=cosine)
    assert verdict.kind == kind
    if kind == dedup.UPDATE:
        assert verdict.differs


def test_a_write_that_changes_a_fact_is_stored_and_names_the_memory_it_updates(svc):
    old = svc.write("Always pin numpy to 1.21 for this service.")
    same = svc.write("Always pin numpy to version 1.21 for this service!")
    assert same.duplicate_of == old.id and not same.created
    new = svc.write("Always pin numpy to 1.24 for this service.")
    assert new.created and new.similar and new.similar[0].id == old.id
    assert set(new.similar[0].differs) == {"1.21", "1.24"}


# --- pending cases and their outcomes ------------------------------------------------------------


def first_turn(svc, sid="s1", minute=0):
    turn(svc, sid, ASK, minute)
    svc.session_check(
        sid,
        status="fail",
        command="pytest -q",
        signature=cases.error_signature(FAIL),
        tool_use_id="toolu_0",
        calls=calls("pytest -q"),
        now=at(minute + 1),
    )
    return svc.session_stop(
        sid,
        answer=WRONG,
        calls=[("", "prompt", ""), *calls("pytest -q", "pip install --force-reinstall httpx")],
        now=at(minute + 2),
    )


def failed_then_fixed(svc):
    """The wrong advice, the user's "still failing", an edit of .envrc, and the check passes."""
    first_turn(svc)
    turn(svc, "s1", "still failing, same error", 5)
    svc.session_actions("s1", actions=[edit_action(".envrc")], now=at(6))
    svc.session_check(
        "s1",
        status="pass",
        command="pytest -q",
        tool_use_id="toolu_3",
        calls=[("", "prompt", ""), *calls("pytest -q"), ("", "prompt", ""), ("toolu_3", "Bash", "pytest -q")],
        now=at(7),
    )


def test_a_pending_case_is_no_memory_until_an_outcome_comes(svc):
    pending = first_turn(svc)
    assert pending["advice"].startswith("```") and pending["commands"] == ["pip install --force-reinstall httpx"]
    assert captured(svc) == [] and svc.read("reinstall httpx", top_k=5, record=False).items == []
    turn(svc, "s1", "still failing, same error", 5)
    (case,) = captured(svc)
    assert case.memory_type == "case" and case.source == "capture" and case.valence < 0
    assert "pip install --force-reinstall httpx" in case.content and "Asked: pytest can't import httpx" in case.content
    # What was tried leads; the question only names it, after.
    assert case.content.index("pip install") < case.content.index("Asked:")


def test_silence_is_not_an_outcome_a_pending_case_expires(svc):
    first_turn(svc)
    turn(svc, "s1", "ok, now add a --verbose flag", 5)  # no reaction: the case waits
    turn(svc, "s1", "and a changelog entry", 6)
    turn(svc, "s1", "thanks, that worked", 7)  # too late: its turn is past
    assert captured(svc) == []


def test_a_pending_case_expires_by_time_too(svc):
    first_turn(svc)
    turn(svc, "s1", "thanks, that worked", 60 * 25)
    assert captured(svc) == []


@pytest.mark.parametrize(
    "reaction, sign", [("that worked, thanks", 1), ("almost, one test left", 1), ("nope, same error", -1)]
)
def test_the_next_reaction_makes_the_pending_case_a_memory_with_its_outcome(svc, reaction, sign):
    first_turn(svc)
    turn(svc, "s1", reaction, 5)
    (case,) = captured(svc)
    assert case.valence * sign > 0
    standing = cases.case_standing(case.valence)
    assert standing == (cases.WORKED if sign > 0 else cases.FAILED)


def test_a_later_check_after_the_turns_changes_judges_the_pending_case(svc):
    first_turn(svc)
    turn(svc, "s1", "ok run it again", 5)  # not a reaction
    svc.session_check(
        "s1",
        status="fail",
        command="pytest -q",
        signature=cases.error_signature(FAIL),
        tool_use_id="toolu_9",
        calls=calls("pytest -q", "pip install --force-reinstall httpx", "pytest -q"),
        now=at(6),
    )
    kinds = {c.tags[1]: c for c in captured(svc)}
    assert "attempt" in kinds and kinds["attempt"].valence < 0  # the change did not help


def test_a_check_that_fails_then_passes_after_changes_makes_a_fix_case(svc):
    first_turn(svc)
    turn(svc, "s1", "still failing, same error", 5)
    svc.session_actions("s1", actions=[edit_action(".envrc")], now=at(6))
    transcript = [
        ("", "prompt", ""),
        *calls("pytest -q", "pip install --force-reinstall httpx"),
        ("", "prompt", ""),
        *calls("source .venv/bin/activate", "pytest -q", start=2),
    ]
    svc.session_check("s1", status="pass", command="pytest -q", tool_use_id="toolu_3", calls=transcript, now=at(7))
    fix = next(c for c in captured(svc) if "fix" in c.tags)
    assert (
        fix.content.startswith("Fix: editing .envrc; running `source .venv/bin/activate`.")
        and "\nFixed: `pytest -q` failing with `" in fix.content
    )
    assert "force-reinstall" not in fix.content  # that was the attempt the user said failed
    assert fix.valence > 0
    # The user's thanks adds to the same case instead of making another one.
    svc.session_stop("s1", answer=FIX, calls=transcript, now=at(8))
    turn(svc, "s1", "that worked, thanks!", 9)
    assert [c.feedback_count for c in captured(svc) if "fix" in c.tags] == [2]


def test_the_same_fix_captured_again_merges_into_one_case(svc):
    for n, sid in enumerate(("s1", "s2")):
        base = 100 * n
        turn(svc, sid, "pytest fails on import", base)
        svc.session_check(
            sid,
            status="fail",
            command="pytest -q",
            signature=cases.error_signature(FAIL),
            tool_use_id="toolu_0",
            calls=calls("pytest -q"),
            now=at(base + 1),
        )
        svc.session_actions(sid, actions=[edit_action(".envrc")], now=at(base + 2))
        svc.session_check(
            sid,
            status="pass",
            command="pytest -q",
            tool_use_id="toolu_1",
            calls=calls("pytest -q", "pytest -q"),
            now=at(base + 3),
        )
    (fix,) = [c for c in captured(svc) if "fix" in c.tags]
    assert fix.feedback_count == 2 and fix.valence > 0.3


def test_a_failing_check_recalls_what_worked_before_what_did_not(svc):
    failed_then_fixed(svc)
    again = cases.error_signature(FAIL.replace("test_get", "test_post"))
    found = svc.cases_for(again)
    assert [cases.case_standing(m["valence"]) for m in found][:2] == [cases.WORKED, cases.FAILED]
    assert svc.cases_for(again, not_from="s1") == []  # a session is not shown its own cases


def test_captured_text_is_redacted_whatever_the_secrets_setting(tmp_path):
    svc = MemoryService(
        Settings(db=tmp_path / "s.db", project="p", secrets="allow", auto_consolidate=False, auto_backup=False),
        HashEmbedder(),
    )
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    turn(svc, "s1", f"deploy fails, my token is {token}", 0)
    svc.session_stop(
        "s1", answer=f"Run `gh auth login --with-token {token}` again.", calls=[("", "prompt", "")], now=at(1)
    )
    turn(svc, "s1", "that worked", 2)
    (case,) = captured(svc)
    assert token not in case.content and "[REDACTED" in case.content
    svc.close()


def test_capture_off_keeps_nothing_and_fixes_mode_keeps_only_what_a_check_proved(tmp_path):
    for mode, expected in (("off", set()), ("fixes", {"fix"})):
        svc = MemoryService(
            Settings(db=tmp_path / f"{mode}.db", project="p", capture=mode, auto_consolidate=False, auto_backup=False),
            HashEmbedder(),
        )
        failed_then_fixed(svc)
        assert {c.tags[1] for c in captured(svc)} == expected
        svc.close()


def test_a_failing_command_that_is_no_check_is_closed_as_a_fix_when_the_transcript_shows_it_pass(svc):
    turn(svc, "s1", "docker compose up api dies at startup", 0)
    err = 'api-1  | sqlalchemy.exc.OperationalError: connection to server at "127.0.0.1", port 5432 failed: Connection refused'
    svc.session_failure(
        "s1",
        command="docker compose up api",
        signature=cases.error_signature(err),
        tool_use_id="toolu_0",
        calls=calls("docker compose up api"),
        now=at(1),
    )
    svc.session_actions("s1", actions=[edit_action("docker-compose.yml")], now=at(2))
    history = [("", "prompt", ""), *calls("docker compose up api", "docker compose up api")]
    svc.session_stop(
        "s1",
        answer="Point the api at `db`, not localhost.",
        calls=history,
        results={"toolu_0": False, "toolu_1": True},
        now=at(3),
    )
    (fix,) = [c for c in captured(svc) if "fix" in c.tags]
    assert fix.content.startswith("Fix: editing docker-compose.yml")
    assert svc.stats().feedback_events == 1  # no memory was blamed for a command that is no test


@pytest.mark.parametrize(
    "message, opens",
    [
        ("now:\nTypeError: Cannot read properties of undefined (reading 'id')", "TypeError"),
        ('the worker starts, then:\nPHP Fatal error:  Uncaught Error: Class "Redis" not found', "PHP Fatal error"),
        ("after the rebuild:\n./entrypoint.sh: 3: exec: gunicorn: not found", "entrypoint.sh"),
    ],
)
def test_output_pasted_under_a_short_lead_in_is_a_reported_error(message, opens):
    assert opens in (cases.reported_error(message) or "")


def test_a_lead_in_that_asks_about_the_output_reports_nothing():
    assert cases.reported_error("why does it print this:\nTypeError: x is undefined") is None
    assert cases.reported_error("the plan:\n1. add the test\n2. ship it") is None
