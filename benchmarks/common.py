"""Helpers every benchmark shares (no benchmark imports another's private parts)."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """The q-quantile by nearest rank (q in [0, 1])."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def mnemo_command() -> str:
    """`mnemo-mcp` as installed beside this interpreter: what Claude Code runs."""
    import shutil
    import sys
    from pathlib import Path

    found = shutil.which("mnemo-mcp", path=str(Path(sys.executable).parent)) or shutil.which("mnemo-mcp")
    if not found:
        raise SystemExit("mnemo-mcp is not installed beside this Python: pip install -e .")
    return found


def start_hook_server(env: dict[str, str], cwd, db, timeout: float = 120.0):
    """An MCP server of `db` (a `mnemo-mcp serve` process), waited for until it answers hooks
    with its model loaded. Stop it with .send_signal(2) (SIGINT, as Claude Code does)."""
    import subprocess
    import time

    from mnemo_mcp.hooks import channel

    proc = subprocess.Popen(
        [mnemo_command(), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    probe = {
        "event": "Stop",
        "payload": {"session_id": "bench-probe", "cwd": str(cwd)},
        "env": {k: v for k, v in env.items() if k.startswith("MNEMO_")},
        "cwd": str(cwd),
    }
    deadline = time.monotonic() + timeout
    while channel.ask(db, probe, budget_s=0.5) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("the MCP server did not come up to answer hooks")
        time.sleep(0.2)
    return proc
