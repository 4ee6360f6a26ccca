"""Crediting: an outcome of a session (a reaction, a check) for the memories its actions followed,
each by its share (core.attribution), through the read that showed it. Sessions composes it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core import attribution
from ..core.text import extract_concepts
from ..errors import InvalidInput, MnemoError
from ..models import SessionCredit
from .base import Part, ServiceContext, iso
from .learning import Learning
from .session_log import OUTCOME, SHOWN, TURN, SessionUnit

ASK_CONCEPTS = 8  # of the user's ask taught to what an outcome credits
MAX_CONCEPTS = 16


def aligned(actions: list[dict[str, Any]]) -> dict[str, float]:
    """Each memory's alignment with the actions of a window (the best over them)."""
    out: dict[str, float] = {}
    for e in actions:
        for m, a in e["detail"].get("alignment", {}).items():
            out[m] = max(out.get(m, 0.0), float(a))
    return out


def carried(actions: list[dict[str, Any]]) -> set[str]:
    """Memories whose code the actions of a window carried out verbatim."""
    return {m for e in actions for m in e["detail"].get("carried", [])}


def refuted(events: list[dict[str, Any]], carried: set[str]) -> set[str]:
    """Memories an outcome of this session already counted against, whose code the window did
    not carry out verbatim. Once a note was followed and failed, the work moves on in the same
    words (the same file, the same feature): that is no evidence of following it again."""
    blamed = {m for e in events if e["kind"] == OUTCOME and e["detail"].get("outcome", 0) < 0 for m in e["memory_ids"]}
    return blamed - carried


class Crediting(Part):
    """Outcomes for the memories a session's window followed."""

    def __init__(self, ctx: ServiceContext, *, learning: Learning):
        super().__init__(ctx)
        self.learning = learning

    def credit(
        self,
        u: SessionUnit,
        aligned: dict[str, float],
        outcome: float,
        label: str,
        source: str,
        cue: str | None,
        now: datetime | None,
        carried: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> SessionCredit:
        """The outcome for the memories the window followed, each by its share; one report per
        memory, through the read that showed it first, so its query->memory links learn for the
        question it was shown for."""
        s = self.settings
        shares = {
            m: attribution.share(a, outcome, s.follow_floor, s.blame_floor, s.full_credit) for m, a in aligned.items()
        }
        shares = {m: c for m, c in shares.items() if c > 0}
        ahead = attribution.leading({m: aligned[m] for m in shares}, s.credit_ratio)
        shares = {m: c for m, c in shares.items() if m in ahead}
        if outcome > 0 and shares:
            against = refuted(u.events, carried)
            shares = {m: c for m, c in shares.items() if m not in against}
        first: dict[str, dict[str, Any]] = {}
        for e in u.events:
            if e["kind"] in SHOWN:
                for m in e["memory_ids"]:
                    if m in shares:
                        first.setdefault(m, e)
        groups: dict[int, list[str]] = {}
        for m, e in first.items():
            groups.setdefault(e["seq"], []).append(m)
        by_seq = {e["seq"]: e for e in first.values()}
        # The problem in the user's words is taught too: a memory the model found with its own
        # query and followed is found next time from the words the user asked in.
        turns = [e for e in u.events if e["kind"] == TURN]
        asked = extract_concepts(turns[-1]["detail"].get("ask") or "")[:ASK_CONCEPTS] if turns else []
        credited: list[str] = []
        for seq, ids in groups.items():
            e = by_seq[seq]
            concepts = list(dict.fromkeys([*(e["detail"].get("query_concepts") or []), *asked]))[:MAX_CONCEPTS]
            how = dict(
                credits={m: shares[m] for m in ids},
                outcome=outcome,
                query_concepts=concepts or None,
                source=f"hook:{source}",
                now=now,
            )
            try:
                result = self.learning.feedback_credited(ids, read_id=e.get("read_id"), **how)
            except InvalidInput:  # the read fell out of the bounded log: keep its concepts
                result = self.learning.feedback_credited(ids, **how)
            except MnemoError:  # every memory of this group was deleted meanwhile
                continue
            credited += [c.id for c in result.updated]
        u.add(
            OUTCOME,
            iso(now or self.clock()),
            memory_ids=credited,
            detail={"source": source, "label": label, "outcome": outcome, "cue": (cue or "")[:200]},
        )
        return SessionCredit(signal=label, outcome=outcome, memory_ids=credited)
