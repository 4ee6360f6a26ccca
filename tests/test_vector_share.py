"""The vector index's snapshot, shared by the processes of one machine (storage/vecshare.py): a
process that loads later maps the snapshot instead of copying every vector, applies what changed
since, and reads exactly what sqlite-vec's scan gives; a snapshot it may not use is never used."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService
from mnemo_mcp.storage import vecshare, vectors

WORDS = "deploy build cache retry webhook queue postgres redis timeout token docker test flaky index".split()


@pytest.fixture(autouse=True)
def share_small_stores(monkeypatch):
    monkeypatch.setattr(vecshare, "SHARE_FROM", 0)
    monkeypatch.setattr(vecshare, "MIN_ROOM", 8)


def _service(db: Path) -> MemoryService:
    s = Settings(db=db, project="proj", auto_consolidate=False, auto_backup=False)
    return MemoryService(s, HashEmbedder())


def _texts(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.sample(WORDS, rng.randint(3, 7))) + f" note {i}" for i in range(n)]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "memory.db"
    svc = _service(db)
    rng = random.Random(1)
    ids = [r.id for r in svc.write_many([{"content": t, "allow_duplicate": True} for t in _texts(rng, 300)])]
    for mid in ids[::7]:
        svc.archive(mid)
    svc.close()
    return db


def _fresh_index(svc: MemoryService) -> vectors.VectorIndex:
    """The index a new process would have: none of this process's is reused."""
    vectors._INDEXES.clear()
    svc.store._index, svc.store._index_checked = None, False
    with svc.store.db.read():
        index = svc.store.vector_index()
    assert index is not None
    return index


def _exact(svc: MemoryService, index: vectors.VectorIndex, seed: int) -> None:
    """The index's nearest memories are sqlite-vec's, bit for bit, with and without archived ones."""
    rng = np.random.default_rng(seed)
    with svc.store.db.read():
        index = svc.store.vector_index()
        for i in range(15):
            q = rng.normal(size=64).astype(np.float32)
            live_only = i % 2 == 0
            sql = svc.store.scan_knn(q, 25, live_only=live_only)
            assert index.knn(q, 25, index.allowed(None, not live_only)) == [(r, 1.0 - d) for r, d in sql]


def _snapshots(db: Path) -> list[str]:
    folder = vecshare.folder_of(str(db))
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_a_later_process_maps_the_snapshot_and_applies_what_changed_since(store: Path) -> None:
    first = _service(store)
    try:
        loader = _fresh_index(first)
        assert loader.snapshot_loads == 0 and loader.mapped  # it loaded from the file, then shared
        assert len(_snapshots(store)) == 1
        written = first.write_many([{"content": t, "allow_duplicate": True} for t in _texts(random.Random(2), 5)])
        first.delete(written[0].id)
        first.archive(written[1].id)
        later = _fresh_index(first)
        assert later is not loader
        assert later.snapshot_loads == 1 and later.mapped
        assert isinstance(later.matrix, np.memmap)
        _exact(first, later, seed=3)
    finally:
        first.close()


def test_every_array_of_the_index_is_the_snapshots_pages_and_what_changed_stays_in_the_process(
    store: Path,
) -> None:
    # Row ids, norms, flags and domains are 23 bytes a memory: mapped too, not copied into each
    # process (3.5 MB of each at 100k memories); the file keeps the rowids as taken.
    first = _service(store)
    try:
        loader = _fresh_index(first)
        before = vecshare.read(loader._snapshot["path"], mapped=())[1]["archived"].copy()
        kept = first.read("release notes", top_k=1).items[0].id  # a live memory the snapshot holds
        first.write_many([{"content": t, "allow_duplicate": True} for t in _texts(random.Random(4), 3)])
        first.archive(kept)
        later = _fresh_index(first)
        assert later.snapshot_loads == 1
        for name in later._ARRAYS:
            assert isinstance(getattr(later, name), np.memmap), name
        taken = later._snapshot["rowids"]
        assert isinstance(taken, np.memmap) and not taken.flags.writeable
        assert len(taken) < later.n  # the memories written since are this process's rows only
        on_file = vecshare.read(later._snapshot["path"], mapped=())[1]
        assert np.array_equal(on_file["rowids"][: len(taken)], taken)
        assert np.array_equal(on_file["archived"], before)  # the archive changed this process's pages only
        assert later.archived[: len(taken)].sum() == before[: len(taken)].sum() + 1
        _exact(first, later, seed=5)
    finally:
        first.close()


