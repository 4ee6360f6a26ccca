"""A person's yes: only someone at their own terminal releases a quarantined note.

The model can run commands (Claude Code's Bash tool, Codex's exec_command, Gemini's
run_shell_command, opencode's bash), so `mnemo-mcp release` must tell a person from an agent's
shell. It refuses when any of these holds:

- the environment carries the variables an agent puts in the commands it runs (seen in the real
  programs: Claude Code 2.1.332 `CLAUDECODE=1`, `CLAUDE_CODE_ENTRYPOINT`, `AI_AGENT`; Codex CLI
  0.171 `CODEX_SESSION_ID`, `CODEX_THREAD_ID`, `CODEX_CI`; read in their code: Gemini CLI 0.61
  `GEMINI_CLI=1`, opencode 1.18 `OPENCODE=1`, `AGENT=1`; Cursor's agent `CURSOR_AGENT`, not seen);
- one of the process's ancestors is such an agent (an agent's shell cannot shed its parents the
  way it can shed its environment with `env -i`);
- stdin is not a terminal (agents' shells read from /dev/null or a pipe);
- the person does not type the note's id prefix when asked.

The hooks add a PreToolUse guard (`blocked_command`): a shell command that would release a note,
start the dashboard or edit the quarantine in the database is denied before it runs, whatever
disguise it is in (an absolute path, `env`, `bash -c`, `python -m mnemo_mcp`).
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from .errors import MnemoError

# Environment variables an agent sets in the commands it runs -> the agent's name.
AGENT_VARIABLES: tuple[tuple[str, str], ...] = (
    ("CLAUDECODE", "Claude Code"),
    ("CLAUDE_CODE_ENTRYPOINT", "Claude Code"),
    ("CLAUDE_CODE_SESSION_ID", "Claude Code"),
    ("CODEX_SESSION_ID", "Codex CLI"),
    ("CODEX_THREAD_ID", "Codex CLI"),
    ("CODEX_TOOL_CALL_ID", "Codex CLI"),
    ("CODEX_CI", "Codex CLI"),
    ("GEMINI_CLI", "Gemini CLI"),
    ("OPENCODE", "opencode"),
    ("OPENCODE_PID", "opencode"),
    ("CURSOR_AGENT", "Cursor's agent"),
    ("AI_AGENT", "an AI agent"),
    ("AGENT", "an AI agent"),
)
# Programs whose descendants are an agent's shell (argv[0] names, or paths of their scripts).
_AGENT_PROGRAM = re.compile(
    r"(?:^|/)(?:claude|codex|gemini|opencode|cursor-agent|aider|goose|amp|crush|qwen)(?:\.exe|\.js|\.mjs)?$"
    r"|/@anthropic-ai/claude-code/|/@openai/codex/|/@google/gemini-cli/|/opencode-ai/|/@qwen-code/"
)


class NotAPerson(MnemoError):
    """Refused: the command runs in an agent's shell or without a person at a terminal."""


def _ancestors(limit: int = 40) -> list[list[str]]:
    """The command lines of this process's ancestors, nearest first (Linux /proc; elsewhere none)."""
    out: list[list[str]] = []
    pid = os.getppid()
    for _ in range(limit):
        if pid <= 1:
            break
        try:
            out.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")[:3])
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def agent_shell(
    environ: Mapping[str, str] | None = None, ancestors: Callable[[], list[list[str]]] = _ancestors
) -> str | None:
    """The agent whose shell this process runs in, or None."""
    env = os.environ if environ is None else environ
    for name, agent in AGENT_VARIABLES:
        if env.get(name, "").strip() not in ("", "0", "false"):
            return agent
    for argv in ancestors():
        if any(_AGENT_PROGRAM.search(arg) for arg in argv if arg):
            return "an AI agent (a parent process)"
    return None


def refuse_in_agent_shell(what: str, environ: Mapping[str, str] | None = None, ancestors=_ancestors) -> None:
    agent = agent_shell(environ, ancestors)
    if agent:
        raise NotAPerson(
            f"refused: {what} runs in {agent}'s shell, where the model could run it on its own; "
            "run it yourself in a terminal outside the agent"
        )


def confirm_release(
    memory_id: str,
    reason: str | None,
    preview: str,
    *,
    stdin: TextIO,
    stdout: TextIO,
    environ: Mapping[str, str] | None = None,
    ancestors: Callable[[], list[list[str]]] = _ancestors,
) -> str:
    """Ask the person at the terminal to confirm a release by typing the id's first 8
    characters -> how they confirmed (kept with the release). Raises NotAPerson."""
    refuse_in_agent_shell("`mnemo-mcp release`", environ, ancestors)
    if not stdin.isatty():
        raise NotAPerson(
            "refused: `mnemo-mcp release` needs a person at a terminal (stdin is not one); "
            "run it yourself in a terminal, or release the note in the dashboard"
        )
    prefix = memory_id[:8]
    stdout.write(
        f"Quarantined note {memory_id[:12]} ({reason or 'reads as instructions to the assistant'}):\n"
        f"{textwrap.indent(preview, '  ')}\n"
        "Released, it is injected into your sessions like any other note until its text changes.\n"
        f"Type {prefix} to release it: "
    )
    stdout.flush()
    answer = stdin.readline().strip()
    if answer != prefix:
        raise NotAPerson(f"not released: the confirmation did not match {prefix}")
    return "typed the id prefix at a terminal"


# --- the PreToolUse guard ------------------------------------------------------------------------

_MNEMO = re.compile(r"(?:\bmnemo[-_]mcp\b|\bpython[\d.]*\s+(?:-\w+\s+)*-m\s+mnemo_mcp\b)([^|;&\n()`]*)", re.I)
_PERSON_ONLY = {
    "release": "releasing a quarantined note is a person's decision",
    "dashboard": "the dashboard is started by a person",
}
_EDITS_QUARANTINE = re.compile(
    r"\bupdate\s+memories\b[^;]*\bquarantine\b|\bsqlite3?\b[^|;&\n]*\bquarantine\b|json_remove\([^)]*quarantine"
    r"|\btrust\.release\b|\bsvc\.release\s*\(|\bMemoryService\b[^\n]*\brelease\b",
    re.I,
)


def blocked_command(command: str) -> str | None:
    """Why the model may not run this shell command itself, or None. Any invocation of mnemo
    counts, however it is reached (an absolute path, `env`, `bash -c '...'`, `python -m`)."""
    flat = command.replace("\\\n", " ")
    for m in _MNEMO.finditer(flat):
        # A quoted phrase is an argument (`read "release notes"`); a quoted word may be the command.
        args = re.sub(r"'[^']*\s[^']*'|\"[^\"]*\s[^\"]*\"", " ", m.group(1))
        words = re.findall(r"[\w-]+", args)
        for word in words:
            if word.lower() in _PERSON_ONLY:
                return f"mnemo: {_PERSON_ONLY[word.lower()]}; ask the user to run it in their own terminal"
    if _EDITS_QUARANTINE.search(flat):
        return "mnemo: the quarantine is not edited by hand; ask the user to release the note in their own terminal"
    return None
