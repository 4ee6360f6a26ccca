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

A second protocol, `--protocol assistant` (issue 8, response alignment; `benchmarks.learning_assistant`):
a simulated assistant answers with the content of the top-ranked memory of each training read, the
outcome says whether that memory was gold (flipped with probability eps), and one memory_feedback
call per read carries all five recalled ids, at the same volume in every configuration: `uniform`
(outcome only), `aligned` (outcome + response), `response_only` (response, no outcome),
`shuffled_response` (outcome + the content of a random non-recalled memory), and `static`.
Measurement and statistics are the same as above; curves are measured for all four by default.

    python -m benchmarks.locomo_learning --data ... --protocol assistant
    python -m benchmarks.locomo_learning --data ... --protocol assistant --conversations tune
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo_mcp.config import Settings

from . import learning_assistant
from .learning_protocol import (
    CATEGORIES_USED,
    Config,
    Plan,
    VectorTable,
    build_template,
    embed_all,
    install,
    run_units,
)
from .learning_report import build_report, draw_curves, print_header, print_results
from .learning_stats import BOOTSTRAP, aggregate
from .locomo import Conversation, conversations_or_error, load_locomo

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "locomo_learning.json"
DEFAULT_SWEEP_OUT = Path(__file__).resolve().parent / "results" / "locomo_learning_sweep.json"
DEFAULT_ASSISTANT_OUT = Path(__file__).resolve().parent / "results" / "locomo_learning_assistant.json"

QUICK_CONVERSATION = "conv-30"  # the smallest conversation (369 turns, 81 questions)
QUICK_MAX_TRAIN = 40


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
# The configurations, default selection and default curves of each protocol.
PROTOCOLS: dict[str, tuple[dict[str, Config], tuple[str, ...], tuple[str, ...]]] = {
    "user": (CONFIGS, DEFAULT_CONFIGS, ("full",)),
    "assistant": (learning_assistant.CONFIGS, learning_assistant.DEFAULT_CONFIGS, learning_assistant.DEFAULT_CURVES),
}

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


PARSER_DESCRIPTION = (
    "LoCoMo learning benchmark: a simulated user (driven by the evidence labels, position-biased\n"
    "examination 1/rank, judgements flipped with probability eps) teaches MemoryService through the\n"
    "real read / feedback / rate calls; after each round P@1, MRR@10, nDCG@10 and R@5 are measured\n"
    "without recording on the training questions asked again, on held-out questions that share an\n"
    "evidence turn with a training question (transfer) and on those that do not (control), against\n"
    "the same store without feedback (static), shuffled labels, and ablations.\n\n"
    "Defaults (about 15 minutes on 2 cores): the 5 test conversations, 5 rounds, 3 seeds,\n"
    "eps 0 and 0.2 for full and shuffled (the full list --eps 0,0.1,0.2,0.3 works but takes about\n"
    "twice as long), ablations at eps 0 only (--ablation-eps). Tuning uses conv-26 and conv-30 only\n"
    "(--sweep runs there by default); the other conversations are the held-out test split.\n\n"
    "--protocol assistant: the second protocol (issue 8): the simulated assistant answers with\n"
    "the top-ranked memory's content; the outcome (+1 if it is gold, else -1, flipped with probability\n"
    "eps) goes to all five recalled memories in one memory_feedback call per read, carrying: nothing\n"
    "else (uniform), the answer as response (aligned), the answer without outcome (response_only), or\n"
    "a random non-recalled memory's content as response (shuffled_response); static as above.\n"
    "See the module docstring for the exact protocol."
)


def _add_protocol_options(p: argparse.ArgumentParser) -> None:
    """--data, --protocol, --quick and the training schedule: rounds, seeds, eps."""
    p.add_argument("--data", required=True, type=Path, help="path to locomo_dev.json (LoCoMo format; never copied)")
    p.add_argument(
        "--protocol",
        choices=tuple(PROTOCOLS),
        default="user",
        help="simulated user: 'user' (default: judgements of examined items, feedback per sign and ratings) or "
        "'assistant' (answers with the top item; one feedback call per read with or without the response)",
    )
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
        help="judgement flip probabilities for full and shuffled, or outcome flip probabilities for the "
        "assistant configurations (default 0,0.2; e.g. 0,0.1,0.2,0.3)",
    )
    p.add_argument(
        "--ablation-eps",
        type=str,
        default="0",
        help="eps values at which the ablations run (default 0; 'all' = every --eps)",
    )


def _add_selection_options(p: argparse.ArgumentParser) -> None:
    """Which configurations, curves and conversations run, and how."""
    p.add_argument(
        "--configs",
        type=_names,
        default=None,
        help=f"configurations (user protocol: default {','.join(DEFAULT_CONFIGS)}; also: full_batch; "
        f"assistant protocol: default and all of {','.join(learning_assistant.DEFAULT_CONFIGS)})",
    )
    p.add_argument(
        "--curves",
        type=_names,
        default=None,
        help="configurations measured after every round, not only the last (default full; assistant protocol: "
        f"{','.join(learning_assistant.DEFAULT_CURVES)}; 'none' for none)",
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


def _add_sweep_and_output_options(p: argparse.ArgumentParser) -> None:
    """--sweep, the --set overrides and --out."""
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
        help=f"JSON results (default {DEFAULT_OUT}, {DEFAULT_SWEEP_OUT} with --sweep, "
        f"{DEFAULT_ASSISTANT_OUT} with --protocol assistant)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.locomo_learning",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=PARSER_DESCRIPTION,
    )
    _add_protocol_options(p)
    _add_selection_options(p)
    _add_sweep_and_output_options(p)
    return p


