"""Many sessions on one laptop: the resident memory of 1, 2 and 5 MCP servers on one store.

    python -m benchmarks.sessions --data ../shared/data/locomo/locomo_dev.json [--memories 200]

Each server is the real `mnemo-mcp` command over stdio with the official client, as Claude Code
starts one per session; each makes a memory_write and a memory_read, then the memory of every
server process is read from /proc: the sum of RSS and of PSS (proportional set size: a page
shared by n processes counts 1/n in each, so the sum is what the machine holds). Two
configurations in the same run: as before (MNEMO_SHARE_MODEL=false, MNEMO_EMBED_WEIGHTS=float32:
each server loads the model with its weights folded into float32) and now (the defaults: int8
weights, one model for the servers of the store). Also: the embeddings of the int8 graph against
the float model's (cosine, on LoCoMo turns and questions). The benchmark's own PSS is recorded
too: a Python client maps the servers' libraries, so part of their pages' PSS is its own (Claude
Code's node process maps none of them); the last-but-one column counts it with the servers'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from .common import mnemo_command
from .locomo import load_locomo

DEFAULT_OUT = Path("benchmarks/results/sessions.json")
CONFIGS = {
    "before: a model per server, float32 weights": {"MNEMO_SHARE_MODEL": "false", "MNEMO_EMBED_WEIGHTS": "float32"},
    "now: int8 weights, one model per store": {},
}


def _proc_memory(pid: int) -> dict[str, float]:
    """RSS, peak RSS and PSS of a process in MB (PSS from smaps_rollup where the kernel has it)."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith(("Pss:", "Private_Clean:", "Private_Dirty:")):
                    key = "Pss" if line.startswith("Pss:") else "Private"
                    out[key] = out.get(key, 0.0) + int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


def _servers() -> list[int]:
    """This process's children running mnemo-mcp."""
    me, found = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1] != me:
                continue
            if b"mnemo" in open(f"/proc/{pid}/cmdline", "rb").read():
                found.append(int(pid))
        except (OSError, IndexError):
            continue
    return sorted(found)


def build(db: Path, data: Path, n: int) -> None:
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    texts = [t.content for conv in load_locomo(data) for t in conv.turns][:n]
    svc = MemoryService(Settings(db=db, project="bench", auto_consolidate=False, auto_backup=False))
    svc.write_many([{"content": t, "allow_duplicate": True} for t in texts])
    svc.close()


async def servers_memory(
    db: Path, count: int, extra_env: dict[str, str], questions: list[str], reads: int = 1
) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    # PYTHONPATH too: a checkout run with it (not the editable install) is the code measured.
    env = {k: os.environ[k] for k in ("HOME", "PATH", "PYTHONPATH") if k in os.environ} | {
        "MNEMO_DB": str(db),
        "MNEMO_PROJECT": "bench",
        "MNEMO_AUTO_BACKUP": "false",
        "MNEMO_AUTO_CONSOLIDATE": "false",
        **extra_env,
    }
    params = StdioServerParameters(command=mnemo_command(), args=[], env=env)
    async with AsyncExitStack() as stack:
        errlog = stack.enter_context(open(os.devnull, "w"))
        for i in range(count):
            client = await stack.enter_async_context(
                Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=120)
            )
            wrote = await client.call_tool("memory_write", {"content": f"Session {i} learned: {questions[i]}"})
            for j in range(reads):  # more than one: memory after a working session, not a first read
                read = await client.call_tool("memory_read", {"query": questions[-1 - i - j * count]})
                if wrote.is_error or read.is_error:
                    raise RuntimeError(f"server {i}: {wrote.content or read.content}")
        time.sleep(0.5)  # background threads settle (consolidation is off; warm-up is done)
        per = {pid: _proc_memory(pid) for pid in _servers()}
    ordered = sorted(per.values(), key=lambda m: -m["VmRSS"])  # the model's host first
    rss = [m["VmRSS"] for m in ordered]
    pss = [m.get("Pss", m["VmRSS"]) for m in ordered]
    return {
        "servers": len(per),
        "rss_sum_mb": sum(rss),
        "pss_sum_mb": sum(pss),
        "peak_rss_max_mb": max(m["VmHWM"] for m in per.values()),
        "per_server_rss_mb": rss,
        # Each server's own PSS and private pages (written only by it), largest RSS first: a
        # further server's figures measured on it, where the difference of sums above also
        # carries how the host's shared pages were counted in two separate runs.
        "per_server_pss_mb": pss,
        "per_server_private_mb": [m.get("Private", m["VmRSS"]) for m in ordered],
        # The client's too (this process): a Python client maps the servers' libraries (libpython,
        # pydantic-core, numpy, OpenSSL), so their file pages count partly in its PSS, less so the
        # more servers share them; Claude Code (node) maps none of them. Added to the servers',
        # the sum is what the machine holds for the client and its servers.
        "client_pss_mb": _proc_memory(os.getpid()).get("Pss", 0.0),
    }


