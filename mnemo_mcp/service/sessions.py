"""Sessions: which memories a Claude Code session saw in each turn, and crediting them with the
outcomes its hooks observe (the user's reaction, test and build results).

A turn starts at each prompt the user types; Claude Code's own messages (a background task's
notification, sent with the prompt_id of the turn it belongs to) start none. Memories injected by
the prompt hook, or returned to the model's own memory_read at or above the injection floor,
belong to the turn they were recalled in. Silence is not an outcome: nothing here runs without a
signal, and a command sent to the background is no signal until its task notification says how
it ended.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core import cases, lifecycle, reactions
from ..errors import InvalidInput, MnemoError
from ..models import SessionCredit, SessionPrompt
from .base import Part, ServiceContext, iso
from .capture import Capture, _redacted
from .learning import Learning
from .session_log import SessionLog, session_id_of

TURN, RECALL, CHECK, OUTCOME, ALIGN = "turn", "recall", "check", "outcome", "alignment"
BACKGROUND, DIGEST, CLAIM = "background", "digest", "claim"
# SessionStart sources whose context no longer holds an earlier digest.
FRESH_CONTEXT = ("startup", "clear", "compact")
ASK_CHARS = 1000


def _since_last(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    for i in range(len(events) - 1, -1, -1):
        if events[i]["kind"] == kind:
            return events[i + 1 :]
    return events


def _turn_of(events: list[dict[str, Any]], seq: int) -> list[dict[str, Any]]:
    """The events of the turn that the event `seq` belongs to."""
    start = 0
    for i, e in enumerate(events):
        if e["seq"] > seq:
            break
        if e["kind"] == TURN:
            start = i + 1
    out = []
    for e in events[start:]:
        if e["kind"] == TURN:
            break
        out.append(e)
    return out


class Sessions(Part):
    def __init__(self, ctx: ServiceContext, *, log: SessionLog, learning: Learning, capture: Capture):
        super().__init__(ctx)
        self.log, self.learning, self.capture = log, learning, capture

    def session_claim(
        self, session_id: str, *, event: str, tool_use_id: str | None, now: datetime | None = None
    ) -> bool:
        """First come for this tool call's event? Claude Code runs a hook once per `if` filter
        that matches (`pytest && mypy` twice), in parallel: only the first counts it."""
        sid = session_id_of(session_id)
        if not tool_use_id:
            return True
        with self.store.db.write():
            if any(
                e["kind"] == CLAIM
                and e["detail"].get("tool_use_id") == tool_use_id
                and e["detail"].get("event") == event
                for e in self.store.session_events(sid)
            ):
                return False
            self.log.add(sid, CLAIM, iso(now or self.clock()), detail={"tool_use_id": tool_use_id, "event": event})
        return True

    def session_recall(
        self,
        session_id: str,
        *,
        memory_ids: list[str],
        relevance: dict[str, float] | None = None,
        read_id: str | None = None,
        query_concepts: list[str] | None = None,
        source: str = "hook",
        now: datetime | None = None,
    ) -> list[str]:
        """Note that these memories were put in front of the model in the current turn. With
        `relevance` (a read's own figures), those below the injection floor are left out: a
        memory the model was shown at relevance 0.005 did not guide the turn and takes no blame.
        -> the ids noted."""
        sid = session_id_of(session_id)
        floor = self.settings.inject_min_relevance
        ids = [m for m in dict.fromkeys(memory_ids) if relevance is None or relevance.get(m, 1.0) >= floor]
        if not ids:
            return []
        with self.store.db.write():
            self.log.add(
                sid,
                RECALL,
                iso(now or self.clock()),
                memory_ids=ids,
                read_id=read_id,
                detail={"query_concepts": query_concepts or [], "source": source},
            )
        return ids

    def session_user_prompt(
        self, session_id: str, *, prompt: str, prompt_id: str | None = None, now: datetime | None = None
    ) -> SessionPrompt:
        """A prompt the user typed: their reaction to the previous turn is credited to what that
        turn recalled, then a new turn starts. A prompt with the prompt_id of the current turn is
        not the user speaking (Claude Code's own messages within a turn): nothing happens."""
        sid = session_id_of(session_id)
        events = self.log.events(sid)
        if prompt_id:
            turns = [e for e in events if e["kind"] == TURN]
            if turns and turns[-1]["detail"].get("prompt_id") == prompt_id:
                return SessionPrompt(new_turn=False)
        reaction = reactions.classify(prompt)
        credit = None
        ask, signature = _redacted(prompt[:ASK_CHARS]), None
        if reaction.label != reactions.UNKNOWN:
            outcome = {
                reactions.WORKED: self.settings.outcome_worked,
                reactions.FAILED: self.settings.outcome_failed,
                reactions.PARTIAL: self.settings.outcome_partial,
            }[reaction.label]
            credit = self._react(sid, events, reaction.label, outcome, reaction.cue, now)
            self.capture.resolve_pending(
                sid,
                events,
                reaction.label,
                outcome,
                "reaction",
                now,
                last_turn_only=True,
                credited=set(credit.memory_ids),
            )
            turns = [e for e in events if e["kind"] == TURN]
            if reaction.label != reactions.WORKED and turns and turns[-1]["detail"].get("ask"):
                # "still failing": the problem goes on, and so do its ask and its error
                failed = [
                    e["detail"].get("signature")
                    for e in _since_last(events, TURN)
                    if e["kind"] == CHECK and e["detail"].get("status") == "fail" and e["detail"].get("signature")
                ]
                ask = turns[-1]["detail"]["ask"]
                signature = turns[-1]["detail"].get("signature") or (failed[-1] if failed else None)
        self.session_turn(sid, prompt_id=prompt_id, ask=ask, signature=signature, now=now)
        return SessionPrompt(new_turn=True, credit=credit)

    def session_turn(
        self,
        session_id: str,
        *,
        prompt_id: str | None = None,
        ask: str | None = None,
        signature: str | None = None,
        now: datetime | None = None,
    ) -> None:
        """A new user prompt: what follows belongs to a new turn (`ask`: what it asks, kept for
        the turn's case while capture is on)."""
        sid = session_id_of(session_id)
        detail: dict[str, Any] = {"prompt_id": prompt_id} if prompt_id else {}
        if ask and self.settings.capture != "off":
            detail["ask"] = ask
            if signature:
                detail["signature"] = signature
        with self.store.db.write():
            self.log.add(sid, TURN, iso(now or self.clock()), detail=detail)

    def session_react(
        self, session_id: str, *, label: str, outcome: float, cue: str | None, now: datetime | None = None
    ) -> SessionCredit:
        """The user's reaction to the previous turn: credit `outcome` to what that turn recalled.
        Call before `session_turn` for the new prompt. No previous turn (the session's first
        prompt) or nothing recalled in it: nothing changes."""
        sid = session_id_of(session_id)
        return self._react(sid, self.log.events(sid), label, outcome, cue, now)

    def _react(
        self, sid: str, events: list[dict[str, Any]], label: str, outcome: float, cue: str | None, now: datetime | None
    ) -> SessionCredit:
        if not any(e["kind"] == TURN for e in events):
            return SessionCredit(signal=label, outcome=outcome, memory_ids=[], note="first prompt of the session")
        turn = _since_last(events, TURN)
        if any(e["kind"] == OUTCOME and e["detail"].get("source") == "prompt" for e in turn):
            return SessionCredit(signal=label, outcome=outcome, memory_ids=[], note="turn already scored")
        return self._credit(sid, [e for e in turn if e["kind"] == RECALL], outcome, label, "prompt", cue, now)

    def session_response(
        self, session_id: str, *, response: str, semantic: bool = False, now: datetime | None = None
    ) -> dict[str, float]:
        """The assistant's answer for this turn: how closely it followed each memory recalled in
        the turn, recorded so the reaction to this turn is credited by it, and the response-only
        link update (weights only, never valence). Lexical unless `semantic` (a process with the
        model loaded: the MCP server answering a hook)."""
        sid = session_id_of(session_id)
        turn = _since_last(self.log.events(sid), TURN)
        recalls = [e for e in turn if e["kind"] == RECALL]
        ids = list(dict.fromkeys(m for e in recalls for m in e["memory_ids"]))
        if not ids or not (response or "").strip():
            return {}
        try:
            aligned = self.learning.align(ids, response[: self.settings.max_response_chars], semantic=semantic)
        except MnemoError:  # every recalled memory was deleted meanwhile
            return {}
        for e in recalls:
            group = {m: aligned[m] for m in e["memory_ids"] if m in aligned}
            concepts = e["detail"].get("query_concepts") or None
            if group and concepts:
                self.learning.feedback_aligned(
                    list(group), alignments=group, query_concepts=concepts, source="hook:response", now=now
                )
        with self.store.db.write():
            self.log.add(sid, ALIGN, iso(now or self.clock()), memory_ids=list(aligned), detail={"alignment": aligned})
        return aligned

    def session_check(
        self,
        session_id: str,
        *,
        status: str,
        command: str,
        signature: str | None = None,
        tool_use_id: str | None = None,
        calls: list[tuple[str, str, str]] | None = None,
        started_seq: int | None = None,
        now: datetime | None = None,
    ) -> SessionCredit | None:
        """A test/build/lint result. A failure counts against the memories recalled in the turn
        the check ran in (once per turn); a pass after a failure counts for those recalled since
        the failure. `started_seq`: the check was started by that event (a background run) and
        belongs to its turn, however late its result comes. With capture on, the result also
        closes error -> fix cases (`signature` of a failure, `calls` of the transcript) and gives
        a pending case its outcome."""
        sid = session_id_of(session_id)
        s = self.settings
        events = self.log.events(sid)
        stamp = iso(now or self.clock())
        credit: SessionCredit | None = None
        if status == "fail":
            turn = _since_last(events, TURN) if started_seq is None else _turn_of(events, started_seq)
            already = {
                m
                for e in turn
                if e["kind"] == OUTCOME and e["detail"].get("source") == "check"
                for m in e["memory_ids"]
            }
            recalls = [e for e in turn if e["kind"] == RECALL]
            credit = self._credit(
                sid, recalls, s.check_fail_outcome, "check failed", "check", command, now, skip=already
            )
        else:
            open_failure = None
            for e in events:
                if e["kind"] == CHECK and not e["detail"].get("capture_only"):
                    open_failure = e["seq"] if e["detail"].get("status") == "fail" else None
            if open_failure is not None:
                recalls = [e for e in events if e["kind"] == RECALL and e["seq"] > open_failure]
                credit = self._credit(
                    sid, recalls, s.check_pass_outcome, "check passed after a failure", "check", command, now
                )
        case = self.capture.check_cases(sid, events, status, command, signature, calls or [], tool_use_id, now)
        label, value = ("worked", s.outcome_worked) if status == "pass" else ("failed", s.outcome_failed)
        self.capture.resolve_pending(sid, events, label, value, "check", now, last_turn_only=False, case_id=case)
        detail: dict[str, Any] = {"status": status, "command": command[:300], "identity": cases.check_identity(command)}
        if signature:
            detail["signature"] = signature
        if tool_use_id:
            detail["tool_use_id"] = tool_use_id
        if started_seq is not None:
            detail["background"] = started_seq
        with self.store.db.write():
            self.log.add(sid, CHECK, stamp, detail=detail)
        return credit

    def session_background(
        self,
        session_id: str,
        *,
        command: str,
        task_id: str | None,
        tool_use_id: str | None,
        now: datetime | None = None,
    ) -> None:
        """A check went to the background: no result yet (its PostToolUse came at once, with
        empty output); the task notification will tell."""
        sid = session_id_of(session_id)
        with self.store.db.write():
            self.log.add(
                sid,
                BACKGROUND,
                iso(now or self.clock()),
                detail={"task_id": task_id, "tool_use_id": tool_use_id, "command": command[:300]},
            )

    def session_task_done(
        self,
        session_id: str,
        *,
        task_id: str | None,
        tool_use_id: str | None,
        outcome: str | None,
        signature: str | None = None,
        now: datetime | None = None,
    ) -> SessionCredit | None:
        """A background task ended (Claude Code's task notification). When it is a check this
        session sent to the background, its exit status is the check's result, in the turn it was
        started in; a task that was stopped, or is not one of ours, says nothing."""
        sid = session_id_of(session_id)
        events = self.log.events(sid)
        started = next(
            (
                e
                for e in reversed(events)
                if e["kind"] == BACKGROUND
                and (
                    (task_id and e["detail"].get("task_id") == task_id)
                    or (tool_use_id and e["detail"].get("tool_use_id") == tool_use_id)
                )
            ),
            None,
        )
        if started is None or outcome not in ("pass", "fail"):
            return None
        if any(e["kind"] == CHECK and e["detail"].get("background") == started["seq"] for e in events):
            return None  # this task's result was taken already
        return self.session_check(
            sid,
            status=outcome,
            command=started["detail"]["command"],
            signature=signature,
            tool_use_id=started["detail"].get("tool_use_id"),
            started_seq=started["seq"],
            now=now,
        )

    def session_start(
        self, session_id: str, *, source: str | None, limit: int, now: datetime | None = None
    ) -> list[dict] | None:
        """What a session should start with: the most useful memories in scope (possibly none),
        or None when its context still holds the digest given earlier (a resumed session)."""
        sid = session_id_of(session_id)
        fresh = (source or "startup") in FRESH_CONTEXT
        if not fresh and any(e["kind"] == DIGEST for e in self.log.events(sid)):
            return None
        with self.store.db.read():
            top = (
                self.store.top_memories(self._read_scope(None), limit, valence_weight=lifecycle.DIGEST_VALENCE_WEIGHT)
                if limit > 0
                else []
            )
        useful = [m for m in top if lifecycle.worth_a_digest(m["tier"], m["quality"], m["valence"])]
        with self.store.db.write():
            self.log.add(
                sid, DIGEST, iso(now or self.clock()), memory_ids=[m["id"] for m in useful], detail={"source": source}
            )
        return useful

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
            how = dict(outcome=outcome, query_concepts=concepts, source=f"hook:{source}", now=now)
            if weights:
                how["alignments"] = weights
            credit = self.learning.feedback_aligned if weights else self.learning.feedback
            try:
                result = credit(ids, read_id=e["read_id"], **how)
            except InvalidInput:  # the read fell out of the bounded log: keep its concepts
                result = credit(ids, **how)
            except MnemoError:  # every memory of this group was deleted meanwhile
                continue
            credited += [u.id for u in result.updated]
        with self.store.db.write():
            self.log.add(
                sid,
                OUTCOME,
                iso(now or self.clock()),
                memory_ids=credited,
                detail={"source": source, "label": label, "outcome": outcome, "cue": (cue or "")[:200]},
            )
        return SessionCredit(signal=label, outcome=outcome, memory_ids=credited)
