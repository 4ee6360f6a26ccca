"""Full text outside SQLite (storage/fulltext.py): the same tokens as FTS5's `porter unicode61
remove_diacritics 2`, and on PostgreSQL the same BM25 ranking as the SQLite store's."""

from __future__ import annotations

import json
import time
from pathlib import Path

import apsw
import numpy as np
import pytest

from mnemo_mcp.storage import fulltext
from mnemo_mcp.storage.store import Store

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"


def _fts5():
    conn = apsw.Connection(":memory:")
    tok = conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
    plain = conn.fts5_tokenizer("unicode61", ["remove_diacritics", "2"])

    def tokens(text: str, t=tok) -> list[str]:
        return [x[2] for x in t(text.encode("utf-8", "replace"), apsw.FTS5_TOKENIZE_DOCUMENT, None)]

    return tokens, lambda text: tokens(text, plain)


def _texts() -> list[str]:
    out = []
    for path in sorted(DATA.rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            out.extend(v for v in json.loads(line).values() if isinstance(v, str) and len(v) > 2)
    return out


def test_the_character_tables_are_sqlites_own_for_every_sampled_code_point():
    _, unicode61 = _fts5()
    differ = []
    for cp in range(0x20, 0x110000, 7):
        if 0xD800 <= cp < 0xE000:
            continue
        ch = chr(cp)
        ref = unicode61(f"a{ch}a")
        ours = fulltext._char(ch)
        expected = ref[0][1:-1] if len(ref) == 1 else None
        if ours != expected:
            differ.append(hex(cp))
    assert not differ, differ[:20]


def test_tokens_match_fts5s_on_the_projects_texts_in_many_languages():
    porter, _ = _fts5()
    texts = _texts()
    assert len(texts) > 2000
    total = same = 0
    for text in texts:
        ref, ours = porter(text), fulltext.tokenize(text)
        total += len(ref)
        same += sum(1 for a, b in zip(ref, ours) if a == b) if len(ref) == len(ours) else 0
    # Snowball's Porter and SQLite's differ on a few words ('possibly': possibli / possibl).
    assert same / total > 0.999, (same, total)


def test_a_phrase_is_looked_up_by_its_adjacent_pairs():
    assert fulltext.phrase_terms("node-fetch") == ["node fetch"]
    assert fulltext.phrase_terms("retries") == ["retri"]
    terms, length = fulltext.postings("use node-fetch; node fetch", '["http"]')
    assert terms["node fetch"] == 2.0 and terms["http"] == 0.5 and length == 6


DOCS = [
    "Retry the webhook delivery with exponential backoff",
    "The webhook secret is rotated every month; node-fetch needs the header",
    "Use pytest -k webhook to run only the webhook tests",
    "Celery workers retry failed tasks three times",
    "node fetch is not node-fetch: the package name matters",
    "Postgres connection pool exhausted: raise max_connections",
    "Résumé parsing fails on naïve dates",
    "Deploy with docker compose up -d after the migration",
    "Pin node-fetch-retry to 2.x: node fetch retry breaks the webhook",
]
QUERIES = [
    ["webhook"],
    ["retry", "webhook"],
    ["node-fetch"],
    ["resume", "naive"],
    ["max_connections", "pool"],
    ["celery", "retries", "tasks"],
    ["nothing", "matches"],
    ["node-fetch-retry"],  # a phrase of two pairs
]


def test_postgresql_ranks_keywords_exactly_as_sqlites_bm25(pg, tmp_path):
    from mnemo_mcp.storage.pgstore import PgStore

    name = f"bm25_{int(time.time() * 1000) % 100000}"
    stores = [Store(tmp_path / "a.db"), PgStore(pg.fresh_database(name))]
    try:
        for s in stores:
            s.bind_model("m", 4)
            with s.db.write():
                for i, text in enumerate(DOCS):
                    row = {
                        "id": f"{i:064x}",
                        "content": text,
                        "tags": ["ops"] if i % 2 else [],
                        "created_at": "2026-11-01T00:00:00+00:00",
                        "updated_at": "2026-11-01T00:00:00+00:00",
                        "domain": "p",
                    }
                    s.insert(row, np.ones(4, dtype=np.float32))
        _same_ranking(stores, {})
        for s in stores:  # the filters follow a memory archived, and one moved to another domain
            s.update(f"{0:064x}", archived=True)
            s.update(f"{2:064x}", domain="q")
        for filters in ({}, {"domains": ["p"]}, {"tags": ["ops"]}, {"include_archived": True}):
            _same_ranking(stores, filters)
    finally:
        for s in stores:
            s.close()


def _same_ranking(stores, filters: dict) -> None:
    args = {"domains": None, "include_archived": False, "tags": None, **filters}
    for words in QUERIES:
        got = []
        for s in stores:
            with s.db.read():
                got.append(s.fts(words, 5, **args))
        lite, pgres = got
        assert [r for r, _ in lite] == [r for r, _ in pgres], (words, filters)
        assert [sc for _, sc in lite] == pytest.approx([sc for _, sc in pgres], rel=1e-9), (words, filters)
