"""The harness and strategies of the bad-input tests (test_bad_input.py, test_bad_input_ids.py):
one in-memory server per test driven synchronously, the values each argument must refuse, and
what a refusal must say."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from mcp import Client

from mnemo_mcp.config import Settings
from mnemo_mcp.core.text import normalize_content
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


def open_harness(db: Path) -> Iterator[Harness]:
    """The `harness` fixture of the test modules: a server on `db`, its store open."""
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
