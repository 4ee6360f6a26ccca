"""Response alignment: which recalled memories did the assistant's answer actually follow?

Alignment of a memory with a response is its similarity to the response's best-matching
sentence (the whole response counting as one more): an answer that used one memory in one
sentence and then went on about something else still follows that memory, where a
whole-response embedding alone would average it away, and a memory the answer repeats over
several sentences is matched by the whole. Two measures, both in [0, 1]:

- semantic: the calibrated cosine (the same floor/ceiling mapping as relevance) between the
  memory's vector and each sentence's vector; used when the embedding model is at hand;
- lexical: the IDF-weighted share of the memory's words found in the sentence; used by the
  Claude Code hooks, which must not spend a second loading the model.

The Hebbian rule (after MemWire's adaptive feedback): a link is strengthened by
`strengthen_rate * alignment` above `align_strengthen`, weakened by `weaken_rate` below
`align_weaken`, left alone in between, and kept within [edge_min, edge_max].
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .rules import clamp

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{1,}")
MAX_SENTENCES = 40


@dataclass(frozen=True)
class AlignmentRule:
    strengthen_rate: float = 0.1
    weaken_rate: float = 0.05
    align_strengthen: float = 0.5
    align_weaken: float = 0.2
    edge_min: float = 0.01
    edge_max: float = 1.0


def sentences(text: str) -> list[str]:
    """The response split into sentences and lines (code lines count as sentences), bounded."""
    parts = [p.strip() for p in _SENTENCE.split(text or "")]
    return [p for p in parts if len(p) >= 3][:MAX_SENTENCES]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def semantic_alignment(cosines_to_sentences: list[float], floor: float, ceil: float) -> float:
    """Best sentence's cosine, mapped so `floor` -> 0 and `ceil` -> 1."""
    if not cosines_to_sentences:
        return 0.0
    return clamp((max(cosines_to_sentences) - floor) / (ceil - floor), 0.0, 1.0)


def lexical_alignment(memory_tokens: set[str], sentence_tokens: list[set[str]], idf: dict[str, float]) -> float:
    """Best sentence's IDF-weighted share of the memory's distinct tokens."""
    total = sum(idf.get(t, 0.0) for t in memory_tokens)
    if total <= 0 or not sentence_tokens:
        return 0.0
    return clamp(max(sum(idf.get(t, 0.0) for t in memory_tokens & s) for s in sentence_tokens) / total, 0.0, 1.0)


def credit_weight(alignment: float, floor: float) -> float:
    """How much of an outcome a memory takes: its alignment, never below `floor` (a memory the
    answer did not visibly use may still have shaped it, so it keeps a little)."""
    return clamp(max(alignment, floor), 0.0, 1.0)


def link_step(weight: float, alignment: float, rule: AlignmentRule) -> tuple[float, int]:
    """One alignment-driven step of a concept link -> (new weight, +1 strengthened / -1 weakened / 0)."""
    if alignment > rule.align_strengthen:
        return clamp(weight + rule.strengthen_rate * alignment, rule.edge_min, rule.edge_max), 1
    if alignment < rule.align_weaken:
        return clamp(weight - rule.weaken_rate, rule.edge_min, rule.edge_max), -1
    return weight, 0


def tension_pairs(
    ids: list[str], similarity: dict[tuple[str, str], float], superseded: set[tuple[str, str]], threshold: float
) -> list[tuple[str, str, str]]:
    """Pairs of recalled memories that may disagree: one replaced the other (`superseded`, as
    (old, new)), or they are about the same thing (similarity >= threshold) without being the
    same memory. -> (a, b, why)."""
    out = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if (a, b) in superseded or (b, a) in superseded:
                out.append((a, b, "one supersedes the other"))
            elif similarity.get((a, b), similarity.get((b, a), 0.0)) >= threshold:
                out.append((a, b, "same subject, different content"))
    return out
