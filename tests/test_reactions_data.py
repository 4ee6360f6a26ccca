"""The labelled reaction set is well formed. Accuracy is the benchmark's business, not a test's:
the set is meant to hold messages the classifier gets wrong."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "reactions.jsonl"
LABELS = {"worked", "failed", "partial", "unknown"}


def load() -> list[dict]:
    lines = DATA.read_text(encoding="utf-8").splitlines()
    assert all(line.strip() for line in lines), "blank line in the data set"
    return [json.loads(line) for line in lines]


def test_every_line_has_text_label_and_kind() -> None:
    for row in load():
        assert set(row) == {"text", "label", "kind"}, row
        assert isinstance(row["text"], str) and row["text"].strip(), row
        assert isinstance(row["kind"], str) and row["kind"].strip(), row
        assert row["label"] in LABELS, row


def test_size_and_class_balance() -> None:
    rows = load()
    assert len(rows) >= 200
    counts = Counter(r["label"] for r in rows)
    for label in LABELS:
        assert counts[label] >= 25, counts


def test_no_duplicate_texts() -> None:
    # Case and surrounding space do not make a new message.
    texts = Counter(r["text"].strip().lower() for r in load())
    assert not [t for t, n in texts.items() if n > 1]
