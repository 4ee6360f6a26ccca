"""End to end through the REAL Claude Code CLI: `claude -p` runs its own agent loop, hooks and
MCP client against a scripted Messages API endpoint (tests/claude_cli/endpoint.py), with mnemo
installed as a user installs it (`mnemo-mcp install claude --scope user`, tests/claude_cli/driver.py).

Skipped when no CLI is found (MNEMO_CLAUDE_BIN, else `claude` on PATH); a failure instead when
MNEMO_REQUIRE_CLAUDE=1 (CI installs the CLI and sets it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from claude_cli.driver import ClaudeSandbox, claude_bin, claude_required, missing_reason
from claude_cli.endpoint import Request, ScriptedEndpoint, bash, tool_use

pytestmark = pytest.mark.slow

WEBHOOK = "Webhook retries: use exponential backoff starting at 2 seconds and keep failed payloads in the dead letter queue."
OTHERS = [
    "Deploys go through the GitHub Actions workflow deploy.yml on the main branch.",
    "Postgres migrations must be reversible: every upgrade has a downgrade.",
    "The cache TTL for user sessions is fifteen minutes.",
    "Use ruff for lint and formatting, line length 120.",
]
# Shares the memory's words: the hooks of today inject by keyword (BM25) with a 0.5 floor.
PROMPT_1 = "Our webhook retries keep failing; should we use exponential backoff and a dead letter queue?"
PROMPT_2 = "thanks, that worked"
# How the CLI's debug log records a hook run: "Hooks: PostToolUse:Bash [mnemo-mcp hook PostToolUse] finished with status 0 (30ms)".
HOOK_RUN = re.compile(r"Hooks: (\w+)(?::\S+)? \[[^\]]*mnemo-mcp hook \w+\] finished with status (\d+)")
ANSWER_1 = ("The webhook retries now use exponential backoff starting at 2 seconds, and failed payloads "
            "go to the dead letter queue. make test passes.")


def _claude() -> str:
    """The CLI to drive; skips without one, fails instead when MNEMO_REQUIRE_CLAUDE=1."""
    found = claude_bin()
    if not found:
        if claude_required():
            pytest.fail(f"MNEMO_REQUIRE_CLAUDE=1 but {missing_reason()}")
        pytest.skip(missing_reason())
    return found


def _injected(req: Request) -> str:
    """The UserPromptSubmit hook's additional context as the CLI showed it to the model."""
    text = req.text()
    i = text.find("UserPromptSubmit hook additional context:")
    return text[i:] if i >= 0 else ""


@pytest.mark.parametrize("scope", ["user", "project"])
def test_a_session_through_the_real_cli(tmp_path: Path, scope: str) -> None:
    claude = _claude()
    seen: dict[str, object] = {}

    def run_tests_first(req: Request):
        seen["injected"] = _injected(req)
        return bash("make test", "Run the tests")

    def fix_then_rerun(req: Request):
        seen["first_run"] = req.tool_results()
        sb.set_fixed(True)  # "the model edited the code": now `make test` passes
        return bash("make test", "Run the tests again")

    def load_mnemo_read(req: Request):
        seen["second_run"] = req.tool_results()
        return tool_use("ToolSearch", query="select:mcp__mnemo__memory_read")

    def call_mnemo_read(req: Request):
        seen["tool_search"] = req.tool_results()
        seen["tools_after_search"] = req.tool_names
        return tool_use("mcp__mnemo__memory_read", query="webhook retries exponential backoff", top_k=3)

    def answer(req: Request):
        seen["memory_read"] = req.tool_results()
        return ANSWER_1

    script = [run_tests_first, fix_then_rerun, load_mnemo_read, call_mnemo_read, answer]
    with ScriptedEndpoint(script, record_path=tmp_path / "requests.jsonl") as ep:
        sb = ClaudeSandbox.create(tmp_path, ep, claude=claude, scope=scope)

        # (a) a store with a few memories, written with the CLI against the same MNEMO_DB.
        memory_id = json.loads(sb.mnemo("--json", "write", WEBHOOK).stdout)["id"]
        for text in OTHERS:
            sb.mnemo("write", text)
        before = sb.mnemo_json("quality", memory_id)["valence"]

        # (b) prompt 1: the memory is injected, the model runs the failing then passing tests.
        first = sb.prompt(PROMPT_1)
        assert first.ok, first.describe()
        assert first.text == ANSWER_1
        assert ep.errors == [] and ep.remaining == 0, (ep.errors, ep.remaining)
        injected = seen["injected"]
        assert WEBHOOK in injected, f"the memory did not reach the model; first request:\n{ep.main_requests[0].text()[-3000:]}"
        assert memory_id[:12] in injected
        read_id = re.search(r"read_id (\w+)", injected)
        assert read_id, injected
        # The tests really ran in the project, failing then passing.
        assert "1 failed" in seen["first_run"][0]["content"] and seen["first_run"][0]["is_error"]
        assert "Exit code 2" in seen["first_run"][0]["content"]
        assert "1 passed" in seen["second_run"][0]["content"] and not seen["second_run"][0]["is_error"]
        # The MCP server started by the CLI answered from the same MNEMO_DB.
        assert "mcp__mnemo__memory_read" in seen["tool_search"][0]["content"], seen["tool_search"]
        assert "mcp__mnemo__memory_read" in seen["tools_after_search"]
        assert memory_id in seen["memory_read"][0]["content"], seen["memory_read"]
        after_first = sb.mnemo_json("quality", memory_id)["valence"]

        # (c) prompt 2 in the same session: the user's thanks credits the memory.
        ep.push("Glad it helped.")
        second = sb.prompt(PROMPT_2, resume=first.session_id)
        assert second.ok, second.describe()
        assert second.session_id == first.session_id
        assert ep.errors == [] and ep.remaining == 0, (ep.errors, ep.remaining)
        after_second = sb.mnemo_json("quality", memory_id)["valence"]

    # Only the user's reaction is asserted: how the failing and passing test runs in between move
    # the valence is the hooks' policy, not what this test checks.
    assert after_second > after_first, (before, after_first, after_second)
    assert sb.hook_log_text() == "", sb.hook_log_text()
    # Every mnemo hook the CLI ran exited 0, and each event we install ran (the debug log names each run).
    runs = [found for run in (first, second) for found in HOOK_RUN.findall(run.debug())]
    assert runs and all(status == "0" for _, status in runs), runs
    events = {event for event, _ in runs}
    assert {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"} <= events, events
