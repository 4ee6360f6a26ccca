"""Claude Code hooks: `mnemo-mcp hook EVENT` reads the event's JSON on stdin.

- UserPromptSubmit: scores the previous turn from the user's reaction (worked / failed /
  partial; unknown changes nothing), starts a new turn, and injects memories relevant to the
  prompt (under a token budget, nothing below the relevance floor).
- PostToolUse / PostToolUseFailure: a test, build, type-check or lint command's result credits
  or blames what was recalled; a `memory_read` by the model is noted as recalled this turn.
- SessionStart: a short digest of the project's most useful memories.
- Stop: how closely the assistant's answer followed each memory recalled in the turn (lexical
  alignment), so the reaction to the turn is credited by it; concept links move with it.

Each event is a fresh process, so nothing here loads the embedding model: prompts are matched
by keywords and learned signals (`read(keyword_only=True)`), which answers in milliseconds.
A hook never breaks the session: any error is logged to MNEMO_HOOK_LOG and the hook exits 0
with no output.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .config import Settings
from .core import checks, reactions

EVENTS = ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "SessionStart", "Stop")
RESPONSE_CHARS = 20_000  # of the answer compared with the recalled memories
QUERY_CHARS = 1000  # of a prompt used as the query: the ask is at the start, pasted logs follow
ITEM_CHARS = 400
_MEMORY_READ = re.compile(r"^mcp__.+__memory_read$")


def tokens(text: str) -> int:
    """A cheap token estimate (about four characters per token for English and code)."""
    return math.ceil(len(text) / 4)


def _service(settings: Settings, payload: dict[str, Any]):
    from .project import scoped
    from .service import MemoryService

    cwd = payload.get("cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    return MemoryService(scoped(settings, cwd))


def _digest(header: str, items: list[tuple[str, str, str]], budget: int) -> str | None:
    """`header` and one line per (id, label, content) while the budget lasts; None if empty."""
    lines = [header]
    used = tokens(header)
    for mid, label, content in items:
        flat = " ".join(content.split())
        if len(flat) > ITEM_CHARS:
            flat = flat[: ITEM_CHARS - 1] + "…"
        line = f"- [{mid[:12]}] ({label}) {flat}"
        cost = tokens(line) + 1
        if used + cost > budget:
            room = (budget - used - 1) * 4 - len(line) + len(flat)
            if room < 80:  # a stub of a memory helps nobody
                break
            line = line[: len(line) - len(flat)] + flat[: room - 1] + "…"
            cost = tokens(line) + 1
        lines.append(line)
        used += cost
    return "\n".join(lines) if len(lines) > 1 else None


def _context(event: str, text: str | None) -> str | None:
    if not text:
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}, ensure_ascii=False)


def on_prompt(settings: Settings, payload: dict[str, Any]) -> str | None:
    sid, prompt = payload["session_id"], payload.get("prompt") or ""
    svc = _service(settings, payload)
    try:
        reaction = reactions.classify(prompt)
        if reaction.label != reactions.UNKNOWN:
            outcome = {
                reactions.WORKED: settings.outcome_worked,
                reactions.FAILED: settings.outcome_failed,
                reactions.PARTIAL: settings.outcome_partial,
            }[reaction.label]
            svc.session_react(sid, reaction.label, outcome, reaction.cue)
        svc.session_turn(sid)
        query = prompt[:QUERY_CHARS]
        if settings.inject_tokens <= 0 or not query.strip():
            return None
        r = svc.read(
            query, top_k=settings.inject_top_k, min_relevance=settings.inject_min_relevance, keyword_only=True
        )
        if not r.items:
            return None
        svc.session_recall(sid, [it.id for it in r.items], read_id=r.read_id, query_concepts=r.query_concepts, source="inject")
        header = f"mnemo memories for this prompt (memory_feedback read_id {r.read_id}):"
        items = [(it.id, f"{it.tier}, valence {it.valence:+.2f}", it.content) for it in r.items]
        return _context("UserPromptSubmit", _digest(header, items, settings.inject_tokens))
    finally:
        svc.close()


def _read_result(response: Any) -> dict[str, Any] | None:
    """The memory_read result inside a tool response, whatever the wrapping (structured
    content, a text block holding JSON, a JSON string)."""
    if isinstance(response, str):
        try:
            return _read_result(json.loads(response))
        except ValueError:
            return None
    if isinstance(response, dict):
        if isinstance(response.get("read_id"), str) and isinstance(response.get("items"), list):
            return response
        for key in ("structuredContent", "structured_content", "result", "content", "text"):
            found = _read_result(response.get(key)) if key in response else None
            if found:
                return found
    if isinstance(response, list):
        for part in response:
            found = _read_result(part)
            if found:
                return found
    return None


def on_tool(settings: Settings, payload: dict[str, Any], failed: bool) -> None:
    tool = payload.get("tool_name") or ""
    sid = payload["session_id"]
    if tool == "Bash":
        command = (payload.get("tool_input") or {}).get("command") or ""
        kind = checks.check_kind(command, (*checks.DEFAULT_CHECKS, *settings.extra_check_commands))
        if kind is None:
            return
        status = checks.outcome_of(payload.get("tool_response") if not failed else payload, failed)
        if status is None:
            return
        svc = _service(settings, payload)
        try:
            svc.session_check(sid, status, kind)
        finally:
            svc.close()
    elif _MEMORY_READ.match(tool) and not failed:
        result = _read_result(payload.get("tool_response"))
        if not result or not result["items"]:
            return
        ids = [it["id"] for it in result["items"] if isinstance(it, dict) and isinstance(it.get("id"), str)]
        svc = _service(settings, payload)
        try:
            svc.session_recall(
                sid, ids, read_id=result["read_id"], query_concepts=result.get("query_concepts"), source="memory_read"
            )
        finally:
            svc.close()


def on_session_start(settings: Settings, payload: dict[str, Any]) -> str | None:
    if settings.session_start_tokens <= 0 or settings.session_start_items <= 0:
        return None
    svc = _service(settings, payload)
    try:
        useful = [
            m
            for m in svc.top_memories(settings.session_start_items)
            if m["tier"] != "working" or m["quality"] >= 0.6 or m["valence"] >= 0.3
        ]
    finally:
        svc.close()
    if not useful:
        return None
    header = "mnemo: this project's most useful memories (search more with memory_read):"
    items = [(m["id"], f"{m['tier']}, valence {m['valence']:+.2f}", m["content"]) for m in useful]
    return _context("SessionStart", _digest(header, items, settings.session_start_tokens))


def last_answer(payload: dict[str, Any]) -> str:
    """The assistant's final answer of the turn: from the event when Claude Code includes it,
    else the text blocks of the assistant messages after the last user prompt in the transcript."""
    direct = payload.get("last_assistant_message")
    if isinstance(direct, str) and direct.strip():
        return direct
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not Path(path).is_file():
        return ""
    texts: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            if entry.get("type") == "user" and (isinstance(content, str) or any(
                isinstance(c, dict) and c.get("type") == "text" for c in (content or []))):
                texts = []  # a new prompt: the answer starts after it
            elif entry.get("type") == "assistant" and isinstance(content, list):
                texts += [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
    return "\n".join(t for t in texts if t)[-RESPONSE_CHARS:]


def on_stop(settings: Settings, payload: dict[str, Any]) -> None:
    answer = last_answer(payload)
    if not answer.strip():
        return
    svc = _service(settings, payload)
    try:
        svc.session_response(payload["session_id"], answer)
    finally:
        svc.close()


def run(event: str, raw: str, settings: Settings | None = None) -> str | None:
    """Handle one event; returns what to print on stdout (None: nothing)."""
    payload = json.loads(raw) if raw.strip() else {}
    if not isinstance(payload, dict):
        raise ValueError("hook input must be a JSON object")
    settings = settings or Settings()
    if event == "UserPromptSubmit":
        return on_prompt(settings, payload)
    if event in ("PostToolUse", "PostToolUseFailure"):
        on_tool(settings, payload, failed=event == "PostToolUseFailure")
        return None
    if event == "SessionStart":
        return on_session_start(settings, payload)
    if event == "Stop":
        on_stop(settings, payload)
        return None
    raise ValueError(f"unknown hook event {event!r}; known: {', '.join(EVENTS)}")


def _log_failure(settings: Settings | None, event: str) -> None:
    try:
        path = Path(settings.hook_log if settings else Settings().hook_log)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
            f.write(f"{stamp} {event}: {traceback.format_exc()}\n")
    except Exception:  # nowhere to log: stay silent rather than break the session
        pass


def main(event: str) -> int:
    """The `mnemo-mcp hook EVENT` command: always exits 0; prints only a valid hook output."""
    settings = None
    try:
        settings = Settings()
        logging.getLogger().setLevel(logging.ERROR)
        out = run(event, sys.stdin.read(), settings)
    except BaseException:  # noqa: BLE001 - a hook must never break the user's session
        _log_failure(settings, event)
        return 0
    if out:
        sys.stdout.write(out + "\n")
    return 0
