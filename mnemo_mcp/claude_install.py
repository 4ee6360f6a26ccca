"""Register mnemo-mcp with Claude Code: merge our MCP server entry and hooks into its settings files,
and take them out again, leaving everything else in those files (other servers, other tools' hooks,
unrelated state) as it was.

`install` and `uninstall` return the changes they made. An empty list means nothing needed changing:
no file was written and no backup made, so running either twice is safe. Print with `render`.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import os
import re
import shlex
import stat
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import MnemoError

SERVER_NAME = "mnemo"
PROGRAM = "mnemo-mcp"
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


class InstallError(MnemoError, ValueError):
    """A settings file cannot be merged safely; nothing was changed."""


@dataclass(frozen=True)
class Change:
    path: Path
    action: str


@dataclass
class _File:
    path: Path
    data: dict[str, Any]
    raw: bytes | None  # None: the file does not exist yet
    mode: int | None
    changes: list[str] = field(default_factory=list)


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
    command = f"{shlex.quote(executable)} hook {event}"
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
    files = [_load(mcp_path, "mcpServers")]
    programs = {executable, *_server_program(files[0].data)}
    _put_server(files[0], executable)
    if hooks:
        files.append(_load(hooks_path, "hooks"))
        _put_hooks(files[1], executable, programs)
    return _save_all(files, now)


def uninstall(scope: str, home: Path, project_dir: Path, now: datetime | None = None) -> list[Change]:
    """Remove the "mnemo" server and our hooks, and the containers that removing them emptied."""
    mcp_path, hooks_path = plan_paths(scope, home, project_dir)
    mcp, settings = _load(mcp_path, "mcpServers"), _load(hooks_path, "hooks")
    programs = set(_server_program(mcp.data))
    servers = mcp.data.get("mcpServers")
    if servers and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        mcp.changes.append(f"removed mcpServers.{SERVER_NAME}")
        if not servers:
            del mcp.data["mcpServers"]
    _remove_hooks(settings, programs)
    return _save_all([mcp, settings], now)


def render(changes: list[Change]) -> str:
    lines = [f"{c.path}: {c.action}" for c in changes]
    return "\n".join(lines or ["nothing to change"])


def _is_ours(hook: Any, event: str, programs: set[str]) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) < 3 or words[-1] != event or "hook" not in words[1:-1]:
        return False
    # By program name rather than full path: after the executable moves (new venv, pipx reinstall) the old
    # entry is still recognised and updated instead of duplicated. `programs` covers executables named otherwise.
    name = re.split(r"[\\/]", words[0])[-1]
    return name in (PROGRAM, PROGRAM + ".exe") or words[0] in programs


def _server_program(data: dict[str, Any]) -> list[str]:
    entry = data.get("mcpServers", {}).get(SERVER_NAME)
    command = entry.get("command") if isinstance(entry, dict) else None
    return [command] if isinstance(command, str) and command else []


def _put_server(f: _File, executable: str) -> None:
    servers = f.data.setdefault("mcpServers", {})
    old = servers.get(SERVER_NAME)
    new = server_entry(executable)
    if isinstance(old, dict):
        # We own how the server starts; what the user added (env such as MNEMO_DB, other keys) is theirs to keep.
        new = {**old, "type": new["type"], "command": new["command"], "args": new["args"]}
        new.setdefault("env", {})
    if new != old:
        f.changes.append(f"{'updated' if SERVER_NAME in servers else 'added'} mcpServers.{SERVER_NAME}")
        servers[SERVER_NAME] = new


def _put_hooks(f: _File, executable: str, programs: set[str]) -> None:
    hooks = f.data.get("hooks", {})
    for event in HOOK_EVENTS:
        groups = hooks.setdefault(event, [])
        before = copy.deepcopy(groups)
        at, extra, found = _take_ours(groups, event, programs)
        want = hook_groups(executable, event)
        for group in want:
            group["hooks"] = [{**entry, **extra} for entry in group["hooks"]]
        # Where ours were (a moved executable is updated in place), else after other tools'
        # groups: theirs keep their order and run as before.
        groups[at:at] = want
        if groups != before:
            f.changes.append(f"{'updated' if found else 'added'} hook {event}")
    if hooks and "hooks" not in f.data:
        f.data["hooks"] = hooks


def _take_ours(groups: list[Any], event: str, programs: set[str]) -> tuple[int, dict[str, Any], bool]:
    """Remove our entries from an event's groups (a group left empty goes too). -> where the
    first of them was (the end when none), the keys the user added to our entry, and whether
    there were any."""
    at, extra = None, {}
    kept = []
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        mine = [h for h in entries if _is_ours(h, event, programs)] if isinstance(entries, list) else []
        if not mine:
            kept.append(group)
            continue
        if at is None:
            at = len(kept)
            extra = {k: v for k, v in mine[0].items() if k not in _OUR_KEYS}
        rest = [h for h in entries if not _is_ours(h, event, programs)]
        if rest:
            kept.append({**group, "hooks": rest})
    groups[:] = kept
    return (len(kept) if at is None else at), extra, at is not None


def _remove_hooks(f: _File, programs: set[str]) -> None:
    hooks = f.data.get("hooks")
    if not hooks:
        return
    for event in list(hooks):
        _, _, found = _take_ours(hooks[event], event, programs)
        if found:
            f.changes.append(f"removed hook {event}")
            if not hooks[event]:
                del hooks[event]
    if not hooks:
        del f.data["hooks"]


def _load(path: Path, key: str) -> _File:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return _File(path, {}, None, None)

    def fail(problem: str) -> InstallError:
        return InstallError(f"{path}: {problem}; fix it (or move the file away) and run again. Nothing was changed.")

    try:
        text = raw.decode("utf-8-sig")
        data = json.loads(text) if text.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise fail(f"not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise fail(f"must hold a JSON object, found {type(data).__name__}")
    if not isinstance(data.get(key, {}), dict):
        raise fail(f'"{key}" must be an object, found {type(data[key]).__name__}')
    for event, groups in data.get(key, {}).items() if key == "hooks" else ():
        if not isinstance(groups, list):
            raise fail(f'"hooks"."{event}" must be an array of hook groups')
    return _File(path, data, raw, stat.S_IMODE(os.stat(path).st_mode))


def _save_all(files: list[_File], now: datetime | None) -> list[Change]:
    now = now or datetime.now()
    out: list[Change] = []
    for f in files:
        if not f.changes:
            continue
        if f.raw is not None and f.mode is not None:
            out.append(Change(f.path, f"backup -> {_backup(f.path, f.raw, f.mode, now)}"))
        # Through a symlink (dotfiles managers link settings.json) to its target, rather than replacing the link.
        target = Path(os.path.realpath(f.path))
        target.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(target, (json.dumps(f.data, indent=2, ensure_ascii=False) + "\n").encode(), f.mode)
        out.extend(Change(f.path, action) for action in f.changes)
    return out


def _backup(path: Path, raw: bytes, mode: int, now: datetime) -> Path:
    stem = f"{path.name}.mnemo-backup-{now:%Y%m%dT%H%M%S}"
    for n in itertools.count():
        # Never overwrite an earlier backup (install then uninstall within a second): it may be the only original.
        candidate = path.with_name(stem if n == 0 else f"{stem}-{n}")
        try:
            # The original's mode, because ~/.claude.json holds account state and may be private.
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        return candidate
    raise AssertionError("unreachable")


def _atomic_write(target: Path, data: bytes, mode: int | None) -> None:
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
