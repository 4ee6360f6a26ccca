"""The SQLite store (mnemo_mcp.storage), continued: transactions (failures roll back, concurrent
read-modify-writes lose nothing) and the read log."""

from __future__ import annotations

import json
import threading

import apsw
import numpy as np
import pytest
from store_helpers import DIM, STAMP, fts_rowids, hex_id, knn_rowids, make_row, new_rng, open_store, unit_vector

from mnemo_mcp.storage.store import Store


@pytest.fixture
def rng() -> np.random.Generator:
    return new_rng()


@pytest.fixture
def store(tmp_path):
    yield from open_store(tmp_path)


# --- transactions ----------------------------------------------------------------------------


class Boom(Exception):
    pass


def test_failed_write_transaction_leaves_nothing_behind(store, rng):
    v = unit_vector(rng)
    with pytest.raises(Boom):
        with store.db.write():
            store.insert(make_row(hex_id(1), "half written webhook", tags=["ghost"]), v)
            store.put_cues([(hex_id(1), "webhook", 0.9, 1, STAMP)])
            raise Boom
    with store.db.read() as conn:
        assert store.get(hex_id(1)) is None
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM cues").fetchone()[0] == 0
    assert fts_rowids(store, "webhook") == set()
    assert knn_rowids(store, v, include_archived=True) == set()


def test_store_stays_usable_after_a_failed_write_transaction(store, rng):
    with pytest.raises(Boom):
        with store.db.write():
            store.insert(make_row(hex_id(1), "rolled back"), unit_vector(rng))
            raise Boom
    with store.db.write():
        store.insert(make_row(hex_id(1), "committed"), unit_vector(rng))
    with store.db.read():
        assert store.get(hex_id(1))["content"] == "committed"


def test_failure_in_a_nested_write_rolls_back_the_whole_transaction(store, rng):
    with pytest.raises(Boom):
        with store.db.write():
            store.insert(make_row(hex_id(1), "outer"), unit_vector(rng))
            with store.db.write():
                store.insert(make_row(hex_id(2), "inner"), unit_vector(rng))
                raise Boom
    with store.db.read():
        assert store.get(hex_id(1)) is None
        assert store.get(hex_id(2)) is None


def test_failed_commit_rolls_back_and_leaves_the_store_usable(tmp_path, rng):
    # KNOWN BUG (mnemo_mcp.storage.db.Database.write): when COMMIT itself fails (here a deferred
    # constraint; in the field e.g. SQLITE_FULL or a busy COMMIT that outlives the retry budget),
    # the transaction is left open: the write lock stays held against other connections and the
    # next `write()` on this connection fails with "cannot start a transaction within a transaction".
    path = tmp_path / "m.db"
    s = Store(path)
    s.bind_model("test-model", DIM)
    other = Store(path, busy_timeout_ms=200)
    try:
        with s.db.write() as conn:
            conn.execute(
                "CREATE TABLE parent(id INTEGER PRIMARY KEY);"
                "CREATE TABLE child(pid INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)"
            )
        with pytest.raises(apsw.ConstraintError):
            with s.db.write() as conn:
                s.insert(make_row(hex_id(1), "never committed"), unit_vector(rng))
                conn.execute("INSERT INTO child VALUES (42)")  # fails only at COMMIT
        with other.db.read():
            assert other.get(hex_id(1)) is None
        with other.db.write():  # the write lock must have been released
            other.insert(make_row(hex_id(2), "from the other connection"), unit_vector(rng))
        with s.db.write():  # and this connection must be able to start a new transaction
            s.insert(make_row(hex_id(3), "after the failure"), unit_vector(rng))
        with s.db.read():
            assert s.get(hex_id(1)) is None
            assert s.get(hex_id(3)) is not None
    finally:
        other.close()
        s.close()


def test_committed_write_is_visible_to_another_connection(tmp_path, rng):
    path = tmp_path / "m.db"
    a = Store(path)
    a.bind_model("test-model", DIM)
    b = Store(path)
    try:
        with a.db.write():
            a.insert(make_row(hex_id(1), "shared"), unit_vector(rng))
        with b.db.read():
            assert b.get(hex_id(1))["content"] == "shared"
    finally:
        a.close()
        b.close()


def test_two_stores_in_two_threads_lose_no_read_modify_write_update(tmp_path, rng):
    path = tmp_path / "shared.db"
    first = Store(path)
    first.bind_model("test-model", DIM)
    with first.db.write():
        first.insert(make_row(hex_id(1), "counter"), unit_vector(rng))
    second = Store(path)
    stores = [first, second]
    per_thread = 200
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def work(s: Store) -> None:
        try:
            barrier.wait()
            for _ in range(per_thread):
                with s.db.write():
                    count = s.get(hex_id(1))["access_count"]
                    s.update(hex_id(1), access_count=count + 1)
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        with first.db.read():
            assert first.get(hex_id(1))["access_count"] == per_thread * len(stores)
    finally:
        first.close()
        second.close()


