"""Capture: cases learned from what a session shows, with no model and no LLM call.

- At the end of a turn (Stop) the turn becomes a *pending case*: the user's ask, the actionable
  part of the answer (verbatim), the commands it ran and the files it edited, the error signature
  of a check that failed. A pending case is a session event, not a memory: no read returns it.
- An outcome makes it a memory (`memory_type` "case", `source` "capture"): the user's reaction
  to the turn (worked / failed / partial), or the first check after the turn's changes. The
  outcome goes through the ordinary delta rule, with context links from the ask's concepts.
  Without an outcome it expires after `capture_pending_turns` turns (or hours): silence is not an
  outcome, and nothing is stored.
- Checks make *error -> fix* cases: a check that failed and later passes, with changes in
  between, gives "`<check>` failed with `<signature>`; fixed by <changes>" (+1); changes after
  which it still failed give a failed attempt (-1).
- The same case captured again (same kind, problem and changes) is one memory whose outcomes add
  up. Captured text passes the secrets guard in redact mode, so a case is not lost to one token.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core import cases, checks
from ..core.secrets import masked as redacted  # text kept in session events and cases
from ..core.text import extract_concepts
from .base import Part, ServiceContext, iso
from .learning import Learning
from .session_log import (
    ACTIONS,
    CASE,
    CHECK,
    OUTCOME,
    PENDING,
    TURN,
    Call,
    SessionLog,
    in_unit,
    session_id_of,
    since_last,
)

if TYPE_CHECKING:
    from .writing import Writing

ASK_CHARS = 600
GIST_CHARS = 160  # of the question, in a case: the fix leads, the question only identifies it
CASES_SCANNED = 2000  # newest cases compared with a failure's signature


def _calls_between(calls: list[Call], after_id: str, until_id: str | None) -> list[Call]:
    """The calls after `after_id` and before `until_id` (the end when not found)."""
    ids = [c[0] for c in calls]
    if after_id not in ids:
        return []
    start = ids.index(after_id) + 1
    end = ids.index(until_id, start) if until_id in ids[start:] else len(calls)
    return [c for c in calls[start:end] if c[1] != "prompt"]


def _calls_since_prompts(calls: list[Call], prompts: int, until_id: str | None) -> list[Call]:
    """The calls since the `prompts`-th last user prompt of the transcript, before `until_id`."""
    ids = [c[0] for c in calls]
    end = ids.index(until_id) if until_id and until_id in ids else len(calls)
    marks = [i for i, c in enumerate(calls[:end]) if c[1] == "prompt"]
    start = marks[-prompts] + 1 if len(marks) >= prompts else 0
    return [c for c in calls[start:end] if c[1] != "prompt"]


def _last_failure(events: list[dict[str, Any]], identity: str) -> dict[str, Any] | None:
    """The failure that the newest run of this check left open (None once a run passed)."""
    failure = None
    for e in events:
        if (
            e["kind"] == CHECK
            and e["detail"].get("identity", cases.check_identity(e["detail"].get("command", ""))) == identity
        ):
            failure = e if e["detail"].get("status") == "fail" else None
    return failure


def _episode_ask(events: list[dict[str, Any]], identity: str) -> str:
    """The ask of the turn where this check's current run of failures began: the problem, not
    the user's reaction to an attempt that failed ("upgraded it, the output is identical")."""
    start = None
    for e in events:
        if (
            e["kind"] == CHECK
            and e["detail"].get("identity", cases.check_identity(e["detail"].get("command", ""))) == identity
        ):
            if e["detail"].get("status") == "fail":
                start = e["seq"] if start is None else start
            else:
                start = None
    ask = ""
    for e in events:
        if start is not None and e["seq"] > start:
            break
        if e["kind"] == TURN:
            ask = e["detail"].get("ask", "") or ask
    return ask


