"""Register mnemo-mcp with Codex CLI, Gemini CLI, opencode, Cursor and VS Code, each in its own
format and place, merged exactly as the Claude Code installer merges (installers.merge).

| client | user scope | project scope | hooks |
| --- | --- | --- | --- |
| codex | $CODEX_HOME/config.toml (~/.codex), hooks.json beside it | .codex/config.toml, .codex/hooks.json | yes |
| gemini | ~/.gemini/settings.json (server and hooks) | .gemini/settings.json | yes |
| opencode | ~/.config/opencode/opencode.json | opencode.json | no (JS plugins only) |
| cursor | ~/.cursor/mcp.json | .cursor/mcp.json | no |
| vscode | the user profile's mcp.json | .vscode/mcp.json | no |

The hook commands name the client and its own event (`mnemo-mcp hook --client gemini AfterTool`);
hooks.clients maps them onto the one set of handlers.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from . import codex_toml
from .merge import (
    SERVER_NAME,
    Change,
    ConfigFile,
    InstallError,
    load_json,
    put_hooks,
    put_server,
    read_raw,
    remove_hooks,
    remove_server,
    save_all,
    server_program,
)

SCOPES = ("user", "project")
# Gemini CLI: (event, matcher, timeout in milliseconds). Its shell tool is run_shell_command, its
# edits replace and write_file, MCP tools mcp_<server>_<tool>; a failing command fires AfterTool too.
GEMINI_HOOKS: tuple[tuple[str, str | None, int], ...] = (
    ("SessionStart", None, 15_000),
    ("BeforeAgent", None, 10_000),
    ("BeforeTool", "run_shell_command", 10_000),
    ("AfterTool", f"run_shell_command|mcp_{SERVER_NAME}_memory_read|replace|write_file", 10_000),
    ("AfterAgent", None, 10_000),
)
# Codex CLI: (event, matcher, timeout in seconds). Its shell tool is Bash in hooks, MCP tools
# mcp__<server>__<tool>; there is no failure event (PostToolUse fires for every command).
CODEX_HOOKS: tuple[tuple[str, str | None, int], ...] = (
    ("SessionStart", None, 15),
    ("UserPromptSubmit", None, 10),
    ("PreToolUse", "Bash", 10),
    ("PostToolUse", f"Bash|mcp__{SERVER_NAME}__memory_read", 10),
    ("Stop", None, 10),
)
_HOOK_KEYS = ("name", "type", "command", "timeout")


@dataclass(frozen=True)
class Where:
    """What an installer needs to know about the machine; tests pass their own."""

    home: Path
    project_dir: Path
    env: Mapping[str, str]
    platform: str = sys.platform


def _hook_command(executable: str, client: str, event: str) -> str:
    return f"{shlex.quote(executable)} hook --client {client} {event}"


def _groups(table: tuple[tuple[str, str | None, int], ...], client: str, executable: str, named: bool):
    def groups_for(event: str) -> list[dict[str, Any]]:
        out = []
        for name, matcher, timeout in table:
            if name != event:
                continue
            entry: dict[str, Any] = {"name": f"mnemo-{event}"} if named else {}
            entry |= {"type": "command", "command": _hook_command(executable, client, event), "timeout": timeout}
            out.append({**({} if matcher is None else {"matcher": matcher}), "hooks": [entry]})
        return out

    return groups_for


@dataclass(frozen=True)
class JsonClient:
    """A client whose MCP servers live in one JSON file per scope (hooks too, when it has them)."""

    name: str
    title: str
    container: str
    entry: Callable[[str], dict[str, Any]]
    owned: tuple[str, ...]
    paths: Callable[[Where], dict[str, Path]]
    hook_table: tuple[tuple[str, str | None, int], ...] = ()
    notes: Callable[[str], list[str]] = lambda scope: []

    @property
    def has_hooks(self) -> bool:
        return bool(self.hook_table)

    def files(self, scope: str, where: Where) -> list[Path]:
        return [_scoped(self.paths(where), scope)]

    def install(self, scope: str, executable: str, where: Where, hooks: bool = True, now=None) -> list[Change]:
        f = self._load(scope, where)
        programs = {executable, *server_program(f, self.container, "command")}
        put_server(f, self.container, self.entry(executable), self.owned)
        if hooks and self.hook_table:
            events = tuple(dict.fromkeys(e for e, _, _ in self.hook_table))
            put_hooks(f, events, _groups(self.hook_table, self.name, executable, True), programs, _HOOK_KEYS)
        return save_all([f], now)

    def uninstall(self, scope: str, where: Where, now=None) -> list[Change]:
        f = self._load(scope, where)
        programs = set(server_program(f, self.container, "command"))
        remove_server(f, self.container)
        if self.hook_table:
            remove_hooks(f, programs)
        return save_all([f], now)

    def _load(self, scope: str, where: Where) -> ConfigFile:
        path = _scoped(self.paths(where), scope)
        jsonc = path.with_suffix(".jsonc")
        if not path.exists() and jsonc.exists():
            raise InstallError(
                f"{jsonc}: a JSONC file (comments) is not edited here, to keep its comments; add "
                f'"{SERVER_NAME}" under "{self.container}" by hand, or rename it to {path.name}. Nothing was changed.'
            )
        return load_json(path, self.container, *(("hooks",) if self.hook_table else ()))


@dataclass(frozen=True)
class CodexClient:
    """Codex CLI: the server in config.toml (edited as text), hooks in hooks.json beside it."""

    name: str = "codex"
    title: str = "Codex CLI"
    has_hooks: bool = True

    def dir(self, scope: str, where: Where) -> Path:
        if scope == "project":
            return where.project_dir / ".codex"
        return Path(where.env["CODEX_HOME"]) if where.env.get("CODEX_HOME") else where.home / ".codex"

    def files(self, scope: str, where: Where) -> list[Path]:
        _check_scope(scope)
        return [self.dir(scope, where) / "config.toml", self.dir(scope, where) / "hooks.json"]

    def install(self, scope: str, executable: str, where: Where, hooks: bool = True, now=None) -> list[Change]:
        config, data = self._config(scope, where)
        old = data.get("mcp_servers", {}).get(SERVER_NAME)
        # Codex starts MCP servers beside its first model request and waits only briefly for
        # optional ones: mnemo (about 1.5 s to answer initialize) missed it. Required, Codex waits.
        new = {"command": executable, "args": [], "required": True}
        if isinstance(old, dict):
            new = {**old, "command": executable, "args": []}
            new.setdefault("required", True)
        files = [config]
        if new != old:
            codex_toml.rewrite(config, data, new)
            config.changes.append(f"{'updated' if old is not None else 'added'} mcp_servers.{SERVER_NAME}")
        if hooks:
            programs = {executable, *([old["command"]] if isinstance(old, dict) and old.get("command") else [])}
            hook_file = load_json(self.files(scope, where)[1], "hooks")
            events = tuple(dict.fromkeys(e for e, _, _ in CODEX_HOOKS))
            put_hooks(hook_file, events, _groups(CODEX_HOOKS, self.name, executable, False), programs, _HOOK_KEYS)
            files.append(hook_file)
        return save_all(files, now)

    def uninstall(self, scope: str, where: Where, now=None) -> list[Change]:
        config, data = self._config(scope, where)
        old = data.get("mcp_servers", {}).get(SERVER_NAME)
        hook_file = load_json(self.files(scope, where)[1], "hooks")
        if old is not None:
            codex_toml.rewrite(config, data, None)
            config.changes.append(f"removed mcp_servers.{SERVER_NAME}")
        programs = {old["command"]} if isinstance(old, dict) and isinstance(old.get("command"), str) else set()
        remove_hooks(hook_file, programs)
        return save_all([config, hook_file], now)

    def _config(self, scope: str, where: Where) -> tuple[ConfigFile, dict[str, Any]]:
        path = self.files(scope, where)[0]
        raw, mode = read_raw(path)
        f = ConfigFile(path, {}, raw, mode)
        return f, codex_toml.parse(f)

    def notes(self, scope: str) -> list[str]:
        out = [
            "Codex runs a hook only once it is trusted: review and trust mnemo's hooks in Codex "
            "(`/hooks` in a session), else they are skipped without a message"
        ]
        if scope == "project":
            out.append("Codex reads .codex/ only in a trusted project (`codex exec --trust` once)")
        return out


def _check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise InstallError(f"unknown scope {scope!r}: choose 'user' or 'project'")


def _scoped(paths: dict[str, Path], scope: str) -> Path:
    _check_scope(scope)
    return paths[scope]


def _config_home(where: Where) -> Path:
    return Path(where.env["XDG_CONFIG_HOME"]) if where.env.get("XDG_CONFIG_HOME") else where.home / ".config"


def _vscode_user(where: Where) -> Path:
    if where.platform == "darwin":
        return where.home / "Library" / "Application Support" / "Code" / "User" / "mcp.json"
    if where.platform.startswith("win"):
        base = Path(where.env["APPDATA"]) if where.env.get("APPDATA") else where.home / "AppData" / "Roaming"
        return base / "Code" / "User" / "mcp.json"
    return _config_home(where) / "Code" / "User" / "mcp.json"


def _gemini_notes(scope: str) -> list[str]:
    if scope == "project":
        return ["Gemini CLI loads .gemini/settings.json (servers and hooks) only in a trusted folder"]
    return []


CLIENTS: dict[str, Any] = {
    "codex": CodexClient(),
    "gemini": JsonClient(
        "gemini",
        "Gemini CLI",
        "mcpServers",
        lambda exe: {"command": exe, "args": []},
        ("command", "args"),
        lambda w: {
            "user": w.home / ".gemini" / "settings.json",
            "project": w.project_dir / ".gemini" / "settings.json",
        },
        GEMINI_HOOKS,
        _gemini_notes,
    ),
    "opencode": JsonClient(
        "opencode",
        "opencode",
        "mcp",
        lambda exe: {"type": "local", "command": [exe], "enabled": True},
        ("type", "command"),
        lambda w: {"user": _config_home(w) / "opencode" / "opencode.json", "project": w.project_dir / "opencode.json"},
    ),
    "cursor": JsonClient(
        "cursor",
        "Cursor",
        "mcpServers",
        lambda exe: {"command": exe, "args": [], "env": {}},
        ("command", "args"),
        lambda w: {"user": w.home / ".cursor" / "mcp.json", "project": w.project_dir / ".cursor" / "mcp.json"},
    ),
    "vscode": JsonClient(
        "vscode",
        "VS Code",
        "servers",
        lambda exe: {"type": "stdio", "command": exe, "args": []},
        ("type", "command", "args"),
        lambda w: {"user": _vscode_user(w), "project": w.project_dir / ".vscode" / "mcp.json"},
    ),
}


def client(name: str):
    try:
        return CLIENTS[name]
    except KeyError:
        raise InstallError(f"unknown client {name!r}: choose one of claude, {', '.join(CLIENTS)}") from None


def install(name: str, scope: str, executable: str, where: Where, hooks: bool = True, now: datetime | None = None):
    if not executable:
        raise InstallError("no executable given: pass the path of the mnemo-mcp program")
    return client(name).install(scope, executable, where, hooks=hooks, now=now)


def uninstall(name: str, scope: str, where: Where, now: datetime | None = None) -> list[Change]:
    return client(name).uninstall(scope, where, now=now)


def where_here(project_dir: Path) -> Where:
    return Where(Path.home(), project_dir, dict(os.environ))
