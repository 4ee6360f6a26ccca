"""One place that turns MNEMO_DB into a store: a path is SQLite (the default), a `postgresql://`
URL is PostgreSQL with pgvector. A URL is never a path: no file is ever made for it."""

from __future__ import annotations

from pathlib import Path

from .interface import MemoryStore


def open_store(db: Path | str, busy_timeout_ms: int, *, vector_index: bool = True) -> MemoryStore:
    """The store for `db` (a SQLite path, or a PostgreSQL URL as the settings keep it: a str)."""
    if isinstance(db, str):
        from .pgstore import PgStore

        return PgStore(db)
    from .store import Store

    return Store(db, busy_timeout_ms, vector_index=vector_index)