def gist(ask: str, limit: int = GIST_CHARS) -> str:
    """The question in short: its first line or sentence (a pasted log follows it)."""
    flat = " ".join((ask or "").split())
    first = re.split(r"(?<=[.!?])\s|\n", (ask or "").strip(), maxsplit=1)[0]
    text = " ".join(first.split()) or flat
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _window_since(
    events: list[dict[str, Any]], failure: dict[str, Any], calls: list[Call], tool_use_id: str | None
) -> tuple[int, list[Call]]:
    """Where the changes this run of the check judges begin (an event seq), and the calls since:
    since the failure; when the user said it still failed after it, since the next turn (the
    changes before that reaction already have their outcome)."""
    start_seq, after_id = failure["seq"], failure["detail"].get("tool_use_id")
    for e in events:
        if e["seq"] > failure["seq"] and e["kind"] == OUTCOME and e["detail"].get("label") == "failed":
            turn_starts = [t["seq"] for t in events if t["kind"] == TURN and t["seq"] > e["seq"]]
            start_seq, after_id = (turn_starts[0] if turn_starts else e["seq"]), None
    if after_id:
        return start_seq, _calls_between(calls, after_id, tool_use_id)
    turns_since = sum(1 for e in events if e["kind"] == TURN and e["seq"] >= start_seq)
    return start_seq, _calls_since_prompts(calls, max(turns_since, 1), tool_use_id)


