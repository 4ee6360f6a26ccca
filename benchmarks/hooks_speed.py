"""Latency of the Claude Code hooks, each a fresh `mnemo-mcp hook EVENT` process as Claude Code
runs them, on a database of N memories (LoCoMo turns, repeated with a marker to reach N).

Per event: p50 / p95 wall time from spawn to exit, over R runs with realistic stdin JSON
(prompts are LoCoMo questions; tool events carry a test command or a memory_read result). The
baseline in the same run is `python -c pass` plus importing the hook module: what any Python
hook pays before it touches the database.
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

from .locomo import load_locomo

DEFAULT_OUT = Path("benchmarks/results/hooks_speed.json")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def build(db: Path, data: Path, n: int) -> int:
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    base = [t.content for conv in load_locomo(data) for t in conv.turns]
    texts = [base[i % len(base)] + ("" if i < len(base) else f" (copy {i // len(base)})") for i in range(n)]
    svc = MemoryService(Settings(db=db, project="bench"))
    for i in range(0, n, 256):
        svc.write_many([{"content": t, "allow_duplicate": True} for t in texts[i : i + 256]])
    total = svc.stats().total
    svc.close()
    return total


def payloads(data: Path, rng: random.Random, cwd: str) -> dict[str, list[dict[str, Any]]]:
    questions = [q.question for conv in load_locomo(data) for q in conv.questions]
    common = {"transcript_path": "/tmp/t.jsonl", "cwd": cwd, "permission_mode": "default"}
    reactions = ["thanks, that fixed it", "still failing with the same error", "almost, one test left", "add a flag for it"]
    read = {"read_id": "0123456789abcdef", "query_concepts": ["deploy"], "items": []}
    out: dict[str, list[dict[str, Any]]] = {"UserPromptSubmit": [], "PostToolUse": [], "SessionStart": [], "Stop": []}
    transcript = Path(cwd) / "transcript.jsonl"
    answer = " ".join(rng.sample(questions, 6))  # an answer of a few sentences about the same things
    transcript.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "question"}}) + "\n"
        + json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}}) + "\n"
    )
    for i in range(200):
        sid = f"bench-{i // 4}"
        text = rng.choice(reactions) + ". " + rng.choice(questions) if i % 4 else rng.choice(questions)
        out["UserPromptSubmit"].append({**common, "session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt": text})
        tool = (
            {"tool_name": "Bash", "tool_input": {"command": rng.choice(["pytest -q", "npm test", "ls -la", "git status"])},
             "tool_response": {"stdout": "", "stderr": "", "interrupted": False}}
            if i % 2
            else {"tool_name": "mcp__mnemo__memory_read", "tool_input": {"query": "x"}, "tool_response": read}
        )
        out["PostToolUse"].append({**common, "session_id": sid, "hook_event_name": "PostToolUse", **tool})
        out["SessionStart"].append({**common, "session_id": sid, "hook_event_name": "SessionStart", "source": "startup"})
        out["Stop"].append({**common, "transcript_path": str(transcript), "session_id": sid, "hook_event_name": "Stop",
                            "stop_hook_active": False})
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.hooks_speed", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="path to locomo_dev.json")
    p.add_argument("--n", type=int, default=10_000, help="memories in the database (default 10000)")
    p.add_argument("--runs", type=int, default=40, help="runs per event (default 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="CI size: 300 memories, 5 runs per event")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv)
    if not a.data.exists():
        p.error(f"--data {a.data} does not exist")
    n, runs = (300, 5) if a.quick else (a.n, a.runs)
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "hooks.db"
        t = time.perf_counter()
        total = build(db, a.data, n)
        build_s = time.perf_counter() - t
        project = Path(tmp) / "bench"
        (project / ".git").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
        env |= {"MNEMO_DB": str(db), "MNEMO_HOOK_LOG": str(Path(tmp) / "hooks.log")}
        per_event = payloads(a.data, rng, str(project))
        rows: dict[str, dict[str, float]] = {}
        base = time_runs([sys.executable, "-c", "import mnemo_mcp.hooks"], [""] * runs, env)
        rows["baseline: python + import"] = {"p50_ms": _pct(base, 0.5), "p95_ms": _pct(base, 0.95)}
        for event, items in per_event.items():
            inputs = [json.dumps(x) for x in items[:runs]]
            ms = time_runs([sys.executable, "-m", "mnemo_mcp", "hook", event], inputs, env)
            rows[event] = {"p50_ms": _pct(ms, 0.5), "p95_ms": _pct(ms, 0.95), "mean_ms": statistics.mean(ms)}
        log = Path(env["MNEMO_HOOK_LOG"])
        errors = log.read_text() if log.exists() else ""
    print(f"hook latency, {total} memories, {runs} runs per event (build {build_s:.0f} s)")
    print(f"{'event':28} {'p50':>8} {'p95':>8}")
    for name, r in rows.items():
        print(f"{name:28} {r['p50_ms']:>6.0f}ms {r['p95_ms']:>6.0f}ms")
    if errors:
        print(f"hook errors were logged:\n{errors[-2000:]}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"benchmark": "hooks_speed", "memories": total, "runs": runs, "rows": rows,
                                 "hook_errors": bool(errors)}, indent=2))
    print(f"results: {a.out}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
