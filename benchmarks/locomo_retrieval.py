"""LoCoMo retrieval benchmark: how well MemoryService.read finds the evidence turns of a question.

Each dialogue turn is written as one memory through MemoryService.write ("Speaker: text", plus
" [image: caption]" for shared images; dia_id and session date in metadata), one database per
conversation, with the real default embedder. Each question (categories 1-5, with valid
evidence) is a query; its gold set is the memories of its evidence turns (two turns with the same
content are one memory, so recall counts distinct memories). Reads use top_k=50 and record=False,
so asking questions never changes the state being measured. Recall@k is the fraction of the gold
set in the top k, averaged over questions; MRR uses the first gold memory in the top 50.

Three retrievers, all through the project's own code path (MemoryService.read), cold start
(quality_boost=False):

  keyword  Settings(sem_weight=0.0)  rank by the calibrated lexical (FTS5 BM25) score only
  vector   Settings(sem_weight=1.0)  rank by the calibrated semantic (cosine) score only
  fused    Settings()                the defaults: sem_weight * semantic + (1 - sem_weight) * lexical

sem_weight 0 and 1 still draw candidates from both retrievers (the union of the vector and
keyword candidate pools) and only then rank by one score, so "keyword only" can return memories
that match no query word (at relevance 0, after every matching one) and vice versa.

Parameters are tuned on conv-26 and conv-30 only (the "tune" split); the other conversations
are the held-out "test" split, reported separately.

    python -m benchmarks.locomo_retrieval --data ../shared/data/locomo/locomo_dev.json
    python -m benchmarks.locomo_retrieval --data ... --quick          # CI: 1 conversation, 60 questions
    python -m benchmarks.locomo_retrieval --data ... --sweep          # + parameter sweep on tune
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import make_embedder
from mnemo_mcp.service import MemoryService

from .locomo import (
    CATEGORIES,
    TUNE_CONVERSATIONS,
    Conversation,
    PrecomputedEmbedder,
    conversations_or_error,
    load_locomo,
)

TOP_K = 50
# Every memory gets the same creation time, so memories of equal relevance (ranked by
# created_at, then id) come out in the same order in every run.
WRITE_TIME = datetime(2024, 1, 1, tzinfo=UTC)
RECALL_KS = (5, 10, 25, 50)
QUICK_QUESTIONS = 60
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "locomo_retrieval.json"

# Settings overrides per retriever; everything else is the Settings default.
RETRIEVERS: dict[str, dict[str, Any]] = {
    "keyword": {"sem_weight": 0.0, "quality_boost": False},
    "vector": {"sem_weight": 1.0, "quality_boost": False},
    "fused": {"quality_boost": False},
}
RETRIEVAL_FIELDS = ("sem_weight", "sem_floor", "sem_ceil", "candidates", "quality_boost")

SWEEP_SEM_WEIGHT = (0.3, 0.4, 0.5, 0.6)
# (0.0, 0.7), (0.1, 0.8), (0.2, 0.9) only shift the cosine mapping (same width 0.7): they rank alike
# but for clipping at 0 and 1. (0.2, 0.7) and (0.0, 1.0) change its scale, which acts like a
# different sem_weight.
SWEEP_FLOOR_CEIL = ((0.0, 0.7), (0.1, 0.8), (0.2, 0.9), (0.2, 0.7), (0.0, 1.0))
SWEEP_CANDIDATES = (100, 200)
SWEEP_CRITERION = ("tune_1-4", "recall@10")  # ties broken by MRR on the same group

METRIC_KEYS = tuple(f"recall@{k}" for k in RECALL_KS) + ("hit@1", "mrr", "ndcg@10")


# --- metrics ---------------------------------------------------------------------------------


def question_metrics(ranked: Sequence[str], gold: set[str]) -> dict[str, float]:
    """Recall@k (fraction of gold in the top k), hit@1, reciprocal rank of the first gold memory
    (0 if none in the list), nDCG@10 with binary gains."""
    out: dict[str, float] = {}
    for k in RECALL_KS:
        out[f"recall@{k}"] = len(gold.intersection(ranked[:k])) / len(gold)
    out["hit@1"] = 1.0 if ranked and ranked[0] in gold else 0.0
    first = next((i for i, mid in enumerate(ranked, start=1) if mid in gold), None)
    out["mrr"] = 1.0 / first if first else 0.0
    dcg = sum(1.0 / math.log2(i + 1) for i, mid in enumerate(ranked[:10], start=1) if mid in gold)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), 10) + 1))
    out["ndcg@10"] = dcg / idcg
    return out


@dataclass(frozen=True)
class QuestionResult:
    sample_id: str
    split: str
    category: int
    metrics: dict[str, float]


def _mean(results: list[QuestionResult]) -> dict[str, Any]:
    n = len(results)
    return {"n": n, **{m: sum(r.metrics[m] for r in results) / n for m in METRIC_KEYS}}


def group_results(results: list[QuestionResult]) -> dict[str, dict[str, Any]]:
    """Mean metrics per group (empty groups are left out)."""
    main = [r for r in results if r.category != 5]
    groups: dict[str, list[QuestionResult]] = {
        "overall_1-4": main,
        "overall_1-5": results,
        "tune_1-4": [r for r in main if r.split == "tune"],
        "test_1-4": [r for r in main if r.split == "test"],
        "tune_1-5": [r for r in results if r.split == "tune"],
        "test_1-5": [r for r in results if r.split == "test"],
    }
    for c in CATEGORIES:
        groups[f"category_{c}"] = [r for r in results if r.category == c]
    return {name: _mean(rs) for name, rs in groups.items() if rs}


# --- running ---------------------------------------------------------------------------------


@dataclass
class BuiltConversation:
    conv: Conversation
    db: Path | str  # a SQLite file, or a PostgreSQL URL (benchmarks.backends)
    memory_of: dict[str, str]  # dia_id -> memory id
    memories: int


def build(
    convs: Iterable[Conversation],
    embedder: PrecomputedEmbedder,
    root: Path,
    database: Callable[[str], Path | str] | None = None,
) -> list[BuiltConversation]:
    """One database per conversation (a file under `root`, or what `database` makes for the
    conversation's id), every turn written through MemoryService.write."""
    convs = list(convs)
    embedder.precompute([t.content for c in convs for t in c.turns])
    built = []
    for conv in convs:
        db = database(conv.sample_id) if database else root / f"{conv.sample_id}.db"
        svc = MemoryService(Settings(db=db, quality_boost=False), embedder=embedder)
        try:
            memory_of = {}
            for turn in conv.turns:
                # One memory per turn (the gold set is per turn), so the near-duplicate check is waived.
                memory_of[turn.dia_id] = svc.write(
                    turn.content, metadata=turn.metadata, now=WRITE_TIME, allow_duplicate=True
                ).id
        finally:
            svc.close()
        built.append(BuiltConversation(conv, db, memory_of, len(set(memory_of.values()))))
    return built


def settings_for(db: Path | str, overrides: dict[str, Any]) -> Settings:
    return Settings(db=db, **overrides)


def evaluate(
    built: Iterable[BuiltConversation],
    embedder: PrecomputedEmbedder,
    overrides: dict[str, Any],
    max_questions: int | None = None,
) -> list[QuestionResult]:
    results: list[QuestionResult] = []
    for b in built:
        svc = MemoryService(settings_for(b.db, overrides), embedder=embedder)
        try:
            questions = b.conv.questions[:max_questions] if max_questions else b.conv.questions
            for q in questions:
                gold = {b.memory_of[d] for d in q.evidence}
                ranked = [it.id for it in svc.read(q.question, top_k=TOP_K, record=False).items]
                results.append(
                    QuestionResult(b.conv.sample_id, b.conv.split, q.category, question_metrics(ranked, gold))
                )
        finally:
            svc.close()
    return results


def effective_settings(overrides: dict[str, Any]) -> dict[str, Any]:
    """The retrieval fields actually in force (Settings also reads MNEMO_* from the environment)."""
    s = Settings(db=Path(tempfile.gettempdir()) / "unused.db", **overrides)
    return {f: getattr(s, f) for f in RETRIEVAL_FIELDS}


def sweep_grid() -> list[dict[str, Any]]:
    return [
        {"sem_weight": w, "sem_floor": f, "sem_ceil": c, "candidates": n, "quality_boost": False}
        for w, (f, c), n in itertools.product(SWEEP_SEM_WEIGHT, SWEEP_FLOOR_CEIL, SWEEP_CANDIDATES)
    ]


def run_sweep(built: list[BuiltConversation], embedder: PrecomputedEmbedder, fused: dict[str, Any]) -> dict[str, Any]:
    """Grid on the tune split only; the best setting (by SWEEP_CRITERION) is then run on test."""
    tune = [b for b in built if b.conv.split == "tune"]
    test = [b for b in built if b.conv.split == "test"]
    if not tune:
        raise SystemExit(f"--sweep needs the tune conversations {list(TUNE_CONVERSATIONS)} in the selection")
    group, metric = SWEEP_CRITERION
    rows = []
    grid = sweep_grid()
    for i, overrides in enumerate(grid, start=1):
        res = group_results(evaluate(tune, embedder, overrides))
        rows.append({"settings": overrides, "tune_1-4": res["tune_1-4"], "tune_1-5": res["tune_1-5"]})
        print(f"  sweep {i:2d}/{len(grid)} {_short(overrides)}: {metric} {res[group][metric]:.3f}", file=sys.stderr)
    rows.sort(key=lambda r: (-r[group][metric], -r[group]["mrr"]))
    best = rows[0]["settings"]
    out: dict[str, Any] = {
        "criterion": f"{metric} on {group} (ties: mrr)",
        "grid": rows,
        "best": {"settings": best, "tune_1-4": rows[0]["tune_1-4"], "tune_1-5": rows[0]["tune_1-5"]},
    }
    if test:
        best_test = group_results(evaluate(test, embedder, best))
        default_test = group_results(evaluate(test, embedder, fused))
        out["best"]["test_1-4"] = best_test["test_1-4"]
        out["best"]["test_1-5"] = best_test["test_1-5"]
        out["default_fused_test_1-4"] = default_test["test_1-4"]
        out["default_fused_test_1-5"] = default_test["test_1-5"]
    return out


# --- output ----------------------------------------------------------------------------------

_COLUMNS = ("n",) + METRIC_KEYS
_HEAD = ("n", "R@5", "R@10", "R@25", "R@50", "hit@1", "MRR", "nDCG@10")
_GROUP_LABELS = {
    "overall_1-4": "all, cat 1-4",
    "overall_1-5": "all, cat 1-5",
    "tune_1-4": "tune, cat 1-4",
    "test_1-4": "test, cat 1-4",
    "tune_1-5": "tune, cat 1-5",
    "test_1-5": "test, cat 1-5",
    **{f"category_{c}": f"cat {c} {name}" for c, name in CATEGORIES.items()},
}


def _short(overrides: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in overrides.items() if k != "quality_boost")


def _row(label: str, name: str, m: dict[str, Any]) -> str:
    cells = [f"{m['n']:5d}"] + [f"{m[k]:6.3f}" for k in METRIC_KEYS]
    return f"{label:<24}{name:<9}" + " ".join(cells)


def format_table(retrievers: dict[str, dict[str, Any]]) -> str:
    head = f"{'group':<24}{'':<9}" + " ".join(f"{h:>5}" if h == "n" else f"{h:>6}" for h in _HEAD)
    lines = [head, "-" * len(head)]
    for group, label in _GROUP_LABELS.items():
        present = [(name, r["results"][group]) for name, r in retrievers.items() if group in r["results"]]
        for i, (name, m) in enumerate(present):
            lines.append(_row(label if i == 0 else "", name, m))
        if present:
            lines.append("")
    return "\n".join(lines).rstrip()


def format_sweep(sweep: dict[str, Any]) -> str:
    group, metric = SWEEP_CRITERION
    lines = [f"sweep on tune ({', '.join(TUNE_CONVERSATIONS)}), sorted by {sweep['criterion']}:"]
    lines.append(f"{'sem_weight floor ceil cand':<28}" + " ".join(f"{h:>5}" if h == "n" else f"{h:>6}" for h in _HEAD))
    for r in sweep["grid"]:
        s, m = r["settings"], r[group]
        cells = [f"{m['n']:5d}"] + [f"{m[k]:6.3f}" for k in METRIC_KEYS]
        lines.append(
            f"{s['sem_weight']:<10}{s['sem_floor']:<6}{s['sem_ceil']:<5}{s['candidates']:<7}" + " ".join(cells)
        )
    best = sweep["best"]
    lines.append("")
    lines.append(f"best on tune: {_short(best['settings'])}")
    for key, label in (("tune_1-4", "tune, cat 1-4"), ("test_1-4", "test, cat 1-4"), ("test_1-5", "test, cat 1-5")):
        if key in best:
            lines.append(_row(label, "best", best[key]))
    if "default_fused_test_1-4" in sweep:
        lines.append(_row("test, cat 1-4", "default", sweep["default_fused_test_1-4"]))
        lines.append(_row("test, cat 1-5", "default", sweep["default_fused_test_1-5"]))
    return "\n".join(lines)


# --- command line ----------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.locomo_retrieval",
        description=(
            "LoCoMo retrieval benchmark for MemoryService.read: one memory per dialogue turn, one "
            "database per conversation, each question a query whose gold set is its evidence turns. "
            "Reports recall@5/10/25/50, hit@1, MRR and nDCG@10 for three retrievers through the "
            "project's own code path, cold start (quality_boost=False): keyword (sem_weight=0), "
            "vector (sem_weight=1) and fused (the default Settings). Note: sem_weight 0 and 1 still "
            "draw candidates from both the vector and the keyword index and only rank by one score. "
            "Tuning uses conv-26 and conv-30 only ('tune'); the other conversations are 'test'. "
            "Settings also read MNEMO_* environment variables; the settings in force are printed."
        ),
    )
    p.add_argument("--data", required=True, type=Path, help="path to locomo_dev.json (LoCoMo format; never copied)")
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"only the first selected conversation and at most {QUICK_QUESTIONS} of its questions (for CI)",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON results file (default: {DEFAULT_OUT})")
    p.add_argument(
        "--conversations",
        type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
        default=None,
        help="comma-separated sample_ids to run, e.g. conv-26,conv-30 (default: all)",
    )
    p.add_argument(
        "--sweep",
        action="store_true",
        help=(
            "also sweep sem_weight x (sem_floor, sem_ceil) x candidates on the tune split only, then "
            "report the best setting (by tune recall@10, categories 1-4) on the test split"
        ),
    )
    return p.parse_args(argv)


