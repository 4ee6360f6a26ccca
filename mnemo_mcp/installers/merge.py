"""How every installer edits a client's files: load and check all of them before writing any,
change only our entries (the server named "mnemo", hook entries whose command is ours), keep
everything else as it was, back up the original, write atomically (through a symlink to its
target), and report each change. An empty list of changes means nothing was written.

JSON files are parsed and re-serialized; text formats (Codex's TOML) hand in their new text
through `ConfigFile.text`.
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
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import MnemoError
from .hook_start import hook_prefix, is_boot

SERVER_NAME = "mnemo"
PROGRAM = "mnemo-mcp"
SCOPES = ("user", "project")
# Keys of a hook entry that install writes; others the user added to ours are kept.
HOOK_KEYS = ("name", "type", "command", "timeout")


@dataclass(frozen=True)
class Where:
    """What an installer needs to know about the machine; tests pass their own."""

    home: Path
    project_dir: Path
    env: Mapping[str, str]
    platform: str = sys.platform


class InstallError(MnemoError, ValueError):
    """A settings file cannot be merged safely; nothing was changed."""


@dataclass(frozen=True)
class Change:
    path: Path
    action: str


@dataclass
class ConfigFile:
    path: Path
    data: dict[str, Any]
    raw: bytes | None  # None: the file does not exist yet
    mode: int | None
    changes: list[str] = field(default_factory=list)
    text: str | None = None  # set by a text-format editor: written as is instead of `data` as JSON
    remove: bool = False  # a file of ours that uninstall deletes (after its backup)


def check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise InstallError(f"unknown scope {scope!r}: choose 'user' or 'project'")


def hook_command(executable: str, client: str, event: str) -> str:
    return f"{hook_prefix(executable)} hook --client {client} {event}"


def hook_groups(table: tuple[tuple[str, str | None, int], ...], client: str, executable: str, named: bool):
    def groups_for(event: str) -> list[dict[str, Any]]:
        out = []
        for name, matcher, timeout in table:
            if name != event:
                continue
            entry: dict[str, Any] = {"name": f"mnemo-{event}"} if named else {}
            entry |= {"type": "command", "command": hook_command(executable, client, event), "timeout": timeout}
            out.append({**({} if matcher is None else {"matcher": matcher}), "hooks": [entry]})
        return out

    return groups_for


def fail(path: Path, problem: str) -> InstallError:
    return InstallError(f"{path}: {problem}; fix it (or move the file away) and run again. Nothing was changed.")


def read_raw(path: Path) -> tuple[bytes | None, int | None]:
    try:
        return path.read_bytes(), stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None, None


def load_json(path: Path, *containers: str) -> ConfigFile:
    """A JSON settings file (a missing or empty one is `{}`); each of `containers` must be an
    object where present, and "hooks" an object of arrays."""
    raw, mode = read_raw(path)
    if raw is None:
        return ConfigFile(path, {}, None, None)
    try:
        text = raw.decode("utf-8-sig")
        data = json.loads(text) if text.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise fail(path, f"not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise fail(path, f"must hold a JSON object, found {type(data).__name__}")
    for key in containers:
        if not isinstance(data.get(key, {}), dict):
            raise fail(path, f'"{key}" must be an object, found {type(data[key]).__name__}')
    for event, groups in data.get("hooks", {}).items() if "hooks" in containers else ():
        if not isinstance(groups, list):
            raise fail(path, f'"hooks"."{event}" must be an array of hook groups')
    return ConfigFile(path, data, raw, mode)


def put_server(f: ConfigFile, container: str, new: dict[str, Any], owned: Iterable[str]) -> None:
    """Add or update our server entry in `f.data[container]`: the `owned` keys (how the server
    starts) are ours; anything else the user put in the entry (env such as MNEMO_DB) is kept."""
    servers = f.data.setdefault(container, {})
    old = servers.get(SERVER_NAME)
    if isinstance(old, dict):
        merged = {**old, **{k: new[k] for k in owned if k in new}}
        for key, value in new.items():
            merged.setdefault(key, value)
        new = merged
    if new != old:
        f.changes.append(f"{'updated' if SERVER_NAME in servers else 'added'} {container}.{SERVER_NAME}")
        servers[SERVER_NAME] = new


def remove_server(f: ConfigFile, container: str) -> None:
    servers = f.data.get(container)
    if servers and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        f.changes.append(f"removed {container}.{SERVER_NAME}")
        if not servers:
            del f.data[container]


def server_program(f: ConfigFile, container: str, key: str = "command") -> list[str]:
    """The program our existing entry runs (a list-valued command: its first word)."""
    entry = f.data.get(container, {}).get(SERVER_NAME)
    command = entry.get(key) if isinstance(entry, dict) else None
    if isinstance(command, list):
        command = command[0] if command else None
    return [command] if isinstance(command, str) and command else []


def is_ours(hook: Any, event: str, programs: set[str]) -> bool:
    """A hook entry whose command is `<mnemo-mcp> hook ... EVENT`, or its quick start."""
    command = hook.get("command") if isinstance(hook, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) < 3 or words[-1] != event or "hook" not in words[1:-1]:
        return False
    if is_boot(words):  # `<python> -S -P -c <boot> hook ...` (hook_start.py)
        return True
    # By program name rather than full path: after the executable moves (new venv, pipx reinstall) the old
    # entry is still recognised and updated instead of duplicated. `programs` covers executables named otherwise.
    name = re.split(r"[\\/]", words[0])[-1]
    return name in (PROGRAM, PROGRAM + ".exe") or words[0] in programs


def put_hooks(
    f: ConfigFile,
    events: Iterable[str],
    groups_for: Callable[[str], list[dict[str, Any]]],
    programs: set[str],
    our_keys: Iterable[str],
) -> None:
    """Our hook groups for each event (`groups_for(event)`), where ours were, else after other
    tools' groups; keys the user added to our entries (other than `our_keys`) are kept."""
    hooks = f.data.get("hooks", {})
    our_keys = tuple(our_keys)
    for event in events:
        groups = hooks.setdefault(event, [])
        before = copy.deepcopy(groups)
        at, extra, found = take_ours(groups, event, programs, our_keys)
        want = groups_for(event)
        for group in want:
            group["hooks"] = [{**entry, **extra} for entry in group["hooks"]]
        # A moved executable is updated in place; theirs keep their order and run as before.
        groups[at:at] = want
        if groups != before:
            f.changes.append(f"{'updated' if found else 'added'} hook {event}")
    if hooks and "hooks" not in f.data:
        f.data["hooks"] = hooks


