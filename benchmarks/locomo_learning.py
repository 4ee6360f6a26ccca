"""LoCoMo learning benchmark: does feedback through the real tools make MemoryService.read better,
for the questions it was taught on, for other questions that share their evidence, and without
damaging questions it was not taught?

Setup (per conversation): every dialogue turn is one memory, written through MemoryService.write
("Speaker: text", plus " [image: caption]"; `benchmarks.locomo`), once, into a template database
that each run copies. Questions: categories 1-4 with valid evidence; gold = the memories of the
evidence turns. Per conversation and seed the questions are split 50/50 into a *training* stream
and a *held-out* set; held-out questions that share an evidence turn (dia_id) with some training
question are *transfer*, the others *control*.

Rounds: each round is a pass over the training questions in a fresh shuffled order. Per question:
`read(question, top_k=5)` (recorded; its read_id kept), then a simulated user driven by the
evidence labels:

- examination: rank i is examined with probability 1/i (rank 1 always);
- one judgement per examined item: +1 if it is a gold memory, -1 if not, flipped with
  probability eps;
- it reports through the real tools: `feedback(ids judged +1, +1.0, read_id)` and
  `feedback(ids judged -1, -1.0, read_id)` (one call per sign, only if non-empty) and
  `rate(id, judgement)` for every examined item (the same judgement reaches both tools).

The random draws (split, order, examination, flips) come from streams keyed by seed,
conversation, round and question, so every configuration sees the same draws (common random
numbers) and eps=0.1 flips a subset of what eps=0.2 flips.

After each round every question is asked again with `read(question, top_k=50, record=False)`
(measuring changes nothing; top-10 metrics are the same as with top_k=10, the deeper list is
only used to see whether any gold memory moved down): P@1, MRR@10, nDCG@10, R@5.

Configurations (Settings keyword arguments; everything else default, MNEMO_* env vars apply and
the settings in force are recorded):

  static            defaults, the same training reads, no feedback and no ratings: the same
                    store with learning off (reads alone move quality but not the order)
  full              defaults, true labels
  shuffled          defaults, same examination and the same number of +1/-1 judgements, but the
                    round's judgements are randomly permuted over all the round's examined items
                    (so they carry no information about which item is gold); the shuffled user
                    reports after the round's reads (it needs the whole round to permute)
  valence_only      context_weight=0, valence_share=1  (global valence only)
  quality_only      context_weight=0, valence_share=0  (global quality only)
  associations_off  context_weight=0                   (no query->memory links; global as default)
  context_only      global_weight=0                    (query->memory links only)
  full_batch        (not run by default) full labels reported after the round, like shuffled:
                    shows what batching alone does

Note: the concept-concept Hebbian associations that feedback also strengthens are stored but are
not read by ranking (MemoryService._rank uses valence, quality and the query-concept -> memory
links), so "associations off" removes the only associations ranking uses: the context links.

Differences against static are per question on the final round: each distinct question's
difference is averaged over the seeds in which it fell in the group, and the questions are
resampled 1000 times for a 95% percentile interval (paired bootstrap). Levels are the same
question-clustered means. "worse" / "better" = share of (seed, question) cases whose nDCG@10 is
lower / higher than static's; "any gold down" = some gold memory ranks lower (top 50, absent = 51).

    python -m benchmarks.locomo_learning --data ../shared/data/locomo/locomo_dev.json
    python -m benchmarks.locomo_learning --data ... --quick            # CI smoke run
    python -m benchmarks.locomo_learning --data ... --sweep            # one-at-a-time sweep on tune
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import make_embedder
from mnemo_mcp.service import MemoryService

from .locomo import TUNE_CONVERSATIONS, Conversation, load_locomo

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "locomo_learning.json"
DEFAULT_SWEEP_OUT = Path(__file__).resolve().parent / "results" / "locomo_learning_sweep.json"

TRAIN_TOP_K = 5
MEASURE_TOP_K = 50  # metrics use the top 10; the rest only for "did any gold memory move down"
ABSENT_RANK = MEASURE_TOP_K + 1
CATEGORIES_USED = (1, 2, 3, 4)
BOOTSTRAP = 1000
QUICK_CONVERSATION = "conv-30"  # the smallest conversation (369 turns, 81 questions)
QUICK_MAX_TRAIN = 40
METRICS = ("p@1", "mrr", "ndcg@10", "r@5")
GROUPS = ("train", "transfer", "control")
EMBED_CHUNK = 32


@dataclass(frozen=True)
class Config:
    name: str
    overrides: dict[str, Any]
    user: str  # "none" | "true" | "shuffled"
    batch: bool = False  # report after the round's reads instead of after each read
    description: str = ""


CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config("static", {}, "none", description="same store and training reads, no feedback or ratings"),
        Config("full", {}, "true", description="defaults, true labels"),
        Config("shuffled", {}, "shuffled", True, "defaults, labels permuted over the round's examined items"),
        Config(
            "valence_only", {"context_weight": 0.0, "valence_share": 1.0}, "true", description="global valence only"
        ),
        Config(
            "quality_only", {"context_weight": 0.0, "valence_share": 0.0}, "true", description="global quality only"
        ),
        Config("associations_off", {"context_weight": 0.0}, "true", description="no query->memory links"),
        Config("context_only", {"global_weight": 0.0}, "true", description="query->memory links only"),
        Config("full_batch", {}, "true", True, "true labels reported after the round (batching control)"),
    )
}
DEFAULT_CONFIGS = ("static", "full", "shuffled", "valence_only", "quality_only", "associations_off", "context_only")
ABLATIONS = ("valence_only", "quality_only", "associations_off", "context_only")

# One-at-a-time sweep from the defaults (tune split only).
SWEEP_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default", {}),
    ("context_weight=0.5", {"context_weight": 0.5}),
    ("global_weight=0.05", {"global_weight": 0.05}),
    ("global_weight=0.2", {"global_weight": 0.2}),
    ("learning_rate=0.2", {"learning_rate": 0.2}),
    ("learning_rate=0.5", {"learning_rate": 0.5}),
    ("context_rate=0.4", {"context_rate": 0.4}),
    ("context_rate=0.8", {"context_rate": 0.8}),
)
SETTING_FIELDS = (
    "quality_boost",
    "learning_rate",
    "context_rate",
    "association_rate",
    "global_weight",
    "valence_share",
    "context_weight",
    "context_gate",
    "context_gate_floor",
    "sem_weight",
    "candidates",
)


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


def _rng(*key: Any) -> random.Random:
    """A random stream fixed by its key (str seeding hashes with SHA-512: same in every process)."""
    return random.Random("|".join(str(k) for k in key))


def split_questions(conv: ConvData, seed: int, max_train: int | None = None) -> Split:
    """50/50 training / held-out (training capped at max_train); held-out sharing an evidence turn
    with a training question is transfer, the rest control."""
    qs = list(conv.questions)
    _rng(seed, conv.sample_id, "split").shuffle(qs)
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
        memory_of = {t.dia_id: svc.write(t.content, metadata=t.metadata).id for t in conv.turns}
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


# Filled in the parent before the worker pool forks; workers only read them.
_CONVS: dict[str, ConvData] = {}
_TABLE: VectorTable | None = None


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
    rng = _rng(*key, "user")
    draws = [(rng.random(), rng.random()) for _ in range(TRAIN_TOP_K)]
    return [(i, draws[i][1] < eps) for i in range(min(n_items, TRAIN_TOP_K)) if draws[i][0] < 1.0 / (i + 1)]


def report(svc: MemoryService, read_id: str, judged: list[tuple[str, int]], volume: dict[str, int]) -> None:
    """The simulated user's report through the real tools: memory_feedback per sign (with the
    read's read_id, so the query's concepts are taught), rate_memory per examined item."""
    pos = [mid for mid, j in judged if j > 0]
    neg = [mid for mid, j in judged if j < 0]
    for ids, outcome in ((pos, 1.0), (neg, -1.0)):
        if ids:
            svc.feedback(ids, outcome, read_id=read_id)
            volume["feedback_calls"] += 1
    for mid, j in judged:
        svc.rate(mid, j)
        volume["rate_calls"] += 1
    volume["reported_pos"] += len(pos)
    volume["reported_neg"] += len(neg)


def run_unit(u: Unit) -> dict[str, Any]:
    """One configuration on one conversation for one seed and eps, on a fresh copy of the template."""
    conv = _CONVS[u.conv]
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
                _rng(u.seed, u.conv, rnd, "order").shuffle(order)
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
                    _rng(u.seed, u.conv, rnd, u.eps, "permute").shuffle(labels)
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


def run_units(units: list[Unit], workers: int, label: str) -> list[dict[str, Any]]:
    """Run units (largest first) in `workers` forked processes that share the filled tables."""
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
            progress(run_unit(u))
    else:
        with mp.get_context("fork").Pool(workers) as pool:
            for r in pool.imap_unordered(run_unit, units, chunksize=1):
                progress(r)
    return out


# --- planning --------------------------------------------------------------------------------


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


# --- aggregation -----------------------------------------------------------------------------


def bootstrap_ci(d: np.ndarray, rng: np.random.Generator, n: int = BOOTSTRAP) -> tuple[float, float]:
    if len(d) == 0:
        return (float("nan"), float("nan"))
    means = d[rng.integers(0, len(d), size=(n, len(d)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def aggregate(plan: Plan, runs: list[dict[str, Any]], bootstrap: int) -> dict[str, Any]:
    convs = {c: _CONVS[c] for c in plan.convs}
    by_key: dict[tuple, dict[str, Any]] = {}
    cold: dict[str, dict[int, tuple]] = {}
    for r in runs:
        u: Unit = r["unit"]
        if u.config == "cold":
            cold[u.conv] = r["measured"][0]
        else:
            by_key[(u.config, u.eps, u.seed, u.conv)] = r
    splits = {(s, c): split_questions(convs[c], s, plan.max_train) for s in plan.seeds for c in plan.convs}
    static_eps = plan.eps_of["static"][0]

    def static_final(seed: int, conv: str) -> dict[int, tuple]:
        return by_key[("static", static_eps, seed, conv)]["measured"][plan.rounds]

    rng = np.random.default_rng(20240601)
    results: dict[str, Any] = {}
    for eps in plan.eps:
        per_eps: dict[str, Any] = {}
        for name in plan.configs:
            if eps not in plan.eps_of[name] and name != "static":
                continue
            run_eps = eps if name != "static" else static_eps
            entry: dict[str, Any] = {}
            vol = [by_key[(name, run_eps, s, c)]["volume"] for s in plan.seeds for c in plan.convs]
            entry["volume_per_seed"] = {k: sum(v[k] for v in vol) / len(plan.seeds) for k in vol[0]}
            for group in GROUPS:
                cases = [(s, c, q) for s in plan.seeds for c in plan.convs for q in splits[(s, c)].groups()[group]]
                if not cases:
                    continue
                rounds = sorted(by_key[(name, run_eps, plan.seeds[0], plan.convs[0])]["measured"])
                g: dict[str, Any] = {"n_questions": len({(c, q.index) for _, c, q in cases}), "n_cases": len(cases)}

                def clustered(values: dict[tuple[str, int], list[float]]) -> np.ndarray:
                    return np.array([sum(v) / len(v) for v in values.values()])

                round_means = {}
                for rnd in [0, *rounds]:
                    row = {}
                    for mi, metric in enumerate(METRICS):
                        vals: dict[tuple[str, int], list[float]] = {}
                        for s, c, q in cases:
                            m = cold[c] if rnd == 0 else by_key[(name, run_eps, s, c)]["measured"][rnd]
                            vals.setdefault((c, q.index), []).append(m[q.index][mi])
                        row[metric] = float(clustered(vals).mean())
                    round_means[str(rnd)] = row
                g["rounds"] = round_means
                g["final"] = round_means[str(plan.rounds)]
                vs: dict[str, Any] = {}
                per_seed: dict[str, list[float]] = {}
                for mi, metric in enumerate(METRICS):
                    diffs: dict[tuple[str, int], list[float]] = {}
                    for s, c, q in cases:
                        mine = by_key[(name, run_eps, s, c)]["measured"][plan.rounds][q.index][mi]
                        diffs.setdefault((c, q.index), []).append(mine - static_final(s, c)[q.index][mi])
                    d = clustered(diffs)
                    lo, hi = bootstrap_ci(d, rng, bootstrap)
                    vs[metric] = {"diff": float(d.mean()), "ci95": [lo, hi]}
                    per_seed[metric] = [
                        float(
                            np.mean(
                                [
                                    by_key[(name, run_eps, s, c)]["measured"][plan.rounds][q.index][mi]
                                    for s2, c, q in cases
                                    if s2 == s
                                ]
                            )
                        )
                        for s in plan.seeds
                        if any(s2 == s for s2, _, _ in cases)
                    ]
                g["vs_static"] = vs
                g["per_seed_final"] = per_seed
                worse = better = down = up = 0
                for s, c, q in cases:
                    mine = by_key[(name, run_eps, s, c)]["measured"][plan.rounds][q.index]
                    base = static_final(s, c)[q.index]
                    worse += mine[2] < base[2] - 1e-12
                    better += mine[2] > base[2] + 1e-12
                    down += any(a > b for a, b in zip(mine[4], base[4]))
                    up += any(a < b for a, b in zip(mine[4], base[4]))
                n = len(cases)
                g["changed_vs_static"] = {
                    "worse_ndcg@10": worse / n,
                    "better_ndcg@10": better / n,
                    "any_gold_down": down / n,
                    "any_gold_up": up / n,
                }
                entry[group] = g
            per_eps[name] = entry
        results[f"{eps:g}"] = per_eps
    # Static must not move: reads without feedback change quality but not the order.
    drift = sum(static_final(s, c)[qi][4] != cold[c][qi][4] for s in plan.seeds for c in plan.convs for qi in cold[c])
    return {"results": results, "static_drift_questions": int(drift)}


def split_summary(plan: Plan) -> dict[str, Any]:
    rows = {}
    for c in plan.convs:
        conv = _CONVS[c]
        sizes = [split_questions(conv, s, plan.max_train) for s in plan.seeds]
        rows[c] = {
            "split": conv.split,
            "turns": conv.turns,
            "memories": conv.memories,
            "questions_cat1-4": len(conv.questions),
            "train": [len(x.train) for x in sizes],
            "transfer": [len(x.transfer) for x in sizes],
            "control": [len(x.control) for x in sizes],
        }
    return rows


# --- output ----------------------------------------------------------------------------------

_GROUP_TITLES = {
    "train": "training questions asked again",
    "transfer": "held-out, transfer (shares an evidence turn with a training question)",
    "control": "held-out, control (shares no evidence turn)",
}


def _ci(v: dict[str, Any]) -> str:
    lo, hi = v["ci95"]
    return f"{v['diff']:+.3f} [{lo:+.3f},{hi:+.3f}]"


def format_group_table(per_eps: dict[str, Any], group: str) -> str:
    head = (
        f"{'config':<18}{'P@1':>6}{'MRR':>7}{'nDCG10':>7}{'R@5':>7}   {'dP@1 [95% CI]':<24}{'dMRR [95% CI]':<24}"
        f"{'worse':>6}{'better':>7}{'gold-dn':>8}"
    )
    lines = [head, "-" * len(head)]
    for name, entry in per_eps.items():
        g = entry.get(group)
        if not g:
            continue
        f, vs, ch = g["final"], g["vs_static"], g["changed_vs_static"]
        lines.append(
            f"{name:<18}{f['p@1']:6.3f}{f['mrr']:7.3f}{f['ndcg@10']:7.3f}{f['r@5']:7.3f}   "
            f"{_ci(vs['p@1']):<24}{_ci(vs['mrr']):<24}"
            f"{100 * ch['worse_ndcg@10']:5.1f}%{100 * ch['better_ndcg@10']:6.1f}%{100 * ch['any_gold_down']:7.1f}%"
        )
    return "\n".join(lines)


def format_curves(results: dict[str, Any], curves: set[str], rounds: int) -> str:
    lines = []
    head = f"{'config':<14}{'eps':<6}{'group':<10}" + "".join(f"{'r' + str(r):>7}" for r in range(rounds + 1))
    for metric in ("p@1", "mrr"):
        lines.append(f"learning curve, {metric} (r0 = cold start, identical for every configuration):")
        lines.append(head)
        for eps, per_eps in results.items():
            for name in per_eps:
                if name not in curves:
                    continue
                for group in GROUPS:
                    g = per_eps[name].get(group)
                    if not g:
                        continue
                    cells = "".join(
                        f"{g['rounds'][str(r)][metric]:7.3f}" if str(r) in g["rounds"] else f"{'':>7}"
                        for r in range(rounds + 1)
                    )
                    lines.append(f"{name:<14}{eps:<6}{group:<10}{cells}")
        lines.append("")
    return "\n".join(lines).rstrip()


def format_volume(results: dict[str, Any]) -> str:
    head = f"{'config':<22}{'eps':<6}{'reads':>7}{'examined':>9}{'gold ex.':>9}{'+1 sent':>8}{'-1 sent':>8}{'fb calls':>9}{'ratings':>8}"
    lines = ["feedback volume per seed (all rounds, all selected conversations):", head]
    for eps, per_eps in results.items():
        for name, entry in per_eps.items():
            v = entry["volume_per_seed"]
            lines.append(
                f"{name:<22}{eps:<6}{v['reads']:7.0f}{v['examined']:9.0f}{v['gold_examined']:9.0f}"
                f"{v['reported_pos']:8.0f}{v['reported_neg']:8.0f}{v['feedback_calls']:9.0f}{v['rate_calls']:8.0f}"
            )
    return "\n".join(lines)


def format_summary(results: dict[str, Any]) -> str:
    """One line per configuration and eps: final P@1 change on each group, control damage."""
    head = (
        f"{'config':<22}{'eps':<6}{'train dP@1 [CI]':<26}{'transfer dP@1 [CI]':<26}{'control dP@1 [CI]':<26}"
        f"{'ctrl worse':>10}{'ctrl gold-dn':>13}"
    )
    lines = [head, "-" * len(head)]
    for eps, per_eps in results.items():
        for name, entry in per_eps.items():
            if name == "static":
                continue
            cells = []
            for group in GROUPS:
                g = entry.get(group)
                cells.append(f"{_ci(g['vs_static']['p@1']):<26}" if g else f"{'-':<26}")
            ctrl = entry.get("control")
            ch = ctrl["changed_vs_static"] if ctrl else None
            tail = f"{100 * ch['worse_ndcg@10']:9.1f}%{100 * ch['any_gold_down']:12.1f}%" if ch else ""
            lines.append(f"{name:<22}{eps:<6}" + "".join(cells) + tail)
    return "\n".join(lines)


# --- command line ----------------------------------------------------------------------------


def _floats(s: str) -> list[float]:
    vals = [float(x) for x in s.split(",") if x.strip()]
    for v in vals:
        if not 0.0 <= v <= 0.5:
            raise argparse.ArgumentTypeError(f"eps {v} outside [0, 0.5]")
    return vals


def _names(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _setting(s: str) -> tuple[str, Any]:
    name, sep, raw = s.partition("=")
    name = name.strip()
    if not sep or name not in Settings.model_fields or name in ("db", "embed_model", "model_cache_dir"):
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME a Settings field (not db or the model): {s!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw.strip()
    try:
        Settings(db=Path(tempfile.gettempdir()) / "unused.db", **{name: value})
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"invalid {name}={raw}: {err}") from None
    return name, value


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.locomo_learning",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "LoCoMo learning benchmark: a simulated user (driven by the evidence labels, position-biased\n"
            "examination 1/rank, judgements flipped with probability eps) teaches MemoryService through the\n"
            "real read / feedback / rate calls; after each round P@1, MRR@10, nDCG@10 and R@5 are measured\n"
            "without recording on the training questions asked again, on held-out questions that share an\n"
            "evidence turn with a training question (transfer) and on those that do not (control), against\n"
            "the same store without feedback (static), shuffled labels, and ablations.\n\n"
            "Defaults (about 15 minutes on 2 cores): the 5 test conversations, 5 rounds, 3 seeds,\n"
            "eps 0 and 0.2 for full and shuffled (the full list --eps 0,0.1,0.2,0.3 works but takes about\n"
            "twice as long), ablations at eps 0 only (--ablation-eps). Tuning uses conv-26 and conv-30 only\n"
            "(--sweep runs there by default); the other conversations are the held-out test split.\n"
            "See the module docstring for the exact protocol."
        ),
    )
    p.add_argument("--data", required=True, type=Path, help="path to locomo_dev.json (LoCoMo format; never copied)")
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"CI smoke run: one conversation ({QUICK_CONVERSATION} unless --conversations), 2 rounds, "
        f"1 seed, eps 0, at most {QUICK_MAX_TRAIN} training questions (overrides those options)",
    )
    p.add_argument("--rounds", type=int, default=5, help="training rounds (passes over the training stream; default 5)")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..S-1 (split, order, user draws; default 3)")
    p.add_argument(
        "--eps",
        type=_floats,
        default=[0.0, 0.2],
        help="judgement flip probabilities for full and shuffled (default 0,0.2; e.g. 0,0.1,0.2,0.3)",
    )
    p.add_argument(
        "--ablation-eps",
        type=str,
        default="0",
        help="eps values at which the ablations run (default 0; 'all' = every --eps)",
    )
    p.add_argument(
        "--configs",
        type=_names,
        default=list(DEFAULT_CONFIGS),
        help=f"configurations (default {','.join(DEFAULT_CONFIGS)}; also: full_batch)",
    )
    p.add_argument(
        "--curves",
        type=_names,
        default=["full"],
        help="configurations measured after every round, not only the last (default full)",
    )
    p.add_argument("--png", type=Path, default=None, help="draw P@1 learning curves of the --curves configurations")
    p.add_argument(
        "--conversations",
        type=str,
        default=None,
        help="'test' (default), 'tune' (default with --sweep), 'all', or comma-separated sample_ids",
    )
    p.add_argument("--max-train", type=int, default=None, help="cap on training questions per conversation")
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (default: up to 2)")
    p.add_argument("--bootstrap", type=int, default=BOOTSTRAP, help=f"bootstrap resamples (default {BOOTSTRAP})")
    p.add_argument(
        "--sweep",
        action="store_true",
        help="one-at-a-time sweep from the defaults of context_weight, global_weight, learning_rate, "
        "context_rate (full user, final round only), on the tune conversations by default",
    )
    p.add_argument(
        "--set",
        type=_setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Settings override for every configuration, e.g. --set context_weight=0.5 "
        "(repeatable; a configuration's own overrides, such as an ablation's, win)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"JSON results (default {DEFAULT_OUT}, or {DEFAULT_SWEEP_OUT} with --sweep)",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seeds, args.eps, args.ablation_eps, args.max_train = 2, 1, [0.0], "0", QUICK_MAX_TRAIN
    if args.rounds < 1 or args.seeds < 1:
        p.error("--rounds and --seeds must be at least 1")
    if not args.eps:
        p.error("--eps needs at least one value")
    args.ablation_eps = list(args.eps) if args.ablation_eps.strip() == "all" else _floats(args.ablation_eps)
    unknown = [c for c in args.configs + args.curves if c not in CONFIGS]
    if unknown:
        p.error(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGS)}")
    return args


def select_conversations(convs: list[Conversation], spec: str | None, sweep: bool, quick: bool) -> list[Conversation]:
    if spec is None:
        spec = QUICK_CONVERSATION if quick else ("tune" if sweep else "test")
    if spec in ("all", "tune", "test"):
        chosen = [c for c in convs if spec == "all" or c.split == spec]
    else:
        wanted = _names(spec)
        have = {c.sample_id for c in convs}
        missing = [w for w in wanted if w not in have]
        if missing:
            raise ValueError(f"unknown conversation(s) {missing}; the file holds {sorted(have)}")
        chosen = [c for c in convs if c.sample_id in wanted]
    return chosen[:1] if quick else chosen


def _with(cfg: Config, base: dict[str, Any]) -> Config:
    """The configuration with --set overrides underneath its own (an ablation's own settings win)."""
    return Config(cfg.name, {**base, **cfg.overrides}, cfg.user, cfg.batch, cfg.description)


def make_plan(args: argparse.Namespace, conv_ids: list[str]) -> Plan:
    base = dict(args.set)
    configs: dict[str, Config] = {"static": _with(CONFIGS["static"], base)}
    eps_of: dict[str, list[float]] = {"static": [0.0]}
    if args.sweep:
        for label, overrides in SWEEP_VARIANTS:
            configs[label] = _with(Config(label, overrides, "true", description="sweep variant"), base)
            eps_of[label] = list(args.eps)
        curves: set[str] = set()
    else:
        for name in args.configs:
            if name == "static":
                continue
            configs[name] = _with(CONFIGS[name], base)
            eps_of[name] = list(args.ablation_eps) if name in ABLATIONS or name == "full_batch" else list(args.eps)
        curves = set(args.curves)
    # eps values the report is organised by: every eps some configuration runs at
    eps_all = sorted({e for n, es in eps_of.items() if n != "static" for e in es})
    return Plan(conv_ids, list(range(args.seeds)), eps_all, args.rounds, args.max_train, configs, eps_of, curves)


def code_version() -> dict[str, Any]:
    """Which mnemo_mcp the figures come from: a digest of its sources (the exact code, committed
    or not), where it was imported from, and the git commit and dirty state when in a checkout."""
    import hashlib

    import mnemo_mcp

    pkg = Path(mnemo_mcp.__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        h.update(str(f.relative_to(pkg)).encode() + b"\0" + f.read_bytes() + b"\0")
    info: dict[str, Any] = {"mnemo_mcp_path": str(pkg), "mnemo_mcp_sha256": h.hexdigest()}
    return {**info, **_git_version(pkg.parent)}


def _git_version(root: Path) -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "mnemo_mcp"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if commit.returncode != 0:
            return {"commit": None}  # not a git checkout
        return {"commit": commit.stdout.strip(), "mnemo_mcp_modified": bool(dirty.stdout.strip())}
    except (OSError, ValueError, subprocess.SubprocessError):
        return {"commit": None}


def effective_settings(overrides: dict[str, Any]) -> dict[str, Any]:
    s = Settings(db=Path(tempfile.gettempdir()) / "unused.db", **overrides)
    return {f: getattr(s, f) for f in SETTING_FIELDS}


def main(argv: Sequence[str] | None = None) -> int:
    global _TABLE
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        convs = select_conversations(load_locomo(args.data), args.conversations, args.sweep, args.quick)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not convs:
        print("error: no conversations selected", file=sys.stderr)
        return 2

    base = Settings(db=Path(tempfile.gettempdir()) / "unused.db")
    table = VectorTable(base.embed_model, base.model_cache_dir)
    t0 = time.perf_counter()
    questions = [q.question for c in convs for q in c.questions if q.category in CATEGORIES_USED]
    check = embed_all(table, [t.content for c in convs for t in c.turns], questions, args.workers)
    embed_seconds = time.perf_counter() - t0
    _TABLE = table

    with tempfile.TemporaryDirectory(prefix="mnemo-locomo-learning-") as tmp:
        t0 = time.perf_counter()
        for c in convs:
            _CONVS[c.sample_id] = build_template(c, table, Path(tmp))
        write_seconds = time.perf_counter() - t0
        plan = make_plan(args, [c.sample_id for c in convs])
        units = plan.units()
        print(f"{len(units)} runs on {args.workers} worker(s)", file=sys.stderr)
        t0 = time.perf_counter()
        runs = run_units(units, args.workers, "sweep" if args.sweep else "run")
        run_seconds = time.perf_counter() - t0
    agg = aggregate(plan, runs, args.bootstrap)
    results = agg["results"]

    report_json: dict[str, Any] = {
        "benchmark": "locomo_learning_sweep" if args.sweep else "locomo_learning",
        "data": str(args.data),
        "quick": args.quick,
        "code": code_version(),
        "embed_model": table.name,
        "embedding_batch_vs_single_max_abs_diff": check,
        "embedding_table_misses": table.misses,
        "options": {
            "conversations": plan.convs,
            "rounds": plan.rounds,
            "seeds": plan.seeds,
            "eps": plan.eps,
            "max_train": plan.max_train,
            "set": dict(args.set),
            "train_top_k": TRAIN_TOP_K,
            "measure_top_k": MEASURE_TOP_K,
            "categories": list(CATEGORIES_USED),
            "bootstrap": args.bootstrap,
            "workers": args.workers,
        },
        "protocol": {
            "examination": "rank i of the top 5 examined with probability 1/i",
            "judgement": "+1 gold / -1 non-gold per examined item, flipped with probability eps",
            "report": "memory_feedback(+1 ids, +1.0, read_id), memory_feedback(-1 ids, -1.0, read_id), "
            "rate_memory(id, judgement) per examined item",
            "shuffled": "the round's judgements permuted over all its examined items, reported after the round",
            "metrics": "P@1, MRR@10, nDCG@10 (binary), R@5 from read(top_k=50, record=False)",
            "vs_static": "final round, per question, averaged over the seeds it fell in the group; "
            "95% percentile interval from resampling questions",
            "changed_vs_static": "share of (seed, question) cases with nDCG@10 lower/higher than static; "
            "any_gold_down/up: some gold memory ranks lower/higher in the top 50 (absent = 51)",
        },
        "configs": {
            name: {
                "overrides": cfg.overrides,
                "user": cfg.user,
                "batch": cfg.batch,
                "description": cfg.description,
                "eps": plan.eps_of[name],
                "settings": effective_settings(cfg.overrides),
            }
            for name, cfg in plan.configs.items()
        },
        "splits": split_summary(plan),
        "static_drift_questions": agg["static_drift_questions"],
        "results": results,
        "seconds": {
            "embed": round(embed_seconds, 1),
            "write": round(write_seconds, 1),
            "runs": round(run_seconds, 1),
            "runs_cpu": round(sum(r["cpu_seconds"] for r in runs), 1),
            "total": round(time.perf_counter() - started, 1),
        },
    }

    sp = report_json["splits"]
    n_train = sum(sum(r["train"]) for r in sp.values()) / len(plan.seeds)
    n_tr = sum(sum(r["transfer"]) for r in sp.values()) / len(plan.seeds)
    n_ct = sum(sum(r["control"]) for r in sp.values()) / len(plan.seeds)
    print(
        f"LoCoMo learning{' sweep' if args.sweep else ''}: {', '.join(plan.convs)}; "
        f"{sum(r['memories'] for r in sp.values())} memories; per seed {n_train:.0f} training, "
        f"{n_tr:.0f} transfer, {n_ct:.0f} control questions (cat 1-4); {plan.rounds} rounds, "
        f"{len(plan.seeds)} seed(s), model {table.name}" + (" (quick)" if args.quick else "")
    )
    print(
        f"tuning uses {', '.join(TUNE_CONVERSATIONS)} only; static drift (questions whose static ranking moved "
        f"after the training reads): {agg['static_drift_questions']}"
    )
    for name, cfg in plan.configs.items():
        print(
            f"  {name:<18} {cfg.overrides or '(defaults)'}  user={cfg.user}{' batch' if cfg.batch else ''}  "
            f"eps={','.join(f'{e:g}' for e in plan.eps_of[name]) if cfg.user != 'none' else '-'}"
        )
    print()
    print("summary, final round, difference against static (mean [95% paired-bootstrap CI]):")
    print(format_summary(results))
    if not args.sweep:
        for eps, per_eps in results.items():
            for group in GROUPS:
                if not any(group in e for e in per_eps.values()):
                    continue
                n = next(e[group]["n_questions"] for e in per_eps.values() if group in e)
                print()
                print(
                    f"eps={eps}, round {plan.rounds}, {_GROUP_TITLES[group]} ({n} distinct questions); "
                    "worse/better = nDCG@10 vs static, gold-dn = some gold ranked lower"
                )
                print(format_group_table(per_eps, group))
        if plan.curves:
            print()
            print(format_curves(results, plan.curves, plan.rounds))
    print()
    print(format_volume(results))
    s = report_json["seconds"]
    print()
    print(
        f"time: embed {s['embed']}s, write {s['write']}s, runs {s['runs']}s (CPU {s['runs_cpu']}s over "
        f"{args.workers} worker(s)), total {s['total']}s"
    )

    out = args.out or (DEFAULT_SWEEP_OUT if args.sweep else DEFAULT_OUT)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report_json, indent=2) + "\n", encoding="utf-8")
    print(f"results written to {out}")
    if args.png and plan.curves:
        from .plots import learning_curves

        curves: dict[str, dict[str, list[float]]] = {}
        for eps, by_config in results.items():
            for config in plan.curves:
                for group in ("train", "transfer", "control"):
                    rounds = by_config.get(config, {}).get(group, {}).get("rounds", {})
                    if len(rounds) > 2:
                        values = [rounds[r]["p@1"] for r in sorted(rounds, key=int)]
                        curves.setdefault(group, {})[f"{config} eps={eps}"] = values
        if learning_curves(curves, "P@1", args.png, "LoCoMo: P@1 after each round of feedback"):
            print(f"picture: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