def load_model() -> tuple[PrecomputedEmbedder, float]:
    """The default model, loaded now so that its time is reported apart: (embedder, seconds)."""
    base = Settings(db=Path(tempfile.gettempdir()) / "unused.db")
    embedder = PrecomputedEmbedder(make_embedder(base.embed_model, base.model_cache_dir, base.embed_weights))
    t0 = time.perf_counter()
    embedder.embed_query("probe")
    return embedder, time.perf_counter() - t0


def run_retrievers(
    args: argparse.Namespace, convs: list[Conversation], embedder: PrecomputedEmbedder, max_questions: int | None
) -> tuple[list[BuiltConversation], dict[str, dict[str, Any]], dict[str, Any] | None, dict[str, float]]:
    """The databases written and every retriever evaluated (and the sweep with --sweep):
    (built conversations, retrievers, sweep, seconds of the writes and the evaluation)."""
    with tempfile.TemporaryDirectory(prefix="mnemo-locomo-") as tmp:
        t0 = time.perf_counter()
        built = build(convs, embedder, Path(tmp))
        write_seconds = time.perf_counter() - t0

        t0 = time.perf_counter()
        retrievers: dict[str, dict[str, Any]] = {}
        for name, overrides in RETRIEVERS.items():
            results = evaluate(built, embedder, overrides, max_questions)
            retrievers[name] = {"settings": effective_settings(overrides), "results": group_results(results)}
        eval_seconds = time.perf_counter() - t0

        sweep = None
        if args.sweep:
            t0 = time.perf_counter()
            sweep = run_sweep(built, embedder, RETRIEVERS["fused"])
            sweep["seconds"] = round(time.perf_counter() - t0, 1)
    return built, retrievers, sweep, {"write": write_seconds, "evaluate": eval_seconds}


