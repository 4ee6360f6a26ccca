"""The stored vectors kept in memory, so a read costs a matrix product instead of sqlite-vec's scan.

sqlite-vec 0.1.9 compares the query with every stored vector one by one (about 1 µs each: 79 ms
at 100k memories). This index holds the same vectors in a float32 matrix, with each memory's
`archived` flag and domain, and answers the two questions a read asks of the vector side:

- the k nearest live memories in the read's domains (what `memory_vectors ... MATCH ... k = ?`
  returns), and
- the cosine of given memories (what `vec_distance_cosine` returns).

It gives the same numbers as sqlite-vec, not approximately the same: a BLAS product picks the
candidates (its rounding differs from sqlite-vec's by < 5e-5, so everything within MARGIN of
the k-th is kept), then the candidates' distances are computed the way sqlite-vec computes them
(float32 sums of products in dimension order, the division in double, rounded to float32).
The order of a read is therefore the order the SQL path gives.

The file may change under it (other processes, other connections of this one). Triggers on
`memories` append the rowid of every inserted, deleted or re-filtered memory to
`memory_vector_log` (see `Store.bind_model`); each read, inside its snapshot, applies the entries
it has not seen. Entries it missed (the log keeps the last LOG_KEPT) mean a full reload, which
reads sqlite-vec's chunk blobs directly (0.6 s at 100k). One index serves every Store of a
process on the same file: the hook host's services and the MCP tools share it. The processes of
one machine share its arrays too: a full load is written to a snapshot beside the database that
the others map copy-on-write and bring up to date from the change log (vecshare.py).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import apsw

from . import vecshare

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

LOG_KEPT = 20_000  # change-log entries kept; an index further behind reloads in full
RELOAD_ABOVE = 2_000  # changed memories past which a full reload is cheaper than lookups
# BLAS and sqlite-vec round differently (both < 384 * 2^-24 ~ 2.3e-5 on a cosine of unit
# vectors): every candidate this close to the k-th is re-scored exactly, so none is lost.
MARGIN = 1e-4

LOG_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memory_vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, vrowid INTEGER NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS memory_vector_log_insert AFTER INSERT ON memories BEGIN "
    "INSERT INTO memory_vector_log(vrowid) VALUES (new.rowid); "
    f"DELETE FROM memory_vector_log WHERE seq <= (SELECT max(seq) FROM memory_vector_log) - {LOG_KEPT}; END",
    "CREATE TRIGGER IF NOT EXISTS memory_vector_log_delete AFTER DELETE ON memories BEGIN "
    "INSERT INTO memory_vector_log(vrowid) VALUES (old.rowid); END",
    "CREATE TRIGGER IF NOT EXISTS memory_vector_log_filters AFTER UPDATE OF archived, domain ON memories BEGIN "
    "INSERT INTO memory_vector_log(vrowid) VALUES (new.rowid); END",
)
LOG_OBJECTS = ("memory_vector_log", "memory_vector_log_insert", "memory_vector_log_delete", "memory_vector_log_filters")


def has_log(conn: apsw.Connection) -> bool:
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'memory_vector_log%'")}
    return all(n in names for n in LOG_OBJECTS)


def create_log(conn: apsw.Connection) -> None:
    """Inside a write transaction: the change log and its triggers (idempotent)."""
    for sql in LOG_SCHEMA:
        conn.execute(sql)


def note_change(conn: apsw.Connection, rowid: int) -> None:
    """Record a change to a memory's vector made without a change to its `memories` row
    (doctor's repairs), so that every index reloads it."""
    if has_log(conn):
        conn.execute("INSERT INTO memory_vector_log(vrowid) VALUES (?)", (rowid,))


def vec0_distances(matrix: np.ndarray, sq_norms: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine distances exactly as sqlite-vec 0.1.9's distance_cosine_float computes them: float32
    running sums over the dimensions in order, then 1 - dot / (sqrt(a) * sqrt(b)) in double,
    returned as float32. `sq_norms` are the rows' float32 running sums of squares."""
    import numpy as np

    # Summing a C-ordered (dimension, row) array along its first axis adds the dimensions one
    # after the other for every row at once (numpy sums pairwise only along the contiguous
    # axis): the same float32 additions as the C loop, 5x faster than np.add.accumulate.
    dot = np.add.reduce(np.ascontiguousarray(matrix.T) * query[:, None], axis=0, dtype=np.float32)
    q_sq = np.add.accumulate(query * query, dtype=np.float32)[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        d = 1.0 - dot.astype(np.float64) / (np.sqrt(np.float64(q_sq)) * np.sqrt(sq_norms.astype(np.float64)))
    return d.astype(np.float32)


class _NoRoom(Exception):
    """A new memory does not fit in the rows of a mapped snapshot: load again."""


class VectorIndex:
    """The vectors of one database file, by rowid, with each memory's filters (see module doc).
    `share` (folder, key): load from and write to the snapshots other processes map (vecshare)."""

    def __init__(self, dim: int, share: tuple[str, str] | None = None):
        import numpy as np

        self.dim = dim
        self.share = share
        self.mapped = False  # the matrix is a snapshot's pages, shared until written
        self._snapshot: dict[str, Any] | None = None  # the mapped snapshot's header
        self.snapshot_loads = 0
        self.lock = threading.RLock()
        self.seq = -1  # last change-log entry applied; -1: never loaded
        self.n = 0
        self.rowids = np.zeros(0, dtype=np.int64)  # sorted; a slot stays when its memory is deleted
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.sq_norms = np.zeros(0, dtype=np.float32)  # sqlite-vec's sum of squares, per slot
        self.inv_norm = np.zeros(0, dtype=np.float32)  # for the BLAS prefilter
        self.live = np.zeros(0, dtype=bool)  # the memory exists
        self.has_vector = np.zeros(0, dtype=bool)
        self.archived = np.zeros(0, dtype=bool)
        self.domain = np.zeros(0, dtype=np.int32)
        self.domain_codes: dict[str, int] = {}
        self._masks: dict[tuple, np.ndarray] = {}
        self.reloads = 0

    # --- keeping in step with the file ---------------------------------------------------

    def sync(self, conn: apsw.Connection) -> None:
        """Apply what changed in the file since the last sync (call inside a read transaction)."""
        lo, hi = conn.execute("SELECT min(seq), max(seq) FROM memory_vector_log").fetchone()
        if hi is None:  # nothing logged yet: the log is new, or no memory was ever written since
            hi = conn.execute(
                "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memory_vector_log'), 0)"
            ).fetchone()[0]
            if self.seq != hi:
                self._reload(conn, hi)
            return
        if hi == self.seq:
            return
        if self.seq < 0 or hi < self.seq or self.seq + 1 < lo:
            self._reload(conn, hi)
            return
        changed = _changed_since(conn, self.seq)
        if changed is None:
            self._reload(conn, hi)
            return
        try:
            self._apply(conn, changed)
        except _NoRoom:  # the snapshot's spare rows are used up: load again, with room
            self._reload(conn, hi)
            return
        self.seq = hi

    def _reload(self, conn: apsw.Connection, seq: int) -> None:
        if self.share is not None and self._from_snapshot(conn, seq):
            return
        self._build(conn, seq)
        if self.share is not None and self.n >= vecshare.SHARE_FROM:
            self._to_snapshot(seq)

    def _build(self, conn: apsw.Connection, seq: int) -> None:
        """Load every vector from the database (sqlite-vec's chunks, read directly)."""
        import numpy as np

        # Read through the (domain, archived) index, which holds the rowid too: the table itself
        # carries every memory's text.
        rows = conn.execute("SELECT rowid, archived, domain FROM memories").fetchall()
        n = len(rows)
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        order = np.argsort(rowids, kind="stable")
        self.rowids = rowids[order]
        self.archived = np.fromiter((bool(r[1]) for r in rows), dtype=bool, count=n)[order]
        self.domain_codes = {}
        self.domain = np.fromiter((self._code(r[2]) for r in rows), dtype=np.int32, count=n)[order]
        self.live = np.ones(n, dtype=bool)
        self.matrix = np.zeros((n, self.dim), dtype=np.float32)
        self.has_vector = np.zeros(n, dtype=bool)
        self.n = n
        if not self._fill(_chunk_blocks(conn, self.dim)):  # another layout than sqlite-vec 0.1.9's
            self.has_vector[:] = False
            self._fill(_selected_vectors(conn, self.dim))
        self.sq_norms = _sums_of_squares(self.matrix)
        self.inv_norm = _inverse(self.sq_norms)
        self._masks.clear()
        self.mapped, self._snapshot = False, None
        self.seq = seq
        self.reloads += 1
        log.debug("vector index: loaded %d memories (%d with vectors)", n, int(self.has_vector.sum()))

    # --- shared with the other processes (vecshare) ----------------------------------------

    def _from_snapshot(self, conn: apsw.Connection, hi: int) -> bool:
        """Map the newest snapshot taken at or before change `hi` and apply the changes since,
        when the change log still holds all of them and they are few. False: load from the file."""
        folder, key = self.share  # type: ignore[misc]
        found = vecshare.newest(folder, key, hi)
        if found is None:
            return False
        at, path = found
        if at != hi:
            lo = conn.execute("SELECT min(seq) FROM memory_vector_log").fetchone()[0]
            if lo is None or at + 1 < lo:
                return False  # entries since the snapshot were dropped from the log
        changed = _changed_since(conn, at)
        if changed is None:
            return False
        got = vecshare.read(path, mapped=self._ARRAYS)
        if got is None or got[0].get("dim") != self.dim or set(got[1]) != set(self._ARRAYS):
            return False
        self.n = int(got[0]["n"])
        self.domain_codes = {str(k): int(v) for k, v in got[0]["domains"].items()}
        self._masks.clear()
        self._adopt(*got)
        try:
            self._apply(conn, changed)
        except _NoRoom:
            return False
        self.seq = hi
        self.reloads += 1
        self.snapshot_loads += 1
        return True

    def _to_snapshot(self, seq: int) -> None:
        """Write what was just loaded as the snapshot at `seq`, then use its pages instead."""
        import numpy as np

        folder, key = self.share  # type: ignore[misc]
        rows = vecshare.capacity_for(self.n)
        arrays = {name: getattr(self, name)[: self.n] for name in self._ARRAYS}
        spare = np.full(rows - self.n, np.iinfo(np.int64).max, dtype=np.int64)  # unused slots sort last
        arrays["rowids"] = np.concatenate([arrays["rowids"], spare])
        extra = {"n": self.n, "dim": self.dim, "domains": self.domain_codes}
        path = vecshare.write(folder, key, seq, arrays, extra, rows=rows)
        got = vecshare.read(path, mapped=self._ARRAYS) if path else None
        if got is not None:
            self._adopt(*got)

    def _adopt(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Use a snapshot's arrays (all mapped copy-on-write: the row ids, norms, flags and domains
        too, 23 bytes a row, 3.5 MB of every process's own memory at 100k memories) for the first
        `self.n` rows it holds, keeping its rowids as taken in a read-only view of the file's
        (never written through): rows written through are found by them."""
        for name in self._ARRAYS:
            setattr(self, name, arrays[name])
        taken = vecshare.view(header, "rowids")
        if taken is None:  # the file went meanwhile: a copy of what this process mapped
            taken = self.rowids.copy()
        self.mapped, self._snapshot = True, header | {"rowids": taken[: self.n]}

    def _fill(self, blocks: Iterable[tuple[np.ndarray, np.ndarray] | None]) -> bool:
        """Copy (rowids, vectors) blocks into the matrix one at a time (at 100k the blobs weigh
        as much as the matrix: holding them all doubled the peak). False: a block said the
        layout is not the expected one."""
        import numpy as np

        n = self.n
        for block in blocks:
            if block is None:
                return False
            rowids, vecs = block
            if not n or not len(rowids):
                continue
            slots = np.minimum(np.searchsorted(self.rowids, rowids), n - 1)
            ok = self.rowids[slots] == rowids
            self.matrix[slots[ok]] = vecs[ok]
            self.has_vector[slots[ok]] = True
        return True

    def _apply(self, conn: apsw.Connection, changed: list[int]) -> None:
        """Re-read the memories whose log entries are new: gone, new, or with new filters."""
        if not changed:
            return
        import numpy as np

        current = {
            r: (a, d)
            for r, a, d in conn.execute(
                "SELECT rowid, archived, domain FROM memories WHERE rowid IN (SELECT value FROM json_each(?))",
                (_json_ints(changed),),
            )
        }
        touched: list[int] = []
        for rowid in changed:
            slot = self._slot(rowid)
            if rowid not in current:
                if slot is not None:
                    self.live[slot] = False
                    touched.append(slot)
                continue
            archived, domain = current[rowid]
            row = conn.execute("SELECT embedding FROM memory_vectors WHERE rowid = ?", (rowid,)).fetchone()
            if slot is None:
                slot = self._new_slot(rowid)
            vec = np.frombuffer(row[0], dtype=np.float32) if row and len(row[0]) == 4 * self.dim else None
            self.live[slot] = True
            self.archived[slot] = bool(archived)
            self.domain[slot] = self._code(domain)
            self.has_vector[slot] = vec is not None
            self.matrix[slot] = vec if vec is not None else 0.0
            self.sq_norms[slot] = np.add.accumulate(self.matrix[slot] * self.matrix[slot], dtype=np.float32)[-1]
            self.inv_norm[slot] = _inverse(self.sq_norms[slot : slot + 1])[0]
            touched.append(slot)
        self._masks.clear()
        if self.mapped and self._snapshot is not None:
            self._write_through(touched)

    def _write_through(self, slots: list[int]) -> None:
        """Rows changed since the snapshot, written into its file where the snapshot holds that
        memory (found by rowid in the snapshot's own order: this process's slots may have moved):
        zeros for a memory deleted, the new vector for one changed (see vecshare.overwrite_rows)."""
        import numpy as np

        taken = self._snapshot["rowids"]  # type: ignore[index]
        zero = bytes(4 * self.dim)
        rows: dict[int, bytes] = {}
        for slot in slots:
            at = int(np.searchsorted(taken, self.rowids[slot]))
            if at < len(taken) and taken[at] == self.rowids[slot]:
                rows[at] = self.matrix[slot].tobytes() if self.live[slot] and self.has_vector[slot] else zero
        if rows:
            vecshare.overwrite_rows(self._snapshot, "matrix", rows)  # type: ignore[arg-type]

    def _slot(self, rowid: int) -> int | None:
        import numpy as np

        i = int(np.searchsorted(self.rowids[: self.n], rowid))
        return i if i < self.n and self.rowids[i] == rowid else None

    def _new_slot(self, rowid: int) -> int:
        """A slot for a memory not seen before, keeping rowids sorted (new rowids come last:
        SQLite gives max(rowid) + 1; an earlier one only reuses a slot that is already here)."""
        import numpy as np

        if self.n == len(self.rowids):
            if self.mapped:  # growing would copy the shared matrix into this process
                raise _NoRoom
            self._grow(max(16, self.n // 2))
        at = int(np.searchsorted(self.rowids[: self.n], rowid))
        if at < self.n:  # rare: shift the tail by one
            for arr in self._arrays():
                arr[at + 1 : self.n + 1] = arr[at : self.n].copy()
        self.rowids[at] = rowid
        self.n += 1
        return at

    # Every per-slot array: grown together, counted together.
    _ARRAYS = ("rowids", "matrix", "sq_norms", "inv_norm", "live", "has_vector", "archived", "domain")

    def _arrays(self) -> list[np.ndarray]:
        return [getattr(self, name) for name in self._ARRAYS]

    def _grow(self, extra: int) -> None:
        import numpy as np

        def grown(arr: np.ndarray) -> np.ndarray:
            out = np.zeros((len(arr) + extra, *arr.shape[1:]), dtype=arr.dtype)
            out[: len(arr)] = arr
            return out

        for name in self._ARRAYS:
            setattr(self, name, grown(getattr(self, name)))
        self.rowids[self.n :] = np.iinfo(np.int64).max  # unused slots sort last

    def _code(self, domain: str) -> int:
        code = self.domain_codes.get(domain)
        if code is None:
            code = self.domain_codes[domain] = len(self.domain_codes)
        return code

    # --- answering reads -----------------------------------------------------------------

    def allowed(self, domains: list[str] | None, include_archived: bool) -> np.ndarray:
        """Which slots a read with these filters may return (live memories only)."""
        import numpy as np

        key = (None if domains is None else tuple(sorted(set(domains))), include_archived)
        mask = self._masks.get(key)
        if mask is None:
            mask = self.live[: self.n].copy()
            if not include_archived:
                mask &= ~self.archived[: self.n]
            if domains is not None:
                codes = [self.domain_codes[d] for d in set(domains) if d in self.domain_codes]
                mask &= np.isin(self.domain[: self.n], codes)
            self._masks[key] = mask
        return mask

    def knn(self, query: np.ndarray, k: int, mask: np.ndarray) -> list[tuple[int, float]]:
        """(rowid, cosine) of the k nearest allowed memories, nearest first, as sqlite-vec ranks them."""
        import numpy as np

        q = np.ascontiguousarray(query, dtype=np.float32)
        usable = mask & self.has_vector[: self.n]
        slots = np.flatnonzero(usable)
        if len(slots) > k:
            q_inv = _inverse(np.add.accumulate(q * q, dtype=np.float32)[-1:])[0]
            approx = (self.matrix[: self.n] @ q) * (self.inv_norm[: self.n] * q_inv)
            approx[~usable] = -np.inf
            kth = np.partition(approx, self.n - k)[self.n - k]
            slots = np.flatnonzero(approx >= kth - MARGIN)
        dist = vec0_distances(self.matrix[slots], self.sq_norms[slots], q)
        # Equal distances: sqlite-vec returns the later memory first (as its scan keeps them).
        order = np.lexsort((-self.rowids[slots], dist))[:k]
        return [(int(r), 1.0 - float(d)) for r, d in zip(self.rowids[slots[order]], dist[order])]

    def cosines(self, query: np.ndarray, rowids: Iterable[int]) -> dict[int, float]:
        """Cosine of the query to each given memory that has a vector, as sqlite-vec computes it."""
        import numpy as np

        ids = np.fromiter(rowids, dtype=np.int64)
        if not len(ids) or not self.n:
            return {}
        slots = np.minimum(np.searchsorted(self.rowids[: self.n], ids), self.n - 1)
        ok = (self.rowids[slots] == ids) & self.live[slots] & self.has_vector[slots]
        slots, ids = slots[ok], ids[ok]
        dist = vec0_distances(self.matrix[slots], self.sq_norms[slots], np.ascontiguousarray(query, dtype=np.float32))
        return {int(r): 1.0 - float(d) for r, d in zip(ids, dist)}

    def passing(self, rowids: list[int], mask: np.ndarray) -> list[bool]:
        """For each rowid, whether it is a memory the mask allows (the keyword side's filter)."""
        import numpy as np

        if not rowids or not self.n:
            return [False] * len(rowids)
        ids = np.asarray(rowids, dtype=np.int64)
        slots = np.minimum(np.searchsorted(self.rowids[: self.n], ids), self.n - 1)
        return ((self.rowids[slots] == ids) & mask[slots]).tolist()

    def excluded(self, mask: np.ndarray) -> int:
        """Memories the mask leaves out."""
        return int(self.live[: self.n].sum() - mask.sum())

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._arrays())


def _changed_since(conn: apsw.Connection, seq: int) -> list[int] | None:
    """The rowids the change log names after entry `seq`, sorted; None when they are so many
    that a full load is cheaper than looking each up."""
    changed = sorted({r for (r,) in conn.execute("SELECT vrowid FROM memory_vector_log WHERE seq > ?", (seq,))})
    return None if len(changed) > RELOAD_ABOVE else changed


def _sums_of_squares(matrix: np.ndarray) -> np.ndarray:
    """Each row's float32 running sum of squares in dimension order (sqlite-vec's), a column at
    a time: the same additions in the same order as np.add.accumulate along the rows, without
    its two temporaries of the matrix's size (300 MB at 100k) and 10x faster."""
    import numpy as np

    acc = np.zeros(len(matrix), dtype=np.float32)
    for j in range(matrix.shape[1]):
        col = matrix[:, j]
        acc += col * col
    return acc


def _inverse(sq: np.ndarray) -> np.ndarray:
    import numpy as np

    with np.errstate(divide="ignore"):
        inv = 1.0 / np.sqrt(sq.astype(np.float64))
    inv[~np.isfinite(inv)] = 0.0
    return inv.astype(np.float32)


def _json_ints(values: Iterable[int]) -> str:
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def _selected_vectors(conn: apsw.Connection, dim: int) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """(rowids, vectors) blocks through the virtual table (any layout; 100x slower than chunks)."""
    import numpy as np

    ids: list[int] = []
    vecs: list[bytes] = []
    for rowid, blob in conn.execute("SELECT rowid, embedding FROM memory_vectors"):
        if len(blob) == 4 * dim:
            ids.append(rowid)
            vecs.append(blob)
        if len(ids) == 4096:
            yield np.asarray(ids, dtype=np.int64), np.frombuffer(b"".join(vecs), dtype=np.float32).reshape(-1, dim)
            ids, vecs = [], []
    if ids:
        yield np.asarray(ids, dtype=np.int64), np.frombuffer(b"".join(vecs), dtype=np.float32).reshape(-1, dim)


def _chunk_blocks(conn: apsw.Connection, dim: int) -> Iterable[tuple[np.ndarray, np.ndarray] | None]:
    """(rowids, vectors) of each of sqlite-vec's chunks, read straight from its chunk tables when
    their layout is the one 0.1.9 writes; a None block means it is not (then the caller reads
    through the virtual table), also when the chunks hold another number of vectors than the
    table's rowid map."""
    import numpy as np

    try:
        version = conn.execute("SELECT value FROM memory_vectors_info WHERE key = 'CREATE_VERSION'").fetchone()
        if not version or not str(version[0]).startswith("v0.1."):
            yield None
            return
        stored = conn.execute("SELECT count(*) FROM memory_vectors_rowids").fetchone()[0]
        rows = conn.execute(
            "SELECT c.size, c.validity, c.rowids, v.vectors FROM memory_vectors_chunks c "
            "JOIN memory_vectors_vector_chunks00 v ON v.rowid = c.chunk_id"
        )
    except apsw.SQLError as err:  # a missing table: another layout
        log.debug("vector index: sqlite-vec chunks not readable directly (%s)", err)
        yield None
        return
    total = 0
    for size, validity, rowids, vectors in rows:
        if len(rowids) != 8 * size or len(vectors) != 4 * dim * size or len(validity) * 8 < size:
            yield None
            return
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(bool)
        ids = np.frombuffer(rowids, dtype=np.int64)[valid]
        total += len(ids)
        yield ids, np.frombuffer(vectors, dtype=np.float32).reshape(size, dim)[valid]
    if total != stored:
        yield None


# One index per database file and model size in this process (the file's device and inode
# tell a restored backup from the file the index was loaded from), alive while a Store uses it.
_INDEXES: weakref.WeakValueDictionary[tuple[Any, ...], VectorIndex] = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()


def shared_index(path: str, identity: tuple[int, int] | None, dim: int) -> VectorIndex:
    key = (os.path.realpath(path), identity, dim)
    with _REGISTRY_LOCK:
        index = _INDEXES.get(key)
        if index is None:
            single_threaded_blas()
            snapshot_key = vecshare.key_of(identity, dim)
            share = (vecshare.folder_of(path), snapshot_key) if snapshot_key and path != ":memory:" else None
            index = _INDEXES[key] = VectorIndex(dim, share)
        return index


_BLAS_SET = False
_OPENBLAS_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def single_threaded_blas() -> None:
    """Keep numpy's OpenBLAS to one thread in this process. Its worker threads sleep between
    calls, and waking them right after the embedding model has run made a 10k x 384 product take
    15 ms instead of 0.4 ms on 2 CPUs; a read's products are too small to gain from a second
    thread. (What threadpoolctl does; Linux wheels only, elsewhere nothing changes.)"""
    global _BLAS_SET
    if _BLAS_SET:
        return
    _BLAS_SET = True
    import numpy  # noqa: F401  (loads OpenBLAS)

    try:
        with open("/proc/self/maps") as maps:
            libs = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line})
    except OSError:
        return
    import ctypes

    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _OPENBLAS_SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(1)
                return
