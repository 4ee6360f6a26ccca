"""The runs of `benchmarks.vs_mcp_memory_service`: an MCP server over stdio, driven as a client
would through an adapter (`Mnemo` or `MCPMemoryService` there: its server parameters, store,
search and content key): loading memories, the speed rows (initialize, first search, search and
store latencies) and R@10 on LoCoMo conversations."""

from __future__ import annotations

import random
import re
import shutil
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from .common import percentile
from .locomo import Conversation
from .locomo_retrieval import QuestionResult, group_results, question_metrics
from .speed import corpus, questions

TOP_K = 10
CALL_TIMEOUT_S = 600.0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def result_text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in (result.content or []))


class CallFailed(RuntimeError):
    pass


@asynccontextmanager
async def serve(params: StdioServerParameters, errlog: Path) -> AsyncIterator[tuple[Client, float, float]]:
    """A running server: (client, spawn time as perf_counter, initialize time in ms)."""
    with open(errlog, "a", encoding="utf-8") as err:
        t0 = time.perf_counter()
        try:
            async with Client(
                stdio_client(params, errlog=err), mode="legacy", read_timeout_seconds=CALL_TIMEOUT_S
            ) as client:
                init_ms = (time.perf_counter() - t0) * 1000
                yield client, t0, init_ms
        except BaseException:
            err.flush()
            tail = errlog.read_text(encoding="utf-8", errors="replace")[-2500:]
            log(f"--- {params.command} stderr (tail of {errlog}) ---\n{tail}")
            raise


async def timed(coro) -> tuple[Any, float]:
    t = time.perf_counter()
    out = await coro
    return out, (time.perf_counter() - t) * 1000


def _summary(ms: list[float]) -> dict[str, float | int]:
    if not ms:
        return {"n": 0}
    return {"n": len(ms), "p50_ms": percentile(ms, 0.5), "p95_ms": percentile(ms, 0.95), "mean_ms": sum(ms) / len(ms)}


@dataclass
class Loaded:
    key_of: dict[str, str]  # content -> memory key
    write_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


async def load(server, client: Client, texts: Sequence[str], label: str) -> Loaded:
    out = Loaded({})
    t0 = time.perf_counter()
    for i, text in enumerate(texts, start=1):
        (key, err), ms = await timed(server.store(client, text, bulk=True))
        out.write_ms.append(ms)
        if key is None:
            key = server.key_of(text) if err and "Duplicate content detected (exact match)" in err else None
            if key is None:
                out.failures.append(err or "no key")
                continue
        elif server.key_of(text) not in (None, key):
            raise CallFailed(f"{server.name}: hash of stored content differs from the expected one: {text[:80]!r}")
        out.key_of.setdefault(text, key)
        if i % 1000 == 0:
            log(f"    {label}: {i}/{len(texts)} written, {time.perf_counter() - t0:.0f}s")
    out.seconds = time.perf_counter() - t0
    return out


# --- speed -------------------------------------------------------------------------------------


async def speed_one(
    server, db: Path, errlog: Path, texts: list[str], queries: list[str], new: list[str]
) -> dict[str, Any]:
    row: dict[str, Any] = {}
    async with serve(server.params(db), errlog) as (client, _, init_ms):
        row["initialize_empty_ms"] = init_ms
        loaded = await load(server, client, texts, server.name)
    row["load"] = {"seconds": loaded.seconds, "writes_per_s": len(texts) / loaded.seconds, **_summary(loaded.write_ms)}
    row["load"]["failures"] = len(loaded.failures)
    row["load"]["failure_examples"] = loaded.failures[:3]
    row["memories"] = len(set(loaded.key_of.values()))

    # One server process per search variant: the peer keeps an in-process LRU cache of embeddings
    # keyed by text, so a second variant asking the same question would skip the embedding.
    variants = server.speed_variants
    row["search"], row["initialize_all_ms"] = {}, [row["initialize_empty_ms"]]
    for i, v in enumerate(variants):
        async with serve(server.params(db), errlog) as (client, t0, init_ms):
            row["initialize_all_ms"].append(init_ms)
            await server.search(client, queries[0], v)
            if i == 0:
                row["initialize_ms"] = init_ms
                row["first_search_ms"] = (time.perf_counter() - t0) * 1000
            await server.search(client, queries[1], v)  # warm this path once, untimed
            lat = []
            for q in queries[2:]:
                _, ms = await timed(server.search(client, q, v))
                lat.append(ms)
            row["search"][v] = _summary(lat)
            if i == len(variants) - 1:
                write_ms, refused = [], []
                for text in new:
                    (key, err), ms = await timed(server.store(client, text, bulk=False))
                    (write_ms if key else refused).append(ms)
                    if not key:
                        row.setdefault("store_refusal_examples", []).append((err or "")[:160])
                row["store"] = _summary(write_ms)
                row["store"]["refused"] = len(refused)
                row["store"]["refused_p50_ms"] = percentile(refused, 0.5) if refused else None
                if server.health_tool:
                    health = await client.call_tool(server.health_tool, {})
                    row["health"] = result_text(health)[:1500]
    return row


