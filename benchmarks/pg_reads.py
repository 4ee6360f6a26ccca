"""PostgreSQL reads at scale, beside SQLite's, in one run: HNSW against exact KNN (recall and
latency on one store), the keyword side, and memory_read p50 on both backends.

    python tests/pg_server.py &      # a throwaway PostgreSQL 18 with pgvector; prints its URL
    python -m benchmarks.pg_reads --data ../shared/data/locomo/locomo_dev.json --pg URL \
        [--sizes 10000,100000] [--keep DIR]

Stores: LoCoMo turns repeated to N (benchmarks.speed's corpus: "(copy k)" past the turns), written
with MemoryService.write_many; the copies get their turn's real vector (the default model) with a
small deterministic perturbation (benchmarks.backends.CopiesEmbedder), queries the real model's
vectors of LoCoMo questions. Building 100k memories takes tens of minutes on PostgreSQL: with
`--keep DIR`, the SQLite files stay in DIR and the PostgreSQL databases (`mnemo_reads_<N>`) on the
server, and a later run with the same DIR reuses any store that already holds N memories. Opening a
store laid out by an older mnemo-mcp migrates it and, as its owner, builds the HNSW index: the time
that took is reported (`open_s`).

Per size, on the PostgreSQL store: `knn` of the read's pool (k = 100) exact and through the index,
recall@10 (the index's top 10 against the exact top 10) and recall@100, and their p50; the keyword
search as a read runs it (top 2000); then memory_read p50 / p95 (top_k 10, recorded) on SQLite,
on PostgreSQL as it chooses (the index past pgvectors.HNSW_FROM) and on PostgreSQL forced to exact
search; single writes' p50 on both. Timings depend on the machine and its load: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mnemo_mcp.config import Settings
from mnemo_mcp.core.text import query_words
from mnemo_mcp.errors import DatabaseMissing
from mnemo_mcp.service import MemoryService
from mnemo_mcp.storage import postgres
from mnemo_mcp.storage.pgvectors import HNSW_FROM

from .backends import CopiesEmbedder
from .common import percentile
from .locomo import load_locomo
from .locomo_retrieval import load_model
from .speed import corpus, questions

DEFAULT_OUT = Path("benchmarks/results/pg_reads.json")
POOL = 100  # the read's candidates per retriever (Settings.candidates)
KEYWORD_DEPTH = 2000  # what a read asks of the keyword side (service/reading.py LEXICAL_SCORED)
EXACT_ALWAYS = 10**12


def _settings(db: Path | str) -> Settings:
    return Settings(db=db, auto_consolidate=False, auto_backup=False)


def open_store(backend: str, n: int, args: argparse.Namespace, folder: Path, embedder) -> tuple[MemoryService, dict]:
    """A service on a store of n memories: reused when one is kept, else built -> (service, how)."""
    name = f"mnemo_reads_{n}"
    if backend == "sqlite":
        db: Path | str = folder / f"{name}.db"
        exists = db.exists()
    else:
        db = postgres.create_database(args.pg, name) if not _pg_exists(args.pg, name) else _pg_url(args.pg, name)
        exists = True
    t0 = time.perf_counter()
    svc = MemoryService(_settings(db), embedder)
    opened = time.perf_counter() - t0
    held = svc.stats().total if exists else 0
    how = {"open_s": round(opened, 1)}
    if held < 0.99 * n:  # identical turns share an id: a store of n texts holds a few fewer memories
        texts = corpus(args.data, n)[held:]
        t0 = time.perf_counter()
        for i in range(0, len(texts), 500):
            svc.write_many([{"content": t, "allow_duplicate": True} for t in texts[i : i + 500]])
        how["build_s"] = round(time.perf_counter() - t0, 1)
    how["memories"] = svc.stats().total
    return svc, how


def _pg_url(url: str, name: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url)._replace(path="/" + name).geturl()


def _pg_exists(url: str, name: str) -> bool:
    try:
        postgres.connect(_pg_url(url, name)).close()
        return True
    except DatabaseMissing:
        return False


def _p50(fn: Callable[[Any], Any], items: Sequence[Any]) -> tuple[float, list[Any]]:
    ms, out = [], []
    for item in items:
        t = time.perf_counter()
        out.append(fn(item))
        ms.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(ms), 2), out


def vector_figures(svc: MemoryService, vectors: list) -> dict[str, Any]:
    """Exact and HNSW KNN of the read's pool on one store: recall and p50."""
    st = svc.store

    def knn(v):
        with st.db.read():
            return st.knn(v, POOL, domains=None, include_archived=False, tags=None)

    st.use_hnsw_from(EXACT_ALWAYS)
    knn(vectors[0])
    exact_ms, exact = _p50(knn, vectors)
    st.use_hnsw_from(0)
    knn(vectors[0])
    hnsw_ms, hnsw = _p50(knn, vectors)
    st.use_hnsw_from(HNSW_FROM)
    index, _ = st.vector_index()

    def recall(depth: int) -> float:
        return round(statistics.mean(
            len({r for r, _ in a[:depth]} & {r for r, _ in b[:depth]}) / max(1, min(depth, len(a)))
            for a, b in zip(exact, hnsw)
        ), 4)  # fmt: skip

    return {"hnsw_index": index, "knn_exact_p50_ms": exact_ms, "knn_hnsw_p50_ms": hnsw_ms,
            "recall_at_10": recall(10), "recall_at_100": recall(POOL)}  # fmt: skip


