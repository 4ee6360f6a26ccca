"""The one service API that every interface (MCP server, CLI, hooks, dashboard) calls.

`MemoryService` is a facade: it builds the shared context (settings, store, embedder, clock)
and one part per concern, each from the context and the peers it names, then exposes the
parts' public methods as its own. Each is the part's bound method, so a type checker sees the
exact signature, and arguments after the subject are keyword-only. No SQL here, no I/O but
through the store and the embedder; `now` can be passed to every operation that stamps time.

Who uses whom (no cycles): trust <- lifecycle <- writing; backups <- health; reading, learning,
health <- browse; session log, learning, writing <- capture <- sessions (with attribution)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from ..config import Settings
from ..embedding import Embedder
from .attribution import Attribution
from .backups import Backups
from .base import ServiceContext
from .browse import Browse
from .capture import Capture
from .health import Health
from .learning import Learning
from .lifecycle import Lifecycle
from .reading import Reading
from .session_log import SessionLog
from .sessions import Sessions
from .transfer import Transfer
from .trust import Trust
from .writing import Writing

log = logging.getLogger("mnemo_mcp.service")


class MemoryService:
    def __init__(
        self,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] | None = None,
    ):
        ctx = self.ctx = ServiceContext(settings, embedder, clock)
        self.settings, self.store, self.embedder, self.clock = ctx.settings, ctx.store, ctx.embedder, ctx.clock

        trust = Trust(ctx)
        reading = Reading(ctx)
        learning = Learning(ctx)
        lifecycle = self._lifecycle = Lifecycle(ctx, trust=trust)
        writing = Writing(ctx, lifecycle=lifecycle)
        backups = self._backups = Backups(ctx)
        health = Health(ctx, backups=backups)
        browse = Browse(ctx, reading=reading, learning=learning, health=health)
        transfer = Transfer(ctx)
        log = SessionLog(ctx)
        capture = Capture(ctx, log=log, learning=learning, writing=writing)
        sessions = Sessions(ctx, log=log, learning=learning, capture=capture, attribution=Attribution(ctx))

        # Writing and reading.
        self.write, self.write_many, self.delete = writing.write, writing.write_many, writing.delete
        self.read, self.embed_query_ahead = reading.read, reading.embed_query_ahead
        # Learning from outcomes.
        self.feedback, self.feedback_aligned = learning.feedback, learning.feedback_aligned
        self.feedback_credited = learning.feedback_credited
        self.rate, self.quality = learning.rate, learning.quality
        # Lifecycle and trust.
        self.archive, self.restore = lifecycle.archive, lifecycle.restore
        self.consolidate, self.consolidation_due = lifecycle.consolidate, lifecycle.consolidation_due
        self.maybe_consolidate = lifecycle.maybe_consolidate
        self.release, self.quarantined, self.judge_shown = trust.release, trust.quarantined, trust.judge_shown
        self.assess_unchecked = trust.assess_unchecked
        # Health, backups, transfer.
        self.stats, self.doctor = health.stats, health.doctor
        self.backup, self.list_backups, self.backup_status = backups.backup, backups.list_backups, backups.backup_status
        self.backup_due, self.maybe_backup = backups.backup_due, backups.maybe_backup
        self.scrub_backups = backups.scrub_backups
        self.export, self.import_records = transfer.export, transfer.import_records
        # The dashboard.
        self.default_scope = browse.default_scope
        self.browse_list, self.browse_facets = browse.browse_list, browse.browse_facets
        self.browse_memory, self.browse_analytics = browse.browse_memory, browse.browse_analytics
        # Agents' sessions (the hooks) and the cases captured from them; each hook event is one
        # unit of work (session_unit): one transaction, the session's log read once.
        self.session_unit = log.unit
        self.session_claim, self.session_recall = sessions.session_claim, sessions.session_recall
        self.session_actions = sessions.session_actions
        self.session_user_prompt, self.session_turn = sessions.session_user_prompt, sessions.session_turn
        self.session_response = sessions.session_response
        self.session_check, self.session_background = sessions.session_check, sessions.session_background
        self.session_task_done, self.session_start = sessions.session_task_done, sessions.session_start
        self.session_failure = capture.session_failure
        self.session_stop, self.cases_for = capture.session_stop, capture.cases_for
        self.embed_passages = reading.embed_passages

    @property
    def ready(self) -> bool:
        """The embedding model is loaded and bound: a semantic read answers at once."""
        return self.ctx.bound

    def warm_up(self) -> None:
        """Load the model and bind it to the database (call from a background thread)."""
        try:
            self.ctx.ensure_bound()
        except Exception as err:
            log.warning("warm-up failed: %s", err)

    def store_replaced_since_damage(self) -> bool:
        """True when the store was found damaged and another file has since taken its place
        (a restored backup): the caller can open a new service on it."""
        return self.store.db.damaged is not None and self.store.db.replaced()

    def upkeep_due_after_write(self, now: datetime | None = None) -> bool:
        """Whether a write just made automatic upkeep due: enough writes since the last
        consolidation, or a backup older than its interval (the interval consolidation is
        checked when a server starts)."""
        return self._lifecycle.consolidation_due(now=now) == "writes" or self._backups.backup_due(now=now)

    def close(self) -> None:
        self.ctx.close()
