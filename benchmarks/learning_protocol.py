"""The learning benchmark's runs and what they read from: the real model's vectors computed once,
each conversation's template database, the split of its questions into training / transfer /
control, the simulated user, and one configuration's rounds of training reads, reports and
measurements on a fresh copy of the template. The protocol is described in
`benchmarks.locomo_learning`, the entry point."""

from __future__ import annotations

import math
import multiprocessing as mp
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import make_embedder
from mnemo_mcp.service import MemoryService

from .locomo import Conversation

TRAIN_TOP_K = 5
MEASURE_TOP_K = 50  # metrics use the top 10; the rest only for "did any gold memory move down"
ABSENT_RANK = MEASURE_TOP_K + 1
CATEGORIES_USED = (1, 2, 3, 4)
EMBED_CHUNK = 32


# --- data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Q:
    index: int
    text: str
    category: int
    evidence: tuple[str, ...]
    gold: frozenset[str]  # memory ids


@dataclass
class ConvData:
    sample_id: str
    split: str
    turns: int
    memories: int
    questions: list[Q]
    template: Path | None = None


@dataclass(frozen=True)
class Split:
    train: tuple[Q, ...]
    transfer: tuple[Q, ...]
    control: tuple[Q, ...]

    def groups(self) -> dict[str, tuple[Q, ...]]:
        return {"train": self.train, "transfer": self.transfer, "control": self.control}


def rng(*key: Any) -> random.Random:
    """A random stream fixed by its key (str seeding hashes with SHA-512: same in every process)."""
    return random.Random("|".join(str(k) for k in key))


def split_questions(conv: ConvData, seed: int, max_train: int | None = None) -> Split:
    """50/50 training / held-out (training capped at max_train); held-out sharing an evidence turn
    with a training question is transfer, the rest control."""
    qs = list(conv.questions)
    rng(seed, conv.sample_id, "split").shuffle(qs)
    n_train = len(qs) // 2
    if max_train is not None:
        n_train = min(n_train, max_train)
    train, held = qs[:n_train], qs[n_train:]
    taught = {d for q in train for d in q.evidence}
    transfer = tuple(q for q in held if taught.intersection(q.evidence))
    control = tuple(q for q in held if not taught.intersection(q.evidence))
    return Split(tuple(train), transfer, control)


# --- embedding -------------------------------------------------------------------------------


