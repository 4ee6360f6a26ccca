"""What each Claude Code hook event does, given a service to do it with.

- UserPromptSubmit: a prompt the user typed scores the previous turn from their reaction (worked
  / failed / partial; unknown changes nothing), starts a new turn, and injects memories relevant
  to it (under a token budget, nothing below the relevance floor). A background task's
  notification is Claude Code speaking, not the user: its exit status is the result of the check
  that went to the background, and nothing else happens.
- PostToolUse / PostToolUseFailure: a test, build, type-check or lint command's result credits
  or blames what was recalled; a command sent to the background is no result yet; a
  `memory_read` by the model notes what it returned at or above the floor as recalled.
- SessionStart: one line saying mnemo is there and how to call it, and the project's most useful
  memories; nothing again on a resume whose context still holds them.
- Stop: how closely the assistant's answer followed each memory recalled in the turn, so the
  reaction to the turn is credited by it; concept links move with it.

`semantic` says whether the service has the embedding model at hand (the MCP server answering
through the socket) or not (a hook process on its own, which recalls by keywords: loading the
model would take a second).
"""

from __future__ import annotations

import re
from typing import Any

from ..config import Settings
from ..core import cases, checks, recall, rules
from . import events
from .render import FULL, POINTER, POINTER_HINT, context, digest, tokens

QUERY_CHARS = 1000  # of a prompt used as the query: the ask is at the start, pasted logs follow
CANDIDATES = 5  # read for a prompt; the recall policy decides what of them is shown, and how
MEMORY_READ = re.compile(r"^mcp__.+__memory_read$")
INTRO = (
    'mnemo (long-term memory that learns from outcomes) is connected as MCP server "mnemo": '
    "recall past fixes, decisions and lessons with memory_read, remember new ones with memory_write, "
    'report what helped with memory_feedback (if its tools are deferred, find them with ToolSearch "memory"). '
    f"Prompts may come with mnemo notes; {POINTER_HINT}."
)


def on_prompt(settings: Settings, svc, payload: dict[str, Any], semantic: bool) -> str | None:
    sid, prompt = payload["session_id"], payload.get("prompt") or ""
    notifications, _ = events.task_notifications(prompt)
    svc.session_actions(sid, actions=events.turn_actions(payload))
    if notifications:
        for n in notifications:
            signature = cases.error_signature(_tail(n.output_file)) if n.outcome == "fail" else None
            svc.session_task_done(
                sid, task_id=n.task_id, tool_use_id=n.tool_use_id, outcome=n.outcome, signature=signature
            )
        return None
    prompt_id = payload.get("prompt_id") if isinstance(payload.get("prompt_id"), str) else None
    if not svc.session_user_prompt(sid, prompt=prompt, prompt_id=prompt_id).new_turn:
        return None
    query = prompt[:QUERY_CHARS]
    if settings.inject_tokens <= 0 or not query.strip():
        return None
    r = svc.read(query, top_k=CANDIDATES, keyword_only=not semantic, exclude_quarantined=True)
    if held := svc.judge_shown([it.id for it in r.items]):
        r.items = [it for it in r.items if it.id not in held]  # judged by an older detector, hostile now
    text, shown = prompt_context(r, settings, semantic)
    if not shown:
        return None
    svc.session_recall(
        sid, memory_ids=[mid for mid, _ in shown], read_id=r.read_id, query_concepts=r.query_concepts, source="inject"
    )
    return context("UserPromptSubmit", text)


def embed_ahead(settings: Settings, svc, payload: dict[str, Any]) -> None:
    """Start embedding the query of a prompt that on_prompt will read for, before the event is
    handled: the server does it while the hook confirms the event and the turn is logged, and the
    read then waits only for what is left of it. (A prompt whose turn turns out not to be new is
    embedded for nothing.)"""
    prompt = payload.get("prompt") or ""
    if settings.inject_tokens <= 0 or not isinstance(prompt, str) or events.task_notifications(prompt)[0]:
        return
    query = prompt[:QUERY_CHARS]
    if query.strip():
        svc.embed_query_ahead(query)