def _asked(b: BuiltConversation, max_questions: int | None) -> int:
    return len(b.conv.questions[:max_questions] if max_questions else b.conv.questions)


def conversation_rows(built: list[BuiltConversation], max_questions: int | None) -> list[dict[str, Any]]:
    """Per conversation: its split, sizes and what the evidence parsing fixed or skipped."""
    return [
        {
            "sample_id": b.conv.sample_id,
            "split": b.conv.split,
            "turns": len(b.conv.turns),
            "memories": b.memories,
            "questions": _asked(b, max_questions),
            "questions_skipped_no_evidence": b.conv.skipped_questions,
            "evidence_fields_split": b.conv.split_evidence_fields,
            "evidence_ids_normalized": b.conv.normalized_evidence_ids,
            "evidence_ids_skipped": b.conv.skipped_evidence_ids,
        }
        for b in built
    ]


def build_report(
    args: argparse.Namespace,
    embedder: PrecomputedEmbedder,
    built: list[BuiltConversation],
    retrievers: dict[str, dict[str, Any]],
    max_questions: int | None,
    seconds: dict[str, float],
) -> dict[str, Any]:
    """The JSON results (without the sweep); `seconds` holds the model load, write and evaluation
    times and the start of the run."""
    return {
        "benchmark": "locomo_retrieval",
        "data": str(args.data),
        "quick": args.quick,
        "top_k": TOP_K,
        "embed_model": embedder.name,
        "split": {
            "note": "parameters are tuned on the tune conversations only; test is held out",
            "tune": [b.conv.sample_id for b in built if b.conv.split == "tune"],
            "test": [b.conv.sample_id for b in built if b.conv.split == "test"],
        },
        "conversations": conversation_rows(built, max_questions),
        "questions": sum(_asked(b, max_questions) for b in built),
        "retrievers": retrievers,
        "seconds": {
            "model_load": round(seconds["model_load"], 2),
            "write": round(seconds["write"], 2),
            "evaluate": round(seconds["evaluate"], 2),
            "total": round(time.perf_counter() - seconds["started"], 2),
        },
    }


