"""Opening the SQLite file: permissions, extensions, pragmas, and transactions that retry on busy."""

from __future__ import annotations

import errno
import importlib.util
import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from ..errors import DiskFull, ForeignDatabase, MnemoError, StoreDamaged
from . import faults

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
            raise MnemoError(
                f"MNEMO_DB points at a directory ({path}); give it a file path such as {path / 'memory.db'}"
            )
        try:
            _create_private_file(path)
        except OSError as err:
            if err.errno == errno.ENOSPC:
                raise DiskFull(faults.disk_full_message(path)) from err
            raise MnemoError(
                f"cannot create the database at {path}: {err.strerror}; set MNEMO_DB to a writable path"
            ) from err
    try:
        conn = apsw.Connection(str(path))
    except apsw.Error as err:
        raise faults.translate(err, path) or MnemoError(
            f"cannot open the database at {path}: {err}; set MNEMO_DB to a writable SQLite file"
        ) from err
    try:
        conn.enable_load_extension(True)
        conn.load_extension(_vec_extension())
        conn.enable_load_extension(False)
        conn.set_busy_timeout(busy_timeout_ms)
        if not memory:
            # Before anything that could change the file: the WAL switch rewrites its header.
            _refuse_foreign(conn, path, busy_timeout_ms)
            _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchall(), busy_timeout_ms)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        # Freed pages are zeroed: text that was masked or deleted leaves no copy in the file.
        conn.execute("PRAGMA secure_delete=ON")
    except BaseException as err:
        conn.close()  # a connection left open would hold a lock on a file we refuse to use
        translated = faults.translate(err, path)
        if translated is not None and translated is not err:
            raise translated from err
        raise
    return conn


def table_names(conn: apsw.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def _refuse_foreign(conn: apsw.Connection, path: Path, busy_timeout_ms: int) -> None:
    """A SQLite file with tables but no `schema_migrations` was made by something else: refuse
    it by name rather than add our tables to someone's database."""
    names = _retry_busy(lambda: table_names(conn), busy_timeout_ms)
    if names and "schema_migrations" not in names:
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        raise ForeignDatabase(
            f"{path} is a SQLite database, but not a mnemo-mcp one (it has the tables {shown} and no "
            "schema_migrations); mnemo-mcp left it untouched. Point MNEMO_DB (or --db) at another file, "
            f"e.g. {path.with_name('memory.db') if path.name != 'memory.db' else path.with_name('mnemo-memory.db')}"
        )


def file_identity(path: Path | str) -> tuple[int, int] | None:
    """(device, inode) of the file now at `path`: tells a replaced file from the one we opened."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


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
    """One connection, used by one thread at a time, with read and write transactions.

    SQLite failures inside a transaction come out as MnemoErrors (see `faults`). Once SQLite has
    found the file damaged, the connection is closed and every later transaction is refused with
    the same message: writing on into a damaged file can spread the damage, and closing releases
    the file so that `restore-backup` can replace it."""

    def __init__(self, path: Path | str, busy_timeout_ms: int = 10_000):
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.conn = connect(path, busy_timeout_ms)
        self.identity = None if str(path) == ":memory:" else file_identity(path)
        self.damaged: str | None = None
        self._lock = threading.RLock()
        self._depth = 0
        self._writing = False
        self.transactions = 0  # outermost transactions begun: tells one snapshot from the next

    def _usable(self) -> None:
        if self.damaged is not None:
            raise StoreDamaged(self.damaged)

    def _fault(self, err: BaseException) -> BaseException:
        """The error to raise for `err`; marks the store damaged when SQLite said so."""
        translated = faults.translate(err, self.path)
        if translated is None:
            return err
        if isinstance(translated, StoreDamaged) and self.damaged is None:
            self.damaged = str(translated)
            log.info("%s", translated)  # the caller shows the message; this is for the log
            self.conn.close()
        return translated

    def mark_damaged(self, message: str) -> None:
        """Found damaged by other means (a backup's check): refuse from now on, as after a
        damaged read."""
        with self._lock:
            if self.damaged is None:
                self.damaged = message
                self.conn.close()

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def replaced(self) -> bool:
        """True when another file now sits at our path (a backup was restored, say)."""
        return self.identity is not None and file_identity(self.path) != self.identity

    @contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """An IMMEDIATE transaction: the write lock is taken up front, so a read-modify-write
        cannot interleave with another process's and lose its update."""
        with self._lock:
            self._usable()
            if self._depth and not self._writing:
                # A deferred snapshot cannot be upgraded safely (another process may have written).
                raise RuntimeError("write() inside read(): open the write transaction first")
            if self._depth:
                yield from self._savepoint()
                return
            try:
                _retry_busy(lambda: self.conn.execute("BEGIN IMMEDIATE"), self.busy_timeout_ms)
            except apsw.Error as err:
                raise self._fault(err) from err
            self._depth = 1
            self._writing = True
            self.transactions += 1
            try:
                yield self.conn
                _retry_busy(lambda: self.conn.execute("COMMIT"), self.busy_timeout_ms)
            except BaseException as err:
                # Also when COMMIT itself failed: an open transaction would keep the file locked.
                self._rollback()
                if isinstance(err, apsw.Error):
                    raise self._fault(err) from err
                raise
            finally:
                self._depth = 0
                self._writing = False

    def _savepoint(self) -> Iterator[apsw.Connection]:
        """A write inside a write: a savepoint, so that a part that fails and is caught by its
        caller undoes only its own changes, as its own transaction would have, while the whole
        still commits as one."""
        name = f"mnemo_{self._depth}"
        self._depth += 1
        try:
            self.conn.execute(f"SAVEPOINT {name}")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute(f"ROLLBACK TO {name}")
                    self.conn.execute(f"RELEASE {name}")
                raise
            self.conn.execute(f"RELEASE {name}")
        except apsw.Error as err:
            raise self._fault(err) from err
        finally:
            self._depth -= 1

    def _rollback(self) -> None:
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        except apsw.Error as err:  # SQLite rolls back by itself when it cannot (a full disk, damage)
            log.warning("rollback failed: %s", err)

    @contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """A deferred transaction: one consistent snapshot for several SELECTs."""
        with self._lock:
            self._usable()
            if self._depth:
                yield self.conn
                return
            try:
                self.conn.execute("BEGIN")
            except apsw.Error as err:
                raise self._fault(err) from err
            self._depth = 1
            self.transactions += 1
            try:
                yield self.conn
            except apsw.Error as err:
                raise self._fault(err) from err
            finally:
                self._depth = 0
                self._end_read()

    def _end_read(self) -> None:
        try:
            if self.damaged is None and self.conn.in_transaction:
                self.conn.execute("COMMIT")
        except apsw.Error as err:
            raise self._fault(err) from err

    def close(self) -> None:
        with self._lock:
            self.conn.close()
