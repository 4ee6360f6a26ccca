"""Copying what still reads out of a damaged database into a new one.

The SQLite linked here (apsw's) has no recovery extension (no `sqlite_dbpage`, no `.recover`),
so this walks each table through SQL and steps over what SQLite cannot read: rows are fetched
in key order, and where a seek fails the walk jumps ahead (doubling the step, then halving back)
to the first key that reads again. Only the rows on unreadable pages are lost. Every memory that
comes out is checked against its id (the SHA-256 of its content), so a row that reads but was
garbled is left behind rather than stored as truth.

Always work on a private copy of the damaged file: even a read-only connection creates -shm
and -wal files beside a WAL database, and the original must stay exactly as it was."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from ..core.text import content_id
from .db import _vec_extension, table_names
from .interface import FEEDBACK_EVENT_FIELDS
from .rows import MEMORY_COLUMNS
from .store import Store

log = logging.getLogger(__name__)

BATCH = 256
BACKFILL = 1024  # keys looked up one by one before each jump over an unreadable stretch
# mnemo's keys are SQLite's own rowids, which start at 1: starting the walk at 0 lets the jump
# over an unreadable first page reach them in a few doublings.
MIN_KEY, MAX_KEY = 0, 2**63 - 1
FEEDBACK_COLUMNS = ("seq", *FEEDBACK_EVENT_FIELDS)
CUE_COLUMNS = ("memory_id", "concept", "value", "count", "updated_at")
ASSOCIATION_COLUMNS = ("a", "b", "weight", "valence", "count", "updated_at", "decayed_at")
META_KEYS = ("embedding_model", "embedding_dim")


@dataclass
class Salvaged:
    memory_columns: list[str] = field(default_factory=list)
    memories: list[tuple] = field(default_factory=list)
    vectors: dict[int, bytes] = field(default_factory=dict)
    feedback_columns: list[str] = field(default_factory=list)
    feedback_events: list[tuple] = field(default_factory=list)
    cue_columns: list[str] = field(default_factory=list)
    cues: dict[tuple, tuple] = field(default_factory=dict)
    association_columns: list[str] = field(default_factory=list)
    associations: dict[tuple, tuple] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    listed: int | None = None
    skipped: int = 0
    unreadable: int = 0
    notes: list[str] = field(default_factory=list)


def open_damaged(path: Path) -> apsw.Connection:
    """A read-only connection that tolerates what it can: `writable_schema` lets SQLite open a
    file shorter than its header says (a truncated copy) instead of refusing it outright."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    conn.execute("PRAGMA writable_schema=ON")
    try:
        conn.enable_load_extension(True)
        conn.load_extension(_vec_extension())
        conn.enable_load_extension(False)
    except apsw.Error as err:  # vectors can be made again from the text
        log.warning("sqlite-vec not loaded for the salvage: %s", err)
    return conn


def quick_check(conn: apsw.Connection, limit: int = 20) -> list[str]:
    rows = [r[0] for r in conn.execute(f"PRAGMA quick_check({int(limit)})")]
    if rows == ["ok"]:
        return []
    lines = [line for r in rows for line in str(r).splitlines() if line.strip() and not line.startswith("***")]
    return lines[:limit]


def count_memories(conn: apsw.Connection) -> int | None:
    try:
        return conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    except apsw.Error:
        return None


def _columns(conn: apsw.Connection, table: str, wanted: tuple[str, ...]) -> list[str]:
    """The wanted columns this file's table has (older schemas lack the newer ones)."""
    present = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    return [c for c in wanted if c in present]


def _readable_after(conn: apsw.Connection, table: str, key: str, pos: int) -> bool:
    try:
        conn.execute(f"SELECT {key} FROM {table} WHERE {key} > ? ORDER BY {key} LIMIT 1", (pos,)).fetchall()
        return True
    except apsw.Error:
        return False


def _next_readable(conn: apsw.Connection, table: str, key: str, pos: int) -> int | None:
    """The smallest key past `pos` from which the table reads again (None: nothing does)."""
    step = 1
    while not _readable_after(conn, table, key, pos + step):
        step *= 2
        if pos + step > MAX_KEY:
            return None
    lo, hi = pos + step // 2, pos + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _readable_after(conn, table, key, mid):
            hi = mid
        else:
            lo = mid
    return hi