def prompt_context(r: Any, settings: Settings, semantic: bool) -> tuple[str | None, list[tuple[str, str]]]:
    """What a prompt's read puts in front of the model (core.recall decides: in full, as a
    pointer, or nothing) -> (the text, the (id, FULL or POINTER) of each note shown). The
    benchmarks score exactly this."""
    policy = settings.recall_policy(semantic)
    items = list(r.items)
    full, pointers = recall.plan([_candidate(it) for it in items], policy)
    entries = [(*_line(items[i]), FULL) for i in full] + [(*_line(items[i]), POINTER) for i in pointers]
    header = f"mnemo notes, read_id {r.read_id}"
    return digest(header, entries, settings.inject_tokens)


def _candidate(it: Any) -> recall.Candidate:
    label = it.outcome or ""
    return recall.Candidate(
        relevance=it.relevance,
        score=it.score,
        failed=it.valence < -0.05 and "failed" in label,
        worked=it.valence > 0.05 and "worked" in label,
        semantic=it.semantic,
        lexical=it.lexical,
    )


def _line(it: Any) -> tuple[str, str, str]:
    """(id, label, content) of a read item: the label says what happened when it was used."""
    return it.id, it.outcome or "new", it.content


def _tail(path: str | None, limit: int = 64 << 10) -> str:
    """The end of a background task's output file (where its error is)."""
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _edit_action(payload: dict[str, Any]):
    """An edit's PostToolUse as an action, with what it replaced when the response says (a
    Write's original file, a notebook cell's old source)."""
    response = payload.get("tool_response") if isinstance(payload.get("tool_response"), dict) else {}
    extra = {k: response[k] for k in ("originalFile", "old_source") if isinstance(response.get(k), str)}
    return events.action(
        payload.get("tool_name"), payload.get("tool_input"), payload.get("tool_use_id"), payload.get("cwd"), extra
    )


def is_check(settings: Settings, payload: dict[str, Any], failed: bool = True) -> str | None:
    """The check a Bash call ran (see core.checks), or None; for a call that succeeded, also the
    check ending a change (`rm MANIFEST.in && nox -s installed` passed: so did nox)."""
    command = (payload.get("tool_input") or {}).get("command") or ""
    patterns = (*checks.DEFAULT_CHECKS, *settings.extra_check_commands)
    return (checks.check_kind if failed else checks.passed_check)(command, patterns)


def on_tool(settings: Settings, svc, payload: dict[str, Any], failed: bool) -> str | None:
    tool = payload.get("tool_name") or ""
    sid = payload["session_id"]
    if tool == "Bash":
        kind = is_check(settings, payload, failed)
        if kind is None:
            return _other_failure(settings, svc, payload) if failed else None
        if not svc.session_claim(sid, event="failure" if failed else "success", tool_use_id=payload.get("tool_use_id")):
            return None
        # The call itself too: `rm MANIFEST.in && nox -s installed` changed something before its check.
        this = events.action(tool, payload.get("tool_input"), payload.get("tool_use_id"), payload.get("cwd"))
        svc.session_actions(sid, actions=[*events.turn_actions(payload), *([this] if this else [])])
        task = None if failed else events.background_task(payload)
        if task is not None:
            svc.session_background(sid, command=kind, task_id=task or None, tool_use_id=payload.get("tool_use_id"))
            return None
        status = checks.outcome_of(payload.get("tool_response") if not failed else payload, failed)
        if status is None:
            return None
        signature = cases.error_signature(str(payload.get("error") or "")) if status == "fail" else None
        capturing = settings.capture != "off"
        svc.session_check(
            sid,
            status=status,
            command=kind,
            signature=signature,
            tool_use_id=payload.get("tool_use_id"),
            calls=events.tool_calls(payload) if capturing else [],
            narration=events.turn_text(payload) if capturing else "",
        )
        if status == "fail":
            return _recurrence(settings, svc, sid, signature)
    elif tool in events.EDIT_TOOLS and not failed:
        found = _edit_action(payload)
        if found:
            svc.session_actions(sid, actions=[found])
    elif MEMORY_READ.match(tool) and not failed:
        result = events.read_result(payload.get("tool_response"))
        items = events.recalled_items(result) if result else []
        if not items:
            return None
        svc.session_actions(sid, actions=events.turn_actions(payload))  # what it did before it read
        svc.session_recall(
            sid,
            memory_ids=[mid for mid, _ in items],
            read_id=result["read_id"],
            query_concepts=result.get("query_concepts"),
            source="memory_read",
        )
    return None


