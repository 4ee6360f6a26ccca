"""The learning benchmark's statistics: per-group levels and learning curves, differences
against static with a paired bootstrap over questions, and the printed tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .learning_protocol import ConvData, Plan, Unit, split_questions

BOOTSTRAP = 1000
METRICS = ("p@1", "mrr", "ndcg@10", "r@5")
GROUPS = ("train", "transfer", "control")


# --- aggregation -----------------------------------------------------------------------------


def bootstrap_ci(d: np.ndarray, rng: np.random.Generator, n: int = BOOTSTRAP) -> tuple[float, float]:
    if len(d) == 0:
        return (float("nan"), float("nan"))
    means = d[rng.integers(0, len(d), size=(n, len(d)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


@dataclass
class _Runs:
    """The runs of a plan by (config, eps, seed, conversation), and the cold-start measurements."""

    plan: Plan
    by_key: dict[tuple, dict[str, Any]]
    cold: dict[str, dict[int, tuple]]

    @property
    def static_eps(self) -> float:
        return self.plan.eps_of["static"][0]

    def final(self, name: str, eps: float, seed: int, conv: str) -> dict[int, tuple]:
        return self.by_key[(name, eps, seed, conv)]["measured"][self.plan.rounds]

    def static_final(self, seed: int, conv: str) -> dict[int, tuple]:
        return self.final("static", self.static_eps, seed, conv)


def _index_runs(plan: Plan, runs: list[dict[str, Any]]) -> _Runs:
    by_key: dict[tuple, dict[str, Any]] = {}
    cold: dict[str, dict[int, tuple]] = {}
    for r in runs:
        u: Unit = r["unit"]
        if u.config == "cold":
            cold[u.conv] = r["measured"][0]
        else:
            by_key[(u.config, u.eps, u.seed, u.conv)] = r
    return _Runs(plan, by_key, cold)


def _clustered(values: dict[tuple[str, int], list[float]]) -> np.ndarray:
    """One value per question: its mean over the seeds it fell in the group."""
    return np.array([sum(v) / len(v) for v in values.values()])


def _round_means(rs: _Runs, name: str, run_eps: float, cases: list[tuple]) -> dict[str, dict[str, float]]:
    """Per round (0 = cold start), the question-clustered mean of each metric."""
    rounds = sorted(rs.by_key[(name, run_eps, rs.plan.seeds[0], rs.plan.convs[0])]["measured"])
    round_means = {}
    for rnd in [0, *rounds]:
        row = {}
        for mi, metric in enumerate(METRICS):
            vals: dict[tuple[str, int], list[float]] = {}
            for s, c, q in cases:
                m = rs.cold[c] if rnd == 0 else rs.by_key[(name, run_eps, s, c)]["measured"][rnd]
                vals.setdefault((c, q.index), []).append(m[q.index][mi])
            row[metric] = float(_clustered(vals).mean())
        round_means[str(rnd)] = row
    return round_means


def _vs_static(
    rs: _Runs, name: str, run_eps: float, cases: list[tuple], rng: np.random.Generator, bootstrap: int
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Final-round differences against static with their bootstrap intervals, and each seed's
    final-round mean."""
    vs: dict[str, Any] = {}
    per_seed: dict[str, list[float]] = {}
    for mi, metric in enumerate(METRICS):
        diffs: dict[tuple[str, int], list[float]] = {}
        for s, c, q in cases:
            mine = rs.final(name, run_eps, s, c)[q.index][mi]
            diffs.setdefault((c, q.index), []).append(mine - rs.static_final(s, c)[q.index][mi])
        d = _clustered(diffs)
        lo, hi = bootstrap_ci(d, rng, bootstrap)
        vs[metric] = {"diff": float(d.mean()), "ci95": [lo, hi]}
        per_seed[metric] = [
            float(np.mean([rs.final(name, run_eps, s, c)[q.index][mi] for s2, c, q in cases if s2 == s]))
            for s in rs.plan.seeds
            if any(s2 == s for s2, _, _ in cases)
        ]
    return vs, per_seed


