"""Backup files: consistent copies taken with SQLite's online backup, their names and rotation,
checking a copy before trusting it, and putting one back in place of the database.

A backup is a plain single-file SQLite database (rollback journal, no -wal beside it), owner-only,
named `<db stem>-<UTC time>.db`, so that it can be copied, inspected or opened as it is."""

from __future__ import annotations

import logging
import os
import re
import shutil
import struct
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import apsw

from ..errors import ForeignDatabase, InvalidInput, MnemoError, StoreDamaged, StoreInUse
from . import faults
from .db import _create_private_file, _vec_extension, connect, table_names
from .migrations import MIGRATIONS, current_version

try:
    import fcntl
except ImportError:  # Windows: no POSIX locks to look at
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

STAMP = "%Y%m%dT%H%M%SZ"
PARTIAL = ".partial"


def _pattern(db: Path) -> re.Pattern[str]:
    return re.compile(re.escape(db.stem) + r"-(\d{8}T\d{6}Z)(?:-(\d+))?\.db")


def new_backup_path(folder: Path, db: Path, when: datetime) -> Path:
    base = f"{db.stem}-{when.astimezone(UTC).strftime(STAMP)}"
    path, n = folder / f"{base}.db", 1
    while path.exists() or path.with_name(path.name + PARTIAL).exists():
        n += 1
        path = folder / f"{base}-{n}.db"
    return path


def list_backups(folder: Path, db: Path) -> list[tuple[datetime, Path]]:
    """This database's backups in `folder`, newest first (other files there are ignored)."""
    pattern = _pattern(db)
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:  # no folder yet, or not readable: no backups to speak of (taking one will say why)
        return []
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if m and entry.is_file():
            when = datetime.strptime(m.group(1), STAMP).replace(tzinfo=UTC)
            found.append((when, int(m.group(2) or 1), Path(entry.path)))
    found.sort(reverse=True)
    return [(when, path) for when, _, path in found]


