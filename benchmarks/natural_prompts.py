"""What the prompt hook puts in front of the model for the prompts developers actually type, and
the floors and budget that make it right.

Data (`benchmarks/data/natural_prompts/`, written by hand apart from the code): a store of coding
memories of one project plus global ones, and two sets of labelled prompts: `prompts.jsonl` and
`prompts_words.jsonl` (the same problems in the user's own words, not the note's, with near misses
and prompts nothing in the store answers). Each prompt names the memories that should reach the
model (`relevant`), those that would not be wrong (`acceptable`), or none. Split by memory into
tune and test: the settings are chosen on tune only, and test is reported with them.

Every prompt is read once as the hook reads it (its first 1,000 characters, the hook's number of
candidates, not recorded, so the store never changes), semantically (an MCP server is up) and by
keywords alone (no server). Then the hook's own `prompt_context` (core.recall's plan and the
fence it renders) runs for each setting, and what it would print is scored:

- reach: share of answerable prompts where a relevant memory reached the model, in full or as a
  one-line pointer; `in full`: where one reached it in full;
- wrong full: share of all prompts that got a wrong memory in full;
- wrong pointer: share of all prompts that got a wrong pointer;
- quiet: share of prompts with no relevant memory that got nothing;
- tokens: median and mean tokens printed per prompt (the fence and its guard line included).

With the model at hand the hook decides by confidence (core.recall): the grid is then its floors
for the best candidate in full, the best as a pointer, and the others as pointers; by keywords
alone it is the relevance floors. The setting kept is the one with the best reach on tune among
those with at most 3% wrong full injections, at most 10% prompts with a wrong pointer (the
issue's aims) and a median of at most 60 tokens (the best `reach - wrong pointer / 2` when none
qualifies). `relevance floors` is the hook's earlier rule (full at 0.7, pointers from 0.3, 3
notes), for comparison.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "natural_prompts"
DEFAULT_OUT = Path("benchmarks/results/natural_prompts.json")
PROJECT = "app"
FULL_FLOORS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75)  # a confident note is shown whole: never pointers only
POINTER_FLOORS = (0.2, 0.25, 0.3, 0.35, 0.4, 1.0)  # 1.0: (almost) no pointers, as the hook was before
NOTES = (1, 2, 3)
BUDGETS = (150, 200)
CONFIDENT_FULL = (0.25, 0.3, 0.35, 0.4)  # by confidence: the best candidate in full
CONFIDENT_BEST = (0.14, 0.16, 0.18, 0.2, 0.22, 0.25)  # ... the best candidate as a pointer
CONFIDENT_OTHER = (0.2, 0.25, 0.3, 0.4, 1.0)  # ... another candidate as a pointer
MAX_WRONG_FULL, MAX_WRONG_POINTER, MAX_MEDIAN_TOKENS = 0.03, 0.10, 60
FRONTIER_BOUNDS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40)  # of wrong pointers, for the tune frontier
RELEVANCE_FLOORS = {"by_confidence": False, "full_floor": 0.7, "pointer_floor": 0.3, "notes": 3, "tokens": 150}
SETS = ("prompts", "prompts_words")


def load(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The memories, and every prompt of both sets (each with its `set`)."""
    memories = [json.loads(line) for line in (folder / "memories.jsonl").open(encoding="utf-8") if line.strip()]
    keys = {m["key"] for m in memories}
    prompts = []
    for name in SETS:
        path = folder / f"{name}.jsonl"
        if not path.exists():
            continue
        for line in path.open(encoding="utf-8"):
            if line.strip():
                p = json.loads(line)
                unknown = (set(p["relevant"]) | set(p.get("acceptable", []))) - keys
                if unknown:
                    raise ValueError(f"prompt {p['id']} names unknown memories {sorted(unknown)}")
                prompts.append({**p, "set": name})
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


def read_all(svc, prompts: list[dict[str, Any]], keyword_only: bool) -> dict[str, Any]:
    """Each prompt's read, exactly as the prompt hook makes it (not recorded)."""
    from mnemo_mcp.hooks.handlers import CANDIDATES, QUERY_CHARS

    return {
        p["id"]: svc.read(
            p["prompt"][:QUERY_CHARS],
            top_k=CANDIDATES,
            keyword_only=keyword_only,
            record=False,
            exclude_quarantined=True,
        )
        for p in prompts
    }


def settings_for(setting: dict[str, Any], keyword: bool):
    """Settings for one point of the grid (a dict of the names below)."""
    from mnemo_mcp.config import Settings

    names = (
        ("inject_full_relevance_keyword", "inject_min_relevance_keyword")
        if keyword
        else ("inject_full_relevance", "inject_min_relevance")
    )
    update = {"inject_top_k": setting["notes"], "inject_tokens": setting["tokens"]}
    update["inject_by_confidence"] = setting.get("by_confidence", False)
    for key, name in (("full_floor", names[0]), ("pointer_floor", names[1])):
        if key in setting:
            update[name] = setting[key]
    for key in ("full_confidence", "best_confidence", "pointer_confidence"):
        if key in setting:
            update[f"inject_{key}"] = setting[key]
    return Settings().model_copy(update=update)