def walk(conn: apsw.Connection, table: str, key: str, columns: list[str]) -> tuple[list[tuple], int]:
    """Every row of a table with an integer key that SQLite can read, in key order, and how
    many unreadable stretches were stepped over. Rows come out as (key, *columns)."""
    rows: list[tuple] = []
    regions = 0
    pos = MIN_KEY
    select = f"SELECT {key}, {', '.join(columns)} FROM {table} WHERE {key}"
    while True:
        got = 0
        try:
            for row in conn.execute(f"{select} > ? ORDER BY {key} LIMIT {BATCH}", (pos,)):
                rows.append(row)
                pos = row[0]
                got += 1
        except apsw.Error:
            regions += 1
            nxt = _next_readable(conn, table, key, pos)
            # A range seek can fail on a key that a direct lookup still reaches (the seek
            # passes through the bad page next to it): look up the last keys before the jump.
            for k in range(
                max(pos + 1, (nxt if nxt is not None else pos + BACKFILL) - BACKFILL + 1),
                (nxt if nxt is not None else pos + BACKFILL) + 1,
            ):
                try:
                    rows.extend(conn.execute(f"{select} = ?", (k,)).fetchall())
                except apsw.Error:
                    continue
            if nxt is None:
                return rows, regions
            pos = nxt
            continue
        if got < BATCH:
            return rows, regions


def _scan_or_seek(
    conn: apsw.Connection, table: str, columns: list[str], key_len: int, seeks: list[tuple[str, Any]]
) -> tuple[dict, bool]:
    """A table without integer keys: one full scan, and if that breaks off, one lookup per
    `(column, value)` in `seeks` so that only the rows on bad pages are lost. -> (rows by key, complete)."""
    out: dict[tuple, tuple] = {}
    sql = f"SELECT {', '.join(columns)} FROM {table}"
    try:
        for row in conn.execute(sql):
            out[row[:key_len]] = row
        return out, True
    except apsw.Error:
        pass
    for column, value in seeks:
        try:
            for row in conn.execute(sql + f" WHERE {column} = ?", (value,)):
                out[row[:key_len]] = row
        except apsw.Error:
            continue
    return out, False


def _memory_ok(row: dict[str, Any]) -> bool:
    """A memory row is kept only if its content still hashes to its id and its fields parse."""
    try:
        if not isinstance(row["id"], str) or not isinstance(row["content"], str):
            return False
        if content_id(row["content"]) != row["id"]:
            return False
        for col, kind in (("tags", list), ("metadata", dict), ("concepts", list)):
            if col in row and not isinstance(json.loads(row[col]), kind):
                return False
        return all(isinstance(row.get(c, 0.0), (int, float)) for c in ("valence", "quality"))
    except (ValueError, TypeError, UnicodeError):
        return False


def read_damaged(conn: apsw.Connection) -> Salvaged:
    """Everything worth keeping that reads: memories (checked), their vectors, feedback events,
    taught links, associations, and which model made the vectors. Reads logs and session
    events are left behind: they only matter for minutes."""
    found = Salvaged(listed=count_memories(conn))
    try:
        tables = set(table_names(conn))
    except apsw.Error as err:
        found.notes.append(f"the list of tables cannot be read ({err}): nothing can be copied")
        return found
    if "memories" not in tables:
        found.notes.append("the file has no readable memories table")
        return found
    found.memory_columns = _columns(conn, "memories", MEMORY_COLUMNS[1:])
    rows, regions = walk(conn, "memories", "rowid", found.memory_columns)
    found.unreadable += regions
    for values in rows:
        row = dict(zip(("rowid", *found.memory_columns), values))
        if _memory_ok(row):
            found.memories.append(values)
        else:
            found.skipped += 1
    ids = {r[1] for r in found.memories}
    if "meta" in tables:
        try:
            found.meta = {k: v for k, v in conn.execute("SELECT key, value FROM meta") if k in META_KEYS}
        except apsw.Error:
            found.notes.append("the model the vectors were made with cannot be read; the configured one is used")
    _read_vectors(conn, found, tables)
    if "feedback_events" in tables:
        found.feedback_columns = _columns(conn, "feedback_events", FEEDBACK_COLUMNS[1:])
        events, regions = walk(conn, "feedback_events", "seq", found.feedback_columns)
        found.unreadable += regions
        mid = found.feedback_columns.index("memory_id") + 1
        found.feedback_events = [e for e in events if e[mid] in ids]
    if "cues" in tables:
        found.cue_columns = _columns(conn, "cues", CUE_COLUMNS)
        cues, complete = _scan_or_seek(conn, "cues", found.cue_columns, 2, [("memory_id", i) for i in sorted(ids)])
        found.cues = {k: v for k, v in cues.items() if k[0] in ids}
        found.unreadable += 0 if complete else 1
    if "associations" in tables:
        found.association_columns = _columns(conn, "associations", ASSOCIATION_COLUMNS)
        at = found.memory_columns.index("concepts") + 1 if "concepts" in found.memory_columns else None
        concepts = sorted({c for r in found.memories for c in (json.loads(r[at]) if at else [])})
        seeks = [(side, c) for c in concepts for side in ("a", "b")]
        found.associations, complete = _scan_or_seek(conn, "associations", found.association_columns, 2, seeks)
        found.unreadable += 0 if complete else 1
    return found


