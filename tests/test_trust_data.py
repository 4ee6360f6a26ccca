"""The trust corpus (benchmarks/data/trust/) keeps the format its README gives its writers: the
split rule that keeps test notes out of training, unique ids and texts, no real token formats."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

TRUST = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "trust"
FILES = sorted(TRUST.glob("*.jsonl"))
FIELDS = ["id", "split", "label", "kind", "lang", "content"]
REAL_TOKENS = re.compile(r"AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{36}|xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_file_keeps_the_fields_the_label_and_the_split_rule(path):
    rows = _rows(path)
    label = path.stem.split("_")[0]
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        assert list(row) == FIELDS, row.get("id")
        assert row["label"] == label and row["content"].strip()
        by_kind[row["kind"]].append(row)
    for kind, notes in by_kind.items():
        for position, row in enumerate(notes):
            want = "tune" if position % 5 in (0, 2) else "test"
            assert row["split"] == want, (kind, row["id"])


def test_ids_and_texts_are_unique_across_the_corpus_and_no_real_token_is_in_it():
    rows = [row for path in FILES for row in _rows(path)]
    assert len({r["id"] for r in rows}) == len(rows)
    assert len({r["content"] for r in rows}) == len(rows)
    assert not [r["id"] for r in rows if REAL_TOKENS.search(r["content"])]