def grid(keyword: bool) -> list[dict[str, Any]]:
    if keyword:
        keys, values = ("full_floor", "pointer_floor", "notes", "tokens"), (FULL_FLOORS, POINTER_FLOORS, NOTES, BUDGETS)
        return [dict(zip(keys, v)) for v in itertools.product(*values)]
    keys = ("full_confidence", "best_confidence", "pointer_confidence", "notes", "tokens")
    values = (CONFIDENT_FULL, CONFIDENT_BEST, CONFIDENT_OTHER, (2, 3), BUDGETS)
    return [{"by_confidence": True, **dict(zip(keys, v))} for v in itertools.product(*values)]


def score(prompts, reads, keys, settings, semantic: bool) -> dict[str, float]:
    """What the hook would print for each prompt, scored against its labels."""
    from mnemo_mcp.hooks.handlers import prompt_context
    from mnemo_mcp.hooks.render import FULL, tokens

    answerable = reach = in_full = wrong_full = wrong_pointer = quiet = negatives = 0
    costs = []
    for p in prompts:
        text, shown = prompt_context(reads[p["id"]], settings, semantic)
        costs.append(tokens(text) if text else 0)
        ok = set(p["relevant"]) | set(p.get("acceptable", []))
        got = [(keys[mid], kind) for mid, kind in shown]
        wrong_full += any(k not in ok for k, kind in got if kind == FULL)
        wrong_pointer += any(k not in ok for k, kind in got if kind != FULL)
        if p["relevant"]:
            answerable += 1
            reach += any(k in p["relevant"] for k, _ in got)
            in_full += any(k in p["relevant"] for k, kind in got if kind == FULL)
        else:
            negatives += 1
            quiet += not got
    n = len(prompts) or 1
    return {
        "reach": reach / answerable if answerable else 0.0,
        "in_full": in_full / answerable if answerable else 0.0,
        "wrong_full": wrong_full / n,
        "wrong_pointer": wrong_pointer / n,
        "quiet": quiet / negatives if negatives else 1.0,
        "median_tokens": statistics.median(costs) if costs else 0.0,
        "mean_tokens": sum(costs) / n,
        "prompts": len(prompts),
    }


def scored_grid(prompts, reads, keys, settings: list[dict[str, Any]], keyword: bool) -> list[tuple[dict, dict]]:
    return [(setting, score(prompts, reads, keys, settings_for(setting, keyword), not keyword)) for setting in settings]


def frontier(table: list[tuple[dict, dict]]) -> dict[str, float]:
    """The best reach at each bound of wrong pointers (within the wrong-full and token bounds)."""
    out = {}
    for bound in FRONTIER_BOUNDS:
        reach = [
            v["reach"]
            for _, v in table
            if v["wrong_pointer"] <= bound
            and v["wrong_full"] <= MAX_WRONG_FULL
            and v["median_tokens"] <= MAX_MEDIAN_TOKENS
        ]
        out[f"{bound:.2f}"] = max(reach, default=0.0)
    return out


def choose(table: list[tuple[dict, dict]]) -> tuple[dict[str, Any], dict[str, float]]:
    bounded = [
        (s, v) for s, v in table if v["wrong_full"] <= MAX_WRONG_FULL and v["median_tokens"] <= MAX_MEDIAN_TOKENS
    ]
    aimed = [(s, v) for s, v in bounded if v["wrong_pointer"] <= MAX_WRONG_POINTER]
    if aimed:
        return max(aimed, key=lambda t: (round(t[1]["reach"], 6), -t[1]["wrong_pointer"], -t[0]["tokens"]))
    return max(bounded or table, key=lambda t: (round(t[1]["reach"] - t[1]["wrong_pointer"] / 2, 6), -t[0]["tokens"]))


