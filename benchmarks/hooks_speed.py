"""Latency of the Claude Code hooks, each a fresh `mnemo-mcp hook EVENT` process as Claude Code
runs them (the command `mnemo-mcp install` writes for a user: see --script), on a database of N
memories (LoCoMo turns, repeated with a marker to reach N).

Per event: p50 / p95 wall time from spawn to exit over R runs with realistic stdin JSON (prompts
are LoCoMo questions; tool events carry a check command or a memory_read result), twice: with an
MCP server of the same database up (it has the model loaded and answers through the socket
beside the database) and with none (the hook recalls by keywords itself). The baseline in the
same run is `python -c pass`: what any Python hook pays; every figure is also given as a ratio
to it. "Bash, not a check" is `git status`: with the installer's `if` filters Claude Code spawns
nothing for it; this is what an older CLI without `if` pays.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import mnemo_command, percentile, start_hook_server
from .locomo import load_locomo

DEFAULT_OUT = Path("benchmarks/results/hooks_speed.json")
EVENTS = ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "SessionStart", "Stop")


def build(db: Path, data: Path, n: int) -> int:
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    base = [t.content for conv in load_locomo(data) for t in conv.turns]
    texts = [base[i % len(base)] + ("" if i < len(base) else f" (copy {i // len(base)})") for i in range(n)]
    svc = MemoryService(Settings(db=db, project="bench", auto_consolidate=False))
    for i in range(0, n, 256):
        svc.write_many([{"content": t, "allow_duplicate": True} for t in texts[i : i + 256]])
    total = svc.stats().total
    svc.close()
    return total


def payloads(data: Path, rng: random.Random, cwd: str, runs: int) -> dict[str, list[dict[str, Any]]]:
    questions = [q.question for conv in load_locomo(data) for q in conv.questions]
    common = {"transcript_path": "/tmp/t.jsonl", "cwd": cwd, "permission_mode": "default"}
    reactions = [
        "thanks, that fixed it",
        "still failing with the same error",
        "almost, one test left",
        "add a flag for it",
    ]
    read = {"read_id": "0123456789abcdef", "query_concepts": ["deploy"], "items": []}
    out: dict[str, list[dict[str, Any]]] = {e: [] for e in (*EVENTS, "Bash, not a check")}
    answer = " ".join(rng.sample(questions, 6))  # an answer of a few sentences about the same things
    for i in range(runs):
        sid = f"bench-{i // 4}"
        turn = {**common, "session_id": sid, "prompt_id": f"p-{i}"}
        text = rng.choice(reactions) + ". " + rng.choice(questions) if i % 4 else rng.choice(questions)
        out["UserPromptSubmit"].append({**turn, "hook_event_name": "UserPromptSubmit", "prompt": text})
        tool = (
            {
                "tool_name": "Bash",
                "tool_input": {"command": rng.choice(["pytest -q", "npm test", "cargo test"])},
                "tool_response": {"stdout": "1 passed", "stderr": "", "interrupted": False, "isImage": False},
            }
            if i % 2
            else {
                "tool_name": "mcp__mnemo__memory_read",
                "tool_input": {"query": "x"},
                "tool_response": json.dumps(read),
            }
        )
        out["PostToolUse"].append({**turn, "hook_event_name": "PostToolUse", **tool})
        out["PostToolUseFailure"].append(
            {
                **turn,
                "hook_event_name": "PostToolUseFailure",
                "tool_name": "Bash",
                "tool_input": {"command": "make test"},
                "error": "Exit code 2\nFAILED x",
                "is_interrupt": False,
            }
        )
        out["Bash, not a check"].append(
            {
                **turn,
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "git status"},
                "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
            }
        )
        out["SessionStart"].append(
            {**common, "session_id": f"{sid}-{i}", "hook_event_name": "SessionStart", "source": "startup"}
        )
        out["Stop"].append(
            {**turn, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": answer}
        )
    return out


def time_runs(argv: list[str], inputs: list[str], env: dict[str, str]) -> list[float]:
    ms = []
    for raw in inputs:
        t = time.perf_counter()
        done = subprocess.run(argv, input=raw, capture_output=True, text=True, env=env, timeout=60)
        ms.append((time.perf_counter() - t) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-500:]}")
    return ms


def hook_program(script: bool) -> list[str]:
    """What the client runs before `hook EVENT`: as `mnemo-mcp install` writes it for a user (the
    quick start, installers/hook_start.py, where it applies), or the `mnemo-mcp` script itself
    (`script`: as installs written before it, and project files, run it)."""
    from mnemo_mcp.installers.hook_start import hook_argv

    return [mnemo_command()] if script else list(hook_argv(mnemo_command()))


def measure(
    per_event: dict[str, list[dict[str, Any]]], env: dict[str, str], runs: int, program: list[str]
) -> dict[str, dict[str, float]]:
    """Each hook run is followed by a `python -c pass` run, so that the ratio of the two p50s
    compares processes that saw the same load."""
    rows = {}
    for event, items in per_event.items():
        hook_event = "PostToolUse" if event == "Bash, not a check" else event
        ms, base = [], []
        for item in items[:runs]:
            ms += time_runs([*program, "hook", hook_event], [json.dumps(item)], env)
            base += time_runs([sys.executable, "-c", "pass"], [""], env)
        rows[event] = {
            "p50_ms": percentile(ms, 0.5),
            "p95_ms": percentile(ms, 0.95),
            "mean_ms": statistics.mean(ms),
            "pass_p50_ms": percentile(base, 0.5),
            "x_pass": percentile(ms, 0.5) / percentile(base, 0.5),
        }
    return rows


def server_side(db: Path, prompts: list[dict[str, Any]], env: dict[str, str], runs: int, rng: random.Random) -> float:
    """p50 of a prompt asked of the server from this process (the socket's round trip and the
    server's handling, without a hook process's start), in new sessions so each is a first turn."""
    from mnemo_mcp.hooks import channel

    mnemo = {k: v for k, v in env.items() if k.startswith("MNEMO_")}
    ms = []
    for i, payload in enumerate(prompts[:runs]):
        payload = {**payload, "session_id": f"asked-{i}-{rng.random():.6f}"}
        request = {"event": "UserPromptSubmit", "payload": payload, "env": mnemo, "cwd": payload["cwd"]}
        t = time.perf_counter()
        result = channel.ask(db, request, budget_s=2.0)
        ms.append((time.perf_counter() - t) * 1000)
        if not result or not result.get("ok"):
            raise RuntimeError(f"the server did not handle the prompt: {result}")
    return percentile(ms, 0.5)


def print_table(
    total: int,
    runs: int,
    build_s: float,
    base: list[float],
    with_server: dict[str, dict[str, float]],
    alone: dict[str, dict[str, float]],
    asked: float,
) -> None:
    baseline = percentile(base, 0.5)
    print(f"hook latency, spawn to exit, {total} memories, {runs} runs per event (build {build_s:.0f} s)")
    print(f"baseline `python -c pass`: p50 {baseline:.0f} ms, p95 {percentile(base, 0.95):.0f} ms (x base: against")
    print("the `python -c pass` run after each hook run)")
    print(
        f"{'event':22} {'server up: p50':>14} {'p95':>6} {'x base':>7} | {'no server: p50':>14} {'p95':>6} "
        f"{'x base':>7}"
    )
    for name in with_server:
        s, o = with_server[name], alone[name]
        print(
            f"{name:22} {s['p50_ms']:>12.0f}ms {s['p95_ms']:>4.0f}ms {s['x_pass']:>7.2f} | "
            f"{o['p50_ms']:>12.0f}ms {o['p95_ms']:>4.0f}ms {o['x_pass']:>7.2f}"
        )
    start = with_server["Bash, not a check"]["p50_ms"]
    print(
        f"UserPromptSubmit, server up, in parts: the hook process's start and decision (a Bash call that is not a"
        f" check) {start:.0f} ms; the socket's round trip and the server's handling, asked from this process"
        f" {asked:.0f} ms"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.hooks_speed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data", type=Path, required=True, help="path to locomo_dev.json")
    p.add_argument("--n", type=int, default=10_000, help="memories in the database (default 10000)")
    p.add_argument("--runs", type=int, default=40, help="runs per event (default 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="CI size: 300 memories, 3 runs per event")
    p.add_argument(
        "--store",
        type=Path,
        help="a copy of this store (of --n memories) instead of building one (e.g. benchmarks.speed's)",
    )
    p.add_argument(
        "--script",
        action="store_true",
        help="run the `mnemo-mcp` script, as hooks installed before the quick start do, instead of the"
        " command `mnemo-mcp install` writes now",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv)
    if not a.data.exists():
        p.error(f"--data {a.data} does not exist")
    n, runs = (300, 3) if a.quick else (a.n, a.runs)
    program = hook_program(a.script)
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "hooks.db"
        t = time.perf_counter()
        if a.store:
            import shutil

            shutil.copy(a.store, db)
            total = n  # as --n says: the benchmarks run no SQL of their own to count it
        else:
            total = build(db, a.data, n)
        build_s = time.perf_counter() - t
        project = Path(tmp) / "bench"
        (project / ".git").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
        env |= {"MNEMO_DB": str(db), "MNEMO_HOOK_LOG": str(Path(tmp) / "hooks.log"), "MNEMO_AUTO_CONSOLIDATE": "false"}
        per_event = payloads(a.data, rng, str(project), runs)
        base = time_runs([sys.executable, "-c", "pass"], [""] * runs, env)
        baseline = percentile(base, 0.5)
        server = start_hook_server(env, project, db)
        try:
            with_server = measure(per_event, env, runs, program)
            asked = server_side(db, per_event["UserPromptSubmit"], env, runs, rng)
        finally:
            server.send_signal(2)
            server.wait(timeout=30)
        alone = measure(per_event, {**env, "MNEMO_HOOK_SERVER": "0"}, runs, program)
        log = Path(env["MNEMO_HOOK_LOG"])
        errors = log.read_text() if log.exists() else ""
    print(f"hook command: {' '.join(program)} hook EVENT")
    print_table(total, runs, build_s, base, with_server, alone, asked)
    if errors:
        print(f"hook errors were logged:\n{errors[-2000:]}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(
        json.dumps(
            {
                "benchmark": "hooks_speed",
                "memories": total,
                "runs": runs,
                "hook_program": program,
                "baseline_p50_ms": baseline,
                "with_server": with_server,
                "prompt_asked_from_here_p50_ms": asked,
                "no_server": alone,
                "hook_errors": bool(errors),
            },
            indent=2,
        )
    )
    print(f"results: {a.out}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
