"""`mnemo-mcp hook EVENT`: the process Claude Code starts for each hook event.

It imports only the standard library until it knows there is work: most tool events are not
checks and end here in a few milliseconds. Then it asks an MCP server of the same database to
handle the event (the server has the embedding model loaded, so the prompt is matched by
meaning); when none is ready within MNEMO_HOOK_CONNECT_MS it handles the event itself, matching
by keywords. A hook never breaks the session: any error goes to MNEMO_HOOK_LOG and the hook
exits 0 with no output.
"""

from __future__ import annotations

import os
import sys

from .. import paths
from . import clients
from . import quickjson as json  # json.loads and json.dumps without importing re (quickjson.py)

TYPE_CHECKING = False  # `typing` is for checkers only: a hook process does not pay its import
if TYPE_CHECKING:
    from typing import Any

_OFF = ("0", "false", "no", "off")


class ServerFailed(RuntimeError):
    """The server took the event and failed on it (its error is in the hook log)."""


def _extra_checks(env: dict[str, str]) -> tuple[str, ...] | None:
    raw = env.get("MNEMO_EXTRA_CHECK_COMMANDS")
    if not raw:
        return ()
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return tuple(value) if isinstance(value, list) and all(isinstance(p, str) for p in value) else None


def worth_handling(event: str, payload: dict[str, Any], env: dict[str, str]) -> bool:
    """False for events that change nothing, decided without the database: a Bash command that
    is not a check, a tool that is neither Bash nor memory_read, a read that returned nothing."""
    if event not in ("PostToolUse", "PostToolUseFailure"):
        return True
    from . import events  # tool events only: a prompt does not pay for it (nor for core.checks)

    tool = payload.get("tool_name") or ""
    if tool == "Bash":
        from ..core import checks

        extra = _extra_checks(env)
        if extra is None:
            return True  # a malformed setting: let the full path report it
        command = (payload.get("tool_input") or {}).get("command") or ""
        # A command that succeeded may also be a change and then a check (see handlers.is_check).
        judged = checks.passed_check if event == "PostToolUse" else checks.check_kind
        if judged(command, (*checks.DEFAULT_CHECKS, *extra)) is not None:
            return True
        # Any other failing command: its error may be one a captured case answers.
        return event == "PostToolUseFailure" and env.get("MNEMO_CAPTURE", "").strip().lower() != "off"
    if event == "PostToolUse" and tool.startswith("mcp__") and tool.endswith("__memory_read"):
        result = events.read_result(payload.get("tool_response"))
        return bool(result and result.get("items"))
    if event == "PostToolUse" and tool in events.EDIT_TOOLS:
        return True  # what an edit carries out tells which memory was followed
    return False


def guard(payload: dict[str, Any]) -> str | None:
    """PreToolUse: deny a shell command that would do what only a person may (release a
    quarantined note, start the dashboard), decided here without the database or the server."""
    from ..consent import blocked_command

    tool_input = payload.get("tool_input") or {}
    command = tool_input.get("command") or tool_input.get("cmd") if isinstance(tool_input, dict) else None
    if isinstance(command, list):  # Codex's exec_command may pass an argv
        command = " ".join(map(str, command))
    why = blocked_command(command) if isinstance(command, str) else None
    if why is None:
        return None
    decision = {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": why}
    return json.dumps({"hookSpecificOutput": decision})


def _cwd(payload: dict[str, Any]) -> str:
    return payload.get("cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()


def _ms(env: dict[str, str], name: str, default: int) -> float:
    """A duration setting in seconds (a malformed value: the default; Settings reports it)."""
    try:
        return max(int(env.get(name, default)), 0) / 1000
    except ValueError:
        return default / 1000


def _via_server(event: str, payload: dict[str, Any], env: dict[str, str]) -> tuple[bool, str | None]:
    if env.get("MNEMO_HOOK_SERVER", "").strip().lower() in _OFF:
        return False, None
    budget = _ms(env, "MNEMO_HOOK_CONNECT_MS", paths.HOOK_CONNECT_MS)
    wait = _ms(env, "MNEMO_HOOK_MODEL_WAIT_MS", paths.HOOK_MODEL_WAIT_MS)
    from . import channel  # only for events worth handling: most tool events end before this

    request = {"event": event, "payload": payload, "env": env, "cwd": _cwd(payload)}
    result = channel.ask(paths.db_path(env), request, budget_s=budget, wait_s=wait)
    if result is None:
        return False, None
    if not result.get("ok"):
        raise ServerFailed(str(result.get("error") or "unknown error"))
    output = result.get("output")
    return True, output if isinstance(output, str) else None


def _by_itself(event: str, payload: dict[str, Any], env: dict[str, str]) -> str | None:
    """The event handled in this process, by keywords (no model)."""
    import logging

    from ..config import Settings
    from ..project import scoped
    from ..service import MemoryService
    from .handlers import run

    logging.getLogger("mnemo_mcp").setLevel(logging.ERROR)  # stderr is Claude Code's to show
    settings = scoped(Settings(), _cwd(payload))
    if env.get("MNEMO_CLIENT"):
        settings = settings.model_copy(update={"client": env["MNEMO_CLIENT"]})
    svc = MemoryService(settings)
    try:
        return run(event, payload, settings, svc, semantic=False)
    finally:
        svc.close()


def handle(event: str, raw: str, env: dict[str, str] | None = None, client: str = "claude") -> str | None:
    """One event of `client` from its raw stdin; returns what to print (None: nothing)."""
    env = paths.mnemo_env() if env is None else env
    if client not in clients.CLIENTS:
        raise ValueError(f"unknown client {client!r}; known: {', '.join(clients.CLIENTS)}")
    if event not in clients.known_events(client):
        raise ValueError(f"unknown {client} hook event {event!r}; known: {', '.join(clients.known_events(client))}")
    payload = json.loads(raw) if raw.strip() else {}
    if not isinstance(payload, dict):
        raise ValueError("hook input must be a JSON object")
    translated = clients.to_ours(client, event, payload)
    if translated is None:
        return None
    ours, payload = translated
    if client != "claude":
        # Whose hook this is, for what the handlers learn and store (provenance says which client).
        env = {**env, "MNEMO_CLIENT": clients.LABELS[client]}
    if ours == "PreToolUse":
        return clients.to_theirs(client, event, guard(payload))
    if not worth_handling(ours, payload, env):
        return None
    handled, output = _via_server(ours, payload, env)
    return clients.to_theirs(client, event, output if handled else _by_itself(ours, payload, env))


def _log_failure(env: dict[str, str], event: str) -> None:
    import traceback
    from datetime import UTC, datetime

    try:
        path = paths.hook_log_path(env)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            f.write(f"{stamp} {event}: {traceback.format_exc()}\n")
    except Exception:  # nowhere to log: stay silent rather than break the session
        pass


def main(event: str, client: str = "claude") -> int:
    """Always exits 0; prints only a valid hook output."""
    env = paths.mnemo_env()
    try:
        out = handle(event, sys.stdin.read(), env, client)
    except BaseException:  # noqa: BLE001 - a hook must never break the user's session
        _log_failure(env, event)
        return 0
    if out:
        sys.stdout.write(out + "\n")
    return 0
