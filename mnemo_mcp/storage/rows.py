"""What every SQL module of the SQLite store shares: the memories table's columns, how a row is
decoded and a value encoded (JSON columns), vector packing, and the filters reads and listings
apply (domains, tags, archived)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where vectors are handled: hook processes never need numpy
    import numpy as np

MEMORY_COLUMNS = (
    "rowid",
    "id",
    "content",
    "memory_type",
    "domain",
    "tags",
    "metadata",
    "concepts",
    "valence",
    "quality",
    "access_count",
    "retrieval_count",
    "reciprocal_rank_sum",
    "feedback_count",
    "archived",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "tier",
    "source",
    "superseded_by",
    "archived_at",
    "archive_reason",
    "provenance",
    "quarantine",
)
JSON_COLUMNS = ("tags", "metadata", "concepts", "provenance")
NULLABLE_JSON = ("quarantine",)
SELECT_MEMORIES = "SELECT " + ", ".join(f"m.{c}" for c in MEMORY_COLUMNS) + " FROM memories m"


def decode_row(values: tuple) -> dict[str, Any]:
    """A memories row (columns in MEMORY_COLUMNS order) as a dict with its JSON decoded."""
    row = dict(zip(MEMORY_COLUMNS, values))
    for c in JSON_COLUMNS:
        row[c] = json.loads(row[c])
    for c in NULLABLE_JSON:
        row[c] = json.loads(row[c]) if row[c] else None
    row["archived"] = bool(row["archived"])
    return row


def encode(column: str, value: Any) -> Any:
    if column in JSON_COLUMNS:
        return json.dumps(value)
    if column in NULLABLE_JSON:
        return None if value is None else json.dumps(value)
    return value


def pack_vector(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


def json_list(values: Iterable[Any]) -> str:
    return json.dumps(list(values))


# The read and listing filters on `memories m`.
HAS_A_TAG = "EXISTS (SELECT 1 FROM json_each(m.tags) t WHERE t.value IN (SELECT value FROM json_each(:tags)))"


def in_list(values: Iterable[str], prefix: str = "d") -> tuple[str, dict[str, str]]:
    """`(:d0, :d1, ...)` and its parameters: vec0 takes IN over literal values only, so every
    domain filter is written this way (an empty list matches nothing)."""
    params = {f"{prefix}{i}": v for i, v in enumerate(values)}
    return "(" + ", ".join(f":{k}" for k in params) + ")", params
