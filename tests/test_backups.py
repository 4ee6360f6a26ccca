"""Automatic backups: at most one per interval, rotated, owner-only, checked before they count;
`restore-backup` puts one back while no other process has the database open; stats and the
dashboard show how old the last one is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from damage import corrupt_page, make_store, memory_leaves, open_state, server_params, sha
from mcp import Client
from starlette.testclient import TestClient

from mnemo_mcp.cli import main
from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService
from mnemo_mcp.web import create_app

START = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self, at: datetime = START):
        self.at = at

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def clock():
    return Clock()


def service(db: Path, clock: Clock, **settings) -> MemoryService:
    return MemoryService(Settings(db=db, auto_consolidate=False, **settings), HashEmbedder(), clock=clock)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def test_backups_are_taken_once_per_interval_rotated_to_the_newest_n_and_owner_only(tmp_path, clock):
    svc = service(tmp_path / "memory.db", clock, backup_keep=3)
    try:
        assert svc.maybe_backup() is None  # an empty store has nothing to lose
        taken = []
        for day in range(5):
            svc.write(f"memory of day {day}")
            first = svc.maybe_backup()
            assert first is not None and first.memories == day + 1
            assert svc.maybe_backup() is None  # the same day: not due again
            clock.at += timedelta(hours=23)
            assert svc.maybe_backup() is None  # still within the 24 h interval
            clock.at += timedelta(hours=1)
            taken.append(Path(first.path).name)
        folder = tmp_path / "backups"
        assert (
            names(folder)
            == taken[-3:]
            == ["memory-20270303T090000Z.db", "memory-20270304T090000Z.db", "memory-20270305T090000Z.db"]
        )
        assert folder.stat().st_mode & 0o777 == 0o700
        assert all((folder / n).stat().st_mode & 0o777 == 0o600 for n in names(folder))
        # Each backup is a healthy single-file mnemo database holding the store as it was.
        assert not any(p.name.endswith(("-wal", "-journal", ".partial")) for p in folder.iterdir())
        assert len(open_state(folder / taken[-1])) == 5 and len(open_state(folder / taken[-3])) == 3
        last, age, count = svc.backup_status()
        assert (last, age, count) == ("2027-03-05T09:00:00+00:00", 24.0, 3)
    finally:
        svc.close()


def test_the_off_switch_and_a_configured_folder(tmp_path, clock):
    off = service(tmp_path / "off.db", clock, auto_backup=False)
    try:
        off.write("never backed up automatically")
        assert not off.backup_due() and off.maybe_backup() is None
    finally:
        off.close()
    assert not (tmp_path / "backups").exists()
    elsewhere = tmp_path / "other-disk" / "mnemo"
    svc = service(tmp_path / "on.db", clock, backup_dir=elsewhere, backup_interval_hours=6)
    try:
        svc.write("backed up to the configured folder")
        assert Path(svc.maybe_backup().path).parent == elsewhere
        clock.at += timedelta(hours=6)
        assert svc.maybe_backup() is not None and len(names(elsewhere)) == 2
    finally:
        svc.close()


def test_a_backup_that_fails_its_check_keeps_the_older_ones_and_stops_writes_to_the_damaged_file(tmp_path, clock):
    db = tmp_path / "memory.db"
    make_store(db, 60)
    svc = service(db, clock)
    try:
        good = svc.maybe_backup()
        assert good is not None
    finally:
        svc.close()
    leaves = memory_leaves(db)
    corrupt_page(db, leaves[len(leaves) // 2][0])
    before = sha(db)
    clock.at += timedelta(days=2)
    svc = service(db, clock)
    try:
        assert svc.maybe_backup() is None  # the copy failed quick_check: not a backup
        assert names(tmp_path / "backups") == [Path(good.path).name]
        with pytest.raises(Exception, match="failed the integrity check"):
            svc.write("not into a damaged file")
    finally:
        svc.close()
    assert sha(db) == before


def test_restore_backup_round_trip_puts_the_backup_state_back_and_keeps_the_replaced_file(
    tmp_path, monkeypatch, capsys, clock
):
    db = tmp_path / "memory.db"
    monkeypatch.setenv("MNEMO_DB", str(db))
    monkeypatch.setenv("MNEMO_EMBED_MODEL", "mnemo-hash-64")
    original = make_store(db, 20)
    svc = service(db, clock)
    try:
        backup = svc.maybe_backup()
        lost = svc.write("written after the backup").id
        svc.delete(next(iter(original)))
    finally:
        svc.close()
    replaced = sha(db)
    assert main(["restore-backup", "--list"]) == 0
    assert backup.path in capsys.readouterr().out
    assert main(["--json", "restore-backup"]) == 0  # the newest automatic backup
    result = json.loads(capsys.readouterr().out)
    assert result["restored_from"] == backup.path and result["memories"] == len(original)
    assert open_state(db) == original  # exactly the state at the backup: the delete is undone
    assert lost not in open_state(db)
    kept = Path(result["previous_kept_at"])
    assert kept.parent == tmp_path and sha(kept) == replaced and lost in open_state(kept)
    assert db.stat().st_mode & 0o777 == 0o600
    assert main(["doctor"]) == 0


HOLDER = """
import sys
from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService
svc = MemoryService(Settings(db=sys.argv[1], auto_consolidate=False, auto_backup=False), HashEmbedder())
svc.stats()
print("open", flush=True)
sys.stdin.readline()
svc.close()
"""


def test_restore_backup_refuses_while_another_process_has_the_database_open(tmp_path, clock):
    db = tmp_path / "memory.db"
    make_store(db, 5)
    svc = service(db, clock)
    try:
        backup = svc.maybe_backup()
        svc.write("newer than the backup")
    finally:
        svc.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    env = {**os.environ, "MNEMO_DB": str(db), "MNEMO_EMBED_MODEL": "mnemo-hash-64"}
    try:
        assert holder.stdout.readline().strip() == "open"
        before = open_state(db)
        r = subprocess.run(
            [sys.executable, "-m", "mnemo_mcp", "restore-backup", backup.path], capture_output=True, text=True, env=env
        )
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert (
            f"process {holder.pid} has the memory database {db} open" in r.stderr
            and "Close the Claude Code sessions" in r.stderr
        )
        assert open_state(db) == before and not [p for p in tmp_path.iterdir() if "before-restore" in p.name]
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    r = subprocess.run(
        [sys.executable, "-m", "mnemo_mcp", "restore-backup", backup.path], capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr
    assert len(open_state(db)) == 5


def test_restore_backup_refuses_a_damaged_or_foreign_file_and_changes_nothing(tmp_path, monkeypatch, capsys):
    db = tmp_path / "memory.db"
    monkeypatch.setenv("MNEMO_DB", str(db))
    monkeypatch.setenv("MNEMO_EMBED_MODEL", "mnemo-hash-64")
    make_store(db, 5)
    before = sha(db)
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(8192))
    import apsw

    foreign = tmp_path / "foreign.db"
    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE notes(t TEXT)")
    conn.close()
    for candidate, why in (
        (junk, "cannot be read as a mnemo-mcp database (file is not a database)"),
        (foreign, "is not a mnemo-mcp database"),
        (tmp_path / "missing.db", "is not a file"),
        (db, "is the database itself"),
    ):
        assert main(["restore-backup", str(candidate)]) == 1
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err, (candidate, err)
    assert main(["restore-backup"]) == 1
    assert "there are no automatic backups" in capsys.readouterr().err
    assert sha(db) == before


def test_stats_and_the_dashboard_show_the_age_of_the_last_backup(tmp_path, clock):
    svc = service(tmp_path / "memory.db", clock)
    try:
        svc.write("something worth a backup")
        assert svc.stats().last_backup is None and svc.stats().backups == 0
        token = "t" * 40
        client = TestClient(create_app(svc, port=8765, token=token), base_url="http://127.0.0.1:8765")
        assert "never" in client.get(f"/analytics?token={token}").text
        svc.maybe_backup()
        clock.at += timedelta(hours=30)
        stats = svc.stats()
        assert (
            stats.last_backup == "2027-03-01T09:00:00+00:00"
            and stats.last_backup_age_hours == 30.0
            and stats.backups == 1
        )
        html = client.get("/analytics").text
        assert "30 hours ago" in html and "last backup" in html
    finally:
        svc.close()


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_stdio_server_takes_the_daily_backup_in_the_background_at_start(tmp_path):
    db = tmp_path / "memory.db"
    original = make_store(db, 12)
    async with Client(server_params(db, tmp_path, MNEMO_AUTO_CONSOLIDATE="false"), mode="legacy") as c:
        deadline = time.monotonic() + 60  # a bound for a broken server, not a speed requirement
        while True:
            stats = (await c.call_tool("memory_stats", {})).structured_content
            if stats["backups"] or time.monotonic() > deadline:
                break
            await anyio.sleep(0.05)
        assert stats["backups"] == 1 and stats["last_backup_age_hours"] is not None
    (backup,) = (tmp_path / "backups").iterdir()
    assert open_state(backup) == original


@pytest.fixture
def anyio_backend():
    return "asyncio"
