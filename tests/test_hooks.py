"""Claude Code hooks, each run as its own `mnemo-mcp hook EVENT` process with the JSON that
Claude Code sends on stdin, against a temporary database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.hooks.handlers import INTRO, tokens
from mnemo_mcp.service import MemoryService

WEBHOOK = (
    "Webhook retries: use exponential backoff starting at 2 seconds and keep failed payloads in the dead letter queue."
)
FILLER = [
    "The flaky test test_upload_retry needs the mock server on a fixed port 8089.",
    "Deploys go through the GitHub Actions workflow deploy.yml on the main branch.",
    "Postgres migrations must be reversible: every upgrade has a downgrade.",
    "The frontend builds with vite into the dist folder.",
    "Use ruff for lint and formatting, line length 120.",
    "Secrets live in AWS Secrets Manager under app/prod.",
    "The cache TTL for user sessions is fifteen minutes.",
    "Celery workers must be restarted after a settings change.",
    "Feature flags come from the LaunchDarkly relay proxy.",
    "The API rate limit is 120 requests per minute per token.",
    "Logs ship to Loki through promtail on every node.",
]


@pytest.fixture
def store(env, project) -> MemoryService:
    svc = MemoryService(Settings(db=env["MNEMO_DB"], project="shop-api"), HashEmbedder())
    ids = {"webhook": svc.write(WEBHOOK).id}
    for text in FILLER:
        svc.write(text, allow_duplicate=True)
    svc.ids = ids
    yield svc
    svc.close()


def hook(env: dict[str, str], event: str, payload: dict | str, **extra_env: str) -> subprocess.CompletedProcess:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [sys.executable, "-m", "mnemo_mcp", "hook", event],
        input=raw,
        capture_output=True,
        text=True,
        env={**env, **extra_env},
        timeout=60,
    )


def prompt(project: Path, text: str, session: str = "s-1") -> dict:
    return {
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": str(project / "src"),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    }


def bash(project: Path, command: str, event: str = "PostToolUse", session: str = "s-1", **response) -> dict:
    payload = {
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"},
    }
    if event == "PostToolUse":
        payload["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False, **response}
    else:
        payload["error"] = "Exit code 1"
        payload.update(response)
    return payload


def stop(project: Path, answer: str, session: str = "s-1") -> dict:
    return {
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": str(project),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": answer,
    }


def edit(project: Path, new: str, old: str = "pass", session: str = "s-1", tool_use_id: str = "e-1") -> dict:
    """An Edit's PostToolUse, in the shape Claude Code 2.1.332 sends it."""
    path = str(project / "app" / "webhooks.py")
    return {
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": path, "old_string": old, "new_string": new, "replace_all": False},
        "tool_response": {"filePath": path, "oldString": old, "newString": new, "userModified": False},
        "tool_use_id": tool_use_id,
    }


# An answer and an edit that carry out the webhook memory (in other words than the note's).
FOLLOWS_WEBHOOK = (
    "Retries now back off exponentially from 2 seconds; a payload that keeps failing lands in the dead letter queue."
)
WEBHOOK_CODE = "retry = ExponentialBackoff(start_seconds=2)\nfailed.move_to(dead_letter_queue)"


def valence(svc: MemoryService, mid: str) -> float:
    return svc.quality(mid).valence


def feedback_events(svc: MemoryService) -> int:
    return svc.stats().feedback_events


