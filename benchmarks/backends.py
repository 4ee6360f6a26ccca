"""SQLite and PostgreSQL side by side, in one run: LoCoMo retrieval of the three retrievers, read
and write latency at N memories, and statements (each a round trip on a server) per read and per
feedback.

    python tests/pg_server.py &      # a throwaway PostgreSQL 18 with pgvector; prints its URL
    python -m benchmarks.backends --data ../shared/data/locomo/locomo_dev.json --pg URL [--sizes 10000,100000]

`--pg` is any PostgreSQL with pgvector whose role may create databases (one is made per store and
dropped after). Retrieval: every LoCoMo conversation written through MemoryService.write on both
backends, the same questions asked, R@10 and MRR per retriever (benchmarks.locomo_retrieval's
code). Latency: LoCoMo turns repeated to N (as benchmarks.speed), stored with write_many, then
timed reads (top_k 10, recorded) and single writes through MemoryService. At sizes past LoCoMo's
turns the copies get their turn's vector with a small deterministic perturbation instead of a model
call (the model's cost is the same on both backends and is not what this compares; queries use the
real model). Timings depend on the machine: compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import zlib
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from mnemo_mcp.config import Settings
from mnemo_mcp.service import MemoryService
from mnemo_mcp.storage import postgres

from .common import percentile
from .locomo import PrecomputedEmbedder, load_locomo
from .locomo_retrieval import RETRIEVERS, build, evaluate, group_results, load_model
from .speed import corpus, questions

DEFAULT_OUT = Path("benchmarks/results/backends.json")
BACKENDS = ("sqlite", "postgresql")


class Stores:
    """New empty stores on either backend; the PostgreSQL databases are dropped at the end."""

    def __init__(self, pg_url: str, folder: Path):
        self.pg_url, self.folder, self.made = pg_url, folder, []

    def new(self, backend: str, name: str) -> Path | str:
        name = f"mnemo_bench_{name}".lower().replace("-", "_")
        if backend == "sqlite":
            return self.folder / f"{name}.db"
        postgres.drop_database(self.pg_url, name)
        self.made.append(name)
        return postgres.create_database(self.pg_url, name)

    def drop_all(self) -> None:
        for name in self.made:
            postgres.drop_database(self.pg_url, name)


def retrieval(data: Path, embedder: PrecomputedEmbedder, stores: Stores) -> dict[str, Any]:
    convs = load_locomo(data)
    out: dict[str, Any] = {}
    for backend in BACKENDS:
        t0 = time.perf_counter()
        built = build(convs, embedder, stores.folder, lambda sid, b=backend: stores.new(b, f"{b}_{sid}"))
        write_s = time.perf_counter() - t0
        out[backend] = {"write_s": round(write_s, 1)}
        for name, overrides in RETRIEVERS.items():
            overall = group_results(evaluate(built, embedder, overrides))["overall_1-4"]
            out[backend][name] = {k: round(v, 4) for k, v in overall.items()}
    return out


class CopiesEmbedder:
    """Passages: a LoCoMo turn's vector (from `inner`, which keeps it once computed), and for
    "(copy k)" texts that vector perturbed by a fixed pseudo-random step of 0.1, renormalized;
    queries: `inner`'s, the real model's."""

    def __init__(self, inner: PrecomputedEmbedder):
        self.inner, self.name = inner, inner.name

    @property
    def dim(self) -> int | None:
        return self.inner.dim

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def embed_passages(self, texts: Sequence[str]) -> list[np.ndarray]:
        out = []
        for text in texts:
            base, _, copy = text.rpartition(" (copy ")
            if not base:
                out.extend(self.inner.embed_passages([text]))
                continue
            v = self.inner.embed_passages([base])[0]
            rng = np.random.default_rng(zlib.crc32(copy.encode()))
            w = v + 0.1 * rng.standard_normal(v.shape).astype(np.float32) / np.sqrt(v.size)
            out.append((w / np.linalg.norm(w)).astype(np.float32))
        return out


def latency(db: Path | str, texts: list[str], queries: list[str], embedder, reads: int, writes: int) -> dict:
    settings = Settings(db=db, auto_consolidate=False, auto_backup=False)
    svc = MemoryService(settings, embedder)
    try:
        t0 = time.perf_counter()
        for i in range(0, len(texts), 500):
            svc.write_many([{"content": t, "allow_duplicate": True} for t in texts[i : i + 500]])
        build_s = time.perf_counter() - t0
        qs = [queries[(i * 7919) % len(queries)] for i in range(reads)]
        for q in qs[:5]:
            svc.read(q, top_k=10)  # warm the caches and the query vectors
        read_ms = []
        for q in qs:
            t = time.perf_counter()
            svc.read(q, top_k=10)
            read_ms.append((time.perf_counter() - t) * 1000)
        write_ms = []
        for i in range(writes):
            t = time.perf_counter()
            svc.write(f"Bench note {i}: {qs[i % len(qs)]}", allow_duplicate=True)
            write_ms.append((time.perf_counter() - t) * 1000)
        return {
            "memories": svc.stats().total,
            "build_s": round(build_s, 1),
            "read_p50_ms": round(percentile(read_ms, 0.5), 2),
            "read_p95_ms": round(percentile(read_ms, 0.95), 2),
            "write_p50_ms": round(percentile(write_ms, 0.5), 2),
        }
    finally:
        svc.close()


@contextmanager
def counting(svc: MemoryService):
    """Statements and transactions run meanwhile on the service's connection, on either backend."""
    conn, seen = svc.store.db.conn, {"statements": 0, "transactions": 0}
    if hasattr(conn, "exec_trace"):  # SQLite (apsw): its own tracer, executemany bindings one by one
        before = svc.store.db.transactions

        def trace(cursor, sql, bindings) -> bool:
            seen["statements"] += 1
            return True

        conn.exec_trace = trace
        try:
            yield seen
        finally:
            conn.exec_trace = None
            seen["transactions"] = svc.store.db.transactions - before
        return
    execute, transaction = conn.execute, conn.transaction

    def counted_execute(*a, **kw):
        seen["statements"] += 1
        return execute(*a, **kw)

    def counted_transaction(*a, **kw):
        seen["transactions"] += 1  # a transaction or a savepoint: two round trips each
        return transaction(*a, **kw)

    conn.execute, conn.transaction = counted_execute, counted_transaction
    try:
        yield seen
    finally:
        del conn.execute, conn.transaction


