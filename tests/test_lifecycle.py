"""Lifecycle through the service API, with an injected clock: retention, tiers, archive and
restore, supersede, near-duplicates, merging, Hebbian links and their decay, expansion."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.errors import InvalidInput
from mnemo_mcp.service import MemoryService

T0 = datetime(2027, 1, 1, 12, 0, tzinfo=UTC)
FIXTURE = Path(__file__).parent / "fixtures" / "schema_v1.db"


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def _clocked(settings: Settings, embedder, **overrides) -> MemoryService:
    s = settings.model_copy(update=overrides) if overrides else settings
    return MemoryService(s, embedder, clock=lambda: T0)


@pytest.fixture
def svc(settings, real_embedder):
    service = _clocked(settings, real_embedder)
    yield service
    service.close()


def _live_ids(svc: MemoryService, query: str, **kw) -> list[str]:
    return [it.id for it in svc.read(query, top_k=20, record=False, **kw).items]


def _snapshot(svc: MemoryService) -> list[str]:
    return sorted(json.dumps(rec, sort_keys=True) for rec in svc.export())


# --- retention, archive, restore ---------------------------------------------------------------


def test_unused_memory_is_archived_after_its_window_and_used_one_is_kept(svc):
    idle = svc.write("The nightly backup job writes to the cold storage bucket.", now=day(0)).id
    used = svc.write("Feature flags are read from the LaunchDarkly relay proxy.", now=day(0)).id
    svc.read("where are feature flags read from", top_k=1, now=day(60))

    early = svc.consolidate(now=day(175))
    assert early.counts["archived"] == 0
    report = svc.consolidate(now=day(185))
    assert [c.id for c in report.archived] == [idle]
    # A new memory's quality is 0.5: the 180-day band. Its recency decay does not shrink the window.
    assert "unused for 185 days" in report.archived[0].reason and "window 180 days" in report.archived[0].reason
    assert idle not in _live_ids(svc, "nightly backup cold storage")
    assert used in _live_ids(svc, "feature flags relay proxy")
    assert svc.stats().archived == 1


def test_archived_memory_is_found_with_include_archived_and_restored_with_its_learning(svc):
    mid = svc.write("Run database migrations before restarting the web workers.", now=day(0)).id
    svc.feedback([mid], outcome=1.0, query_concepts=["migration"], now=day(1))
    svc.archive(mid, reason="testing", now=day(2))
    assert mid not in _live_ids(svc, "database migrations")
    found = svc.read("database migrations", include_archived=True, record=False).items
    assert found[0].id == mid and found[0].archived is True
    restored = svc.restore(mid[:10], now=day(3))
    assert restored.changed and not restored.archived
    assert mid in _live_ids(svc, "database migrations")
    assert svc.quality(mid).valence > 0 and svc.quality(mid).feedback_count == 1
    assert svc.restore(mid).changed is False


def test_restored_memory_gets_a_fresh_retention_window(svc):
    mid = svc.write("The staging VPN needs the split-tunnel profile.", now=day(0)).id
    svc.consolidate(now=day(200))
    assert svc.quality(mid).archived
    svc.restore(mid, now=day(200))
    assert svc.consolidate(now=day(350)).counts["archived"] == 0


def test_automatic_captures_expire_sooner_than_deliberate_writes(svc):
    auto = svc.write("The user ran the linter twice this morning.", source="hook", now=day(0)).id
    kept = svc.write("Lint with ruff, format with ruff format.", now=day(0)).id
    report = svc.consolidate(now=day(100))
    assert [c.id for c in report.archived] == [auto]
    assert "captured automatically" in report.archived[0].reason
    assert svc.quality(auto).source == "hook" and not svc.quality(kept).archived


def test_dry_run_changes_nothing_and_reports_what_the_real_run_does(svc):
    ids = [svc.write(f"Memory about topic {w} for the dry run.", now=day(0)).id for w in ("alpha", "bravo", "charlie")]
    svc.feedback([ids[0]], outcome=1.0, query_concepts=["alpha"], now=day(1))
    before = _snapshot(svc)
    dry = svc.consolidate(dry_run=True, now=day(200))
    assert _snapshot(svc) == before
    assert svc.stats().last_consolidation is None
    real = svc.consolidate(now=day(200))
    assert dry.model_dump(exclude={"dry_run"}) == real.model_dump(exclude={"dry_run"})
    assert real.counts["archived"] == 3 and _snapshot(svc) != before


# --- tiers ----------------------------------------------------------------------------------


def _prove(svc: MemoryService, mid: str, query: str, times: int, start: float) -> None:
    for i in range(times):
        r = svc.read(query, top_k=1, now=day(start + i))
        assert r.items[0].id == mid
        svc.feedback([mid], outcome=1.0, read_id=r.read_id, now=day(start + i))
        svc.rate(mid, rating=1, reason="right", now=day(start + i))


def test_memory_climbs_working_history_pattern_and_the_tier_shows(svc):
    mid = svc.write("Pin the Postgres image to 16.3 in docker-compose for the tests.", now=day(0)).id
    svc.write("The marketing site is built with Astro.", now=day(0))
    assert svc.read("postgres image version", record=False).items[0].tier == "working"
    _prove(svc, mid, "postgres image version for tests", 5, start=1)
    first = svc.consolidate(now=day(6))
    assert [(c.id, c.tier) for c in first.promoted] == [(mid, "history")]
    second = svc.consolidate(now=day(7))
    assert [(c.id, c.tier) for c in second.promoted] == [(mid, "pattern")]
    assert svc.read("postgres image version", record=False).items[0].tier == "pattern"
    assert svc.stats().by_tier == {"pattern": 1, "working": 1}


def test_pattern_is_never_archived_automatically_and_drops_back_when_it_stops_helping(svc):
    mid = svc.write("Pin the Postgres image to 16.3 in docker-compose for the tests.", now=day(0)).id
    _prove(svc, mid, "postgres image version for tests", 5, start=1)
    svc.consolidate(now=day(6))
    svc.consolidate(now=day(7))
    assert svc.quality(mid).tier == "pattern"
    late = svc.consolidate(now=day(1500))  # far past every retention window
    assert late.counts["archived"] == 0 and not svc.quality(mid).archived
    for i in range(6):
        svc.feedback([mid], outcome=-1.0, now=day(1501 + i))
        svc.rate(mid, rating=-1, reason="outdated", now=day(1501 + i))
    demoted = svc.consolidate(now=day(1510))
    assert [(c.id, c.tier) for c in demoted.demoted] == [(mid, "history")]


# --- supersede ------------------------------------------------------------------------------


def test_superseding_write_replaces_the_old_memory_in_reads_and_links_both_ways(svc):
    old = svc.write("Deploys go through Jenkins job deploy-prod.", now=day(0)).id
    new = svc.write(
        "Deploys go through the GitHub Actions workflow deploy.yml (Jenkins is retired).",
        supersedes=[old[:12]],
        now=day(1),
    )
    assert new.created and new.superseded == [old]
    assert _live_ids(svc, "how do deploys run") == [new.id]
    shown = {it.id: it for it in svc.read("how do deploys run", include_archived=True, record=False).items}
    assert shown[old].archived and shown[old].superseded_by == new.id
    assert svc.quality(old).superseded_by == new.id and "superseded" in svc.quality(old).archive_reason
    assert svc.quality(new.id).supersedes == [old]


def test_supersedes_with_an_unknown_id_rejects_the_write_and_changes_nothing(svc):
    old = svc.write("The cache TTL is five minutes.", now=day(0)).id
    before = _snapshot(svc)
    with pytest.raises(InvalidInput, match="supersedes: no memory has id"):
        svc.write("The cache TTL is ten minutes.", supersedes=[old, "ab" * 32])
    with pytest.raises(InvalidInput, match="cannot supersede itself"):
        svc.write("The cache TTL is five minutes.", supersedes=[old])
    assert _snapshot(svc) == before


# --- near-duplicates ------------------------------------------------------------------------


def test_near_duplicate_write_is_reported_instead_of_stored(svc):
    first = svc.write("Use the staging database for integration tests.", tags=["tests"]).id
    again = svc.write("Use the staging database for the integration tests.", tags=["db"])
    assert not again.created and again.duplicate_of == first and again.id == first
    assert again.similarity >= svc.settings.duplicate_similarity
    assert svc.stats().total == 1
    forced = svc.write("Use the staging database for the integration tests.", allow_duplicate=True)
    assert forced.created and forced.duplicate_of is None
    other_scope = svc.write("Use the staging database for integration tests!", domain="web")
    assert other_scope.created  # another domain is another store
    assert svc.write("Use the production replica for load tests.").created


def test_a_correction_is_not_blocked_as_a_duplicate_of_what_it_supersedes(svc):
    old = svc.write("The API rate limit is 100 requests per minute.").id
    new = svc.write("The API rate limit is 120 requests per minute.", supersedes=[old])
    assert new.created and new.superseded == [old]


def test_consolidation_merges_near_duplicates_written_before_the_check(settings, real_embedder):
    legacy = _clocked(settings, real_embedder, dedup=False)
    try:
        a = legacy.write("Restart the worker after changing celery settings.", tags=["celery"], now=day(0)).id
        b = legacy.write("Restart the worker after changing the celery settings.", tags=["ops"], now=day(1)).id
        legacy.feedback([b], outcome=1.0, query_concepts=["celery"], now=day(2))
        legacy.rate(a, rating=1, reason="works", now=day(2))
    finally:
        legacy.close()
    svc = _clocked(settings, real_embedder)
    try:
        dry = svc.consolidate(dry_run=True, now=day(3))
        report = svc.consolidate(now=day(3))
        assert [(c.id, c.into) for c in report.merged] == [(a, b)] == [(c.id, c.into) for c in dry.merged]
        keeper = svc.quality(b)
        assert keeper.valence > 0 and keeper.rating_count == 1 and keeper.supersedes == [a]
        assert set(svc.read("celery worker restart", record=False).items[0].tags) == {"ops", "celery"}
        assert svc.quality(a).archived and svc.quality(a).superseded_by == b
        assert svc.consolidate(now=day(4)).counts["merged"] == 0  # already scanned
    finally:
        svc.close()


# --- associations ---------------------------------------------------------------------------


def _links(svc: MemoryService) -> dict[tuple[str, str], dict]:
    with svc.store.db.read():
        return {(a["a"], a["b"]): a for a in svc.store.associations()}


def test_write_links_cooccurring_concepts_weakly(svc):
    svc.write("Kafka consumers commit offsets after processing.", now=day(0))
    links = _links(svc)
    assert ("consumer", "kafka") in links
    assert 0 < links[("consumer", "kafka")]["weight"] <= svc.settings.write_link_rate + 1e-9
    assert links[("consumer", "kafka")]["valence"] == 0


def test_positive_feedback_strengthens_links_and_negative_weakens_them(svc):
    mid = svc.write("Kafka consumers commit offsets after processing.", now=day(0)).id
    up = svc.feedback([mid], outcome=1.0, query_concepts=["broker"], now=day(1))
    w1 = _links(svc)[("broker", "kafka")]["weight"]
    assert up.associations_strengthened > 0 and w1 > 0
    down = svc.feedback([mid], outcome=-1.0, query_concepts=["broker"], now=day(2))
    link = _links(svc)[("broker", "kafka")]
    assert down.associations_weakened > 0 and link["weight"] < w1 and link["valence"] < 1


def test_unused_links_decay_by_elapsed_time_however_often_consolidation_runs(settings, real_embedder, new_db):
    weights = []
    for runs in (1, 6):
        s = settings.model_copy(update={"db": new_db()})
        svc = _clocked(s, real_embedder)
        try:
            mid = svc.write("Kafka consumers commit offsets after processing.", now=day(0)).id
            svc.feedback([mid], outcome=1.0, query_concepts=["broker"], now=day(0))
            start = _links(svc)[("broker", "kafka")]["weight"]
            for i in range(1, runs + 1):
                svc.consolidate(now=day(90 * i / runs))
            weights.append(_links(svc)[("broker", "kafka")]["weight"] / start)
        finally:
            svc.close()
    assert weights[0] == pytest.approx(0.5, abs=1e-3)  # one half-life
    assert weights[1] == pytest.approx(weights[0], abs=1e-3)


def test_untouched_write_links_are_pruned_once_decayed_but_taught_links_stay(svc):
    mid = svc.write("Kafka consumers commit offsets after processing.", now=day(0)).id
    svc.feedback([mid], outcome=1.0, query_concepts=["broker"], now=day(0))
    report = svc.consolidate(now=day(400))
    links = _links(svc)
    assert report.counts["links_pruned"] > 0 and ("consumer", "kafka") not in links
    assert ("broker", "kafka") in links


def test_expansion_reaches_memories_through_learned_links_and_says_how(svc):
    svc.write("The flux capacitor needs 1.21 gigawatts to work.", now=day(0))
    reactor = svc.write("Gigawatts come from the plutonium reactor in the garage.", now=day(0)).id
    for i in range(6):
        svc.write(f"Unrelated note number {i} about gardening and tomatoes {i}.", now=day(0), allow_duplicate=True)
    for i in range(4):
        r = svc.read("flux capacitor", top_k=1, now=day(1 + i))
        svc.feedback([r.items[0].id], outcome=1.0, read_id=r.read_id, now=day(1 + i))
    plain = svc.read("flux capacitor", top_k=3, expand_associations=False, record=False)
    assert plain.expanded_concepts is None and all(it.expanded_via is None for it in plain.items)
    expanded = svc.read("flux capacitor", top_k=3, expand_associations=True, record=False)
    assert "gigawatt" in expanded.expanded_concepts
    hit = next(it for it in expanded.items if it.id == reactor)
    assert hit.expanded_via == "gigawatt"
    assert [it.id for it in expanded.items].index(reactor) <= [it.id for it in plain.items + [hit]].index(reactor)


# --- automatic runs -------------------------------------------------------------------------


def test_automatic_consolidation_runs_when_due_by_interval_or_writes_only(settings, real_embedder):
    svc = _clocked(settings, real_embedder, consolidate_every_writes=3, auto_consolidate=True)
    try:
        assert svc.maybe_consolidate(now=day(0)) is None  # empty store: nothing to do
        svc.write("First memory for the schedule test.", now=day(0))
        assert svc.consolidation_due(now=day(0)) == "interval"  # never ran
        assert svc.maybe_consolidate(now=day(0)) is not None
        assert svc.consolidation_due(now=day(0.5)) is None
        for i in range(3):
            svc.write(f"Schedule memory {i} with distinct words {['red', 'green', 'blue'][i]}.", now=day(0.5))
        assert svc.consolidation_due(now=day(0.5)) == "writes"
        svc.maybe_consolidate(now=day(0.5))
        assert svc.consolidation_due(now=day(0.6)) is None
        assert svc.consolidation_due(now=day(1.6)) == "interval"
    finally:
        svc.close()


def test_automatic_consolidation_can_be_switched_off(settings, real_embedder):
    svc = _clocked(settings, real_embedder, auto_consolidate=False)
    try:
        svc.write("A memory in a store without automatic upkeep.", now=day(0))
        assert svc.consolidation_due(now=day(900)) is None and svc.maybe_consolidate(now=day(900)) is None
    finally:
        svc.close()


def test_a_claimed_consolidation_is_left_to_the_process_running_it(settings, real_embedder):
    svc = _clocked(settings, real_embedder, auto_consolidate=True)
    try:
        svc.write("A memory for the claim test.", now=day(0))
        with svc.store.db.write():
            svc.store.set_meta("consolidation_claim", T0.isoformat())
        assert svc.maybe_consolidate(now=day(0)) is None
        with svc.store.db.write():
            svc.store.set_meta("consolidation_claim", "")
        assert svc.maybe_consolidate(now=day(0)) is not None  # released: it runs
    finally:
        svc.close()


# --- migration from the first schema ---------------------------------------------------------


def test_database_made_by_the_first_schema_opens_migrated_without_loss(tmp_path, real_embedder):
    db = tmp_path / "old.db"
    shutil.copy(FIXTURE, db)
    svc = MemoryService(Settings(db=db), real_embedder)
    try:
        records = list(svc.export())
        memories = [r for r in records if r["type"] == "memory"]
        assert len(memories) == 8 and {m["tier"] for m in memories} == {"working"}
        assert {m["source"] for m in memories} == {"write"}
        assert sum(r["type"] == "feedback_event" for r in records) == 3
        assert sum(r["type"] == "association" for r in records) == 65
        rated = [m for m in memories if m["metadata"].get("rating_count")]
        assert len(rated) == 2 and any(m["valence"] > 0 for m in memories)
        assert any("שלום" in m["content"] and "🚀" in m["content"] for m in memories)
        hit = svc.read("webhook signature verification fails", top_k=1).items[0]
        assert "re-serialized" in hit.content and hit.valence > 0
        assert svc.consolidate().examined == 8
    finally:
        svc.close()


# --- consolidation never deletes or rewrites ---------------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 11), st.booleans()),
        st.tuples(st.just("read"), st.integers(0, 11), st.booleans()),
        st.tuples(st.just("feedback"), st.integers(0, 11), st.sampled_from([-1.0, -0.5, 0.5, 1.0])),
        st.tuples(st.just("consolidate"), st.integers(1, 400), st.booleans()),
    ),
    min_size=1,
    max_size=25,
)
WORDS = ["retry", "webhook", "deploy", "cache", "kafka", "schema", "lint", "vpn", "token", "queue", "build", "index"]


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_consolidation_never_deletes_a_row_and_never_changes_content(tmp_path_factory, sequence):
    db = tmp_path_factory.mktemp("prop") / "p.db"
    svc = MemoryService(Settings(db=db, dedup=False), HashEmbedder(), clock=lambda: T0)
    clock = 0.0
    try:
        for op, n, flag in sequence:
            if op == "write":
                text = f"{WORDS[n]} note about {WORDS[(n * 7) % 12]}" + (" again" if flag else "")
                svc.write(text, source="hook" if flag else "write", now=day(clock))
            elif op == "read":
                svc.read(WORDS[n], top_k=3, now=day(clock), expand_associations=flag)
            elif op == "feedback":
                items = svc.read(WORDS[n], top_k=2, now=day(clock)).items
                if items:
                    svc.feedback([items[0].id], outcome=flag, query_concepts=[WORDS[n]], now=day(clock))
            else:
                clock += n
                with svc.store.db.read():
                    before = {m["id"]: m["content"] for m in svc.store.all_memories()}
                svc.consolidate(dry_run=flag, now=day(clock))
                with svc.store.db.read():
                    after = {m["id"]: m["content"] for m in svc.store.all_memories()}
                    vectors = (
                        svc.store.conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0] if after else 0
                    )
                assert after == before
                assert vectors == len(after)
    finally:
        svc.close()


def test_upkeep_falls_due_after_the_configured_number_of_writes(tmp_path):
    s = Settings(db=tmp_path / "m.db", auto_backup=False, consolidate_every_writes=3, consolidate_interval_hours=1000)
    svc = MemoryService(s, HashEmbedder())
    try:
        svc.write("first note about the deploy script", now=day(0))
        svc.consolidate(now=day(0))
        due = []
        for i in range(3):
            svc.write(f"note {i}: the {['cache', 'queue', 'proxy'][i]} needs a restart after upgrades", now=day(0))
            due.append(svc.upkeep_due_after_write(now=day(0)))
        assert due == [False, False, True]
        svc.consolidate(now=day(0))
        assert not svc.upkeep_due_after_write(now=day(0))
    finally:
        svc.close()