def mode_report(splits, reads, keys, keyword: bool) -> dict[str, Any]:
    """One recall mode: the setting chosen on tune; tune and test with it, by prompt set and by
    kind; and test with the defaults in force, and (with the model) by the relevance floors."""
    from mnemo_mcp.config import Settings

    table = scored_grid(splits["tune"], reads, keys, grid(keyword), keyword)
    best, tuned = choose(table)
    chosen = settings_for(best, keyword)
    defaults = Settings()
    semantic = not keyword
    out: dict[str, Any] = {
        "chosen_on_tune": best,
        "tune": tuned,
        "test": score(splits["test"], reads, keys, chosen, semantic),
        "test_with_defaults": score(splits["test"], reads, keys, defaults, semantic),
        "test_without_pointers": score(
            splits["test"],
            reads,
            keys,
            settings_for(
                {
                    **best,
                    "pointer_floor": 1.0,
                    "pointer_confidence": 1.0,
                    "best_confidence": best.get("full_confidence", 1.0),
                    "notes": 1,
                },
                keyword,
            ),
            semantic,
        ),
    }
    if semantic:
        old = settings_for(RELEVANCE_FLOORS, keyword)
        out["tune_relevance_floors"] = score(splits["tune"], reads, keys, old, semantic)
        out["test_relevance_floors"] = score(splits["test"], reads, keys, old, semantic)
        floors = scored_grid(splits["tune"], reads, keys, grid(True), keyword)  # the relevance floors' grid
        out["tune_frontier"] = {"confidence": frontier(table), "relevance_floors": frontier(floors)}
    for name in SETS:
        out[f"test_{name}"] = score([p for p in splits["test"] if p["set"] == name], reads, keys, chosen, semantic)
    kinds: dict[str, list] = defaultdict(list)
    for p in splits["test"]:
        kinds[p["kind"]].append(p)
    out["test_by_kind"] = {k: score(ps, reads, keys, chosen, semantic) for k, ps in sorted(kinds.items())}
    out["test_top_candidates"] = top_candidates(splits["test"], reads, keys)
    out["tune_top_candidates"] = top_candidates(splits["tune"], reads, keys)
    return out


def top_candidates(prompts, reads, keys) -> dict[str, float]:
    """Share of answerable prompts with a relevant memory among the read's first 1, 3 and 5."""
    answerable = [p for p in prompts if p["relevant"]]
    n = len(answerable) or 1
    return {
        f"top{k}": sum(any(keys[it.id] in p["relevant"] for it in reads[p["id"]].items[:k]) for p in answerable) / n
        for k in (1, 3, 5)
    }


def _row(name: str, v: dict[str, float]) -> str:
    return (
        f"{name:28} {v['reach']:>6.3f} {v['in_full']:>7.3f} {v['wrong_full']:>6.3f} {v['wrong_pointer']:>7.3f} "
        f"{v['quiet']:>6.3f} {v['median_tokens']:>6.0f} {v['mean_tokens']:>6.1f}"
    )


def print_report(memories, report: dict[str, Any]) -> None:
    print(f"natural prompts: {len(memories)} memories, prompts {report['prompts']}")
    for mode in ("semantic", "keyword"):
        r = report[mode]
        c = r["chosen_on_tune"]
        print(f"\n{mode} (chosen on tune: {', '.join(f'{k} {v}' for k, v in c.items())})")
        print(f"top candidates: tune {r['tune_top_candidates']}, test {r['test_top_candidates']}")
        print(f"{'':28} {'reach':>6} {'in full':>7} {'wrong':>6} {'wrong':>7} {'quiet':>6} {'tokens':>13}")
        print(f"{'':28} {'':>6} {'':>7} {'full':>6} {'pointer':>7} {'':>6} {'median':>6} {'mean':>6}")
        for name, v in (
            ("tune", r["tune"]),
            ("test", r["test"]),
            *((f"test, {s}", r[f"test_{s}"]) for s in SETS),
            ("test, defaults", r["test_with_defaults"]),
            ("test, one note, no pointers", r["test_without_pointers"]),
            *(
                (name, r[key])
                for name, key in (
                    ("tune, relevance floors", "tune_relevance_floors"),
                    ("test, relevance floors", "test_relevance_floors"),
                )
                if key in r
            ),
        ):
            print(_row(name, v))
        if "tune_frontier" in r:
            print(
                "tune, best reach with wrong pointers at most:", *(f"{b:>5}" for b in r["tune_frontier"]["confidence"])
            )
            for rule, reach in r["tune_frontier"].items():
                print(f"  {rule:44}", *(f"{x:>5.3f}" for x in reach.values()))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.natural_prompts",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data-dir", type=Path, default=DATA)
    p.add_argument("--quick", action="store_true", help="a slice of each split (CI)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv)
    memories, prompts = load(a.data_dir)
    splits = {s: [x for x in prompts if x["split"] == s] for s in ("tune", "test")}
    if a.quick:
        splits = {s: ps[::10] for s, ps in splits.items()}
    report: dict[str, Any] = {"benchmark": "natural_prompts", "memories": len(memories)}
    report["prompts"] = {s: len(ps) for s, ps in splits.items()}
    from mnemo_mcp.embedding import FastEmbedEmbedder

    with tempfile.TemporaryDirectory() as tmp:
        svc, keys = build(Path(tmp) / "np.db", memories, FastEmbedEmbedder())
        try:
            for mode, keyword in (("semantic", False), ("keyword", True)):
                reads = read_all(svc, splits["tune"] + splits["test"], keyword)
                report[mode] = mode_report(splits, reads, keys, keyword)
        finally:
            svc.close()
    print_report(memories, report)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2))
    print(f"\nresults: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