def context_of(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


# --- UserPromptSubmit -----------------------------------------------------------------------


def test_prompt_hook_injects_the_relevant_memory_with_its_id(env, project, store):
    out = hook(
        env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?")
    )
    text = context_of(out)
    assert store.ids["webhook"][:12] in text and "dead letter queue" in text
    assert json.loads(out.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


def test_prompt_hook_injects_nothing_when_nothing_passes_the_relevance_floor(env, project, store):
    out = hook(env, "UserPromptSubmit", prompt(project, "what is the capital of Mongolia"))
    assert out.returncode == 0 and out.stdout == ""


def test_injection_stays_within_the_token_budget(env, project, store):
    for budget in ("90", "150"):
        out = hook(
            env,
            "UserPromptSubmit",
            prompt(project, "webhook retries backoff dead letter queue"),
            MNEMO_INJECT_TOKENS=budget,
            MNEMO_INJECT_TOP_K="3",
            MNEMO_INJECT_MIN_RELEVANCE_KEYWORD="0.05",
        )
        assert tokens(context_of(out)) <= int(budget)
    tiny = hook(env, "UserPromptSubmit", prompt(project, "webhook retries backoff"), MNEMO_INJECT_TOKENS="20")
    assert tiny.returncode == 0 and tiny.stdout == ""  # no room for a useful line: nothing


def test_a_worked_reaction_credits_the_memory_the_previous_turn_followed(env, project, store):
    hook(env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?"))
    hook(env, "Stop", stop(project, FOLLOWS_WEBHOOK))
    assert valence(store, store.ids["webhook"]) == 0
    hook(env, "UserPromptSubmit", prompt(project, "thanks, that fixed it! now add a changelog entry"))
    assert valence(store, store.ids["webhook"]) > 0


def test_a_reaction_to_a_turn_that_did_nothing_a_memory_says_credits_nothing(env, project, store):
    # Shown is not followed: the memory was injected, the answer went elsewhere.
    hook(env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?"))
    hook(env, "Stop", stop(project, "I renamed the CLI's --quiet flag to --silent and updated the help text."))
    hook(env, "UserPromptSubmit", prompt(project, "thanks, that fixed it"))
    assert valence(store, store.ids["webhook"]) == 0 and feedback_events(store) == 0


def test_a_failed_reaction_counts_against_them_and_an_unknown_one_changes_nothing(env, project, store):
    hook(env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?"))
    hook(env, "Stop", stop(project, FOLLOWS_WEBHOOK))
    before = feedback_events(store)
    hook(env, "UserPromptSubmit", prompt(project, "add a --verbose flag to the cli"))
    assert feedback_events(store) == before and valence(store, store.ids["webhook"]) == 0
    hook(
        env, "UserPromptSubmit", prompt(project, "webhook retries with backoff and the dead letter queue again please")
    )
    hook(env, "Stop", stop(project, FOLLOWS_WEBHOOK))
    hook(env, "UserPromptSubmit", prompt(project, "no, still failing with the same error"))
    assert valence(store, store.ids["webhook"]) < 0


def test_the_first_prompt_of_a_session_scores_nothing(env, project, store):
    hook(
        env,
        "UserPromptSubmit",
        prompt(project, "how do webhook retries use backoff and the dead letter queue?", session="other"),
    )
    hook(env, "UserPromptSubmit", prompt(project, "thanks, works now", session="fresh"))
    assert feedback_events(store) == 0


# --- PostToolUse: tests and builds --------------------------------------------------------------


def test_a_failing_test_run_blames_what_the_changes_followed_and_a_later_pass_credits_the_fix(env, project, store):
    hook(env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?"))
    hook(env, "PostToolUse", edit(project, WEBHOOK_CODE, tool_use_id="e-1"))
    hook(
        env, "PostToolUseFailure", bash(project, "uv run pytest -q tests/test_webhooks.py", event="PostToolUseFailure")
    )
    blamed = valence(store, store.ids["webhook"])
    assert blamed < 0
    hook(env, "PostToolUseFailure", bash(project, "pytest -q", event="PostToolUseFailure"))
    assert valence(store, store.ids["webhook"]) == blamed  # the same failure again, nothing changed between
    fix = store.write("Backoff tests need the fake clock fixture from conftest.", allow_duplicate=True).id
    read = store.read("backoff tests fake clock", top_k=1, record=True)
    assert read.items[0].id == fix
    tool = {
        "session_id": "s-1",
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "mcp__mnemo__memory_read",
        "tool_input": {"query": "backoff tests fake clock"},
        "tool_response": [{"type": "text", "text": json.dumps(read.model_dump(mode="json"))}],
    }
    assert hook(env, "PostToolUse", tool).returncode == 0
    hook(
        env, "PostToolUse", edit(project, "def test_backoff(fake_clock):", old="def test_backoff():", tool_use_id="e-2")
    )
    hook(env, "PostToolUse", bash(project, "cd api && pytest -q"))
    assert valence(store, fix) > 0
    assert valence(store, store.ids["webhook"]) == blamed  # followed before the failure, not since


def test_a_check_run_before_anything_changed_is_the_starting_point_not_an_outcome(env, project, store):
    hook(env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?"))
    hook(env, "PostToolUseFailure", bash(project, "pytest -q", event="PostToolUseFailure"))
    assert feedback_events(store) == 0
    hook(env, "PostToolUse", edit(project, WEBHOOK_CODE))
    hook(env, "PostToolUse", bash(project, "pytest -q"))
    assert valence(store, store.ids["webhook"]) > 0  # the pass after the change credits what it followed


def test_a_change_then_a_check_that_passes_in_one_command_is_a_pass_after_the_change(env, project, store):
    hook(env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?"))
    hook(env, "PostToolUseFailure", bash(project, "pytest -q", event="PostToolUseFailure"))
    hook(env, "PostToolUse", edit(project, WEBHOOK_CODE))
    hook(env, "PostToolUse", bash(project, "rm -rf .pytest_cache && pytest -q"))
    assert valence(store, store.ids["webhook"]) > 0
    # the same command failing says nothing: the rm could have failed as well as pytest
    hook(env, "PostToolUse", edit(project, "retry = None", old="retry = 1", tool_use_id="e-9"))
    before = feedback_events(store)
    hook(env, "PostToolUseFailure", bash(project, "rm -rf .pytest_cache && pytest -q", event="PostToolUseFailure"))
    assert feedback_events(store) == before


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q | tail -5",
        "pytest || true",
        "make deploy && pytest",
        "git status",
        "ls -la",
        "pytest &",
        "make clean",
    ],
)
def test_ambiguous_or_non_check_commands_change_nothing(env, project, store, command):
    hook(env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?"))
    hook(env, "PostToolUseFailure", bash(project, command, event="PostToolUseFailure"))
    assert feedback_events(store) == 0


def test_an_interrupted_command_says_nothing(env, project, store):
    hook(env, "UserPromptSubmit", prompt(project, "how do webhook retries use backoff and the dead letter queue?"))
    hook(env, "PostToolUseFailure", bash(project, "pytest", event="PostToolUseFailure", is_interrupt=True))
    assert feedback_events(store) == 0


# --- SessionStart and robustness ------------------------------------------------------------


def test_session_start_says_mnemo_is_there_and_offers_only_proven_memories(env, project, store, tmp_path):
    start = {"session_id": "s-2", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    text = context_of(hook(env, "SessionStart", start))
    assert text == INTRO  # nothing proven yet: only the line saying how to call mnemo
    assert "memory_read" in text and "ToolSearch" in text
    for _ in range(3):
        store.rate(store.ids["webhook"], rating=1, reason="right")
        store.feedback([store.ids["webhook"]], outcome=1.0)
    text = context_of(hook(env, "SessionStart", {**start, "session_id": "s-3"}))
    assert text.startswith(INTRO) and store.ids["webhook"][:12] in text
    assert sum(line.startswith("- [") for line in text.splitlines()) == 1


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", json.dumps({"prompt": "no session id"})])
def test_bad_input_exits_zero_silently_and_logs(env, project, raw):
    out = hook(env, "UserPromptSubmit", raw)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    assert "UserPromptSubmit" in Path(env["MNEMO_HOOK_LOG"]).read_text()


def test_an_unknown_event_exits_zero_silently(env, project):
    out = hook(env, "Notification", {"session_id": "s", "cwd": str(project)})
    assert out.returncode == 0 and out.stdout == ""


# --- Stop: the answer decides who takes the credit ------------------------------------------------


def transcript(tmp_path: Path, answer: str) -> str:
    path = tmp_path / "transcript.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "how do webhook retries work, and celery?"}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "Bash", "input": {}}]},
        },
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return str(path)


def test_stop_hook_makes_the_next_reaction_credit_the_memory_the_answer_used(env, project, store, tmp_path):
    wide = {"MNEMO_INJECT_MIN_RELEVANCE_KEYWORD": "0.05", "MNEMO_INJECT_TOKENS": "400", "MNEMO_INJECT_TOP_K": "3"}
    text = context_of(
        hook(
            env,
            "UserPromptSubmit",
            prompt(project, "webhook retries dead letter queue and celery workers settings"),
            **wide,
        )
    )
    celery = next(m for m in store.read("celery workers restarted", top_k=1, record=False).items)
    assert store.ids["webhook"][:12] in text and celery.id[:12] in text
    answer = "Webhook retries now use exponential backoff starting at 2 seconds, and failed payloads go to the dead letter queue."
    stop = {
        "session_id": "s-1",
        "cwd": str(project),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "transcript_path": transcript(tmp_path, answer),
    }
    assert hook(env, "Stop", stop).returncode == 0
    hook(env, "UserPromptSubmit", prompt(project, "thanks, that fixed it"))
    used, unused = valence(store, store.ids["webhook"]), valence(store, celery.id)
    assert used > 0 and unused == 0  # shown beside it, not followed: untouched


def test_stop_hook_without_an_answer_or_recall_changes_nothing(env, project, store, tmp_path):
    stop = {
        "session_id": "s-9",
        "cwd": str(project),
        "hook_event_name": "Stop",
        "transcript_path": str(tmp_path / "missing.jsonl"),
    }
    out = hook(env, "Stop", stop)
    assert out.returncode == 0 and out.stdout == "" and store.stats().associations == store.stats().associations
    assert not Path(env["MNEMO_HOOK_LOG"]).exists()


# --- the shapes the real CLI sends (Claude Code 2.1.332, tests/fixtures) -------------------------

PAYLOADS = json.loads((Path(__file__).parent / "fixtures" / "claude_code_2.1.332_hook_payloads.json").read_text())
ASK = "how do webhook retries use backoff and the dead letter queue?"


def real(name: str, project: Path, **changes) -> dict:
    payload = json.loads(json.dumps(PAYLOADS[name]))
    payload["cwd"] = str(project)
    payload.update(changes)
    return payload


def test_a_background_test_run_is_no_result_until_its_task_notification_says_it_failed(env, project, store):
    first = real("UserPromptSubmit", project, prompt=ASK)
    assert store.ids["webhook"][:12] in context_of(hook(env, "UserPromptSubmit", first))
    hook(env, "PostToolUse", edit(project, WEBHOOK_CODE, session=first["session_id"]))
    assert hook(env, "PostToolUse", real("PostToolUse-Bash-background", project)).returncode == 0
    assert feedback_events(store) == 0  # it ran in the background: PostToolUse said nothing of its exit code
    note = real("UserPromptSubmit-task-notification", project)
    out = hook(env, "UserPromptSubmit", note)
    assert out.returncode == 0 and out.stdout == ""  # Claude Code speaking: no injection, no reaction
    blamed = valence(store, store.ids["webhook"])
    assert blamed < 0
    assert hook(env, "UserPromptSubmit", note).returncode == 0
    assert valence(store, store.ids["webhook"]) == blamed  # the same task's result counts once


def test_a_task_notification_starts_no_turn_so_the_users_next_reaction_credits_this_turns_recall(env, project, store):
    first = real("UserPromptSubmit", project, prompt=ASK)
    hook(env, "UserPromptSubmit", first)
    hook(env, "PostToolUse", edit(project, WEBHOOK_CODE, session=first["session_id"]))
    hook(env, "UserPromptSubmit", real("UserPromptSubmit-task-notification", project))  # not one of our checks
    assert feedback_events(store) == 0
    reaction = real("UserPromptSubmit", project, prompt="still failing, same error", prompt_id="next-turn")
    hook(env, "UserPromptSubmit", reaction)
    assert valence(store, store.ids["webhook"]) < 0


def test_a_notification_of_a_stopped_task_says_nothing(env, project, store):
    hook(env, "UserPromptSubmit", real("UserPromptSubmit", project, prompt=ASK))
    hook(env, "PostToolUse", real("PostToolUse-Bash-background", project))
    killed = PAYLOADS["UserPromptSubmit-task-notification"]["prompt"].replace(
        "<status>failed</status>", "<status>killed</status>"
    )
    killed = killed.replace(" failed with exit code 2", " was stopped")
    hook(env, "UserPromptSubmit", real("UserPromptSubmit-task-notification", project, prompt=killed))
    assert feedback_events(store) == 0


def test_a_timed_out_command_sent_to_the_background_is_no_pass(env, project, store):
    hook(env, "UserPromptSubmit", prompt(project, ASK))
    hook(env, "PostToolUse", edit(project, WEBHOOK_CODE, tool_use_id="e-1"))
    hook(env, "PostToolUseFailure", bash(project, "pytest -q", event="PostToolUseFailure"))
    blamed = valence(store, store.ids["webhook"])
    assert blamed < 0
    hook(env, "PostToolUse", edit(project, WEBHOOK_CODE + "\nlog.info('retry')", old=WEBHOOK_CODE, tool_use_id="e-2"))
    auto = bash(project, "pytest -q", backgroundTaskId="b77", timedOutAfterMs=120000)
    hook(env, "PostToolUse", auto)
    assert valence(store, store.ids["webhook"]) == blamed  # a pass after the failure would have credited


def test_of_what_a_models_memory_read_returned_only_what_it_then_did_takes_the_blame(env, project, store):
    hook(env, "UserPromptSubmit", real("UserPromptSubmit", project, prompt="add a --verbose flag to the cli"))
    others = [store.read(text, top_k=1, record=False).items[0].id for text in FILLER[:2]]
    result = json.loads(PAYLOADS["PostToolUse-mcp-memory_read"]["tool_response"])
    item = result["items"][0]
    result["items"] = [
        {**item, "id": store.ids["webhook"], "relevance": 0.9546},
        {**item, "id": others[0], "relevance": 0.5},
        {**item, "id": others[1], "relevance": 0.0},
    ]
    read = real("PostToolUse-mcp-memory_read", project, tool_response=json.dumps(result))
    hook(env, "PostToolUse", read)
    hook(env, "PostToolUse", edit(project, WEBHOOK_CODE, session=read["session_id"]))
    hook(env, "PostToolUseFailure", real("PostToolUseFailure-Bash", project))
    assert valence(store, store.ids["webhook"]) < 0
    assert [valence(store, m) for m in others] == [0.0, 0.0]


def test_resume_does_not_repeat_the_digest_but_clear_and_compact_bring_it_back(env, project, store):
    for _ in range(3):
        store.rate(store.ids["webhook"], rating=1, reason="right")
    start = real("SessionStart-startup", project)
    assert store.ids["webhook"][:12] in context_of(hook(env, "SessionStart", start))
    resumed = hook(env, "SessionStart", real("SessionStart-resume", project))
    assert resumed.returncode == 0 and resumed.stdout == ""  # the conversation still holds it
    for source in ("compact", "clear"):
        again = hook(env, "SessionStart", real("SessionStart-startup", project, source=source))
        assert store.ids["webhook"][:12] in context_of(again)
    fresh = hook(env, "SessionStart", real("SessionStart-resume", project, session_id="never-seen"))
    assert context_of(fresh).startswith(INTRO)  # a session resumed from before mnemo was installed


def test_the_real_stop_payload_records_the_answers_alignment(env, project, store):
    hook(env, "UserPromptSubmit", real("UserPromptSubmit", project, prompt=ASK))
    stop = real(
        "Stop",
        project,
        last_assistant_message="Webhook retries use exponential backoff from 2 seconds; failures go to the dead letter queue.",
    )
    assert hook(env, "Stop", stop).returncode == 0
    hook(env, "UserPromptSubmit", real("UserPromptSubmit", project, prompt="thanks, that worked", prompt_id="p-2"))
    # Credited because the answer followed it (without the Stop hook: no evidence, no credit).
    assert 0 < valence(store, store.ids["webhook"]) <= store.settings.learning_rate * store.settings.outcome_worked
    assert not Path(env["MNEMO_HOOK_LOG"]).exists()


def test_a_tool_call_that_spawned_the_hook_twice_counts_once(env, project, store):
    # A command matching two `if` filters makes Claude Code run the hook twice, at once.
    hook(env, "UserPromptSubmit", real("UserPromptSubmit", project, prompt="the webhook test fails"))
    hook(env, "PostToolUseFailure", real("PostToolUseFailure-Bash", project, tool_use_id="toolu_1"))
    edit = {
        **real("PostToolUse-Bash", project),
        "tool_name": "Edit",
        "tool_use_id": "toolu_2",
        "tool_input": {"file_path": "app/webhooks.py", "old_string": "a", "new_string": "b"},
    }
    hook(env, "PostToolUse", edit)
    passed = json.dumps(real("PostToolUse-Bash", project, tool_use_id="toolu_3"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "mnemo_mcp", "hook", "PostToolUse"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for _ in range(2)
    ]
    for p in procs:
        p.communicate(passed, timeout=60)
    fixes = store.browse_list(None, source="capture").items
    assert len(fixes) == 1 and fixes[0].content.startswith("Fix: editing app/webhooks.py")
    assert fixes[0].feedback_count == 1


# --- the command a user install writes (installers/hook_start.py) --------------------------


def test_the_installed_quick_start_runs_without_site_and_a_hook_that_needs_site_packages_still_works(
    env, project, store, mnemo_script
):
    from mnemo_mcp.installers.hook_start import hook_argv

    argv = hook_argv(mnemo_script)
    assert argv[:3] == (sys.executable, "-S", "-P")

    def run(*args: str, payload: dict) -> subprocess.CompletedProcess:
        command = [*argv, "hook", *args]
        return subprocess.run(command, input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60)

    # The keyword path imports pydantic and apsw: site-packages, found on demand.
    question = prompt(project, "how do webhook retries use backoff and the dead letter queue?")
    out = run("UserPromptSubmit", payload=question)
    assert store.ids["webhook"][:12] in context_of(out)
    gemini_release = {"tool_name": "run_shell_command", "tool_input": {"command": "mnemo-mcp release 3"}}
    denied = run("--client", "gemini", "BeforeTool", payload=gemini_release)
    assert json.loads(denied.stdout)["decision"] == "deny"
    assert not Path(env["MNEMO_HOOK_LOG"]).exists()


def test_the_quick_start_finds_mnemo_mcp_through_site_when_its_recorded_folder_is_gone(tmp_path):
    from mnemo_mcp.installers.hook_start import FLAGS, boot

    code = boot(str(tmp_path / "gone"), "import mnemo_mcp;print(mnemo_mcp.__file__)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # as installed, not this checkout
    done = subprocess.run([sys.executable, *FLAGS, code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(os.path.join("mnemo_mcp", "__init__.py"))
