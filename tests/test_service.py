"""Observable behaviour of the service API with the real embedding model."""

from __future__ import annotations

import hashlib
import json

import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.errors import AmbiguousId, InvalidInput, ModelMismatch, NotFound
from mnemo_mcp.service import MemoryService

RETRY_DROP = "Retry the webhook three times, then drop it."
RETRY_BACKOFF = "Retry with backoff and keep the dead letter."
SIGNATURES = "Webhook signatures expire after five minutes."


def _ids(result):
    return [it.id for it in result.items]


def _webhooks(svc):
    return {c: svc.write(c).id for c in (RETRY_DROP, RETRY_BACKOFF, SIGNATURES)}


def test_cold_start_order_is_relevance_order(service):
    for text in (
        RETRY_DROP,
        RETRY_BACKOFF,
        SIGNATURES,
        "Use pytest fixtures to create temporary databases.",
        "The staging cluster runs on Kubernetes 1.29.",
    ):
        service.write(text)
    r = service.read("webhook retry policy", top_k=5)
    rel = [it.relevance for it in r.items]
    assert rel == sorted(rel, reverse=True)
    assert [it.score for it in r.items] == rel
    assert r.items[0].content == RETRY_DROP


def test_webhook_feedback_with_read_id_puts_backoff_memory_first(service):
    ids = _webhooks(service)
    first = service.read("webhook retry")
    assert first.items[0].id == ids[RETRY_DROP]
    assert ids[RETRY_BACKOFF] in _ids(first)

    fb = service.feedback([ids[RETRY_BACKOFF]], outcome=1.0, read_id=first.read_id, query_concepts=first.query_concepts)
    step1 = fb.updated[0].valence_after - fb.updated[0].valence_before
    again = service.read("webhook retry")
    assert again.items[0].id == ids[RETRY_BACKOFF]
    assert ids[RETRY_DROP] in _ids(again), "the other retry memory is still returned"

    fb2 = service.feedback([ids[RETRY_BACKOFF]], outcome=1.0, read_id=again.read_id)
    step2 = fb2.updated[0].valence_after - fb2.updated[0].valence_before
    assert 0 < step2 < step1


def test_feedback_teaches_similar_questions_not_unrelated_ones(service):
    ids = _webhooks(service)
    service.write("Database migrations run before the web server restarts.")
    r = service.read("webhook retry")
    service.feedback([ids[RETRY_BACKOFF]], outcome=1.0, read_id=r.read_id)
    similar = service.read("how should a webhook retry")
    assert similar.items[0].id == ids[RETRY_BACKOFF]
    unrelated = service.read("when do database migrations run")
    assert unrelated.items[0].content.startswith("Database migrations")


def test_repeated_negative_feedback_ranks_below_equally_relevant_but_still_returned(service):
    a = service.write("Use the staging database for integration tests.").id
    b = service.write("Use the staging database for the integration tests.", allow_duplicate=True).id
    r = service.read("staging database integration tests", top_k=2)
    assert set(_ids(r)) == {a, b}
    assert abs(r.items[0].relevance - r.items[1].relevance) < 0.05
    top = r.items[0].id
    other = b if top == a else a
    for _ in range(3):
        service.feedback([top], outcome=-1.0)
    r2 = service.read("staging database integration tests", top_k=2)
    assert _ids(r2) == [other, top]
    assert r2.items[1].valence < 0


def test_learned_signals_cannot_lift_unrelated_memory_above_near_exact_match(service):
    exact = service.write("The deploy script lives in tools/deploy.sh and needs AWS_PROFILE set.").id
    unrelated = service.write("Grandma's lemon cake needs three eggs and a cup of sugar.").id
    query = "where is the deploy script and what does it need"
    for _ in range(10):
        r = service.read(query, top_k=2)
        service.feedback([unrelated], outcome=1.0, read_id=r.read_id)
        service.rate(unrelated, rating=1)
        service.feedback([exact], outcome=-1.0)
    final = service.read(query, top_k=2)
    assert final.items[0].id == exact
    assert final.items[1].id == unrelated
    assert final.items[1].valence > 0.9


