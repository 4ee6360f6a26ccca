"""LoCoMo lifecycle benchmark: what would a simulated year of daily consolidation archive that is
later needed (false forgetting), against what it archives that nobody ever used?

Protocol, per conversation, everything through MemoryService (real FastEmbedEmbedder, default
Settings, a fresh database per run, `now=` passed to every call; the service clock follows the
simulated time too, so nothing is stamped with the wall clock):

- day 0: every dialogue turn is written as one memory, `write(..., allow_duplicate=True, now=day 0)`
  ("Speaker: text", as in the other LoCoMo benchmarks). Note: allow_duplicate also marks the
  memory `duplicate_allowed`, which consolidation's merge pass leaves alone, so merges stay 0.
- asks: each category 1-4 question is asked --asks times (default 2), each at its own day drawn
  uniformly from 1..D (D = --days, default 365; seeded by --seed and the conversation). An ask is
  `read(question, top_k=5, now=day + 12 h)` (recorded, like a real memory_read).
- feedback variants, each a separate run on the same ask schedule:
    none  reads only: usage is the only signal consolidation sees;
    user  the simulated user of the learning benchmark (eps=0): rank i of the 5 is examined with
          probability 1/i (`learning_protocol.examine`, same draws). `feedback(gold items in the
          top 5, +1, read_id)` when any gold item is there, else `feedback(examined items, -1,
          read_id)`; `rate(item, +1 gold / -1 not)` for each examined item. (The learning
          benchmark's user also sends -1 for examined non-gold items when gold was found; this
          one follows the lifecycle brief: a success credits the gold, a miss blames what was seen.)
- consolidation: `consolidate(now=day)` at midnight of every --every-th day (default 1: the
  automatic daily run), before that day's asks. The baseline run of each variant is the same
  schedule with consolidation off: nothing is archived, its recall@5 is the reference.

Measured: (a) per ask, the share of the question's evidence memories already archived when it is
asked ("needed but archived", real false forgetting) and the ask's recall@5; (b) at day D, the
archived share of evidence memories (gold for some category 1-4 question), of never-used memories
(returned by no read of that run; "unused(base)": by no read of the baseline run, whose ranking
consolidation did not touch), of used ones and of all memories; (c) live tiers at day D and the
promotions, demotions, merges and archivals the consolidation runs reported. Turns with the same
content are one memory, so shares count distinct memories. Ask figures are pooled over asks,
memory shares over memories. Default: every conversation in the file (locomo_dev.json holds 7);
tuning split conv-26, conv-30; test the others; both reported apart and together.

    python -m benchmarks.locomo_lifecycle --data ../shared/data/locomo/locomo_dev.json
    python -m benchmarks.locomo_lifecycle --data ... --quick     # CI: conv-30, 20 questions, 200 days
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import FastEmbedEmbedder
from mnemo_mcp.service import MemoryService

from .learning_protocol import examine, rng
from .locomo import TUNE_CONVERSATIONS, Conversation, PrecomputedEmbedder, Question, conversations_or_error, load_locomo

TOP_K = 5
START = datetime(2024, 1, 1, tzinfo=UTC)
ASK_HOUR = timedelta(hours=12)  # asks at noon, consolidation at midnight: it runs first that day
VARIANTS = ("none", "user")
QUICK_CONVERSATION = "conv-30"  # the smallest conversation
# Long enough to pass the 180-day window of a new, never-used memory, so quick mode archives something.
QUICK_DAYS, QUICK_QUESTIONS, QUICK_EVERY = 200, 20, 4
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "locomo_lifecycle.json"
TIERS = ("working", "history", "pattern")


@dataclass(frozen=True)
class Ask:
    day: int
    n: int  # which ask of the question
    q: Question


def schedule(conv: Conversation, days: int, asks: int, seed: int, max_questions: int | None) -> list[Ask]:
    qs = [q for q in conv.questions if q.category != 5][:max_questions]
    draw = rng(seed, conv.sample_id, "lifecycle-days")
    out = [Ask(draw.randint(1, days), n, q) for q in qs for n in range(asks)]
    return sorted(out, key=lambda a: (a.day, a.q.index, a.n))


def at(day: int) -> datetime:
    return START + timedelta(days=day)


@dataclass(frozen=True)
class Unit:
    conv: str
    variant: str
    consolidate: bool


_CONVS: dict[str, Conversation] = {}
_EMBEDDER: PrecomputedEmbedder | None = None
_PLAN: dict[str, Any] = {}


def run_unit(u: Unit) -> dict[str, Any]:
    """One conversation, one feedback variant, consolidation on or off, on a fresh database."""
    conv, p = _CONVS[u.conv], _PLAN
    assert _EMBEDDER is not None
    started = time.perf_counter()
    sim = [at(0)]
    asks_out: list[tuple[int, int, float, float]] = []  # (day, category, recall@5, archived share)
    returned: set[str] = set()
    events: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="mnemo-lifecycle-") as tmp:
        svc = MemoryService(Settings(db=Path(tmp) / "run.db"), embedder=_EMBEDDER, clock=lambda: sim[0])
        try:
            memory_of = {
                t.dia_id: svc.write(t.content, metadata=t.metadata, allow_duplicate=True, now=sim[0]).id
                for t in conv.turns
            }
            plan = schedule(conv, p["days"], p["asks"], p["seed"], p["max_questions"])
            by_day: dict[int, list[Ask]] = {}
            for a in plan:
                by_day.setdefault(a.day, []).append(a)
            for day in range(1, p["days"] + 1):
                if u.consolidate and day % p["every"] == 0:
                    sim[0] = at(day)
                    # "interval" is what the server's automatic daily run records as its trigger.
                    counts = svc.consolidate(now=sim[0], trigger="interval").counts
                    events.update({k: counts[k] for k in ("archived", "promoted", "demoted", "merged")})
                for a in by_day.get(day, []):
                    sim[0] = at(day) + ASK_HOUR
                    gold = {memory_of[d] for d in a.q.evidence}
                    gone = sum(svc.quality(m).archived for m in gold) / len(gold)
                    res = svc.read(a.q.question, top_k=TOP_K, now=sim[0])
                    ids = [it.id for it in res.items]
                    returned.update(ids)
                    asks_out.append((day, a.q.category, len(gold.intersection(ids)) / len(gold), gone))
                    if u.variant == "user":
                        user_report(svc, res.read_id, ids, gold, (p["seed"], conv.sample_id, a.q.index, a.n), sim[0])
            evidence = {memory_of[d] for a in plan for d in a.q.evidence}  # of the questions asked
            state = {m: svc.quality(m) for m in set(memory_of.values())}
        finally:
            svc.close()
    return {
        "unit": u,
        "asks": asks_out,
        "memories": {m: (r.archived, r.tier, m in evidence, m in returned) for m, r in state.items()},
        "events": dict(events),
        "seconds": time.perf_counter() - started,
    }


def user_report(svc: MemoryService, read_id: str, ids: list[str], gold: set[str], key: tuple, now: datetime) -> None:
    seen = [ids[i] for i, _ in examine(len(ids), 0.0, key)]
    hits = [m for m in ids if m in gold]
    if hits:
        svc.feedback(hits, outcome=1.0, read_id=read_id, now=now)
    elif seen:
        svc.feedback(seen, outcome=-1.0, read_id=read_id, now=now)
    for m in seen:
        svc.rate(m, rating=1 if m in gold else -1, now=now)


def run_units(units: list[Unit], workers: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def progress(r: dict[str, Any]) -> None:
        out.append(r)
        u = r["unit"]
        mode = "consolidation" if u.consolidate else "baseline"
        print(
            f"  [{len(out):2d}/{len(units)}] {u.conv:<8} {u.variant:<5} {mode:<13} {r['seconds']:6.1f}s "
            f"(elapsed {time.perf_counter() - t0:6.1f}s)",
            file=sys.stderr,
            flush=True,
        )

    # Consolidation runs are the slow ones: start them first so the pool ends together.
    units = sorted(units, key=lambda u: (not u.consolidate, -len(_CONVS[u.conv].turns)))
    if workers <= 1:
        for u in units:
            progress(run_unit(u))
    else:
        with mp.get_context("fork").Pool(workers) as pool:
            for r in pool.imap_unordered(run_unit, units, chunksize=1):
                progress(r)
    return out


# --- aggregation -----------------------------------------------------------------------------


def _share(flags: list[bool]) -> dict[str, Any]:
    return {"n": len(flags), "archived": sum(flags), "share": sum(flags) / len(flags) if flags else 0.0}


def summarize(on: list[dict[str, Any]], off: list[dict[str, Any]], days: int) -> dict[str, Any]:
    """Figures for one variant over a group of conversations (runs paired by conversation)."""
    asks = [a for r in on for a in r["asks"]]
    base = [a for r in off for a in r["asks"]]
    assert [a[:2] for a in asks] == [a[:2] for a in base], "on and off runs must share the ask schedule"
    n = len(asks)
    mems = [v for r in on for v in r["memories"].values()]
    # Never returned by the baseline's reads: unused whatever consolidation did to the ranking.
    unused_base = [r["memories"][m][0] for r, b in zip(on, off) for m, v in b["memories"].items() if not v[3]]
    quarters = {}
    for i in range(4):
        lo, hi = days * i // 4, days * (i + 1) // 4
        part = [a for a in asks if lo < a[0] <= hi]
        quarters[f"days {lo + 1}-{hi}"] = {
            "asks": len(part),
            "needed_archived": sum(a[3] for a in part) / len(part) if part else 0.0,
        }
    tiers = Counter(tier for archived, tier, _, _ in mems if not archived)
    events = Counter()
    for r in on:
        events.update(r["events"])
    return {
        "asks": n,
        "recall@5_consolidation": sum(a[2] for a in asks) / n,
        "recall@5_baseline": sum(a[2] for a in base) / n,
        "needed_archived": sum(a[3] for a in asks) / n,
        "asks_with_evidence_archived": sum(a[3] > 0 for a in asks) / n,
        "baseline_needed_archived": sum(a[3] for a in base) / n,
        "needed_archived_by_quarter": quarters,
        "end": {
            "evidence": _share([m[0] for m in mems if m[2]]),
            "never_used": _share([m[0] for m in mems if not m[3]]),
            "never_used_in_baseline": _share(unused_base),
            "used": _share([m[0] for m in mems if m[3]]),
            "all": _share([m[0] for m in mems]),
            "baseline_archived": sum(v[0] for r in off for v in r["memories"].values()),
        },
        "live_tiers": {t: tiers.get(t, 0) for t in TIERS},
        "events": {k: events.get(k, 0) for k in ("archived", "promoted", "demoted", "merged")},
    }


def aggregate(results: list[dict[str, Any]], days: int) -> dict[str, dict[str, Any]]:
    groups = {"all": None, "tune": "tune", "test": "test"}
    out: dict[str, dict[str, Any]] = {}
    convs = sorted({r["unit"].conv for r in results})
    for variant in VARIANTS:
        for group, split in groups.items():
            keep = [c for c in convs if split is None or _CONVS[c].split == split]
            if not keep:
                continue
            pick = {(r["unit"].conv, r["unit"].consolidate): r for r in results if r["unit"].variant == variant}
            on = [pick[(c, True)] for c in keep]
            off = [pick[(c, False)] for c in keep]
            out.setdefault(variant, {})[group] = summarize(on, off, days) | {"conversations": keep}
        for c in convs:
            pick = {r["unit"].consolidate: r for r in results if r["unit"].variant == variant and r["unit"].conv == c}
            out[variant].setdefault("per_conversation", {})[c] = summarize([pick[True]], [pick[False]], days)
    return out


# --- output ----------------------------------------------------------------------------------


def format_tables(res: dict[str, dict[str, Any]]) -> str:
    rows = [(v, g, res[v][g]) for v in VARIANTS for g in ("all", "tune", "test") if g in res[v]]
    h1 = (
        f"{'variant':<8}{'split':<6}{'asks':>6}{'R@5 off':>9}{'R@5 on':>8}{'dR@5':>8}"
        f"{'needed&arch':>13}{'asks hit':>10}"
    )
    lines = [
        "(a) per ask: recall@5 without / with consolidation; share of evidence archived when asked",
        h1,
        "-" * len(h1),
    ]
    for v, g, s in rows:
        d = s["recall@5_consolidation"] - s["recall@5_baseline"]
        lines.append(
            f"{v:<8}{g:<6}{s['asks']:>6}{s['recall@5_baseline']:>9.3f}{s['recall@5_consolidation']:>8.3f}{d:>+8.3f}"
            f"{s['needed_archived']:>13.3f}{s['asks_with_evidence_archived']:>10.3f}"
        )
    lines.append("")
    lines.append("    needed & archived by ask day (all conversations):")
    for v in VARIANTS:
        q = res[v]["all"]["needed_archived_by_quarter"]
        lines.append(
            f"    {v:<6}" + "  ".join(f"{k}: {x['needed_archived']:.3f} (n={x['asks']})" for k, x in q.items())
        )
    h2 = (
        f"{'variant':<8}{'split':<6}"
        + "".join(f"{h:>19}" for h in ("evidence", "never-used", "unused(base)", "used", "all"))
        + f"{'  live W/H/P':<18}{'promo':>6}{'demo':>6}{'merge':>6}"
    )
    lines += [
        "",
        "(b, c) at the last day: archived share (archived/n); live tiers; consolidation events",
        h2,
        "-" * len(h2),
    ]
    for v, g, s in rows:
        e, t = s["end"], s["live_tiers"]
        cells = "".join(
            f"{x['share']:.3f} ({x['archived']}/{x['n']})".rjust(19)
            for x in (e["evidence"], e["never_used"], e["never_used_in_baseline"], e["used"], e["all"])
        )
        tiers = f"{t['working']}/{t['history']}/{t['pattern']}"
        ev = s["events"]
        lines.append(f"{v:<8}{g:<6}{cells}  {tiers:<16}{ev['promoted']:>6}{ev['demoted']:>6}{ev['merged']:>6}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.locomo_lifecycle",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n    python")[0],
    )
    p.add_argument("--data", required=True, type=Path, help="path to locomo_dev.json (LoCoMo format; never copied)")
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"CI size: {QUICK_CONVERSATION} only, its first {QUICK_QUESTIONS} category 1-4 questions, "
        f"{QUICK_DAYS} days, consolidation every {QUICK_EVERY} days",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON results file (default: {DEFAULT_OUT})")
    p.add_argument("--days", type=int, default=365, help="simulated days D (default 365)")
    p.add_argument("--asks", type=int, default=2, help="asks per question, each at its own random day (default 2)")
    p.add_argument("--every", type=int, default=1, help="consolidate every this many days (default 1: daily)")
    p.add_argument("--seed", type=int, default=0, help="seed of the ask days and the user's examination (default 0)")
    p.add_argument(
        "--conversations",
        type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
        default=None,
        help="comma-separated sample_ids (default: all in the file)",
    )
    p.add_argument("--workers", type=int, default=min(2, mp.cpu_count()), help="parallel runs (default: up to 2)")
    args = p.parse_args(argv)
    if min(args.days, args.asks, args.every, args.workers) < 1:
        p.error("--days, --asks, --every and --workers must be at least 1")
    return args


SETTINGS_REPORTED = (
    "retention_days_low",
    "retention_days_fair",
    "retention_days_good",
    "retention_days_high",
    "recency_half_life_days",
    "history_standing",
    "history_uses",
    "pattern_standing",
    "pattern_uses",
)


def embed_everything(convs: list[Conversation], args: argparse.Namespace, max_questions: int | None) -> float:
    """Every vector computed once in the parent (the forked runs only look them up); seconds."""
    global _EMBEDDER
    base = Settings(db=Path(tempfile.gettempdir()) / "unused.db")
    _EMBEDDER = PrecomputedEmbedder(FastEmbedEmbedder(base.embed_model, base.model_cache_dir))
    t0 = time.perf_counter()
    _EMBEDDER.precompute([t.content for c in convs for t in c.turns])
    for c in convs:
        for a in schedule(c, args.days, 1, args.seed, max_questions):
            _EMBEDDER.embed_query(a.q.question)
    return time.perf_counter() - t0


def build_report(
    args: argparse.Namespace, convs: list[Conversation], max_questions: int | None, res: dict[str, Any]
) -> dict[str, Any]:
    """The JSON results, without the times."""
    assert _EMBEDDER is not None
    base = Settings(db=Path(tempfile.gettempdir()) / "unused.db")
    tune = [c.sample_id for c in convs if c.split == "tune"]
    test = [c.sample_id for c in convs if c.split == "test"]
    return {
        "benchmark": "locomo_lifecycle",
        "data": str(args.data),
        "quick": args.quick,
        "protocol": {
            "days": args.days,
            "asks_per_question": args.asks,
            "consolidate_every_days": args.every,
            "seed": args.seed,
            "top_k": TOP_K,
            "max_questions": max_questions,
            "categories": [1, 2, 3, 4],
        },
        "embed_model": _EMBEDDER.name,
        "split": {"note": "tuning uses conv-26 and conv-30 only; test is held out", "tune": tune, "test": test},
        "conversations": {
            c.sample_id: {
                "split": c.split,
                "turns": len(c.turns),
                "questions_1-4": sum(q.category != 5 for q in c.questions),
            }
            for c in convs
        },
        "settings": {k: getattr(base, k) for k in SETTINGS_REPORTED},
        "results": res,
    }


def print_report(args: argparse.Namespace, convs: list[Conversation], report: dict[str, Any]) -> None:
    tune, test = report["split"]["tune"], report["split"]["test"]
    print(
        f"LoCoMo lifecycle: {len(convs)} conversation(s), {args.days} days, {args.asks} asks per category 1-4 "
        f"question, consolidation every {args.every} day(s), top_k={TOP_K}, seed {args.seed}"
        + (f" (quick: {QUICK_CONVERSATION}, {QUICK_QUESTIONS} questions)" if args.quick else "")
    )
    print(
        f"split: tuning uses {', '.join(TUNE_CONVERSATIONS)} only. tune = {', '.join(tune) or 'none'}; test = "
        f"{', '.join(test) or 'none'}"
    )
    print()
    print(format_tables(report["results"]))
    print()
    s = report["seconds"]
    print(f"time: embed {s['embed']}s, runs {s['runs']}s, total {s['total']}s")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    max_questions = None
    if args.quick:
        args.conversations = [QUICK_CONVERSATION]
        args.days, args.every, max_questions = QUICK_DAYS, QUICK_EVERY, QUICK_QUESTIONS
    convs = conversations_or_error(lambda: load_locomo(args.data, args.conversations))
    if convs is None:
        return 2
    _CONVS.update({c.sample_id: c for c in convs})
    _PLAN.update(days=args.days, asks=args.asks, every=args.every, seed=args.seed, max_questions=max_questions)
    embed_seconds = embed_everything(convs, args, max_questions)

    units = [Unit(c.sample_id, v, on) for c in convs for v in VARIANTS for on in (True, False)]
    t0 = time.perf_counter()
    results = run_units(units, min(args.workers, len(units)))
    run_seconds = time.perf_counter() - t0
    report = build_report(args, convs, max_questions, aggregate(results, args.days))
    report["seconds"] = {
        "embed": round(embed_seconds, 1),
        "runs": round(run_seconds, 1),
        "total": round(time.perf_counter() - started, 1),
    }
    print_report(args, convs, report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"results written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
