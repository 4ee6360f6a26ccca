"""The learning benchmark's results file and printout (`benchmarks.locomo_learning`): the JSON
report (code version, options, configurations with the settings in force, splits, results), the
printed summary, group tables, curves, volume and times, and the P@1 picture."""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo_mcp.config import Settings

from . import learning_assistant
from .learning_protocol import CATEGORIES_USED, MEASURE_TOP_K, TRAIN_TOP_K, Plan, VectorTable
from .learning_stats import (
    GROUP_TITLES,
    GROUPS,
    format_curves,
    format_group_table,
    format_summary,
    format_volume,
    split_summary,
)
from .locomo import TUNE_CONVERSATIONS

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


def effective_settings(overrides: dict[str, Any], fields: Sequence[str] = SETTING_FIELDS) -> dict[str, Any]:
    s = Settings(db=Path(tempfile.gettempdir()) / "unused.db", **overrides)
    return {f: getattr(s, f) for f in fields}


USER_PROTOCOL = {
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
}


def run_options(args: argparse.Namespace, plan: Plan) -> dict[str, Any]:
    return {
        "conversations": plan.convs,
        "rounds": plan.rounds,
        "seeds": plan.seeds,
        "eps": plan.eps,
        "max_train": plan.max_train,
        "protocol": args.protocol,
        "set": dict(args.set),
        "train_top_k": TRAIN_TOP_K,
        "measure_top_k": MEASURE_TOP_K,
        "categories": list(CATEGORIES_USED),
        "bootstrap": args.bootstrap,
        "workers": args.workers,
    }


def config_report(plan: Plan, assistant: bool) -> dict[str, Any]:
    """Each configuration's overrides, user, eps and the settings in force."""
    fields = SETTING_FIELDS + (learning_assistant.SETTING_FIELDS if assistant else ())
    return {
        name: {
            "overrides": cfg.overrides,
            "user": cfg.user,
            "batch": cfg.batch,
            "description": cfg.description,
            "eps": plan.eps_of[name],
            "settings": effective_settings(cfg.overrides, fields),
        }
        for name, cfg in plan.configs.items()
    }


def build_report(
    args: argparse.Namespace,
    table: VectorTable,
    check: Any,
    plan: Plan,
    templates: dict[str, Any],
    runs: list[dict[str, Any]],
    agg: dict[str, Any],
    seconds: dict[str, float],
) -> dict[str, Any]:
    """The JSON results; `seconds` holds the embed, write and run times and the start of the run."""
    assistant = args.protocol == "assistant"
    return {
        "benchmark": "locomo_learning_sweep" if args.sweep else "locomo_learning" + ("_assistant" if assistant else ""),
        "data": str(args.data),
        "quick": args.quick,
        "code": code_version(),
        "embed_model": table.name,
        "embedding_batch_vs_single_max_abs_diff": check,
        "embedding_table_misses": table.misses,
        "options": run_options(args, plan),
        "protocol": learning_assistant.DESCRIPTION if assistant else USER_PROTOCOL,
        "configs": config_report(plan, assistant),
        "splits": split_summary(plan, templates),
        "static_drift_questions": agg["static_drift_questions"],
        "results": agg["results"],
        **({"head_to_head": learning_assistant.compare(plan, runs, args.bootstrap, templates)} if assistant else {}),
        "seconds": {
            "embed": round(seconds["embed"], 1),
            "write": round(seconds["write"], 1),
            "runs": round(seconds["runs"], 1),
            "runs_cpu": round(sum(r["cpu_seconds"] for r in runs), 1),
            "total": round(time.perf_counter() - seconds["started"], 1),
        },
    }