def test_one_store_shared_by_two_threads_loses_no_read_modify_write_update(store, rng):
    with store.db.write():
        store.insert(make_row(hex_id(1), "counter"), unit_vector(rng))
    per_thread = 200
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            barrier.wait()
            for _ in range(per_thread):
                with store.db.write():
                    count = store.get(hex_id(1))["access_count"]
                    store.update(hex_id(1), access_count=count + 1)
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with store.db.read():
        assert store.get(hex_id(1))["access_count"] == 2 * per_thread


# --- read log --------------------------------------------------------------------------------


def _read(n: int) -> dict:
    return {
        "id": f"read-{n}",
        "query": f"query {n}",
        "query_concepts": ["webhook", f"c{n}"],
        "domain": None,
        "results": [[hex_id(n), 1]],
        "created_at": STAMP,
    }


def test_record_read_round_trips_a_read(store):
    with store.db.write():
        store.record_read(_read(1), keep=10)
    with store.db.read():
        assert store.get_read("read-1") == _read(1)
        assert store.get_read("read-404") is None


def test_record_read_keeps_only_the_last_keep_reads(store):
    keep = 3
    with store.db.write():
        for n in range(10):
            store.record_read(_read(n), keep=keep)
    with store.db.read() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM reads ORDER BY rowid")]
        assert ids == ["read-7", "read-8", "read-9"]
        assert store.get_read("read-6") is None
        assert store.get_read("read-9")["query"] == "query 9"


def test_record_read_keeps_every_read_while_under_the_limit(store):
    with store.db.write():
        for n in range(5):
            store.record_read(_read(n), keep=100)
    with store.db.read() as conn:
        assert conn.execute("SELECT count(*) FROM reads").fetchone()[0] == 5


def test_record_read_keeps_the_limit_across_separate_transactions(store):
    for n in range(8):
        with store.db.write():
            store.record_read(_read(n), keep=4)
    with store.db.read() as conn:
        assert [r[0] for r in conn.execute("SELECT id FROM reads ORDER BY rowid")] == [
            "read-4",
            "read-5",
            "read-6",
            "read-7",
        ]


def test_reads_results_are_stored_as_json(store):
    with store.db.write():
        store.record_read(_read(1), keep=10)
    with store.db.read() as conn:
        raw = conn.execute("SELECT results, query_concepts FROM reads WHERE id = 'read-1'").fetchone()
    assert json.loads(raw[0]) == [[hex_id(1), 1]]
    assert json.loads(raw[1]) == ["webhook", "c1"]


def test_the_session_digest_is_ordered_by_the_core_rule(store, rng):
    from mnemo_mcp.core import lifecycle as lc

    spec = [
        ("working", 0.9, 0.0),
        ("pattern", 0.4, -0.2),
        ("history", 0.5, 0.0),
        ("working", 0.5, 0.9),
        ("working", 0.6, -0.4),
    ]
    with store.db.write():
        for i, (tier, quality, valence) in enumerate(spec):
            store.insert(
                make_row(f"{i:064x}", f"memory {i}", tier=tier, quality=quality, valence=valence), unit_vector(rng)
            )
    with store.db.read():
        top = store.top_memories(None, 10, valence_weight=lc.DIGEST_VALENCE_WEIGHT)
    got = [(m["tier"], m["quality"], m["valence"]) for m in top]
    assert got == sorted(spec, key=lambda t: lc.digest_order(*t))


def test_batched_learning_writes_read_back_as_written_in_one_statement_each(store, rng):
    with store.db.write():
        for i in (1, 2):
            store.insert(make_row(hex_id(i), f"memory {i}"), unit_vector(rng))
        store.put_associations([("b", "a", 0.4, 0.1, 2, STAMP), ("c", "d", 0.2, -0.3, 1, STAMP)])
        store.put_cues([(hex_id(1), "webhook", 0.5, 1, STAMP), (hex_id(2), "retry", -0.2, 3, STAMP)])
        store.record_outcomes(
            [{"id": hex_id(2), "valence": 0.25, "feedback_count": 4, "metadata": {"k": [1]}, "updated_at": STAMP}]
        )
        events = [
            {
                "memory_id": hex_id(i),
                "read_id": None,
                "outcome": 0.5 * i,
                "rate": 0.3,
                "valence_before": 0.0,
                "valence_after": 0.1 * i,
                "source": "test",
                "created_at": STAMP,
            }
            for i in (1, 2, 1)
        ]
        store.add_feedback_events(events)
    with store.db.read():
        # Pairs are one link whatever their order; keys come back with a < b.
        assert store.associations_between([("a", "b"), ("d", "c"), ("x", "y")]) == {
            ("a", "b"): (0.4, 0.1, 2),
            ("c", "d"): (0.2, -0.3, 1),
        }
        assert store.cues_between([hex_id(1), hex_id(2)], ["webhook", "retry"]) == {
            (hex_id(1), "webhook"): (0.5, 1),
            (hex_id(2), "retry"): (-0.2, 3),
        }
        row = store.get(hex_id(2))
        assert (row["valence"], row["feedback_count"], row["metadata"]) == (0.25, 4, {"k": [1]})
        assert store.get(hex_id(1))["valence"] == 0.0
        assert [e["outcome"] for e in store.feedback_events()] == [0.5, 1.0, 0.5]  # in the order given
        assert store.existing_ids([hex_id(1), hex_id(3)]) == {hex_id(1)}
