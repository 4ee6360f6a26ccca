"""The one interface the service uses to reach storage: `MemoryStore`, and the transactions it
runs in. `storage.store.Store` (SQLite, sqlite-vec, FTS5) implements it; a second backend (say
PostgreSQL with pgvector and tsvector, for a team) implements the same methods and nothing else.

Rows are plain dicts with the columns of `storage.rows.MEMORY_COLUMNS` (JSON columns decoded),
ids are the content hashes the service computes, times are ISO-8601 strings, and every rule
(ranking, learning, decay, the digest's order) is computed in `core/` or passed in as a number:
a backend stores, filters, sorts and counts. The architecture test checks that the service uses
nothing else and that `Store` has all of it.

What a backend must do in its own way:
- `tokenize` / `term_document_counts` / `fts`: its full-text engine's tokens, document
  frequencies and BM25-like score (positive, higher is better), for the keyword side and IDF.
- `knn` / `cosines` / `vector_of`: cosine similarity (1 - cosine distance) over float vectors of
  the bound model's size; `prepare_vector_search` may warm a cache.
- the health checks: what "the vectors and the text index agree with the memories" means for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np


# What a feedback event carries: the keys `add_feedback_events` takes, and (with their `seq`, the
# order they were recorded in) what `feedback_events` returns.
FEEDBACK_EVENT_FIELDS = (
    "memory_id",
    "read_id",
    "outcome",
    "rate",
    "valence_before",
    "valence_after",
    "source",
    "created_at",
    "by_user",  # who gave it (settings.user); None for events from before it was recorded
)


class Transactions(Protocol):
    """Every service call runs inside one of these: a consistent snapshot to read, or one atomic
    write that other processes wait for (no lost updates), committed or rolled back whole."""

    damaged: str | None  # why the store was found damaged, once it was; else None

    def read(self) -> AbstractContextManager[Any]: ...

    def write(self) -> AbstractContextManager[Any]: ...

    def mark_damaged(self, message: str) -> None: ...

    def replaced(self) -> bool:
        """Another file has taken this one's place since it was found damaged (a restored backup)."""
        ...


