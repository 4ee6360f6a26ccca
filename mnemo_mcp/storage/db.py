"""Opening the SQLite file: permissions, extensions, pragmas, and transactions that retry on busy."""

from __future__ import annotations

import importlib.util
import logging
import os
import random
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import apsw

from ..errors import MnemoError

log = logging.getLogger(__name__)


def _vec_extension() -> str:
    """The sqlite-vec loadable library, found without importing the `sqlite_vec` package (its
    __init__ imports numpy: 60 ms that a hook process would pay for nothing)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.origin:
        raise MnemoError("the sqlite-vec package is missing; reinstall mnemo-mcp (pip install mnemo-mcp)")
    return os.path.join(os.path.dirname(spec.origin), "vec0")  # as sqlite_vec.loadable_path()


def _create_private_file(path: Path) -> None:
    """Create the database file owner-only before SQLite touches it (its -wal/-shm copy the mode)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def connect(path: Path | str, busy_timeout_ms: int) -> apsw.Connection:
    memory = str(path) == ":memory:"
    if not memory:
        path = Path(path)
        if path.exists() and path.is_dir():
            raise MnemoError(f"MNEMO_DB points at a directory ({path}); give it a file path such as {path / 'memory.db'}")
        try:
            _create_private_file(path)
        except OSError as err:
            raise MnemoError(f"cannot create the database at {path}: {err.strerror}; set MNEMO_DB to a writable path") from err
    try:
        conn = apsw.Connection(str(path))
    except apsw.Error as err:
        raise MnemoError(f"cannot open the database at {path}: {err}; set MNEMO_DB to a writable SQLite file") from err
    conn.enable_load_extension(True)
    conn.load_extension(_vec_extension())
    conn.enable_load_extension(False)
    conn.set_busy_timeout(busy_timeout_ms)
    if not memory:
        _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchall(), busy_timeout_ms)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _retry_busy(fn, busy_timeout_ms: int):
    """Run fn, retrying on SQLITE_BUSY with jittered backoff until the busy timeout is spent.

    The busy handler already waits inside SQLite; this covers the cases it does not (BEGIN
    IMMEDIATE racing a WAL recovery, journal mode switches).
    """
    deadline = time.monotonic() + max(busy_timeout_ms, 1000) / 1000.0
    delay = 0.005
    while True:
        try:
            return fn()
        except apsw.BusyError:
            if time.monotonic() > deadline:
                raise MnemoError(
                    "the database stayed locked by another process for too long; retry, or raise MNEMO_BUSY_TIMEOUT_MS"
                ) from None
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.2)


class Database:
    """One connection, used by one thread at a time, with read and write transactions."""

    def __init__(self, path: Path | str, busy_timeout_ms: int = 10_000):
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.conn = connect(path, busy_timeout_ms)
        self._lock = threading.RLock()
        self._depth = 0
        self._writing = False

    @contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """An IMMEDIATE transaction: the write lock is taken up front, so a read-modify-write
        cannot interleave with another process's and lose its update."""
        with self._lock:
            if self._depth and not self._writing:
                # A deferred snapshot cannot be upgraded safely (another process may have written).
                raise RuntimeError("write() inside read(): open the write transaction first")
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            _retry_busy(lambda: self.conn.execute("BEGIN IMMEDIATE"), self.busy_timeout_ms)
            self._depth = 1
            self._writing = True
            try:
                yield self.conn
                _retry_busy(lambda: self.conn.execute("COMMIT"), self.busy_timeout_ms)
            except BaseException:
                # Also when COMMIT itself failed: an open transaction would keep the file locked.
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
                self._writing = False

    @contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """A deferred transaction: one consistent snapshot for several SELECTs."""
        with self._lock:
            if self._depth:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            self._depth = 1
            try:
                yield self.conn
            finally:
                self._depth = 0
                self.conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self.conn.close()
