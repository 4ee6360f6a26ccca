"""SQL for upkeep: the hooks' session events, and the health checks and repairs that `doctor`
runs. A mixin of `Store`, kept apart so store.py stays readable."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import apsw

from . import scrub, vectors
from .rows import json_list
from .shared import SESSION_COLUMNS, session_event

if TYPE_CHECKING:
    import numpy as np

    from .db import Database


class MaintenanceQueries:
    conn: apsw.Connection
    db: Database

    # --- session events (hooks) -----------------------------------------------------------

    def next_session_seq(self) -> int:
        """The sequence number the next session event gets (inside the write transaction that
        adds it: no other writer can take it meanwhile)."""
        row = self.conn.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_events'), 0), "
            "coalesce((SELECT max(seq) FROM session_events), 0))"
        ).fetchone()
        return int(row[0]) + 1

    def add_session_events(self, events: list[dict[str, Any]], keep: int) -> None:
        """Append session events with the sequence numbers they were given (one statement),
        keeping the newest `keep`."""
        if not events:
            return
        rows = [
            [
                e["seq"],
                e["session_id"],
                e["kind"],
                json_list(e.get("memory_ids", [])),
                e.get("read_id"),
                json.dumps(e.get("detail", {})),
                e["created_at"],
            ]
            for e in events
        ]
        self.conn.execute(
            "INSERT INTO session_events(seq, session_id, kind, memory_ids, read_id, detail, created_at) "
            "SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6 "
            "FROM json_each(?)",
            (json.dumps(rows),),
        )
        self.conn.execute("DELETE FROM session_events WHERE seq <= ?", (max(e["seq"] for e in events) - keep,))

    def session_events(self, session_id: str, after_seq: int = 0) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM session_events WHERE session_id = ? AND seq > ? ORDER BY seq",
            (session_id, after_seq),
        )
        return [session_event(r) for r in rows]

    # --- health (doctor) and backup --------------------------------------------------------

    def memory_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def has_vector_table(self) -> bool:
        return bool(self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_vectors'").fetchone())

    def integrity_problems(self) -> list[str]:
        rows = [r[0] for r in self.conn.execute("PRAGMA integrity_check")]
        return [] if rows == ["ok"] else rows

    def memories_without_vector(self) -> list[int]:
        # The vec0 shadow table lists its rowids; joining the virtual table itself would look
        # each one up (0.2 ms apiece).
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT rowid FROM memories WHERE rowid NOT IN (SELECT rowid FROM memory_vectors_rowids) ORDER BY rowid"
            )
        ]

    def vectors_without_memory(self) -> list[int]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT rowid FROM memory_vectors_rowids WHERE rowid NOT IN (SELECT rowid FROM memories) ORDER BY rowid"
            )
        ]

    def vector_filters_out_of_step(self) -> list[int]:
        """Memories whose vector carries another archived flag or domain than the memory."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT v.rowid FROM memory_vectors v JOIN memories m ON m.rowid = v.rowid "
                "WHERE v.archived != m.archived OR v.domain != m.domain ORDER BY v.rowid"
            )
        ]

    def text_index_ok(self) -> bool:
        try:
            self.conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
        except apsw.Error:
            return False
        return True

    def orphan_counts(self) -> dict[str, int]:
        c = self.conn
        return {
            "cues": c.execute("SELECT count(*) FROM cues WHERE memory_id NOT IN (SELECT id FROM memories)").fetchone()[
                0
            ],
            "feedback_events": c.execute(
                "SELECT count(*) FROM feedback_events WHERE memory_id NOT IN (SELECT id FROM memories)"
            ).fetchone()[0],
        }

    def add_vector(self, rowid: int, vector: np.ndarray) -> None:
        import numpy as np

        archived, domain = self.conn.execute(
            "SELECT archived, domain FROM memories WHERE rowid = ?", (rowid,)
        ).fetchone()
        self.conn.execute(
            "INSERT INTO memory_vectors(rowid, embedding, archived, domain) VALUES (?, ?, ?, ?)",
            (rowid, np.asarray(vector, dtype=np.float32).tobytes(), archived, domain),
        )
        vectors.note_change(self.conn, rowid)

    def drop_vector(self, rowid: int) -> None:
        self.conn.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowid,))
        vectors.note_change(self.conn, rowid)

    def sync_vector_filters(self, rowid: int) -> None:
        self.conn.execute(
            "UPDATE memory_vectors SET archived = m.archived, domain = m.domain "
            "FROM (SELECT archived, domain FROM memories WHERE rowid = ?) AS m WHERE memory_vectors.rowid = ?",
            (rowid, rowid),
        )

    def rebuild_text_index(self) -> None:
        self.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")

    def delete_orphans(self) -> None:
        self.conn.execute("DELETE FROM cues WHERE memory_id NOT IN (SELECT id FROM memories)")
        self.conn.execute("DELETE FROM feedback_events WHERE memory_id NOT IN (SELECT id FROM memories)")

    def secrets_at_rest(self) -> dict[str, Any]:
        return scrub.secrets_at_rest(self.conn)

    def scrub_secrets(self) -> dict[str, int]:
        return scrub.scrub(self.conn)

    def secrets_migration_report(self) -> dict[str, Any] | None:
        from .migrations import migration_report

        return migration_report(self.conn, 6)