async def run_speed(
    servers, data: Path, sizes: Sequence[int], n_search: int, n_store: int, seed: int, root: Path
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    pool = list(dict.fromkeys(questions(data)))
    rng.shuffle(pool)
    if len(pool) < n_search + 2 + n_store:
        raise SystemExit(f"error: only {len(pool)} distinct questions for {n_search} searches and {n_store} stores")
    queries = pool[: n_search + 2]
    new = pool[n_search + 2 : n_search + 2 + n_store]
    rows = []
    for n in sizes:
        texts = corpus(data, n)
        row: dict[str, Any] = {"n": n}
        for server in servers:
            d = root / f"speed-{n}-{server.name}"
            d.mkdir()
            log(f"  N={n}: {server.name}")
            row[server.name] = await speed_one(
                server, d / "memory.db", root / f"{server.name}.stderr.log", texts, queries, new
            )
        rows.append(row)
        print(format_speed_row(row, servers), flush=True)
    return rows


def format_speed_row(row: dict[str, Any], servers) -> str:
    parts = [f"N={row['n']}:"]
    for s in servers:
        r = row[s.name]
        srch = " ".join(f"{v} {r['search'][v]['p50_ms']:.1f}" for v in s.speed_variants)
        parts.append(
            f"{s.name}: init {r['initialize_ms']:.0f} ms, search p50 {srch} ms, store p50 "
            f"{r['store'].get('p50_ms', float('nan')):.1f} ms, load {r['load']['seconds']:.0f}s;"
        )
    return " ".join(parts)


# --- recall ------------------------------------------------------------------------------------


async def recall_one(
    server, conv: Conversation, root: Path, errlog: Path, max_questions: int | None
) -> dict[str, list[QuestionResult]]:
    """Per search variant, the per-question metrics on this conversation."""
    base = root / f"recall-{conv.sample_id}-{server.name}"
    (base / "loaded").mkdir(parents=True)
    db = base / "loaded" / "memory.db"
    texts = [t.content for t in conv.turns]
    async with serve(server.params(db), errlog) as (client, _, _init):
        loaded = await load(server, client, texts, f"{server.name} {conv.sample_id}")
    if loaded.failures:
        raise CallFailed(
            f"{server.name}: {len(loaded.failures)} turns of {conv.sample_id} not stored, e.g. {loaded.failures[0]}"
        )
    turn = {t.dia_id: t for t in conv.turns}
    qs = [q for q in conv.questions if q.category in (1, 2, 3, 4)]
    qs = qs[:max_questions] if max_questions else qs
    out: dict[str, list[QuestionResult]] = {}
    for variant in server.search_variants:
        vdir = base / re.sub(r"[^a-z0-9]+", "-", variant)
        shutil.copytree(base / "loaded", vdir)  # every variant starts from the same loaded state
        results = []
        async with serve(server.params(vdir / "memory.db"), errlog) as (client, _, _init):
            for q in qs:
                gold = {loaded.key_of[turn[d].content] for d in q.evidence}
                ranked = await server.search(client, q.question, variant)
                results.append(
                    QuestionResult(conv.sample_id, conv.split, q.category, question_metrics(ranked[:TOP_K], gold))
                )
        out[variant] = results
    return out


def _recall_figures(results: list[QuestionResult]) -> dict[str, Any]:
    groups = group_results(results)
    keep = ("recall@10", "ndcg@10", "hit@1")
    return {
        g: {"n": m["n"], **{k: m[k] for k in keep}}
        for g, m in groups.items()
        if g == "overall_1-4" or g.startswith("category_")
    }


async def run_recall(servers, convs: list[Conversation], root: Path, max_questions: int | None) -> dict[str, Any]:
    per: dict[str, list[QuestionResult]] = {}
    for conv in convs:
        for server in servers:
            log(f"  R@10 {conv.sample_id}: {server.name}")
            got = await recall_one(server, conv, root, root / f"{server.name}.stderr.log", max_questions)
            for variant, res in got.items():
                per.setdefault(f"{server.name}:{variant}", []).extend(res)
    return {name: _recall_figures(res) for name, res in per.items()}
