"""One store contract, two backends: what the PostgreSQL store implements so far behaves exactly
as the SQLite store does (transactions, model binding, memories and their vectors). Each test
runs on a fresh SQLite file and on a fresh PostgreSQL database (skipped, saying why, where the
server cannot start)."""

from __future__ import annotations

import itertools
import multiprocessing
import time

import numpy as np
import pytest

from mnemo_mcp.errors import AmbiguousId, ModelMismatch, NotFound
from mnemo_mcp.storage.store import Store

_names = itertools.count()
DIM = 8


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = Store(tmp_path / "c.db")
    else:
        from mnemo_mcp.storage.pgstore import PgStore

        pg = request.getfixturevalue("pg")
        name = f"contract_{next(_names)}_{int(time.time() * 1000) % 100000}"
        pg.psql(f"CREATE DATABASE {name} OWNER app")
        pg.psql("CREATE EXTENSION vector", database=name)
        s = PgStore(pg.url(database=name))
        s.url = pg.url(database=name)
    yield s
    s.close()


def unit(*xs: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(xs)] = xs
    return v / np.linalg.norm(v)


def row(i: int, **kw) -> dict:
    base = {
        "id": "c" * 8 + f"{i:056x}",  # all share the prefix cccccccc
        "content": f"memory number {i}",
        "memory_type": "note",
        "domain": "proj",
        "tags": ["t"],
        "metadata": {"n": i},
        "concepts": ["memory"],
        "valence": 0.0,
        "access_count": 0,
        "retrieval_count": 0,
        "reciprocal_rank_sum": 0.0,
        "created_at": f"2026-11-{i % 28 + 1:02d}T00:00:00+00:00",
        "updated_at": "2026-11-30T00:00:00+00:00",
        "tier": "working",
        "source": "write",
        "provenance": {"by": "api"},
        "quarantine": None,
    }
    return {**base, **kw}


def test_a_model_is_bound_once_and_another_is_refused(store):
    assert store.bound_model() is None
    store.bind_model("m-1", DIM)
    store.bind_model("m-1", DIM)  # again: nothing changes
    assert store.bound_model() == ("m-1", DIM)
    with pytest.raises(ModelMismatch):
        store.check_model("m-2", DIM)
    with pytest.raises(ModelMismatch):
        store.bind_model("m-1", DIM * 2)


def test_memories_round_trip_update_resolve_and_delete(store):
    store.bind_model("m-1", DIM)
    with store.db.write():
        first = store.insert(row(1), unit(1))
        second = store.insert(row(2, archived=True, quarantine={"reason": "override"}), unit(0, 1))
    with store.db.read():
        got = store.get(row(1)["id"])
        assert got["rowid"] == first and got["tags"] == ["t"] and got["metadata"] == {"n": 1}
        assert got["archived"] is False and store.by_rowids([second])[second]["quarantine"] == {"reason": "override"}
        assert store.memory_count() == 2 and store.max_rowid() == max(first, second) and second > first
        assert store.existing_ids([row(1)["id"], "f" * 64]) == {row(1)["id"]}
        assert store.resolve(row(1)["id"].upper()) == row(1)["id"]
        assert set(store.rows_by_ids([row(2)["id"]])) == {row(2)["id"]}
        assert [m["id"] for m in store.all_memories()] == [row(1)["id"], row(2)["id"]]
    with pytest.raises(AmbiguousId):
        store.resolve("cccccccc")
    with pytest.raises(NotFound):
        store.resolve("b" * 64)
    with store.db.write():
        store.update(row(1)["id"], valence=0.5, metadata={"n": 9}, archived=True)
    with store.db.read():
        assert store.get(row(1)["id"])["valence"] == 0.5 and store.get(row(1)["id"])["metadata"] == {"n": 9}
        assert store.knn(unit(1), 5, domains=None, include_archived=False, tags=None) == []
    with store.db.write():
        assert store.delete(row(1)["id"]) and not store.delete(row(1)["id"])
    with store.db.read():
        assert store.get(row(1)["id"]) is None and store.memory_count() == 1


def test_knn_ranks_by_cosine_and_applies_the_filters(store):
    store.bind_model("m-1", DIM)
    with store.db.write():
        a = store.insert(row(1), unit(1, 0.1))
        b = store.insert(row(2), unit(1, 0.5))
        c = store.insert(row(3, domain="other"), unit(1, 0))
        d = store.insert(row(4, archived=True), unit(1, 0))
    with store.db.read():
        near = store.knn(unit(1), 10, domains=None, include_archived=False, tags=None)
        assert [r for r, _ in near] == [c, a, b] and near[0][1] == pytest.approx(1.0, abs=1e-5)
        assert [r for r, _ in store.knn(unit(1), 10, domains=["proj"], include_archived=True, tags=None)] == [d, a, b]
        assert store.knn(unit(1), 10, domains=["proj"], include_archived=False, tags=["nope"]) == []
        cos = store.cosines(unit(0, 1), [a, b])
        assert cos[b] > cos[a] and set(cos) == {a, b}
        assert np.allclose(store.vector_of(a), unit(1, 0.1), atol=1e-6)


def test_a_failed_write_changes_nothing_and_a_nested_one_undoes_only_itself(store):
    store.bind_model("m-1", DIM)
    with pytest.raises(RuntimeError):
        with store.db.write():
            store.insert(row(1), unit(1))
            raise RuntimeError("boom")
    with store.db.write():
        store.insert(row(2), unit(1))
        with pytest.raises(RuntimeError):
            with store.db.write():
                store.insert(row(3), unit(1))
                raise RuntimeError("inner")
    with store.db.read():
        assert [m["id"] for m in store.all_memories()] == [row(2)["id"]]
    with pytest.raises(RuntimeError):
        with store.db.read():
            with store.db.write():
                pass


def _bump(kind: str, where: str, memory_id: str, times: int) -> None:
    if kind == "sqlite":
        s = Store(where)
    else:
        from mnemo_mcp.storage.pgstore import PgStore

        s = PgStore(where)
    try:
        for _ in range(times):
            with s.db.write():
                count = s.get(memory_id)["access_count"]
                s.update(memory_id, access_count=count + 1)
    finally:
        s.close()


def test_four_processes_incrementing_one_memory_lose_no_update(store, tmp_path):
    store.bind_model("m-1", DIM)
    with store.db.write():
        store.insert(row(1), unit(1))
    kind, where = ("postgresql", store.url) if hasattr(store, "url") else ("sqlite", str(tmp_path / "c.db"))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_bump, args=(kind, where, row(1)["id"], 25)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    with store.db.read():
        assert store.get(row(1)["id"])["access_count"] == 100


def test_postgresql_refuses_text_with_a_nul_naming_it_and_stores_nothing(store):
    if not hasattr(store, "url"):
        pytest.skip("SQLite text holds NUL; the PostgreSQL seam refuses it")
    from mnemo_mcp.errors import StoreUnavailable

    store.bind_model("m-1", DIM)
    with pytest.raises(StoreUnavailable, match="NUL"):
        with store.db.write():
            store.insert(row(1, content="before\x00after"), unit(1))
    with store.db.read():
        assert store.memory_count() == 0
