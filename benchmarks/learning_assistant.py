"""The learning benchmark's second protocol (issue 8, response alignment): a simulated assistant
that answers with the memory it used, and feedback that carries that answer.

Per training question and round: `read(question, top_k=5)` (recorded, its read_id kept), then the
assistant "answers with the content of the item it used": the top-ranked one. The outcome is +1 if
that item is a gold memory, -1 if not, flipped with probability eps (one draw per seed,
conversation, round and question, shared by every configuration and nested over eps, like the user
protocol's flips). Every configuration sends one `feedback` call per read, with all five recalled
ids and the read's read_id, right after the read: the same reads, the same ids, the same number of
calls (the same feedback volume). What differs is what the call carries:

  uniform            outcome only: each of the five takes the whole outcome (no response, so
                     align_credit plays no part; `aligned` with align_credit=False is this same
                     update, since the service ignores the alignment then)
  aligned            outcome + response = the top item's content, default settings: each memory's
                     share of the outcome follows its alignment with the response, concept links
                     move by the alignment rule, tension between disagreeing memories
  response_only      response = the top item's content, no outcome: moves concept links, never
                     valence (and teaches no query->memory links)
  shuffled_response  outcome + response = the content of a random memory of the same conversation
                     that was not among the five recalled: alignment that says nothing about which
                     memory was used
  static             the same training reads, no feedback

No ratings are sent (the user protocol's rate_memory calls would be the same for every
configuration here and only dilute the comparison). Measurement (P@1, MRR@10, nDCG@10, R@5 on
train / transfer / control after each round, read(top_k=50, record=False)), the differences against
static with the paired bootstrap and the control-set effect are those of the user protocol
(`benchmarks.locomo_learning`). The sentences of every turn are embedded with the real model before
the runs, so the service's alignment uses the vectors it would compute itself (misses, if any, are
counted per run).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from mnemo_mcp.config import Settings
from mnemo_mcp.core.alignment import sentences
from mnemo_mcp.service import MemoryService

from . import learning_protocol as lp
from .learning_protocol import TRAIN_TOP_K, Config, ConvData, Plan, Unit, measure, split_questions
from .learning_stats import GROUPS, METRICS, bootstrap_ci

PROTOCOL = "assistant"
MODES = ("uniform", "aligned", "response_only", "shuffled_response")
USER_PREFIX = "assistant:"

CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config("static", {}, "none", description="same store and training reads, no feedback"),
        Config("uniform", {}, USER_PREFIX + "uniform", description="outcome to all five recalled, no response"),
        Config(
            "aligned",
            {},
            USER_PREFIX + "aligned",
            description="outcome + response (top item's content): alignment-weighted credit and links",
        ),
        Config(
            "response_only", {}, USER_PREFIX + "response_only", description="response (top item's content), no outcome"
        ),
        Config(
            "shuffled_response",
            {},
            USER_PREFIX + "shuffled_response",
            description="outcome + response = a random non-recalled memory of the conversation",
        ),
    )
}
DEFAULT_CONFIGS = tuple(CONFIGS)
DEFAULT_CURVES = MODES
# Head-to-head differences reported besides "against static" (first minus second, same draws).
PAIRS = (("aligned", "uniform"), ("aligned", "shuffled_response"), ("shuffled_response", "uniform"))

DESCRIPTION = {
    "answer": "the assistant answers with the content of the top-ranked item of read(question, top_k=5)",
    "outcome": "+1 if the top-ranked item is gold, else -1; flipped with probability eps "
    "(one draw per seed, conversation, round, question)",
    "report": "one memory_feedback(all five ids, ..., read_id) per read, right after it; no ratings",
    "uniform": "outcome only (no response)",
    "aligned": "outcome + response = top item's content (default settings, align_credit on)",
    "response_only": "response = top item's content, no outcome",
    "shuffled_response": "outcome + response = content of a random memory of the conversation not among the five",
    "metrics": "P@1, MRR@10, nDCG@10 (binary), R@5 from read(top_k=50, record=False)",
    "vs_static": "final round, per question, averaged over the seeds it fell in the group; "
    "95% percentile interval from resampling questions",
    "changed_vs_static": "share of (seed, question) cases with nDCG@10 lower/higher than static; "
    "any_gold_down/up: some gold memory ranks lower/higher in the top 50 (absent = 51)",
}

# Recorded with each configuration's effective settings (besides the learning benchmark's own).
SETTING_FIELDS = (
    "align_credit",
    "align_min_credit",
    "strengthen_rate",
    "weaken_rate",
    "align_strengthen",
    "align_weaken",
    "edge_weight_min",
    "edge_weight_max",
    "response_only_scale",
    "tension_similarity",
    "tension_margin",
    "expand_associations",
)

VOLUME_KEYS = (
    "reads",
    "feedback_calls",
    "ids_sent",
    "answered_gold",
    "outcome_pos",
    "outcome_neg",
    "responses",
    "align_top_sum",
    "align_rest_sum",
    "credit_top_sum",
    "credit_rest_sum",
    "credit_gold_rest_sum",
    "gold_rest",
    "tensions",
    "links_up",
    "links_down",
    "cue_updates",
    "embed_misses",
)


def response_passages(contents: list[str]) -> list[str]:
    """Every sentence the service will embed when a response is one of these contents."""
    return [s for text in contents for s in sentences(text)]


def is_assistant(u: Unit) -> bool:
    return u.user.startswith(USER_PREFIX)


def _contents(svc: MemoryService) -> dict[str, str]:
    return dict(sorted((r["id"], r["content"]) for r in svc.export() if r["type"] == "memory"))


def _other_memory(ids: list[str], recalled: set[str], key: tuple) -> str:
    """A memory drawn uniformly from those not recalled, fixed by `key`."""
    rng = lp.rng(*key, "shuffled-response")
    while True:
        mid = ids[rng.randrange(len(ids))]
        if mid not in recalled:
            return mid


def run_assistant_unit(u: Unit) -> dict[str, Any]:
    """One assistant-protocol configuration on one conversation for one seed and eps, on a fresh
    copy of the template (`run_unit` below hands these units over)."""
    mode = u.user[len(USER_PREFIX) :]
    if mode not in MODES:
        raise ValueError(f"unknown assistant mode {mode!r}")
    conv = lp.CONVS[u.conv]
    table = lp.table()
    assert conv.template is not None
    started, cpu = time.perf_counter(), time.process_time()
    misses_before = table.misses
    split = split_questions(conv, u.seed, u.max_train)
    every = [*split.train, *split.transfer, *split.control]
    volume: dict[str, float] = dict.fromkeys(VOLUME_KEYS, 0)
    measured: dict[int, dict[int, tuple]] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-learn-assistant-") as tmp:
        db = Path(tmp) / "run.db"
        shutil.copyfile(conv.template, db)
        svc = MemoryService(Settings(db=db, **dict(u.overrides)), embedder=table)
        try:
            contents = _contents(svc)
            all_ids = list(contents)
            for rnd in range(1, u.rounds + 1):
                order = list(split.train)
                lp.rng(u.seed, u.conv, rnd, "order").shuffle(order)
                for q in order:
                    res = svc.read(q.text, top_k=TRAIN_TOP_K)  # recorded, like a real memory_read
                    volume["reads"] += 1
                    if not res.items:
                        continue
                    ids = [it.id for it in res.items]
                    top = ids[0]
                    key = (u.seed, u.conv, rnd, q.index)
                    right = top in q.gold
                    flipped = lp.rng(*key, "assistant").random() < u.eps
                    outcome = (1.0 if right else -1.0) * (-1.0 if flipped else 1.0)
                    if mode == "shuffled_response":
                        response = contents[_other_memory(all_ids, set(ids), key)]
                    else:
                        response = res.items[0].content
                    result = svc.feedback(
                        ids,
                        outcome=None if mode == "response_only" else outcome,
                        read_id=res.read_id,
                        response=None if mode == "uniform" else response,
                    )
                    _count(volume, result, ids, q.gold, right, outcome, mode)
                if u.measure_every_round or rnd == u.rounds:
                    measured[rnd] = measure(svc, every)
        finally:
            svc.close()
    volume["embed_misses"] = table.misses - misses_before
    return {
        "unit": u,
        "measured": measured,
        "volume": volume,
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
    }


def _count(
    volume: dict[str, float], result: Any, ids: list[str], gold: frozenset[str], right: bool, outcome: float, mode: str
) -> None:
    volume["feedback_calls"] += 1
    volume["ids_sent"] += len(ids)
    volume["answered_gold"] += right
    if mode != "response_only":
        volume["outcome_pos"] += outcome > 0
        volume["outcome_neg"] += outcome < 0
    volume["responses"] += mode != "uniform"
    volume["tensions"] += len(result.tension or [])
    volume["links_up"] += result.associations_strengthened
    volume["links_down"] += result.associations_weakened
    volume["cue_updates"] += result.context_links_updated
    top, rest = ids[0], ids[1:]
    if result.alignment:
        volume["align_top_sum"] += result.alignment.get(top, 0.0)
        volume["align_rest_sum"] += sum(result.alignment.get(m, 0.0) for m in rest)
    if mode != "response_only":
        credit = result.credit or {}  # None: every memory took the whole outcome
        volume["credit_top_sum"] += credit.get(top, 1.0)
        volume["credit_rest_sum"] += sum(credit.get(m, 1.0) for m in rest)
        gold_rest = [m for m in rest if m in gold]
        volume["gold_rest"] += len(gold_rest)
        volume["credit_gold_rest_sum"] += sum(credit.get(m, 1.0) for m in gold_rest)


def format_volume(results: dict[str, Any]) -> str:
    """Feedback volume and what the alignment did, per configuration (per seed, all rounds)."""
    head = (
        f"{'config':<20}{'eps':<6}{'reads':>7}{'fb calls':>9}{'ids':>7}{'top gold':>9}{'+1':>7}{'-1':>7}"
        f"{'align top':>10}{'rest':>6}{'credit top':>11}{'rest':>6}{'gold-rest':>10}{'links +':>9}{'links -':>9}"
        f"{'cues':>8}{'tension':>8}{'miss':>6}"
    )
    lines = [
        (
            "feedback volume per seed (all rounds, all selected conversations); align / credit = mean per item "
            "(top = rank 1, rest = ranks 2-5, gold-rest = gold items at ranks 2-5); no response: credit 1"
        ),
        head,
    ]
    for eps, per_eps in results.items():
        for name, entry in per_eps.items():
            v = entry["volume_per_seed"]
            if "ids_sent" not in v:  # static: no feedback
                continue
            calls, rest = v["feedback_calls"], v["ids_sent"] - v["feedback_calls"]
            told = v["outcome_pos"] + v["outcome_neg"]

            def mean(total: float, n: float, on: bool = True) -> str:
                return f"{total / n:.2f}" if on and n else "-"

            aligned = v["responses"] > 0
            lines.append(
                f"{name:<20}{eps:<6}{v['reads']:7.0f}{v['feedback_calls']:9.0f}{v['ids_sent']:7.0f}"
                f"{v['answered_gold']:9.0f}{v['outcome_pos']:7.0f}{v['outcome_neg']:7.0f}"
                f"{mean(v['align_top_sum'], calls, aligned):>10}{mean(v['align_rest_sum'], rest, aligned):>6}"
                f"{mean(v['credit_top_sum'], calls, told > 0):>11}{mean(v['credit_rest_sum'], rest, told > 0):>6}"
                f"{mean(v['credit_gold_rest_sum'], v['gold_rest'], told > 0):>10}"
                f"{v['links_up']:9.0f}{v['links_down']:9.0f}{v['cue_updates']:8.0f}{v['tensions']:8.0f}"
                f"{v['embed_misses']:6.0f}"
            )
    return "\n".join(lines)


# --- head to head ----------------------------------------------------------------------------


def compare(plan: Plan, runs: list[dict[str, Any]], bootstrap: int, conv_data: dict[str, ConvData]) -> dict[str, Any]:
    """First minus second configuration of each pair in PAIRS, final round, per question (averaged
    over the seeds it fell in the group), with a 95% interval from resampling questions (paired:
    both saw the same splits, orders and flips); worse = share of (seed, question) cases whose
    nDCG@10 is lower under the first."""
    final = {
        (r["unit"].config, r["unit"].eps, r["unit"].seed, r["unit"].conv): r["measured"][plan.rounds]
        for r in runs
        if r["unit"].config != "cold"
    }
    splits = {(s, c): split_questions(conv_data[c], s, plan.max_train) for s in plan.seeds for c in plan.convs}
    rng = np.random.default_rng(20240602)
    out: dict[str, Any] = {}
    for eps in plan.eps:
        per_eps: dict[str, Any] = {}
        for a, b in PAIRS:
            if not all(n in plan.configs and eps in plan.eps_of[n] for n in (a, b)):
                continue
            entry: dict[str, Any] = {}
            for group in GROUPS:
                cases = [(s, c, q) for s in plan.seeds for c in plan.convs for q in splits[(s, c)].groups()[group]]
                if not cases:
                    continue
                g: dict[str, Any] = {"n_questions": len({(c, q.index) for _, c, q in cases})}
                for mi, metric in enumerate(METRICS):
                    diffs: dict[tuple[str, int], list[float]] = {}
                    for s, c, q in cases:
                        d = final[(a, eps, s, c)][q.index][mi] - final[(b, eps, s, c)][q.index][mi]
                        diffs.setdefault((c, q.index), []).append(d)
                    arr = np.array([sum(v) / len(v) for v in diffs.values()])
                    lo, hi = bootstrap_ci(arr, rng, bootstrap)
                    g[metric] = {"diff": float(arr.mean()), "ci95": [lo, hi]}
                gap = [final[(a, eps, s, c)][q.index][2] - final[(b, eps, s, c)][q.index][2] for s, c, q in cases]
                g["worse_ndcg@10"] = sum(d < -1e-12 for d in gap) / len(cases)
                g["better_ndcg@10"] = sum(d > 1e-12 for d in gap) / len(cases)
                entry[group] = g
            per_eps[f"{a} - {b}"] = entry
        out[f"{eps:g}"] = per_eps
    return out


def format_compare(pairs: dict[str, Any]) -> str:
    def ci(v: dict[str, Any]) -> str:
        lo, hi = v["ci95"]
        return f"{v['diff']:+.3f} [{lo:+.3f},{hi:+.3f}]"

    head = (
        f"{'pair':<32}{'eps':<6}{'group':<10}{'dP@1 [95% CI]':<26}{'dMRR [95% CI]':<26}{'dnDCG10 [95% CI]':<26}"
        f"{'worse':>7}{'better':>7}"
    )
    title = "head to head, final round, first minus second (paired bootstrap over questions); worse/better = nDCG@10"
    lines = [title, head]
    for eps, per_eps in pairs.items():
        for pair, entry in per_eps.items():
            for group, g in entry.items():
                lines.append(
                    f"{pair:<32}{eps:<6}{group:<10}{ci(g['p@1']):<26}{ci(g['mrr']):<26}{ci(g['ndcg@10']):<26}"
                    f"{100 * g['worse_ndcg@10']:6.1f}%{100 * g['better_ndcg@10']:6.1f}%"
                )
    return "\n".join(lines)


def run_unit(u: Unit) -> dict[str, Any]:
    """Either protocol's unit: what the locomo_learning entry hands the workers."""
    return run_assistant_unit(u) if is_assistant(u) else lp.run_user_unit(u)