def _settle_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Apply --quick, check the values and fill in the protocol's default configurations and
    curves (exits through `p.error` on a bad combination)."""
    if args.quick:
        args.rounds, args.seeds, args.eps, args.ablation_eps, args.max_train = 2, 1, [0.0], "0", QUICK_MAX_TRAIN
    if args.rounds < 1 or args.seeds < 1:
        p.error("--rounds and --seeds must be at least 1")
    if not args.eps:
        p.error("--eps needs at least one value")
    args.ablation_eps = list(args.eps) if args.ablation_eps.strip() == "all" else _floats(args.ablation_eps)
    table, default_configs, default_curves = PROTOCOLS[args.protocol]
    if args.sweep and args.protocol != "user":
        p.error("--sweep runs the user protocol only")
    args.configs = list(default_configs) if args.configs is None else args.configs
    args.curves = list(default_curves) if args.curves is None else [c for c in args.curves if c != "none"]
    unknown = [c for c in args.configs + args.curves if c not in table]
    if unknown:
        p.error(f"unknown configuration(s) {unknown} for --protocol {args.protocol}; known: {', '.join(table)}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    _settle_args(p, args)
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
    table = PROTOCOLS[args.protocol][0]
    configs: dict[str, Config] = {"static": _with(table["static"], base)}
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
            configs[name] = _with(table[name], base)
            eps_of[name] = list(args.ablation_eps) if name in ABLATIONS or name == "full_batch" else list(args.eps)
        curves = set(args.curves)
    # eps values the report is organised by: every eps some configuration runs at
    eps_all = sorted({e for n, es in eps_of.items() if n != "static" for e in es})
    return Plan(conv_ids, list(range(args.seeds)), eps_all, args.rounds, args.max_train, configs, eps_of, curves)


# --- running ---------------------------------------------------------------------------------


def embed_inputs(args: argparse.Namespace, convs: list[Conversation]) -> tuple[VectorTable, Any, float]:
    """Every passage and question embedded once into the shared table: (table, the batch-vs-single
    check, seconds)."""
    base = Settings(db=Path(tempfile.gettempdir()) / "unused.db")
    table = VectorTable(base.embed_model, base.model_cache_dir)
    t0 = time.perf_counter()
    questions = [q.question for c in convs for q in c.questions if q.category in CATEGORIES_USED]
    passages = [t.content for c in convs for t in c.turns]
    if args.protocol == "assistant":  # responses are turn contents: the service embeds their sentences
        passages += learning_assistant.response_passages(passages)
    check = embed_all(table, passages, questions, args.workers)
    return table, check, time.perf_counter() - t0


def run_plan(
    args: argparse.Namespace, convs: list[Conversation], table: VectorTable
) -> tuple[Plan, dict[str, Any], list[dict[str, Any]], dict[str, float]]:
    """Template databases written, the plan's runs done: (plan, templates, runs, seconds of the
    writes and of the runs)."""
    with tempfile.TemporaryDirectory(prefix="mnemo-locomo-learning-") as tmp:
        t0 = time.perf_counter()
        templates = {c.sample_id: build_template(c, table, Path(tmp)) for c in convs}
        write_seconds = time.perf_counter() - t0
        install(table, templates)
        plan = make_plan(args, [c.sample_id for c in convs])
        units = plan.units()
        print(f"{len(units)} runs on {args.workers} worker(s)", file=sys.stderr)
        t0 = time.perf_counter()
        runs = run_units(units, args.workers, "sweep" if args.sweep else "run", runner=learning_assistant.run_unit)
        run_seconds = time.perf_counter() - t0
    return plan, templates, runs, {"write": write_seconds, "runs": run_seconds}


def write_report(args: argparse.Namespace, report: dict[str, Any]) -> None:
    assistant = args.protocol == "assistant"
    out = args.out or (DEFAULT_SWEEP_OUT if args.sweep else DEFAULT_ASSISTANT_OUT if assistant else DEFAULT_OUT)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"results written to {out}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    convs = conversations_or_error(
        lambda: select_conversations(load_locomo(args.data), args.conversations, args.sweep, args.quick)
    )
    if convs is None:
        return 2

    table, check, embed_seconds = embed_inputs(args, convs)
    plan, templates, runs, seconds = run_plan(args, convs, table)
    agg = aggregate(plan, runs, args.bootstrap, templates)
    seconds |= {"embed": embed_seconds, "started": started}
    report = build_report(args, table, check, plan, templates, runs, agg, seconds)

    print_header(args, plan, report)
    print_results(args, plan, report)
    write_report(args, report)
    if args.png and plan.curves:
        draw_curves(args, plan, agg["results"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
