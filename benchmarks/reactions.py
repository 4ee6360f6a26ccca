"""Reaction classifier: how well `mnemo_mcp.core.reactions.classify` reads a user's next prompt.

    python -m benchmarks.reactions [--data benchmarks/data/reactions.jsonl] [--show-errors] [--json OUT]

Each line of the data set is {"text", "label", "kind"}; the label is what a careful reader says
the message means about the assistant's previous answer (worked, failed, partial, unknown).
Precision matters more than recall here: a wrong label moves a memory's valence the wrong way,
while "unknown" only leaves it alone. So besides the per-class table the report counts
"wrong updates" (the classifier said worked/failed/partial and the gold label differs) and,
the worst kind of those, sign errors (worked read as failed or failed read as worked).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

LABELS = ("worked", "failed", "partial", "unknown")
UPDATES = ("worked", "failed", "partial")
DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "reactions.jsonl"


def load(path: Path) -> list[dict[str, str]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in LABELS:
            raise ValueError(f"{path}:{n}: label {row.get('label')!r} is not one of {LABELS}")
        rows.append(row)
    return rows


def ratio(a: int, b: int) -> float:
    # 0/0 is reported as 0 rather than NaN so the JSON stays strict and the table stays aligned.
    return a / b if b else 0.0


def evaluate(rows: list[dict[str, str]], preds: list[tuple[str, str | None]]) -> dict[str, Any]:
    confusion = {g: {p: 0 for p in LABELS} for g in LABELS}
    for row, (pred, _) in zip(rows, preds):
        confusion[row["label"]][pred] += 1
    per_class = {}
    for c in LABELS:
        tp = confusion[c][c]
        n = sum(confusion[c].values())
        predicted = sum(confusion[g][c] for g in LABELS)
        p, r = ratio(tp, predicted), ratio(tp, n)
        per_class[c] = {"n": n, "predicted": predicted, "precision": p, "recall": r, "f1": ratio(2 * p * r, p + r)}
    correct = sum(confusion[c][c] for c in LABELS)
    updates = sum(confusion[g][p] for g in LABELS for p in UPDATES)
    wrong_updates = sum(confusion[g][p] for g in LABELS for p in UPDATES if g != p)
    sign_errors = confusion["worked"]["failed"] + confusion["failed"]["worked"]
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row, (pred, _) in zip(rows, preds):
        by_kind[row["kind"]][0] += pred == row["label"]
        by_kind[row["kind"]][1] += 1
    errors = [
        {"text": row["text"], "kind": row["kind"], "gold": row["label"], "pred": pred, "cue": cue}
        for row, (pred, cue) in zip(rows, preds)
        if pred != row["label"]
    ]
    return {
        "n": len(rows),
        "accuracy": ratio(correct, len(rows)),
        "macro_f1": sum(v["f1"] for v in per_class.values()) / len(LABELS),
        "per_class": per_class,
        "confusion": confusion,
        "updates": updates,
        "wrong_updates": wrong_updates,
        # Of the updates the classifier would make, the share that would move valence wrongly.
        "wrong_update_share": ratio(wrong_updates, updates),
        # Of all messages, the share that would cause a wrong update.
        "wrong_update_rate": ratio(wrong_updates, len(rows)),
        "sign_errors": sign_errors,
        "per_kind": {
            k: {"n": v[1], "correct": v[0], "accuracy": ratio(v[0], v[1])} for k, v in sorted(by_kind.items())
        },
        "errors": errors,
    }


def report(res: dict[str, Any], show_errors: bool) -> None:
    print(f"{res['n']} messages   accuracy {res['accuracy']:.3f}   macro F1 {res['macro_f1']:.3f}\n")
    print(f"{'class':<9} {'n':>4} {'pred':>5} {'prec':>6} {'rec':>6} {'F1':>6}")
    for c, v in res["per_class"].items():
        print(f"{c:<9} {v['n']:>4} {v['predicted']:>5} {v['precision']:>6.3f} {v['recall']:>6.3f} {v['f1']:>6.3f}")
    print("\nconfusion (rows gold, columns predicted)")
    print(f"{'':<9}" + "".join(f"{p:>9}" for p in LABELS))
    for g in LABELS:
        print(f"{g:<9}" + "".join(f"{res['confusion'][g][p]:>9}" for p in LABELS))
    print(
        f"\nwrong updates: {res['wrong_updates']} of {res['updates']} updates "
        f"({res['wrong_update_share']:.1%}; {res['wrong_update_rate']:.1%} of all messages)"
        f"\nsign errors (worked<->failed): {res['sign_errors']}"
    )
    print(f"\n{'kind':<20} {'n':>4} {'acc':>6}")
    for k, v in res["per_kind"].items():
        print(f"{k:<20} {v['n']:>4} {v['accuracy']:>6.2f}")
    if show_errors:
        print(f"\nmisclassified ({len(res['errors'])})")
        for e in res["errors"]:
            text = e["text"].replace("\n", "\\n")
            text = text if len(text) <= 100 else text[:97] + "..."
            cue = f"  cue={e['cue']!r}" if e["cue"] else ""
            print(f"  {e['gold']:>7} -> {e['pred']:<7} [{e['kind']}] {text}{cue}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.reactions", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="labelled JSONL (default: %(default)s)")
    p.add_argument("--show-errors", action="store_true", help="list the misclassified messages")
    p.add_argument("--json", type=Path, metavar="OUT", help="also write the full results as JSON")
    a = p.parse_args(argv)
    if not a.data.is_file():
        p.error(f"{a.data} does not exist")
    # Imported here so --help and the data checks work before (or without) the classifier.
    try:
        from mnemo_mcp.core.reactions import classify
    except ModuleNotFoundError as e:
        p.error(f"cannot import the classifier ({e})")

    rows = load(a.data)
    preds = []
    for row in rows:
        r = classify(row["text"])
        if r.label not in LABELS:
            p.error(f"classify returned label {r.label!r} for {row['text']!r}")
        preds.append((r.label, r.cue))
    res = evaluate(rows, preds)
    report(res, a.show_errors)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=2, ensure_ascii=False))
        print(f"\nresults: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
