"""What Claude Code's hook inputs say, read from the shapes the real CLI sends
(`../shared/claude-code/hook-payloads.json`): background commands and their task
notifications, memory_read results, the turn's final answer. Standard library only."""

from __future__ import annotations

import json
import os
import re

from ..core.checks import EDIT_TOOLS
from .clients import OUR_EVENTS

TYPE_CHECKING = False  # `typing` costs a hook process ~1-3 ms to import, and is needed only by checkers
if TYPE_CHECKING:
    from typing import Any

EVENTS = OUR_EVENTS  # kept in clients: the hook entry checks an event without importing this module
RESPONSE_CHARS = 20_000  # of the answer compared with the recalled memories
_NOTIFICATION = re.compile(r"<task-notification>(.*?)</task-notification>", re.S)
_FIELD = re.compile(r"<(task-id|tool-use-id|output-file|status|summary)>(.*?)</\1>", re.S)
_EXIT_CODE = re.compile(r"\bexit(?:ed with)? code (-?\d+)", re.I)


class TaskNotification:
    """Claude Code telling the model that a background task ended: not the user speaking."""

    __slots__ = ("task_id", "tool_use_id", "status", "exit_code", "output_file", "summary")

    def __init__(
        self,
        *,
        task_id: str | None,
        tool_use_id: str | None,
        status: str,
        exit_code: int | None,
        output_file: str | None,
        summary: str,
    ):
        self.task_id, self.tool_use_id, self.status = task_id, tool_use_id, status
        self.exit_code, self.output_file, self.summary = exit_code, output_file, summary

    def __repr__(self) -> str:
        return f"TaskNotification({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"

    @property
    def outcome(self) -> str | None:
        """ "pass" / "fail" for a command that ran to its end; None when it was stopped."""
        if self.exit_code is not None:
            return "pass" if self.exit_code == 0 else "fail"
        return {"completed": "pass", "failed": "fail"}.get(self.status)


def task_notifications(prompt: str) -> tuple[list[TaskNotification], str]:
    """The task notifications in a UserPromptSubmit prompt, and whatever text is left."""
    if "<task-notification>" not in prompt:
        return [], prompt
    found = []
    for block in _NOTIFICATION.findall(prompt):
        fields = {k: v.strip() for k, v in _FIELD.findall(block)}
        summary = fields.get("summary", "")
        code = _EXIT_CODE.search(summary)
        found.append(
            TaskNotification(
                task_id=fields.get("task-id") or None,
                tool_use_id=fields.get("tool-use-id") or None,
                status=fields.get("status", "").lower(),
                exit_code=int(code.group(1)) if code else None,
                output_file=fields.get("output-file") or None,
                summary=summary,
            )
        )
    return found, _NOTIFICATION.sub("", prompt).strip()


def background_task(payload: dict[str, Any]) -> str | None:
    """The task id of a Bash call that went to the background (asked to, timed out into it, or
    sent there by the user): its PostToolUse fires at once and says nothing of its result.
    "" when backgrounded without an id; None when the command ran in the foreground."""
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    response = payload.get("tool_response") if isinstance(payload.get("tool_response"), dict) else {}
    task = response.get("backgroundTaskId")
    if isinstance(task, str) and task:
        return task
    if (
        tool_input.get("run_in_background") is True
        or response.get("backgroundedByUser")
        or response.get("timedOutAfterMs")
    ):
        return ""
    return None


def read_result(response: Any) -> dict[str, Any] | None:
    """The memory_read result inside a tool response, whatever the wrapping (structured
    content, a text block holding JSON, a JSON string)."""
    if isinstance(response, str):
        try:
            return read_result(json.loads(response))
        except ValueError:
            return None
    if isinstance(response, dict):
        if isinstance(response.get("read_id"), str) and isinstance(response.get("items"), list):
            return response
        for key in ("structuredContent", "structured_content", "result", "content", "text"):
            found = read_result(response.get(key)) if key in response else None
            if found:
                return found
    if isinstance(response, list):
        for part in response:
            found = read_result(part)
            if found:
                return found
    return None


def recalled_items(result: dict[str, Any]) -> list[tuple[str, float | None]]:
    """(id, relevance) of each memory a memory_read returned."""
    out = []
    for item in result.get("items") or []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            rel = item.get("relevance")
            out.append(
                (item["id"], float(rel) if isinstance(rel, (int, float)) and not isinstance(rel, bool) else None)
            )
    return out


TRANSCRIPT_BYTES = 4 << 20  # of the transcript's end read for the current turns


def edited_file(tool_input: Any, cwd: Any = None) -> str | None:
    """The file an Edit / Write / MultiEdit / NotebookEdit call changed, relative to `cwd` (the
    project) when it lies inside: a case names `src/app.py`, not one checkout's absolute path."""
    if not isinstance(tool_input, dict):
        return None
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if not isinstance(path, str) or not path:
        return None
    if isinstance(cwd, str) and cwd and os.path.isabs(path):
        rel = os.path.relpath(path, cwd)
        if not rel.startswith(".."):
            return rel
    return path


_TRANSCRIPTS: dict[tuple[str, int, int], list[dict[str, Any]]] = {}


