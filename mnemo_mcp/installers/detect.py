"""`mnemo-mcp install` with no client: which clients this machine has (a program on PATH or
its settings folder) and what installing for each would change. Nothing is written."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from .. import claude_install
from .agents import CLIENTS, Where

# (client, its program, folders that show it is set up here)
SIGNS: tuple[tuple[str, str, Callable[[Where], list[Path]]], ...] = (
    ("claude", "claude", lambda w: [w.home / ".claude"]),
    ("codex", "codex", lambda w: [CLIENTS["codex"].dir("user", w)]),
    ("gemini", "gemini", lambda w: [w.home / ".gemini"]),
    ("opencode", "opencode", lambda w: [CLIENTS["opencode"].files("user", w)[0].parent]),
    ("cursor", "cursor", lambda w: [w.home / ".cursor"]),
    ("vscode", "code", lambda w: [CLIENTS["vscode"].files("user", w)[0].parent]),
)


def found(where: Where, which: Callable[[str], str | None] = shutil.which) -> list[tuple[str, str]]:
    """(client, why we think it is here) for each client found."""
    out = []
    for name, program, folders in SIGNS:
        path = which(program)
        if path:
            out.append((name, f"`{program}` on PATH ({path})"))
            continue
        present = [p for p in folders(where) if p.is_dir()]
        if present:
            out.append((name, f"{present[0]} exists"))
    return out


def files_of(name: str, scope: str, where: Where) -> tuple[list[Path], bool]:
    """The files installing for a client would change, and whether it gets hooks."""
    if name == "claude":
        return list(claude_install.plan_paths(scope, where.home, where.project_dir)), True
    c = CLIENTS[name]
    return c.files(scope, where), c.has_hooks


def report(where: Where, scope: str, which: Callable[[str], str | None] = shutil.which) -> str:
    clients = found(where, which)
    if not clients:
        names = ", ".join(["claude", *CLIENTS])
        return (
            f"no MCP client found here (none of their programs on PATH nor their settings folders); name one: {names}"
        )
    lines = [f"found {len(clients)} client(s); `mnemo-mcp install CLIENT` would change ({scope} scope):"]
    for name, why in clients:
        paths, hooks = files_of(name, scope, where)
        what = "the MCP server and hooks" if hooks else "the MCP server (no hooks: the tools and their instructions)"
        lines.append(f"  {name}: {what} in {', '.join(map(str, dict.fromkeys(paths)))}  [{why}]")
    lines.append("nothing was changed; run e.g. `mnemo-mcp install " + clients[0][0] + "`")
    return "\n".join(lines)
