"""Ranking and learning rules. Pure functions: no I/O, no clock, every input explicit.

The score of a memory for a query is

    score = relevance + global_weight * global_signal + context_weight * gate(relevance) * context

- relevance in [0, 1]: calibrated similarity (semantic and lexical), the only term at cold start.
- global_signal in [-1, 1]: the memory's own valence and quality, which follow it into every
  query; kept small because a memory that misled one question may answer another.
- context in [-1, 1]: what feedback taught about this kind of question and this memory (links
  between the query's concepts and the memory), allowed to move the ranking strongly.
- gate(relevance) rises linearly from 0 at `context_gate_floor` to 1 at `context_gate`: a clearly
  unrelated memory cannot be lifted far by anything it learned, so learning re-ranks plausible
  candidates instead of inventing them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NEUTRAL_QUALITY = 0.5

# Ratings kept in a memory's metadata (its rating_history), newest last.
RATING_HISTORY_LIMIT = 20


def clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def delta_rule(value: float, outcome: float, rate: float) -> float:
    """Rescorla-Wagner / Widrow-Hoff: move part of the way toward the outcome, stay in [-1, 1]."""
    return clamp(value + rate * (outcome - value), -1.0, 1.0)


def strengthen(weight: float, rate: float) -> float:
    """Hebbian strengthening toward 1 with diminishing steps."""
    return clamp(weight + rate * (1.0 - weight), 0.0, 1.0)


# --- relevance -----------------------------------------------------------------------------


def semantic_score(cosine: float | None, floor: float, ceil: float) -> float:
    """Cosine similarity mapped linearly so `floor` -> 0 and `ceil` -> 1 (clipped)."""
    if cosine is None or math.isnan(cosine):
        return 0.0
    return clamp((cosine - floor) / (ceil - floor), 0.0, 1.0)


def lexical_score(bm25: float | None, idf_total: float) -> float:
    """BM25 divided by the sum of the query terms' IDF (clipped).

    A document holding every query term once, at average length, scores about 1; one holding
    terms worth half the query's IDF about 0.5. This makes BM25 comparable across queries.
    """
    if bm25 is None or idf_total <= 0 or math.isnan(bm25):
        return 0.0
    return clamp(bm25 / idf_total, 0.0, 1.0)


def fts5_idf(total_docs: int, docs_with_term: int) -> float:
    """The IDF that SQLite FTS5's bm25() uses, so `lexical_score` divides like by like."""
    docs_with_term = min(max(docs_with_term, 0), max(total_docs, 0))
    idf = math.log((max(total_docs, 0) - docs_with_term + 0.5) / (docs_with_term + 0.5))
    return idf if idf > 1e-6 else 1e-6


def relevance(semantic: float, lexical: float, sem_weight: float) -> float:
    return clamp(sem_weight * semantic + (1.0 - sem_weight) * lexical, 0.0, 1.0)


def candidate_relevance(
    cosine: float | None, bm25: float | None, idf_total: float, sem_floor: float, sem_ceil: float, sem_weight: float
) -> float:
    """relevance(semantic_score(cosine), lexical_score(bm25), sem_weight) in one call, operation
    for operation (so the same float): a read computes it for every candidate."""
    if cosine is None or cosine != cosine:  # NaN
        sem = 0.0
    else:
        sem = (cosine - sem_floor) / (sem_ceil - sem_floor)
        sem = 0.0 if sem < 0.0 else 1.0 if sem > 1.0 else sem
    if bm25 is None or idf_total <= 0 or bm25 != bm25:
        lex = 0.0
    else:
        lex = bm25 / idf_total
        lex = 0.0 if lex < 0.0 else 1.0 if lex > 1.0 else lex
    rel = sem_weight * sem + (1.0 - sem_weight) * lex
    return 0.0 if rel < 0.0 else 1.0 if rel > 1.0 else rel