def embedding_agreement(data: Path, n: int) -> dict[str, float]:
    """Cosine between the int8 graph's vectors and the float model's, queries and passages."""
    import numpy as np

    from mnemo_mcp.config import Settings
    from mnemo_mcp.embedding import FastEmbedEmbedder

    cache = Settings(db=Path(tempfile.gettempdir()) / "unused.db").model_cache_dir
    convs = load_locomo(data)
    turns = [t.content for c in convs for t in c.turns][:n]
    asks = [q.question for c in convs for q in c.questions][:n]
    int8, floats = FastEmbedEmbedder(cache_dir=cache, weights="int8"), FastEmbedEmbedder(cache_dir=cache)
    floats.weights = "float32"
    passages = (int8.embed_passages(turns) * floats.embed_passages(turns)).sum(axis=1)
    queries = np.array([float(int8.embed_query(q) @ floats.embed_query(q)) for q in asks])
    both = np.concatenate([passages, queries])
    return {"texts": len(both), "cosine_min": float(both.min()), "cosine_mean": float(both.mean())}


def run(
    data: Path,
    memories: int,
    counts: Sequence[int],
    store: Path | None = None,
    texts: int = 500,
    configs: Sequence[str] = tuple(CONFIGS),
    reads: int = 1,
) -> dict[str, Any]:
    questions = [q.question for conv in load_locomo(data) for q in conv.questions]
    out: dict[str, Any] = {"memories": memories, "reads": reads, "configs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sessions.db"
        if store:
            import shutil

            shutil.copy(store, db)  # of --memories memories (benchmarks.speed's stores, say)
        else:
            build(db, data, memories)
        for label in configs:
            env = CONFIGS[label]
            rows = out["configs"][label] = {}
            for count in counts:
                rows[count] = asyncio.run(servers_memory(db, count, env, questions, reads))
                print(f"{label}, {count} servers: {json.dumps(rows[count])}", file=sys.stderr, flush=True)
    out["embeddings"] = embedding_agreement(data, texts)
    return out


def _further_own(row: dict[str, Any]) -> str:
    """Mean own PSS / private MB of the servers after the first (the largest: the model's host)."""
    pss, private = row.get("per_server_pss_mb", [])[1:], row.get("per_server_private_mb", [])[1:]
    if not pss or not private:
        return ""
    return f"{sum(pss) / len(pss):.1f} / {sum(private) / len(private):.1f}"


def report(result: dict[str, Any]) -> str:
    lines = [
        f"Resident memory of MCP servers on one store of {result['memories']} memories, each after a write"
        f" and {result.get('reads', 1)} read(s) (MB):",
        "| | servers | sum of RSS | sum of PSS | PSS per further server | a further server's own PSS / private"
        " (mean) | PSS per further server, the client's included | largest peak RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, rows in result["configs"].items():
        one = rows.get(1) or rows.get("1")
        for count, r in rows.items():
            further = (r["pss_sum_mb"] - one["pss_sum_mb"]) / (int(count) - 1) if int(count) > 1 and one else None
            own = _further_own(r)
            machine = None
            if further is not None and "client_pss_mb" in r and "client_pss_mb" in one:
                machine = further + (r["client_pss_mb"] - one["client_pss_mb"]) / (int(count) - 1)
            lines.append(
                f"| {label} | {count} | {r['rss_sum_mb']:.0f} | {r['pss_sum_mb']:.0f} | "
                f"{'' if further is None else f'{further:.0f}'} | {own} | "
                f"{'' if machine is None else f'{machine:.0f}'} | {r['peak_rss_max_mb']:.0f} |"
            )
    e = result["embeddings"]
    lines.append(
        f"int8 graph vs float model, {e['texts']} texts: cosine min {e['cosine_min']:.5f}, mean {e['cosine_mean']:.5f}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--memories", type=int, default=200)
    ap.add_argument("--counts", default="1,2,5")
    ap.add_argument("--store", type=Path, help="a copy of this store (of --memories memories) instead of building one")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--quick", action="store_true", help="CI size: 2 servers on 20 memories, 40 texts compared")
    ap.add_argument("--reads", type=int, default=1, help="memory_read calls per server (different questions)")
    ap.add_argument("--now-only", action="store_true", help="only today's defaults, not the float32 model per server")
    args = ap.parse_args(argv)
    if args.quick:
        result = run(args.data, 20, [2], None, 20)
    else:
        configs = [label for label in CONFIGS if label.startswith("now")] if args.now_only else list(CONFIGS)
        counts = [int(c) for c in args.counts.split(",")]
        result = run(args.data, args.memories, counts, args.store, configs=configs, reads=args.reads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
