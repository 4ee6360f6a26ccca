"""Backups: `backup PATH` on request, and the automatic one the MCP server takes at most once per
`backup_interval_hours` (next to consolidation), rotated to the newest `backup_keep`.

A lost or damaged disk then costs at most one interval of memories. Each copy is checked with
SQLite's quick_check before it counts as a backup, and a copy that fails it never pushes a good
backup out of the rotation."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

from ..errors import DiskFull, InvalidInput, MnemoError, StoreDamaged
from ..models import BackupResult
from ..storage import backups
from .base import Part, iso

log = logging.getLogger("mnemo_mcp.backup")

CLAIM_MINUTES = 10  # a backup claimed by another process is left to it this long
SPARE_BYTES = 16 << 20  # never let a backup take the last of the disk: writes need room too


class Backups(Part):
    def backup(self, path: str | Path, *, overwrite: bool = False) -> BackupResult:
        target = Path(path).expanduser()
        if target.exists() and target.is_dir():
            raise InvalidInput(f"{target} is a directory; give a file path such as {target / 'memory-backup.db'}")
        if target.exists() and not overwrite:
            raise InvalidInput(f"{target} already exists; choose another path or pass --force to replace it")
        if target.resolve() == Path(self.settings.db).resolve():
            raise InvalidInput("the backup path is the database itself; choose another file")
        if target.exists():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        memories = backups.snapshot(Path(self.settings.db), target, self.settings.busy_timeout_ms)
        return BackupResult(path=str(target), memories=memories, bytes=target.stat().st_size)

    # --- automatic backups -------------------------------------------------------------------

    def list_backups(self) -> list[tuple[datetime, Path]]:
        """This database's automatic backups, newest first."""
        folder = self.settings.backup_folder
        return [] if folder is None else backups.list_backups(folder, Path(self.settings.db))

    def backup_status(self, *, now: datetime | None = None) -> tuple[str | None, float | None, int]:
        """(time of the newest backup, its age in hours, how many are kept)."""
        found = self.list_backups()
        if not found:
            return None, None, 0
        newest = found[0][0]
        age = ((now or self.clock()) - newest).total_seconds() / 3600.0
        return iso(newest), round(max(age, 0.0), 2), len(found)

    def backup_due(self, *, now: datetime | None = None) -> bool:
        s = self.settings
        if not s.auto_backup or s.backup_folder is None:
            return False
        found = self.list_backups()
        if not found:
            return True
        return ((now or self.clock()) - found[0][0]).total_seconds() / 3600.0 >= s.backup_interval_hours

    def scrub_backups(self) -> dict[str, int]:
        """The automatic backups taken by earlier versions hold what those kept in clear: mask it
        in them too, once (after migration 6 masked the store) -> what changed, by table."""
        with self.store.db.read():
            if self.store.get_meta("backups_scrubbed") or not self.store.secrets_migration_report():
                return {}
        total: dict[str, int] = {}
        for _, path in self.list_backups():
            for table, n in (backups.scrub_backup(path) or {}).items():
                total[table] = total.get(table, 0) + n
        with self.store.db.write():
            self.store.set_meta("backups_scrubbed", iso(self.clock()))
        if total:
            log.warning("masked secrets in earlier automatic backups: %s", total)
        return total

    def maybe_backup(self, *, now: datetime | None = None) -> BackupResult | None:
        """Take the automatic backup if one is due and no other process is taking it (safe to
        call from every server). It never writes to the database: its claim is a file. First,
        once, the backups of earlier versions lose the secrets they hold."""
        self.scrub_backups()
        if not self.backup_due(now=now):
            return None
        with self.store.db.read():
            if self.store.memory_count() == 0:
                return None  # nothing to lose yet
        folder = self.settings.backup_folder
        assert folder is not None
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        held = backups.claim(folder, Path(self.settings.db), CLAIM_MINUTES * 60)
        if held is None:
            return None
        try:
            if not self.backup_due(now=now):  # another process finished one while we looked
                return None
            return self._take_backup(now or self.clock())
        finally:
            held.unlink(missing_ok=True)

    def _take_backup(self, when: datetime) -> BackupResult | None:
        s = self.settings
        db = Path(s.db)
        folder = s.backup_folder
        assert folder is not None
        fits, free, size = backups.room_for_backup(db, folder, SPARE_BYTES)
        if not fits:
            log.warning(
                "automatic backup skipped: %s has %d MB free and a backup of %s needs about %d MB plus room to spare; "
                "free some space or set MNEMO_BACKUP_DIR to another disk",
                folder,
                free >> 20,
                db,
                size >> 20,
            )
            return None
        target = backups.new_backup_path(folder, db, when)
        try:
            memories = backups.snapshot(db, target, s.busy_timeout_ms)
        except DiskFull as err:
            log.warning("automatic backup failed, the disk is full: %s", err)
            return None
        except StoreDamaged as err:
            # The copy holds the database's own pages: the database is damaged. Stop writing
            # to it now rather than when a tool call happens to meet the bad page.
            self.store.db.mark_damaged(str(err))
            log.error("automatic backup found the database damaged; older backups kept: %s", err)
            return None
        except MnemoError as err:
            # Older backups stay: they may be the last good copy.
            log.error("automatic backup failed, older backups kept: %s", err)
            return None
        removed = backups.rotate(folder, db, s.backup_keep)
        log.info("backup %s (%d memories); %d old backups removed", target, memories, len(removed))
        return BackupResult(path=str(target), memories=memories, bytes=target.stat().st_size)
