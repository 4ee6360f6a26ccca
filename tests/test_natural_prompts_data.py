"""The natural-prompt set is well formed: labels name real memories, and tune and test share no
relevant memory (the split is by memory, so a floor tuned on one half is honest on the other)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "natural_prompts"


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_memories_have_unique_keys_and_a_scope() -> None:
    memories = rows("memories.jsonl")
    assert len(memories) >= 300
    assert len({m["key"] for m in memories}) == len(memories)
    assert {m["scope"] for m in memories} == {"project", "global"}
    assert all(m["content"].strip() for m in memories)


def test_prompts_name_existing_memories_and_split_by_memory() -> None:
    keys = {m["key"] for m in rows("memories.jsonl")}
    prompts = rows("prompts.jsonl")
    assert len(prompts) >= 300 and len({p["id"] for p in prompts}) == len(prompts)
    by_split: dict[str, set[str]] = {"tune": set(), "test": set()}
    for p in prompts:
        assert p["split"] in by_split and p["prompt"].strip(), p
        assert set(p["relevant"]) | set(p["acceptable"]) <= keys, p
        by_split[p["split"]] |= set(p["relevant"])
    assert not by_split["tune"] & by_split["test"]
    splits = Counter(p["split"] for p in prompts)
    assert splits["tune"] >= 100 and splits["test"] >= 150
    silent = sum(1 for p in prompts if not p["relevant"]) / len(prompts)
    assert 0.15 <= silent <= 0.4  # enough prompts where the right answer is to inject nothing