def take_ours(
    groups: list[Any], event: str, programs: set[str], our_keys: tuple[str, ...] = ()
) -> tuple[int, dict[str, Any], bool]:
    """Remove our entries from an event's groups (a group left empty goes too). -> where the
    first of them was (the end when none), the keys the user added to our entry, and whether
    there were any."""
    at, extra = None, {}
    kept = []
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        mine = [h for h in entries if is_ours(h, event, programs)] if isinstance(entries, list) else []
        if not mine:
            kept.append(group)
            continue
        if at is None:
            at = len(kept)
            extra = {k: v for k, v in mine[0].items() if k not in our_keys}
        rest = [h for h in entries if not is_ours(h, event, programs)]
        if rest:
            kept.append({**group, "hooks": rest})
    groups[:] = kept
    return (len(kept) if at is None else at), extra, at is not None


def remove_hooks(f: ConfigFile, programs: set[str]) -> None:
    hooks = f.data.get("hooks")
    if not hooks:
        return
    for event in list(hooks):
        _, _, found = take_ours(hooks[event], event, programs)
        if found:
            f.changes.append(f"removed hook {event}")
            if not hooks[event]:
                del hooks[event]
    if not hooks:
        del f.data["hooks"]


def save_all(files: list[ConfigFile], now: datetime | None) -> list[Change]:
    """Write each changed file (after a backup of its original); -> every change made."""
    now = now or datetime.now()
    out: list[Change] = []
    for f in files:
        if not f.changes:
            continue
        if f.raw is not None and f.mode is not None:
            out.append(Change(f.path, f"backup -> {backup(f.path, f.raw, f.mode, now)}"))
        if f.remove:
            f.path.unlink(missing_ok=True)
            out.extend(Change(f.path, action) for action in f.changes)
            continue
        # Through a symlink (dotfiles managers link settings.json) to its target, rather than replacing the link.
        target = Path(os.path.realpath(f.path))
        target.parent.mkdir(parents=True, exist_ok=True)
        body = f.text if f.text is not None else json.dumps(f.data, indent=2, ensure_ascii=False) + "\n"
        atomic_write(target, body.encode(), f.mode)
        out.extend(Change(f.path, action) for action in f.changes)
    return out


def render(changes: list[Change]) -> str:
    lines = [f"{c.path}: {c.action}" for c in changes]
    return "\n".join(lines or ["nothing to change"])


def backup(path: Path, raw: bytes, mode: int, now: datetime) -> Path:
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


def atomic_write(target: Path, data: bytes, mode: int | None) -> None:
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