def _transcript(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The transcript's entries (its last TRANSCRIPT_BYTES), oldest first. Parsed once per
    version of the file: one hook event asks for its calls, results and answer."""
    path = payload.get("transcript_path")
    if not isinstance(path, str):
        return []
    try:
        st = os.stat(path)
    except OSError:
        return []
    key = (path, st.st_size, st.st_mtime_ns)
    if key in _TRANSCRIPTS:
        return _TRANSCRIPTS[key]
    if not os.path.isfile(path):
        return []
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - TRANSCRIPT_BYTES))
        raw = f.read().decode("utf-8", "replace")
    lines = raw.splitlines()[1:] if size > TRANSCRIPT_BYTES else raw.splitlines()  # a cut first line
    out = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict):
            out.append(entry)
    _TRANSCRIPTS.clear()  # one file at a time is all a hook (or a server's event) needs
    _TRANSCRIPTS[key] = out
    return out


def _is_prompt(entry: dict[str, Any]) -> bool:
    """A prompt typed by the user (not a tool result, not Claude Code's own notification)."""
    content = entry["message"].get("content")
    if entry.get("type") != "user":
        return False
    texts = (
        [content]
        if isinstance(content, str)
        else [c.get("text", "") for c in (content or []) if isinstance(c, dict) and c.get("type") == "text"]
    )
    return any(t.strip() and not t.lstrip().startswith("<task-notification>") for t in texts)


def _tool_uses(payload: dict[str, Any]):
    """(is a prompt mark, tool_use block) of the transcript, oldest first."""
    for entry in _transcript(payload):
        if _is_prompt(entry):
            yield True, None
            continue
        content = entry["message"].get("content")
        if entry.get("type") != "assistant" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                yield False, block


def tool_calls(payload: dict[str, Any], *, turn_only: bool = False) -> list[tuple[str, str, str]]:
    """(tool_use id, tool name, command or edited file) of the Bash and edit calls in the
    transcript, oldest first, with ("", "prompt", "") where the user typed a prompt;
    `turn_only`: only the calls since the user's last prompt."""
    calls: list[tuple[str, str, str]] = []
    for is_prompt, block in _tool_uses(payload):
        if is_prompt:
            calls = [] if turn_only else [*calls, ("", "prompt", "")]
            continue
        name, tool_input = block.get("name"), block.get("input")
        what = (tool_input or {}).get("command") if name == "Bash" and isinstance(tool_input, dict) else None
        what = (
            what
            if isinstance(what, str)
            else (edited_file(tool_input, payload.get("cwd")) if name in EDIT_TOOLS else None)
        )
        if what:
            calls.append((str(block.get("id") or ""), name, what))
    return calls


def action(tool: Any, tool_input: Any, tool_use_id: Any, cwd: Any = None, extra: dict | None = None):
    """One Bash or edit call as the service weighs it: (id, tool, its input with `_file`, the
    edited file relative to the project); None for any other tool."""
    if not isinstance(tool_input, dict) or not isinstance(tool_use_id, str) or not tool_use_id:
        return None
    if tool == "Bash":
        return tool_use_id, tool, tool_input
    if tool in EDIT_TOOLS:
        return tool_use_id, tool, {**tool_input, **(extra or {}), "_file": edited_file(tool_input, cwd)}
    return None


def turn_actions(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The Bash and edit calls of the transcript since the user's last prompt (the turn so far;
    at a prompt, the turn before it), with their inputs."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for is_prompt, block in _tool_uses(payload):
        if is_prompt:
            out = []
            continue
        found = action(block.get("name"), block.get("input"), block.get("id"), payload.get("cwd"))
        if found:
            out.append(found)
    return out


def call_results(payload: dict[str, Any]) -> dict[str, bool]:
    """Whether each tool call of the transcript succeeded (its tool_result's is_error), by id."""
    out: dict[str, bool] = {}
    for entry in _transcript(payload):
        content = entry["message"].get("content")
        if entry.get("type") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id"):
                out[str(block["tool_use_id"])] = not block.get("is_error")
    return out


def turn_text(payload: dict[str, Any]) -> str:
    """What the assistant has said so far in the turn (its text blocks since the user's last
    prompt): models say why as they work ("the signature is compared as a string; I'll use
    hmac.compare_digest"), before the check that proves it."""
    texts: list[str] = []
    for entry in _transcript(payload):
        content = entry["message"].get("content")
        if _is_prompt(entry):
            texts = []
        elif entry.get("type") == "assistant" and isinstance(content, list):
            texts += [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
    return "\n".join(t for t in texts if t)[-RESPONSE_CHARS:]


def last_answer(payload: dict[str, Any]) -> str:
    """The assistant's final answer of the turn: from the event when Claude Code includes it,
    else the text blocks of the assistant messages after the last user prompt in the transcript."""
    direct = payload.get("last_assistant_message")
    if isinstance(direct, str) and direct.strip():
        return direct
    texts: list[str] = []
    for entry in _transcript(payload):
        content = entry["message"].get("content")
        if _is_prompt(entry):
            texts = []  # a new prompt: the answer starts after it
        elif entry.get("type") == "assistant" and isinstance(content, list):
            texts += [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
    return "\n".join(t for t in texts if t)[-RESPONSE_CHARS:]
