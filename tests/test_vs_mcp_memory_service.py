"""The pure parts of benchmarks.vs_mcp_memory_service: reading the peer's answers and the table.

The benchmark itself (which installs mcp-memory-service in its own venv) is not run here.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.vs_mcp_memory_service import (  # noqa: E402
    _HASH_LINE,
    _STORED_HASH,
    build_table,
    format_table,
    their_hash,
)

H1 = "0b8c12a3c32fb03f31dc7e8a2ceb538e5c085c9f8e14b9f5e333f0bd18ae4f20"
H2 = "85161c797f222228f324d3b4666efa796f857630362f6b8098cb4f26f" + "0" * 7


def test_their_hash_is_the_peers_content_hash() -> None:
    # the hash mcp-memory-service 12.4.0 returned for this content in a real run
    assert their_hash("Caroline: I went to a LGBTQ support group yesterday and it was so powerful.") == H1
    assert their_hash("  CAROLINE: I went to a LGBTQ support group yesterday and it was so powerful.\n") == H1


def test_parses_search_and_store_answers() -> None:
    text = (
        "Found 2 memories (mode: semantic) for query: 'q'\n\n"
        f"1. Caroline: a line that mentions Hash: {H2} inside\n   Hash: {H1}\n   Created: 2026-01-01T00:00:00Z [untagged]\n\n"
        f"2. Melanie: hi\n   Hash: {H2}\n   Created: 2026-01-01T00:00:00Z"
    )
    assert _HASH_LINE.findall(text) == [H1, H2]
    assert _STORED_HASH.search(f"Memory stored successfully (hash: {H1})").group(1) == H1


def _side(store: float, search: dict[str, float], init: float, first: float) -> dict:
    return {
        "store": {"n": 5, "p50_ms": store},
        "search": {v: {"n": 5, "p50_ms": ms} for v, ms in search.items()},
        "initialize_ms": init,
        "first_search_ms": first,
    }


def test_table_ratios_and_goals() -> None:
    variants = ("semantic", "hybrid", "semantic qb0.3", "hybrid qb0.3")
    report = {
        "speed": [
            {
                "n": 1000,
                "mnemo-mcp": _side(10.0, {"memory_read": 20.0}, 500.0, 900.0),
                "mcp-memory-service": _side(40.0, {"semantic": 30.0, "hybrid": 50.0}, 2000.0, 2100.0),
            }
        ],
        "recall_conversations": ["conv-41"],
        "recall": {
            "mnemo-mcp:memory_read": {"overall_1-4": {"n": 3, "recall@10": 0.6}},
            **{f"mcp-memory-service:{v}": {"overall_1-4": {"n": 3, "recall@10": 0.4}} for v in variants},
        },
    }
    rows, goals = build_table(report)
    assert goals == {"faster_on_every_row": True, "better_r10_than_every_mode": True}
    by_label = {r[0]: r for r in rows}
    assert by_label["store p50 @1k (ms)"][3] == "4.00x"
    assert by_label["search p50 @1k (ms)"][3] == "1.50x / 2.50x"
    assert by_label["R@10 cat 1-4, 3 q (conv-41)"][3].startswith("0.67x")
    assert "mnemo-mcp" in format_table(rows)

    report["speed"][0]["mcp-memory-service"]["search"]["semantic"]["p50_ms"] = 15.0
    assert build_table(report)[1]["faster_on_every_row"] is False
