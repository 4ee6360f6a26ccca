"""What the SQLite and the PostgreSQL stores answer with the same code: statements without
parameters (both drivers run them alike) and the folding of rows into what the service takes.
A mixin of both stores; placeholders differ (`?` and `%s`), so statements with parameters stay
in each store's own files."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

SESSION_COLUMNS = ("seq", "session_id", "kind", "memory_ids", "read_id", "detail", "created_at")
CONSOLIDATION_COLUMNS = ("as_of", "started_at", "finished_at", "trigger")
FEEDBACK_DAY_KEYS = ("positive", "negative", "neutral", "thumbs_up", "thumbs_down")


def session_event(row: Iterable[Any]) -> dict[str, Any]:
    e = dict(zip(SESSION_COLUMNS, row))
    e["memory_ids"] = json.loads(e["memory_ids"])
    e["detail"] = json.loads(e["detail"])
    return e


def useful_by_concept(rows: Iterable[tuple[str, str, float]]) -> dict[str, float]:
    """Per concept, the strongest of its links' (a, b, strength)."""
    out: dict[str, float] = {}
    for a, b, strength in rows:
        for c in (a, b):
            if strength > out.get(c, 0.0):
                out[c] = strength
    return out


def links_from(rows: Iterable[tuple[str, str, float, float, int]], concepts: list[str]) -> list[dict[str, Any]]:
    """(a, b, weight, valence, count) rows as links seen from the concepts asked about."""
    inside = set(concepts)
    out = []
    for a, b, weight, valence, count in rows:
        concept, other = (a, b) if a in inside else (b, a)
        out.append({"concept": concept, "other": other, "weight": weight, "valence": valence, "count": count})
    return out


def feedback_day(days: dict[str, dict[str, int]], day: str) -> dict[str, int]:
    """The counts of one UTC day in `feedback_by_day`'s answer, made empty when first seen."""
    return days.setdefault(day, dict.fromkeys(FEEDBACK_DAY_KEYS, 0))


class SharedQueries:
    conn: Any
    db: Any
    get_meta: Any
    tokenize: Any
    term_document_counts: Any

    def bound_model(self) -> tuple[str, int] | None:
        with self.db.read():
            name, dim = self.get_meta("embedding_model"), self.get_meta("embedding_dim")
        return (name, int(dim)) if name and dim else None

    def associations(self) -> list[dict[str, Any]]:
        cols = ("a", "b", "weight", "valence", "count", "updated_at")
        return [
            dict(zip(cols, r)) for r in self.conn.execute(f"SELECT {', '.join(cols)} FROM associations ORDER BY a, b")
        ]

    def cues(self) -> list[dict[str, Any]]:
        cols = ("memory_id", "concept", "value", "count", "updated_at")
        return [
            dict(zip(cols, r))
            for r in self.conn.execute(f"SELECT {', '.join(cols)} FROM cues ORDER BY memory_id, concept")
        ]

    def last_consolidation(self) -> dict[str, Any] | None:
        row = self.conn.execute(
            f"SELECT {', '.join(CONSOLIDATION_COLUMNS)} FROM consolidation_runs ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        return dict(zip(CONSOLIDATION_COLUMNS, row)) if row else None

    def word_document_counts(self, words: list[str]) -> tuple[int, dict[str, list[tuple[str, int]]]]:
        """(documents in the index, each word's index tokens with the documents holding each):
        what IDF and "the rarest words" are computed from, in one call for all the words."""
        tokens = {w: self.tokenize(w) for w in words}
        total, counts = self.term_document_counts(sorted({t for ts in tokens.values() for t in ts}))
        return total, {w: [(t, counts[t]) for t in ts] for w, ts in tokens.items()}
