"""Sessions: which memories a coding agent's session was shown, what it did after, and crediting
the memories it acted on with the outcomes its hooks observe (the user's reaction, test and build
results).

A turn starts at each prompt the user types; the agent's own messages (a background task's
notification, sent with the prompt_id of the turn it belongs to) start none. Memories injected by
the prompt hook, listed in the session's opening digest, or returned to the model's own
memory_read are *shown*; what the assistant did afterwards (its edits, the commands that change
something, its answer) says which of them it *followed* (core.attribution). An outcome credits
the followed memories only, each by how closely it was followed: a correct fix that was shown but
not tried takes nothing from the attempt that failed.

- A check's window is what changed since the previous run of the same check (or since the user
  last judged the work): a check before any change, or a repeated failure with nothing changed in
  between, is the starting point, not an outcome.
- A reaction judges the previous turn from its last failing check on (what that check refuted is
  judged already), with the turn's answer.

Silence is not an outcome: nothing here runs without a signal, and a command sent to the
background is no signal until its task notification says how it ended.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core import attribution, cases, lifecycle, reactions
from ..core.secrets import masked as redacted
from ..errors import MnemoError
from ..models import SessionCredit, SessionPrompt
from . import credit as crediting
from .attribution import CANDIDATES, Attribution
from .base import Part, ServiceContext, iso
from .capture import Capture
from .credit import Crediting
from .learning import Learning
from .session_log import (
    ACTIONS,
    ALIGN,
    BACKGROUND,
    CHECK,
    CLAIM,
    DIGEST,
    OUTCOME,
    RECALL,
    SHOWN,
    TURN,
    SessionLog,
    SessionUnit,
    since_last,
)

# SessionStart sources whose context no longer holds an earlier digest.
FRESH_CONTEXT = ("startup", "clear", "compact")
ASK_CHARS = 1000
Action = tuple[str, str, dict[str, Any]]  # (tool_use id, tool name, its input)


def _identity(detail: dict[str, Any]) -> str:
    return detail.get("identity") or cases.check_identity(detail.get("command", ""))


class Sessions(Part):
    def __init__(
        self,
        ctx: ServiceContext,
        *,
        log: SessionLog,
        learning: Learning,
        capture: Capture,
        attribution: Attribution,
    ):
        super().__init__(ctx)
        self.log, self.learning, self.capture, self.attribution = log, learning, capture, attribution
        self.crediting = Crediting(ctx, learning=learning)

    def _stamp(self, now: datetime | None) -> str:
        return iso(now or self.clock())

    # --- what the session was shown, and what it did --------------------------------------

    def session_claim(
        self, session_id: str, *, event: str, tool_use_id: str | None, now: datetime | None = None
    ) -> bool:
        """First come for this tool call's event? Claude Code runs a hook once per `if` filter
        that matches (`pytest && mypy` twice), in parallel: only the first counts it."""
        if not tool_use_id:
            return True
        with self.log.unit(session_id) as u:
            if any(
                e["kind"] == CLAIM
                and e["detail"].get("tool_use_id") == tool_use_id
                and e["detail"].get("event") == event
                for e in u.events
            ):
                return False
            u.add(CLAIM, self._stamp(now), detail={"tool_use_id": tool_use_id, "event": event})
        return True

    def session_recall(
        self,
        session_id: str,
        *,
        memory_ids: list[str],
        read_id: str | None = None,
        query_concepts: list[str] | None = None,
        source: str = "hook",
        now: datetime | None = None,
    ) -> list[str]:
        """Note that these memories were put in front of the model. Shown is not followed: they
        are candidates, credited only by what the assistant then does. -> the ids noted."""
        ids = list(dict.fromkeys(m for m in memory_ids if isinstance(m, str) and m))
        if not ids:
            return []
        with self.log.unit(session_id) as u:
            u.add(
                RECALL,
                self._stamp(now),
                memory_ids=ids,
                read_id=read_id,
                detail={"query_concepts": query_concepts or [], "source": source},
            )
        return ids

    def session_actions(self, session_id: str, *, actions: list[Action], now: datetime | None = None) -> int:
        """What the assistant did (its edits, the commands it ran), from the hooks and the
        transcript: each call once, weighed against the memories shown before it. -> the calls
        that were new."""
        with self.log.unit(session_id) as u:
            known = {i for e in u.events if e["kind"] == ACTIONS for i in e["detail"].get("ids", [])}
            new = [(i, tool, inp) for i, tool, inp in actions if i and i not in known and isinstance(inp, dict)]
            if not new:
                return 0
            pieces, texts, files, changes = [], [], [], 0
            for _, tool, inp in new:
                ev = self.attribution.evidence(tool, inp, inp.get("_file"))
                if ev is None:
                    continue
                changes += ev.change
                pieces.append(ev.tokens)
                texts.append((ev.added, ev.replaced))
                if ev.file:
                    files.append(ev.file)
            carried: set[str] = set()
            aligned = self._weigh(u, pieces, background=False, texts=texts, carried_out=carried)
            detail: dict[str, Any] = {
                "ids": [i for i, _, _ in new],
                "changes": changes,
                "files": list(dict.fromkeys(files))[:20],
                "alignment": {m: round(a, 4) for m, a in aligned.items() if a > 0},
            }
            if carried:
                detail["carried"] = sorted(carried)
            u.add(ACTIONS, self._stamp(now), memory_ids=[m for m, a in aligned.items() if a > 0], detail=detail)
            return len(new)

    def session_response(self, session_id: str, *, response: str, now: datetime | None = None) -> dict[str, float]:
        """The assistant's answer for this turn: how closely it followed each memory shown (a
        sentence that sets a memory aside does not count for it), recorded so the reaction to
        the turn is credited by it; the concept links of the turn's recalls move with it
        (weights only, never valence)."""
        if not (response or "").strip():
            return {}
        with self.log.unit(session_id) as u:
            text = response[: self.settings.max_response_chars]
            affirmed = self.attribution.answer_evidence(text)
            aligned = {m: a for m, a in self._weigh(u, [affirmed]).items() if a > 0}
            aside = self._weigh(u, [self.attribution.aside_evidence(text, affirmed)])
            vetoed = sorted(attribution.vetoed(aligned, aside, attribution.ASIDE_FLOOR))
            for e in (e for e in since_last(u.events, TURN) if e["kind"] == RECALL):
                group = {m: aligned.get(m, 0.0) for m in e["memory_ids"]}
                concepts = e["detail"].get("query_concepts") or None
                if group and concepts:
                    try:
                        self.learning.feedback_aligned(
                            list(group), alignments=group, query_concepts=concepts, source="hook:response", now=now
                        )
                    except MnemoError:  # deleted meanwhile
                        continue
            detail: dict[str, Any] = {"alignment": aligned}
            if vetoed:
                detail["set_aside"] = vetoed
            u.add(ALIGN, self._stamp(now), memory_ids=list(aligned), detail=detail)
        return aligned

    def _shown(self, events: list[dict[str, Any]]) -> list[str]:
        """The memories shown in the session so far, the latest last (bounded)."""
        ids = [m for e in events if e["kind"] in SHOWN for m in e["memory_ids"]]
        return list(dict.fromkeys(reversed(ids)))[:CANDIDATES]

    def _weigh(
        self,
        u: SessionUnit,
        evidence: list[set[str]],
        *,
        background: bool = True,
        texts: list[tuple[str, str]] = (),  # type: ignore[assignment]
        carried_out: set[str] | None = None,
    ) -> dict[str, float]:
        """How closely the evidence follows each memory shown so far; with `background`, the
        turn's ask is set aside (an answer echoes the problem it answers; an edit's own
        background, the text it replaced, is set aside already)."""
        turns = [e for e in u.events if e["kind"] == TURN]
        asked = (turns[-1]["detail"].get("ask") or "") if turns else ""
        ask = asked if background else None
        # Code the user pasted in the ask is no evidence of following a note that quotes it.
        texts = [(added, f"{before}\n{asked}") for added, before in texts]
        return self.attribution.follows(
            self._shown(u.events), evidence, self.attribution.background(ask), texts, carried_out
        )

    # --- the user's prompt ----------------------------------------------------------------

    def session_user_prompt(
        self, session_id: str, *, prompt: str, prompt_id: str | None = None, now: datetime | None = None
    ) -> SessionPrompt:
        """A prompt the user typed: their reaction to the previous turn is credited to what that
        turn followed, then a new turn starts. A prompt with the prompt_id of the current turn is
        not the user speaking (the agent's own messages within a turn): nothing happens."""
        with self.log.unit(session_id) as u:
            turns = [e for e in u.events if e["kind"] == TURN]
            if prompt_id and turns and turns[-1]["detail"].get("prompt_id") == prompt_id:
                return SessionPrompt(new_turn=False)
            reaction = reactions.classify(prompt)
            if reaction.label == reactions.UNKNOWN and turns and self._changed(since_last(u.events, TURN)):
                # Output pasted back after a change ("node: bad option: --experimental-...") says
                # the change failed as plainly as "still broken" does.
                pasted = cases.reported_error(prompt)
                reaction = reactions.Reaction(reactions.FAILED, pasted[:200]) if pasted else reaction
            credit = None
            ask, signature = redacted(prompt[:ASK_CHARS]), None
            if reaction.label != reactions.UNKNOWN:
                outcome = {
                    reactions.WORKED: self.settings.outcome_worked,
                    reactions.FAILED: self.settings.outcome_failed,
                    reactions.PARTIAL: self.settings.outcome_partial,
                }[reaction.label]
                credit = self._react(u, reaction.label, outcome, reaction.cue, now)
                self.capture.resolve_pending(
                    u.sid,
                    u.events,
                    reaction.label,
                    outcome,
                    "reaction",
                    now,
                    last_turn_only=True,
                    credited=set(credit.memory_ids),
                )
                if reaction.label != reactions.WORKED and turns and turns[-1]["detail"].get("ask"):
                    # "still failing": the problem goes on, and so do its ask and its error
                    failed = [
                        e["detail"].get("signature")
                        for e in since_last(u.events, TURN)
                        if e["kind"] == CHECK and e["detail"].get("status") == "fail" and e["detail"].get("signature")
                    ]
                    ask = turns[-1]["detail"]["ask"]
                    signature = turns[-1]["detail"].get("signature") or (failed[-1] if failed else None)
            self.session_turn(u.sid, prompt_id=prompt_id, ask=ask, signature=signature, now=now)
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
        """A new user prompt: what follows belongs to a new turn (`ask`: what it asks, redacted;
        the words attribution sets aside, and the turn's case while capture is on)."""
        detail: dict[str, Any] = {"prompt_id": prompt_id} if prompt_id else {}
        if ask:
            detail["ask"] = ask
            if signature:
                detail["signature"] = signature
        with self.log.unit(session_id) as u:
            u.add(TURN, self._stamp(now), detail=detail)

    def _react(
        self, u: SessionUnit, label: str, outcome: float, cue: str | None, now: datetime | None
    ) -> SessionCredit:
        if not any(e["kind"] == TURN for e in u.events):
            return SessionCredit(signal=label, outcome=outcome, memory_ids=[], note="first prompt of the session")
        turn = since_last(u.events, TURN)
        if any(e["kind"] == OUTCOME and e["detail"].get("source") == "prompt" for e in turn):
            return SessionCredit(signal=label, outcome=outcome, memory_ids=[], note="turn already scored")
        # What a failing check in the turn refuted is judged already: the reaction is about what
        # came after it, and the answer.
        failed = [e["seq"] for e in turn if e["kind"] == CHECK and e["detail"].get("status") == "fail"]
        start = failed[-1] if failed else 0
        # What was done says what was followed; the answer also talks of what was set aside
        # ("the empty __init__.py is harmless, I left it"). Only when nothing done followed any
        # note (advice alone, or a change that carries no words) does the answer decide.
        done = [e for e in turn if e["seq"] > start and e["kind"] == ACTIONS]
        aligned = crediting.aligned(done)
        if not any(aligned.values()):
            aligned = crediting.aligned([e for e in turn if e["kind"] == ALIGN])
        # A note the answer itself set aside ("the saved --no-cache tip doesn't apply") was not
        # followed, whatever the turn's edits share with it.
        aside = {m for e in turn if e["kind"] == ALIGN for m in e["detail"].get("set_aside", [])}
        aligned = {m: a for m, a in aligned.items() if m not in aside}
        return self.crediting.credit(u, aligned, outcome, label, "prompt", cue, now, crediting.carried(done))

    # --- checks -----------------------------------------------------------------------------

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
        narration: str = "",
        now: datetime | None = None,
    ) -> SessionCredit | None:
        """A test/build/lint result. It judges what changed since the previous run of the same
        check: a failure counts against the memories those changes followed, a pass after a
        failure for them; with nothing changed it is a starting point and credits nothing.
        `started_seq`: the check was started by that event (a background run): what changed
        after its start did not make its result. With capture on, the result also closes
        error -> fix cases (`signature` of a failure, `calls` of the transcript) and gives a
        pending case its outcome."""
        s = self.settings
        with self.log.unit(session_id) as u:
            identity = cases.check_identity(command)
            end = started_seq if started_seq is not None else u.events[-1]["seq"] + 1 if u.events else 1
            before = [e for e in u.events if e["seq"] < end]
            previous = [
                e
                for e in before
                if e["kind"] == CHECK and not e["detail"].get("capture_only") and _identity(e["detail"]) == identity
            ]
            start = self._window_start(before, previous, status)
            window = [e for e in before if e["seq"] > start and e["kind"] == ACTIONS]
            changed = self._changed(window)
            credit: SessionCredit | None = None
            if changed and status == "fail":
                credit = self.crediting.credit(
                    u, crediting.aligned(window), s.check_fail_outcome, "check failed", "check", command, now
                )
            elif changed and (
                (previous and previous[-1]["detail"].get("status") == "fail") or self._told_failed(before, start)
            ):
                credit = self.crediting.credit(
                    u,
                    crediting.aligned(window),
                    s.check_pass_outcome,
                    "check passed after a failure",
                    "check",
                    command,
                    now,
                    crediting.carried(window),
                )
            case = self.capture.check_cases(
                u.sid, u.events, status, command, signature, calls or [], tool_use_id, now, narration=narration
            )
            label, value = ("worked", s.outcome_worked) if status == "pass" else ("failed", s.outcome_failed)
            self.capture.resolve_pending(
                u.sid, u.events, label, value, "check", now, last_turn_only=False, case_id=case
            )
            detail: dict[str, Any] = {"status": status, "command": command[:300], "identity": identity}
            if not changed:
                detail["baseline"] = True
            if signature:
                detail["signature"] = signature
            if tool_use_id:
                detail["tool_use_id"] = tool_use_id
            if started_seq is not None:
                detail["background"] = started_seq
            u.add(CHECK, self._stamp(now), detail=detail)
        return credit

    @staticmethod
    def _window_start(before: list[dict[str, Any]], previous: list[dict[str, Any]], status: str) -> int:
        """Where a check's window opens: after the previous run of the same check, or the user's
        last verdict on the work, or (for a failure) another check's last failure: what that
        refuted is judged already, and blaming it again would count one attempt twice (a pass
        still looks back to this check's own failure: the fix may have come before a lint error
        was mended)."""
        judged = [e["seq"] for e in before if e["kind"] == OUTCOME and e["detail"].get("source") == "prompt"]
        failures = [
            e["seq"]
            for e in before
            if status == "fail"
            and e["kind"] == CHECK
            and not e["detail"].get("capture_only")
            and e["detail"].get("status") == "fail"
        ]
        return max([previous[-1]["seq"] if previous else 0, *judged, *failures])

    @staticmethod
    def _changed(events: list[dict[str, Any]]) -> bool:
        return any(e["kind"] == ACTIONS and int(e["detail"].get("changes", 0)) > 0 for e in events)

    @staticmethod
    def _told_failed(events: list[dict[str, Any]], start: int) -> bool:
        """Did the user say the work failed, or only partly worked ("index renders now, but the
        style is still missing"), as of `start` (their reaction opens a check's window): then a
        pass after changes is a pass after a failure, theirs."""
        return any(
            e["seq"] == start
            and e["kind"] == OUTCOME
            and e["detail"].get("source") == "prompt"
            and (e["detail"].get("outcome", 0) < 0 or e["detail"].get("label") == reactions.PARTIAL)
            for e in events
        )

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
        with self.log.unit(session_id) as u:
            u.add(
                BACKGROUND,
                self._stamp(now),
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
        """A background task ended (the task notification). When it is a check this session
        sent to the background, its exit status is the check's result, judged as of its start;
        a task that was stopped, or is not one of ours, says nothing."""
        with self.log.unit(session_id) as u:
            started = next(
                (
                    e
                    for e in reversed(u.events)
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
            if any(e["kind"] == CHECK and e["detail"].get("background") == started["seq"] for e in u.events):
                return None  # this task's result was taken already
            return self.session_check(
                u.sid,
                status=outcome,
                command=started["detail"]["command"],
                signature=signature,
                tool_use_id=started["detail"].get("tool_use_id"),
                started_seq=started["seq"],
                now=now,
            )

    # --- the start of a session -----------------------------------------------------------

    def session_start(
        self, session_id: str, *, source: str | None, limit: int, now: datetime | None = None
    ) -> list[dict] | None:
        """What a session should start with: the most useful memories in scope (possibly none),
        or None when its context still holds the digest given earlier (a resumed session).
        Never a memory whose learned signal is negative: "most useful" is a promise."""
        fresh = (source or "startup") in FRESH_CONTEXT
        with self.log.unit(session_id) as u:
            if not fresh and any(e["kind"] == DIGEST for e in u.events):
                return None
            top = (
                self.store.top_memories(
                    self._read_scope(None), limit, valence_weight=lifecycle.DIGEST_VALENCE_WEIGHT, min_valence=0.0
                )
                if limit > 0
                else []
            )
            useful = [
                m
                for m in top
                if lifecycle.worth_a_digest(
                    m["tier"], m["quality"], m["valence"], float(m["metadata"].get("rating_sum", 0.0))
                )
            ]
            u.add(DIGEST, self._stamp(now), memory_ids=[m["id"] for m in useful], detail={"source": source})
        return useful
