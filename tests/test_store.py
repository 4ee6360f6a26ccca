"""The SQLite store (mnemo_mcp.storage): schema, model binding, CRUD, indexes, ids, transactions."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest
from store_helpers import DIM, STAMP, fts_rowids, hex_id, knn_rowids, make_row, new_rng, open_store, unit_vector

from mnemo_mcp.errors import AmbiguousId, MnemoError, ModelMismatch, NotFound
from mnemo_mcp.storage.migrations import MIGRATIONS, migrate
from mnemo_mcp.storage.store import Store


@pytest.fixture
def rng() -> np.random.Generator:
    return new_rng()


@pytest.fixture
def store(tmp_path):
    yield from open_store(tmp_path)


# --- schema and migrations -------------------------------------------------------------------


def test_migrations_create_the_schema_and_record_every_version(tmp_path):
    s = Store(tmp_path / "m.db")
    try:
        with s.db.read() as conn:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")}
            versions = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
        for table in (
            "meta",
            "memories",
            "memories_fts",
            "memories_fts_vocab",
            "reads",
            "feedback_events",
            "associations",
            "cues",
            "consolidation_runs",
            "schema_migrations",
            "memories_fts_insert",
            "memories_fts_delete",
            "memories_fts_update",
        ):
            assert table in names
        assert [v for v, _ in versions] == [m[0] for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    finally:
        s.close()


def test_reopening_a_migrated_database_changes_nothing(tmp_path, rng):
    path = tmp_path / "m.db"
    s = Store(path)
    s.bind_model("test-model", DIM)
    with s.db.write():
        s.insert(make_row(hex_id(1), "kept across reopen"), unit_vector(rng))
    with s.db.read() as conn:
        applied_at = conn.execute("SELECT applied_at FROM schema_migrations").fetchall()
    s.close()

    s2 = Store(path)
    try:
        assert migrate(s2.db) == MIGRATIONS[-1][0]
        with s2.db.read() as conn:
            assert conn.execute("SELECT applied_at FROM schema_migrations").fetchall() == applied_at
            assert s2.get(hex_id(1))["content"] == "kept across reopen"
        assert s2.bound_model() == ("test-model", DIM)
    finally:
        s2.close()


def test_database_file_is_created_owner_only(tmp_path, rng):
    path = tmp_path / "private" / "memory.db"
    s = Store(path)
    try:
        s.bind_model("test-model", DIM)
        with s.db.write():
            s.insert(make_row(hex_id(1), "secret"), unit_vector(rng))
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
        wal = path.with_name(path.name + "-wal")
        if wal.exists():
            assert stat.S_IMODE(os.stat(wal).st_mode) & 0o077 == 0
    finally:
        s.close()


def test_database_path_pointing_at_a_directory_is_refused(tmp_path):
    with pytest.raises(MnemoError, match="directory"):
        Store(tmp_path)


def test_database_with_a_newer_schema_version_asks_for_an_upgrade(tmp_path):
    path = tmp_path / "m.db"
    s = Store(path)
    with s.db.write() as conn:
        conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
            (MIGRATIONS[-1][0] + 1, "from the future", STAMP),
        )
    s.close()
    with pytest.raises(MnemoError) as err:
        Store(path)
    message = str(err.value)
    assert "upgrade" in message.lower()
    assert str(MIGRATIONS[-1][0] + 1) in message


# --- model binding ---------------------------------------------------------------------------


def test_unbound_database_accepts_any_model(tmp_path):
    s = Store(tmp_path / "m.db")
    try:
        assert s.bound_model() is None
        s.check_model("anything", 123)  # no error
    finally:
        s.close()


def test_bound_model_is_recorded(store):
    assert store.bound_model() == ("test-model", DIM)
    store.check_model("test-model", DIM)
    store.check_model("test-model")  # name-only check


def test_check_model_with_another_name_raises_model_mismatch_naming_the_env_var(store):
    with pytest.raises(ModelMismatch) as err:
        store.check_model("other-model", DIM)
    assert "MNEMO_EMBED_MODEL" in str(err.value)
    assert "test-model" in str(err.value)


def test_check_model_with_another_dimension_raises_model_mismatch_naming_the_env_var(store):
    with pytest.raises(ModelMismatch) as err:
        store.check_model("test-model", DIM * 2)
    assert "MNEMO_EMBED_MODEL" in str(err.value)


def test_binding_another_model_is_refused_and_keeps_the_first_binding(store):
    with pytest.raises(ModelMismatch):
        store.bind_model("other-model", DIM)
    assert store.bound_model() == ("test-model", DIM)


def test_model_binding_survives_reopening(tmp_path):
    path = tmp_path / "m.db"
    s = Store(path)
    s.bind_model("test-model", DIM)
    s.close()
    s2 = Store(path)
    try:
        with pytest.raises(ModelMismatch, match="MNEMO_EMBED_MODEL"):
            s2.check_model("other-model", DIM)
    finally:
        s2.close()


# --- insert / get / update / delete ----------------------------------------------------------


def test_insert_then_get_returns_the_row_with_defaults(store, rng):
    row = make_row(hex_id(1), "Retry the webhook.", domain="ops", tags=["webhooks", "retry"])
    with store.db.write():
        rowid = store.insert(row, unit_vector(rng))
    with store.db.read():
        got = store.get(hex_id(1))
    assert got["rowid"] == rowid
    for key in ("id", "content", "memory_type", "domain", "tags", "metadata", "concepts", "created_at", "updated_at"):
        assert got[key] == row[key]
    assert got["valence"] == 0.0
    assert got["quality"] == 0.5
    assert got["access_count"] == 0
    assert got["retrieval_count"] == 0
    assert got["feedback_count"] == 0
    assert got["archived"] is False
    assert got["last_accessed_at"] is None


def test_get_of_an_unknown_id_is_none(store):
    with store.db.read():
        assert store.get(hex_id(99)) is None


def test_update_changes_only_the_given_fields(store, rng):
    with store.db.write():
        store.insert(make_row(hex_id(1), "original", tags=["a"]), unit_vector(rng))
        store.update(
            hex_id(1), tags=["b", "c"], metadata={"k": [1, 2]}, valence=0.25, access_count=3, updated_at="later"
        )
    with store.db.read():
        got = store.get(hex_id(1))
    assert got["tags"] == ["b", "c"]
    assert got["metadata"] == {"k": [1, 2]}
    assert got["valence"] == 0.25
    assert got["access_count"] == 3
    assert got["updated_at"] == "later"
    assert got["content"] == "original"
    assert got["created_at"] == STAMP


def test_delete_removes_the_memory_its_vector_and_its_learning_state(store, rng):
    v1, v2 = unit_vector(rng), unit_vector(rng)
    with store.db.write():
        r1 = store.insert(make_row(hex_id(1), "to delete"), v1)
        r2 = store.insert(make_row(hex_id(2), "to keep"), v2)
        for mid in (hex_id(1), hex_id(2)):
            store.put_cues([(mid, "webhook", 0.5, 1, STAMP)])
            store.add_feedback_events(
                [
                    {
                        "memory_id": mid,
                        "read_id": None,
                        "outcome": 1.0,
                        "rate": 0.3,
                        "valence_before": 0.0,
                        "valence_after": 0.3,
                        "source": "test",
                        "created_at": STAMP,
                    }
                ]
            )
        assert store.delete(hex_id(1)) is True
    with store.db.read():
        assert store.get(hex_id(1)) is None
        assert store.get(hex_id(2)) is not None
        assert store.cosines(v1, [r1, r2]).keys() == {r2}
        assert store.cues_between([hex_id(1), hex_id(2)], ["webhook"]) == {(hex_id(2), "webhook"): (0.5, 1)}
        assert store.feedback_events(hex_id(1)) == []
        assert len(store.feedback_events(hex_id(2))) == 1
    assert r1 not in knn_rowids(store, v1, include_archived=True)


def test_deleting_an_unknown_id_returns_false(store):
    with store.db.write():
        assert store.delete(hex_id(7)) is False


def test_all_memories_lists_rows_in_insertion_order(store, rng):
    with store.db.write():
        for n in (3, 1, 2):
            store.insert(make_row(hex_id(n), f"memory {n}"), unit_vector(rng))
    with store.db.read():
        assert [m["id"] for m in store.all_memories()] == [hex_id(3), hex_id(1), hex_id(2)]


# --- full-text index -------------------------------------------------------------------------


def _fts_integrity_ok(store: Store) -> None:
    with store.db.write() as conn:
        # With rank=1, FTS5 also checks the index against the external content table.
        conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")


def test_full_text_index_follows_inserts(store, rng):
    with store.db.write():
        rowid = store.insert(make_row(hex_id(1), "Kubernetes pods restart", tags=["cluster"]), unit_vector(rng))
    assert fts_rowids(store, "kubernetes") == {rowid}
    assert fts_rowids(store, "cluster") == {rowid}  # tags are indexed too
    assert fts_rowids(store, "docker") == set()
    _fts_integrity_ok(store)


def test_full_text_index_follows_tag_updates(store, rng):
    with store.db.write():
        rowid = store.insert(make_row(hex_id(1), "Deploy notes", tags=["kubernetes"]), unit_vector(rng))
        store.update(hex_id(1), tags=["nomad"])
    assert fts_rowids(store, "kubernetes") == set()
    assert fts_rowids(store, "nomad") == {rowid}
    assert fts_rowids(store, "deploy") == {rowid}
    _fts_integrity_ok(store)


def test_full_text_index_follows_content_updates(store, rng):
    with store.db.write():
        rowid = store.insert(make_row(hex_id(1), "old wording"), unit_vector(rng))
        store.update(hex_id(1), content="fresh phrasing")
    assert fts_rowids(store, "wording") == set()
    assert fts_rowids(store, "phrasing") == {rowid}
    _fts_integrity_ok(store)


def test_full_text_index_follows_deletes(store, rng):
    with store.db.write():
        r1 = store.insert(make_row(hex_id(1), "webhook retry", tags=["ops"]), unit_vector(rng))
        r2 = store.insert(make_row(hex_id(2), "webhook signature"), unit_vector(rng))
        store.delete(hex_id(1))
    assert fts_rowids(store, "webhook") == {r2}
    assert fts_rowids(store, "retry") == set()
    assert fts_rowids(store, "ops") == set()
    assert r1 != r2
    _fts_integrity_ok(store)


def test_fts_honours_domain_archived_and_tag_filters(store, rng):
    with store.db.write():
        a = store.insert(make_row(hex_id(1), "webhook one", domain="ops", tags=["x"]), unit_vector(rng))
        b = store.insert(make_row(hex_id(2), "webhook two", domain="dev", tags=["y"]), unit_vector(rng))
        c = store.insert(make_row(hex_id(3), "webhook three", domain="ops", archived=True), unit_vector(rng))
    assert fts_rowids(store, "webhook") == {a, b, c}
    assert fts_rowids(store, "webhook", include_archived=False) == {a, b}
    assert fts_rowids(store, "webhook", domain="ops") == {a, c}
    assert fts_rowids(store, "webhook", tags=["y"]) == {b}


def test_term_document_counts_count_documents_holding_each_token(store, rng):
    with store.db.write():
        store.insert(make_row(hex_id(1), "webhook retry retry"), unit_vector(rng))
        store.insert(make_row(hex_id(2), "webhook signature"), unit_vector(rng))
        store.insert(make_row(hex_id(3), "unrelated"), unit_vector(rng))
    with store.db.read():
        tokens = store.tokenize("webhooks retrying signature absent")
        total, counts = store.term_document_counts(tokens)
    assert total == 3
    assert counts[store.tokenize("webhook")[0]] == 2
    assert counts[store.tokenize("retry")[0]] == 1
    assert counts[store.tokenize("absent")[0]] == 0


# --- vector search ---------------------------------------------------------------------------


@pytest.fixture
def knn_store(store, rng):
    """Five memories: (domain, tags, archived) vary; returns rowid by label and the vectors."""
    spec = {
        "ops_x": ("ops", ["x"], False),
        "ops_y": ("ops", ["y"], False),
        "dev_x": ("dev", ["x"], False),
        "dev_none": ("dev", [], False),
        "ops_x_archived": ("ops", ["x"], True),
    }
    rowids, vectors = {}, {}
    with store.db.write():
        for n, (label, (domain, tags, archived)) in enumerate(spec.items(), start=1):
            vectors[label] = unit_vector(rng)
            rowids[label] = store.insert(
                make_row(hex_id(n), label, domain=domain, tags=tags, archived=archived), vectors[label]
            )
    return store, rowids, vectors


def test_knn_finds_the_exact_vector_first_with_cosine_one(knn_store):
    store, rowids, vectors = knn_store
    with store.db.read():
        hits = store.knn(vectors["dev_x"], 3, domains=None, include_archived=False, tags=None)
    assert hits[0][0] == rowids["dev_x"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [c for _, c in hits] == sorted((c for _, c in hits), reverse=True)
    assert len(hits) == 3


def test_knn_excludes_archived_memories_unless_asked(knn_store):
    store, rowids, vectors = knn_store
    q = vectors["ops_x_archived"]
    assert rowids["ops_x_archived"] not in knn_rowids(store, q)
    assert rowids["ops_x_archived"] in knn_rowids(store, q, include_archived=True)


def test_knn_honours_the_domain_filter(knn_store):
    store, rowids, vectors = knn_store
    assert knn_rowids(store, vectors["ops_x"], domain="dev") == {rowids["dev_x"], rowids["dev_none"]}
    assert knn_rowids(store, vectors["dev_x"], domain="ops") == {rowids["ops_x"], rowids["ops_y"]}
    assert knn_rowids(store, vectors["dev_x"], domain="ops", include_archived=True) == {
        rowids["ops_x"],
        rowids["ops_y"],
        rowids["ops_x_archived"],
    }


def test_knn_honours_the_tags_filter(knn_store):
    store, rowids, vectors = knn_store
    q = vectors["dev_none"]
    assert knn_rowids(store, q, tags=["x"]) == {rowids["ops_x"], rowids["dev_x"]}
    assert knn_rowids(store, q, tags=["x"], include_archived=True) == {
        rowids["ops_x"],
        rowids["dev_x"],
        rowids["ops_x_archived"],
    }
    assert knn_rowids(store, q, tags=["x", "y"]) == {rowids["ops_x"], rowids["ops_y"], rowids["dev_x"]}
    assert knn_rowids(store, q, tags=["x"], domain="dev") == {rowids["dev_x"]}
    assert knn_rowids(store, q, tags=["nope"]) == set()


def test_knn_with_a_tags_filter_still_returns_k_matches(knn_store):
    store, rowids, vectors = knn_store
    assert len(knn_rowids(store, vectors["dev_none"], k=2, tags=["x", "y"])) == 2


def test_knn_follows_archive_and_domain_updates(knn_store):
    store, rowids, vectors = knn_store
    with store.db.write():
        store.update(hex_id(1), archived=True)  # ops_x
        store.update(hex_id(4), domain="ops")  # dev_none
    assert rowids["ops_x"] not in knn_rowids(store, vectors["ops_x"])
    assert knn_rowids(store, vectors["ops_x"], domain="ops") == {rowids["ops_y"], rowids["dev_none"]}
    with store.db.write():
        store.update(hex_id(1), archived=False)
    assert rowids["ops_x"] in knn_rowids(store, vectors["ops_x"])


# --- id resolution ---------------------------------------------------------------------------


SHARED = "abcdef01"
ID_A = SHARED + "0" * 56
ID_B = SHARED + "1" * 56
ID_C = "12345678" + "9" * 56


@pytest.fixture
def id_store(store, rng):
    with store.db.write():
        for mid in (ID_A, ID_B, ID_C):
            store.insert(make_row(mid, f"memory {mid[:12]}"), unit_vector(rng))
    return store


def test_resolve_accepts_a_full_id(id_store):
    with id_store.db.read():
        assert id_store.resolve(ID_A) == ID_A
        assert id_store.resolve(" " + ID_B.upper() + " ") == ID_B


def test_resolve_accepts_a_unique_prefix_of_eight_or_more_characters(id_store):
    with id_store.db.read():
        assert id_store.resolve(ID_C[:8]) == ID_C
        assert id_store.resolve(SHARED + "0") == ID_A
        assert id_store.resolve(SHARED + "1") == ID_B
        assert id_store.resolve(ID_A[:40]) == ID_A


def test_resolve_of_an_unknown_full_id_raises_not_found(id_store):
    with id_store.db.read(), pytest.raises(NotFound):
        id_store.resolve("f" * 64)


def test_resolve_of_an_unknown_prefix_raises_not_found(id_store):
    with id_store.db.read(), pytest.raises(NotFound):
        id_store.resolve("fedcba98")


def test_resolve_of_an_ambiguous_prefix_raises_ambiguous_id_listing_candidates(id_store):
    with id_store.db.read(), pytest.raises(AmbiguousId) as err:
        id_store.resolve(SHARED)
    assert sorted(err.value.candidates) == [ID_A, ID_B]
    assert ID_A in str(err.value) and ID_B in str(err.value)
    assert ID_C not in err.value.candidates


def test_ambiguous_id_is_not_a_not_found(id_store):
    # Callers catching NotFound (e.g. to report missing ids) must not swallow ambiguity.
    with id_store.db.read():
        with pytest.raises(AmbiguousId):
            try:
                id_store.resolve(SHARED)
            except NotFound:
                pytest.fail("an ambiguous prefix was reported as not found")
