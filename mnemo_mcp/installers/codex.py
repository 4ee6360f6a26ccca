"""Codex CLI: our server as a table in config.toml (edited as text: installers.codex_toml), our
hooks in hooks.json beside it, and those hooks trusted in the user's config.toml as Codex lists
them (installers.codex_trust), since Codex skips an untrusted hook without a message."""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from . import codex_toml, codex_trust
from .merge import (
    HOOK_KEYS,
    SERVER_NAME,
    Change,
    ConfigFile,
    Where,
    check_scope,
    hook_groups,
    load_json,
    put_hooks,
    read_raw,
    remove_hooks,
    save_all,
)

# (event, matcher, timeout in seconds). Its shell tool is Bash in hooks, MCP tools
# mcp__<server>__<tool>; there is no failure event (PostToolUse fires for every command).
CODEX_HOOKS: tuple[tuple[str, str | None, int], ...] = (
    ("SessionStart", None, 15),
    ("UserPromptSubmit", None, 10),
    ("PreToolUse", "Bash", 10),
    ("PostToolUse", f"Bash|mcp__{SERVER_NAME}__memory_read", 10),
    ("Stop", None, 10),
)
SERVER_PATH = ("mcp_servers", SERVER_NAME)


@dataclass
class CodexClient:
    name: str = "codex"
    title: str = "Codex CLI"
    has_hooks: bool = True
    untrusted: bool = False  # the last install could not ask Codex for its hooks' hashes

    def dir(self, scope: str, where: Where) -> Path:
        if scope == "project":
            return where.project_dir / ".codex"
        return Path(where.env["CODEX_HOME"]) if where.env.get("CODEX_HOME") else where.home / ".codex"

    def files(self, scope: str, where: Where) -> list[Path]:
        check_scope(scope)
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
        if new != old:
            codex_toml.rewrite(config, SERVER_PATH, new)
            config.changes.append(f"{'updated' if old is not None else 'added'} mcp_servers.{SERVER_NAME}")
        if not hooks:
            return save_all([config], now)
        programs = {executable, *_program(old)}
        hook_file = load_json(self.files(scope, where)[1], "hooks")
        user = self._config("user", where)[0] if scope == "project" else None
        events = tuple(dict.fromkeys(e for e, _, _ in CODEX_HOOKS))
        put_hooks(hook_file, events, hook_groups(CODEX_HOOKS, self.name, executable, False), programs, HOOK_KEYS)
        # Written before the trust is asked for: Codex hashes the hooks as they are in their file,
        # and must read a valid config (one with our entry half-written lists nothing).
        changes = save_all([hook_file, config], now)
        trust = user or (_written(config) if config.changes else config)
        self._trust(trust, where, programs, trusted=True)
        return changes + save_all([trust], now)

    def uninstall(self, scope: str, where: Where, now: datetime | None = None) -> list[Change]:
        config, data = self._config(scope, where)
        old = data.get("mcp_servers", {}).get(SERVER_NAME)
        hook_file = load_json(self.files(scope, where)[1], "hooks")
        trust = self._config("user", where)[0] if scope == "project" else config
        programs = set(_program(old))
        self._trust(trust, where, programs, trusted=False)  # while Codex still lists our hooks
        if old is not None:
            codex_toml.rewrite(config, SERVER_PATH, None)
            config.changes.append(f"removed mcp_servers.{SERVER_NAME}")
        remove_hooks(hook_file, programs)
        return save_all(list({id(f): f for f in (config, trust, hook_file)}.values()), now)

    def _config(self, scope: str, where: Where) -> tuple[ConfigFile, dict[str, Any]]:
        path = self.files(scope, where)[0]
        raw, mode = read_raw(path)
        f = ConfigFile(path, {}, raw, mode)
        return f, codex_toml.parse(f)

    def _trust(self, f: ConfigFile, where: Where, programs: set[str], trusted: bool) -> None:
        """Trust our hooks in the user's config (or take that trust back), as Codex lists them."""
        codex = shutil.which("codex", path=where.env["PATH"]) if where.env.get("PATH") else None
        try:
            hooks = (
                codex_trust.listed_hooks(codex, where.project_dir, {**where.env, "HOME": str(where.home)})
                if codex
                else None
            )
        except OSError:  # it would not start
            hooks = None
        self.untrusted = hooks is None
        if hooks is None:
            return
        text = f.text if f.text is not None else (f.raw or b"").decode("utf-8-sig")
        state = tomllib.loads(text).get("hooks", {}).get("state", {})
        for key, digest in codex_trust.ours(hooks, programs).items():
            entry = {"trusted_hash": digest} if trusted else None
            if state.get(key) == entry or (entry is None and key not in state):
                continue
            codex_toml.rewrite(f, ("hooks", "state", key), entry)
            f.changes.append(f"{'trusted' if trusted else 'took back trust in'} hook {key.rsplit('/', 1)[-1]}")

    def notes(self, scope: str) -> list[str]:
        out = []
        if self.untrusted:
            out.append(
                "`codex` is not on PATH, so mnemo's hooks could not be trusted: Codex skips untrusted hooks without "
                "a message; run `mnemo-mcp install codex` again where `codex` is on PATH"
            )
        if scope == "project":
            out.append("Codex reads .codex/ only in a trusted project (`codex exec --trust` once)")
        return out


def _program(entry: Any) -> list[str]:
    command = entry.get("command") if isinstance(entry, dict) else None
    return [command] if isinstance(command, str) and command else []


def _written(f: ConfigFile) -> ConfigFile:
    """The file as this install just wrote it, to edit further: its original is backed up already."""
    return ConfigFile(f.path, {}, None, f.mode, text=f.text)
