"""The PostgreSQL store's indexes: vector search through pgvector's HNSW index when it is there
(and exact without it, for a member who may not make it), filters that still give k rows, and
migration 4's keyword postings laid out on a database that already holds memories."""

from __future__ import annotations

import json
import subprocess
import time

import numpy as np
import pytest
from test_postgres_backend import TEAM_SETUP

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService
from mnemo_mcp.storage import fulltext, pgschema, pgtext, postgres
from mnemo_mcp.storage.pgstore import PgStore
from mnemo_mcp.storage.pgvectors import HNSW_INDEX

DIM = 32
STAMP = "2026-11-01T00:00:00+00:00"


def _name(prefix: str) -> str:
    return f"{prefix}_{int(time.time() * 1000) % 1_000_000}"


def _vectors(n: int, seed: int = 7) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _row(i: int, domain: str = "p", tags: list[str] | None = None) -> dict:
    return {"id": f"{i:064x}", "content": f"note {i} about webhook retries", "tags": tags or [], "domain": domain,
            "created_at": STAMP, "updated_at": STAMP}  # fmt: skip


@pytest.fixture
def store(pg):
    name = _name("vec")
    st = PgStore(pg.fresh_database(name))
    st.bind_model("m", DIM)
    yield st
    st.close()
    pg.drop_database(name)


def _fill(st: PgStore, vectors: np.ndarray, domain_of=lambda i: "p", tags_of=lambda i: []) -> None:
    with st.db.write():
        for i, v in enumerate(vectors):
            st.insert(_row(i, domain_of(i), tags_of(i)), v)


def _knn(st: PgStore, v: np.ndarray, k: int, *, hnsw: bool, **filters) -> list[tuple[int, float]]:
    st.use_hnsw_from(0 if hnsw else 10**12)
    args = {"domains": None, "include_archived": False, "tags": None, **filters}
    with st.db.read():
        return st.knn(v, k, **args)


def test_the_owner_makes_the_hnsw_index_at_binding_and_reads_take_it(store):
    assert store.vector_index() == (True, True)
    _fill(store, _vectors(400))
    store.conn.execute("ANALYZE memory_vectors")
    seen: list[tuple[str, dict]] = []
    execute = store.conn.execute

    def recording(sql, params=None, **kw):
        seen.append((sql, params))
        return execute(sql, params, **kw)

    store.conn.execute = recording
    try:
        _knn(store, _vectors(1, seed=1)[0], 10, hnsw=True)
    finally:
        del store.conn.execute
    sql, params = next((s, p) for s, p in seen if f"vector({DIM})" in s and "LIMIT" in s)
    with store.conn.transaction():
        # On 400 vectors the planner rather sorts them all (the graph's start-up cost is higher; at
        # 10k it takes the index): without sorts, it must order by the index, which it can only
        # if the query's expression and operator are the index's.
        store.conn.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(r[0] for r in store.conn.execute("EXPLAIN " + sql, params))
    assert HNSW_INDEX in plan, plan


def test_with_the_index_a_small_store_gets_what_exact_search_gets(store):
    _fill(store, _vectors(400))
    for q in _vectors(10, seed=3):
        exact, hnsw = _knn(store, q, 20, hnsw=False), _knn(store, q, 20, hnsw=True)
        assert [r for r, _ in hnsw] == [r for r, _ in exact]  # ef_search 40 over 400 vectors: all found
        assert [c for _, c in hnsw] == pytest.approx([c for _, c in exact], abs=1e-6)


def test_filters_still_give_k_rows_with_the_index(store):
    vectors = _vectors(2000)
    _fill(
        store,
        vectors,
        domain_of=lambda i: "rare" if i % 100 == 1 else "mid" if i % 5 == 2 else "p",  # 20 and 400 memories
        tags_of=lambda i: ["ops"] if i % 40 == 3 else [],  # 50
    )
    for i in range(0, 2000, 9):  # a few archived: never returned
        store.update(f"{i:064x}", archived=True)
    store.conn.execute("ANALYZE memory_vectors")
    for q in _vectors(5, seed=11):
        for filters, k, want in (({"domains": ["mid"]}, 30, 30), ({"domains": ["rare"]}, 30, 18),
                                 ({"tags": ["ops"]}, 30, 30), ({}, 50, 50)):  # fmt: skip
            got = _knn(store, q, k, hnsw=True, **filters)
            exact = _knn(store, q, k, hnsw=False, **filters)
            assert len(got) == want == len(exact), filters
            assert {r for r, _ in got} <= {r for r, _ in _knn(store, q, 2000, hnsw=False, **filters)}
            assert len({r for r, _ in got} & {r for r, _ in exact}) >= 0.9 * want, filters