def test_quality_boost_off_gives_pure_relevance_order(tmp_path, real_embedder):
    settings = Settings(db=tmp_path / "m.db", quality_boost=False)
    svc = MemoryService(settings, real_embedder)
    ids = _webhooks(svc)
    r = svc.read("webhook retry")
    svc.feedback([ids[RETRY_BACKOFF]], outcome=1.0, read_id=r.read_id)
    svc.rate(ids[RETRY_BACKOFF], rating=1)
    again = svc.read("webhook retry")
    assert [it.score for it in again.items] == [it.relevance for it in again.items]
    assert again.items[0].id == ids[RETRY_DROP]
    svc.close()


def test_thumbs_up_raises_quality_and_thumbs_down_lowers_it(hash_service):
    a = hash_service.write("alpha memory").id
    b = hash_service.write("beta memory").id
    assert hash_service.quality(a).quality_score == 0.5
    up = hash_service.rate(a, rating=1, reason="correct")
    down = hash_service.rate(b, rating=-1, reason="outdated")
    assert up.quality_score > 0.5 > down.quality_score
    assert up.rating_count == 1
    report = hash_service.quality(a)
    assert report.rating_history[0].reason == "correct"
    assert report.components["user_rating"] > 0.5


def test_rating_is_stored_in_metadata_json(hash_service):
    mid = hash_service.write("gamma memory", metadata={"source": "test"}).id
    hash_service.rate(mid, rating=-1, reason="wrong")
    with hash_service.store.db.read():
        meta = hash_service.store.get(mid)["metadata"]
    assert meta["source"] == "test"
    assert meta["user_rating"] == -1
    assert meta["outcome"] == "negative"
    assert meta["feedback_source"] == "rate_memory"
    assert meta["quality_score"] < 0.5
    assert meta["rating_history"][-1]["reason"] == "wrong"


def test_valence_quality_and_ratings_survive_restart(settings, real_embedder):
    svc = MemoryService(settings, real_embedder)
    ids = _webhooks(svc)
    r = svc.read("webhook retry")
    svc.feedback([ids[RETRY_BACKOFF]], outcome=1.0, read_id=r.read_id)
    svc.rate(ids[RETRY_BACKOFF], rating=1)
    order = _ids(svc.read("webhook retry", top_k=3))
    before = svc.quality(ids[RETRY_BACKOFF])
    svc.close()
    svc2 = MemoryService(settings, real_embedder)
    after = svc2.quality(ids[RETRY_BACKOFF])
    assert after.valence == before.valence > 0
    assert after.quality_score == before.quality_score > 0.5
    assert after.rating_count == 1
    assert _ids(svc2.read("webhook retry", top_k=3)) == order
    svc2.close()


def test_writing_same_content_returns_same_id_and_merges_tags(hash_service):
    first = hash_service.write("Prefer ruff over flake8.", tags=["python"])
    again = hash_service.write("  Prefer ruff over flake8.\r\n", tags=["lint", "python"])
    assert first.created and not again.created
    assert again.id == first.id == hashlib.sha256(b"Prefer ruff over flake8.").hexdigest()
    assert again.tags == ["python", "lint"]
    assert hash_service.stats().total == 1