class Capture(Part):
    def __init__(self, ctx: ServiceContext, *, log: SessionLog, learning: Learning, writing: Writing):
        super().__init__(ctx)
        self.log, self.learning, self.writing = log, learning, writing

    def _capturing(self, what: str = "outcomes") -> bool:
        mode = self.settings.capture
        return mode != "off" and (what == "fixes" or mode == "outcomes")

    # --- the turn's pending case ------------------------------------------------------------

    @in_unit
    def session_failure(
        self,
        session_id: str,
        *,
        command: str,
        signature: str,
        tool_use_id: str | None = None,
        calls: list[Call] | None = None,
        now: datetime | None = None,
    ) -> str | None:
        """A failing command that is no check: nothing recalled is blamed (it is no test of
        them), but a second failure after changes is a failed attempt, and a success of it later
        in the session (seen at Stop) closes it as a fix. -> the attempt case, if one was made."""
        sid = session_id_of(session_id)
        if not self._capturing("fixes"):
            return None
        events = self.log.events(sid)
        identity = cases.command_identity(command)
        case = self.check_cases(
            sid, events, "fail", command, signature, calls or [], tool_use_id, now, identity=identity
        )
        detail = {
            "status": "fail",
            "command": command,
            "identity": identity,
            "signature": signature,
            "tool_use_id": tool_use_id,
            "capture_only": True,
        }
        self.log.add(sid, CHECK, iso(now or self.clock()), detail=detail)
        return case

    @in_unit
    def session_stop(
        self,
        session_id: str,
        *,
        answer: str,
        calls: list[Call],
        results: dict[str, bool] | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any] | None:
        """The end of a turn. A command that failed (no check: no hook saw it pass) and ran
        again successfully after changes becomes a fix case; then what the turn tried becomes a
        pending case (None: nothing to keep). `calls`: the transcript's (tool_use id, tool,
        command or file), with prompt marks; `results`: whether each call succeeded."""
        sid = session_id_of(session_id)
        if not self._capturing("fixes"):
            return None
        self._close_failures(sid, calls, results or {}, now)
        if not self._capturing("outcomes"):
            return None
        events = self.log.events(sid)
        turns = [e for e in events if e["kind"] == TURN]
        if not turns or not turns[-1]["detail"].get("ask"):
            return None
        turn = since_last(events, TURN)
        turn_calls = _calls_since_prompts(calls, 1, None)
        made = [e for e in turn if e["kind"] == CASE and e["detail"].get("origin") == "check"]
        detail: dict[str, Any]
        if made:  # a check already judged what this turn did: the reaction adds to that case
            detail = {"case_id": made[-1]["memory_ids"][0]}
        else:
            s = self.settings
            advice = cases.actionable(answer or "", limit=s.capture_max_chars // 2)
            files = self._turn_files(turn, turn_calls)
            commands = self._changes(turn_calls)
            if not (advice or files or commands):
                return None
            failed = [e for e in turn if e["kind"] == CHECK and e["detail"].get("status") == "fail"]
            signature = next(
                (e["detail"].get("signature") for e in reversed(failed) if e["detail"].get("signature")), None
            )
            detail = {
                "ask": turns[-1]["detail"]["ask"],
                "explanation": redacted(cases.explanation(answer or "")),
                "advice": redacted(advice),
                "files": files[:20],
                "commands": [redacted(c) for c in commands[:20]],
                "signature": signature or turns[-1]["detail"].get("signature"),
                "check": failed[-1]["detail"].get("command") if failed else None,
            }
        self.log.add(sid, PENDING, iso(now or self.clock()), detail=detail)
        return detail

    def _close_failures(self, sid: str, calls: list[Call], results: dict[str, bool], now: datetime | None) -> None:
        """Failures of commands no hook sees pass: a later successful run in the transcript
        closes each, as a fix when something changed in between."""
        events = self.log.events(sid)
        last: dict[str, dict[str, Any]] = {}
        for e in events:
            if e["kind"] == CHECK:
                last[e["detail"].get("identity", "")] = e
        for identity, e in last.items():
            d = e["detail"]
            if not (d.get("capture_only") and d.get("status") == "fail" and d.get("tool_use_id")):
                continue
            later = _calls_between(calls, d["tool_use_id"], None)
            passed = next(
                (c for c in later if c[1] == "Bash" and results.get(c[0]) and cases.command_identity(c[2]) == identity),
                None,
            )
            if passed is None:
                continue
            self.check_cases(sid, events, "pass", d["command"], None, calls, passed[0], now, identity=identity)
            self.log.add(
                sid,
                CHECK,
                iso(now or self.clock()),
                detail={
                    "status": "pass",
                    "command": d["command"],
                    "identity": identity,
                    "tool_use_id": passed[0],
                    "capture_only": True,
                },
            )
            events = self.log.events(sid)

    def _turn_files(self, turn: list[dict[str, Any]], calls: list[Call]) -> list[str]:
        files = [f for e in turn if e["kind"] == ACTIONS for f in e["detail"].get("files", [])]
        files += [what for _, name, what in calls if name in checks.EDIT_TOOLS]
        return list(dict.fromkeys(files))

    def _changes(self, calls: list[Call]) -> list[str]:
        """The commands among `calls` that may have changed something (checks and looks excluded)."""
        patterns = (*checks.DEFAULT_CHECKS, *self.settings.extra_check_commands)
        out = []
        for _, name, what in calls:
            if name == "Bash" and cases.is_change(what) and checks.check_kind(what, patterns) is None:
                out.append(" ".join(what.split())[:300])
        return list(dict.fromkeys(out))

    def _open_pending(
        self, events: list[dict[str, Any]], now: datetime, *, last_turn_only: bool
    ) -> dict[str, Any] | None:
        """The newest pending case still waiting for its outcome (not resolved, not expired)."""
        s = self.settings
        resolved = {e["detail"].get("pending") for e in events if e["kind"] == CASE}
        turns_after = 0
        for e in reversed(events):
            if e["kind"] == TURN:
                turns_after += 1
                if last_turn_only and turns_after > 1:
                    return None
            if e["kind"] != PENDING:
                continue
            if e["seq"] in resolved or turns_after > s.capture_pending_turns:
                return None
            if datetime.fromisoformat(e["created_at"]) < now - timedelta(hours=s.capture_pending_hours):
                return None
            return e
        return None

    def resolve_pending(
        self,
        sid: str,
        events: list[dict[str, Any]],
        label: str,
        value: float,
        via: str,
        now: datetime | None,
        *,
        last_turn_only: bool,
        case_id: str | None = None,
        credited: set[str] | None = None,
    ) -> str | None:
        """Give the open pending case this outcome: it becomes (or adds to) a case memory.
        `case_id`: the check that decided it also made that case, which already holds the
        outcome: the pending case is settled by it, not counted twice; nor is a case that the
        same signal `credited` already (the model recalled it this turn)."""
        if not self._capturing("outcomes"):
            return None
        when = now or self.clock()
        pending = self._open_pending(events, when, last_turn_only=last_turn_only)
        if pending is None:
            return None
        d = pending["detail"]
        if via == "check" and not d.get("case_id") and not (d.get("files") or d.get("commands")):
            return None  # a check says nothing of advice that changed nothing
        if case_id:
            mid: str | None = case_id
        elif d.get("case_id") in (credited or set()):
            mid = d["case_id"]
        elif d.get("case_id"):
            mid = self._credit_case(d["case_id"], label, value, d.get("ask") or "", via, when)
        else:
            problem = d.get("signature") or " ".join(sorted(extract_concepts(d["ask"])[:8]))
            done = cases.fingerprint(d.get("files", []), d.get("commands", []), d.get("advice", ""))
            mid = self._case(
                sid,
                kind="advice",
                content=self._advice_text(d, label),
                key=cases.case_key("advice", problem, done),
                meta={"signature": d.get("signature"), "check": d.get("check"), "ask": d["ask"][:ASK_CHARS]},
                label=label,
                value=value,
                ask=d["ask"],
                via=via,
                now=when,
            )
        self.log.add(
            sid,
            CASE,
            iso(when),
            memory_ids=[mid] if mid else [],
            detail={"pending": pending["seq"], "outcome": label, "origin": via},
        )
        return mid

    def _advice_text(self, d: dict[str, Any], label: str) -> str:
        """A case as the model will read it: what was done and why first (the part that must
        survive a budget), then the error it was for, then the question in short."""
        lead = {cases.WORKED: "Fix", cases.FAILED: "Tried (did not work)"}.get(label, "Tried (helped partly)")
        advice, why = d.get("advice") or "", d.get("explanation") or ""
        why = " ".join(x for x in re.split(r"(?<=[.!?])\s+", why) if x and x not in advice)
        said = " ".join(p for p in (why, advice) if p)
        changed = cases.describe_changes(d.get("files", []), [c for c in d.get("commands", []) if c not in said])
        lines = [f"{lead}: {said or changed}"]
        if said and changed:
            lines.append(f"Done: {changed}")
        if d.get("signature"):
            lines.append(f"Error: {d['signature']}")
        lines.append(f"Asked: {gist(d['ask'])}")
        return "\n".join(lines)

    # --- error -> fix cases from checks -----------------------------------------------------------

    def check_cases(
        self,
        sid: str,
        events: list[dict[str, Any]],
        status: str,
        check: str,
        signature: str | None,
        calls: list[Call],
        tool_use_id: str | None,
        now: datetime | None,
        *,
        identity: str | None = None,
        narration: str = "",
    ) -> str | None:
        """A check's result closes the window opened by the last failure of the same check: a
        pass after changes makes a fix case, a failure after changes a failed attempt.
        `narration`: what the assistant said while it worked (its reason for the change)."""
        if not self._capturing("fixes"):
            return None
        identity = identity or cases.check_identity(check)
        failure = _last_failure(events, identity)
        if failure is None:
            return None
        start_seq, window = _window_since(events, failure, calls, tool_use_id)
        files = [
            f for e in events if e["kind"] == ACTIONS and e["seq"] > start_seq for f in e["detail"].get("files", [])
        ]
        files = list(dict.fromkeys(files + [w for _, name, w in window if name != "Bash"]))
        commands = self._changes(window)
        if not files and not commands:
            return None  # nothing changed: a flaky check, not a fix
        old_sig = failure["detail"].get("signature") or "an error"
        changed = cases.describe_changes(files, commands)
        ask = _episode_ask(events, identity)
        why = redacted(cases.explanation(narration)) if narration else ""
        kind, label, value, text = self._check_verdict(status, check, old_sig, signature, changed, why)
        if ask:
            text += f"\nAsked: {gist(ask)}"
        mid = self._case(
            sid,
            kind=kind,
            content=text,
            key=cases.case_key(
                kind, failure["detail"].get("signature") or identity, cases.fingerprint(files, commands)
            ),
            meta={"signature": failure["detail"].get("signature"), "check": check, "ask": ask[:ASK_CHARS]},
            label=label,
            value=value,
            ask=ask + " " + (failure["detail"].get("signature") or ""),
            via="check",
            now=now or self.clock(),
        )
        if mid:
            self.log.add(
                sid,
                CASE,
                iso(now or self.clock()),
                memory_ids=[mid],
                detail={"origin": "check", "kind": kind, "outcome": label},
            )
        return mid

    def _check_verdict(
        self, status: str, check: str, old_sig: str, signature: str | None, changed: str, why: str = ""
    ) -> tuple[str, str, float, str]:
        """-> (kind, outcome label, outcome value, text) of the case a check's run makes: what
        was done (and why) first, then the failure it was for."""
        if status == "pass":
            text = f"Fix: {changed}." + (f" {why}" if why else "") + f"\nFixed: `{check}` failing with `{old_sig}`"
            return "fix", cases.WORKED, self.settings.outcome_worked, text
        still = f" with `{signature}`" if signature and signature != old_sig else ""
        text = (
            f"Tried (did not work): {changed}; `{check}` still failed{still}.\nFor: `{check}` failing with `{old_sig}`"
        )
        return "attempt", cases.FAILED, self.settings.outcome_failed, text

    # --- storing cases ------------------------------------------------------------------------

    def _case(
        self,
        sid: str,
        *,
        kind: str,
        content: str,
        key: str,
        meta: dict[str, Any],
        label: str,
        value: float,
        ask: str,
        via: str,
        now: datetime,
    ) -> str | None:
        """Store (or add to) the case memory under `key` and apply the outcome. -> its id."""
        s = self.settings
        text = content if len(content) <= s.capture_max_chars else content[: s.capture_max_chars - 1] + "…"
        with self.store.db.read():
            existing = self.store.case_by_key(key)
        if existing is not None:
            return self._credit_case(existing["id"], label, value, ask, via, now)
        case = {
            "key": key,
            "kind": kind,
            "session": sid,
            "via": via,
            "worked": 0,
            "failed": 0,
            "partial": 0,
            **{k: v for k, v in meta.items() if v},
        }
        result = self.writing.write_many(
            [
                {
                    "content": text,
                    "tags": ["case", kind],
                    "memory_type": "case",
                    "metadata": {"case": case},
                    "source": "capture",
                    "allow_duplicate": True,
                    "_secrets": "redact",
                    "_by": "capture",
                    "_origin": {"session": sid, "tool": f"{s.client or 'claude-code'} hooks", "via": via},
                }
            ],
            now=now,
        )[0]
        return self._credit_case(result.id, label, value, ask, via, now)

    def _credit_case(self, memory_id: str, label: str, value: float, ask: str, via: str, now: datetime) -> str | None:
        """One more outcome for a case: its counts, and the delta rule with context links from
        the ask's concepts (so the same question finds it, or finds it lower, next time)."""
        from ..errors import MnemoError

        try:
            with self.store.db.write():
                row = self.store.get(memory_id)
                if row is None:
                    return None
                meta = row["metadata"]
                case = dict(meta.get("case") or {})
                case[label if label in ("worked", "failed", "partial") else "partial"] = int(case.get(label, 0)) + 1
                meta["case"] = case
                self.store.update(memory_id, metadata=meta, updated_at=iso(now))
            concepts = extract_concepts(ask)[:16] or None
            self.learning.feedback(
                [memory_id], outcome=value, query_concepts=concepts, source=f"capture:{via}", now=now
            )
        except MnemoError:  # deleted meanwhile
            return None
        return memory_id

    def cases_for(
        self, signature: str | None, *, limit: int | None = None, not_from: str | None = None
    ) -> list[dict[str, Any]]:
        """The stored cases for a failure like this one (signatures alike: the same failure on
        another day lists other paths and line numbers) in scope: what worked first, then what
        was tried and did not work. `not_from`: leave out the cases this session captured (its
        context already holds what it tried)."""
        n = self.settings.capture_recall_items if limit is None else limit
        if not signature or n <= 0:
            return []
        with self.store.db.read():
            known = self.store.case_signatures(self._read_scope(None), CASES_SCANNED)
            alike = [(cases.signature_similarity(signature, sig), mid) for mid, sig in known]
            ids = [mid for sim, mid in sorted(alike, reverse=True) if sim >= cases.SIGNATURE_MATCH][: 4 * n]
            rows = [r for r in (self.store.get(mid) for mid in ids) if r is not None]
        rows = [r for r in rows if not_from is None or (r["metadata"].get("case") or {}).get("session") != not_from]
        order = {cases.WORKED: 0, cases.UNPROVEN: 1, cases.FAILED: 2}
        rows.sort(key=lambda r: (order[cases.case_standing(r["valence"])], -r["valence"]))
        return rows[:n]
