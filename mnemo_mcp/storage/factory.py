"""One place that turns MNEMO_DB into a store: a path is SQLite (the default), a `postgresql://`
URL is PostgreSQL with pgvector. A URL is never a path: no file is ever made for it."""

from __future__ import annotations

from pathlib import Path

from ..errors import BackendNotReady
from .interface import MemoryStore


def open_store(db: Path | str, busy_timeout_ms: int, *, vector_index: bool = True) -> MemoryStore:
    """The store for `db` (a SQLite path, or a PostgreSQL URL as the settings keep it: a str)."""
    if isinstance(db, str):
        from . import postgres

        versions = postgres.ready(db)
        raise BackendNotReady(
            f"PostgreSQL {versions['server']} with pgvector {versions['vector']} at {postgres.shown(db)} is "
            "reachable and ready, but this version of mnemo-mcp keeps memories in SQLite only: the PostgreSQL "
            "store is not finished. Set MNEMO_DB to a file path for now"
        )
    from .store import Store

    return Store(db, busy_timeout_ms, vector_index=vector_index)