class MemoryStore(Protocol):
    db: Transactions

    # --- the store and its embedding model ------------------------------------------------

    def close(self) -> None: ...

    def bind_model(self, name: str, dim: int) -> None:
        """Record the embedding model (first use) and make room for its vectors."""
        ...

    def bound_model(self) -> tuple[str, int] | None: ...

    def check_model(self, name: str, dim: int | None = None) -> None:
        """Refuse to mix vectors of two models (dim None: check the name only)."""
        ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    # --- memories -------------------------------------------------------------------------

    def get(self, memory_id: str) -> dict[str, Any] | None: ...

    def existing_ids(self, ids: list[str]) -> set[str]:
        """Which of these full ids are stored (one query)."""
        ...

    def resolve(self, id_or_prefix: str) -> str:
        """A full id, or a unique prefix of at least 8 hex characters -> the full id."""
        ...

    def insert(self, row: dict[str, Any], vector: np.ndarray) -> int:
        """Store a memory and its vector -> its row number (rowid: insertion order)."""
        ...

    def update(self, memory_id: str, **fields: Any) -> None: ...

    def delete(self, memory_id: str) -> bool:
        """The memory, its vector and everything learned about it."""
        ...

    def by_rowids(self, rowids: Iterable[int]) -> dict[int, dict[str, Any]]: ...

    def all_memories(self) -> Iterable[dict[str, Any]]: ...

    def memories_after(self, rowid: int, limit: int) -> list[dict[str, Any]]:
        """A page of memories in rowid order (consolidation walks the store page by page)."""
        ...

    def memory_count(self) -> int: ...

    def max_rowid(self) -> int: ...

    def superseded_ids(self, memory_id: str) -> list[str]:
        """Ids of the memories that `memory_id` replaced (supersede) or absorbed (merge)."""
        ...

    def unjudged(self, version: int, limit: int) -> list[dict[str, Any]]:
        """Memories whose trust judgement is older than `version` (or that have none), oldest first."""
        ...

    def near_duplicate_candidates(
        self, words: list[str], limit: int, *, domain: str, exclude_rowid: int | None = None
    ) -> list[int]:
        """Live memories of the same domain sharing any of the words (the caller checks cosine)."""
        ...

    def top_memories(
        self, domains: list[str] | None, limit: int, *, valence_weight: float, min_valence: float | None = None
    ) -> list[dict[str, Any]]:
        """Live, not quarantined memories in core.lifecycle.digest_order: what a session starts
        with (`min_valence`: none below it)."""
        ...

    def record_usage(self, usage: list[dict[str, Any]]) -> None:
        """A read's bookkeeping for the memories it returned: usage counts, quality, metadata."""
        ...

    # --- search ---------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """Tokens exactly as the full-text index stores them."""
        ...

    def term_document_counts(self, tokens: list[str]) -> tuple[int, dict[str, int]]:
        """(documents in the index, documents holding each token), for IDF."""
        ...

    def word_document_counts(self, words: list[str]) -> tuple[int, dict[str, list[tuple[str, int]]]]:
        """(documents in the index, each word's index tokens with the documents holding each):
        IDF and "the rarest words" in one call, whatever the backend's tokenizer."""
        ...

    def fts(
        self, words: list[str], k: int, *, domains: list[str] | None, include_archived: bool, tags: list[str] | None
    ) -> list[tuple[int, float]]:
        """(rowid, keyword score) of the best k memories holding any of the words (plain words:
        the backend builds its own query from them), best first."""
        ...

    def knn(
        self, vector: np.ndarray, k: int, *, domains: list[str] | None, include_archived: bool, tags: list[str] | None
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the k nearest memories passing the filters, nearest first."""
        ...

    def cosines(self, vector: np.ndarray, rowids: Iterable[int], *, few: bool = False) -> dict[int, float]:
        """Cosine to the given memories (`few`: a handful, as writes ask)."""
        ...

    def prepare_vector_search(self) -> None:
        """A read that searches by vector is about to start."""
        ...

    def scoring_rows(self, rowids: Iterable[int]) -> dict[int, tuple[str, float, float, int, str, int]]:
        """What ranking needs of each candidate: rowid -> (id, valence, quality, ratings +
        feedback events, created_at, quarantined 0/1)."""
        ...

    def vector_of(self, rowid: int) -> np.ndarray | None: ...

    def has_vector_table(self) -> bool:
        """Vectors can be stored (a model is bound)."""
        ...

    def add_vector(self, rowid: int, vector: np.ndarray) -> None: ...

    def drop_vector(self, rowid: int) -> None: ...

    # --- learned state: feedback, concept links, query->memory links, reads ---------------

    # Learning writes in batches: one statement (one round trip) per table, whatever the number
    # of memories and links a feedback moves.

    def record_outcomes(self, updates: list[dict[str, Any]]) -> None:
        """Learning's changes to memories: id, valence, feedback_count, metadata, updated_at."""
        ...

    def add_feedback_events(self, events: list[dict[str, Any]]) -> None:
        """Record feedback events (the keys of FEEDBACK_EVENT_FIELDS), in order."""
        ...

    def feedback_events(self, memory_id: str | None = None, limit: int | None = None) -> list[dict[str, Any]]: ...

    def positive_outcomes(self, memory_ids: list[str]) -> dict[str, int]:
        """Feedback events with a positive outcome, per memory."""
        ...

    def associations_between(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[float, float, int]]:
        """{(a, b): (weight, valence, count)} of the concept links that exist among these pairs,
        keyed with a < b."""
        ...

    def put_associations(self, rows: list[tuple[str, str, float, float, int, str]]) -> None:
        """Set (a, b, weight, valence, count, updated_at) concept links, inserting or replacing."""
        ...

    def associations(self) -> list[dict[str, Any]]: ...

    def strongest_links(self, concepts: list[str], limit: int, min_weight: float) -> list[tuple[str, str, float]]:
        """(query concept, linked concept, weight x (1 + valence) / 2) for the strongest links of
        `concepts` to concepts outside them."""
        ...

    def useful_concepts(self, min_weight: float) -> dict[str, float]:
        """Per concept, its strongest link that feedback found useful (weight x positive valence)."""
        ...

    def links_unused_since_decay(self, now: str) -> list[tuple[str, str, float, float, float]]:
        """(a, b, weight, valence, days since the later of its last use and its last decay)."""
        ...

    def apply_link_decay(
        self, now: str, weights: list[tuple[str, str, float]], dropped: list[tuple[str, str]]
    ) -> None: ...

    def cues_between(self, memory_ids: list[str], concepts: list[str]) -> dict[tuple[str, str], tuple[float, int]]:
        """{(memory id, concept): (value, count)} of the query->memory links among these."""
        ...

    def put_cues(self, rows: list[tuple[str, str, float, int, str]]) -> None:
        """Set (memory id, concept, value, count, updated_at) links, inserting or replacing."""
        ...

    def cue_values(self, memory_ids: list[str], concepts: list[str]) -> dict[str, dict[str, tuple[float, str]]]:
        """{memory id: {concept: (link value, when it was last taught)}} for the given memories and
        query concepts."""
        ...

    def cues(self) -> list[dict[str, Any]]: ...

    def move_cues(self, from_id: str, to_id: str) -> None:
        """Hand a merged memory's taught links to its survivor where the survivor has none."""
        ...

    def record_read(self, read: dict[str, Any], keep: int, since: str | None = None) -> None:
        """Log a read (for feedback by read_id), keeping the newest `keep` and none from before `since`."""
        ...

    def get_read(self, read_id: str) -> dict[str, Any] | None: ...

    # --- upkeep and statistics ------------------------------------------------------------

    def record_consolidation(
        self, as_of: str, started_at: str, finished_at: str, trigger: str, report: dict
    ) -> None: ...

    def last_consolidation(self) -> dict[str, Any] | None: ...

    def stats(self) -> dict[str, Any]: ...

    # --- Claude Code sessions and captured cases ------------------------------------------

    def next_session_seq(self) -> int:
        """The sequence number the next session event gets (asked inside the write transaction
        that adds it)."""
        ...

    def add_session_events(self, events: list[dict[str, Any]], keep: int) -> None:
        """Append session events with the sequence numbers they were given, keeping the newest `keep`."""
        ...

    def session_events(self, session_id: str, after_seq: int = 0) -> list[dict[str, Any]]: ...

    def case_by_key(self, key: str) -> dict[str, Any] | None:
        """The case memory (live or archived) captured under `key`."""
        ...

    def case_signatures(self, domains: list[str] | None, limit: int) -> list[tuple[str, str]]:
        """(id, error signature) of the newest live cases that answer a failing check."""
        ...

    # --- health (doctor) ------------------------------------------------------------------

    def integrity_problems(self) -> list[str]:
        """What the backend's own consistency check reports (nothing: the file is whole)."""
        ...

    def memories_without_vector(self) -> list[int]: ...

    def vectors_without_memory(self) -> list[int]: ...

    def vector_filters_out_of_step(self) -> list[int]:
        """Memories whose vector carries another archived flag or domain than the memory."""
        ...

    def sync_vector_filters(self, rowid: int) -> None: ...

    def text_index_ok(self) -> bool: ...

    def rebuild_text_index(self) -> None: ...

    def orphan_counts(self) -> dict[str, int]:
        """Learned state (feedback, links) whose memory is gone, by table."""
        ...

    def delete_orphans(self) -> None: ...

    def secrets_at_rest(self) -> dict[str, Any]:
        """What still looks like a secret in memories, the read log and the session log ->
        {count, kinds, where} (places, never the secret)."""
        ...

    def scrub_secrets(self) -> dict[str, int]:
        """Mask the secrets outside memories written on purpose -> counts changed by table."""
        ...

    def secrets_migration_report(self) -> dict[str, Any] | None:
        """What the migration that scrubbed earlier versions' secrets changed here."""
        ...

    # --- the dashboard (read-only) --------------------------------------------------------

    def memories_page(
        self,
        *,
        domains: list[str] | None = None,
        archived: str = "live",
        tags: list[str] | None = None,
        memory_type: str | None = None,
        tier: str | None = None,
        source: str | None = None,
        quarantined: bool = False,
        sort: str = "newest",
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[dict[str, Any]], int]:
        """One page of memories matching the filters, and how many match in all."""
        ...

    def rows_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]: ...

    def previews(self, ids: Iterable[str]) -> dict[str, tuple[str, bool]]:
        """{id: (content, archived)} for the memories that still exist."""
        ...

    def facets(self, *, tag_limit: int = 300) -> dict[str, list[tuple[str, int]]]:
        """The values each filter can take, with how many memories (archived too) carry them."""
        ...

    def feedback_page(self, memory_id: str, limit: int = 500) -> tuple[list[dict[str, Any]], int]:
        """The latest `limit` feedback events of a memory, oldest first, and how many it has."""
        ...

    def cues_of(self, memory_id: str, limit: int = 40) -> list[dict[str, Any]]: ...

    def associations_of(self, concepts: list[str], limit: int = 15) -> list[dict[str, Any]]: ...

    def quality_histogram(self, *, archived: bool = False) -> list[int]: ...

    def valence_histogram(self, *, archived: bool = False) -> list[int]: ...

    def feedback_by_day(self, since: str) -> dict[str, dict[str, int]]: ...

    def counts_by_tier_and_type(self) -> list[tuple[str, str, int, int]]: ...