# --- quality -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QualityWeights:
    rating: float = 0.30
    access: float = 0.30
    ranking: float = 0.20
    consolidation: float = 0.20


ACCESS_SATURATION = 64  # accesses at which the access-frequency component reaches 1


def rating_component(rating_sum: float, rating_count: int) -> float:
    """Mean rating mapped to [0, 1], shrunk toward neutral by one pseudo-rating of 0."""
    return clamp(0.5 + 0.5 * rating_sum / (rating_count + 1), 0.0, 1.0)


def access_component(access_count: int) -> float:
    """0.5 unused, rising on a log scale to 1 at ACCESS_SATURATION accesses."""
    grow = math.log1p(max(access_count, 0)) / math.log1p(ACCESS_SATURATION)
    return clamp(0.5 + 0.5 * grow, 0.0, 1.0)


def ranking_component(reciprocal_rank_sum: float, retrievals: int) -> float:
    """Mean reciprocal rank over the reads that returned the memory, with a neutral prior of 0.5."""
    return clamp((0.5 + reciprocal_rank_sum) / (1 + retrievals), 0.0, 1.0)


def quality_score(components: dict[str, float], weights: QualityWeights) -> float:
    pairs = (
        (components["user_rating"], weights.rating),
        (components["access_frequency"], weights.access),
        (components["retrieval_ranking"], weights.ranking),
        (components["consolidation_score"], weights.consolidation),
    )
    total = sum(w for _, w in pairs)
    return clamp(sum(c * w for c, w in pairs) / total, 0.0, 1.0)


def quality_components(
    *,
    rating_sum: float,
    rating_count: int,
    access_count: int,
    reciprocal_rank_sum: float,
    retrievals: int,
    consolidation: float = NEUTRAL_QUALITY,
) -> dict[str, float]:
    return {
        "user_rating": rating_component(rating_sum, rating_count),
        "access_frequency": access_component(access_count),
        "retrieval_ranking": ranking_component(reciprocal_rank_sum, retrievals),
        "consolidation_score": clamp(consolidation, 0.0, 1.0),
    }


# --- learned signals and the final score ---------------------------------------------------


def evidence_confidence(explicit_signals: int) -> float:
    """How far to trust quality in ranking: 0 with no ratings or feedback, 1/2 after one, ...

    Quality also moves with plain reads (access frequency, retrieval rank); without this, reading
    alone would feed back into the order (popular gets more popular) before anyone judged it.
    """
    n = max(explicit_signals, 0)
    return n / (n + 1.0)


def global_signal(valence: float, quality: float, explicit_signals: int, valence_share: float = 0.5) -> float:
    """The memory's own learned standing in [-1, 1]: valence, plus confidence-weighted quality."""
    q = 2.0 * (quality - NEUTRAL_QUALITY) * evidence_confidence(explicit_signals)
    return clamp(valence_share * valence + (1.0 - valence_share) * q, -1.0, 1.0)


def link_update(value: float, count: int, outcome: float, floor_rate: float) -> float:
    """A query->memory link moves to the running mean of its outcomes (rate 1/(n+1)), never by
    less than `floor_rate`: the first report counts fully, later ones average out label noise
    instead of the last one overwriting the rest, and the floor keeps it able to change its mind."""
    rate = max(1.0 / (max(count, 0) + 1.0), floor_rate)
    return delta_rule(value, outcome, rate)


def faded(value: float, days: float, half_life_days: float) -> float:
    """A query->memory link as time tells on it: half its value per `half_life_days` since it was
    last taught (0: never fades). What a question was taught once, long ago, weighs less than what
    it was taught lately; teaching it again restores it."""
    if half_life_days <= 0 or days <= 0:
        return value
    return value * 0.5 ** (days / half_life_days)


def concept_weight(total_docs: int, docs_with_concept: int) -> float:
    """Specificity of a query concept: a smoothed IDF, positive even for very common words (the
    BM25 IDF drops to ~0 above half the documents, which in a small store is most words)."""
    n = min(max(docs_with_concept, 0), max(total_docs, 0))
    return math.log((max(total_docs, 0) + 1.0) / (n + 0.5))


