"""Trust: where each memory came from, and notes that read as instructions to the assistant.

Every memory carries its provenance (who stored it, when; for captures the session). A note that
reads as an instruction to the assistant (core.injection) is stored as written but quarantined:
`memory_read` returns it with the flag and the reason, the hooks never inject it, and only a
person releases it (the CLI or the dashboard call `release`; no MCP tool does, so the model
cannot, whatever it rates or writes). Memories stored before provenance existed are assessed by
consolidation, a page at a time, and the hooks assess what they show anyway.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import validate
from ..core.injection import assess
from ..errors import InvalidInput
from ..models import ReleaseResult, preview
from .base import Part, iso

PEOPLE = ("cli", "dashboard")  # who may release a quarantined note
ASSESS_PAGE = 500


def quarantine_for(text: str, stamp: str) -> dict[str, Any] | None:
    verdict = assess(text)
    return {"reason": verdict.reason, "at": stamp} if verdict.flagged else None


class Trust(Part):
    def release(self, memory_id: str, *, by: str, now: datetime | None = None) -> ReleaseResult:
        """A person judged a quarantined note safe to inject: it takes part in injection again.
        Not exposed as an MCP tool: the model must not release what might be steering it."""
        if by not in PEOPLE:
            raise InvalidInput(f"only a person releases a quarantined memory (from {' or '.join(PEOPLE)}), not {by!r}")
        ref = validate.memory_ref(memory_id)
        stamp = iso(now or self.clock())
        with self.store.db.write():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            if row["quarantine"] is None:
                return ReleaseResult(id=mid, released=False, content_preview=preview(row["content"]))
            reason = row["quarantine"].get("reason")
            provenance = {**row["provenance"], "released": {"by": by, "at": stamp, "reason": reason}}
            self.store.update(mid, quarantine=None, provenance=provenance, updated_at=stamp)
        return ReleaseResult(id=mid, released=True, reason=reason, content_preview=preview(row["content"]))

    def assess_unchecked(self, *, now: datetime | None = None, limit: int = ASSESS_PAGE) -> int:
        """Memories stored before provenance (empty provenance): assess and mark them. -> how many."""
        stamp = iso(now or self.clock())
        with self.store.db.write():
            rows = self.store.without_provenance(limit)
            for row in rows:
                self.store.update(
                    row["id"],
                    provenance={"by": "unknown", "assessed_at": stamp},
                    quarantine=quarantine_for(row["content"], stamp),
                )
        return len(rows)
