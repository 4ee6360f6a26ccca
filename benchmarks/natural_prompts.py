"""What the prompt hook injects for the prompts developers actually type, and the floor and
budget that make it right.

Data (`benchmarks/data/natural_prompts/`, written by hand apart from the code): a store of
coding memories of one project plus global ones, and natural prompts, each labelled with the
memories that should be injected (`relevant`), those that would not be wrong (`acceptable`), or
none. Split by memory into tune and test: the floor, top-k and token budget are chosen on tune
only, and test is reported with them.

Every prompt is read once, as the hook reads it (the first 1,000 characters, top 10, not
recorded, so the store never changes), both semantically (an MCP server is up) and by keywords
alone (no server); the injection rule is then replayed for each setting: items at or above the
floor, the first k, cut to the token budget by the hook's own `digest`. Per setting:

- correct: share of prompts that have relevant memories and got at least one of them;
- precise: share of injected memories that are relevant or acceptable;
- clean: share of all prompts with nothing wrong injected (nothing at all counts as clean);
- quiet: share of prompts with no relevant memory that got nothing;
- tokens: mean tokens injected per prompt.

The setting kept is the one with the best `correct + clean` on tune (finding help and staying
out of the way weigh the same), ties to the higher floor and the smaller budget.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "natural_prompts"
DEFAULT_OUT = Path("benchmarks/results/natural_prompts.json")
FLOORS = tuple(round(0.05 * i, 2) for i in range(2, 15))  # 0.10 .. 0.70
TOP_KS = (1, 2, 3, 5)
BUDGETS = (150, 200, 300, 400, 600)
READ_K = 10
PROJECT = "app"
BEFORE = (0.5, 3, 300)  # what the prompt hook did before this benchmark: keywords only, floor 0.5, top 3


def load(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    memories = [json.loads(line) for line in (folder / "memories.jsonl").open(encoding="utf-8") if line.strip()]
    prompts = [json.loads(line) for line in (folder / "prompts.jsonl").open(encoding="utf-8") if line.strip()]
    keys = {m["key"] for m in memories}
    for p in prompts:
        unknown = set(p["relevant"]) | set(p.get("acceptable", [])) - keys
        if unknown - keys:
            raise ValueError(f"prompt {p['id']} names unknown memories {sorted(unknown - keys)}")
    return memories, prompts


def build(db: Path, memories: list[dict[str, Any]], embedder) -> tuple[Any, dict[str, str]]:
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    svc = MemoryService(Settings(db=db, project=PROJECT, auto_consolidate=False), embedder)
    items = [
        {"content": m["content"], "domain": "global" if m["scope"] == "global" else PROJECT, "allow_duplicate": True}
        for m in memories
    ]
    results = svc.write_many(items)
    return svc, {r.id: m["key"] for r, m in zip(results, memories)}


def read_all(svc, prompts: list[dict[str, Any]], keyword_only: bool) -> dict[str, list[Any]]:
    from mnemo_mcp.hooks.handlers import QUERY_CHARS

    return {
        p["id"]: svc.read(p["prompt"][:QUERY_CHARS], top_k=READ_K, keyword_only=keyword_only, record=False).items
        for p in prompts
    }


def injected(items: list[Any], floor: float, k: int, budget: int) -> tuple[list[Any], int]:
    """What the hook would inject: (items, tokens)."""
    from mnemo_mcp.hooks.handlers import digest, tokens

    chosen = [it for it in items if it.relevance >= floor][:k]
    if not chosen:
        return [], 0
    header = "mnemo memories for this prompt (memory_feedback read_id 0123456789abcdef):"
    text = digest(header, [(it.id, f"{it.tier}, valence {it.valence:+.2f}", it.content) for it in chosen], budget)
    if text is None:
        return [], 0
    shown = sum(1 for line in text.splitlines() if line.startswith("- ["))
    return chosen[:shown], tokens(text)


def score(
    prompts: list[dict[str, Any]], reads: dict[str, list[Any]], keys: dict[str, str], floor: float, k: int, budget: int
) -> dict[str, float]:
    correct = asked = quiet = negatives = clean = right = shown_total = 0
    token_sum = 0
    for p in prompts:
        items, cost = injected(reads[p["id"]], floor, k, budget)
        got = [keys[it.id] for it in items]
        ok = set(p["relevant"]) | set(p.get("acceptable", []))
        token_sum += cost
        shown_total += len(got)
        right += sum(1 for g in got if g in ok)
        clean += all(g in ok for g in got)
        if p["relevant"]:
            asked += 1
            correct += any(g in p["relevant"] for g in got)
        else:
            negatives += 1
            quiet += not got
    n = len(prompts)
    return {
        "correct": correct / asked if asked else 0.0,
        "precise": right / shown_total if shown_total else 1.0,
        "clean": clean / n if n else 0.0,
        "quiet": quiet / negatives if negatives else 1.0,
        "tokens": token_sum / n if n else 0.0,
        "prompts": n,
    }


def choose(prompts, reads, keys) -> tuple[tuple[float, int, int], dict[str, dict[str, float]]]:
    table = {}
    for floor in FLOORS:
        for k in TOP_KS:
            for budget in BUDGETS:
                table[(floor, k, budget)] = score(prompts, reads, keys, floor, k, budget)
    best = max(table, key=lambda c: (round(table[c]["correct"] + table[c]["clean"], 6), c[0], -c[2], -c[1]))
    return best, {f"{f:.2f}/{k}/{b}": v for (f, k, b), v in table.items()}


def per_kind(prompts, reads, keys, setting) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in prompts:
        groups[p["kind"]].append(p)
    return {kind: score(ps, reads, keys, *setting) for kind, ps in sorted(groups.items())}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.natural_prompts",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data-dir", type=Path, default=DATA)
    p.add_argument("--quick", action="store_true", help="a slice of each split (CI)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return p.parse_args(argv)


def mode_report(splits, reads, keys, keyword_only: bool, defaults) -> dict[str, Any]:
    """One recall mode: the setting chosen on tune, the tune table, and test with the chosen
    setting, with the defaults in force, by kind and by floor."""
    best, table = choose(splits["tune"], reads["tune"], keys)
    current_floor = defaults.inject_min_relevance_keyword if keyword_only else defaults.inject_min_relevance
    current = (current_floor, defaults.inject_top_k, defaults.inject_tokens)
    return {
        "chosen_on_tune": {"floor": best[0], "top_k": best[1], "tokens": best[2]},
        "tune": table,
        "test_with_chosen": score(splits["test"], reads["test"], keys, *best),
        "test_with_defaults": {
            "setting": list(current),
            **score(splits["test"], reads["test"], keys, *current),
        },
        "tune_with_defaults": score(splits["tune"], reads["tune"], keys, *current),
        "test_by_kind": per_kind(splits["test"], reads["test"], keys, best),
        "test_floors": {f"{f:.2f}": score(splits["test"], reads["test"], keys, f, best[1], best[2]) for f in FLOORS},
    }


def run_modes(memories: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]], report: dict[str, Any]) -> None:
    """Every prompt read semantically and by keywords alone; each mode's figures (and the rule
    before this benchmark, on keywords) added to `report`."""
    from mnemo_mcp.config import Settings
    from mnemo_mcp.embedding import FastEmbedEmbedder

    defaults = Settings()
    with tempfile.TemporaryDirectory() as tmp:
        svc, keys = build(Path(tmp) / "np.db", memories, FastEmbedEmbedder())
        try:
            for mode, keyword_only in (("semantic", False), ("keyword", True)):
                reads = {s: read_all(svc, ps, keyword_only) for s, ps in splits.items()}
                report[mode] = mode_report(splits, reads, keys, keyword_only, defaults)
                if keyword_only:
                    report["before"] = {
                        "setting": ["keyword", *BEFORE],
                        **score(splits["test"], reads["test"], keys, *BEFORE),
                    }
        finally:
            svc.close()


def _row(name: str, v: dict[str, float]) -> str:
    return (
        f"{name:24} {v['correct']:>8.3f} {v['precise']:>8.3f} {v['clean']:>7.3f} {v['quiet']:>7.3f} {v['tokens']:>7.1f}"
    )


def print_report(memories: list[dict[str, Any]], report: dict[str, Any]) -> None:
    print(
        f"natural prompts: {len(memories)} memories, prompts tune {report['prompts']['tune']} / test "
        f"{report['prompts']['test']}"
    )
    for mode in ("semantic", "keyword"):
        r = report[mode]
        c = r["chosen_on_tune"]
        print(f"\n{mode} (chosen on tune: floor {c['floor']}, top {c['top_k']}, {c['tokens']} tokens)")
        print(f"{'':24} {'correct':>8} {'precise':>8} {'clean':>7} {'quiet':>7} {'tokens':>7}")
        rows = [
            ("tune, chosen", r["tune"][f"{c['floor']:.2f}/{c['top_k']}/{c['tokens']}"]),
            ("test, chosen", r["test_with_chosen"]),
            ("tune, defaults", r["tune_with_defaults"]),
            ("test, defaults", r["test_with_defaults"]),
        ]
        for name, v in rows:
            print(_row(name, v))
        if mode == "keyword":
            print(_row("test, before (0.5, top 3)", report["before"]))
        print(
            "test by floor (chosen top-k and budget):  "
            + "  ".join(f"{f}: {v['correct']:.2f}/{v['clean']:.2f}" for f, v in r["test_floors"].items())
        )


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    memories, prompts = load(a.data_dir)
    splits = {s: [x for x in prompts if x["split"] == s] for s in ("tune", "test")}
    if a.quick:
        splits = {s: ps[:40] for s, ps in splits.items()}
    report: dict[str, Any] = {
        "benchmark": "natural_prompts",
        "memories": len(memories),
        "prompts": {s: len(ps) for s, ps in splits.items()},
    }
    run_modes(memories, splits, report)
    print_report(memories, report)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2))
    print(f"\nresults: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
