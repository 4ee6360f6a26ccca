"""SQLite's failures turned into errors a person (or a model) can act on.

apsw raises one exception class per SQLite result code. The ones that mean "this file cannot be
used" or "the disk is full" become a `MnemoError` naming the file, what happened and what to do;
anything else (a bug, a busy lock) is left as it is."""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw

from ..errors import DiskFull, MnemoError, StoreDamaged, StoreUnavailable

# Below this much free space an I/O error is taken for a full disk: SQLite reports ENOSPC as
# SQLITE_FULL on its main writes but as a plain I/O error on some others (the -shm file).
NEARLY_FULL_BYTES = 1 << 20

WHAT_TO_DO = (
    "What to do: run `mnemo-mcp doctor` to look at the file (`mnemo-mcp doctor --salvage` copies "
    "everything that still reads into a new file and leaves this one as it is), or "
    "`mnemo-mcp restore-backup` to put back the latest automatic backup, or point MNEMO_DB at another file."
)


def damaged_message(path: Path | str, detail: str) -> str:
    return (
        f"the memory database {path} is damaged (SQLite: {detail}); mnemo-mcp stopped using it and "
        f"writes nothing more to it. {WHAT_TO_DO}"
    )


def not_a_database_message(path: Path | str, detail: str) -> str:
    return (
        f"the memory database {path} cannot be read as SQLite (SQLite: {detail}): it is damaged, or it "
        f"is not a database at all; mnemo-mcp left it untouched. {WHAT_TO_DO}"
    )


def disk_full_message(path: Path | str) -> str:
    return (
        f"the disk holding the memory database {path} is full: this change was not written (it was "
        "rolled back; nothing stored before is lost). Free some disk space and try again; reads keep "
        "working meanwhile, and writes work again as soon as there is room."
    )


def _nearly_full(path: Path | str) -> bool:
    try:
        return shutil.disk_usage(Path(path).parent).free < NEARLY_FULL_BYTES
    except OSError:
        return False


def translate(err: BaseException, path: Path | str) -> MnemoError | None:
    """The MnemoError for an apsw failure on the database at `path`, or None to let it through."""
    if isinstance(err, MnemoError):
        return err
    if not isinstance(err, apsw.Error):
        return None
    detail = str(err).split("\n")[0]
    if isinstance(err, apsw.FullError) or (isinstance(err, apsw.IOError) and _nearly_full(path)):
        return DiskFull(disk_full_message(path))
    if isinstance(err, apsw.NotADBError):
        return StoreDamaged(not_a_database_message(path, detail))
    if isinstance(err, apsw.CorruptError) or "malformed" in detail:
        return StoreDamaged(damaged_message(path, detail))
    if isinstance(err, apsw.CantOpenError):
        return StoreUnavailable(
            f"cannot open the memory database {path} (SQLite: {detail}); check that the file and its "
            "folder exist and are readable and writable by you, or point MNEMO_DB at another file"
        )
    if isinstance(err, apsw.ReadOnlyError):
        return StoreUnavailable(
            f"the memory database {path} is read-only (SQLite: {detail}); make the file and its folder "
            "writable by you, or point MNEMO_DB at another file"
        )
    if isinstance(err, apsw.IOError):
        return StoreUnavailable(
            f"reading or writing the memory database {path} failed (SQLite: {detail}); the disk may be "
            "failing or the file was moved away. Nothing was changed. Check the disk, then run `mnemo-mcp doctor`"
        )
    return None
