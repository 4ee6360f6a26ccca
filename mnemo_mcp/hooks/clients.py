"""Other clients' hook events in the shapes the handlers know (Claude Code's), and the handlers'
output back in each client's shape: one handler per meaning, one translation per client. Read
from the payloads the real CLIs sent (tests/fixtures/*_hook_payloads.json). Standard library only.

| meaning | Claude Code | Gemini CLI | Codex CLI |
| --- | --- | --- | --- |
| session start | SessionStart | SessionStart | SessionStart |
| a prompt | UserPromptSubmit | BeforeAgent | UserPromptSubmit |
| before a shell command | PreToolUse | BeforeTool | PreToolUse |
| after a tool | PostToolUse / PostToolUseFailure | AfterTool (failures too) | PostToolUse (failures too) |
| end of the turn | Stop | AfterAgent | Stop |

opencode has plugins, not command hooks: mnemo's plugin passes its `chat.message`,
`tool.execute.before`/`after` and `session.created`/`session.idle` on in Claude Code's field names.
"""

from __future__ import annotations

import os

from . import quickjson

TYPE_CHECKING = False  # `typing` is for checkers only: a hook process does not pay its import
if TYPE_CHECKING:
    from typing import Any

CLIENTS = ("claude", "gemini", "codex", "opencode")
# Our events: Claude Code's names (hooks.events.EVENTS).
OUR_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "SessionStart", "Stop")
# The client's event -> ours.
EVENTS: dict[str, dict[str, str]] = {
    "gemini": {
        "SessionStart": "SessionStart",
        "BeforeAgent": "UserPromptSubmit",
        "BeforeTool": "PreToolUse",
        "AfterTool": "PostToolUse",
        "AfterAgent": "Stop",
    },
    "codex": {e: e for e in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")},
    # opencode's plugin hooks and bus events, as mnemo's plugin (installers/opencode_plugin.js) passes them on.
    "opencode": {
        "session.created": "SessionStart",
        "chat.message": "UserPromptSubmit",
        "tool.execute.before": "PreToolUse",
        "tool.execute.after": "PostToolUse",
        "session.idle": "Stop",
    },
}
# What each client's tools are called in Claude Code's terms.
GEMINI_TOOLS = {"run_shell_command": "Bash", "replace": "Edit", "write_file": "Write"}
LABELS = {"claude": "claude-code", "gemini": "gemini-cli", "codex": "codex", "opencode": "opencode"}
# Compiled where used (re caches them): Claude Code's hooks, translated by nothing, import no `re`.
_HOOK_CONTEXT = r"(?s)^\s*<hook_context>.*?</hook_context>\s*"
_UNTRUSTED = r"(?s)^\s*<untrusted_context>\n?(.*?)\n?</untrusted_context>\s*$"
_GEMINI_EXIT = r"(?m)^Exit Code: (-?\d+)$"
_GEMINI_NOISE = r"(?m)^(Exit Code: -?\d+|Process Group PGID: \d+)$\n?"
ROLLOUT_BYTES = 1 << 20  # of a Codex rollout's end searched for a command's exit code


def known_events(client: str) -> tuple[str, ...]:
    return OUR_EVENTS if client == "claude" else tuple(EVENTS[client])


def to_ours(client: str, event: str, payload: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(our event, the payload in Claude Code's shape), or None when the event says nothing we
    can use (a Codex command whose exit code cannot be found)."""
    if client == "claude":
        return event, payload
    if client not in EVENTS or event not in EVENTS[client]:
        raise ValueError(f"unknown {client} hook event {event!r}; known: {', '.join(EVENTS.get(client, ()))}")
    ours = EVENTS[client][event]
    # Their transcripts are not Claude Code's: the handlers read none, and get what they need here.
    p = {k: v for k, v in payload.items() if k != "transcript_path"}
    p["client"] = LABELS[client]
    if client == "gemini":
        return _from_gemini(ours, p)
    if client == "opencode":
        return _from_opencode(ours, p)
    return _from_codex(ours, p, payload.get("transcript_path"))


def _call_id(client: str, p: dict[str, Any]) -> str:
    """Gemini gives a tool call no id: one from what identifies it (its session, time and input)."""
    import hashlib  # here: OpenSSL's loading costs every hook process a few ms otherwise
    import json

    seed = json.dumps([p.get("session_id"), p.get("timestamp"), p.get("tool_name"), p.get("tool_input")], default=str)

    return f"{client}-{hashlib.sha256(seed.encode()).hexdigest()[:16]}"


def _from_gemini(ours: str, p: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    import re

    if ours == "UserPromptSubmit":
        # In -p mode the prompt starts with the SessionStart hook's own context: not the user's words.
        p["prompt"] = re.sub(_HOOK_CONTEXT, "", str(p.get("prompt") or ""), count=1)
    if ours == "Stop" and isinstance(p.get("prompt_response"), str):
        p["last_assistant_message"] = p["prompt_response"]
    tool = p.get("tool_name")
    if isinstance(tool, str):
        context = p.get("mcp_context") if isinstance(p.get("mcp_context"), dict) else {}
        if context.get("server_name") and context.get("tool_name"):
            p["tool_name"] = f"mcp__{context['server_name']}__{context['tool_name']}"
        elif m := re.match(r"^mcp_([^_]+)_(.+)$", tool):
            p["tool_name"] = f"mcp__{m.group(1)}__{m.group(2)}"
        else:
            p["tool_name"] = GEMINI_TOOLS.get(tool, tool)
        p.setdefault("tool_use_id", _call_id("gemini", p))
    if ours != "PostToolUse":
        return ours, p
    response = p.get("tool_response") if isinstance(p.get("tool_response"), dict) else {}
    content = response.get("llmContent")
    if p["tool_name"] == "Bash" and isinstance(content, str):
        # The shell's result is text only: "Output: ...\nExit Code: 3\nProcess Group PGID: N" (no
        # Exit Code line on success).
        text = _unwrap(content)
        code = re.search(_GEMINI_EXIT, text)
        output = re.sub(_GEMINI_NOISE, "", text.removeprefix("Output: ")).rstrip("\n")
        p["tool_response"] = {"stdout": output, "stderr": "", "interrupted": False}
        if code and int(code.group(1)) != 0:
            p["error"] = f"Exit code {code.group(1)}\n{output}"
            return "PostToolUseFailure", p
    elif isinstance(content, list):
        p["tool_response"] = {"content": [{"type": "text", "text": _unwrap(str(c.get("text", "")))} for c in content]}
    return ours, p


def _from_opencode(ours: str, p: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    prompt = p.get("prompt")
    if isinstance(prompt, str) and len(prompt) > 1 and prompt[0] == prompt[-1] == '"':
        p["prompt"] = prompt[1:-1]  # `opencode run "a prompt"` hands the model its argument quoted
    tool = p.get("tool_name")
    if isinstance(tool, str):
        # Its MCP tools are <server>_<tool>; only our server's name is known for sure.
        mcp = "mcp__mnemo__" + tool.removeprefix("mnemo_") if tool.startswith("mnemo_") else tool
        p["tool_name"] = "Bash" if tool == "bash" else mcp
    if ours != "PostToolUse" or p.get("tool_name") != "Bash":
        return ours, p
    response = p.get("tool_response") if isinstance(p.get("tool_response"), dict) else {}
    code = (response.get("metadata") or {}).get("exit")
    if not isinstance(code, int) or isinstance(code, bool):
        return None  # killed or timed out: no result
    output = response.get("output") if isinstance(response.get("output"), str) else ""
    p["tool_response"] = {"stdout": output, "stderr": "", "exit_code": code}
    if code != 0:
        p["error"] = f"Exit code {code}\n{output}"
        return "PostToolUseFailure", p
    return ours, p


def _unwrap(text: str) -> str:
    import re

    m = re.match(_UNTRUSTED, text)
    return m.group(1) if m else text


def _from_codex(ours: str, p: dict[str, Any], rollout: Any) -> tuple[str, dict[str, Any]] | None:
    if ours != "PostToolUse" or p.get("tool_name") != "Bash":
        return ours, p
    # Codex's PostToolUse carries a command's output only, for failures too; its exit code is in
    # the session's rollout, under the call's id.
    output = p.get("tool_response")
    code = exit_code(rollout, p.get("tool_use_id"))
    if code is None:
        return None
    p["tool_response"] = {"stdout": output if isinstance(output, str) else "", "stderr": "", "exit_code": code}
    if code != 0:
        p["error"] = f"Exit code {code}\n{p['tool_response']['stdout']}"
        return "PostToolUseFailure", p
    return ours, p


def exit_code(rollout: Any, call_id: Any) -> int | None:
    """The exit code Codex's rollout (JSON lines) records for a shell call, the latest first."""
    if not isinstance(rollout, str) or not isinstance(call_id, str) or not call_id:
        return None
    try:
        with open(rollout, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - ROLLOUT_BYTES))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if call_id not in line:
            continue
        try:
            found = _find_code(quickjson.loads(line), call_id)
        except ValueError:
            continue
        if found is not None:
            return found
    return None


def _find_code(node: Any, call_id: str) -> int | None:
    if isinstance(node, dict):
        code = node.get("exit_code")
        if call_id in (node.get("call_id"), node.get("id")) and isinstance(code, int) and not isinstance(code, bool):
            return code
        for v in node.values():
            if (found := _find_code(v, call_id)) is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            if (found := _find_code(v, call_id)) is not None:
                return found
    return None


def to_theirs(client: str, event: str, output: str | None) -> str | None:
    """The handlers' output (Claude Code's JSON) as the client `client` reads it for its `event`."""
    if client == "claude" or not output:
        return output
    data = quickjson.loads(output)
    specific = data.get("hookSpecificOutput") if isinstance(data, dict) else None
    if not isinstance(specific, dict):
        return output
    if client == "gemini" and specific.get("permissionDecision") == "deny":
        return quickjson.dumps({"decision": "deny", "reason": specific.get("permissionDecisionReason", "")})
    specific["hookEventName"] = event
    return quickjson.dumps(data)
