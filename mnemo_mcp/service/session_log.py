"""The session event log: what a coding agent's hooks reported, in order. Sessions (recall and
credit) and capture (cases) both read and append to it; the kinds of event and the helpers that
walk the log live here, so neither part reaches into the other.

One hook event is one unit of work (`SessionLog.unit`): the session's log is read once, and the
learning the event causes and the log entries it adds commit in one transaction, so a process
killed at any point leaves both or neither (a reaction credited but its turn not logged would be
credited again at the next prompt).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..core.secrets import scrubbed
from ..errors import InvalidInput
from .base import Part

SESSION_EVENTS_KEPT = 50_000

# The kinds of session event.
TURN, RECALL, CHECK, OUTCOME, ALIGN = "turn", "recall", "check", "outcome", "alignment"
BACKGROUND, DIGEST, CLAIM = "background", "digest", "claim"
EDIT, ACTIONS, PENDING, CASE = "edit", "actions", "pending", "case"
# Events that put memories in front of the model: what its later actions may have followed.
SHOWN = (RECALL, DIGEST)

Call = tuple[str, str, str]  # (tool_use id, tool name or "prompt", command or edited file)


def session_id_of(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
        raise InvalidInput("session_id must be the non-empty session_id string from the agent's hook input")
    return session_id.strip()


def since_last(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events after the last one of `kind` (all of them when there is none)."""
    for i in range(len(events) - 1, -1, -1):
        if events[i]["kind"] == kind:
            return events[i + 1 :]
    return events


def turn_of(events: list[dict[str, Any]], seq: int) -> list[dict[str, Any]]:
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


def last_of(events: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((e for e in reversed(events) if e["kind"] == kind), None)


def in_unit(method: Callable[..., Any]) -> Callable[..., Any]:
    """A part's session method that runs as one unit of work (joining the caller's, if any)."""

    @functools.wraps(method)
    def run(self, session_id: Any, *args: Any, **kwargs: Any) -> Any:
        with self.log.unit(session_id):
            return method(self, session_id, *args, **kwargs)

    return run


class SessionUnit:
    """One hook event's view of a session: its log as read at the start, plus what the event
    adds (kept here and written together when the unit ends)."""

    def __init__(self, sid: str, events: list[dict[str, Any]], next_seq: int):
        self.sid = sid
        self.events = events
        self.added: list[dict[str, Any]] = []
        self._next = next_seq

    def add(self, kind: str, stamp: str, **fields: Any) -> int:
        """Append one event -> its sequence number (written when the unit ends)."""
        event = {
            "seq": self._next,
            "session_id": self.sid,
            "kind": kind,
            "memory_ids": list(fields.pop("memory_ids", None) or []),
            "read_id": fields.pop("read_id", None),
            "detail": fields.pop("detail", None) or {},
            "created_at": stamp,
        }
        if fields:
            raise TypeError(f"unknown session event fields: {sorted(fields)}")
        self._next += 1
        self.events.append(event)
        self.added.append(event)
        return event["seq"]


def _scrubbed_event(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "detail": scrubbed(event.get("detail") or {})}


class SessionLog(Part):
    def __init__(self, ctx):
        super().__init__(ctx)
        self._local = threading.local()

    def _units(self) -> dict[str, SessionUnit]:
        units = getattr(self._local, "units", None)
        if units is None:
            units = self._local.units = {}
        return units

    @contextmanager
    def unit(self, session_id: Any) -> Iterator[SessionUnit]:
        """The unit of work for this session: one write transaction, the log read once. Units
        nest: an event's handler opens one, and every session call inside joins it."""
        sid = session_id_of(session_id)
        units = self._units()
        if sid in units:
            yield units[sid]
            return
        with self.store.db.write():
            unit = SessionUnit(sid, self.store.session_events(sid), self.store.next_session_seq())
            units[sid] = unit
            try:
                yield unit
                if unit.added:
                    # Prompts, answers, commands and their output: what reaches the disk has no secret.
                    self.store.add_session_events([_scrubbed_event(e) for e in unit.added], keep=SESSION_EVENTS_KEPT)
            finally:
                del units[sid]

    def add(self, session_id: Any, kind: str, stamp: str, **fields: Any) -> int:
        """Append one event to the session, in the current unit (or a unit of its own)."""
        with self.unit(session_id) as u:
            return u.add(kind, stamp, **fields)

    def events(self, session_id: Any) -> list[dict[str, Any]]:
        """The session's log, as the current unit sees it (read from the store outside one)."""
        sid = session_id_of(session_id)
        unit = self._units().get(sid)
        if unit is not None:
            return unit.events
        with self.store.db.read():
            return self.store.session_events(sid)