def _other_failure(settings: Settings, svc, payload: dict[str, Any]) -> str | None:
    """A failing command that is no test or build (a deploy, a migration, a script): no signal
    for what was recalled, but its error can be one a case answers, and a fix can follow it."""
    if settings.capture == "off":
        return None
    sid, command = payload["session_id"], (payload.get("tool_input") or {}).get("command") or ""
    signature = cases.error_signature(str(payload.get("error") or ""))
    if not signature or not svc.session_claim(sid, event="failure", tool_use_id=payload.get("tool_use_id")):
        return None
    svc.session_actions(sid, actions=events.turn_actions(payload))
    svc.session_failure(
        sid,
        command=" ".join(command.split())[:300],
        signature=signature,
        tool_use_id=payload.get("tool_use_id"),
        calls=events.tool_calls(payload),
    )
    return _recurrence(settings, svc, sid, signature)


def _recurrence(settings: Settings, svc, sid: str, signature: str | None) -> str | None:
    """A check failed with an error seen before: what worked for it, then what did not."""
    found = svc.cases_for(signature, not_from=sid) if signature else []
    if found and (held := svc.judge_shown([m["id"] for m in found])):
        found = [m for m in found if m["id"] not in held]
    if not found:
        return None
    svc.session_recall(sid, memory_ids=[m["id"] for m in found], source="recurrence")
    header = "mnemo: this failure was seen before; what worked for it first:"
    lines = [
        (m["id"], rules.outcome_label(m["metadata"].get("outcomes"), m["valence"]), m["content"], FULL) for m in found
    ]
    text, _ = digest(header, lines, settings.inject_tokens * 2)
    return context("PostToolUseFailure", text)


def on_session_start(settings: Settings, svc, payload: dict[str, Any]) -> str | None:
    if settings.session_start_tokens <= 0:
        return None
    useful = svc.session_start(payload["session_id"], source=payload.get("source"), limit=settings.session_start_items)
    if useful is None:
        return None
    if useful and (held := svc.judge_shown([m["id"] for m in useful])):
        useful = [m for m in useful if m["id"] not in held]
    items = [
        (m["id"], rules.outcome_label(m["metadata"].get("outcomes"), m["valence"]), m["content"], FULL) for m in useful
    ]
    header = "This project's most useful memories (search more with memory_read):"
    shown, _ = digest(header, items, max(settings.session_start_tokens - tokens(INTRO), 0), overflow="skip")
    return context("SessionStart", INTRO + ("\n" + shown if shown else ""))


def on_stop(settings: Settings, svc, payload: dict[str, Any]) -> None:
    sid = payload["session_id"]
    svc.session_actions(sid, actions=events.turn_actions(payload))
    answer = events.last_answer(payload)
    if answer.strip():
        svc.session_response(sid, response=answer)
    if settings.capture != "off":
        svc.session_stop(sid, answer=answer, calls=events.tool_calls(payload), results=events.call_results(payload))


def run(event: str, payload: dict[str, Any], settings: Settings, svc, *, semantic: bool) -> str | None:
    """Handle one event with `svc`, as one unit of work (one transaction: whatever it learns
    and logs commits together or not at all); returns what the hook prints (None: nothing)."""
    if event not in events.EVENTS:
        raise ValueError(f"unknown hook event {event!r}; known: {', '.join(events.EVENTS)}")
    with svc.session_unit(payload.get("session_id")):
        if event == "UserPromptSubmit":
            return on_prompt(settings, svc, payload, semantic)
        if event in ("PostToolUse", "PostToolUseFailure"):
            return on_tool(settings, svc, payload, failed=event == "PostToolUseFailure")
        if event == "SessionStart":
            return on_session_start(settings, svc, payload)
        on_stop(settings, svc, payload)
        return None
