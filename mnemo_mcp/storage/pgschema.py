"""The PostgreSQL store's schema: numbered migrations applied under an advisory lock, since
several processes (every session's MCP server, the hooks) start at once against one database.

The tables are SQLite's (storage/migrations.py, as of its migration 7), so that rows decode the
same way (JSON columns as text) and an export moves between the two: `rowid` and `seq` are
identity columns; the vectors' table (migration 3) takes vectors of any dimension, the model
binding in `meta` fixes it, so that a member role without CREATE rights can bind the model. Text
cannot hold NUL in PostgreSQL: the store refuses it at the seam. Keyword search keeps its own
postings (pgtext.py, migration 2; migration 4 puts beside each posting what scoring and the filters
need). The vectors' HNSW index is no migration: it is typed with the bound model's dimension, and
the owner's process makes it (pgvectors.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..errors import MnemoError

# pg_advisory_xact_lock key for schema changes: "mnemo" + "mig" as one bigint.
MIGRATE_LOCK = 0x6D6E656D6F6D6967

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "the store's tables, as SQLite's schema 7",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE memories (
            rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            memory_type TEXT NOT NULL DEFAULT 'note',
            domain TEXT NOT NULL DEFAULT '',
            tags TEXT NOT NULL DEFAULT '[]',
            metadata TEXT NOT NULL DEFAULT '{}',
            concepts TEXT NOT NULL DEFAULT '[]',
            valence DOUBLE PRECISION NOT NULL DEFAULT 0.0,
            quality DOUBLE PRECISION NOT NULL DEFAULT 0.5,
            access_count INTEGER NOT NULL DEFAULT 0,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            reciprocal_rank_sum DOUBLE PRECISION NOT NULL DEFAULT 0.0,
            feedback_count INTEGER NOT NULL DEFAULT 0,
            archived INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_accessed_at TEXT,
            tier TEXT NOT NULL DEFAULT 'working',
            source TEXT NOT NULL DEFAULT 'write',
            superseded_by TEXT,
            archived_at TEXT,
            archive_reason TEXT,
            provenance TEXT NOT NULL DEFAULT '{}',
            quarantine TEXT
        );
        CREATE INDEX memories_domain ON memories(domain, archived);
        CREATE INDEX memories_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
        CREATE INDEX memories_source ON memories(source);
        CREATE INDEX memories_quarantined ON memories(rowid) WHERE quarantine IS NOT NULL;
        CREATE TABLE reads (
            seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
            id TEXT PRIMARY KEY,
            query TEXT NOT NULL,
            query_concepts TEXT NOT NULL,
            domain TEXT,
            results TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX reads_created ON reads(created_at);
        CREATE TABLE feedback_events (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            memory_id TEXT NOT NULL,
            read_id TEXT,
            outcome DOUBLE PRECISION NOT NULL,
            rate DOUBLE PRECISION NOT NULL,
            valence_before DOUBLE PRECISION NOT NULL,
            valence_after DOUBLE PRECISION NOT NULL,
            source TEXT NOT NULL,
            created_at TEXT NOT NULL,
            by_user TEXT
        );
        CREATE INDEX feedback_events_memory ON feedback_events(memory_id, seq);
        CREATE TABLE associations (
            a TEXT NOT NULL,
            b TEXT NOT NULL,
            weight DOUBLE PRECISION NOT NULL,
            valence DOUBLE PRECISION NOT NULL,
            count INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            decayed_at TEXT,
            PRIMARY KEY (a, b)
        );
        CREATE TABLE cues (
            memory_id TEXT NOT NULL,
            concept TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            count INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (memory_id, concept)
        );
        CREATE INDEX cues_concept ON cues(concept);
        CREATE TABLE consolidation_runs (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            as_of TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            trigger TEXT NOT NULL,
            report TEXT
        );
        CREATE TABLE session_events (
            seq BIGINT PRIMARY KEY,
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
        2,
        "full text as FTS5 ranks it (postings, lengths, totals); cases by key and signature",
        """
        ALTER TABLE memories ADD COLUMN text_length INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE text_terms (
            term TEXT NOT NULL,
            rowid BIGINT NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
            tf DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (term, rowid)
        );
        CREATE INDEX text_terms_rowid ON text_terms(rowid);
        CREATE TABLE text_totals (
            one INTEGER PRIMARY KEY DEFAULT 1 CHECK (one = 1),
            documents BIGINT NOT NULL,
            tokens BIGINT NOT NULL
        );
        INSERT INTO text_totals(documents, tokens) VALUES (0, 0);
        CREATE INDEX memories_case_key ON memories (((metadata::jsonb) #>> '{case,key}'))
            WHERE memory_type = 'case';
        CREATE INDEX memories_case_signature ON memories (rowid)
            WHERE memory_type = 'case' AND archived = 0 AND quarantine IS NULL;
        """,
    ),
    (
        3,
        "the vectors' table laid out with the schema (any dimension: the model binding fixes it), so that "
        "members without the right to create tables can bind the model",
        """
        CREATE TABLE IF NOT EXISTS memory_vectors (
            rowid BIGINT PRIMARY KEY REFERENCES memories(rowid) ON DELETE CASCADE,
            embedding vector NOT NULL,
            archived INTEGER NOT NULL DEFAULT 0,
            domain TEXT NOT NULL DEFAULT ''
        );
        """,
    ),
    (
        4,
        "keyword postings that carry what scoring and filtering need (the document's length, domain, "
        "archived), laid out by term; the keyword totals as an append-only log instead of one updated row",
        """
        CREATE TABLE text_terms_4 (
            term TEXT NOT NULL,
            rowid BIGINT NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
            tf DOUBLE PRECISION NOT NULL,
            text_length INTEGER NOT NULL,
            domain TEXT NOT NULL,
            archived INTEGER NOT NULL
        );
        INSERT INTO text_terms_4(term, rowid, tf, text_length, domain, archived)
            SELECT p.term, p.rowid, p.tf, m.text_length, m.domain, m.archived
            FROM text_terms p JOIN memories m ON m.rowid = p.rowid ORDER BY p.term, p.rowid;
        DROP TABLE text_terms;
        ALTER TABLE text_terms_4 RENAME TO text_terms;
        ALTER TABLE text_terms ADD CONSTRAINT text_terms_pkey PRIMARY KEY (term, rowid)
            INCLUDE (tf, text_length, domain, archived);
        CREATE INDEX text_terms_rowid ON text_terms(rowid);
        CREATE TABLE text_totals_log (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            documents BIGINT NOT NULL,
            tokens BIGINT NOT NULL,
            whole BOOLEAN NOT NULL DEFAULT false
        );
        CREATE INDEX text_totals_log_whole ON text_totals_log(seq) WHERE whole;
        INSERT INTO text_totals_log(documents, tokens, whole) SELECT documents, tokens, true FROM text_totals;
        DROP TABLE text_totals;
        """,
    ),
    (
        5,
        "the vectors' filter columns indexed: a read of a small domain scans its own vectors, not all "
        "(the planner takes it over the HNSW index when the domain is a small part of the store)",
        """
        CREATE INDEX memory_vectors_domain ON memory_vectors(domain, archived);
        """,
    ),
]


def current_version(conn: Any) -> int:
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    return conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]


def migrate(conn: Any) -> int:
    """Apply pending migrations in one transaction, one process at a time (an advisory lock held
    until the transaction ends): the processes that wait find them applied. -> the version."""
    latest = MIGRATIONS[-1][0]
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        found = current_version(conn)
        if found == latest:  # nothing to do: no DDL, so a member without CREATE rights starts too
            return found
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        found = current_version(conn)
        if found > latest:
            raise MnemoError(
                f"the database has schema version {found}, newer than this mnemo-mcp knows ({latest}); "
                "upgrade mnemo-mcp (pip install -U mnemo-mcp)"
            )
        for number, name, sql in MIGRATIONS:
            if number <= found:
                continue
            conn.execute(sql)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (%s, %s, %s)",
                (number, name, datetime.now(UTC).isoformat()),
            )
    return current_version(conn)
