"""The in-memory vector index gives reads the very results sqlite-vec's scan and the joined
keyword query give (the same ids, relevance and scores in the same order), and follows changes
made through other connections: writes, deletes, archives, domain moves, doctor's repairs."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService
from mnemo_mcp.storage import vectors
from mnemo_mcp.storage.store import Store

WORDS = (
    "deploy build cache retry webhook queue postgres redis timeout token docker compose test flaky "
    "migration index vector memory python node rust config env secret port proxy branch merge lint"
).split()


def _texts(rng: random.Random, n: int) -> list[str]:
    out = []
    for i in range(n):
        words = rng.sample(WORDS, rng.randint(3, 8))
        # Families of near-identical texts: the same words give the same BM25, so ties at the
        # keyword cut (and at the vector cut) are exercised, not only clear winners.
        out.append(" ".join(words) + (f" variant {i % 7}" if i % 3 else f" note {i}"))
    return out


def _queries(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(n)]


def _read_all(svc: MemoryService, queries: list[str]) -> list:
    shapes = (
        {"top_k": 50},
        {"top_k": 10, "include_archived": True},
        {"top_k": 20, "domain": "other"},
        {"top_k": 5, "tags": ["even"]},
        {"top_k": 50, "domain": "global"},
    )
    out = []
    for i, q in enumerate(queries):
        r = svc.read(q, record=False, **shapes[i % len(shapes)])
        out.append([(it.id, it.relevance, it.score) for it in r.items])
    return out


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    """A store of 1,300 memories (two of sqlite-vec's chunks) in three domains, some archived,
    some rated."""
    rng = random.Random(5)
    db = tmp_path / "memory.db"
    svc = MemoryService(Settings(db=db, project="proj", auto_consolidate=False, auto_backup=False), HashEmbedder())
    texts = _texts(rng, 1300)
    domains = ["proj", "global", "other"]
    items = [
        {"content": t, "domain": domains[i % 3], "tags": ["even" if i % 2 == 0 else "odd"], "allow_duplicate": True}
        for i, t in enumerate(texts)
    ]
    ids = [r.id for r in svc.write_many(items)]
    for mid in ids[::11]:
        svc.archive(mid)
    for mid in ids[5::13]:
        svc.rate(mid, rating=1)
    svc.close()
    return db


def _copy(svc: MemoryService, to: Path) -> None:
    import apsw

    target = apsw.Connection(str(to))
    with target.backup("main", svc.store.conn, "main") as b:
        b.step()
    target.close()


def _service(db: Path, index: bool) -> MemoryService:
    s = Settings(db=db, project="proj", auto_consolidate=False, auto_backup=False, vector_index=index)
    return MemoryService(s, HashEmbedder())


def test_reads_through_the_index_equal_reads_through_sqlite_vec(store_file: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain.db"
    shutil.copy(store_file, plain)
    queries = _queries(random.Random(9), 150)
    fast, slow = _service(store_file, True), _service(plain, False)
    try:
        assert _read_all(fast, queries) == _read_all(slow, queries)
        assert fast.store._index is not None and slow.store._index is None
    finally:
        fast.close()
        slow.close()


def test_the_index_follows_changes_made_through_another_connection(store_file: Path, tmp_path: Path) -> None:
    queries = _queries(random.Random(11), 40)
    reader = _service(store_file, True)
    writer = _service(store_file, True)
    try:
        _read_all(reader, queries)  # the reader's index is loaded now
        rng = random.Random(3)
        new = writer.write_many([{"content": t, "domain": "proj", "allow_duplicate": True} for t in _texts(rng, 40)])
        live = [it.id for it in writer.read("deploy cache retry", top_k=50, record=False).items]
        writer.delete(live[0])
        writer.delete(new[-1].id)  # the newest: its rowid is given out again
        writer.write("deploy cache retry webhook rewritten after a delete", domain="proj")
        writer.archive(live[1])
        writer.restore(live[1])
        writer.archive(live[2])
        plain = tmp_path / "plain.db"
        _copy(writer, plain)  # with what is still in the WAL
        slow = _service(plain, False)
        try:
            assert _read_all(reader, queries) == _read_all(slow, queries)
        finally:
            slow.close()
    finally:
        reader.close()
        writer.close()


def test_an_index_that_missed_pruned_log_entries_reloads_in_full(store_file: Path) -> None:
    svc = _service(store_file, True)
    try:
        svc.read("deploy", record=False)
        index = svc.store._index
        reloads = index.reloads
        with svc.store.db.write() as conn:
            conn.execute("DELETE FROM memory_vector_log")  # as if the log had moved on long ago
            conn.execute("INSERT INTO memory_vector_log(seq, vrowid) VALUES (?, 1)", (index.seq + 50,))
        svc.read("deploy", record=False)
        assert index.reloads == reloads + 1
    finally:
        svc.close()


def test_doctor_repairs_reach_the_index(store_file: Path) -> None:
    svc = _service(store_file, True)
    try:
        first = svc.read("deploy cache", top_k=5, record=False).items[0]
        with svc.store.db.read():
            rowid = svc.store.conn.execute("SELECT rowid FROM memories WHERE id = ?", (first.id,)).fetchone()[0]
        with svc.store.db.write():
            svc.store.drop_vector(rowid)
        with svc.store.db.read():
            index = svc.store.vector_index()
            assert index.cosines(np.ones(64, dtype=np.float32), [rowid]) == {}
        with svc.store.db.write():
            svc.store.add_vector(rowid, HashEmbedder().embed_passages([first.content])[0])
        assert svc.read("deploy cache", top_k=5, record=False).items[0].id == first.id
    finally:
        svc.close()


def test_distances_are_the_ones_sqlite_vec_computes_bit_for_bit(store_file: Path) -> None:
    store = Store(store_file)
    try:
        with store.db.read():
            index = store.vector_index()
            rng = np.random.default_rng(0)
            for _ in range(20):
                q = rng.normal(size=64).astype(np.float32)
                sql = store.conn.execute(
                    "SELECT rowid, distance FROM memory_vectors WHERE embedding MATCH ? AND k = 30", (q.tobytes(),)
                ).fetchall()
                got = index.knn(q, 30, index.allowed(None, True))
                assert [(r, 1.0 - d) for r, d in sql] == got
    finally:
        store.close()


def test_a_file_without_the_change_log_is_read_through_sql(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    svc = _service(db, True)
    svc.write("retry the webhook with backoff")
    with svc.store.db.write() as conn:
        for name in ("memory_vector_log_insert", "memory_vector_log_delete", "memory_vector_log_filters"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE memory_vector_log")
    svc.close()
    store = Store(db)
    try:
        with store.db.read():
            assert not vectors.has_log(store.conn) and store.vector_index() is None
    finally:
        store.close()
    svc = _service(db, True)  # binding the model adds the log again
    try:
        assert svc.read("webhook retry", record=False).items
        assert svc.store._index is not None
    finally:
        svc.close()


def test_a_vector_layout_it_does_not_know_is_read_through_the_virtual_table(store_file: Path, monkeypatch) -> None:
    store = Store(store_file)
    try:
        with store.db.read():
            known = store.vector_index()
            expected = known.knn(np.ones(64, dtype=np.float32), 40, known.allowed(None, False))
        monkeypatch.setattr(vectors, "_chunk_blocks", lambda conn, dim: iter([None]))
        fresh = vectors.VectorIndex(64)
        with store.db.read():
            fresh.sync(store.conn)
            assert fresh.knn(np.ones(64, dtype=np.float32), 40, fresh.allowed(None, False)) == expected
    finally:
        store.close()


def test_the_keyword_pass_asks_for_more_matches_until_enough_pass_the_filters(store_file: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain.db"
    shutil.copy(store_file, plain)
    fast, slow = Store(store_file), Store(plain, vector_index=False)
    try:
        for domains, archived in ((["other"], False), (["global"], True), (["proj", ""], False), (None, False)):
            for k in (5, 40, 300):
                with fast.db.read(), slow.db.read():
                    fast.vector_index()
                    got = fast.fts(
                        ["deploy", "cache", "token"], k, domains=domains, include_archived=archived, tags=None
                    )
                    want = slow.fts(
                        ["deploy", "cache", "token"], k, domains=domains, include_archived=archived, tags=None
                    )
                assert got == want, (domains, archived, k)
    finally:
        fast.close()
        slow.close()
