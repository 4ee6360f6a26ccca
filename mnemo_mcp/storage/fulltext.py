"""Full text outside SQLite: the tokens FTS5's `porter unicode61 remove_diacritics 2` makes, and
the postings a BM25 score is computed from, so that a store on PostgreSQL ranks keywords as the
SQLite store does (same tokens, same formula, same column weights) instead of by `ts_rank_cd`,
whose order shares few of BM25's top results.

A document is the memory's content (weight 1.0) and its tags' JSON text (weight 0.5), as in
memories_fts. Its postings are each token's weighted count and, for phrases (a query word FTS5
splits into several tokens: `snake_case`, `node-fetch`, `don't`), each pair of adjacent tokens
within a column; a phrase's count in a document is its rarest pair's. Exact for two-token phrases
(nearly all of them); for longer ones a document that holds every pair, not in one run, counts too.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from functools import lru_cache

K1, B = 1.2, 0.75  # FTS5's bm25() constants
COLUMN_WEIGHTS = (1.0, 0.5)  # content, tags: as search.py passes to bm25()
PAIR = " "  # joins a pair of adjacent tokens into one term (no token holds a space)
_PORTER_MIN, _PORTER_MAX = 3, 64  # FTS5 stems tokens of 3..64 bytes only


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


@lru_cache(maxsize=1)
def _tables() -> tuple[list[int], list[int], dict[int, str]]:
    """(range starts, range ends, folds), parsed once from unicode61.py."""
    from .unicode61 import FOLDS, TOKEN_RANGES

    starts, ends = [], []
    for pair in TOKEN_RANGES.split():
        a, b = pair.split("-")
        starts.append(int(a, 16))
        ends.append(int(b, 16))
    folds = {}
    for pair in FOLDS.split():
        a, b = pair.split(":")
        folds[int(a, 16)] = chr(int(b, 16)) if int(b, 16) else ""
    return starts, ends, folds


@lru_cache(maxsize=8192)
def _char(ch: str) -> str | None:
    """What unicode61 makes of one character: None for a separator, else its folded form."""
    starts, ends, folds = _tables()
    cp = ord(ch)
    i = bisect_right(starts, cp) - 1
    if i < 0 or cp > ends[i]:
        return None
    return folds.get(cp, ch.lower())


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    size = len(token.encode("utf-8"))
    if size < _PORTER_MIN or size > _PORTER_MAX:
        return token
    return _stemmer().stemWord(token)


def tokenize(text: str) -> list[str]:
    """The tokens of `text`, in order, as FTS5's porter over unicode61 makes them."""
    out: list[str] = []
    run: list[str] = []
    for ch in text:
        folded = _char(ch)
        if folded is not None:
            run.append(folded)
        elif run:
            out.append("".join(run))
            run = []
    if run:
        out.append("".join(run))
    return [_stem(t) for t in out if t]


def postings(content: str, tags_json: str) -> tuple[dict[str, float], int]:
    """({term: weighted count}, the document's length in tokens): single tokens and adjacent
    pairs, each column's count times its weight."""
    terms: Counter[str] = Counter()
    length = 0
    for text, weight in zip((content, tags_json), COLUMN_WEIGHTS):
        tokens = tokenize(text)
        length += len(tokens)
        for t in tokens:
            terms[t] += weight
        for a, b in zip(tokens, tokens[1:]):
            terms[a + PAIR + b] += weight
    return dict(terms), length


def phrase_terms(word: str) -> list[str]:
    """The terms a query word is looked up by: its token, or its tokens' adjacent pairs."""
    tokens = tokenize(word)
    if len(tokens) <= 1:
        return tokens
    return [a + PAIR + b for a, b in zip(tokens, tokens[1:])]


def idf(documents: int, hits: int) -> float:
    """FTS5's: log((N - n + 0.5) / (n + 0.5)), never below 1e-6."""
    value = math.log((documents - hits + 0.5) / (hits + 0.5)) if documents else 0.0
    return value if value > 0.0 else 1e-6