def test_write_extracts_concepts(hash_service):
    r = hash_service.write("Retry webhooks with exponential backoff; webhooks time out after 30s.")
    assert r.concepts[0] == "webhook"
    assert "backoff" in r.concepts and "with" not in r.concepts


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"content": ""}, "empty"),
        ({"content": "x" * 10_001}, "10000"),
        ({"content": "ok", "tags": [f"t{i}" for i in range(21)]}, "limit is 20"),
        ({"content": "ok", "tags": ["x" * 65]}, "limit is 64"),
        ({"content": "ok", "tags": "python"}, "list of strings"),
        ({"content": "ok", "metadata": {"blob": "x" * 20_000}}, "16384"),
        ({"content": "ok", "metadata": {"quality_score": 1}}, "reserved"),
        ({"content": "bad \x00 nul"}, "NUL"),
        ({"content": "lone \ud800 surrogate"}, "surrogate"),
    ],
)
def test_invalid_write_is_rejected_with_reason_and_changes_nothing(hash_service, kwargs, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        hash_service.write(**kwargs)
    assert hash_service.stats().total == 0


@pytest.mark.parametrize("outcome", [float("nan"), float("inf"), 1.5, -2, "1", True])
def test_invalid_outcome_is_an_error_and_changes_nothing(hash_service, outcome):
    mid = hash_service.write("delta memory").id
    with pytest.raises(InvalidInput, match="outcome"):
        hash_service.feedback([mid], outcome=outcome)
    assert hash_service.quality(mid).valence == 0
    assert hash_service.stats().feedback_events == 0


def test_feedback_with_only_unknown_ids_is_an_error_and_changes_nothing(hash_service):
    mid = hash_service.write("epsilon memory").id
    with pytest.raises(NotFound, match="nothing was changed"):
        hash_service.feedback(["0" * 64, "deadbeef"], outcome=1.0)
    assert hash_service.quality(mid).valence == 0


def test_feedback_with_partly_unknown_ids_updates_known_and_lists_rest(hash_service):
    mid = hash_service.write("zeta memory").id
    r = hash_service.feedback([mid[:10], "f" * 64], outcome=0.5)
    assert [u.id for u in r.updated] == [mid]
    assert r.not_found == ["f" * 64]
    assert hash_service.quality(mid).valence == pytest.approx(0.5 * hash_service.settings.learning_rate)


def test_feedback_with_unknown_read_id_is_an_error(hash_service):
    mid = hash_service.write("eta memory").id
    with pytest.raises(InvalidInput, match="read_id"):
        hash_service.feedback([mid], outcome=1.0, read_id="nope")
    assert hash_service.quality(mid).feedback_count == 0


def test_ids_accept_unique_prefix_and_reject_ambiguous_one(hash_service):
    mid = hash_service.write("theta memory").id
    assert hash_service.quality(mid[:8]).id == mid
    with pytest.raises(InvalidInput, match="at least 8"):
        hash_service.quality(mid[:4])
    # Two stored ids sharing 8 leading characters (content hashes almost never do: craft them).
    twins = ["abcdef01" + "0" * 56, "abcdef01" + "f" * 56]
    vec = hash_service.embedder.embed_passages(["twin"])[0]
    with hash_service.store.db.write():
        for i, twin in enumerate(twins):
            row = {
                "id": twin,
                "content": f"twin {i}",
                "memory_type": "note",
                "domain": "",
                "tags": [],
                "metadata": {},
                "concepts": [],
                "created_at": "2026-01-01T00:00:00+00:00",
                "updated_at": "2026-01-01T00:00:00+00:00",
            }
            hash_service.store.insert(row, vec)
    with pytest.raises(AmbiguousId) as err:
        hash_service.rate("abcdef01", rating=1)
    assert all(t in str(err.value) for t in twins)
    assert hash_service.quality(twins[1][:9]).rating_count == 0


def test_read_filters_by_tags_and_domain(hash_service):
    hash_service.write("alpha release notes", tags=["release"], domain="proj-a")
    hash_service.write("alpha design notes", tags=["design"], domain="proj-a")
    hash_service.write("alpha release notes for b", tags=["release"], domain="proj-b")
    r = hash_service.read("alpha notes", tags=["release"], domain="proj-a", top_k=10)
    assert [it.content for it in r.items] == ["alpha release notes"]
    assert len(hash_service.read("alpha notes", top_k=10).items) == 3


def test_a_read_with_the_model_gives_the_parts_of_relevance_for_the_prompt_hook_and_a_keyword_read_none(
    hash_service,
):
    hash_service.write("kappa lambda sigma")
    hash_service.write("completely different words here")
    top = hash_service.read("kappa lambda", top_k=2, record=False).items[0]
    assert top.semantic is not None and top.lexical is not None and top.lexical > 0
    s = hash_service.settings
    assert abs(top.relevance - (s.sem_weight * top.semantic + (1 - s.sem_weight) * top.lexical)) < 1e-3
    keyword = hash_service.read("kappa lambda", top_k=2, keyword_only=True, record=False).items
    assert keyword and all(it.semantic is None and it.lexical is None for it in keyword)


def test_min_relevance_is_applied_only_when_asked(hash_service):
    hash_service.write("kappa lambda")
    hash_service.write("completely different words here")
    everything = hash_service.read("kappa lambda", top_k=10)
    assert len(everything.items) == 2
    strict = hash_service.read("kappa lambda", top_k=10, min_relevance=0.5)
    assert [it.content for it in strict.items] == ["kappa lambda"]


def test_each_read_is_recorded_with_ids_and_ranks(hash_service):
    hash_service.write("mu nu xi")
    hash_service.write("mu omicron")
    r = hash_service.read("mu", top_k=2)
    with hash_service.store.db.read():
        logged = hash_service.store.get_read(r.read_id)
    assert logged["results"] == [[it.id, i] for i, it in enumerate(r.items, start=1)]
    assert logged["query_concepts"] == r.query_concepts


def test_delete_erases_memory_and_its_learning(hash_service):
    mid = hash_service.write("to be deleted").id
    r = hash_service.read("deleted")
    hash_service.feedback([mid], outcome=1.0, read_id=r.read_id)
    assert hash_service.delete(mid[:12]).deleted
    assert hash_service.stats().total == 0
    assert hash_service.stats().feedback_events == 0
    with pytest.raises(NotFound):
        hash_service.quality(mid)
    assert hash_service.read("deleted").items == []


def test_database_refuses_a_different_embedding_model(settings):
    svc = MemoryService(settings, HashEmbedder(64))
    svc.write("bound to the hash model")
    svc.close()
    with pytest.raises(ModelMismatch, match="MNEMO_EMBED_MODEL=mnemo-hash-64"):
        MemoryService(settings, HashEmbedder(32))


def test_export_then_import_reproduces_the_store(tmp_path):
    src = MemoryService(Settings(db=tmp_path / "a.db"), HashEmbedder())
    ids = [src.write(f"export memory {i}", tags=["x"], metadata={"i": i}).id for i in range(5)]
    r = src.read("export memory")
    src.feedback(ids[:2], outcome=1.0, read_id=r.read_id)
    src.rate(ids[3], rating=-1, reason="meh")
    src.write("export memory corrected", supersedes=[ids[4]], source="hook")
    with src.store.db.write():
        src.store.update(ids[0], tier="pattern")
    dumped = [json.loads(json.dumps(rec)) for rec in src.export()]
    assert {m.get("tier") for m in dumped if m["type"] == "memory"} == {"working", "pattern"}
    dst = MemoryService(Settings(db=tmp_path / "b.db"), HashEmbedder())
    result = dst.import_records(dumped)
    assert result.memories_added == 6 and result.feedback_events == 2
    assert [rec for rec in dst.export()] == dumped
    assert dst.import_records(dumped).memories_skipped == 6
    src.close()
    dst.close()


def test_import_rejects_tampered_content(hash_service):
    rec = {"type": "memory", "id": "0" * 64, "content": "tampered", "created_at": "2026-01-01T00:00:00+00:00"}
    with pytest.raises(InvalidInput, match="SHA-256"):
        hash_service.import_records([rec])
    assert hash_service.stats().total == 0


def test_write_many_stores_all_in_one_batch_and_merges_duplicates(hash_service):
    first = hash_service.write("already here", tags=["old"])
    results = hash_service.write_many(
        [
            {"content": "batch one", "tags": ["a"]},
            {"content": "already here", "tags": ["new"]},
            {"content": "batch one", "tags": ["b"]},
        ]
    )
    assert [r.created for r in results] == [True, False, False]
    assert results[1].id == first.id and results[1].tags == ["old", "new"]
    assert results[2].tags == ["a", "b"]
    assert hash_service.stats().total == 2


def test_write_many_with_one_bad_item_stores_nothing(hash_service):
    with pytest.raises(InvalidInput, match="memory 1: content is empty"):
        hash_service.write_many([{"content": "fine"}, {"content": "   "}])
    assert hash_service.stats().total == 0


def test_batched_passage_embedding_equals_one_at_a_time(real_embedder):
    texts = ["short", "a much longer passage about webhooks, retries and dead letters " * 3, "medium length text"]
    batch = real_embedder.embed_passages(texts)
    for text, vec in zip(texts, batch):
        single = real_embedder.embed_passages([text])[0]
        assert abs(float(vec @ single) - 1.0) < 1e-5


def test_project_scope_writes_to_the_project_and_reads_it_with_global_memories(tmp_path, real_embedder):
    base = Settings(db=tmp_path / "scoped.db")
    api = MemoryService(base.model_copy(update={"project": "api"}), real_embedder)
    web = MemoryService(base.model_copy(update={"project": "web"}), real_embedder)
    try:
        mine = api.write("The api deploys with helm charts from deploy/helm.").id
        shared = api.write("Always sign commits with the team GPG key.", domain="global").id
        web.write("The web app deploys with vercel from the main branch.")
        assert api.quality(mine) and api.read("how does it deploy", record=False).items
        api_ids = {it.id for it in api.read("deploy and commit rules", top_k=10, record=False).items}
        assert mine in api_ids and shared in api_ids and len(api_ids) == 2
        web_items = web.read("deploy and commit rules", top_k=10, record=False).items
        assert {it.domain for it in web_items} == {"web", "global"}
        everywhere = MemoryService(base.model_copy(update={"project": "api", "scope": "all"}), real_embedder)
        try:
            assert len(everywhere.read("deploy and commit rules", top_k=10, record=False).items) == 3
        finally:
            everywhere.close()
    finally:
        api.close()
        web.close()


def test_keyword_only_read_never_loads_the_model_and_ranks_by_keywords(tmp_path, real_embedder):
    writer = MemoryService(Settings(db=tmp_path / "kw.db"), real_embedder)
    target = writer.write("Rotate the webhook signing secret every ninety days.").id
    writer.write("The frontend uses tailwind for styling.")
    writer.close()

    class Exploding:
        name = real_embedder.name
        dim = real_embedder.dim

        def embed_query(self, text):
            raise AssertionError("keyword_only must not embed")

        embed_passages = embed_query

    svc = MemoryService(Settings(db=tmp_path / "kw.db"), Exploding())
    try:
        r = svc.read("webhook signing secret rotation", keyword_only=True)
        assert [it.id for it in r.items] == [target] and r.items[0].relevance > 0.3
        assert svc.quality(target).access_count == 1  # recorded like any read
    finally:
        svc.close()


def test_a_personal_note_reaches_its_writer_in_any_project_and_stays_out_of_teammates_reads(db):
    def person(user: str, project: str) -> MemoryService:
        settings = Settings(db=db, user=user, project=project, auto_consolidate=False, auto_backup=False)
        return MemoryService(settings, HashEmbedder())

    ana, ben, ana_elsewhere = person("ana", "shop"), person("ben", "shop"), person("ana", "billing")
    try:
        mine = ana.write("I run the shop tests with my alias t, not pytest", domain="@me")
        shared = ana.write("The shop tests need the redis container running")
        assert ana.store.get(mine.id)["domain"] == "@ana" and ana.store.get(shared.id)["domain"] == "shop"

        def seen(svc: MemoryService, **kw) -> set[str]:
            return {it.id for it in svc.read("how do I run the shop tests", top_k=10, record=False, **kw).items}

        assert {mine.id, shared.id} <= seen(ana)
        assert mine.id in seen(ana_elsewhere) and shared.id not in seen(ana_elsewhere)
        assert shared.id in seen(ben) and mine.id not in seen(ben)
        assert mine.id in seen(ben, domain="@ana")  # a scope organizes reads; roles protect
    finally:
        for svc in (ana, ben, ana_elsewhere):
            svc.close()


class CountingEmbedder(HashEmbedder):
    """Says which queries it embedded, in order."""

    def __init__(self):
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text):
        self.queries.append(text)
        return super().embed_query(text)