def _changed_vs_static(rs: _Runs, name: str, run_eps: float, cases: list[tuple]) -> dict[str, float]:
    """Shares of (seed, question) cases with nDCG@10 lower / higher than static's, and with some
    gold memory ranked lower / higher."""
    worse = better = down = up = 0
    for s, c, q in cases:
        mine = rs.final(name, run_eps, s, c)[q.index]
        base = rs.static_final(s, c)[q.index]
        worse += mine[2] < base[2] - 1e-12
        better += mine[2] > base[2] + 1e-12
        down += any(a > b for a, b in zip(mine[4], base[4]))
        up += any(a < b for a, b in zip(mine[4], base[4]))
    n = len(cases)
    return {
        "worse_ndcg@10": worse / n,
        "better_ndcg@10": better / n,
        "any_gold_down": down / n,
        "any_gold_up": up / n,
    }


def _config_entry(
    rs: _Runs, name: str, run_eps: float, splits: dict, rng: np.random.Generator, bootstrap: int
) -> dict[str, Any]:
    """One configuration at one eps: its feedback volume per seed and the figures of each group."""
    plan = rs.plan
    entry: dict[str, Any] = {}
    vol = [rs.by_key[(name, run_eps, s, c)]["volume"] for s in plan.seeds for c in plan.convs]
    entry["volume_per_seed"] = {k: sum(v[k] for v in vol) / len(plan.seeds) for k in vol[0]}
    for group in GROUPS:
        cases = [(s, c, q) for s in plan.seeds for c in plan.convs for q in splits[(s, c)].groups()[group]]
        if not cases:
            continue
        g: dict[str, Any] = {"n_questions": len({(c, q.index) for _, c, q in cases}), "n_cases": len(cases)}
        g["rounds"] = _round_means(rs, name, run_eps, cases)
        g["final"] = g["rounds"][str(plan.rounds)]
        g["vs_static"], g["per_seed_final"] = _vs_static(rs, name, run_eps, cases, rng, bootstrap)
        g["changed_vs_static"] = _changed_vs_static(rs, name, run_eps, cases)
        entry[group] = g
    return entry


def aggregate(plan: Plan, runs: list[dict[str, Any]], bootstrap: int, conv_data: dict[str, ConvData]) -> dict[str, Any]:
    convs = {c: conv_data[c] for c in plan.convs}
    rs = _index_runs(plan, runs)
    splits = {(s, c): split_questions(convs[c], s, plan.max_train) for s in plan.seeds for c in plan.convs}
    rng = np.random.default_rng(20240601)
    results: dict[str, Any] = {}
    for eps in plan.eps:
        per_eps: dict[str, Any] = {}
        for name in plan.configs:
            if eps not in plan.eps_of[name] and name != "static":
                continue
            run_eps = eps if name != "static" else rs.static_eps
            per_eps[name] = _config_entry(rs, name, run_eps, splits, rng, bootstrap)
        results[f"{eps:g}"] = per_eps
    # Static must not move: reads without feedback change quality but not the order.
    cold = rs.cold
    drift = sum(
        rs.static_final(s, c)[qi][4] != cold[c][qi][4] for s in plan.seeds for c in plan.convs for qi in cold[c]
    )
    return {"results": results, "static_drift_questions": int(drift)}


def split_summary(plan: Plan, conv_data: dict[str, ConvData]) -> dict[str, Any]:
    rows = {}
    for c in plan.convs:
        conv = conv_data[c]
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

GROUP_TITLES = {
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
    w = max([14, *(len(n) + 1 for n in curves)])
    head = f"{'config':<{w}}{'eps':<6}{'group':<10}" + "".join(f"{'r' + str(r):>7}" for r in range(rounds + 1))
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
                    lines.append(f"{name:<{w}}{eps:<6}{group:<10}{cells}")
        lines.append("")
    return "\n".join(lines).rstrip()


def format_volume(results: dict[str, Any]) -> str:
    head = (
        f"{'config':<22}{'eps':<6}{'reads':>7}{'examined':>9}{'gold ex.':>9}"
        f"{'+1 sent':>8}{'-1 sent':>8}{'fb calls':>9}{'ratings':>8}"
    )
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