def print_report(args: argparse.Namespace, report: dict[str, Any], built: list[BuiltConversation]) -> None:
    tune = ", ".join(report["split"]["tune"]) or "none selected"
    test = ", ".join(report["split"]["test"]) or "none selected"
    print(
        f"LoCoMo retrieval: {len(built)} conversation(s), {sum(b.memories for b in built)} memories, "
        f"{report['questions']} questions, top_k={TOP_K}, model {report['embed_model']}"
        + (f" (quick: first conversation, at most {QUICK_QUESTIONS} questions)" if args.quick else "")
    )
    print(f"split: tuning uses {', '.join(TUNE_CONVERSATIONS)} only. tune = {tune}; test = {test}")
    for name, r in report["retrievers"].items():
        print(f"  {name:<8} {_short(r['settings'])}")
    print()
    print(format_table(report["retrievers"]))
    if "sweep" in report:
        print()
        print(format_sweep(report["sweep"]))
    print()
    s = report["seconds"]
    print(f"time: model load {s['model_load']}s, write {s['write']}s, evaluate {s['evaluate']}s, total {s['total']}s")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    convs = conversations_or_error(lambda: load_locomo(args.data, args.conversations))
    if convs is None:
        return 2
    max_questions = None
    if args.quick:
        convs = convs[:1]
        max_questions = QUICK_QUESTIONS

    embedder, model_seconds = load_model()
    built, retrievers, sweep, seconds = run_retrievers(args, convs, embedder, max_questions)
    seconds |= {"model_load": model_seconds, "started": started}
    report = build_report(args, embedder, built, retrievers, max_questions, seconds)
    if sweep is not None:
        report["sweep"] = sweep
    print_report(args, report, built)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"results written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