def test_a_member_without_create_rights_starts_and_reads_without_the_index(pg, tmp_path):
    names = {"owner": "idx_owner", "member": "idx_member", "db": "idxteam", "password": "Idx-Pa55"}
    script = tmp_path / "setup.sql"
    script.write_text(TEAM_SETUP.format(**names))
    subprocess.run([str(pg.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(pg.root / "sock"),
                    "-p", str(pg.port), "-U", "postgres", "-d", "postgres", "-f", str(script)],
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    owner = pg.url(database="idxteam", user="idx_owner", password="Idx-Pa55")
    member = pg.url(database="idxteam", user="idx_member", password="Idx-Pa55")
    settings = {"auto_consolidate": False, "auto_backup": False}
    svc = MemoryService(Settings(db=owner, **settings), HashEmbedder())
    try:
        svc.write("Deploys need the VPN up first", domain="infra")
        assert svc.store.vector_index() == (True, True)  # the owner's process made it
    finally:
        svc.close()
    pg.psql(f"DROP INDEX {HNSW_INDEX}", database="idxteam")  # as on a store laid out before the index
    svc = MemoryService(Settings(db=member, **settings), HashEmbedder())
    try:
        assert svc.store.vector_index() == (False, False)
        assert svc.store.ensure_vector_index() is False  # no error, no index
        svc.store.use_hnsw_from(0)  # the index would be taken at any size: exact search answers instead
        svc.write("The VPN drops idle sessions after an hour", domain="infra")
        found = svc.read("why does the deploy hang", domain="infra")
        assert {it.content for it in found.items} >= {"Deploys need the VPN up first"}
    finally:
        svc.close()
    MemoryService(Settings(db=owner, **settings), HashEmbedder()).close()  # the owner's next start makes it
    assert HNSW_INDEX in pg.psql("SELECT indexname FROM pg_indexes", database="idxteam")


# Migration 3's keyword layout, as the store wrote it before migration 4: postings without the
# document's length or filters, the totals in one row.
_V3_MEMORY = "INSERT INTO memories(id, content, domain, tags, created_at, updated_at, text_length, archived) " \
             "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING rowid"  # fmt: skip
_V3_POSTINGS = "INSERT INTO text_terms(term, rowid, tf) SELECT t, %s, f FROM unnest(%s::text[], %s::float8[]) x(t, f)"

DOCS = [("Retry the webhook delivery with exponential backoff", "p", '["ops"]', 0),
        ("Pin node-fetch-retry to 2.x: node fetch retry breaks the webhook", "p", "[]", 0),
        ("Use pytest -k webhook to run only the webhook tests", "q", "[]", 0),
        ("Celery workers retry failed tasks three times", "p", "[]", 1),
        ("Deploy with docker compose up -d after the migration", "p", '["ops"]', 0)]  # fmt: skip


def test_migration_4_lays_out_the_postings_of_an_existing_database_with_the_same_scores(pg, monkeypatch):
    old, new = _name("v3"), _name("v5")
    with monkeypatch.context() as m:
        m.setattr(pgschema, "MIGRATIONS", pgschema.MIGRATIONS[:3])
        conn = postgres.connect(pg.fresh_database(old))
        assert pgschema.migrate(conn) == 3
        docs = tokens = 0
        for i, (text, domain, tags, archived) in enumerate(DOCS):
            terms, length = fulltext.postings(text, tags)
            rowid = conn.execute(
                _V3_MEMORY, (f"{i:064x}", text, domain, tags, STAMP, STAMP, length, archived)
            ).fetchone()[0]
            conn.execute(_V3_POSTINGS, (rowid, list(terms), list(terms.values())))
            docs, tokens = docs + 1, tokens + length
        conn.execute("UPDATE text_totals SET documents = %s, tokens = %s", (docs, tokens))
        conn.close()
    migrated, fresh = PgStore(pg.url(database=old)), PgStore(pg.fresh_database(new))
    try:
        assert pgschema.current_version(migrated.conn) == pgschema.MIGRATIONS[-1][0]
        with fresh.db.write():
            for i, (text, domain, tags, archived) in enumerate(DOCS):
                row = {**_row(i, domain), "content": text, "tags": json.loads(tags), "archived": archived}
                fresh.insert(row, np.ones(DIM, dtype=np.float32))
        assert migrated.text_index_ok() and migrated.text_totals() == fresh.text_totals() == (docs, tokens)
        for words in (["webhook"], ["retry", "webhook"], ["node-fetch-retry"], ["ops", "deploy"]):
            for filters in ({}, {"domains": ["p"]}, {"tags": ["ops"]}, {"include_archived": True}):
                args = {"domains": None, "include_archived": False, "tags": None, **filters}
                with migrated.db.read(), fresh.db.read():
                    a, b = migrated.fts(words, 5, **args), fresh.fts(words, 5, **args)
                assert [r for r, _ in a] == [r for r, _ in b] and (a or filters), (words, filters)
                assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-12)
        migrated.conn.execute("UPDATE text_terms SET domain = 'x' WHERE rowid = 1")  # drift: doctor sees it
        assert not migrated.text_index_ok()
        with migrated.db.write():
            migrated.rebuild_text_index()
        assert migrated.text_index_ok()
    finally:
        migrated.close()
        fresh.close()


def test_the_keyword_totals_log_folds_and_stays_exact(store, monkeypatch):
    monkeypatch.setattr(pgtext, "FOLD_EVERY", 3)
    _fill(store, _vectors(10))
    store.update(f"{1:064x}", content="a much longer note about webhook retries and their exponential backoff")
    assert store.delete(f"{2:064x}")
    with store.db.read():
        assert store.text_index_ok()  # the totals equal a recount of the memories
        totals = store.text_totals()
    assert totals[0] == 9
    logged = store.conn.execute("SELECT count(*) FROM text_totals_log").fetchone()[0]
    assert logged <= 4  # folded: one whole row, fewer than FOLD_EVERY changes after it
    with pytest.raises(RuntimeError), store.db.write():
        store.insert(_row(99), _vectors(1)[0])
        raise RuntimeError("rolled back")
    assert store.text_totals() == totals
