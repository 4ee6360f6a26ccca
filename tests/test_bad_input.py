"""Bad input, end to end.

1. Property tests through the SDK's in-memory MCP client over every tool's arguments: the server
   never crashes (memory_stats answers after every call), every rejection is an error result whose
   text names the problem, a rejection leaves the database exactly as it was (memory_stats plus a
   full export of the store), and valid but weird text (emoji, right-to-left, full-text-search and
   SQL syntax) is stored and read back exactly.
2. Malformed JSON-RPC on the real server's stdin leaves it serving, and its stdout holds only
   JSON-RPC lines.

Tests marked xfail(strict=True) expose bugs not fixed yet, both in how the MCP SDK pre-parses
arguments and transports lines (see each reason).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from mcp import Client

from mnemo_mcp.config import Settings
from mnemo_mcp.core.text import content_id, normalize_content
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.server import build_server
from mnemo_mcp.service import MemoryService

REPO = Path(__file__).resolve().parents[1]

PROPERTY = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # one server per test, shared by its examples on purpose
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)

MISSING = object()  # an argument left out of the call

# Two contents whose ids share their first 10 hex characters (found by brute force, checked below).
PAIR = ("prefix probe 1531043", "prefix probe 1612826")
PAIR_PREFIX = "4282843ea4"
AMBIGUOUS = [PAIR_PREFIX[:8], PAIR_PREFIX[:9], PAIR_PREFIX, PAIR_PREFIX.upper(), f"  {PAIR_PREFIX}  "]

# What a rejection must say, per argument: its name, or the phrase the server uses for it.
NAMES: dict[str, tuple[str, ...]] = {
    "content": ("content",),
    "tags": ("tag",),
    "memory_type": ("memory_type",),
    "metadata": ("metadata",),
    "domain": ("domain",),
    "supersedes": ("supersede", "id prefix"),
    "allow_duplicate": ("allow_duplicate",),
    "query": ("query",),
    "top_k": ("top_k",),
    "min_relevance": ("min_relevance",),
    "include_archived": ("include_archived",),
    "expand_associations": ("expand_associations",),
    "memory_ids": ("memory_ids", "id prefix"),
    "outcome": ("outcome",),
    "read_id": ("read_id",),
    "response": ("response",),
    "query_concepts": ("query_concept", "query concept"),
    "memory_id": ("memory_id", "memory id", "no memory", "id prefix"),
    "rating": ("rating",),
    "reason": ("reason",),
    "dry_run": ("dry_run",),
}


def text_of(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def explanation(tool: str, text: str) -> str:
    """The error text after the SDK's 'Error executing tool X' prefix (an unexpected exception
    in a tool leaves nothing after it)."""
    prefix = f"Error executing tool {tool}"
    return text[len(prefix) :].lstrip(": ") if text.startswith(prefix) else text


# --- the harness: one in-memory server, driven synchronously through a blocking portal ----------


@dataclass
class Seed:
    base: str  # a live memory with a tag
    pair: tuple[str, str]  # two ids sharing PAIR_PREFIX
    archived: str  # superseded by `successor`
    successor: str
    read_id: str


class Harness:
    def __init__(self, portal: Any, client: Client, service: MemoryService):
        self.portal = portal
        self.client = client
        self.service = service
        self.counter = itertools.count()
        self.seed = self._seed()

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        return self.portal.call(self.client.call_tool, tool, args)

    def stats(self) -> dict[str, Any]:
        r = self.call("memory_stats", {})
        assert not r.is_error, f"memory_stats stopped answering: {text_of(r)}"
        return r.structured_content

    def export(self) -> list[dict[str, Any]]:
        return list(self.service.export())

    def snapshot(self) -> tuple[dict[str, Any], list[str]]:
        return self.stats(), sorted(json.dumps(r, sort_keys=True) for r in self.export())

    def ids(self) -> set[str]:
        return {r["id"] for r in self.export() if r["type"] == "memory"}

    def row(self, mid: str) -> dict[str, Any]:
        return next(r for r in self.export() if r["type"] == "memory" and r["id"] == mid)

    def accepted(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        r = self.call(tool, args)
        assert not r.is_error, f"{tool} rejected valid input {args!r:.300}: {text_of(r)}"
        self.stats()
        return r.structured_content

    def rejected(self, tool: str, args: dict[str, Any], argument: str) -> str:
        """The call must be an error result naming `argument` and must change nothing."""
        before = self.snapshot()
        r = self.call(tool, args)
        text = text_of(r)
        assert r.is_error, f"{tool} accepted bad {argument}: {args!r:.300} -> {text:.300}"
        why = explanation(tool, text)
        assert why.strip(), f"{tool} failed without saying why (an unexpected exception?): {text!r}"
        fragments = NAMES[argument]
        assert any(f in why.lower() for f in fragments), f"{tool}: error does not name {argument}: {why!r:.400}"
        assert self.snapshot() == before, f"{tool} changed the database although it rejected {args!r:.300}"
        return why

    def _seed(self) -> Seed:
        base = self.accepted("memory_write", {"content": "a memory that must stay unchanged", "tags": ["seed"]})["id"]
        pair = tuple(self.accepted("memory_write", {"content": c, "allow_duplicate": True})["id"] for c in PAIR)
        old = self.accepted("memory_write", {"content": "Secrets live in Vault under kv/app."})["id"]
        new = self.accepted("memory_write", {"content": "Secrets moved to AWS Secrets Manager.", "supersedes": [old]})[
            "id"
        ]
        read_id = self.accepted("memory_read", {"query": "memory unchanged"})["read_id"]
        return Seed(base=base, pair=pair, archived=old, successor=new, read_id=read_id)


@pytest.fixture
def harness(db):
    services: list[MemoryService] = []

    def factory(s: Settings) -> MemoryService:
        services.append(MemoryService(s, HashEmbedder()))
        return services[-1]

    server = build_server(Settings(db=db, auto_consolidate=False, auto_backup=False), service_factory=factory)
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(Client(server, mode="legacy")) as client,
    ):
        portal.call(client.call_tool, "memory_stats", {})  # the store opens in the background: wait for it
        yield Harness(portal, client, services[0])


def call_with(base: dict[str, Any], arg: str, value: Any) -> dict[str, Any]:
    args = dict(base)
    if value is MISSING:
        args.pop(arg, None)
    else:
        args[arg] = value
    return args


# --- strategies ------------------------------------------------------------------------------


def json_parses_to_container_or_null(s: str) -> bool:
    """What the SDK turns into something else when sent for a `str | None` argument (it tries
    json.loads first and keeps a list, an object or null): see test_json_looking_strings_stay_strings."""
    try:
        return json.loads(s) is None or isinstance(json.loads(s), (list, dict))
    except (ValueError, RecursionError):
        return False


FTS_SQL = [
    '"',
    '""',
    "*",
    "NEAR(",
    "NEAR(a b, 2)",
    "OR",
    "AND",
    "NOT",
    "-",
    ":",
    "^",
    "(",
    ")",
    "col:term",
    "'; DROP TABLE memories; --",
    '" OR 1=1 --',
    "%",
    "_",
    "\\",
    "{}",
    "[1]",
    "null",
    "\u0001",
]
RTL = ["שלום עולם", "مرحبا بالعالم", "\u202eevil\u202c", "\u200fالعربية", "עברית123", "ﷺ"]
EMOJI = ["🚀", "👍🏽", "👨\u200d👩\u200d👧", "🇺🇦", "\u2764\ufe0f", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "e\u0301"]
WORDS = ["webhook", "retry", "python", "ci", "database", "cache", "Vault"]

SAFE = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
piece = st.one_of(st.sampled_from(FTS_SQL + RTL + EMOJI + WORDS), st.text(SAFE, min_size=1, max_size=6))
weird = st.tuples(st.lists(piece, min_size=1, max_size=10), st.sampled_from([" ", "", "\n", "\t", " \r\n"])).map(
    lambda t: t[1].join(t[0])
)
BIG_VALID = ["🚀" * 10_000, "ש" * 10_000, ("NEAR( " * 2000)[:10_000], ("'; DROP TABLE memories; -- " * 400)[:10_000]]
valid_text = st.one_of(weird, weird, weird, st.sampled_from(BIG_VALID)).filter(lambda s: normalize_content(s) != "")
valid_tag = st.one_of(st.sampled_from(FTS_SQL + RTL + EMOJI + WORDS), st.text(SAFE, min_size=1, max_size=64)).filter(
    lambda t: 0 < len(t.strip()) <= 64
)
valid_tags = st.lists(valid_tag, max_size=6)


def _insert(chars: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(valid_text, chars, st.integers(0, 10**6)).map(
        lambda t: t[0][: t[2] % (len(t[0]) + 1)] + t[1] + t[0][t[2] % (len(t[0]) + 1) :]
    )


with_nul = _insert(st.just("\x00"))
with_surrogate = _insert(st.characters(categories=["Cs"]))
blank = st.text(st.sampled_from(" \t\n\r\x0b\x0c\u00a0\u2003\u3000\u2028"), max_size=6)  # "" included


def huge(limit: int) -> st.SearchStrategy[str]:
    return st.tuples(
        st.sampled_from([limit + 1, 65_536, 1_000_000]), st.sampled_from(["x", "é", "🚀", "ש", " NEAR("])
    ).map(lambda t: (t[1] * t[0])[: t[0]])


finite = st.floats(allow_nan=False, allow_infinity=False)
# Wrong types for a string argument (None is added where the argument is required).
not_a_string = st.one_of(
    st.integers(),
    finite,
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
reserved_metadata = st.tuples(
    st.sampled_from(
        [
            "quality_score",
            "quality_components",
            "user_rating",
            "outcome",
            "rating_history",
            "duplicate_allowed",
            "restored_at",
        ]
    ),
    st.dictionaries(st.text(SAFE, max_size=5), st.integers(), max_size=2),
).map(lambda t: {**t[1], t[0]: 1})
# Strings that are not JSON: the SDK would parse a JSON array or object sent as a string.
plain_string = st.sampled_from(["python", "a,b", "NEAR(", "'; DROP TABLE memories; --", "🚀", "שלום"])
not_a_list = st.one_of(
    st.integers(),
    finite,
    st.booleans(),
    plain_string,
    st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2),
)
not_a_bool = st.sampled_from([2, -1, 0.5, "maybe", "", "abc", "2", [True], {"a": True}, 10**9])


def bad_text(limit: int, *, required: bool) -> st.SearchStrategy[Any]:
    wrong = st.one_of(not_a_string, st.just(None), st.just(MISSING)) if required else not_a_string
    return st.one_of(blank, with_nul, with_surrogate, huge(limit), wrong)


bad_tag = st.one_of(
    blank,
    with_nul.map(lambda s: s[:30] + "\x00"),
    with_surrogate.map(lambda s: s[:30] + "\ud800"),
    st.text(SAFE, min_size=65, max_size=80).filter(lambda t: len(t.strip()) > 64),
    st.integers(),
    st.none(),
    st.just({"a": 1}),
    st.just(["x"]),
)
too_many_tags = st.integers(21, 40).map(lambda n: [f"tag{i}" for i in range(n)])
bad_tags = st.one_of(
    not_a_list,
    st.tuples(valid_tags, bad_tag, st.integers(0, 6)).map(lambda t: t[0][: t[2]] + [t[1]] + t[0][t[2] :]),
    too_many_tags,
)

hex_ref = st.text("0123456789abcdef", min_size=8, max_size=64)
malformed_id = st.one_of(
    st.text("0123456789abcdef", max_size=7),
    st.text("0123456789abcdef", min_size=65, max_size=80),
    st.tuples(
        hex_ref, st.sampled_from(["g", "-", "x y", "\x00", "\ud800", "é", "０", "'", "*", "%"]), st.integers(0, 64)
    ).map(lambda t: t[0][: t[2]] + t[1] + t[0][t[2] :]),
    st.sampled_from(["'; DROP TABLE memories; --", "NEAR(", "*", "%", "🚀" * 8, "null", "שלוםשלוםשלום"]),
)
wrong_id_type = st.one_of(
    st.integers(),
    finite,
    st.booleans(),
    st.lists(hex_ref, max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
ambiguous = st.sampled_from(AMBIGUOUS)


def unknown(h: Harness, ref: str) -> str:
    key = ref.strip().lower()
    assume(not any(mid.startswith(key) for mid in h.ids()))
    return ref


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


# --- the id-taking tools --------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["get_memory_quality", "memory_delete", "memory_restore", "rate_memory"])
@PROPERTY
@given(data=st.data())
def test_bad_memory_ids_are_rejected_and_change_nothing(harness, tool, data):
    h = harness
    kind = data.draw(st.sampled_from(["malformed", "unknown", "ambiguous", "wrong type", "missing"]))
    if kind == "malformed":
        value = data.draw(malformed_id)
    elif kind == "unknown":
        value = unknown(h, data.draw(hex_ref))
    elif kind == "ambiguous":
        value = data.draw(ambiguous)
    elif kind == "wrong type":
        value = data.draw(st.one_of(wrong_id_type, st.none()))
    else:
        value = MISSING
    base = {"rating": 1} if tool == "rate_memory" else {}
    note(f"memory_id = {value!r:.200}")
    why = h.rejected(tool, call_with(base, "memory_id", value), "memory_id")
    if kind == "unknown":
        assert value.strip().lower()[:64] in why.lower()
    if kind == "ambiguous":
        assert h.seed.pair[0] in why and h.seed.pair[1] in why


@PROPERTY
@given(data=st.data())
def test_rate_memory_rejects_bad_ratings_and_reasons(harness, data):
    h = harness
    base = {"memory_id": h.seed.base, "rating": 1}
    arg = data.draw(st.sampled_from(["rating", "reason"]))
    if arg == "rating":
        value = data.draw(
            st.one_of(
                st.integers().filter(lambda n: n not in (-1, 0, 1)),
                finite.filter(lambda x: x not in (-1.0, 0.0, 1.0)),
                st.sampled_from([None, "abc", [], {}, [1], float("nan"), float("inf"), MISSING]),
            )
        )
    else:
        value = data.draw(st.one_of(huge(500), with_nul, with_surrogate, not_a_string))
    note(f"{arg} = {value!r:.200}")
    h.rejected("rate_memory", call_with(base, arg, value), arg)


# --- memory_stats and memory_consolidate ----------------------------------------------------

junk_args = st.dictionaries(
    st.text(SAFE, max_size=12),
    st.one_of(
        st.none(), st.booleans(), st.integers(), finite, st.text(max_size=20), st.lists(st.integers(), max_size=3)
    ),
    max_size=4,
)


@PROPERTY
@given(args=junk_args)
def test_memory_stats_ignores_unknown_arguments_and_changes_nothing(harness, args):
    before = harness.snapshot()
    assert harness.accepted("memory_stats", args) == before[0]
    assert harness.snapshot() == before


@PROPERTY
@given(value=st.one_of(not_a_bool, st.none()))
def test_memory_consolidate_rejects_a_bad_dry_run(harness, value):
    harness.rejected("memory_consolidate", {"dry_run": value}, "dry_run")


@PROPERTY
@given(args=junk_args)
def test_a_consolidation_dry_run_changes_nothing(harness, args):
    before = harness.snapshot()
    report = harness.accepted("memory_consolidate", {**args, "dry_run": True})
    assert report["dry_run"] is True
    assert harness.snapshot() == before


# --- the brief's explicit values, each checked once ------------------------------------------


def _explicit_cases() -> list[tuple[str, str, Any]]:
    cases: list[tuple[str, str, Any]] = []
    for k in (0, -1, 51, 10**9, 2.5, None, "five", [], {}):
        cases.append(("memory_read", "top_k", k))
    for v in (
        "",
        " \n\t ",
        "a\x00b",
        "\x00",
        "a\ud800b",
        "\udc00",
        "x" * 10_001,
        "🚀" * 1_000_000,
        42,
        4.2,
        None,
        ["x"],
        {"x": 1},
        MISSING,
    ):
        cases += [("memory_write", "content", v), ("memory_read", "query", v)]
    for v in (
        {"a": 1},
        7,
        "webhooks",
        [""],
        ["a\x00"],
        ["\ud800"],
        ["y" * 65],
        [None],
        [1],
        [f"t{i}" for i in range(21)],
    ):
        cases += [("memory_write", "tags", v), ("memory_read", "tags", v)]
    for v in (float("nan"), float("inf"), float("-inf"), 1.0001, -1.5, None, "good", MISSING):
        cases.append(("memory_feedback", "outcome", v))
    for v in ({"id": "x"}, [], "nothex!", ["abc"], [12345678]):
        cases.append(("memory_feedback", "memory_ids", v))
    for v in (["0123456789abcdef"], ["not-an-id"], {"a": 1}, 5, ["4282843ea4"]):
        cases.append(("memory_write", "supersedes", v))
    for v in ("'; DROP TABLE memories; --", "NEAR(", 'a" OR "b', "", "0123456789abcdef", "4282843e", 123, None):
        cases += [(t, "memory_id", v) for t in ("rate_memory", "get_memory_quality", "memory_delete", "memory_restore")]
    cases += [("rate_memory", "rating", v) for v in (2, -2, 0.5, None, "up")]
    cases += [("memory_consolidate", "dry_run", v) for v in (None, [1], "maybe", 2)]
    cases += [("memory_feedback", "read_id", v) for v in ("", "no such read", 5)]
    cases += [
        ("memory_feedback", "response", v) for v in ("", " \n ", "a\x00b", "\ud800", "x" * 50_001, 5, ["x"], {"a": 1})
    ]
    cases += [("memory_feedback", "outcome", v) for v in (None, MISSING)]  # and no response either
    cases += [("memory_write", "metadata", v) for v in ([], "text", {"quality_score": 1}, {"x": "y" * 17_000})]
    return cases


def _base(h: Harness, tool: str) -> dict[str, Any]:
    return {
        "memory_write": {"content": "a brand new memory"},
        "memory_read": {"query": "memory"},
        "memory_feedback": {"memory_ids": [h.seed.base], "outcome": 1.0},
        "rate_memory": {"memory_id": h.seed.base, "rating": 1},
        "get_memory_quality": {},
        "memory_delete": {},
        "memory_restore": {},
        "memory_consolidate": {},
    }[tool]


def test_every_value_named_in_the_brief_is_rejected_by_name(harness):
    before = harness.snapshot()
    for tool, arg, value in _explicit_cases():
        harness.rejected(tool, call_with(_base(harness, tool), arg, value), arg)
    assert harness.snapshot() == before


# --- ambiguous prefixes and bad supersedes, by hand -------------------------------------------


def test_the_seeded_pair_really_shares_a_ten_character_prefix(harness):
    ids = [hashlib.sha256(c.encode()).hexdigest() for c in PAIR]
    assert list(harness.seed.pair) == ids
    assert ids[0][:10] == ids[1][:10] == PAIR_PREFIX and ids[0][10] != ids[1][10]


def test_an_ambiguous_prefix_is_refused_by_every_id_argument(harness):
    h = harness
    a, b = h.seed.pair
    for prefix in AMBIGUOUS:
        calls = [
            ("get_memory_quality", {"memory_id": prefix}, "memory_id"),
            ("memory_delete", {"memory_id": prefix}, "memory_id"),
            ("memory_restore", {"memory_id": prefix}, "memory_id"),
            ("rate_memory", {"memory_id": prefix, "rating": -1}, "memory_id"),
            ("memory_feedback", {"memory_ids": [prefix], "outcome": 1.0}, "memory_ids"),
            ("memory_feedback", {"memory_ids": [a, prefix], "outcome": -1.0}, "memory_ids"),
            (
                "memory_feedback",
                {"memory_ids": [h.seed.base, prefix], "outcome": 1.0, "read_id": h.seed.read_id},
                "memory_ids",
            ),
            ("memory_feedback", {"memory_ids": [h.seed.base, prefix], "response": "I used the probe."}, "memory_ids"),
            ("memory_write", {"content": "a correction of the probe", "supersedes": [prefix]}, "supersedes"),
            (
                "memory_write",
                {"content": "a correction of the probe", "supersedes": [h.seed.base, prefix]},
                "supersedes",
            ),
        ]
        for tool, args, arg in calls:
            why = h.rejected(tool, args, arg)
            assert "matches 2 memories" in why and a in why and b in why, why
    # One more character settles it, in any case and with surrounding spaces.
    assert h.accepted("get_memory_quality", {"memory_id": a[:11]})["id"] == a
    assert h.accepted("rate_memory", {"memory_id": f" {b[:11].upper()} ", "rating": 0})["id"] == b
    assert h.accepted("memory_delete", {"memory_id": a[:11]})["id"] == a
    assert h.accepted("get_memory_quality", {"memory_id": PAIR_PREFIX[:8]})["id"] == b  # no longer ambiguous


def test_bad_supersedes_write_nothing_and_archive_nothing(harness):
    h = harness
    content = "Builds run on GitHub Actions now."
    new_id = content_id(content)
    cases = [
        ["0123456789abcdef"],  # unknown
        [h.seed.base, "fedcba9876543210"],  # one known, one unknown: the whole write is refused
        ["not-an-id"],
        ["abc"],
        ["a" * 65],
        ["\ud800" * 8],
        ["'; DROP TABLE memories; --"],
        [f"{i:08x}" for i in range(21)],
        [PAIR_PREFIX],
    ]
    for supersedes in cases:
        why = h.rejected("memory_write", {"content": content, "supersedes": supersedes}, "supersedes")
        if supersedes[-1] in ("0123456789abcdef", "fedcba9876543210"):
            assert supersedes[-1] in why
    # A memory cannot supersede itself (the same content, so the same id).
    why = h.rejected(
        "memory_write", {"content": "a memory that must stay unchanged", "supersedes": [h.seed.base]}, "supersedes"
    )
    assert "itself" in why
    h.rejected("get_memory_quality", {"memory_id": new_id}, "memory_id")  # never written
    assert h.accepted("get_memory_quality", {"memory_id": h.seed.base})["archived"] is False
    # The same content written again may not push its tags over the limit.
    h.rejected(
        "memory_write", {"content": "a memory that must stay unchanged", "tags": [f"t{i}" for i in range(20)]}, "tags"
    )


# --- bugs not fixed yet --------------------------------------------------------------------


@pytest.mark.parametrize("read_id", ["\ud800", "abc\udfff"])
def test_read_id_with_a_lone_surrogate_is_rejected_by_name(harness, read_id):
    harness.rejected(
        "memory_feedback", {"memory_ids": [harness.seed.base], "outcome": 1.0, "read_id": read_id}, "read_id"
    )


@pytest.mark.parametrize(
    "tool, arg, value",
    [
        ("memory_read", "top_k", True),
        ("memory_read", "min_relevance", True),
        ("memory_read", "min_relevance", False),
        ("rate_memory", "rating", True),
        ("rate_memory", "rating", False),
        ("memory_feedback", "outcome", True),
        ("memory_feedback", "outcome", False),
    ],
)
def test_booleans_are_not_numbers(harness, tool, arg, value):
    harness.rejected(tool, call_with(_base(harness, tool), arg, value), arg)


@pytest.mark.xfail(
    strict=True,
    reason="BUG: the SDK parses string arguments annotated `str | None` as JSON first "
    "(FuncMetadata.pre_parse_json): 'null' becomes None, '[1]' a list",
)
@pytest.mark.parametrize(
    "case",
    ["write domain null", "write domain [1]", "read domain null", "reason null", "read_id null", "response null"],
)
def test_json_looking_strings_stay_strings(harness, case):
    h = harness
    if case == "write domain null":
        mid = h.accepted("memory_write", {"content": "kept in the domain called null", "domain": "null"})["id"]
        assert h.row(mid)["domain"] == "null"
    elif case == "write domain [1]":
        mid = h.accepted("memory_write", {"content": "kept in the domain called [1]", "domain": "[1]"})["id"]
        assert h.row(mid)["domain"] == "[1]"
    elif case == "read domain null":
        assert h.accepted("memory_read", {"query": "memory unchanged", "domain": "null"})["items"] == []
    elif case == "reason null":
        h.accepted("rate_memory", {"memory_id": h.seed.base, "rating": 1, "reason": "null"})
        q = h.accepted("get_memory_quality", {"memory_id": h.seed.base})
        assert q["rating_history"][-1]["reason"] == "null"
    elif case == "read_id null":
        h.rejected("memory_feedback", {"memory_ids": [h.seed.base], "outcome": 1.0, "read_id": "null"}, "read_id")
    else:  # the answer was the word null: its alignment must be measured, not dropped
        fb = h.accepted("memory_feedback", {"memory_ids": [h.seed.base], "outcome": 1.0, "response": "null"})
        assert fb.get("alignment") is not None


def _seconds(h: Harness, tool: str, args: dict[str, Any]) -> float:
    start = time.perf_counter()
    h.call(tool, args)
    return time.perf_counter() - start


@pytest.mark.parametrize("tool", ["memory_write", "memory_feedback"])
def test_a_huge_list_is_handled_in_linear_time(harness, tool):
    h = harness

    def args(n: int) -> dict[str, Any]:
        items = [f"t{i}" for i in range(n)]
        if tool == "memory_write":
            return {"content": "a list too long", "tags": items}
        return {"memory_ids": [h.seed.base], "outcome": 0.0, "query_concepts": items}

    small = min(_seconds(h, tool, args(4_000)) for _ in range(2))
    large = _seconds(h, tool, args(16_000))
    assert large < 0.25 or large < 6 * small, (
        f"4x the input took {large / small:.1f}x the time ({small:.2f}s -> {large:.2f}s)"
    )
    h.stats()


# --- malformed JSON-RPC on the real server's stdin ---------------------------------------------


class StdioServer:
    """`python -m mnemo_mcp` as a subprocess; raw lines in, JSON-RPC lines out."""

    def __init__(self, tmp_path: Path):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
        env.update(
            MNEMO_DB=str(tmp_path / "stdio.db"),
            MNEMO_EMBED_MODEL="mnemo-hash-64",
            MNEMO_AUTO_CONSOLIDATE="false",
            MNEMO_AUTO_BACKUP="false",  # its stats are compared before and after each call
            HOME=str(tmp_path),
            XDG_DATA_HOME=str(tmp_path / "data"),
            XDG_CACHE_HOME=str(tmp_path / "cache"),
            PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
        )
        self.stderr = open(tmp_path / "stderr.log", "wb")  # noqa: SIM115 (open while the server runs)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mnemo_mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            cwd=tmp_path,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.messages: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, raw: bytes) -> None:
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def request(self, id_: int, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(json.dumps(msg).encode())

    def tool(self, id_: int, name: str, arguments: dict[str, Any] | str) -> None:
        if isinstance(arguments, str):  # raw JSON text, e.g. with NaN in it
            self.send(
                b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}'
                % (id_, name.encode(), arguments.encode())
            )
        else:
            self.request(id_, "tools/call", {"name": name, "arguments": arguments})

    def _take(self, timeout: float) -> dict[str, Any] | None:
        line = self.lines.get(timeout=timeout)
        if line is None:
            return None
        self.raw.append(line)
        msg = json.loads(line)  # stdout holds nothing but JSON-RPC
        assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", line[:200]
        self.messages.append(msg)
        return msg

    def response(self, id_: int, timeout: float = 15.0) -> dict[str, Any]:
        """The response to request `id_` (reading stdout until it comes, at most `timeout` s)."""
        deadline = time.monotonic() + timeout
        while True:
            for msg in self.messages:
                if msg.get("id") == id_ and ("result" in msg or "error" in msg):
                    return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no response to id {id_} within {timeout}s (server alive: {self.proc.poll() is None})"
                )
            try:
                msg = self._take(left)
            except queue.Empty:
                continue
            if msg is None:
                raise AssertionError(f"stdout closed before the response to id {id_}; exit code {self.proc.wait(5)}")

    def close(self) -> int | None:
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            code = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = None
        while True:  # everything left on stdout must be JSON-RPC as well
            try:
                if self._take(5) is None:
                    break
            except queue.Empty:
                break
        self.stderr.close()
        return code

    def initialize(self, id_: int = 1) -> dict[str, Any]:
        self.request(
            id_,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bad-input-test", "version": "0"},
            },
        )
        init = self.response(id_)
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        return init


def _is_error(msg: dict[str, Any]) -> bool:
    return "error" in msg or bool(msg.get("result", {}).get("isError"))


def _error_text(msg: dict[str, Any]) -> str:
    if "error" in msg:
        return json.dumps(msg["error"])
    return " ".join(c.get("text", "") for c in msg["result"].get("content", []))


@pytest.mark.slow
def test_malformed_json_rpc_on_stdin_leaves_the_server_serving(tmp_path):
    srv = StdioServer(tmp_path)
    try:
        junk = [
            b"this is not json {",
            b"\xff\xfe\x00\x01 not even utf-8",
            b"   ",
            b"[1, 2, 3]",
            b"[]",
            b'[{"jsonrpc": "2.0", "id": 900, "method": "ping"}]',
            b'"just a string"',
            b"null",
            b'{"jsonrpc": "1.0", "id": 901, "method": "ping"}',
            b'{"id": 902, "method": "ping"}',
            b'{"jsonrpc": 2.0, "id": 903, "method": "ping"}',
            b'{"jsonrpc": "2.0", "id": 904, "method": "no/such/method"}',
            b'{"jsonrpc": "2.0", "id": 905, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}',
            b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}',
            b'{"jsonrpc": "2.0", "id": 906, "method": "tools/call", "params": "not an object"}',
            b"x" * 1_000_000,  # a 1 MB line of garbage
            b'{"jsonrpc": "2.0", "id": 907, "method": "tools/call", "params": {"name": "memory_write", "arguments": {"content": "'
            + b"y" * 1_000_000
            + b'"}}}',  # a 1 MB request, before initialize
            b"[" * 100_000,  # nesting no parser should follow
            b'{"jsonrpc": "2.0", "id": 908, "method": "ping"',  # cut short
        ]
        for raw in junk:
            srv.send(raw)

        init = srv.initialize(1)
        assert "result" in init and init["result"]["serverInfo"]["name"] == "mnemo", init
        srv.tool(2, "memory_stats", {})
        stats = srv.response(2)
        assert not _is_error(stats), stats
        assert stats["result"]["structuredContent"]["total"] == 0

        # Whatever answered the junk must have been an error, never a result.
        for msg in srv.messages:
            if msg.get("id") in (901, 902, 903, 904, 905, 906, 907):
                assert _is_error(msg), msg

        # After the handshake: bad calls get error results that name the problem, raw NaN included.
        srv.tool(3, "no_such_tool", {})
        assert _is_error(srv.response(3))
        bad = {
            4: ("memory_write", '{"content": "' + "z" * 1_000_000 + '"}', "content"),
            5: ("memory_feedback", '{"memory_ids": ["abcdef0123"], "outcome": NaN}', "outcome"),
            6: ("memory_feedback", '{"memory_ids": ["abcdef0123"], "outcome": -Infinity}', "outcome"),
            7: ("memory_read", '{"query": "x", "min_relevance": Infinity}', "min_relevance"),
            8: ("memory_read", '{"query": "x", "top_k": 1e400}', "top_k"),
            9: ("memory_write", '{"content": "x", "metadata": {"a": NaN}}', "metadata"),
            10: ("rate_memory", '{"memory_id": "abcdef0123", "rating": NaN}', "rating"),
            11: ("memory_write", '{"content": "a\\u0000b"}', "content"),
            12: ("memory_read", '"not an object"', "arguments"),
        }
        for id_, (name, arguments, _) in bad.items():
            srv.tool(id_, name, arguments)
        for id_, (_, _, fragment) in bad.items():
            msg = srv.response(id_)
            assert _is_error(msg), msg
            if "result" in msg:
                assert fragment in _error_text(msg).lower(), msg

        for raw in junk[:4] + [b"x" * 1_000_000]:
            srv.send(raw)
        srv.tool(20, "memory_write", {"content": "still serving after all that"})
        assert not _is_error(srv.response(20))
        srv.tool(21, "memory_stats", {})
        final = srv.response(21)
        assert not _is_error(final) and final["result"]["structuredContent"]["total"] == 1, final
    finally:
        code = srv.close()
    assert code == 0, f"the server exited with {code} when stdin closed"
    assert srv.messages and all(m.get("jsonrpc") == "2.0" for m in srv.messages)


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="BUG (SDK stdio transport): a request whose JSON holds a lone-surrogate escape such as "
    "\\ud800 (what JavaScript's JSON.stringify emits for a lone surrogate) fails to parse and is "
    "dropped without any response, so the client waits forever",
)
def test_a_request_with_a_lone_surrogate_escape_gets_an_answer(tmp_path):
    srv = StdioServer(tmp_path)
    try:
        srv.initialize(1)
        srv.tool(2, "memory_read", '{"query": "a\\ud800b"}')
        srv.tool(3, "memory_stats", {})
        assert not _is_error(srv.response(3))  # still serving either way
        msg = srv.response(2, timeout=2.0)
        assert _is_error(msg) and "query" in _error_text(msg).lower(), msg
    finally:
        srv.close()
