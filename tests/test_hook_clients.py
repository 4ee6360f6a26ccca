"""Gemini CLI's and Codex CLI's hook events, in the shapes the real CLIs sent (tests/fixtures),
reach the same handlers as Claude Code's and get their answers in each client's own shape: one
handler per meaning, one translation per client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.hooks import clients, events
from mnemo_mcp.service import MemoryService

FIXTURES = Path(__file__).parent / "fixtures"
GEMINI = json.loads((FIXTURES / "gemini_cli_0.61.0_hook_payloads.json").read_text())
CODEX = json.loads((FIXTURES / "codex_0.171.0_hook_payloads.json").read_text())
MEMORY = "The demo project builds with make; run make test before committing."


def test_gemini_before_agent_is_our_prompt_without_the_session_start_context_it_carries() -> None:
    event, payload = clients.to_ours("gemini", "BeforeAgent", GEMINI["BeforeAgent"])
    assert event == "UserPromptSubmit"
    assert payload["prompt"] == "Remember how to build, then say hello."
    assert payload["client"] == "gemini-cli" and "transcript_path" not in payload


def test_gemini_shell_results_become_a_pass_or_a_failure_with_its_exit_code() -> None:
    event, ok = clients.to_ours("gemini", "AfterTool", GEMINI["AfterTool-run_shell_command"])
    assert event == "PostToolUse" and ok["tool_name"] == "Bash"
    assert ok["tool_response"]["stdout"] == "hello-from-shell\nREADME.md" and "error" not in ok
    event, failed = clients.to_ours("gemini", "AfterTool", GEMINI["AfterTool-run_shell_command-exit3"])
    assert event == "PostToolUseFailure" and failed["error"] == "Exit code 3\nfailing"
    # Gemini gives no call id: one is made from the call, stable for the same payload.
    again = clients.to_ours("gemini", "AfterTool", GEMINI["AfterTool-run_shell_command-exit3"])[1]
    assert failed["tool_use_id"].startswith("gemini-") and failed["tool_use_id"] == again["tool_use_id"]
    assert failed["tool_use_id"] != ok["tool_use_id"]


def test_gemini_memory_read_result_is_read_through_its_untrusted_context_wrapper() -> None:
    event, payload = clients.to_ours("gemini", "AfterTool", GEMINI["AfterTool-mcp-memory_read"])
    assert event == "PostToolUse" and payload["tool_name"] == "mcp__mnemo__memory_read"
    result = events.read_result(payload["tool_response"])
    assert result and result["read_id"] == "44c842e916ec2b35" and events.recalled_items(result)


def test_gemini_after_agent_carries_the_answer_as_stop_does() -> None:
    event, payload = clients.to_ours("gemini", "AfterAgent", GEMINI["AfterAgent"])
    assert event == "Stop" and payload["last_assistant_message"] == "Done: read and saved a memory, ran two commands."


def test_codex_shell_exit_code_comes_from_its_rollout_and_without_it_nothing_is_claimed(tmp_path: Path) -> None:
    payload = dict(CODEX["PostToolUse-Bash-exit3"])
    assert clients.to_ours("codex", "PostToolUse", payload) is None  # the rollout is not on this machine
    rollout = tmp_path / "rollout.jsonl"
    item = {"type": "CommandExecution", "id": payload["tool_use_id"], "status": "failed", "exit_code": 3}
    rollout.write_text(json.dumps({"type": "event_msg", "payload": {"type": "item_completed", "item": item}}) + "\n")
    event, ours = clients.to_ours("codex", "PostToolUse", {**payload, "transcript_path": str(rollout)})
    assert event == "PostToolUseFailure" and ours["error"] == "Exit code 3\nfailing\n"
    assert ours["tool_response"]["exit_code"] == 3


def test_codex_memory_read_and_stop_need_no_translation_beyond_the_client() -> None:
    event, payload = clients.to_ours("codex", "PostToolUse", CODEX["PostToolUse-mcp-memory_read"])
    assert event == "PostToolUse" and events.read_result(payload["tool_response"])["read_id"] == "5d2a8960b41b4adc"
    assert clients.to_ours("codex", "Stop", CODEX["Stop"])[1]["last_assistant_message"].startswith("Done")


def test_answers_carry_the_clients_event_name_and_gemini_gets_its_own_deny() -> None:
    ours = json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "x"}})
    assert (
        json.loads(clients.to_theirs("gemini", "BeforeAgent", ours))["hookSpecificOutput"]["hookEventName"]
        == "BeforeAgent"
    )
    failure = json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": "y"}})
    assert (
        json.loads(clients.to_theirs("codex", "PostToolUse", failure))["hookSpecificOutput"]["hookEventName"]
        == "PostToolUse"
    )
    deny = {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "R"}
    assert json.loads(clients.to_theirs("gemini", "BeforeTool", json.dumps({"hookSpecificOutput": deny}))) == {
        "decision": "deny",
        "reason": "R",
    }


def test_an_event_the_client_does_not_have_is_refused_with_the_ones_it_has() -> None:
    with pytest.raises(ValueError, match="known: SessionStart, BeforeAgent"):
        clients.to_ours("gemini", "PostToolUse", {})


def _hook(env: dict[str, str], client: str, event: str, payload: dict) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "mnemo_mcp", "hook", "--client", client, event]
    return subprocess.run(argv, input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60)


def test_a_gemini_prompt_gets_the_memory_and_what_it_stores_says_gemini(env, project: Path) -> None:
    svc = MemoryService(Settings(db=env["MNEMO_DB"], project=project.name), HashEmbedder())
    memory_id = svc.write(MEMORY).id
    svc.close()
    payload = {**GEMINI["BeforeAgent"], "cwd": str(project), "prompt": "How do I build the demo project with make?"}
    p = _hook(env, "gemini", "BeforeAgent", payload)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    out = json.loads(p.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "BeforeAgent" and MEMORY in out["additionalContext"]
    assert memory_id[:12] in out["additionalContext"]


def test_a_gemini_shell_command_that_only_a_person_may_run_is_denied_in_geminis_words(env, project: Path) -> None:
    payload = {**GEMINI["BeforeTool-run_shell_command"], "cwd": str(project)}
    payload["tool_input"] = {"command": "mnemo-mcp release 1a2b3c", "description": "Release it"}
    p = _hook(env, "gemini", "BeforeTool", payload)
    out = json.loads(p.stdout)
    assert out["decision"] == "deny" and "a person's decision" in out["reason"], out
    harmless = {**payload, "tool_input": {"command": "make test", "description": "Test"}}
    assert _hook(env, "gemini", "BeforeTool", harmless).stdout == ""


OPENCODE = json.loads((FIXTURES / "opencode_1.18.33_hook_payloads.json").read_text())


def _as_plugin_sends(name: str) -> dict:
    """A tool.execute.after payload as mnemo's plugin builds it from opencode's (input, output)."""
    raw = OPENCODE[name]
    i = raw["input"]
    return {
        "session_id": i["sessionID"],
        "tool_name": i["tool"],
        "tool_input": i["args"],
        "tool_use_id": i["callID"],
        "tool_response": raw["output"],
    }


def test_opencode_shell_results_carry_their_exit_code_and_its_mcp_tools_are_ours() -> None:
    event, ok = clients.to_ours("opencode", "tool.execute.after", _as_plugin_sends("tool.execute.after-bash"))
    assert event == "PostToolUse" and ok["tool_name"] == "Bash" and ok["tool_response"]["exit_code"] == 0
    event, failed = clients.to_ours("opencode", "tool.execute.after", _as_plugin_sends("tool.execute.after-bash-exit3"))
    assert event == "PostToolUseFailure" and failed["error"] == "Exit code 3\nfailing\n"
    event, read = clients.to_ours(
        "opencode", "tool.execute.after", _as_plugin_sends("tool.execute.after-mnemo_memory_read")
    )
    assert read["tool_name"] == "mcp__mnemo__memory_read"
    assert events.read_result(read["tool_response"])["read_id"] == "c3868b4d933251ba"


def test_opencode_prompt_loses_the_quotes_opencode_run_adds() -> None:
    parts = OPENCODE["chat.message"]["output"]["parts"]
    payload = {"session_id": "ses_1", "prompt": "\n".join(p["text"] for p in parts)}
    event, ours = clients.to_ours("opencode", "chat.message", payload)
    assert event == "UserPromptSubmit" and ours["prompt"] == "Remember how to build."


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["hook", "Stop"], ("Stop", "claude")),
        (["hook", "--client", "gemini", "AfterTool"], ("AfterTool", "gemini")),
        (["hook", "--client", "nobody", "AfterTool"], None),  # the CLI says what is wrong
        (["hook", "--client", "codex"], None),
        (["hook", "--help"], None),
    ],
)
def test_the_launcher_takes_both_hook_command_forms_the_installers_write_without_the_cli(argv, expected):
    from mnemo_mcp.launcher import _hook_args

    assert _hook_args(argv) == expected


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@hypothesis_settings(max_examples=300, deadline=None)
@given(value=_JSON, space=st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_the_hooks_json_reads_and_writes_exactly_as_the_json_package(value, space):
    from mnemo_mcp.hooks import quickjson

    assert quickjson.dumps(value) == json.dumps(value)
    assert quickjson.dumps(value, compact=True) == json.dumps(value, separators=(",", ":"))
    text = space + json.dumps(value) + space
    assert repr(quickjson.loads(text)) == repr(json.loads(text))
    assert repr(quickjson.loads(text.encode())) == repr(json.loads(text.encode()))


@pytest.mark.parametrize("bad", ["", " ", "{", "[1,]", "1 2", "{'a': 1}", "\ufeff{}", "[1] x", b"\xff"])
def test_the_hooks_json_refuses_what_the_json_package_refuses(bad):
    from mnemo_mcp.hooks import quickjson

    with pytest.raises(ValueError):
        json.loads(bad)
    with pytest.raises(ValueError):
        quickjson.loads(bad)
