"""End to end through the MCP SDK's in-memory client: one test per tool, plus errors."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.server import build_server
from mnemo_mcp.service import MemoryService

pytestmark = pytest.mark.anyio

TOOLS = {
    "memory_write",
    "memory_read",
    "memory_feedback",
    "rate_memory",
    "get_memory_quality",
    "memory_stats",
    "memory_delete",
    "memory_consolidate",
    "memory_restore",
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def server(settings, real_embedder):
    return build_server(settings, service_factory=lambda s: MemoryService(s, real_embedder))


async def call(client, name, args=None):
    r = await client.call_tool(name, args or {})
    assert not r.is_error, r.content
    return r.structured_content


async def error_text(client, name, args):
    r = await client.call_tool(name, args)
    assert r.is_error
    return " ".join(getattr(c, "text", "") for c in r.content)


async def test_tools_are_listed_with_titles_annotations_and_output_schemas(server):
    async with Client(server, mode="legacy") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.title and t.description and t.annotations is not None and t.output_schema
    assert tools["memory_delete"].annotations.destructive_hint is True
    assert tools["memory_stats"].annotations.read_only_hint is True
    assert tools["memory_write"].annotations.idempotent_hint is True


@pytest.mark.parametrize(
    "words, tool",
    [
        (("memory", "recall", "past fixes", "lessons"), "memory_read"),
        (("memory", "remember", "lesson"), "memory_write"),
        (("memories", "helped"), "memory_feedback"),
    ],
)
async def test_the_words_a_model_searches_deferred_tools_with_find_the_right_tool(server, words, tool):
    # Claude Code defers MCP tools behind ToolSearch, which matches words in names, titles and
    # descriptions: these are the words a model reaches for when it wants mnemo.
    async with Client(server, mode="legacy") as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
    text = " ".join([tool, listed[tool].title or "", listed[tool].description or ""]).lower()
    assert all(w in text for w in words), [w for w in words if w not in text]


async def test_the_tools_every_session_needs_are_loaded_up_front_the_rest_stay_deferred(server):
    async with Client(server, mode="legacy") as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
    always = {name for name, t in listed.items() if (t.meta or {}).get("anthropic/alwaysLoad") is True}
    assert always == {"memory_read", "memory_write", "memory_feedback"}


async def test_memory_write_returns_id_created_and_concepts(server):
    async with Client(server, mode="legacy") as c:
        first = await call(
            c, "memory_write", {"content": "Webhook signatures expire after five minutes.", "tags": ["webhooks"]}
        )
        again = await call(
            c, "memory_write", {"content": "Webhook signatures expire after five minutes.", "tags": ["security"]}
        )
    assert len(first["id"]) == 64 and first["created"] is True
    assert "signature" in first["concepts"]
    assert again["id"] == first["id"] and again["created"] is False
    assert again["tags"] == ["webhooks", "security"]


async def test_memory_read_returns_ranked_items_and_read_id(server):
    async with Client(server, mode="legacy") as c:
        await call(c, "memory_write", {"content": "Retry the webhook three times, then drop it."})
        await call(c, "memory_write", {"content": "Python virtualenvs live in .venv at the repo root."})
        r = await call(c, "memory_read", {"query": "webhook retry", "top_k": 2})
    assert r["read_id"] and r["query_concepts"] == ["webhook", "retry"]
    assert r["items"][0]["content"].startswith("Retry the webhook")
    keys = {"id", "content", "tags", "memory_type", "relevance", "valence", "quality", "score", "created_at"}
    assert keys <= set(r["items"][0])
    assert r["items"][0]["score"] >= r["items"][1]["score"]


async def test_a_result_text_is_its_structured_content_as_compact_json(server):
    # Gemini CLI hands its model the text block: no indentation to read, non-ASCII as written.
    async with Client(server, mode="legacy") as c:
        await call(c, "memory_write", {"content": "Après chaque édition des traductions lancer `make i18n` — ✓"})
        for name, args in (("memory_read", {"query": "traductions i18n"}), ("memory_stats", {})):
            r = await c.call_tool(name, args)
            (block,) = r.content
            assert json.loads(block.text) == r.structured_content
            assert "\n" not in block.text and ": " not in block.text and ", " not in block.text
            if name == "memory_read":
                assert "édition" in block.text and "— ✓" in block.text


async def test_memory_feedback_moves_valence_and_reorders_the_same_read(server):
    async with Client(server, mode="legacy") as c:
        for text in (
            "Retry the webhook three times, then drop it.",
            "Retry with backoff and keep the dead letter.",
            "Webhook signatures expire after five minutes.",
        ):
            await call(c, "memory_write", {"content": text})
        r = await call(c, "memory_read", {"query": "webhook retry"})
        backoff = next(it["id"] for it in r["items"] if "backoff" in it["content"])
        fb = await call(
            c,
            "memory_feedback",
            {
                "memory_ids": [backoff[:10]],
                "outcome": 1.0,
                "read_id": r["read_id"],
                "query_concepts": r["query_concepts"],
            },
        )
        again = await call(c, "memory_read", {"query": "webhook retry"})
    assert fb["updated"][0]["id"] == backoff
    assert fb["updated"][0]["valence_after"] > fb["updated"][0]["valence_before"] == 0
    assert fb["associations_strengthened"] > 0 and fb["not_found"] == []
    assert again["items"][0]["id"] == backoff


async def test_rate_memory_changes_quality(server):
    async with Client(server, mode="legacy") as c:
        mid = (await call(c, "memory_write", {"content": "Run ruff before committing."}))["id"]
        up = await call(c, "rate_memory", {"memory_id": mid, "rating": 1, "reason": "works"})
    assert up == {"id": mid, "user_rating": 1, "quality_score": up["quality_score"], "rating_count": 1}
    assert up["quality_score"] > 0.5


async def test_get_memory_quality_reports_components_and_history(server):
    async with Client(server, mode="legacy") as c:
        mid = (await call(c, "memory_write", {"content": "Tests need the DATABASE_URL variable."}))["id"]
        await call(c, "rate_memory", {"memory_id": mid, "rating": -1, "reason": "outdated"})
        q = await call(c, "get_memory_quality", {"memory_id": mid[:8]})
    assert q["id"] == mid and q["quality_score"] < 0.5
    assert set(q["components"]) == {"user_rating", "access_frequency", "retrieval_ranking", "consolidation_score"}
    assert q["rating_history"][0]["reason"] == "outdated"


async def test_memory_stats_counts_live_memories(server):
    async with Client(server, mode="legacy") as c:
        await call(c, "memory_write", {"content": "one", "memory_type": "fact"})
        await call(c, "memory_write", {"content": "two"})
        s = await call(c, "memory_stats")
    assert s["total"] == 2 and s["archived"] == 0
    assert s["by_type"] == {"fact": 1, "note": 1}
    assert sum(s["quality_histogram"]) == 2
    assert s["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2" and s["embedding_dim"] == 384
    assert s["db_size_bytes"] > 0


async def test_memory_delete_erases_the_memory(server):
    async with Client(server, mode="legacy") as c:
        mid = (await call(c, "memory_write", {"content": "temporary note"}))["id"]
        d = await call(c, "memory_delete", {"memory_id": mid})
        s = await call(c, "memory_stats")
        text = await error_text(c, "get_memory_quality", {"memory_id": mid})
    assert d["deleted"] is True and d["id"] == mid
    assert s["total"] == 0
    assert "no memory" in text


@pytest.mark.parametrize(
    "name, args, fragment",
    [
        ("memory_write", {"content": ""}, "empty"),
        ("memory_write", {"content": "x", "tags": ["y" * 65]}, "64"),
        ("memory_read", {"query": "x", "top_k": 0}, "top_k"),
        ("memory_read", {"query": "x", "top_k": 51}, "top_k"),
        ("memory_feedback", {"memory_ids": ["abcdef0123"], "outcome": 2}, "outcome"),
        ("memory_feedback", {"memory_ids": ["abcdef0123"], "outcome": 1}, "none of the memory_ids exist"),
        ("memory_feedback", {"memory_ids": "nothex!", "outcome": 1}, "memory_ids"),
        ("rate_memory", {"memory_id": "abcdef0123", "rating": 5}, "rating"),
        ("rate_memory", {"memory_id": "xyz", "rating": 1}, "memory id"),
        ("get_memory_quality", {"memory_id": "0123456789abcdef"}, "no memory"),
        ("memory_write", {"content": "new", "supersedes": ["0123456789abcdef"]}, "supersedes: no memory"),
        ("memory_write", {"content": "new", "supersedes": ["not-an-id"]}, "supersedes entry"),
        ("memory_restore", {"memory_id": "0123456789abcdef"}, "no memory"),
        ("memory_consolidate", {"dry_run": [1]}, "dry_run"),
    ],
)
async def test_bad_arguments_are_error_results_naming_the_problem(settings, name, args, fragment):
    server = build_server(settings, service_factory=lambda s: MemoryService(s, HashEmbedder()))
    async with Client(server, mode="legacy") as c:
        await call(c, "memory_write", {"content": "a memory that must stay unchanged"})
        before = await call(c, "memory_stats")
        text = await error_text(c, name, args)
        after = await call(c, "memory_stats")
    assert fragment.lower() in text.lower()
    assert before == after


async def test_memory_write_supersedes_and_memory_restore_round_trip(server):
    async with Client(server, mode="legacy") as c:
        old = await call(c, "memory_write", {"content": "Secrets live in Vault under kv/app."})
        new = await call(
            c,
            "memory_write",
            {"content": "Secrets moved to AWS Secrets Manager (Vault is gone).", "supersedes": [old["id"][:12]]},
        )
        assert new["superseded"] == [old["id"]]
        live = await call(c, "memory_read", {"query": "where do secrets live"})
        assert [it["id"] for it in live["items"]] == [new["id"]]
        assert live["items"][0]["outcome"] == "new" and "tier" not in live["items"][0]  # words, not the tier
        everything = await call(c, "memory_read", {"query": "where do secrets live", "include_archived": True})
        old_item = next(it for it in everything["items"] if it["id"] == old["id"])
        assert old_item["archived"] is True and old_item["superseded_by"] == new["id"]
        restored = await call(c, "memory_restore", {"memory_id": old["id"]})
        assert restored == {**restored, "id": old["id"], "archived": False, "changed": True}
        assert len((await call(c, "memory_read", {"query": "where do secrets live"}))["items"]) == 2


async def test_memory_write_reports_a_near_duplicate_and_stores_it_only_when_allowed(server):
    async with Client(server, mode="legacy") as c:
        first = await call(c, "memory_write", {"content": "Use the staging database for integration tests."})
        dup = await call(c, "memory_write", {"content": "Use the staging database for the integration tests."})
        assert dup["duplicate_of"] == first["id"] and dup["created"] is False
        forced = await call(
            c,
            "memory_write",
            {"content": "Use the staging database for the integration tests.", "allow_duplicate": True},
        )
        assert forced["created"] is True and "duplicate_of" not in forced


async def test_memory_consolidate_dry_run_reports_and_changes_nothing(server):
    async with Client(server, mode="legacy") as c:
        await call(c, "memory_write", {"content": "Kafka consumers commit offsets after processing."})
        dry = await call(c, "memory_consolidate", {"dry_run": True})
        assert (
            dry["dry_run"] is True and dry["examined"] == 1 and set(dry["counts"]) >= {"archived", "promoted", "merged"}
        )
        assert (await call(c, "memory_stats"))["last_consolidation"] is None
        real = await call(c, "memory_consolidate", {})
        assert real["dry_run"] is False
        assert (await call(c, "memory_stats"))["last_consolidation"] == real["as_of"]


async def test_memory_read_with_expansion_lists_expanded_concepts(server):
    async with Client(server, mode="legacy") as c:
        w = await call(c, "memory_write", {"content": "The flux capacitor needs 1.21 gigawatts."})
        for _ in range(3):
            r = await call(c, "memory_read", {"query": "flux capacitor"})
            await call(c, "memory_feedback", {"memory_ids": [w["id"]], "outcome": 1.0, "read_id": r["read_id"]})
        r = await call(c, "memory_read", {"query": "flux capacitor", "expand_associations": True})
        assert "gigawatt" in r["expanded_concepts"]
        plain = await call(c, "memory_read", {"query": "flux capacitor", "expand_associations": False})
        assert "expanded_concepts" not in plain


async def test_memory_feedback_with_a_response_reports_alignment_and_credit(server):
    async with Client(server, mode="legacy") as c:
        used = await call(
            c, "memory_write", {"content": "Webhook retries use exponential backoff starting at two seconds."}
        )
        other = await call(c, "memory_write", {"content": "The frontend is styled with tailwind utility classes."})
        r = await call(c, "memory_read", {"query": "webhook retry backoff", "top_k": 2})
        fb = await call(
            c,
            "memory_feedback",
            {
                "memory_ids": [used["id"], other["id"]],
                "outcome": 1.0,
                "read_id": r["read_id"],
                "response": "Retries now back off exponentially, starting at two seconds, for every webhook.",
            },
        )
        assert fb["credit"][used["id"]] > fb["credit"][other["id"]] and set(fb["alignment"]) == {
            used["id"],
            other["id"],
        }
        only = await call(c, "memory_feedback", {"memory_ids": [used["id"]], "response": "Webhook retries back off."})
        assert only["updated"] == [] and "credit" not in only
        text = await error_text(c, "memory_feedback", {"memory_ids": [used["id"]]})
        assert "outcome" in text and "response" in text


async def test_a_store_that_cannot_open_turns_every_tool_into_a_clear_error(tmp_path):
    settings = Settings(db=tmp_path)  # a directory, not a file
    server = build_server(settings, service_factory=lambda s: MemoryService(s, HashEmbedder()))
    async with Client(server, mode="legacy") as c:
        text = await error_text(c, "memory_stats", {})
    assert "directory" in text and "MNEMO_DB" in text


def test_the_everyday_tools_carry_the_words_claude_codes_tool_search_matches():
    # Measured with Claude Code 2.1.332: ToolSearch matches a query's words against deferred
    # tools' descriptions, whole words only ("remembering" does not find "remember", titles are
    # not searched). memory_read, memory_write and memory_feedback are loaded up front, but a CLI
    # that defers them must still find them by the words a model searches with.
    import re

    from mnemo_mcp import tools

    text = {t.name: t.description.lower() for t in tools.TOOLS}
    assert re.search(r"\bremember\b", text["memory_write"])
    for phrase in ("recall", "past fixes", "lessons", "what worked"):
        assert re.search(rf"\b{phrase}\b", text["memory_read"]), phrase


async def test_a_write_keeps_the_name_the_client_gave_when_it_connected(settings):
    from mcp.types import Implementation

    server = build_server(settings, service_factory=lambda s: MemoryService(s, HashEmbedder()))
    info = Implementation(name="gemini-cli-mcp-client", version="0.61.0")
    async with Client(server, mode="legacy", client_info=info) as c:
        written = await call(c, "memory_write", {"content": "Release notes live in docs/RELEASES.md."})
    svc = MemoryService(settings, HashEmbedder())
    try:
        record = next(r for r in svc.export() if r.get("id") == written["id"])
    finally:
        svc.close()
    assert record["provenance"]["by"] == "mcp" and record["provenance"]["client"] == "gemini-cli-mcp-client"
