"""Speed and scale: read latency, write throughput, startup, memory and size at N memories.

    python -m benchmarks.speed --data ../shared/data/locomo/locomo_dev.json [--sizes 1000,10000,100000]

Memories are LoCoMo turns ("Speaker: text"), repeated with a variation marker to reach N; queries
are LoCoMo questions. Everything runs through the project's own code: `MemoryService` with the
real default embedder, and the real `mnemo-mcp` command over stdio with the official client
and with a bare line client (the server's and the transport's cost alone, without the Python
client's own validation of each result).
The floor is what any read must do: embed the query and run a raw sqlite-vec KNN on the same
vectors; each timed read is followed by a floor with the same query, so both see the same load,
and `read / floor` says what ranking, keyword search and recording add on top. Also measured:
recall@10 (and @100) of the read's vector side against sqlite-vec's exact KNN, the server's peak
resident memory (VmHWM), and `initialize` against a bare MCPServer started by the same
interpreter (alternating, several times each).
Timings depend on the machine: compare ratios within one run, not across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import make_embedder
from mnemo_mcp.service import MemoryService

from .common import percentile
from .locomo import load_locomo

DEFAULT_OUT = Path("benchmarks/results/speed.json")


def corpus(data: Path, n: int) -> list[str]:
    base = [t.content for conv in load_locomo(data) for t in conv.turns]
    out = []
    for i in range(n):
        copy, j = divmod(i, len(base))
        out.append(base[j] if copy == 0 else f"{base[j]} (copy {copy})")
    return out


def questions(data: Path) -> list[str]:
    return [q.question for conv in load_locomo(data) for q in conv.questions]


def build(db: Path, texts: list[str], embedder, batch: int = 256) -> dict[str, float]:
    svc = MemoryService(Settings(db=db), embedder)
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        # The corpus repeats turns with a suffix to reach large N: near-duplicates on purpose.
        svc.write_many([{"content": t, "allow_duplicate": True} for t in texts[i : i + batch]])
    elapsed = time.perf_counter() - t0
    svc.close()
    return {"batched_writes_per_s": len(texts) / elapsed, "build_s": elapsed}


def service_figures(
    db: Path, embedder, queries: list[str], reads: int, singles: int, rng: random.Random
) -> dict[str, Any]:
    svc = MemoryService(Settings(db=db), embedder)
    qs = [rng.choice(queries) for _ in range(reads)]
    svc.read(qs[0])  # warm caches
    # The floor: what any read must do, embed the query and let sqlite-vec scan for the nearest 100.
    svc.store.scan_knn(embedder.embed_query(qs[0]), 100)
    read_ms, floor_ms = [], []
    for q in qs:
        t = time.perf_counter()
        svc.read(q, top_k=10)
        read_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        vec = embedder.embed_query(q)
        svc.store.scan_knn(vec, 100)
        floor_ms.append((time.perf_counter() - t) * 1000)
    recall = vector_recall(svc, embedder, qs[: min(len(qs), 100)])
    write_ms = []
    stored = 0
    # Distinct texts through the default path, near-duplicate check included (a text it flags
    # is not stored, so `singles_stored` says how many of the timed writes were real inserts).
    for i, text in enumerate(rng.sample(queries, min(singles, len(queries)))):
        t = time.perf_counter()
        stored += svc.write(f"Note {i}: {text}").created
        write_ms.append((time.perf_counter() - t) * 1000)
    # The daily upkeep at this size: a dry run, then the real first run (which also scans the
    # first MNEMO_MERGE_SCAN_PER_RUN memories for near-duplicates).
    t = time.perf_counter()
    svc.consolidate(dry_run=True)
    consolidate_dry_s = time.perf_counter() - t
    t = time.perf_counter()
    svc.consolidate()
    consolidate_s = time.perf_counter() - t
    total = svc.stats().total
    svc.close()
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return {
        "memories": total,
        "read_p50_ms": percentile(read_ms, 0.5),
        "read_p95_ms": percentile(read_ms, 0.95),
        "floor_p50_ms": percentile(floor_ms, 0.5),
        "floor_p95_ms": percentile(floor_ms, 0.95),
        "read_over_floor": percentile(read_ms, 0.5) / percentile(floor_ms, 0.5),
        **recall,
        "single_write_p50_ms": percentile(write_ms, 0.5),
        "single_writes_per_s": 1000 / statistics.mean(write_ms),
        "singles_stored": stored,
        "consolidate_dry_s": consolidate_dry_s,
        "consolidate_s": consolidate_s,
        "db_bytes": size,
    }


def vector_recall(svc: MemoryService, embedder, queries: list[str]) -> dict[str, float]:
    """Recall@10 and @100 of the nearest memories a read starts from (the store's KNN, through
    the in-memory index when it is on) against sqlite-vec's exact KNN on the same file."""
    hits = {10: 0.0, 100: 0.0}
    for q in queries:
        vec = embedder.embed_query(q)
        with svc.store.db.read():
            got = [r for r, _ in svc.store.knn(vec, 100, domains=None, include_archived=False, tags=None)]
            exact = [r for r, _ in svc.store.scan_knn(vec, 100, live_only=True)]
        for k in hits:
            hits[k] += len(set(got[:k]) & set(exact[:k])) / max(1, min(k, len(exact)))
    return {f"vector_recall@{k}": v / max(1, len(queries)) for k, v in hits.items()}


