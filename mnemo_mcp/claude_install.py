"""Register mnemo-mcp with Claude Code: merge our MCP server entry and hooks into its settings files,
and take them out again, leaving everything else in those files (other servers, other tools' hooks,
unrelated state) as it was.

`install` and `uninstall` return the changes they made. An empty list means nothing needed changing:
no file was written and no backup made, so running either twice is safe. Print with `render`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from .installers.hook_start import hook_prefix
from .installers.merge import (
    PROGRAM,
    SERVER_NAME,
    Change,
    InstallError,
    load_json,
    put_hooks,
    put_server,
    remove_hooks,
    remove_server,
    render,
    save_all,
    server_program,
)

__all__ = ["PROGRAM", "SERVER_NAME", "Change", "InstallError", "install", "uninstall", "render", "plan_paths"]

# Bash commands that may be checks (core.checks.DEFAULT_CHECKS), one `if` filter each: Claude
# Code evaluates the filter itself and spawns nothing for `git status` or `ls`. It matches each
# part of a compound command (`cd api && pytest` matches `pytest *`, which also matches a bare
# `pytest`), so no filter for `cd` is needed; a command with two checks spawns the hook twice
# and the hook counts its tool call once. A CLI without `if` runs the hook for every Bash call
# (identical commands run once), and the hook ends at once for a command that is not a check.
CHECK_FILTERS: tuple[str, ...] = tuple(
    f"Bash({program} *)"
    for program in (
        "pytest",
        "py.test",
        "python",
        "python3",
        "uv",
        "poetry",
        "pipenv",
        "hatch",
        "pdm",
        "tox",
        "nox",
        "mypy",
        "pyright",
        "ruff",
        "flake8",
        "pylint",
        "black",
        "isort",
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "npx",
        "bunx",
        "jest",
        "vitest",
        "mocha",
        "tsc",
        "eslint",
        "prettier",
        "biome",
        "playwright",
        "cypress",
        "cargo",
        "go",
        "golangci-lint",
        "make",
        "ninja",
        "cmake",
        "ctest",
        "mvn",
        "./mvnw",
        "gradle",
        "./gradlew",
        "dotnet",
        "bazel",
        "swift",
        "mix",
        "rspec",
        "bundle",
        "phpunit",
        "deno",
        "docker",
        "pre-commit",
        "lint-staged",
        "gh",
    )
)
# (event, matcher, `if` filters): one hook group per row, one entry per filter.
HOOK_GROUPS: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("SessionStart", None, ()),
    ("UserPromptSubmit", None, ()),
    # Every Bash command, unfiltered: the CLI's `if` filters miss `bash -c '...'`, `env`, absolute
    # paths. The guard needs no database and ends in milliseconds.
    ("PreToolUse", "Bash", ()),
    ("PostToolUse", "Bash", CHECK_FILTERS),
    ("PostToolUse", f"mcp__{SERVER_NAME}__memory_read", ()),
    ("PostToolUse", "Edit|Write|MultiEdit|NotebookEdit", ()),
    # Every failing Bash command: its error may be one seen before (failures are few, and the
    # hook ends at once when capture is off or the output names no error).
    ("PostToolUseFailure", "Bash", ()),
    ("Stop", None, ()),
)
HOOK_EVENTS = tuple(dict.fromkeys(event for event, _, _ in HOOK_GROUPS))
HOOK_TIMEOUTS = {"SessionStart": 15}
DEFAULT_HOOK_TIMEOUT = 10
# Keys of a hook entry that install writes; anything else the user added to ours is kept.
_OUR_KEYS = ("type", "command", "timeout", "if")


def default_dirs() -> tuple[Path, Path]:
    """(home, project_dir) for the CLI; the functions below take them as arguments so tests never
    touch the real ones."""
    return Path.home(), Path.cwd()


def plan_paths(scope: str, home: Path, project_dir: Path) -> tuple[Path, Path]:
    """(MCP config file, hooks settings file) for a scope."""
    if scope == "user":
        return home / ".claude.json", home / ".claude" / "settings.json"
    if scope == "project":
        return project_dir / ".mcp.json", project_dir / ".claude" / "settings.json"
    raise InstallError(f"unknown scope {scope!r}: choose 'user' or 'project'")


def server_entry(executable: str) -> dict[str, Any]:
    return {"type": "stdio", "command": executable, "args": [], "env": {}}


def hook_groups(executable: str, event: str) -> list[dict[str, Any]]:
    """Our hook groups for one event."""
    command = f"{hook_prefix(executable)} hook {event}"
    entry = {"type": "command", "command": command, "timeout": HOOK_TIMEOUTS.get(event, DEFAULT_HOOK_TIMEOUT)}
    out = []
    for name, matcher, filters in HOOK_GROUPS:
        if name != event:
            continue
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{**entry, "if": f} for f in filters] if filters else [dict(entry)]
        out.append(group)
    return out


def install(
    scope: str, executable: str, home: Path, project_dir: Path, hooks: bool = True, now: datetime | None = None
) -> list[Change]:
    """Add or update the "mnemo" server and (unless hooks=False) our hooks; other entries stay as they are."""
    if not executable:
        raise InstallError("no executable given: pass the path of the mnemo-mcp program")
    mcp_path, hooks_path = plan_paths(scope, home, project_dir)
    # Everything is loaded and validated before anything is written, so an invalid second file changes nothing.
    files = [load_json(mcp_path, "mcpServers")]
    programs = {executable, *server_program(files[0], "mcpServers")}
    put_server(files[0], "mcpServers", server_entry(executable), owned=("type", "command", "args"))
    if hooks:
        files.append(load_json(hooks_path, "hooks"))
        put_hooks(files[1], HOOK_EVENTS, lambda event: hook_groups(executable, event), programs, _OUR_KEYS)
    return save_all(files, now)


def uninstall(scope: str, home: Path, project_dir: Path, now: datetime | None = None) -> list[Change]:
    """Remove the "mnemo" server and our hooks, and the containers that removing them emptied."""
    mcp_path, hooks_path = plan_paths(scope, home, project_dir)
    mcp, settings = load_json(mcp_path, "mcpServers"), load_json(hooks_path, "hooks")
    programs = set(server_program(mcp, "mcpServers"))
    remove_server(mcp, "mcpServers")
    remove_hooks(settings, programs)
    return save_all([mcp, settings], now)
