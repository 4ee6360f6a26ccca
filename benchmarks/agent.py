"""Scripted Claude Code sessions beyond what the capture benchmark's need: checks sent to the
background and their task notifications, the model's own memory_read, Write, and the hook events
handled in process (as an MCP server handles them for a hook) when speed matters more than the
process boundary."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from .capture import START, Session


class InProcessHooks:
    """The hook events handled in this process, as an MCP server handles them for a hook (the
    same handlers, semantic recall): minutes faster than a process per event, for tuning."""

    def __init__(self, env: dict[str, str], embedder: Any):
        self.env, self.embedder = env, embedder
        self.services: dict[str, Any] = {}
        self.when = [START]
        self.ms: dict[str, list[float]] = defaultdict(list)

    def __call__(self, event: str, payload: dict[str, Any], now: datetime) -> str:
        from mnemo_mcp.config import Settings
        from mnemo_mcp.hooks import entry, handlers
        from mnemo_mcp.project import scoped
        from mnemo_mcp.service import MemoryService

        if not entry.worth_handling(event, payload, self.env):
            return ""
        self.when[0] = now
        cwd = payload["cwd"]
        if cwd not in self.services:
            settings = scoped(Settings.from_env(self.env), cwd)
            self.services[cwd] = (settings, MemoryService(settings, self.embedder, clock=lambda: self.when[0]))
        settings, svc = self.services[cwd]
        out = handlers.run(event, payload, settings, svc, semantic=True)
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""

    def close(self) -> None:
        for _, svc in self.services.values():
            svc.close()


class AgentSession(Session):
    """A Claude Code session that also backgrounds checks, gets their task notifications, calls
    memory_read and writes files, with the payloads the real CLI sends for them."""

    def __init__(self, *args: Any, read: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.read = read  # query -> the memory_read result (a ReadResult), as the MCP server gives it
        self.background: dict[str, tuple[str, str]] = {}  # task id -> (tool_use id, command)

    def memory_read(self, query: str) -> list[str]:
        result = self.read(query)
        tid = self._tool("mcp__mnemo__memory_read", {"query": query, "top_k": 5})
        text = json.dumps(result.model_dump(mode="json"))
        self._write(
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text}]},
            }
        )
        payload = {
            **self._base("PostToolUse"),
            "tool_name": "mcp__mnemo__memory_read",
            "tool_input": {"query": query, "top_k": 5},
            "tool_response": text,
            "tool_use_id": tid,
            "mcp_server": {"name": "mnemo", "source": "user"},
        }
        self.hooks("PostToolUse", payload, self.now)
        return [it.id for it in result.items]

    def file_edit(self, tool: str, tool_input: dict[str, Any], response: dict[str, Any]) -> None:
        tid = self._tool(tool, tool_input)
        self._write(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tid, "content": "The file was updated."}],
                },
            }
        )
        payload = {**self._base("PostToolUse"), "tool_name": tool, "tool_input": tool_input}
        self.hooks("PostToolUse", {**payload, "tool_response": response, "tool_use_id": tid}, self.now)

    def bash_background(self, command: str, task_id: str) -> str:
        tool_input = {"command": command, "description": "run it", "run_in_background": True}
        tid = self._tool("Bash", tool_input)
        self.background[task_id] = (tid, command)
        if not self._spawns(command):
            return ""
        response = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
        payload = {**self._base("PostToolUse"), "tool_name": "Bash", "tool_input": tool_input, "tool_use_id": tid}
        return self.hooks(
            "PostToolUse", {**payload, "tool_response": {**response, "backgroundTaskId": task_id}}, self.now
        )

    def task_done(self, task_id: str, exit_code: int, output: str) -> str:
        tid, command = self.background.get(task_id, ("toolu_unknown", "a command"))
        out_file = self.cwd / f".task-{self.sid}-{task_id}.output"
        out_file.write_text(output, encoding="utf-8")
        status = "completed" if exit_code == 0 else "failed"
        summary = (
            f'Background command "{command[:60]}" completed (exit code 0)'
            if exit_code == 0
            else f'Background command "{command[:60]}" failed with exit code {exit_code}'
        )
        note = (
            f"<task-notification>\n<task-id>{task_id}</task-id>\n<tool-use-id>{tid}</tool-use-id>\n"
            f"<output-file>{out_file}</output-file>\n<status>{status}</status>\n<summary>{summary}</summary>\n"
            "</task-notification>"
        )
        return self.hooks("UserPromptSubmit", {**self._base("UserPromptSubmit"), "prompt": note}, self.now)


def edit_payloads(step: dict[str, Any], cwd: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    path = step["file"] if step["file"].startswith(("/", "~")) else str(cwd / step["file"])
    if step["type"] == "write":
        tool_input = {"file_path": path, "content": step["content"]}
        return (
            "Write",
            tool_input,
            {
                "type": "create",
                "filePath": path,
                "content": step["content"],
                "structuredPatch": [],
                "originalFile": None,
                "userModified": False,
            },
        )
    tool_input = {"file_path": path, "old_string": step["old"], "new_string": step["new"], "replace_all": False}
    response = {
        "filePath": path,
        "oldString": step["old"],
        "newString": step["new"],
        "originalFile": step["old"],
        "structuredPatch": [],
        "userModified": False,
        "replaceAll": False,
    }
    return "Edit", tool_input, response
