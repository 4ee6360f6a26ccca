"""Codex runs a hook only once it is trusted, and skips an untrusted one without a word. Trust is
an entry in the user's config.toml, `[hooks.state."<hooks file>:<event>:<group>:<handler>"]
trusted_hash = "sha256:..."`, with the hash Codex computes of the hook. `codex app-server`
(JSON-RPC over stdio) lists the hooks it sees with their key, hash and trust status; installing
mnemo's hooks trusts those whose command is ours, and no other."""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
from pathlib import Path

from .merge import is_ours

APP_SERVER_TIMEOUT = 30.0  # seconds; it answers in about one


def _request(cwd: Path) -> str:
    lines = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "mnemo-mcp", "version": "0"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def listed_hooks(codex: str, cwd: Path, env: dict[str, str]) -> list[dict]:
    """The hooks Codex sees for `cwd`: dicts with key, command, currentHash, trustStatus."""
    proc = subprocess.Popen(
        [codex, "app-server"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    timer = threading.Timer(APP_SERVER_TIMEOUT, proc.kill)  # a hung app-server ends the wait
    timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_request(cwd))
        proc.stdin.flush()
        for line in proc.stdout:  # notifications come between the answers
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == 2:
                data = (message.get("result") or {}).get("data") or []
                return [h for entry in data for h in entry.get("hooks") or [] if isinstance(h, dict)]
        return []
    finally:
        timer.cancel()
        proc.kill()
        proc.wait(timeout=APP_SERVER_TIMEOUT)


def ours(hooks: list[dict], programs: set[str]) -> dict[str, str]:
    """key -> current hash of each of mnemo's hooks among `hooks`."""
    out = {}
    for hook in hooks:
        command, key, digest = hook.get("command"), hook.get("key"), hook.get("currentHash")
        if not (isinstance(command, str) and isinstance(key, str) and isinstance(digest, str)):
            continue
        try:
            event = shlex.split(command)[-1]
        except (ValueError, IndexError):
            continue
        if is_ours({"command": command}, event, programs):
            out[key] = digest
    return out