class VectorTable:
    """An Embedder answering from vectors the real model computed earlier (same name, so the
    database binds the same model, and the same vectors). A miss falls back to the real model."""

    def __init__(self, name: str, model_cache_dir: Path):
        self.name = name
        self._cache_dir = model_cache_dir
        self._inner = None
        self.passages: dict[str, np.ndarray] = {}
        self.queries: dict[str, np.ndarray] = {}
        self.misses = 0

    @property
    def dim(self) -> int | None:
        v = next(iter(self.queries.values()), None)
        return None if v is None else len(v)

    def _real(self):
        if self._inner is None:
            self._inner = make_embedder(self.name, self._cache_dir)
        return self._inner

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for t in texts:
            v = self.passages.get(t)
            if v is None:
                self.misses += 1
                v = self.passages[t] = np.asarray(self._real().embed_passages([t])[0], dtype=np.float32)
            out.append(v)
        return np.stack(out) if out else np.zeros((0, self.dim or 0), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        v = self.queries.get(text)
        if v is None:
            self.misses += 1
            v = self.queries[text] = np.asarray(self._real().embed_query(text), dtype=np.float32)
        return v


_EMBEDDER = None


def _embed_init(name: str, cache_dir: str) -> None:
    global _EMBEDDER
    _EMBEDDER = make_embedder(name, Path(cache_dir))


def _embed_job(job: tuple[str, list[str]]) -> tuple[str, list[str], list[np.ndarray], float]:
    """Passages in one batch call per chunk, queries one at a time exactly as MemoryService.read
    asks for them; "check" compares batch and one-at-a-time vectors for a few passages."""
    kind, texts = job
    assert _EMBEDDER is not None
    if kind == "passage":
        return kind, texts, [np.asarray(v, dtype=np.float32) for v in _EMBEDDER.embed_passages(texts)], 0.0
    if kind == "check":
        batch = np.asarray(_EMBEDDER.embed_passages(texts), dtype=np.float32)
        single = np.stack([np.asarray(_EMBEDDER.embed_passages([t])[0], dtype=np.float32) for t in texts])
        return kind, texts, [], float(np.abs(batch - single).max())
    return kind, texts, [np.asarray(_EMBEDDER.embed_query(t), dtype=np.float32) for t in texts], 0.0


def embed_all(table: VectorTable, passages: list[str], queries: list[str], workers: int) -> float:
    """Fill the table with the real model, in `workers` spawned processes (the int8 model runs on
    one thread per process). Returns the max |batch - single| difference seen on a spot check."""
    passages = [t for t in dict.fromkeys(passages) if t not in table.passages]
    queries = [t for t in dict.fromkeys(queries + ["probe"]) if t not in table.queries]
    jobs: list[tuple[str, list[str]]] = [("check", passages[:8])] if passages else []
    jobs += [("passage", passages[i : i + EMBED_CHUNK]) for i in range(0, len(passages), EMBED_CHUNK)]
    jobs += [("query", queries[i : i + EMBED_CHUNK]) for i in range(0, len(queries), EMBED_CHUNK)]
    diff = 0.0
    ctx = mp.get_context("spawn")
    with ctx.Pool(max(1, workers), initializer=_embed_init, initargs=(table.name, str(table._cache_dir))) as pool:
        for kind, texts, vecs, check in pool.imap_unordered(_embed_job, jobs):
            if kind == "check":
                diff = max(diff, check)
                continue
            target = table.passages if kind == "passage" else table.queries
            for t, v in zip(texts, vecs):
                target[t] = v
    return diff


# --- building --------------------------------------------------------------------------------


def build_template(conv: Conversation, table: VectorTable, root: Path) -> ConvData:
    db = root / f"{conv.sample_id}.template.db"
    svc = MemoryService(Settings(db=db), embedder=table)
    try:
        # Every turn is its own memory: the near-duplicate check would fold a few repeated turns
        # ("Thanks!") into one, which changes the gold set, not the ranking.
        memory_of = {t.dia_id: svc.write(t.content, metadata=t.metadata, allow_duplicate=True).id for t in conv.turns}
    finally:
        svc.close()
    for suffix in ("-wal", "-shm"):
        leftover = Path(str(db) + suffix)
        if leftover.exists() and leftover.stat().st_size > 0:
            raise RuntimeError(f"{leftover} not checkpointed after close; cannot copy the template")
    questions = [
        Q(q.index, q.question, q.category, q.evidence, frozenset(memory_of[d] for d in q.evidence))
        for q in conv.questions
        if q.category in CATEGORIES_USED
    ]
    return ConvData(conv.sample_id, conv.split, len(conv.turns), len(set(memory_of.values())), questions, db)


# --- one run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    conv: str
    seed: int
    eps: float
    config: str
    overrides: tuple[tuple[str, Any], ...]
    user: str
    batch: bool
    rounds: int
    measure_every_round: bool
    max_train: int | None

    @property
    def cost(self) -> float:
        return (2.0 if self.measure_every_round else 1.0) * self.rounds


# Filled in the parent (install) before the worker pool forks; workers only read them.
CONVS: dict[str, ConvData] = {}  # filled by install() before the workers fork
_TABLE: VectorTable | None = None


def install(table: VectorTable, convs: dict[str, ConvData]) -> None:
    """Make the vectors and the template databases available to run_unit; call it before
    run_units so that the forked workers inherit them."""
    global _TABLE
    _TABLE = table
    CONVS.update(convs)


def question_metrics(ranked: list[str], gold: frozenset[str]) -> tuple[float, float, float, float, tuple[int, ...]]:
    """(P@1, MRR@10, nDCG@10 with binary gains, R@5, the rank of each gold memory in sorted-id
    order, ABSENT_RANK when not in the list)."""
    pos = {mid: i for i, mid in enumerate(ranked, start=1)}
    ranks = tuple(pos.get(g, ABSENT_RANK) for g in sorted(gold))
    first = min(ranks)
    p1 = 1.0 if first == 1 else 0.0
    mrr = 1.0 / first if first <= 10 else 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r <= 10)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), 10) + 1))
    r5 = sum(1 for r in ranks if r <= 5) / len(gold)
    return p1, mrr, dcg / idcg, r5, ranks


def measure(svc: MemoryService, questions: Iterable[Q]) -> dict[int, tuple]:
    """Ask every question without recording (state unchanged)."""
    out = {}
    for q in questions:
        ranked = [it.id for it in svc.read(q.text, top_k=MEASURE_TOP_K, record=False).items]
        out[q.index] = question_metrics(ranked, q.gold)
    return out


def examine(n_items: int, eps: float, key: tuple) -> list[tuple[int, bool]]:
    """(0-based position, flipped) for each examined position: rank i is examined with
    probability 1/i, its judgement flipped with probability eps. The draws are fixed per position
    by `key`, so every configuration and every eps sees the same ones."""
    draw = rng(*key, "user")
    draws = [(draw.random(), draw.random()) for _ in range(TRAIN_TOP_K)]
    return [(i, draws[i][1] < eps) for i in range(min(n_items, TRAIN_TOP_K)) if draws[i][0] < 1.0 / (i + 1)]


def report(svc: MemoryService, read_id: str, judged: list[tuple[str, int]], volume: dict[str, int]) -> None:
    """The simulated user's report through the real tools: memory_feedback per sign (with the
    read's read_id, so the query's concepts are taught), rate_memory per examined item."""
    pos = [mid for mid, j in judged if j > 0]
    neg = [mid for mid, j in judged if j < 0]
    for ids, outcome in ((pos, 1.0), (neg, -1.0)):
        if ids:
            svc.feedback(ids, outcome=outcome, read_id=read_id)
            volume["feedback_calls"] += 1
    for mid, j in judged:
        svc.rate(mid, rating=j)
        volume["rate_calls"] += 1
    volume["reported_pos"] += len(pos)
    volume["reported_neg"] += len(neg)


