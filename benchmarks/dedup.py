"""Duplicates, updates and different memories: the write path's rule against labelled pairs.

Data: `benchmarks/data/capture/dedup_pairs.jsonl` (written by hand apart from the code): pairs
labelled duplicate (the same memory with a one-word, punctuation, casing or order edit), update
(the same subject with a changed number, version, path, identifier, flag or an inverted rule)
and different. The two thresholds of `mnemo_mcp.core.dedup` are chosen on the tune split (best
accuracy, ties to the stricter pair) and reported on test, beside the rule that came before
(cosine >= 0.95 is a duplicate; nothing is an update).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "capture" / "dedup_pairs.jsonl"
DEFAULT_OUT = Path("benchmarks/results/dedup.json")
LABELS = ("duplicate", "update", "different")


def classify(pair: dict[str, Any], words_alike: float, meaning_alike: float, synonyms_alike: float) -> str:
    from mnemo_mcp.core import dedup

    return dedup.compare(
        pair["a"],
        pair["b"],
        pair["cosine"],
        words_alike=words_alike,
        meaning_alike=meaning_alike,
        synonyms_alike=synonyms_alike,
    ).kind


def score(pairs: list[dict[str, Any]], predict) -> dict[str, Any]:
    confusion = Counter((p["label"], predict(p)) for p in pairs)
    n = len(pairs) or 1
    per = {}
    for label in LABELS:
        predicted = sum(v for (g, q), v in confusion.items() if q == label)
        gold = sum(v for (g, q), v in confusion.items() if g == label)
        hit = confusion[(label, label)]
        per[label] = {
            "precision": hit / predicted if predicted else 1.0,
            "recall": hit / gold if gold else 1.0,
            "n": gold,
        }
    return {
        "accuracy": sum(confusion[(x, x)] for x in LABELS) / n,
        "per_label": per,
        # The costly mistakes: an update swallowed as a duplicate (the new fact is lost) and a
        # different memory refused as a duplicate.
        "lost_as_duplicate": sum(confusion[(g, "duplicate")] for g in ("update", "different")),
        "confusion": {f"{g}->{q}": v for (g, q), v in sorted(confusion.items())},
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.dedup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv)
    from mnemo_mcp.embedding import FastEmbedEmbedder

    pairs = [json.loads(x) for x in a.data.open(encoding="utf-8") if x.strip()]
    emb = FastEmbedEmbedder()
    va = emb.embed_passages([x["a"] for x in pairs])
    vb = emb.embed_passages([x["b"] for x in pairs])
    for x, u, v in zip(pairs, va, vb):
        x["cosine"] = float((u * v).sum())
    tune = [x for x in pairs if x["split"] == "tune"]
    test = [x for x in pairs if x["split"] == "test"]
    grid = [(w / 100, m / 100, y / 100) for w in range(60, 96, 2) for m in range(84, 100, 2) for y in range(88, 100, 2)]
    best = max(grid, key=lambda g: (score(tune, lambda x: classify(x, *g))["accuracy"], g))
    old = lambda x: "duplicate" if x["cosine"] >= 0.95 else "different"  # noqa: E731
    report = {
        "benchmark": "dedup",
        "pairs": {"tune": len(tune), "test": len(test)},
        "chosen_on_tune": {"words_alike": best[0], "meaning_alike": best[1], "synonyms_alike": best[2]},
        "tune": score(tune, lambda x: classify(x, *best)),
        "test": score(test, lambda x: classify(x, *best)),
        "test_before": score(test, old),
    }
    print(
        f"dedup pairs: tune {len(tune)}, test {len(test)}; chosen on tune: words {best[0]}, meaning {best[1]}, "
        f"synonyms {best[2]}"
    )
    for name in ("tune", "test", "test_before"):
        r = report[name]
        per = "  ".join(f"{k} P{v['precision']:.2f}/R{v['recall']:.2f}" for k, v in r["per_label"].items())
        print(
            f"{name:12} accuracy {r['accuracy']:.3f}  {per}  updates/different lost as duplicates "
            f"{r['lost_as_duplicate']}"
        )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2))
    print(f"results: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
