"""End to end through the REAL Gemini CLI, Codex CLI and opencode, each driven offline against a
scripted model API (tests/agents_cli/endpoint.py) with mnemo installed as a user installs it
(`mnemo-mcp install gemini|codex|opencode`, tests/agents_cli/driver.py): connected (the request
declares mnemo's tools and carries its instructions), a tool round trip through the MCP server,
and, through each one's hooks (opencode's: mnemo's plugin), a memory injected into the request, the checks' results and the
user's reaction recorded as an outcome, all in the one store.

Skipped when an agent is not installed; a failure instead with MNEMO_REQUIRE_AGENTS=1 (CI).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents_cli.driver import AgentSandbox, agent_bin, agents_required, missing_reason
from agents_cli.endpoint import AgentEndpoint, Request, call, say

pytestmark = pytest.mark.slow

MEMORY = "The demo project builds with make; run make test before committing."
PROMPT = "How do I build the demo project with make?"
# Follows the memory, as a model that used it would: the user's thanks are credited by how closely.
ANSWER = "The demo project builds with make: run make test before committing. make test passes."
WRITTEN = "Release notes live in docs/RELEASES.md."
SHELL = {"gemini": ("run_shell_command", "command"), "codex": ("exec_command", "cmd"), "opencode": ("bash", "command")}
# How each client names itself when it connects (the provenance of its model's writes).
CLIENT_NAMES = {"gemini": "gemini-cli-mcp-client", "codex": "codex-mcp-client", "opencode": "opencode"}
INSTRUCTIONS = "memory_read"  # mnemo's server instructions name its tools


def _binary(agent: str) -> str:
    found = agent_bin(agent)
    if not found:
        if agents_required():
            pytest.fail(f"MNEMO_REQUIRE_AGENTS=1 but {missing_reason(agent)}")
        pytest.skip(missing_reason(agent))
    return found


def _shell(agent: str, command: str):
    name, key = SHELL[agent]
    return call(name, **{key: command}, **({} if agent == "codex" else {"description": "Run the tests"}))


def _session(tmp_path: Path, agent: str, store: Path | None = None) -> None:
    seen: dict[str, Request] = {}

    def first(req: Request):
        seen["first"] = req
        return [call("memory_read", query="how to build the demo project")]

    def after_read(req: Request):
        seen["read"] = req
        return [_shell(agent, "make test")]

    script = [first, after_read, [call("memory_write", content=WRITTEN)], [say(ANSWER)]]
    with AgentEndpoint(script) as ep:
        sb = AgentSandbox.create(tmp_path, agent, _binary(agent), ep, store)
        memory_id = sb.mnemo_json("write", MEMORY)["id"]
        run = sb.prompt(PROMPT)
        assert run.returncode == 0, run.describe()
        assert ep.errors == [] and ep.remaining == 0, (ep.errors, ep.remaining, run.describe())

        # Connected: the first request declares mnemo's tools, with its instructions.
        tools = seen["first"].tools
        assert any(t.endswith("memory_read") for t in tools) and any(t.endswith("memory_write") for t in tools), tools
        assert INSTRUCTIONS in seen["first"].text()
        # The round trip: the server the CLI started answered from the same store.
        assert memory_id in seen["read"].text()
        written = [m for m in sb.mnemo_json("list")["items"] if m["content"] == WRITTEN]
        assert len(written) == 1, sb.mnemo_json("list")
        exported = sb.mnemo("export").stdout
        assert f'"client": "{CLIENT_NAMES[agent]}"' in exported, exported[:2000]
        # Injected: the prompt's hook put the memory in front of the model before any tool ran.
        assert MEMORY in seen["first"].text() and memory_id[:12] in seen["first"].text()
        before = sb.mnemo_json("quality", memory_id)["valence"]

        # The user's reaction, in the same session, is an outcome for what the turn recalled.
        ep.push([say("Glad it helped.")])
        again = sb.prompt("thanks, that worked", resume=True)
        assert again.returncode == 0, again.describe()
        assert ep.errors == [] and ep.remaining == 0, (ep.errors, again.describe())
        after = sb.mnemo_json("quality", memory_id)
    assert after["valence"] > before, after
    assert sb.hook_log_text() == "", sb.hook_log_text()


def test_gemini_cli_connects_recalls_injects_and_records_an_outcome(tmp_path: Path) -> None:
    _session(tmp_path, "gemini")


def test_codex_cli_connects_recalls_injects_and_records_an_outcome(tmp_path: Path) -> None:
    _session(tmp_path, "codex")


def test_opencode_connects_recalls_injects_and_records_an_outcome_through_its_plugin(tmp_path: Path) -> None:
    _session(tmp_path, "opencode")


def test_what_one_agent_learned_is_recalled_by_another_from_the_same_store(tmp_path: Path) -> None:
    store = tmp_path / "shared.db"
    _session(tmp_path / "gemini", "gemini", store)  # the user's thanks credit the memory there
    seen: list[Request] = []
    with AgentEndpoint([lambda req: seen.append(req) or [say("Use make.")]]) as ep:
        sb = AgentSandbox.create(tmp_path / "codex", "codex", _binary("codex"), ep, store)
        run = sb.prompt(PROMPT)
        assert run.returncode == 0 and ep.errors == [], (ep.errors, run.describe())
    injected = seen[0].text()
    line = next((ln for ln in injected.splitlines() if MEMORY[:40] in ln), "")
    # Codex's model is told what happened when Gemini's session used it.
    assert "(worked before" in line, injected[-3000:]