def room_for_backup(db: Path, folder: Path, spare: int) -> tuple[bool, int, int]:
    """Whether a copy of `db` fits in `folder` and still leaves `spare` bytes (or a tenth of the
    copy, if more) free: a backup must never take the room the database needs to write.
    -> (fits, free bytes, bytes the copy needs)."""
    size = sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())
    free = shutil.disk_usage(folder).free
    return free >= size + max(spare, size // 10), free, size


def claim(folder: Path, db: Path, stale_seconds: float) -> Path | None:
    """Take the right to write this database's next backup (several servers share a database),
    as a file created exclusively; one older than `stale_seconds` is from a process that died.
    -> the claim file to remove when done, or None when another process holds it."""
    path = folder / f".{db.stem}.backup-claim"
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            try:
                age = time.time() - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if age < stale_seconds:
                return None
            path.unlink(missing_ok=True)
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return path
    return None


def rotate(folder: Path, db: Path, keep: int) -> list[Path]:
    """Delete all but the `keep` newest backups (and copies left half-written by a crash)."""
    removed = [path for _, path in list_backups(folder, db)[keep:]]
    pattern = _pattern(db)
    removed += [
        Path(e.path)
        for e in os.scandir(folder)
        if e.name.endswith(PARTIAL) and pattern.fullmatch(e.name[: -len(PARTIAL)])
    ]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some filesystems cannot sync a directory
        pass
    finally:
        os.close(fd)


def _copy_into(source: apsw.Connection, target: Path) -> tuple[int, list[str]]:
    """Copy `source` into the new file `target` and check the copy.
    -> (memories in it, the problems SQLite's quick_check lists; empty when healthy)."""
    _create_private_file(target)
    dest = apsw.Connection(str(target))
    try:
        with dest.backup("main", source, "main") as b:
            while not b.done:
                b.step(-1)  # one step: one consistent snapshot; WAL readers do not block writers
        dest.execute("PRAGMA journal_mode=DELETE")  # a single self-contained file
        try:
            problems = [r[0] for r in dest.execute("PRAGMA quick_check(20)")]
            memories = dest.execute("SELECT count(*) FROM memories").fetchone()[0]
        except (apsw.CorruptError, apsw.NotADBError) as err:
            return 0, [str(err)]
        return memories, [] if problems == ["ok"] else problems
    finally:
        dest.close()


def snapshot(db: Path, target: Path, busy_timeout_ms: int) -> int:
    """A checked, consistent copy of the live database at `target` (written under a temporary
    name, renamed when complete). Safe while other processes write. -> memories copied.

    The backup API copies pages as they are, so the check of the copy is a check of the
    database: a copy that fails it means the database is damaged (StoreDamaged)."""
    partial = target.with_name(target.name + PARTIAL)
    partial.unlink(missing_ok=True)
    source = connect(db, busy_timeout_ms)
    try:
        memories, problems = _copy_into(source, partial)
        if problems:
            detail = "its backup copy failed the integrity check: " + "; ".join(problems[:3])
            raise StoreDamaged(faults.damaged_message(db, detail))
        _fsync(partial)
        os.replace(partial, target)
        _fsync(target.parent)
        return memories
    except BaseException as err:
        partial.unlink(missing_ok=True)
        translated = faults.translate(err, db)
        if translated is not None and translated is not err:
            raise translated from err
        raise
    finally:
        source.close()


def _open_readonly(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    conn.enable_load_extension(True)
    conn.load_extension(_vec_extension())
    conn.enable_load_extension(False)
    return conn


def check_backup(path: Path) -> int:
    """Refuse a file that is not a healthy mnemo database of a schema we know. -> its memories."""
    if not path.is_file():
        raise InvalidInput(f"{path} is not a file; give the path of a backup (see `mnemo-mcp restore-backup --list`)")
    try:
        conn = _open_readonly(path)
    except apsw.Error as err:
        raise InvalidInput(f"{path} cannot be opened as SQLite ({err}); choose another backup") from err
    try:
        names = table_names(conn)
        if "schema_migrations" not in names or "memories" not in names:
            raise InvalidInput(
                f"{path} is not a mnemo-mcp database (no schema_migrations/memories tables); choose another backup"
            )
        version = current_version(conn)
        if version > MIGRATIONS[-1][0]:
            raise InvalidInput(
                f"{path} has schema version {version}, newer than this mnemo-mcp knows; upgrade mnemo-mcp first"
            )
        problems = [r[0] for r in conn.execute("PRAGMA quick_check(20)")]
        if problems != ["ok"]:
            raise InvalidInput(f"{path} is damaged ({'; '.join(problems[:3])}); choose another backup")
        return conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    except apsw.Error as err:
        raise InvalidInput(f"{path} cannot be read as a mnemo-mcp database ({err}); choose another backup") from err
    finally:
        conn.close()


# --- replacing the live database ------------------------------------------------------------


def _holder(path: Path) -> int | None:
    """The pid of another process holding a lock on `path` (0 when its pid is unknown), or None.

    An open SQLite connection in WAL mode keeps a shared lock on the database file and its -shm.
    POSIX locks belong to a process and are dropped when it closes any descriptor of the file,
    so call this only from a process with no SQLite connection to `path` open."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        if sys.platform.startswith("linux"):
            # struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
            query = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
            l_type, _, _, _, pid = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, query))
            return pid if l_type != fcntl.F_UNLCK else None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def refuse_if_in_use(db: Path) -> None:
    for path in (db, db.with_name(db.name + "-shm")):
        pid = _holder(path)
        if pid is not None:
            who = f"process {pid}" if pid else "another process"
            raise StoreInUse(
                f"{who} has the memory database {db} open (an MCP server, a dashboard or a hook), so it "
                "cannot be replaced safely now. Close the Claude Code sessions and dashboards that use it, "
                "then run the command again"
            )


def _settle(db: Path, busy_timeout_ms: int) -> None:
    """Fold a healthy database's WAL into the file so that the file alone is the whole database
    (a damaged or unreadable file is moved as it is, with its -wal)."""
    try:
        conn = connect(db, busy_timeout_ms)
    except ForeignDatabase:
        raise  # not ours to move away
    except MnemoError as err:
        log.warning("restoring over a database that cannot be opened: %s", err)
        return
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except apsw.Error as err:
        log.warning("could not checkpoint %s before replacing it: %s", db, err)
    finally:
        conn.close()


def replace_database(db: Path, candidate: Path, stamp: str, busy_timeout_ms: int) -> Path | None:
    """Put a copy of `candidate` at `db`, keeping the file it replaces (with its -wal and -shm)
    as `<db>.before-restore-<stamp>`. -> that kept file, or None when there was none.

    Refuses while another process has `db` open. The old file is hard-linked to its new name
    before the copy is renamed over `db`, so there is no moment without a database at `db`."""
    db.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    refuse_if_in_use(db)
    if db.exists():
        _settle(db, busy_timeout_ms)
    incoming = db.with_name(db.name + ".restoring")
    incoming.unlink(missing_ok=True)
    source = _open_readonly(candidate)
    try:
        _, problems = _copy_into(source, incoming)
        if problems:
            raise InvalidInput(f"{candidate} is damaged ({'; '.join(problems[:3])}); choose another backup")
        _fsync(incoming)
    except BaseException:
        incoming.unlink(missing_ok=True)
        raise
    finally:
        source.close()
    aside = db.with_name(f"{db.name}.before-restore-{stamp}")
    kept = None
    if db.exists():
        kept = aside
        try:
            os.link(db, kept)
        except OSError:  # no hard links here: a copy keeps the old file just as well
            shutil.copy2(db, kept)
    for suffix in ("-wal", "-shm"):
        side = db.with_name(db.name + suffix)
        if side.exists():
            # A -wal left beside the new file would be replayed into it: it goes with the old one.
            os.replace(side, aside.with_name(aside.name + suffix))
    os.replace(incoming, db)
    _fsync(db.parent)
    return kept


def scrub_backup(path: Path) -> dict[str, int] | None:
    """Mask the secrets an automatic backup from an earlier version holds: the scrub of migration
    6 on the copy, then VACUUM so no freed page keeps the old text -> what changed (None: a file
    too old or not a store, left as it is)."""
    from .scrub import scrub

    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA secure_delete=ON")
        with conn:
            changed = scrub(conn)
        conn.execute("VACUUM")
        return changed
    except apsw.SQLError:
        return None
    finally:
        conn.close()