def statements(stores: Stores, embedder) -> dict[str, Any]:
    out = {}
    notes = [f"Note {i} about webhook retry and postgres cache, detail {i * 31 % 997}" for i in range(2000)]
    for backend in BACKENDS:
        svc = MemoryService(Settings(db=stores.new(backend, f"{backend}_stmts"), project="shop"), embedder)
        try:
            svc.write_many([{"content": t, "allow_duplicate": True} for t in notes])
            r = svc.read("webhook retry postgres cache", top_k=5)
            with counting(svc) as read:
                r = svc.read("webhook retry postgres cache", top_k=5)
            with counting(svc) as feedback:
                svc.feedback([it.id for it in r.items], outcome=1.0, read_id=r.read_id)
            out[backend] = {"memory_read (top 5)": dict(read), "memory_feedback (5 ids)": dict(feedback)}
        finally:
            svc.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.backends", description=__doc__)
    p.add_argument("--data", type=Path, required=True, help="path to locomo_dev.json")
    p.add_argument("--pg", required=True, help="postgresql:// URL of a role that may create databases")
    p.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes for latency")
    p.add_argument("--reads", type=int, default=200)
    p.add_argument("--writes", type=int, default=50)
    p.add_argument("--skip-retrieval", action="store_true")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    embedder, _ = load_model()
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-backends-") as tmp:
        stores = Stores(args.pg, Path(tmp))
        try:
            report["statements"] = statements(stores, embedder)
            print(json.dumps(report["statements"], indent=1), flush=True)
            if not args.skip_retrieval:
                report["locomo"] = retrieval(args.data, embedder, stores)
                print(json.dumps(report["locomo"], indent=1), flush=True)
            copies = CopiesEmbedder(embedder)
            embedder.precompute([t.content for c in load_locomo(args.data) for t in c.turns])
            report["latency"] = {}
            for n in [int(x) for x in args.sizes.split(",")]:
                texts = corpus(args.data, n)
                row = {b: latency(stores.new(b, f"{b}_{n}"), texts, questions(args.data), copies, args.reads,
                                  args.writes) for b in BACKENDS}  # fmt: skip
                for key in ("read_p50_ms", "write_p50_ms"):
                    row[key.replace("_ms", "") + "_pg_over_sqlite"] = round(
                        row["postgresql"][key] / row["sqlite"][key], 2
                    )
                report["latency"][n] = row
                print(n, json.dumps(row), flush=True)
        finally:
            stores.drop_all()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