def test_memories_past_the_spare_rows_load_again_into_a_new_snapshot(store: Path) -> None:
    svc = _service(store)
    try:
        index = _fresh_index(svc)
        before = _snapshots(store)
        room = len(index.rowids) - index.n
        svc.write_many([{"content": t, "allow_duplicate": True} for t in _texts(random.Random(4), room + 3)])
        _exact(svc, index, seed=5)
        after = _snapshots(store)
        assert len(after) == 1 and after != before  # the new snapshot replaced the old
        assert index.mapped and len(index.rowids) - index.n >= vecshare.MIN_ROOM
    finally:
        svc.close()


def test_a_restored_file_at_the_same_path_does_not_use_the_old_files_snapshot(store: Path, tmp_path: Path) -> None:
    svc = _service(store)
    try:
        _fresh_index(svc)
    finally:
        svc.close()
    other = tmp_path / "other.db"
    svc = _service(other)
    svc.write_many([{"content": t, "allow_duplicate": True} for t in _texts(random.Random(6), 40)])
    svc.close()
    os.replace(other, store)  # another file (another inode) where the first was
    for side in ("-wal", "-shm"):
        if Path(f"{other}{side}").exists():
            os.replace(f"{other}{side}", f"{store}{side}")
    svc = _service(store)
    try:
        index = _fresh_index(svc)
        assert index.snapshot_loads == 0
        _exact(svc, index, seed=7)
    finally:
        svc.close()


def test_a_damaged_snapshot_is_passed_over(store: Path) -> None:
    svc = _service(store)
    try:
        _fresh_index(svc)
        (name,) = _snapshots(store)
        path = os.path.join(vecshare.folder_of(str(store)), name)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
        index = _fresh_index(svc)
        assert index.snapshot_loads == 0
        _exact(svc, index, seed=8)
    finally:
        svc.close()


def test_without_a_writable_folder_nothing_is_shared_and_reads_stay_exact(store: Path) -> None:
    Path(vecshare.folder_of(str(store))).write_text("not a folder")
    svc = _service(store)
    try:
        index = _fresh_index(svc)
        assert not index.mapped
        svc.write_many([{"content": t, "allow_duplicate": True} for t in _texts(random.Random(9), 30)])
        _exact(svc, index, seed=10)
    finally:
        svc.close()


def test_small_stores_write_no_snapshot(store: Path, monkeypatch) -> None:
    monkeypatch.setattr(vecshare, "SHARE_FROM", 10_000)
    svc = _service(store)
    try:
        index = _fresh_index(svc)
        assert not index.mapped and _snapshots(store) == []
    finally:
        svc.close()


def test_a_new_snapshot_removes_the_ones_nobody_will_load(store: Path) -> None:
    folder = Path(vecshare.folder_of(str(store)))
    folder.mkdir()
    replaced = folder / "1-2-64-000000000000007.vec"  # of a file this one replaced (another inode)
    dead_writer = folder / f"1-2-64-000000000000009.vec.{2**22 + 12345}.tmp"
    kept = folder / "notes.txt"  # not a snapshot: left alone
    for path in (replaced, dead_writer, kept):
        path.write_bytes(b"x")
    svc = _service(store)
    try:
        _fresh_index(svc)
        assert sorted(p.name for p in folder.iterdir() if p.suffix != ".vec") == ["notes.txt"]
        assert not replaced.exists() and len(_snapshots(store)) == 2  # its own snapshot and notes.txt
    finally:
        svc.close()


def test_no_snapshot_takes_the_last_of_the_disk(store: Path, monkeypatch) -> None:
    monkeypatch.setattr(vecshare, "KEEP_FREE", 2**62)  # as if the disk were nearly full
    svc = _service(store)
    try:
        index = _fresh_index(svc)
        assert not index.mapped and _snapshots(store) == []
        _exact(svc, index, seed=11)
    finally:
        svc.close()


