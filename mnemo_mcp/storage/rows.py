"""What every SQL module of the SQLite store shares: the memories table's columns, how a row is
decoded and a value encoded (JSON columns), vector packing, and the filters reads and listings
apply (domains, tags, archived)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import AmbiguousId, ModelMismatch, NotFound
from .interface import FEEDBACK_EVENT_FIELDS

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


# --- what both backends share beyond the columns ------------------------------------------------

MIN_PREFIX = 8
FEEDBACK_COLUMNS = ("seq", *FEEDBACK_EVENT_FIELDS)
READ_COLUMNS = ("id", "query", "query_concepts", "domain", "results", "created_at")


def refuse_other_model(where: str, bound: tuple[str, int] | None, name: str, dim: int | None) -> None:
    """Refuse to mix vectors of two models in one store (dim None: check the name only)."""
    if bound is None:
        return
    bound_name, bound_dim = bound
    if bound_name != name or (dim is not None and bound_dim != dim):
        shown = f"{name}" + (f" ({dim}-d)" if dim is not None else "")
        raise ModelMismatch(
            f"the database {where} holds vectors made by {bound_name} ({bound_dim}-d), "
            f"but the configured embedding model is {shown}. Fix: set MNEMO_EMBED_MODEL={bound_name}, "
            "or point MNEMO_DB at another file for the new model, or move the memories over with "
            "`mnemo-mcp export` and `mnemo-mcp import` into a new database"
        )


def id_key(id_or_prefix: str) -> str:
    """A memory reference as looked up: lowercased hex, a full id or a prefix of MIN_PREFIX+."""
    key = id_or_prefix.strip().lower()
    if not MIN_PREFIX <= len(key) <= 64 or any(ch not in "0123456789abcdef" for ch in key):
        raise NotFound(
            f"{id_or_prefix[:80]!r} is not a memory id (64 hex characters, or a unique prefix of {MIN_PREFIX}+)"
        )
    return key


def one_id(key: str, hits: list[str]) -> str:
    """The id `key` names among the ids starting with it (`hits`, sorted), or why none."""
    if len(key) == 64:
        if key in hits:
            return key
        raise NotFound(f"no memory has id {key}; find ids with memory_read")
    if not hits:
        raise NotFound(f"no memory id starts with {key!r}; find ids with memory_read")
    if len(hits) > 1:
        raise AmbiguousId(key, hits)
    return hits[0]


def feedback_events_sql(mark: str, memory_id: str | None, limit: int | None) -> tuple[str, list[Any]]:
    """The feedback log's query, newest first when `limit`ed (`mark`: the driver's placeholder)."""
    sql = f"SELECT {', '.join(FEEDBACK_COLUMNS)} FROM feedback_events"
    params: list[Any] = []
    if memory_id is not None:
        sql += f" WHERE memory_id = {mark}"
        params.append(memory_id)
    sql += " ORDER BY seq DESC" if limit else " ORDER BY seq"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return sql, params


def decode_read(row: tuple | None) -> dict[str, Any] | None:
    """A reads row (READ_COLUMNS) with its JSON decoded."""
    if not row:
        return None
    read = dict(zip(READ_COLUMNS, row))
    read["query_concepts"] = json.loads(read["query_concepts"])
    read["results"] = json.loads(read["results"])
    return read


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form: the floats as written by numpy (float32, so they round-trip)."""
    import numpy as np

    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"
