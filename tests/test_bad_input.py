"""Bad input, end to end.

1. Property tests through the SDK's in-memory MCP client over every tool's arguments: the server
   never crashes (memory_stats answers after every call), every rejection is an error result whose
   text names the problem, a rejection leaves the database exactly as it was (memory_stats plus a
   full export of the store), and valid but weird text (emoji, right-to-left, full-text-search and
   SQL syntax) is stored and read back exactly.
2. (tests/test_bad_jsonrpc.py) Malformed JSON-RPC on the real server's stdin leaves it serving,
   and its stdout holds only JSON-RPC lines.

The id-taking tools, the brief's named values and the bugs not fixed yet (strict xfails) are in
test_bad_input_ids.py; the harness and strategies in bad_input_harness.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from bad_input_harness import (
    EMOJI,
    FTS_SQL,
    MISSING,
    PROPERTY,
    RTL,
    SAFE,
    ambiguous,
    bad_tags,
    bad_text,
    blank,
    call_with,
    finite,
    hex_ref,
    huge,
    json_parses_to_container_or_null,
    malformed_id,
    not_a_bool,
    not_a_list,
    not_a_string,
    open_harness,
    plain_string,
    reserved_metadata,
    text_of,
    unknown,
    valid_tag,
    valid_tags,
    valid_text,
    with_nul,
    with_surrogate,
)
from hypothesis import assume, given, note
from hypothesis import strategies as st

from mnemo_mcp.core.text import content_id, normalize_content


@pytest.fixture
def harness(db):
    yield from open_harness(db)


# --- memory_write --------------------------------------------------------------------------


@PROPERTY
@given(data=st.data())
def test_memory_write_rejects_each_bad_argument_and_changes_nothing(harness, data):
    h = harness
    base = {"content": data.draw(valid_text, "content"), "tags": data.draw(valid_tags, "tags")}
    arg = data.draw(
        st.sampled_from(["content", "tags", "memory_type", "metadata", "domain", "supersedes", "allow_duplicate"])
    )
    if arg == "content":
        value = data.draw(bad_text(10_000, required=True))
    elif arg == "tags":
        value = data.draw(bad_tags)
    elif arg == "memory_type":
        value = data.draw(
            st.one_of(
                blank.filter(bool),
                st.text(SAFE, min_size=65, max_size=70),
                with_nul,
                with_surrogate,
                not_a_string,
                st.none(),
            )
        )
    elif arg == "metadata":
        value = data.draw(
            st.one_of(
                reserved_metadata,
                st.integers(16_400, 1_000_000).map(lambda n: {"x": "y" * n}),
                # Surrogates in values only: the SDK's client cannot serialise one in a key.
                st.sampled_from([{"k": "v\ud800"}, {"a": ["ok", {"b": "\ud83d"}]}]),
                st.one_of(st.integers(), st.lists(st.integers(), max_size=2), plain_string, st.none(), st.booleans()),
            )
        )
    elif arg == "domain":
        value = data.draw(
            st.one_of(st.text(SAFE, min_size=201, max_size=210), with_nul, with_surrogate, huge(200), not_a_string)
        )
    elif arg == "supersedes":
        kind = data.draw(st.sampled_from(["malformed", "unknown", "ambiguous", "too many", "wrong type"]))
        if kind == "malformed":
            value = [data.draw(malformed_id)]
        elif kind == "unknown":
            value = [unknown(h, data.draw(hex_ref))]
        elif kind == "ambiguous":
            value = [h.seed.base, data.draw(ambiguous)]
        elif kind == "too many":
            value = [f"{i:08x}" for i in range(data.draw(st.integers(21, 30)))]
        else:
            value = data.draw(st.one_of(not_a_list, st.lists(st.integers(), min_size=1, max_size=2)))
    else:
        value = data.draw(not_a_bool)
    note(f"{arg} = {value!r:.200}")
    h.rejected("memory_write", call_with(base, arg, value), arg)


@PROPERTY
@given(data=st.data())
def test_weird_valid_text_is_stored_and_read_back_exactly(harness, data):
    h = harness
    content = data.draw(valid_text, "content")
    tags = data.draw(valid_tags, "tags")
    memory_type = data.draw(st.one_of(st.just("note"), valid_tag), "memory_type")
    # A fresh domain per example keeps the near-duplicate check and the read to this memory;
    # the '#n' ending also keeps it from looking like JSON to the SDK (see the xfail below).
    domain = data.draw(st.text(SAFE, max_size=40), "domain prefix") + f" #{next(h.counter)}"
    mid = content_id(normalize_content(content))
    existed = mid in h.ids()
    before = h.snapshot()
    r = h.call("memory_write", {"content": content, "tags": tags, "memory_type": memory_type, "domain": domain})
    if r.is_error and ("secret" in text_of(r).lower() or (existed and "already has" in text_of(r))):
        # Refused by the secrets policy, or the same content came again with tags past the limit:
        # a fair rejection, and nothing changed.
        assert h.snapshot() == before
        return
    assert not r.is_error, f"valid weird input rejected: {text_of(r)}"
    w = r.structured_content
    h.stats()
    want_tags = list(dict.fromkeys(t.strip() for t in tags))
    assert w["id"] == mid and w["created"] is (not existed)
    assert set(want_tags) <= set(w["tags"])

    row = h.row(mid)
    assert row["content"] == normalize_content(content)
    if not existed:
        assert (
            row["domain"] == domain.strip() and row["memory_type"] == memory_type.strip() and row["tags"] == want_tags
        )

    # The content itself as the query (full-text syntax and all), filtered by its domain and a tag.
    read = h.accepted(
        "memory_read",
        {
            "query": content,
            "domain": row["domain"],
            "tags": want_tags[:1] or None,
            "top_k": 50,
            "include_archived": True,
        },
    )
    item = next((it for it in read["items"] if it["id"] == mid), None)
    assert item is not None, f"memory {mid} not found by its own content in domain {row['domain']!r}"
    if item.get("quarantined"):  # hidden or reversed text reads as an attack: stored exactly, shown withheld
        assert item["content"].startswith("[text withheld") and row["quarantine"] is not None
    else:
        assert item["content"] == normalize_content(content)
    assert item["domain"] == row["domain"] and set(want_tags) <= set(item["tags"])
    q = h.accepted("get_memory_quality", {"memory_id": mid[:16]})
    assert q["id"] == mid


PLAIN_TEXT = list(
    dict.fromkeys(
        FTS_SQL
        + RTL
        + EMOJI
        + [
            'NEAR(retry webhook, 3) OR "x" AND NOT y* ^z col:w -(a)',
            "Robert'); DROP TABLE students;--",
            "SELECT * FROM memories WHERE 1=1; DELETE FROM memories_fts",
            'מה שלומך? 🚀 "quoted" NEAR( مرحبا',
        ]
    )
)


def test_search_syntax_sql_emoji_and_rtl_are_stored_and_found_as_plain_text(harness):
    h = harness
    for i, text in enumerate(PLAIN_TEXT):
        domain = f"plain #{i}"
        w = h.accepted("memory_write", {"content": text, "tags": [text], "domain": domain})
        assert w["id"] == content_id(normalize_content(text)) and w["tags"] == [text.strip()], (text, w)
        for args in (
            {"query": text, "domain": domain, "tags": [text]},
            {"query": f"{text} {text}", "domain": domain},
            {"query": text, "top_k": 50, "include_archived": True, "expand_associations": True},
        ):
            # A bidi override hides text, so such a note is quarantined: its text comes back fenced.
            r = h.accepted("memory_read", {**args, "include_quarantined": True})
            item = next((it for it in r["items"] if it["id"] == w["id"]), None)
            if "domain" in args:
                assert item is not None, (text, args)
            if item is not None and item.get("quarantined"):
                assert "\u202e" in text and "QUARANTINED NOTE" in item["content"] and "evil" in item["content"]
            elif item is not None:
                assert item["content"] == normalize_content(text) and item["tags"] == [text.strip()], (text, item)


# --- memory_read ---------------------------------------------------------------------------


@PROPERTY
@given(data=st.data())
def test_memory_read_rejects_each_bad_argument_and_changes_nothing(harness, data):
    base = {"query": data.draw(valid_text, "query")}
    arg = data.draw(
        st.sampled_from(
            ["query", "top_k", "tags", "domain", "min_relevance", "include_archived", "expand_associations"]
        )
    )
    if arg == "query":
        value = data.draw(bad_text(10_000, required=True))
    elif arg == "top_k":
        value = data.draw(
            st.one_of(
                st.sampled_from(
                    [0, -1, 51, 10**9, -(10**9), 2.5, 0.5, 50.5, None, "abc", [], {}, [5], float("nan"), float("inf")]
                ),
                st.integers().filter(lambda k: not 1 <= k <= 50),
                finite.filter(lambda x: x != int(x) if abs(x) < 1e15 else True),
            )
        )
    elif arg == "tags":
        value = data.draw(bad_tags)
    elif arg == "domain":
        value = data.draw(st.one_of(st.text(SAFE, min_size=201, max_size=210), with_nul, with_surrogate, not_a_string))
    elif arg == "min_relevance":
        value = data.draw(
            st.one_of(
                st.floats(max_value=0.0, exclude_max=True, allow_nan=False, allow_infinity=False),
                st.floats(min_value=1.0, exclude_min=True, allow_nan=False, allow_infinity=False),
                st.sampled_from(["abc", [], {}, [0.5]]),
            )
        )
    elif arg == "include_archived":
        value = data.draw(st.one_of(not_a_bool, st.none()))
    else:
        value = data.draw(not_a_bool)
    note(f"{arg} = {value!r:.200}")
    harness.rejected("memory_read", call_with(base, arg, value), arg)


@PROPERTY
@given(
    query=valid_text,
    top_k=st.integers(1, 50),
    tags=st.one_of(st.none(), valid_tags),
    min_relevance=st.one_of(st.none(), st.floats(0.0, 1.0)),
    include_archived=st.booleans(),
    expand=st.one_of(st.none(), st.booleans()),
    concepts=st.one_of(st.none(), st.lists(st.one_of(valid_text, valid_tag), max_size=5)),
    outcome=st.one_of(st.none(), st.floats(-1.0, 1.0)),
    response=st.one_of(st.none(), valid_text.filter(lambda s: not json_parses_to_container_or_null(s))),
)
def test_any_valid_query_is_answered_and_its_read_id_takes_feedback(
    harness, query, top_k, tags, min_relevance, include_archived, expand, concepts, outcome, response
):
    h = harness
    args = {"query": query, "top_k": top_k, "include_archived": include_archived}
    for key, value in (("tags", tags), ("min_relevance", min_relevance), ("expand_associations", expand)):
        if value is not None:
            args[key] = value
    r = h.accepted("memory_read", args)
    assert isinstance(r["read_id"], str) and r["read_id"]
    assert len(r["items"]) <= top_k
    if min_relevance is not None:
        assert all(it["relevance"] >= round(min_relevance, 4) - 1e-4 for it in r["items"])
    if tags:
        wanted = {t.strip() for t in tags}
        assert all(wanted & set(it["tags"]) for it in r["items"])
    ids = [it["id"] for it in r["items"]] or [h.seed.base]
    if outcome is None and response is None:
        outcome = 0.0
    fb_args: dict[str, Any] = {"memory_ids": ids, "read_id": r["read_id"]}
    for key, value in (("outcome", outcome), ("response", response), ("query_concepts", concepts)):
        if value is not None:
            fb_args[key] = value
    fb = h.accepted("memory_feedback", fb_args)
    assert [u["id"] for u in fb["updated"]] == (ids if outcome is not None else []) and fb["not_found"] == []
    if response is not None:
        assert set(fb["alignment"]) <= set(ids) and all(0.0 <= a <= 1.0 for a in fb["alignment"].values())


# --- memory_feedback -----------------------------------------------------------------------


def _json_is_null(s: str) -> bool:
    try:
        return json.loads(s) is None
    except ValueError:
        return False


@PROPERTY
@given(data=st.data())
def test_memory_feedback_rejects_each_bad_argument_and_changes_nothing(harness, data):
    h = harness
    base = {"memory_ids": [h.seed.base], "outcome": data.draw(st.floats(-1.0, 1.0)), "read_id": h.seed.read_id}
    if data.draw(st.booleans(), "with a response"):
        base["response"] = data.draw(valid_text.filter(lambda s: not json_parses_to_container_or_null(s)), "response")
    arg = data.draw(st.sampled_from(["memory_ids", "outcome", "read_id", "query_concepts", "response"]))
    if arg == "memory_ids":
        kind = data.draw(
            st.sampled_from(["empty", "wrong type", "malformed", "unknown", "ambiguous", "too many", "missing"])
        )
        value = {
            "empty": list,
            "wrong type": lambda: data.draw(
                st.one_of(not_a_list, st.none(), st.lists(st.integers(), min_size=1, max_size=2))
            ),
            "malformed": lambda: [h.seed.base, data.draw(malformed_id)],
            "unknown": lambda: [unknown(h, data.draw(hex_ref)) for _ in range(data.draw(st.integers(1, 3)))],
            "ambiguous": lambda: [h.seed.base, data.draw(ambiguous)],
            "too many": lambda: [h.seed.base] * data.draw(st.integers(101, 150)),
            "missing": lambda: MISSING,
        }[kind]()
    elif arg == "outcome":
        out_of_range = st.one_of(
            st.floats(min_value=1.0, exclude_min=True, allow_nan=False, allow_infinity=False),
            st.floats(max_value=-1.0, exclude_max=True, allow_nan=False, allow_infinity=False),
            st.sampled_from(["abc", [], {}, [1.0], 2, -2]),
        )
        # No outcome (null, or NaN and infinities, which the client sends as null) is an error
        # only without a response.
        no_outcome = st.sampled_from([None, MISSING, float("nan"), float("inf"), float("-inf")])
        value = data.draw(out_of_range if "response" in base else st.one_of(out_of_range, no_outcome))
    elif arg == "response":
        value = data.draw(bad_text(50_000, required=False))
    elif arg == "read_id":
        value = data.draw(
            st.one_of(
                blank.filter(lambda s: not _json_is_null(s)),
                st.text(SAFE, min_size=1, max_size=40).filter(lambda s: s.strip() and not _json_is_null(s)),
                st.sampled_from(["'; DROP TABLE reads; --", "0" * 16, "NEAR(", h.seed.read_id + "0", "x" * 100_000]),
                st.integers(),
                finite,
                st.lists(st.integers(), max_size=2),
                st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
                # Left out, see test_read_id_with_a_lone_surrogate_is_rejected_by_name: lone surrogates.
            )
        )
        assume(value != h.seed.read_id)
    else:
        value = data.draw(
            st.one_of(
                st.integers(),
                st.dictionaries(st.text(max_size=2), st.integers(), min_size=1, max_size=2),
                plain_string,
                st.lists(st.one_of(st.integers(), st.none(), st.just({"a": 1})), min_size=1, max_size=3),
                with_nul.map(lambda s: [s]),
                with_surrogate.map(lambda s: ["ok", s]),
            )
        )
    note(f"{arg} = {value!r:.200}")
    h.rejected("memory_feedback", call_with(base, arg, value), arg)


@PROPERTY
@given(data=st.data())
def test_memory_feedback_reports_unknown_ids_next_to_known_ones(harness, data):
    h = harness
    refs = [unknown(h, data.draw(hex_ref)) for _ in range(data.draw(st.integers(1, 4)))]
    ids = [h.seed.base[: data.draw(st.integers(8, 64))].upper()] + refs
    fb = h.accepted("memory_feedback", {"memory_ids": ids, "outcome": data.draw(st.floats(-1.0, 1.0))})
    assert [u["id"] for u in fb["updated"]] == [h.seed.base]
    assert fb["not_found"] == list(dict.fromkeys(r.lower() for r in refs))