def print_header(args: argparse.Namespace, plan: Plan, report: dict[str, Any]) -> None:
    """What ran: conversations, question counts, rounds, model, and each configuration."""
    assistant = args.protocol == "assistant"
    sp = report["splits"]
    n_train = sum(sum(r["train"]) for r in sp.values()) / len(plan.seeds)
    n_tr = sum(sum(r["transfer"]) for r in sp.values()) / len(plan.seeds)
    n_ct = sum(sum(r["control"]) for r in sp.values()) / len(plan.seeds)
    print(
        f"LoCoMo learning{' sweep' if args.sweep else ''}{' (assistant protocol)' if assistant else ''}: "
        f"{', '.join(plan.convs)}; "
        f"{sum(r['memories'] for r in sp.values())} memories; per seed {n_train:.0f} training, "
        f"{n_tr:.0f} transfer, {n_ct:.0f} control questions (cat 1-4); {plan.rounds} rounds, "
        f"{len(plan.seeds)} seed(s), model {report['embed_model']}" + (" (quick)" if args.quick else "")
    )
    print(
        f"tuning uses {', '.join(TUNE_CONVERSATIONS)} only; static drift (questions whose static ranking moved "
        f"after the training reads): {report['static_drift_questions']}"
    )
    for name, cfg in plan.configs.items():
        print(
            f"  {name:<18} {cfg.overrides or '(defaults)'}  user={cfg.user}{' batch' if cfg.batch else ''}  "
            f"eps={','.join(f'{e:g}' for e in plan.eps_of[name]) if cfg.user != 'none' else '-'}"
        )


def print_group_tables(plan: Plan, results: dict[str, Any]) -> None:
    """Per eps and question group, the final round of every configuration."""
    for eps, per_eps in results.items():
        for group in GROUPS:
            if not any(group in e for e in per_eps.values()):
                continue
            n = next(e[group]["n_questions"] for e in per_eps.values() if group in e)
            print()
            print(
                f"eps={eps}, round {plan.rounds}, {GROUP_TITLES[group]} ({n} distinct questions); "
                "worse/better = nDCG@10 vs static, gold-dn = some gold ranked lower"
            )
            print(format_group_table(per_eps, group))


def print_results(args: argparse.Namespace, plan: Plan, report: dict[str, Any]) -> None:
    """The summary, the group tables and curves (not for a sweep), the head-to-head, the
    feedback volume and the times."""
    assistant = args.protocol == "assistant"
    results = report["results"]
    print()
    print("summary, final round, difference against static (mean [95% paired-bootstrap CI]):")
    print(format_summary(results))
    if not args.sweep:
        print_group_tables(plan, results)
        if plan.curves:
            print()
            print(format_curves(results, plan.curves, plan.rounds))
    if assistant and any(report["head_to_head"].values()):
        print()
        print(learning_assistant.format_compare(report["head_to_head"]))
    print()
    print(learning_assistant.format_volume(results) if assistant else format_volume(results))
    s = report["seconds"]
    print()
    print(
        f"time: embed {s['embed']}s, write {s['write']}s, runs {s['runs']}s (CPU {s['runs_cpu']}s over "
        f"{args.workers} worker(s)), total {s['total']}s"
    )


def curve_values(plan: Plan, results: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """Per question group, the P@1 after each round of every --curves configuration and eps."""
    curves: dict[str, dict[str, list[float]]] = {}
    for eps, by_config in results.items():
        for config in (c for c in plan.configs if c in plan.curves):  # in configuration order
            for group in ("train", "transfer", "control"):
                rounds = by_config.get(config, {}).get(group, {}).get("rounds", {})
                if len(rounds) > 2:
                    values = [rounds[r]["p@1"] for r in sorted(rounds, key=int)]
                    curves.setdefault(group, {})[f"{config} eps={eps}"] = values
    return curves


def draw_curves(args: argparse.Namespace, plan: Plan, results: dict[str, Any]) -> None:
    from .plots import learning_curves

    title = "LoCoMo: P@1 after each round of feedback" + (
        " (simulated assistant)" if args.protocol == "assistant" else ""
    )
    if learning_curves(curve_values(plan, results), "P@1", args.png, title):
        print(f"picture: {args.png}")