def keyword_figures(svc: MemoryService, queries: list[str]) -> dict[str, Any]:
    st = svc.store

    def fts(q):
        with st.db.read():
            return st.fts(query_words(q), KEYWORD_DEPTH, domains=None, include_archived=False, tags=None)

    fts(queries[0])
    ms, out = _p50(fts, queries)
    return {"fts_p50_ms": ms, "fts_rows_mean": round(statistics.mean(len(o) for o in out), 1)}


def read_figures(svc: MemoryService, queries: list[str]) -> dict[str, Any]:
    for q in queries[:5]:
        svc.read(q, top_k=10)  # warm the caches and the query vectors
    ms = []
    for q in queries:
        t = time.perf_counter()
        svc.read(q, top_k=10)
        ms.append((time.perf_counter() - t) * 1000)
    return {"read_p50_ms": round(percentile(ms, 0.5), 2), "read_p95_ms": round(percentile(ms, 0.95), 2)}


def write_figures(svc: MemoryService, queries: list[str], writes: int) -> dict[str, Any]:
    """Single writes (near-duplicate check included): the index is kept up by every insert."""
    ms = []
    for i in range(writes):
        t = time.perf_counter()
        svc.write(f"Bench note {time.time_ns()}: {queries[i % len(queries)]}")
        ms.append((time.perf_counter() - t) * 1000)
    return {"write_p50_ms": round(percentile(ms, 0.5), 2)}


def one_size(n: int, args: argparse.Namespace, folder: Path, embedder, queries: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    vectors = [embedder.embed_query(q) for q in queries[: args.knn_queries]]
    for backend in ("sqlite", "postgresql"):
        svc, how = open_store(backend, n, args, folder, embedder)
        try:
            row[backend] = dict(how)
            print(n, backend, json.dumps(how), flush=True)
            if backend == "postgresql":
                row[backend].update(vector_figures(svc, vectors))
                row[backend].update(keyword_figures(svc, queries[: args.knn_queries]))
                svc.store.use_hnsw_from(EXACT_ALWAYS)
                row[backend]["exact"] = read_figures(svc, queries)
                svc.store.use_hnsw_from(HNSW_FROM)
            else:
                row[backend].update(keyword_figures(svc, queries[: args.knn_queries]))
            row[backend].update(read_figures(svc, queries))
            row[backend].update(write_figures(svc, queries, args.writes))
        finally:
            svc.close()
        print(n, backend, json.dumps(row[backend]), flush=True)
    row["read_p50_pg_over_sqlite"] = round(row["postgresql"]["read_p50_ms"] / row["sqlite"]["read_p50_ms"], 2)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.pg_reads", description=__doc__)
    p.add_argument("--data", type=Path, required=True, help="path to locomo_dev.json")
    p.add_argument("--pg", required=True, help="postgresql:// URL of a role that may create databases")
    p.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    p.add_argument("--reads", type=int, default=200)
    p.add_argument("--writes", type=int, default=30)
    p.add_argument("--knn-queries", type=int, default=100, help="questions for the KNN and keyword figures")
    p.add_argument(
        "--keep", type=Path, help="keep the stores (SQLite files here, databases on the server) and reuse them"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    embedder, _ = load_model()
    embedder.precompute([t.content for c in load_locomo(args.data) for t in c.turns])
    copies = CopiesEmbedder(embedder)
    asked = questions(args.data)
    queries = [asked[(i * 7919) % len(asked)] for i in range(args.reads)]
    report: dict[str, Any] = {"hnsw_from": HNSW_FROM, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="mnemo-pg-reads-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            for n in [int(x) for x in args.sizes.split(",")]:
                report["sizes"][n] = one_size(n, args, folder, copies, queries)
        finally:
            if args.keep is None:
                for n in [int(x) for x in args.sizes.split(",")]:
                    postgres.drop_database(args.pg, f"mnemo_reads_{n}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
