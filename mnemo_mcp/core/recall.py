"""What the prompt hook puts in front of the model: a memory in full, a one-line pointer, or
nothing. Pure rules over a read's ranked candidates.

- In full: the best candidate when it is clearly the one (relevance or learned score at the
  confident floor, or a little under it with a clear lead over the next candidate), or when it
  is plausible and worked the times it was used (the learned signal vouches for it). A memory in
  full is shown whole or not at all: a case cut before its fix helps nobody.
- As a pointer: the next plausible candidates (at the pointer floor and close to the best), as
  one line of about twenty tokens (its id, what happened when it was used, a gist) that tells the
  model the note exists and invites `memory_read`. Below that, nothing.
- A memory that was tried and failed is never shown first in full: it becomes a pointer, marked
  as such, after the others; what worked for the same problem leads.
- Proven first: a memory that worked when it was used, and is plausible for the prompt (at the
  pointer floor and within `proven_ratio` of the best candidate's relevance), leads over memories
  nobody has tried that merely share more of the prompt's words. Outcomes are evidence that
  similarity is not: the advice people give first is often worded most like the problem. By
  confidence, it leads in full when it is plausible on its own, else as a pointer that says it
  worked: a fix asked for again in other words scores low, and twenty tokens are cheaper than
  the problem solved twice (the attribution benchmark's recurrences: fix first 86% -> 90% on its
  test part, 71% -> 80% on its fresh set; unrelated prompts given a captured case 20% -> 25%).

With a read's semantic and lexical parts (an MCP server is up), the decisions go by
*confidence*, not relevance alone: how likely a candidate is the memory the prompt needs, from
its semantic and keyword scores and its lead over the best other candidate on each (neighbours of
one subject score alike; the one the prompt is about stands out), plus what was learned for it
(score over relevance). Its weights (`CONFIDENCE`) were fit by logistic regression on the tune
part of the natural prompts; the best candidate is shown (whole at the full floor, else as a
pointer) at one floor, the others as pointers only at a higher one.

The floors are chosen on the tune part of `benchmarks/data/natural_prompts` (python -m
benchmarks.natural_prompts); the hook's own keyword fallback, whose relevance is BM25 alone, has
floors of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GIST_CHARS = 80
# Logistic weights of semantic, its lead over the best other candidate's, lexical, its lead, and
# the bias: fit on the tune part of benchmarks/data/natural_prompts (each read's five candidates,
# 1 where the candidate is a relevant memory), rounded to one decimal.
CONFIDENCE = (1.4, 1.5, 0.8, 1.4, -2.4)


@dataclass(frozen=True)
class RecallPolicy:
    full_floor: float = 0.6  # this relevant (or scored): shown in full
    lead_floor: float = 0.5  # this relevant with a clear lead over the next: in full too (full - 0.1)
    lead: float = 0.15  # the lead (score over the second candidate's) that makes it clear
    worked_floor: float = 0.45  # the best candidate, which worked when it was used before: in full
    pointer_floor: float = 0.25  # plausible: a pointer
    pointer_ratio: float = 0.8  # ... and within this share of the best candidate
    notes: int = 3  # notes shown at most, in full and as pointers
    proven_ratio: float = 0.6  # a memory that worked leads when it is this close to the best candidate
    # By confidence (used when every candidate has its semantic and lexical parts; None: by relevance):
    full_confidence: float | None = None  # the best candidate this confident: in full
    best_confidence: float | None = None  # ... this confident: a pointer
    pointer_confidence: float | None = None  # another candidate this confident: a pointer too


@dataclass(frozen=True)
class Candidate:
    relevance: float
    score: float
    failed: bool = False  # tried and failed (its valence is negative and its tally says so)
    worked: bool = False  # it worked when it was used (its valence is positive and its tally says so)
    semantic: float | None = None  # the read's semantic part (0..1), None when not known
    lexical: float | None = None  # the read's keyword part (0..1)

    @property
    def strength(self) -> float:
        """What the floors compare: relevance, or the learned score when it says more (a
        memory the same kind of question was taught on)."""
        return max(self.relevance, self.score)


def proven(candidates: list[Candidate], policy: RecallPolicy) -> int | None:
    """The best plausible candidate that worked when it was used: it leads (proven first)."""
    best = max((c.strength for c in candidates), default=0.0)
    return next(
        (
            i
            for i, c in enumerate(candidates)
            if c.worked
            and not c.failed
            and c.strength >= policy.pointer_floor
            and c.strength >= policy.proven_ratio * best
        ),
        None,
    )


def confidences(candidates: list[Candidate]) -> list[float] | None:
    """How likely each candidate is the memory the prompt needs (0..1): the logistic of its
    semantic and lexical parts and its lead on each over the best other candidate, plus what was
    learned for it (score over relevance, in either direction). None when a part is missing. A
    memory that was tried and failed is no rival: the lead is over the others."""
    if any(c.semantic is None or c.lexical is None for c in candidates):
        return None
    w_sem, w_sem_lead, w_lex, w_lex_lead, bias = CONFIDENCE
    out = []
    for i, c in enumerate(candidates):
        others = [o for j, o in enumerate(candidates) if j != i and not o.failed]
        sem_lead = c.semantic - max((o.semantic for o in others), default=0.0)
        lex_lead = c.lexical - max((o.lexical for o in others), default=0.0)
        z = w_sem * c.semantic + w_sem_lead * sem_lead + w_lex * c.lexical + w_lex_lead * lex_lead + bias
        p = 1.0 / (1.0 + math.exp(-z)) + (c.score - c.relevance)
        out.append(min(max(p, 0.0), 1.0))
    return out


def plan(candidates: list[Candidate], policy: RecallPolicy) -> tuple[list[int], list[int]]:
    """-> (indexes shown in full, indexes shown as pointers), in the order to show them."""
    if not candidates:
        return [], []
    conf = confidences(candidates) if policy.full_confidence is not None else None
    if conf is not None:
        return _plan_by_confidence(candidates, conf, policy)
    best = max(c.strength for c in candidates)
    lead = proven(candidates, policy)
    ranked = list(range(len(candidates)))
    if lead is not None:  # the read's order, but what worked before leads
        ranked.insert(0, ranked.pop(lead))
    full: list[int] = []
    for i in ranked:
        c = candidates[i]
        if c.failed:
            continue  # never in full, never first
        runner_up = max((o.score for j, o in enumerate(candidates) if j != i), default=0.0)
        confident = c.strength >= policy.full_floor or (
            c.strength >= policy.lead_floor and c.score - runner_up >= policy.lead
        )
        if confident or (c.worked and c.strength >= policy.worked_floor):
            full.append(i)
        break  # only the best non-failed candidate may be shown in full
    pointers = [
        i
        for i in ranked
        if i not in full
        and candidates[i].strength >= policy.pointer_floor
        and (i == lead or candidates[i].strength >= policy.pointer_ratio * best)
    ]
    pointers.sort(key=lambda i: candidates[i].failed)  # what failed comes after what did not
    return full[: policy.notes], pointers[: max(policy.notes - len(full), 0)]


def _plan_by_confidence(
    candidates: list[Candidate], conf: list[float], policy: RecallPolicy
) -> tuple[list[int], list[int]]:
    """The most confident candidate that did not fail leads, unless a plausible one worked
    before (`proven`: its score, learned lift included, at the pointer floor and near the best):
    that one leads. The lead is in full when confident enough, or when it worked before and is
    plausible on its own (by confidence, or at the relevance floor for what worked); else a
    pointer (what worked before always is, the others only when confident). The others are
    pointers when confident on their own. What failed is never in full and comes after the rest."""
    full_at = policy.full_confidence if policy.full_confidence is not None else 1.0
    best_at = policy.best_confidence if policy.best_confidence is not None else full_at
    other_at = policy.pointer_confidence if policy.pointer_confidence is not None else full_at
    order = sorted(range(len(candidates)), key=lambda i: (candidates[i].failed, -conf[i]))
    proven_lead = proven(candidates, policy)
    # What worked before leads when it is plausible for the prompt (proven first): in full when
    # it is plausible on its own (by confidence, or by its own relevance, not the learned lift it
    # leads on, at the floor for what worked), else as a pointer, which costs twenty tokens and
    # puts the outcome ("worked before") before advice nobody has tried.
    if proven_lead is not None:
        order.insert(0, order.pop(order.index(proven_lead)))
    lead = order[0]
    full: list[int] = []
    pointers: list[int] = []
    c = candidates[lead]
    vouched = c.worked and not c.failed and (conf[lead] >= best_at or c.relevance >= policy.worked_floor)
    if vouched or (not c.failed and conf[lead] >= full_at):
        full.append(lead)
    elif conf[lead] >= best_at or lead == proven_lead:
        pointers.append(lead)
    pointers += [i for i in order[1:] if conf[i] >= other_at]
    pointers.sort(key=lambda i: candidates[i].failed)  # what failed comes after what did not
    return full[: policy.notes], pointers[: max(policy.notes - len(full), 0)]


def gist(content: str, limit: int = GIST_CHARS) -> str:
    """The start of a memory in a few words, cut at a word (a case leads with its fix)."""
    text = " ".join((content or "").split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (cut if len(cut) > limit // 2 else text[:limit]).rstrip(",;:") + "…"
