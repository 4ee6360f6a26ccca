"""Helpers for the fault tests: a store with learned state, and ways to damage its file."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import sys
from pathlib import Path

import apsw
from mcp import StdioServerParameters

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService

TOPICS = ["deploy", "billing", "search", "cache", "queue", "auth", "webhooks", "migrations"]


def memory_text(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"Fault memory {i}: the {topic} service needs step {i * 7 % 13} first. " + f"detail {topic} " * (i % 9 + 12)


def make_store(path: Path, n: int = 60) -> dict[str, tuple]:
    """A closed database of `n` memories written one by one (so their pages interleave with the
    index pages, as in a store that grew over time), with feedback and ratings. -> the state
    that must survive: {id: (content, valence, tags, rating_count)}."""
    svc = MemoryService(Settings(db=path, auto_consolidate=False, auto_backup=False), HashEmbedder())
    try:
        ids = [svc.write(memory_text(i), tags=[TOPICS[i % len(TOPICS)]], allow_duplicate=True).id for i in range(n)]
        svc.feedback(ids[::5], outcome=1.0, query_concepts=["service", "step"])
        svc.feedback(ids[1::7], outcome=-1.0, query_concepts=["detail"])
        for mid in ids[::11]:
            svc.rate(mid, rating=1, reason="right")
        return state_of(svc)
    finally:
        svc.close()


def state_of(svc: MemoryService) -> dict[str, tuple]:
    with svc.store.db.read():
        rows = list(svc.store.all_memories())
    return {r["id"]: (r["content"], r["valence"], r["tags"], r["metadata"].get("rating_count", 0)) for r in rows}


def open_state(path: Path) -> dict[str, tuple]:
    svc = MemoryService(Settings(db=path, auto_consolidate=False, auto_backup=False), HashEmbedder())
    try:
        return state_of(svc)
    finally:
        svc.close()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def random_bytes(path: Path, size: int = 64 * 1024) -> None:
    path.write_bytes(random.Random(16).randbytes(size))


def truncate(path: Path, share: float = 0.5) -> None:
    os.truncate(path, int(path.stat().st_size * share) // 4096 * 4096)


def memory_leaves(path: Path) -> list[tuple[int, int]]:
    """(page number, rows) of each leaf page of the memories table, in page order."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            (p, n)
            for p, n in conn.execute(
                "SELECT pageno, ncell FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf' ORDER BY pageno"
            )
        ]
    finally:
        conn.close()


def corrupt_page(path: Path, page: int, page_size: int = 4096) -> None:
    with open(path, "r+b") as f:
        f.seek((page - 1) * page_size)
        f.write(random.Random(page).randbytes(page_size))


def server_params(db: Path, home: Path, **env: str) -> StdioServerParameters:
    exe = shutil.which("mnemo-mcp") or str(Path(sys.executable).with_name("mnemo-mcp"))
    base = {
        "MNEMO_DB": str(db),
        "MNEMO_EMBED_MODEL": "mnemo-hash-64",
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    return StdioServerParameters(command=exe, args=[], env={**base, **env})