def _read_vectors(conn: apsw.Connection, found: Salvaged, tables: set[str]) -> None:
    dim = found.meta.get("embedding_dim", "")
    if "memory_vectors" not in tables or not dim.isdigit():
        return
    rowids = [r[0] for r in found.memories]
    try:
        vectors = dict(conn.execute("SELECT rowid, embedding FROM memory_vectors"))
    except apsw.Error:
        vectors = {}
        for rowid in rowids:  # one lookup each: a bad chunk costs only its own vectors
            try:
                row = conn.execute("SELECT embedding FROM memory_vectors WHERE rowid = ?", (rowid,)).fetchone()
            except apsw.Error:
                continue
            if row:
                vectors[rowid] = row[0]
    size = 4 * int(dim)  # float32
    found.vectors = {r: vectors[r] for r in rowids if isinstance(vectors.get(r), bytes) and len(vectors[r]) == size}


def write_salvaged(path: Path, found: Salvaged, busy_timeout_ms: int) -> int:
    """A normal mnemo database at `path` (migrated to the current schema) holding `found`.
    Vectors go in where they were recovered; `doctor --repair` makes the others. -> vectors stored."""
    store = Store(path, busy_timeout_ms)
    try:
        model, dim = found.meta.get("embedding_model"), found.meta.get("embedding_dim")
        if model and dim and dim.isdigit():
            store.bind_model(model, int(dim))
        cols = found.memory_columns
        stored = 0
        with store.db.write() as conn:
            conn.executemany(
                f"INSERT INTO memories(rowid, {', '.join(cols)}) VALUES ({', '.join('?' * (len(cols) + 1))})",
                found.memories,
            )
            if store.has_vector_table():
                at = {c: i + 1 for i, c in enumerate(cols)}
                for row in found.memories:
                    vector = found.vectors.get(row[0])
                    if vector is not None:
                        archived = int(row[at["archived"]]) if "archived" in at else 0
                        domain = row[at["domain"]] if "domain" in at else ""
                        conn.execute(
                            "INSERT INTO memory_vectors(rowid, embedding, archived, domain) VALUES (?, ?, ?, ?)",
                            (row[0], vector, archived, domain),
                        )
                        stored += 1
            if found.feedback_events:
                fcols = ["seq", *found.feedback_columns]
                conn.executemany(
                    f"INSERT INTO feedback_events({', '.join(fcols)}) VALUES ({', '.join('?' * len(fcols))})",
                    found.feedback_events,
                )
            for table, columns, rows in (
                ("cues", found.cue_columns, found.cues.values()),
                ("associations", found.association_columns, found.associations.values()),
            ):
                if columns:
                    conn.executemany(
                        f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                        list(rows),
                    )
        return stored
    finally:
        store.close()


@contextmanager
def working_copy(db: Path) -> Iterator[Path]:
    """A private copy of the damaged file (and its -wal, which may hold the newest changes),
    in a temporary folder beside it; removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=".mnemo-salvage-", dir=db.parent) as tmp:
        copy = Path(tmp) / db.name
        shutil.copyfile(db, copy)
        wal = db.with_name(db.name + "-wal")
        if wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        yield copy


def inspect_file(db: Path) -> tuple[list[str], int | None]:
    """(the first problems quick_check lists, the memories the file still counts or None)."""
    with working_copy(db) as copy:
        try:
            conn = open_damaged(copy)
        except apsw.Error as err:
            return [str(err)], None
        try:
            try:
                problems = quick_check(conn)
            except apsw.Error as err:
                problems = [str(err)]
            return problems, count_memories(conn)
        finally:
            conn.close()


def salvage_file(db: Path) -> Salvaged:
    with working_copy(db) as copy:
        try:
            conn = open_damaged(copy)
        except apsw.Error as err:
            return Salvaged(notes=[f"SQLite cannot open the file at all ({err}): nothing could be copied"])
        try:
            return read_damaged(conn)
        finally:
            conn.close()
