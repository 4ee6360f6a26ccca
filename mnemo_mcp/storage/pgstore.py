"""The PostgreSQL store: `storage.interface.MemoryStore` on a server with pgvector.

Here: transactions, the model binding, the memories' own reads and writes with their vectors.
Its mixins: pgvectors.py (KNN, exact or through pgvector's HNSW index), pglearn.py (outcomes,
feedback events, links, cues, the read log, the lifecycle's pages), pgtext.py (full text ranked
by BM25 as FTS5 ranks it), pgmore.py (sessions, cases, links' upkeep, stats, doctor's checks),
pgbrowse.py (the dashboard's SQL). The
same contract and service tests pass on it as on the SQLite store (tests/conftest.py BOTH_BACKENDS).

Transactions are SQLite's: `read()` one consistent snapshot (REPEATABLE READ, read only),
`write()` one atomic change with one writer at a time for the whole database (an advisory lock
taken at BEGIN, as SQLite's BEGIN IMMEDIATE takes the file's lock), so a read-modify-write never
loses another process's update and identity values come in commit order (the watermarks the
service keeps stay right). Nested writes are savepoints.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..core.hosts import without_password
from ..errors import StoreUnavailable
from . import pgschema, pgvectors, postgres
from .pgbrowse import PgBrowse
from .pglearn import PgLearning
from .pgmore import PgMore
from .pgtext import PgText
from .pgvectors import PgVectors
from .rows import MEMORY_COLUMNS, decode_row, encode, id_key, one_id, refuse_other_model, vector_literal
from .shared import SharedQueries

if TYPE_CHECKING:
    import numpy as np

WRITE_LOCK = 0x6D6E656D6F777274  # "mnemowrt": one writer at a time
_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in MEMORY_COLUMNS) + " FROM memories m"


def _no_nul(value: Any) -> Any:
    """PostgreSQL text cannot hold NUL: refuse it here, naming the fix, rather than fail deep in the driver."""
    if isinstance(value, str) and "\x00" in value:
        raise StoreUnavailable("text with a NUL character cannot be stored in PostgreSQL; remove the \\x00 from it")
    return value


class PgDatabase:
    """`Transactions` on one psycopg connection (autocommit outside transactions)."""

    damaged: str | None = None  # a server has its own recovery: never set here

    def __init__(self, url: str):
        self.path = without_password(url)  # what messages name
        self.conn = postgres.connect(url)
        self._lock = threading.RLock()
        self._depth = 0
        self._writing = False

    def close(self) -> None:
        self.conn.close()

    def mark_damaged(self, message: str) -> None:  # a server has its own recovery
        pass

    def replaced(self) -> bool:
        return False

    @contextmanager
    def read(self) -> Iterator[Any]:
        with self._lock:
            if self._depth:
                yield self.conn
                return
            with self.conn.transaction():
                self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                self._depth = 1
                try:
                    yield self.conn
                finally:
                    self._depth = 0

    @contextmanager
    def write(self) -> Iterator[Any]:
        with self._lock:
            if self._depth and not self._writing:
                raise RuntimeError("write() inside read(): open the write transaction first")
            with self.conn.transaction():  # nested: a savepoint
                if not self._depth:
                    self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                self._depth += 1
                self._writing = True
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                    self._writing = self._depth > 0


class PgStore(SharedQueries, PgLearning, PgText, PgVectors, PgMore, PgBrowse):
    def __init__(self, url: str):
        self.db = PgDatabase(url)
        try:
            found = postgres.check(self.db.conn, url)  # on the store's own connection: one login, not two
            self.pgvector = pgvectors.version(found["vector"])
            pgschema.migrate(self.db.conn)
            self.ensure_vector_index()  # the owner's process makes it; a member's searches exactly meanwhile
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    @property
    def conn(self) -> Any:
        return self.db.conn

    # --- model binding -----------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def check_model(self, name: str, dim: int | None = None) -> None:
        refuse_other_model(self.db.path, self.bound_model(), name, dim)

    def bind_model(self, name: str, dim: int) -> None:
        self.check_model(name, dim)
        with self.db.write():
            if self.get_meta("embedding_model") is None:
                self.set_meta("embedding_model", name)
                self.set_meta("embedding_dim", str(dim))
        self.ensure_vector_index()  # on an empty table, at once

    def has_vector_table(self) -> bool:
        """Whether vectors can be stored yet: a model is bound (the table itself always exists)."""
        return self.get_meta("embedding_dim") is not None

    # --- memories ------------------------------------------------------------------------

    def get(self, memory_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(_SELECT + " WHERE m.id = %s", (memory_id,)).fetchone()
        return decode_row(row) if row else None

    def existing_ids(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        return {r[0] for r in self.conn.execute("SELECT id FROM memories WHERE id = ANY(%s)", (list(ids),))}

    def resolve(self, id_or_prefix: str) -> str:
        key = id_key(id_or_prefix)
        hits = [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM memories WHERE id >= %s AND id < %s ORDER BY id LIMIT 51", (key, key + "g")
            )
        ]
        return one_id(key, hits)

    def insert(self, row: dict[str, Any], vector: np.ndarray) -> int:
        cols = [c for c in MEMORY_COLUMNS if c != "rowid" and c in row]
        values = [_no_nul(encode(c, row[c])) for c in cols]
        if "archived" in cols:
            values[cols.index("archived")] = int(row["archived"])
        marks = ", ".join(["%s"] * len(cols))
        rowid = self.conn.execute(
            f"INSERT INTO memories({', '.join(cols)}) VALUES ({marks}) RETURNING rowid", values
        ).fetchone()[0]
        self.conn.execute(
            "INSERT INTO memory_vectors(rowid, embedding, archived, domain) VALUES (%s, %s::vector, %s, %s)",
            (rowid, vector_literal(vector), int(row.get("archived", False)), row.get("domain", "")),
        )
        self._index_text(rowid, row["content"], encode("tags", row.get("tags", [])), new=True)
        return rowid

    def update(self, memory_id: str, **fields: Any) -> None:
        if not fields:
            return
        unknown = set(fields) - set(MEMORY_COLUMNS) - {"rowid"}
        if unknown or "rowid" in fields or "id" in fields:
            raise ValueError(f"not updatable memory columns: {sorted(unknown | ({'rowid', 'id'} & set(fields)))}")
        values = [_no_nul(int(v) if c == "archived" else encode(c, v)) for c, v in fields.items()]
        sets = ", ".join(f"{c} = %s" for c in fields)
        changed = self.conn.execute(
            f"UPDATE memories SET {sets} WHERE id = %s RETURNING rowid, content, tags", (*values, memory_id)
        ).fetchone()
        if changed and ("content" in fields or "tags" in fields):
            self._index_text(changed[0], changed[1], changed[2], new=False)
        if "archived" in fields or "domain" in fields:
            self.conn.execute(
                "UPDATE memory_vectors v SET archived = m.archived, domain = m.domain FROM memories m "
                "WHERE m.id = %s AND v.rowid = m.rowid",
                (memory_id,),
            )
            self._sync_text_filters(memory_id)

    def delete(self, memory_id: str) -> bool:
        gone = self.conn.execute(
            "DELETE FROM memories WHERE id = %s RETURNING rowid, text_length", (memory_id,)
        ).fetchone()
        if not gone:
            return False
        self._add_totals(-1, -gone[1])  # its postings went with it (ON DELETE CASCADE)
        self.conn.execute("DELETE FROM cues WHERE memory_id = %s", (memory_id,))
        self.conn.execute("DELETE FROM feedback_events WHERE memory_id = %s", (memory_id,))
        return True

    def by_rowids(self, rowids: Iterable[int]) -> dict[int, dict[str, Any]]:
        ids = list(rowids)
        if not ids:
            return {}
        return {r[0]: decode_row(r) for r in self.conn.execute(_SELECT + " WHERE m.rowid = ANY(%s)", (ids,))}

    def rows_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = list(ids)
        if not wanted:
            return {}
        return {r[1]: decode_row(r) for r in self.conn.execute(_SELECT + " WHERE m.id = ANY(%s)", (wanted,))}

    def all_memories(self) -> Iterable[dict[str, Any]]:
        for r in self.conn.execute(_SELECT + " ORDER BY m.rowid"):
            yield decode_row(r)

    def memory_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def max_rowid(self) -> int:
        return self.conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