def _server_command() -> tuple[str, list[str]]:
    exe = shutil.which("mnemo-mcp")
    return (exe, []) if exe else (sys.executable, ["-m", "mnemo_mcp"])


BARE_SERVER = "from mcp.server.mcpserver import MCPServer; MCPServer(name='bare').run()"


def _child_peak_rss_mb(marker: str) -> float | None:
    """VmHWM of this process's child whose command line holds `marker` (Linux), else None."""
    me = str(os.getpid())
    for pid in filter(str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else []):
        try:
            if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1] != me:
                continue
            if marker.encode() not in open(f"/proc/{pid}/cmdline", "rb").read():
                continue
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except (OSError, IndexError):
            continue
    return None


async def _initialize_ms(command: str, args: list[str], env: dict[str, str]) -> float:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    t0 = time.perf_counter()
    async with stdio_client(StdioServerParameters(command=command, args=args, env=env)) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            return (time.perf_counter() - t0) * 1000


async def _startup(db: Path, reps: int) -> dict[str, float]:
    """`initialize` of mnemo-mcp and of a bare MCPServer (same interpreter, same client),
    alternating so both see the same machine; p50 of each and their ratio."""
    env = _server_env(db)
    command, args = _server_command()
    ours, bare = [], []
    for _ in range(reps):
        ours.append(await _initialize_ms(command, args, env))
        bare.append(await _initialize_ms(sys.executable, ["-c", BARE_SERVER], env))
    return {
        "initialize_ms": percentile(ours, 0.5),
        "bare_initialize_ms": percentile(bare, 0.5),
        "initialize_over_bare": percentile(ours, 0.5) / percentile(bare, 0.5),
    }


def _server_env(db: Path) -> dict[str, str]:
    # PYTHONPATH: the checkout under test, when the benchmark runs one through it (not the installed copy).
    return {k: os.environ[k] for k in ("HOME", "PATH", "PYTHONPATH") if k in os.environ} | {
        # No automatic backup or consolidation in the background: the figures measure reads, not a
        # file copy, nor the re-judging of a prebuilt store by a newer detector (one core for ~10
        # ms a note: at 100k memories, reads of 48-96 ms instead of ~35 while it lasts).
        "MNEMO_DB": str(db),
        "MNEMO_AUTO_BACKUP": "false",
        "MNEMO_AUTO_CONSOLIDATE": "false",
    }