def context_signal(links: dict[str, float], weights: dict[str, float], sharpness: float = 2.0) -> float:
    """What feedback taught about this memory for a query, in [-1, 1].

    `weights` are the query's concepts with their specificity (IDF); `links` the memory's taught
    values for some of them. With coverage = the weighted share of the query's concepts that
    have a link, the signal is mean(link) * coverage^sharpness: the same question gets the full taught
    value, a question sharing only a common word (a person's name, say) almost nothing, so one
    question's lesson does not spill onto questions it was not about.
    """
    total = sum(w for w in weights.values() if w > 0)
    if total <= 0 or not links:
        return 0.0
    taught = {c: v for c, v in links.items() if weights.get(c, 0.0) > 0}
    taught_w = sum(weights[c] for c in taught)
    if taught_w <= 0:
        return 0.0
    mean = sum(weights[c] * v for c, v in taught.items()) / taught_w
    coverage = taught_w / total
    return clamp(mean * coverage**sharpness, -1.0, 1.0)


def relevance_gate(relevance_value: float, context_gate: float, context_gate_floor: float = 0.0) -> float:
    """0 at or below `context_gate_floor`, rising linearly to 1 at `context_gate`."""
    if context_gate <= context_gate_floor:
        return 1.0 if relevance_value >= context_gate else 0.0
    return clamp((relevance_value - context_gate_floor) / (context_gate - context_gate_floor), 0.0, 1.0)


def final_score(
    relevance_value: float,
    global_value: float,
    context_value: float,
    *,
    global_weight: float,
    context_weight: float,
    context_gate: float,
    context_gate_floor: float = 0.0,
) -> float:
    gate = relevance_gate(relevance_value, context_gate, context_gate_floor)
    return relevance_value + global_weight * global_value + context_weight * gate * context_value


def max_lift(
    relevance_value: float,
    *,
    global_weight: float,
    context_weight: float,
    context_gate: float,
    context_gate_floor: float = 0.0,
) -> float:
    """The most the learned terms can add to (or take from) a memory of this relevance."""
    return global_weight + context_weight * relevance_gate(relevance_value, context_gate, context_gate_floor)


# --- what the model is told of a memory's past -------------------------------------------------

WORKED_AT = 0.5  # an outcome this good counts as "worked" (a passing check, "that worked")
FAILED_AT = -0.5  # this bad as "failed"; in between (a partial success) as "partly"


def count_outcome(counts: dict[str, int] | None, outcome: float, rate: float) -> dict[str, int]:
    """A memory's tally of outcomes after one more (an outcome it took no share of: unchanged)."""
    out = {k: int(v) for k, v in (counts or {}).items() if k in ("worked", "failed", "partly")}
    if rate > 0 and outcome != 0:
        key = "worked" if outcome >= WORKED_AT else "failed" if outcome <= FAILED_AT else "partly"
        out[key] = out.get(key, 0) + 1
    return out


def outcome_label(counts: dict[str, int] | None, valence: float) -> str:
    """Words about what happened when this memory was used, as the model reads them: "worked
    before (2x)", "tried before, failed (1x)", "worked 2x, failed 1x", "new". A memory from before
    the tally existed says what its valence says."""
    c = counts or {}
    worked, failed, partly = int(c.get("worked", 0)), int(c.get("failed", 0)), int(c.get("partly", 0))
    if worked and failed:
        return f"worked {worked}x, failed {failed}x"
    if worked:
        return f"worked before ({worked}x)"
    if failed:
        return f"tried before, failed ({failed}x)"
    if partly:
        return f"helped partly ({partly}x)"
    if valence > 0.05:
        return "worked before"
    if valence < -0.05:
        return "tried before, failed"
    return "new"
