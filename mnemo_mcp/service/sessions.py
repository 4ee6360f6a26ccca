"""Sessions: which memories a Claude Code session saw in each turn, and crediting them with the
outcomes its hooks observe (the user's reaction, test and build results).

A turn starts at each user prompt. Memories injected by the prompt hook or returned by the
model's own memory_read belong to the turn they were recalled in. Silence is not an outcome:
nothing here runs without a signal.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import InvalidInput, MnemoError
from ..models import SessionCredit
from .base import ServiceBase, iso

SESSION_EVENTS_KEPT = 50_000
TURN, RECALL, CHECK, OUTCOME, ALIGN = "turn", "recall", "check", "outcome", "alignment"


def _since_last(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    for i in range(len(events) - 1, -1, -1):
        if events[i]["kind"] == kind:
            return events[i + 1 :]
    return events


class SessionMixin(ServiceBase):
    def _session_event(self, session_id: str, kind: str, stamp: str, **fields: Any) -> int:
        return self.store.add_session_event(
            {"session_id": session_id, "kind": kind, "created_at": stamp, "read_id": fields.pop("read_id", None), **fields},
            keep=SESSION_EVENTS_KEPT,
        )

    @staticmethod
    def _session_id(session_id: Any) -> str:
        if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
            raise InvalidInput("session_id must be the non-empty session_id string from Claude Code's hook input")
        return session_id.strip()

    def session_recall(
        self,
        session_id: str,
        memory_ids: list[str],
        *,
        read_id: str | None = None,
        query_concepts: list[str] | None = None,
        source: str = "hook",
        now: datetime | None = None,
    ) -> None:
        """Note that these memories were put in front of the model in the current turn."""
        sid = self._session_id(session_id)
        if not memory_ids:
            return
        with self.store.db.write():
            self._session_event(
                sid,
                RECALL,
                iso(now or self.clock()),
                memory_ids=list(dict.fromkeys(memory_ids)),
                read_id=read_id,
                detail={"query_concepts": query_concepts or [], "source": source},
            )

    def session_turn(self, session_id: str, *, now: datetime | None = None) -> None:
        """A new user prompt: what follows belongs to a new turn."""
        sid = self._session_id(session_id)
        with self.store.db.write():
            self._session_event(sid, TURN, iso(now or self.clock()))

    def session_react(
        self, session_id: str, label: str, outcome: float, cue: str | None, *, now: datetime | None = None
    ) -> SessionCredit:
        """The user's reaction to the previous turn: credit `outcome` to what that turn recalled.
        Call before `session_turn` for the new prompt. No previous turn (the session's first
        prompt) or nothing recalled in it: nothing changes."""
        sid = self._session_id(session_id)
        with self.store.db.read():
            events = self.store.session_events(sid)
        if not any(e["kind"] == TURN for e in events):
            return SessionCredit(signal=label, outcome=outcome, memory_ids=[], note="first prompt of the session")
        turn = _since_last(events, TURN)
        if any(e["kind"] == OUTCOME and e["detail"].get("source") == "prompt" for e in turn):
            return SessionCredit(signal=label, outcome=outcome, memory_ids=[], note="turn already scored")
        return self._credit(sid, [e for e in turn if e["kind"] == RECALL], outcome, label, "prompt", cue, now)

    def session_response(self, session_id: str, response: str, *, now: datetime | None = None) -> dict[str, float]:
        """The assistant's answer for this turn: how closely it followed each memory recalled in
        the turn (lexical, no model), recorded so the reaction to this turn is credited by it, and
        the response-only link update (weights only, never valence)."""
        sid = self._session_id(session_id)
        with self.store.db.read():
            turn = _since_last(self.store.session_events(sid), TURN)
        recalls = [e for e in turn if e["kind"] == RECALL]
        ids = list(dict.fromkeys(m for e in recalls for m in e["memory_ids"]))
        if not ids or not (response or "").strip():
            return {}
        try:
            aligned = self.alignments(ids, response[: self.settings.max_response_chars])
        except MnemoError:  # every recalled memory was deleted meanwhile
            return {}
        for e in recalls:
            group = {m: aligned[m] for m in e["memory_ids"] if m in aligned}
            concepts = e["detail"].get("query_concepts") or None
            if group and concepts:
                self.feedback(list(group), None, None, concepts, alignments=group, source="hook:response", now=now)
        with self.store.db.write():
            self._session_event(sid, ALIGN, iso(now or self.clock()), memory_ids=list(aligned), detail={"alignment": aligned})
        return aligned

    def session_check(
        self, session_id: str, status: str, command: str, *, now: datetime | None = None
    ) -> SessionCredit | None:
        """A test/build/lint result. A failure counts against the memories recalled in this turn
        (once per turn); a pass after a failure counts for those recalled since the failure."""
        sid = self._session_id(session_id)
        s = self.settings
        with self.store.db.read():
            events = self.store.session_events(sid)
        stamp = iso(now or self.clock())
        credit: SessionCredit | None = None
        if status == "fail":
            turn = _since_last(events, TURN)
            already = {m for e in turn if e["kind"] == OUTCOME and e["detail"].get("source") == "check" for m in e["memory_ids"]}
            recalls = [e for e in turn if e["kind"] == RECALL]
            credit = self._credit(sid, recalls, s.check_fail_outcome, "check failed", "check", command, now, skip=already)
        else:
            open_failure = None
            for e in events:
                if e["kind"] == CHECK:
                    open_failure = e["seq"] if e["detail"].get("status") == "fail" else None
            if open_failure is not None:
                recalls = [e for e in events if e["kind"] == RECALL and e["seq"] > open_failure]
                credit = self._credit(sid, recalls, s.check_pass_outcome, "check passed after a failure", "check", command, now)
        with self.store.db.write():
            self._session_event(sid, CHECK, stamp, detail={"status": status, "command": command[:300]})
        return credit

    def _turn_alignment(self, sid: str, recalls: list[dict[str, Any]]) -> dict[str, float]:
        """The alignments the Stop hook recorded for the turn these recalls belong to."""
        if not recalls:
            return {}
        with self.store.db.read():
            later = self.store.session_events(sid, after_seq=recalls[0]["seq"])
        out: dict[str, float] = {}
        for e in later:
            if e["kind"] == TURN:
                break
            if e["kind"] == ALIGN:
                out = {k: float(v) for k, v in e["detail"].get("alignment", {}).items()}
        return out

    def _credit(
        self,
        sid: str,
        recalls: list[dict[str, Any]],
        outcome: float,
        label: str,
        source: str,
        cue: str | None,
        now: datetime | None,
        skip: set[str] | None = None,
    ) -> SessionCredit:
        # One report per memory per signal, through the read that recalled it first, so the
        # query->memory links learn for the question it was recalled for.
        first_read: dict[str, dict[str, Any]] = {}
        for e in recalls:
            for mid in e["memory_ids"]:
                if mid not in (skip or set()):
                    first_read.setdefault(mid, e)
        groups: dict[int, list[str]] = {}
        for mid, e in first_read.items():
            groups.setdefault(e["seq"], []).append(mid)
        by_seq = {e["seq"]: e for e in recalls}
        aligned = self._turn_alignment(sid, recalls)
        credited: list[str] = []
        for seq, ids in groups.items():
            e = by_seq[seq]
            concepts = e["detail"].get("query_concepts") or None
            weights = {m: aligned[m] for m in ids if m in aligned} or None
            try:
                result = self.feedback(
                    ids, outcome, e["read_id"], concepts, alignments=weights, source=f"hook:{source}", now=now
                )
            except InvalidInput:  # the read fell out of the bounded log: keep its concepts
                result = self.feedback(ids, outcome, None, concepts, alignments=weights, source=f"hook:{source}", now=now)
            except MnemoError:  # every memory of this group was deleted meanwhile
                continue
            credited += [u.id for u in result.updated]
        with self.store.db.write():
            self._session_event(
                sid,
                OUTCOME,
                iso(now or self.clock()),
                memory_ids=credited,
                detail={"source": source, "label": label, "outcome": outcome, "cue": (cue or "")[:200]},
            )
        return SessionCredit(signal=label, outcome=outcome, memory_ids=credited)
