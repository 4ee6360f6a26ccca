"""The session event log: what a Claude Code session's hooks reported, in order. Sessions
(recall and credit) and capture (cases) both read and append to it."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from .base import Part

SESSION_EVENTS_KEPT = 50_000


def session_id_of(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
        raise InvalidInput("session_id must be the non-empty session_id string from Claude Code's hook input")
    return session_id.strip()


class SessionLog(Part):
    def add(self, session_id: str, kind: str, stamp: str, **fields: Any) -> int:
        """Append one event (inside the caller's write transaction); the oldest beyond the cap go."""
        return self.store.add_session_event(
            {
                "session_id": session_id,
                "kind": kind,
                "created_at": stamp,
                "read_id": fields.pop("read_id", None),
                **fields,
            },
            keep=SESSION_EVENTS_KEPT,
        )

    def events(self, sid: str) -> list[dict[str, Any]]:
        with self.store.db.read():
            return self.store.session_events(sid)