def test_a_deleted_memory_leaves_no_copy_of_its_vector_in_the_snapshot(store: Path) -> None:
    svc = _service(store)
    try:
        index = _fresh_index(svc)
        (name,) = _snapshots(store)
        path = os.path.join(vecshare.folder_of(str(store)), name)
        victim = svc.read("deploy cache retry", top_k=1, record=False).items[0]
        with svc.store.db.read():
            rowid = svc.store.conn.execute("SELECT rowid FROM memories WHERE id = ?", (victim.id,)).fetchone()[0]
            vector = svc.store.conn.execute(
                "SELECT embedding FROM memory_vectors WHERE rowid = ?", (rowid,)
            ).fetchone()[0]
        assert vector in Path(path).read_bytes()
        svc.delete(victim.id)
        _exact(svc, index, seed=12)  # the index applies the delete, and writes it through
        assert vector not in Path(path).read_bytes()
        assert _fresh_index(svc).snapshot_loads == 1  # the file is still the one a later process maps
        _exact(svc, svc.store._index, seed=13)
    finally:
        svc.close()


CHILD = """
import json, sys
import numpy as np
from mnemo_mcp.storage import vecshare
from mnemo_mcp.storage.store import Store
vecshare.SHARE_FROM = 0
store = Store(sys.argv[1])
with store.db.read():
    index = store.vector_index()
    rng = np.random.default_rng(int(sys.argv[2]))
    exact = True
    for _ in range(10):
        q = rng.normal(size=64).astype(np.float32)
        sql = [(r, 1.0 - d) for r, d in store.scan_knn(q, 20, live_only=True)]
        exact &= index.knn(q, 20, index.allowed(None, False)) == sql
print(json.dumps({"mapped": index.mapped, "snapshot_loads": index.snapshot_loads, "exact": exact}))
store.close()
"""


def _in_another_process(db: Path, seed: int) -> dict:
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", CHILD, str(db), str(seed)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_another_process_maps_the_snapshot_one_wrote_and_reads_exactly(store: Path) -> None:
    first = _in_another_process(store, seed=14)
    assert first == {"mapped": True, "snapshot_loads": 0, "exact": True}  # loaded, wrote, mapped
    svc = _service(store)
    try:
        written = svc.write_many([{"content": t, "allow_duplicate": True} for t in _texts(random.Random(15), 12)])
        svc.delete(written[3].id)
        svc.archive(written[4].id)
    finally:
        svc.close()
    assert _in_another_process(store, seed=16) == {"mapped": True, "snapshot_loads": 1, "exact": True}


def test_two_processes_that_load_at_once_map_the_same_snapshot(store: Path, monkeypatch) -> None:
    svc = _service(store)
    try:
        first = _fresh_index(svc)
        (name,) = _snapshots(store)
        path = os.path.join(vecshare.folder_of(str(store)), name)
        inode = os.stat(path).st_ino
        # A second process that loaded the same changes before the first file was named: its
        # own write must leave the first one's file in place, and it maps that file.
        monkeypatch.setattr(vecshare, "newest", lambda *a: None)
        second = _fresh_index(svc)
        assert second.mapped and first is not second
        assert os.stat(path).st_ino == inode and _snapshots(store) == [name]
        assert os.path.samestat(os.stat(second._snapshot["path"]), os.stat(path))
        _exact(svc, second, seed=17)
    finally:
        svc.close()


def test_a_snapshot_written_at_the_same_moment_as_anothers_leaves_the_first_in_place(tmp_path: Path) -> None:
    first, second, name = tmp_path / "a.tmp", tmp_path / "b.tmp", tmp_path / "k-000000000000001.vec"
    first.write_bytes(b"first")
    second.write_bytes(b"second")
    vecshare._publish(str(first), str(name))
    vecshare._publish(str(second), str(name))  # both passed the check for the name before either wrote
    assert name.read_bytes() == b"first"
    assert not first.exists() and not second.exists()
