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


def test_outcomes_feedback_events_links_and_cues_round_trip(store):
    store.bind_model("m-1", DIM)
    one, two = row(1)["id"], row(2)["id"]
    with store.db.write():
        store.insert(row(1), unit(1))
        store.insert(row(2), unit(0, 1))
        store.record_outcomes(
            [{"id": one, "valence": 0.3, "feedback_count": 1, "metadata": {"k": 1}, "updated_at": "t1"}]
        )
        events = [
            {"memory_id": one, "read_id": "r1", "outcome": 1.0, "rate": 0.3, "valence_before": 0.0, "valence_after": 0.3,
             "source": "explicit", "created_at": "t1", "by_user": "alice"},
            {"memory_id": two, "read_id": None, "outcome": -0.5, "rate": 0.3, "valence_before": 0.0,
             "valence_after": -0.15, "source": "hook:check", "created_at": "t2", "by_user": "bob"},
        ]  # fmt: skip
        store.add_feedback_events(events)
        store.put_associations([("retry", "backoff", 0.2, 0.1, 1, "t1"), ("backoff", "retry", 0.4, 0.2, 2, "t2")])
        store.put_cues([(one, "webhook", 0.5, 1, "t1"), (one, "retry", 0.2, 1, "t1"), (one, "webhook", 0.6, 2, "t2")])
        store.record_usage(
            [{"id": two, "access_count": 3, "retrieval_count": 2, "reciprocal_rank_sum": 1.5,
              "last_accessed_at": "t3", "quality": 0.6, "metadata": {"u": 1}}]
        )  # fmt: skip
    with store.db.read():
        got = store.get(one)
        assert (got["valence"], got["feedback_count"], got["metadata"]) == (0.3, 1, {"k": 1})
        used = store.get(two)
        assert (used["access_count"], used["quality"], used["metadata"]) == (3, 0.6, {"u": 1})
        logged = store.feedback_events()
        assert [(e["memory_id"], e["outcome"], e["by_user"]) for e in logged] == [
            (one, 1.0, "alice"),
            (two, -0.5, "bob"),
        ]
        assert logged[0]["seq"] < logged[1]["seq"] and store.feedback_events(two, limit=1)[0]["source"] == "hook:check"
        assert store.positive_outcomes([one, two]) == {one: 1}
        assert store.associations_between([("retry", "backoff"), ("x", "y")]) == {("backoff", "retry"): (0.4, 0.2, 2)}
        assert [a["a"] + "-" + a["b"] for a in store.associations()] == ["backoff-retry"]
        assert store.cues_between([one], ["webhook", "other"]) == {(one, "webhook"): (0.6, 2)}
        assert store.cue_values([one], ["webhook", "retry"]) == {one: {"webhook": (0.6, "t2"), "retry": (0.2, "t1")}}
        assert [(c["concept"], c["count"]) for c in store.cues()] == [("retry", 1), ("webhook", 2)]


def test_the_read_log_keeps_the_newest_and_none_too_old(store):
    with store.db.write():
        for i in range(5):
            read = {"id": f"r{i}", "query": "", "query_concepts": ["c"], "domain": None, "results": [["x", 1]],
                    "created_at": f"2026-11-0{i + 1}T00:00:00+00:00"}  # fmt: skip
            store.record_read(read, keep=3, since="2026-11-02T00:00:00+00:00")
    with store.db.read():
        assert store.get_read("r0") is None and store.get_read("r1") is None
        assert store.get_read("r4")["query_concepts"] == ["c"] and store.get_read("r4")["results"] == [["x", 1]]
        assert store.get_read("r2") is not None


def test_pages_of_memories_stale_judgements_and_superseded_ones(store):
    store.bind_model("m-1", DIM)
    with store.db.write():
        first = store.insert(row(1, provenance={"by": "api", "judged": 4}), unit(1))
        store.insert(row(2, provenance={"by": "api"}, superseded_by=row(3)["id"]), unit(1))
        store.insert(row(3), unit(1))
    with store.db.read():
        assert [m["id"] for m in store.memories_after(first, 10)] == [row(2)["id"], row(3)["id"]]
        assert [m["id"] for m in store.memories_after(0, 1)] == [row(1)["id"]]
        assert [m["id"] for m in store.unjudged(4, 10)] == [row(2)["id"], row(3)["id"]]
        assert store.superseded_ids(row(3)["id"]) == [row(2)["id"]]
