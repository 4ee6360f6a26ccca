"""Register mnemo-mcp with Codex CLI (installers.codex), Gemini CLI, opencode, Cursor and VS Code,
each in its own format and place, merged exactly as the Claude Code installer merges
(installers.merge).

| client | user scope | project scope | hooks |
| --- | --- | --- | --- |
| codex | $CODEX_HOME/config.toml (~/.codex), hooks.json beside it | .codex/config.toml, .codex/hooks.json | yes |
| gemini | ~/.gemini/settings.json (server and hooks) | .gemini/settings.json | yes |
| opencode | ~/.config/opencode/opencode.json, plugin/mnemo.js | opencode.json, .opencode/plugin/mnemo.js | a plugin |
| cursor | ~/.cursor/mcp.json | .cursor/mcp.json | no |
| vscode | the user profile's mcp.json | .vscode/mcp.json | no |

The hook commands name the client and its own event (`mnemo-mcp hook --client gemini AfterTool`);
hooks.clients maps them onto the one set of handlers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from .codex import CodexClient
from .hook_start import hook_argv
from .merge import (
    HOOK_KEYS,
    SCOPES,
    SERVER_NAME,
    Change,
    ConfigFile,
    InstallError,
    Where,
    check_scope,
    hook_groups,
    load_json,
    put_hooks,
    put_server,
    read_raw,
    remove_hooks,
    remove_server,
    save_all,
    server_program,
)

__all__ = ["CLIENTS", "SCOPES", "CodexClient", "JsonClient", "Where", "client", "install", "uninstall"]
# Gemini CLI: (event, matcher, timeout in milliseconds). Its shell tool is run_shell_command, its
# edits replace and write_file, MCP tools mcp_<server>_<tool>; a failing command fires AfterTool too.
GEMINI_HOOKS: tuple[tuple[str, str | None, int], ...] = (
    ("SessionStart", None, 15_000),
    ("BeforeAgent", None, 10_000),
    ("BeforeTool", "run_shell_command", 10_000),
    ("AfterTool", f"run_shell_command|mcp_{SERVER_NAME}_memory_read|replace|write_file", 10_000),
    ("AfterAgent", None, 10_000),
)


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
            put_hooks(f, events, hook_groups(self.hook_table, self.name, executable, True), programs, HOOK_KEYS)
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


PLUGIN_MARK = "// mnemo-mcp:"


@dataclass(frozen=True)
class OpencodeClient(JsonClient):
    """opencode: the server in its JSON config, and, for hooks, a plugin of ours (opencode has no
    command hooks) that passes its events to `mnemo-mcp hook --client opencode`."""

    plugin_paths: Callable[[Where], dict[str, Path]] = lambda w: {}

    @property
    def has_hooks(self) -> bool:
        return True

    def files(self, scope: str, where: Where) -> list[Path]:
        return [*super().files(scope, where), _scoped(self.plugin_paths(where), scope)]

    def install(self, scope: str, executable: str, where: Where, hooks: bool = True, now=None) -> list[Change]:
        if not hooks:
            return super().install(scope, executable, where, hooks=False, now=now)
        plugin = self._plugin(scope, where)  # checked before anything is written
        text = resources.files(__package__).joinpath("opencode_plugin.js").read_text(encoding="utf-8")
        text = text.replace("__MNEMO_HOOK_ARGV__", json.dumps(list(hook_argv(executable)), ensure_ascii=False))
        if plugin.raw is None or plugin.raw.decode("utf-8", "replace") != text:
            plugin.text = text
            plugin.changes.append("updated the mnemo plugin" if plugin.raw is not None else "added the mnemo plugin")
        return super().install(scope, executable, where, hooks=False, now=now) + save_all([plugin], now)

    def uninstall(self, scope: str, where: Where, now=None) -> list[Change]:
        plugin = self._plugin(scope, where, strict=False)
        if plugin.raw is not None and plugin.raw.startswith(PLUGIN_MARK.encode()):
            plugin.remove = True
            plugin.changes.append("removed the mnemo plugin")
        return super().uninstall(scope, where, now=now) + save_all([plugin], now)

    def _plugin(self, scope: str, where: Where, strict: bool = True) -> ConfigFile:
        path = _scoped(self.plugin_paths(where), scope)
        raw, mode = read_raw(path)
        if strict and raw is not None and not raw.startswith(PLUGIN_MARK.encode()):
            raise InstallError(f"{path} is not mnemo's plugin; move it away and run again. Nothing was changed.")
        return ConfigFile(path, {}, raw, mode)


def _scoped(paths: dict[str, Path], scope: str) -> Path:
    check_scope(scope)
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
    "opencode": OpencodeClient(
        "opencode",
        "opencode",
        "mcp",
        lambda exe: {"type": "local", "command": [exe], "enabled": True},
        ("type", "command"),
        lambda w: {"user": _config_home(w) / "opencode" / "opencode.json", "project": w.project_dir / "opencode.json"},
        plugin_paths=lambda w: {
            "user": _config_home(w) / "opencode" / "plugin" / "mnemo.js",
            "project": w.project_dir / ".opencode" / "plugin" / "mnemo.js",
        },
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
