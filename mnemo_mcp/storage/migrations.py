"""Numbered schema migrations, recorded in the database and applied in one transaction each.

Never edit a released migration: add the next number. The vector table is not here: its
dimension comes from the embedding model, so it is created when a model is first bound
(`Store.bind_model`).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

import apsw

from ..errors import MnemoError
from .db import Database
from .scrub import scrub

log = logging.getLogger("mnemo_mcp.storage")

# (number, name, SQL[, a step run after the SQL in the same transaction -> its report])
MIGRATIONS: list[tuple[Any, ...]] = [
    (
        1,
        "initial schema",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            memory_type TEXT NOT NULL DEFAULT 'note',
            domain TEXT NOT NULL DEFAULT '',
            tags TEXT NOT NULL DEFAULT '[]',
            metadata TEXT NOT NULL DEFAULT '{}',
            concepts TEXT NOT NULL DEFAULT '[]',
            valence REAL NOT NULL DEFAULT 0.0,
            quality REAL NOT NULL DEFAULT 0.5,
            access_count INTEGER NOT NULL DEFAULT 0,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            reciprocal_rank_sum REAL NOT NULL DEFAULT 0.0,
            feedback_count INTEGER NOT NULL DEFAULT 0,
            archived INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_accessed_at TEXT
        );
        CREATE INDEX memories_domain ON memories(domain, archived);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, tags, content='memories', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab(memories_fts, 'row');
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content, tags)
            VALUES ('delete', old.rowid, old.content, old.tags);
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content, tags)
            VALUES ('delete', old.rowid, old.content, old.tags);
            INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
        END;

        CREATE TABLE reads (
            id TEXT PRIMARY KEY,
            query TEXT NOT NULL,
            query_concepts TEXT NOT NULL,
            domain TEXT,
            results TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX reads_created ON reads(created_at);

        CREATE TABLE feedback_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id TEXT NOT NULL,
            read_id TEXT,
            outcome REAL NOT NULL,
            rate REAL NOT NULL,
            valence_before REAL NOT NULL,
            valence_after REAL NOT NULL,
            source TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX feedback_events_memory ON feedback_events(memory_id, seq);

        -- concept <-> concept (Hebbian), a < b
        CREATE TABLE associations (
            a TEXT NOT NULL,
            b TEXT NOT NULL,
            weight REAL NOT NULL,
            valence REAL NOT NULL,
            count INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (a, b)
        ) WITHOUT ROWID;

        -- query concept -> memory: what feedback taught about this kind of question
        CREATE TABLE cues (
            memory_id TEXT NOT NULL,
            concept TEXT NOT NULL,
            value REAL NOT NULL,
            count INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (memory_id, concept)
        ) WITHOUT ROWID;
        CREATE INDEX cues_concept ON cues(concept);
        """,
    ),
    (
        2,
        "lifecycle: tiers, sources, supersedes, archive reasons, link decay, consolidation runs",
        """
        ALTER TABLE memories ADD COLUMN tier TEXT NOT NULL DEFAULT 'working';
        ALTER TABLE memories ADD COLUMN source TEXT NOT NULL DEFAULT 'write';
        ALTER TABLE memories ADD COLUMN superseded_by TEXT;
        ALTER TABLE memories ADD COLUMN archived_at TEXT;
        ALTER TABLE memories ADD COLUMN archive_reason TEXT;
        CREATE INDEX memories_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL;

        ALTER TABLE associations ADD COLUMN decayed_at TEXT;

        CREATE TABLE consolidation_runs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            as_of TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            trigger TEXT NOT NULL,
            report TEXT
        );
        """,
    ),
    (
        3,
        "session events: what hooks recalled per turn, and the outcomes they saw",
        """
        CREATE TABLE session_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            memory_ids TEXT NOT NULL DEFAULT '[]',
            read_id TEXT,
            detail TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE INDEX session_events_session ON session_events(session_id, seq);
        """,
    ),
    (
        4,
        "captured cases: found by their key and by the error signature they answer",
        """
        CREATE INDEX memories_case_key ON memories(json_extract(metadata, '$.case.key')) WHERE memory_type = 'case';
        CREATE INDEX memories_case_signature ON memories(json_extract(metadata, '$.case.signature'))
            WHERE memory_type = 'case';
        CREATE INDEX memories_source ON memories(source);
        """,
    ),
    (
        5,
        "trust: who stored each memory, and notes kept out of automatic injection",
        """
        ALTER TABLE memories ADD COLUMN provenance TEXT NOT NULL DEFAULT '{}';
        ALTER TABLE memories ADD COLUMN quarantine TEXT;
        CREATE INDEX memories_quarantined ON memories(rowid) WHERE quarantine IS NOT NULL;
        """,
    ),
    (
        6,
        "secrets at rest: the read log keeps no query text; what earlier versions kept in clear is masked",
        "ALTER TABLE schema_migrations ADD COLUMN report TEXT",
        scrub,
    ),
    (
        7,
        "several people on one store: who gave each outcome",
        "ALTER TABLE feedback_events ADD COLUMN by_user TEXT",
    ),
]


def current_version(conn: apsw.Connection) -> int:
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'").fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return row[0] or 0


def migrate(db: Database) -> int:
    """Apply pending migrations; safe when several processes open a new file at once."""
    latest = MIGRATIONS[-1][0]
    with db.read() as conn:
        found = current_version(conn)
    if found > latest:
        raise MnemoError(
            f"the database {db.path} has schema version {found}, newer than this mnemo-mcp knows ({latest}); "
            "upgrade mnemo-mcp (pip install -U mnemo-mcp)"
        )
    if found == latest:
        return latest
    with db.write() as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        version = current_version(conn)
        for number, name, sql, *step in MIGRATIONS:
            if number <= version:
                continue
            conn.execute(sql)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (number, name, datetime.now(UTC).isoformat()),
            )
            if step:
                report = step[0](conn)
                conn.execute("UPDATE schema_migrations SET report = ? WHERE version = ?", (json.dumps(report), number))
                if report:
                    log.warning("migration %d (%s) changed: %s", number, name, report)
        return current_version(conn)


def migration_report(conn: apsw.Connection, number: int) -> dict[str, Any] | None:
    """What a migration's step reported when it ran here (None: it had nothing to do or predates reports)."""
    try:
        row = conn.execute("SELECT report FROM schema_migrations WHERE version = ?", (number,)).fetchone()
    except apsw.SQLError:
        return None
    return json.loads(row[0]) if row and row[0] else None