def test_a_query_embedded_ahead_of_its_read_is_not_embedded_again_and_reads_the_same(settings):
    embedder = CountingEmbedder()
    svc = MemoryService(settings, embedder)
    try:
        for text in ("Webhook retries use exponential backoff.", "Deploys go through the release branch."):
            svc.write(text)
        query = "how do webhook retries back off?"
        plain = svc.read(query, record=False)
        embedder.queries.clear()
        svc.embed_query_ahead(query)
        ahead = svc.read(query, record=False)
        assert embedder.queries == [query]  # once, ahead; the read used that vector
        assert [(it.id, it.relevance, it.score) for it in ahead.items] == [
            (it.id, it.relevance, it.score) for it in plain.items
        ]
        svc.read(query, record=False)  # the vector embedded ahead is used once, not kept
        assert embedder.queries == [query, query]
    finally:
        svc.close()


def test_nothing_is_embedded_ahead_before_the_model_is_bound_or_for_a_query_a_read_would_refuse(settings):
    embedder = CountingEmbedder()
    svc = MemoryService(settings, embedder)
    try:
        svc.embed_query_ahead("before the model is bound")  # binding writes: not from here
        svc.embed_query_ahead("   ")
        assert embedder.queries == []
        svc.write("Deploys go through the release branch.")  # binds the model
        embedder.queries.clear()
        svc.embed_query_ahead("   ")
        assert embedder.queries == []
    finally:
        svc.close()
