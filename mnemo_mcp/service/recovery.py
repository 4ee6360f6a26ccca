"""Recovery, for when the database cannot be used: what `doctor` can say about the file, a
salvage of what still reads into a new file, and putting a backup (or a salvaged file) back.

These take the settings, not a service: a service cannot be opened on a damaged file. None of
them ever writes to the damaged file; a restore keeps the file it replaces under a new name."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from ..config import Settings
from ..embedding import Embedder
from ..errors import DiskFull, ForeignDatabase, InvalidInput, MnemoError, StoreDamaged
from ..models import BackupInfo, FileDiagnosis, RestoreResult, SalvageReport
from ..storage import backups
from ..storage import salvage as salvage_sql
from ..storage.store import Store
from .base import iso

log = logging.getLogger("mnemo_mcp.recovery")

STAMP = "%Y%m%dT%H%M%SZ"


def _stamp(now: datetime | None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime(STAMP)


def backup_infos(settings: Settings) -> list[BackupInfo]:
    """The automatic backups of the configured database, newest first."""
    folder = settings.backup_folder
    if folder is None:
        return []
    return [
        BackupInfo(path=str(path), taken_at=iso(when), bytes=path.stat().st_size)
        for when, path in backups.list_backups(folder, Path(settings.db))
    ]


def diagnose(settings: Settings, error: MnemoError) -> FileDiagnosis:
    """What is wrong with a database file the service could not open, and what to do."""
    db = Path(settings.db)
    found = backup_infos(settings)
    latest = found[0] if found else None
    if not db.exists():
        return FileDiagnosis(
            path=str(db),
            exists=False,
            problem="unavailable",
            detail=str(error),
            latest_backup=latest,
            advice=[str(error)],
        )
    report = FileDiagnosis(
        path=str(db),
        exists=True,
        bytes=db.stat().st_size,
        problem="unavailable",
        detail=str(error),
        latest_backup=latest,
    )
    if isinstance(error, StoreDamaged):
        report.problem = "damaged"
        report.integrity, report.memories_listed = salvage_sql.inspect_file(db)
        report.advice = [
            "`mnemo-mcp doctor --salvage` copies every memory that still reads into a new file; this file is left as "
            "it is",
            (
                f"`mnemo-mcp restore-backup` puts back the latest automatic backup ({latest.path}, taken "
                f"{latest.taken_at})"
                if latest
                else f"no automatic backup of this database exists in {settings.backup_folder}"
            ),
            "or point MNEMO_DB at another file to start afresh",
        ]
    elif isinstance(error, ForeignDatabase):
        report.problem = "foreign"
        report.advice = [
            "this file belongs to another program and was not changed: point MNEMO_DB (or --db) at another path"
        ]
    elif isinstance(error, DiskFull):
        report.problem = "disk_full"
        report.advice = ["free some disk space: mnemo-mcp works again as soon as there is room, nothing was lost"]
    else:
        report.advice = [str(error)]
    return report


def salvage(
    settings: Settings,
    output: str | Path | None = None,
    embedder: Embedder | None = None,
    *,
    now: datetime | None = None,
) -> SalvageReport:
    """Copy every memory (and its learned state) that still reads out of the configured
    database into a new mnemo database; the original is never opened for writing."""
    db = Path(settings.db)
    if not db.is_file():
        raise InvalidInput(f"there is no database file at {db} to salvage")
    out = Path(output).expanduser() if output else db.with_name(f"{db.stem}-salvaged-{_stamp(now)}.db")
    if out.exists():
        raise InvalidInput(f"{out} already exists; choose another --output path")
    if out.resolve() == db.resolve():
        raise InvalidInput("the salvage must go to a new file, not over the damaged one")
    out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    found = salvage_sql.salvage_file(db)
    if not found.memories:
        found.notes.append(
            "no memory could be read, so no new file was written; restore a backup (`mnemo-mcp restore-backup --list`)"
        )
    vectors = salvage_sql.write_salvaged(out, found, settings.busy_timeout_ms) if found.memories else 0
    report = SalvageReport(
        source=str(db),
        output=str(out) if found.memories else None,
        memories_recovered=len(found.memories),
        memories_listed=found.listed,
        memories_skipped=found.skipped,
        unreadable_regions=found.unreadable,
        vectors_copied=vectors,
        feedback_events=len(found.feedback_events),
        context_links=len(found.cues),
        associations=len(found.associations),
        notes=list(found.notes),
    )
    missing = len(found.memories) - vectors
    if missing:
        report.vectors_reembedded = _reembed(settings, out, embedder, missing, report.notes)
    if found.listed is not None and found.listed > len(found.memories):
        report.notes.append(
            f"{found.listed - len(found.memories)} of the {found.listed} memories the file counts could not be read"
        )
    return report


def _reembed(settings: Settings, out: Path, embedder: Embedder | None, missing: int, notes: list[str]) -> int:
    """Make the vectors the salvage could not copy, from the recovered text."""
    from .api import MemoryService

    try:
        svc = MemoryService(settings.model_copy(update={"db": out, "auto_consolidate": False}), embedder)
    except MnemoError as err:
        notes.append(f"vectors of {missing} memories not made ({err}); run `mnemo-mcp --db {out} doctor --repair`")
        return 0
    try:
        report = svc.doctor(repair=True)
    except MnemoError as err:
        notes.append(f"vectors of {missing} memories not made ({err}); run `mnemo-mcp --db {out} doctor --repair`")
        return 0
    finally:
        svc.close()
    if not report.ok:
        notes.append(
            f"`mnemo-mcp --db {out} doctor` still reports problems: "
            + ", ".join(c.name for c in report.checks if not c.ok)
        )
    return missing


def restore_backup(settings: Settings, path: str | Path | None = None, *, now: datetime | None = None) -> RestoreResult:
    """Put a backup (the newest automatic one by default) in place of the database, while no
    other process has it open. The file it replaces is kept beside it under a new name."""
    db = Path(settings.db)
    if path is None:
        found = backup_infos(settings)
        if not found:
            raise InvalidInput(
                f"there are no automatic backups of {db} in {settings.backup_folder}; give the path of a backup "
                "(from `mnemo-mcp backup` or `mnemo-mcp doctor --salvage`)"
            )
        candidate = Path(found[0].path)
    else:
        candidate = Path(path).expanduser()
    if candidate.exists() and db.exists() and candidate.resolve() == db.resolve():
        raise InvalidInput("that file is the database itself; give the path of a backup")
    backups.check_backup(candidate)
    kept = backups.replace_database(db, candidate, _stamp(now), settings.busy_timeout_ms)
    store = Store(db, settings.busy_timeout_ms)  # opens it as the servers will: migrates an older schema
    try:
        with store.db.read():
            memories = store.memory_count()
    finally:
        store.close()
    log.info("restored %s from %s; the previous file is kept at %s", db, candidate, kept)
    return RestoreResult(
        restored_from=str(candidate), database=str(db), memories=memories, previous_kept_at=str(kept) if kept else None
    )
