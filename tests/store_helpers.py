"""Rows, vectors and a small store for the storage tests (test_store.py, test_store_transactions.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from mnemo_mcp.storage.store import Store

DIM = 8
STAMP = "2024-01-01T00:00:00+00:00"


def unit_vector(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def make_row(mid: str, content: str, *, domain: str = "", tags=(), archived: bool = False, **extra) -> dict:
    row = {
        "id": mid,
        "content": content,
        "memory_type": "note",
        "domain": domain,
        "tags": list(tags),
        "metadata": {"source": "test"},
        "concepts": ["concept"],
        "created_at": STAMP,
        "updated_at": STAMP,
    }
    if archived:
        row["archived"] = True
    row.update(extra)
    return row


def hex_id(n: int) -> str:
    return f"{n:064x}"


def new_rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def open_store(tmp_path: Path) -> Iterator[Store]:
    """The `store` fixture of the test modules: a store bound to an 8-dimension test model."""
    s = Store(tmp_path / "memory.db")
    s.bind_model("test-model", DIM)
    yield s
    s.close()


def fts_rowids(store: Store, term: str, **filters) -> set[int]:
    kw = {"domains": None, "include_archived": True, "tags": None}
    if "domain" in filters:
        kw["domains"] = [filters.pop("domain")]
    kw.update(filters)
    with store.db.read():
        return {rowid for rowid, _ in store.fts([term], 50, **kw)}


def knn_rowids(store: Store, vector, *, k: int = 50, domain=None, include_archived=False, tags=None) -> set[int]:
    with store.db.read():
        domains = None if domain is None else [domain]
        return {r for r, _ in store.knn(vector, k, domains=domains, include_archived=include_archived, tags=tags)}