def table() -> VectorTable:
    """The vectors install() filled (shared with the forked workers)."""
    assert _TABLE is not None, "install() first"
    return _TABLE


def run_user_unit(u: Unit) -> dict[str, Any]:
    """One configuration of the user protocol on one conversation for one seed and eps, on a
    fresh copy of the template."""
    conv = CONVS[u.conv]
    assert _TABLE is not None and conv.template is not None
    started, cpu = time.perf_counter(), time.process_time()
    split = split_questions(conv, u.seed, u.max_train)
    every = [*split.train, *split.transfer, *split.control]
    volume = dict.fromkeys(
        ("reads", "examined", "gold_examined", "reported_pos", "reported_neg", "feedback_calls", "rate_calls"), 0
    )
    measured: dict[int, dict[int, tuple]] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-learn-") as tmp:
        db = Path(tmp) / "run.db"
        shutil.copyfile(conv.template, db)
        svc = MemoryService(Settings(db=db, **dict(u.overrides)), embedder=_TABLE)
        try:
            if u.user == "cold":
                measured[0] = measure(svc, every)
            for rnd in range(1, u.rounds + 1 if u.user != "cold" else 1):
                order = list(split.train)
                rng(u.seed, u.conv, rnd, "order").shuffle(order)
                pending: list[tuple[str, list[tuple[str, int]]]] = []
                for q in order:
                    res = svc.read(q.text, top_k=TRAIN_TOP_K)  # recorded, like a real memory_read
                    volume["reads"] += 1
                    if u.user == "none":
                        continue
                    judged = []
                    for i, flipped in examine(len(res.items), u.eps, (u.seed, u.conv, rnd, q.index)):
                        mid = res.items[i].id
                        truth = 1 if mid in q.gold else -1
                        judged.append((mid, -truth if flipped else truth))
                        volume["gold_examined"] += truth > 0
                    volume["examined"] += len(judged)
                    if u.batch:
                        pending.append((res.read_id, judged))
                    else:
                        report(svc, res.read_id, judged, volume)
                if u.user == "shuffled" and pending:
                    # Same items examined, same multiset of judgements, assigned at random.
                    labels = [j for _, judged in pending for _, j in judged]
                    rng(u.seed, u.conv, rnd, u.eps, "permute").shuffle(labels)
                    it = iter(labels)
                    pending = [(rid, [(mid, next(it)) for mid, _ in judged]) for rid, judged in pending]
                for rid, judged in pending:
                    report(svc, rid, judged, volume)
                if u.measure_every_round or rnd == u.rounds:
                    measured[rnd] = measure(svc, every)
        finally:
            svc.close()
    return {
        "unit": u,
        "measured": measured,
        "volume": volume,
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
    }


def run_units(
    units: list[Unit], workers: int, label: str, runner: Callable[[Unit], dict[str, Any]] = run_user_unit
) -> list[dict[str, Any]]:
    """Run units (largest first) with `runner` (a module-level function: it goes to the workers)
    in `workers` forked processes that share the filled tables."""
    units = sorted(units, key=lambda u: -u.cost)
    out: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def progress(r: dict[str, Any]) -> None:
        out.append(r)
        u = r["unit"]
        print(
            f"  [{label} {len(out):3d}/{len(units)}] {u.config:<18} eps={u.eps:<4} seed={u.seed} {u.conv:<8} "
            f"{r['seconds']:6.1f}s (elapsed {time.perf_counter() - t0:6.1f}s)",
            file=sys.stderr,
            flush=True,
        )

    if workers <= 1:
        for u in units:
            progress(runner(u))
    else:
        with mp.get_context("fork").Pool(workers) as pool:
            for r in pool.imap_unordered(runner, units, chunksize=1):
                progress(r)
    return out


# --- planning --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    name: str
    overrides: dict[str, Any]
    user: str  # "none" | "true" | "shuffled" | "assistant:<mode>" (benchmarks.learning_assistant)
    batch: bool = False  # report after the round's reads instead of after each read
    description: str = ""


@dataclass
class Plan:
    convs: list[str]
    seeds: list[int]
    eps: list[float]
    rounds: int
    max_train: int | None
    configs: dict[str, Config]  # name -> config (static first)
    eps_of: dict[str, list[float]]  # config -> eps values it runs at
    curves: set[str]

    def units(self) -> list[Unit]:
        units = [Unit(c, 0, 0.0, "cold", (), "cold", False, 0, False, self.max_train) for c in self.convs]
        for name, cfg in self.configs.items():
            for eps in self.eps_of[name]:
                for seed in self.seeds:
                    for conv in self.convs:
                        units.append(
                            Unit(
                                conv,
                                seed,
                                eps,
                                name,
                                tuple(sorted(cfg.overrides.items())),
                                cfg.user,
                                cfg.batch,
                                self.rounds,
                                name in self.curves,
                                self.max_train,
                            )
                        )
        return units