async def _stdio(db: Path, queries: list[str], reads: int, rng: random.Random, embedder=None) -> dict[str, float]:
    """memory_read over stdio, each followed by the floor for the same query in this process
    (its own model and a raw sqlite-vec KNN on the same file), so both see the same load."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command, args = _server_command()
    floor_svc = (
        MemoryService(Settings(db=db, auto_consolidate=False, auto_backup=False), embedder) if embedder else None
    )
    t0 = time.perf_counter()
    async with stdio_client(StdioServerParameters(command=command, args=args, env=_server_env(db))) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            t_init = time.perf_counter() - t0
            res = await session.call_tool("memory_read", {"query": rng.choice(queries)})
            assert not res.is_error, res.content
            t_first = time.perf_counter() - t0
            lat, floor = [], []
            for _ in range(reads):
                q = rng.choice(queries)
                t = time.perf_counter()
                await session.call_tool("memory_read", {"query": q, "top_k": 10})
                lat.append((time.perf_counter() - t) * 1000)
                if floor_svc is not None:
                    t = time.perf_counter()
                    floor_svc.store.scan_knn(embedder.embed_query(q), 100)
                    floor.append((time.perf_counter() - t) * 1000)
            peak = _child_peak_rss_mb("mnemo")
    if floor_svc is not None:
        floor_svc.close()
    return {
        "stdio_initialize_ms": t_init * 1000,
        "first_read_ms": t_first * 1000,
        "stdio_read_p50_ms": percentile(lat, 0.5),
        "stdio_read_p95_ms": percentile(lat, 0.95),
        **({"stdio_floor_p50_ms": percentile(floor, 0.5)} if floor else {}),
        **({"server_peak_rss_mb": peak} if peak is not None else {}),
    }


class _LineClient:
    """A JSON-RPC client over the server's stdio that does nothing but write a line and read its
    answer: what a read costs the server and the transport, without the Python SDK client's own
    work (pydantic models, checking the result against the output schema with jsonschema: about
    a millisecond a read on its own, which another client, such as Claude Code's, does not pay)."""

    def __init__(self, command: str, args: list[str], env: dict[str, str]):
        import subprocess

        self.proc = subprocess.Popen(
            [command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self.last = 0

    def call(self, method: str, params: dict[str, Any], *, notify: bool = False) -> dict[str, Any] | None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.last += 1
            msg["id"] = self.last
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        while not notify:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            answer = json.loads(line)
            if answer.get("id") == self.last:
                return answer
        return None

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _stdio_bare(db: Path, queries: list[str], reads: int, rng: random.Random, embedder) -> dict[str, float]:
    """memory_read over stdio with `_LineClient`, each followed by the floor for the same query."""
    command, args = _server_command()
    floor_svc = MemoryService(Settings(db=db, auto_consolidate=False, auto_backup=False), embedder)
    client = _LineClient(command, args, _server_env(db))
    try:
        client.call(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        client.call("notifications/initialized", {}, notify=True)
        lat, floor = [], []
        for i in range(reads + 1):
            q = rng.choice(queries)
            t = time.perf_counter()
            answer = client.call("tools/call", {"name": "memory_read", "arguments": {"query": q, "top_k": 10}})
            took = (time.perf_counter() - t) * 1000
            result = (answer or {}).get("result") or {}
            assert result and not result.get("isError"), answer
            t = time.perf_counter()
            floor_svc.store.scan_knn(embedder.embed_query(q), 100)
            if i:  # the first read loads the model
                lat.append(took)
                floor.append((time.perf_counter() - t) * 1000)
    finally:
        client.close()
        floor_svc.close()
    return {
        "stdio_bare_read_p50_ms": percentile(lat, 0.5),
        "stdio_bare_read_p95_ms": percentile(lat, 0.95),
        "stdio_bare_floor_p50_ms": percentile(floor, 0.5),
    }


def run(
    data: Path, sizes: Sequence[int], reads: int, singles: int, seed: int, startups: int, stores: Path | None = None
) -> dict[str, Any]:
    rng = random.Random(seed)
    base = Settings(db=Path(tempfile.gettempdir()) / "unused.db")
    embedder = make_embedder(base.embed_model, base.model_cache_dir, base.embed_weights)
    embedder.embed_query("warm up")
    qs = questions(data)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mnemo-speed-") as tmp:
        for n in sizes:
            db = Path(tmp) / f"n{n}" / "memory.db"
            db.parent.mkdir()
            row: dict[str, Any] = {"n": n}
            built = stores / f"n{n}" / "memory.db" if stores else None
            if built is not None and built.exists():  # a store an earlier run built (no write rate then)
                shutil.copy(built, db)
                row |= {"batched_writes_per_s": float("nan"), "build_s": 0.0, "store_from": str(built)}
            else:
                row |= build(db, corpus(data, n), embedder)
                if built is not None:
                    built.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(db, built)
            row |= service_figures(db, embedder, qs, reads, singles, rng)
            row |= asyncio.run(_stdio(db, qs, reads, rng, embedder))
            row["stdio_over_floor"] = row["stdio_read_p50_ms"] / row.get("stdio_floor_p50_ms", row["floor_p50_ms"])
            row |= _stdio_bare(db, qs, reads, rng, embedder)
            row["stdio_bare_over_floor"] = row["stdio_bare_read_p50_ms"] / row["stdio_bare_floor_p50_ms"]
            row |= asyncio.run(_startup(db, startups))
            if "server_peak_rss_mb" not in row:  # no /proc: the largest child so far (sizes grow)
                row["server_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            rows.append(row)
            print(format_row(row), flush=True)
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "bench_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": rows,
    }


HEADER = (
    f"{'N':>7} {'read p50':>9} {'p95':>7} {'floor':>7} {'ratio':>6} {'stdio p50':>10} {'p95':>7} {'ratio':>6} "
    f"{'bare cl.':>9} {'ratio':>6} {'R@10':>5} {'R@100':>6} {'write':>7} {'batch/s':>8} {'init':>6} {'bare':>6} "
    f"{'ratio':>6} {'1st read':>9} "
    f"{'RSS MB':>7} {'DB MB':>7} {'consol.':>8}"
)


def format_row(r: dict[str, Any]) -> str:
    return (
        f"{r['n']:>7} {r['read_p50_ms']:>7.1f}ms {r['read_p95_ms']:>5.1f}ms {r['floor_p50_ms']:>5.1f}ms "
        f"{r['read_over_floor']:>6.2f} {r['stdio_read_p50_ms']:>8.1f}ms {r['stdio_read_p95_ms']:>5.1f}ms "
        f"{r['stdio_over_floor']:>6.2f} {r['stdio_bare_read_p50_ms']:>7.1f}ms {r['stdio_bare_over_floor']:>6.2f} "
        f"{r['vector_recall@10']:>5.3f} {r['vector_recall@100']:>6.3f} "
        f"{r['single_write_p50_ms']:>5.1f}ms {r['batched_writes_per_s']:>8.0f} {r['initialize_ms']:>4.0f}ms "
        f"{r['bare_initialize_ms']:>4.0f}ms {r['initialize_over_bare']:>6.2f} "
        f"{r['first_read_ms']:>7.0f}ms {r['server_peak_rss_mb']:>7.0f} {r['db_bytes'] / 2**20:>7.1f} "
        f"{r['consolidate_s']:>7.2f}s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.speed", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data", type=Path, required=True, help="path to locomo_dev.json")
    p.add_argument("--sizes", default="1000,10000,100000", help="comma-separated store sizes")
    p.add_argument("--reads", type=int, default=200, help="timed reads per size (service and stdio each)")
    p.add_argument("--writes", type=int, default=100, help="timed one-by-one writes per size")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--stores",
        type=Path,
        help="folder of stores to reuse (STORES/n<N>/memory.db; built and kept there when missing)",
    )
    p.add_argument(
        "--startups", type=int, default=7, help="initialize timings per size, each for mnemo-mcp and a bare MCPServer"
    )
    p.add_argument("--quick", action="store_true", help="CI size: N=300, 30 reads, 20 writes")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--png", type=Path, help="also draw latency against N (needs the bench extra)")
    a = p.parse_args(argv)
    if not a.data.exists():
        p.error(f"{a.data} does not exist")
    sizes = [300] if a.quick else [int(x) for x in a.sizes.split(",")]
    reads, writes, startups = (30, 20, 2) if a.quick else (a.reads, a.writes, a.startups)
    print(HEADER)
    result = run(a.data, sizes, reads, writes, a.seed, startups, a.stores)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2))
    print(f"results: {a.out}")
    if a.png:
        from .plots import latency_vs_n

        if latency_vs_n(result["rows"], a.png):
            print(f"picture: {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
