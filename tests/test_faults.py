"""Broken storage never crashes anything: a file of random bytes, a truncated file, a corrupt
page, a foreign SQLite file and a full disk, through the real stdio server and the CLI. Each
test shows what the user sees, that nothing is lost and that the server keeps answering."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import apsw
import pytest
from damage import corrupt_page, make_store, memory_leaves, open_state, random_bytes, server_params, sha, truncate
from mcp import Client

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.errors import StoreDamaged
from mnemo_mcp.server import build_server
from mnemo_mcp.service import MemoryService

pytestmark = pytest.mark.anyio

TOOLS = [
    ("memory_read", {"query": "deploy service step"}),
    ("memory_write", {"content": "A memory written while the store is broken."}),
    ("memory_stats", {}),
    ("memory_feedback", {"memory_ids": ["0123456789abcdef"], "outcome": 1.0}),
]
REMEDIES = ("mnemo-mcp doctor", "restore-backup", "MNEMO_DB")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def cli(db: Path, *argv: str, home: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "MNEMO_DB": str(db), "MNEMO_EMBED_MODEL": "mnemo-hash-64"}
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "mnemo_mcp", *argv], capture_output=True, text=True, env=env, timeout=120
    )


async def every_tool_fails_naming(db: Path, home: Path, *needles: str) -> None:
    """The real server answers initialize, then every tool call is an error carrying the
    message, twice over (it stays up), and it still lists its tools afterwards."""
    async with Client(server_params(db, home), mode="legacy") as c:
        for _ in range(2):
            for name, args in TOOLS:
                r = await c.call_tool(name, args)
                text = r.content[0].text
                assert r.is_error, (name, text)
                assert all(n in text for n in needles), (name, text)
        assert len((await c.list_tools()).tools) == 9


# --- a file of random bytes ----------------------------------------------------------------------


@pytest.mark.slow
async def test_random_bytes_server_answers_and_every_tool_says_what_to_do_leaving_the_file_as_it_was(tmp_path):
    db = tmp_path / "memory.db"
    random_bytes(db)
    before = sha(db)
    await every_tool_fails_naming(db, tmp_path, "cannot be read as SQLite", "file is not a database", *REMEDIES)
    assert sha(db) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("memory.db")) == ["memory.db"]


def test_random_bytes_cli_stats_fails_with_the_message_and_doctor_describes_the_file(tmp_path):
    db = tmp_path / "memory.db"
    random_bytes(db)
    before = sha(db)
    stats = cli(db, "stats")
    assert stats.returncode == 1 and stats.stderr.startswith("error: the memory database")
    assert "file is not a database" in stats.stderr and "Traceback" not in stats.stderr + stats.stdout
    doctor = cli(db, "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr + doctor.stdout
    assert f"FAIL database file {db} (65,536 bytes): damaged" in doctor.stdout
    assert "next: `mnemo-mcp doctor --salvage`" in doctor.stdout
    report = json.loads(cli(db, "--json", "doctor").stdout)
    assert report["problem"] == "damaged" and report["memories_listed"] is None
    salvage = cli(db, "doctor", "--salvage")
    assert salvage.returncode == 1 and "nothing could be salvaged" in salvage.stdout
    assert sha(db) == before


# --- a valid database cut short ----------------------------------------------------------------


@pytest.mark.slow
async def test_truncated_file_server_answers_and_every_tool_names_the_damage(tmp_path):
    db = tmp_path / "memory.db"
    make_store(db, 30)
    truncate(db, 0.5)
    before = sha(db)
    await every_tool_fails_naming(db, tmp_path, "is damaged", "malformed", *REMEDIES)
    assert sha(db) == before


def test_truncated_file_salvage_recovers_exactly_the_rows_before_the_cut_unchanged(tmp_path):
    db = tmp_path / "memory.db"
    original = make_store(db, 60)
    leaves = memory_leaves(db)
    cut_page = leaves[len(leaves) // 2][0]
    os.truncate(db, (cut_page - 1) * 4096)  # the file ends in the middle of the memories' pages
    before = sha(db)
    doctor = cli(db, "--json", "doctor")
    assert doctor.returncode == 1 and json.loads(doctor.stdout)["problem"] == "damaged"
    out = tmp_path / "salvaged.db"
    result = cli(db, "--json", "doctor", "--salvage", "--output", str(out))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    expected = sum(n for page, n in leaves if page < cut_page)
    assert 0 < report["memories_recovered"] == expected < len(original)
    recovered = open_state(out)
    assert len(recovered) == expected and all(recovered[k] == original[k] for k in recovered)
    assert sha(db) == before
    healthy = cli(out, "--json", "doctor")
    assert healthy.returncode == 0 and json.loads(healthy.stdout)["memories"] == expected


# --- one corrupt page in the middle ------------------------------------------------------------


@pytest.mark.slow
async def test_corrupt_page_server_stops_using_the_file_and_salvage_then_restore_bring_back_the_rest(tmp_path):
    db = tmp_path / "memory.db"
    original = make_store(db, 60)
    leaves = memory_leaves(db)
    page, lost = leaves[len(leaves) // 2]
    corrupt_page(db, page)
    before = sha(db)
    env = {"MNEMO_AUTO_CONSOLIDATE": "false", "MNEMO_AUTO_BACKUP": "false"}
    async with Client(server_params(db, tmp_path, **env), mode="legacy") as c:
        stats = await c.call_tool("memory_stats", {})  # reads every memory: meets the bad page
        assert stats.is_error and "is damaged" in stats.content[0].text
        # From then on every call refuses, even one that would not touch the bad page.
        for name, args in TOOLS:
            r = await c.call_tool(name, args)
            assert r.is_error and all(n in r.content[0].text for n in REMEDIES), (name, r.content[0].text)
        assert sha(db) == before
        # The salvage and the restore run while this server is up: it closed the file.
        out = tmp_path / "salvaged.db"
        report = json.loads(cli(db, "--json", "doctor", "--salvage", "-o", str(out)).stdout)
        assert report["memories_recovered"] == len(original) - lost and report["memories_listed"] == len(original)
        assert report["vectors_copied"] == report["memories_recovered"] and report["feedback_events"] > 0
        restored = cli(db, "restore-backup", str(out))
        assert restored.returncode == 0, restored.stderr
        assert "the file it replaced is kept at" in restored.stdout
        # The same server process picks the restored file up on the next call.
        stats = await c.call_tool("memory_stats", {})
        assert not stats.is_error and stats.structured_content["total"] == len(original) - lost
        read = await c.call_tool("memory_read", {"query": "deploy service step"})
        assert not read.is_error and read.structured_content["items"]
    now = open_state(db)
    assert all(now[k] == original[k] for k in now)
    kept = [p for p in tmp_path.iterdir() if ".before-restore-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1 and sha(kept[0]) == before  # the damaged original, byte for byte


# --- a SQLite file that is not ours ------------------------------------------------------------


def _foreign(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute(
        "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users(name) VALUES ('ann'), ('bo')"
    )
    conn.close()


@pytest.mark.slow
async def test_foreign_sqlite_file_is_refused_by_name_and_never_modified(tmp_path):
    db = tmp_path / "app.db"
    _foreign(db)
    before, mtime = sha(db), db.stat().st_mtime_ns
    await every_tool_fails_naming(db, tmp_path, "not a mnemo-mcp one", "tables users", "left it untouched", "MNEMO_DB")
    for argv in (("stats",), ("write", "x"), ("doctor",), ("restore-backup", str(db))):
        r = cli(db, *argv)
        assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout, argv
    assert "foreign" in cli(db, "doctor").stdout
    assert sha(db) == before and db.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("app.db")) == ["app.db"]
    conn = apsw.Connection(str(db))
    assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == 2


# --- a full disk ------------------------------------------------------------------------------------


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mnt)], capture_output=True, text=True
        )
    except FileNotFoundError:
        pytest.skip("no mount command here; test_injected_disk_full_* covers a full disk through a VFS instead")
    if done.returncode != 0:
        pytest.skip(
            f"mounting a tmpfs is not permitted here ({done.stderr.strip()}); "
            "test_injected_disk_full_* covers a full disk through a VFS instead"
        )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(folder: Path) -> Path:
    """Take every free byte of `folder`'s filesystem (unbuffered: a flush at close would fail)."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        for chunk in (1 << 16, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError:
                continue
    finally:
        os.close(fd)
    return filler


@pytest.mark.slow
async def test_full_disk_reads_work_writes_fail_by_name_and_all_works_again_once_space_is_freed(small_tmpfs, tmp_path):
    db = small_tmpfs / "memory.db"
    original = make_store(db, 20)
    async with Client(
        server_params(db, tmp_path, MNEMO_AUTO_CONSOLIDATE="false", MNEMO_AUTO_BACKUP="false"), mode="legacy"
    ) as c:
        first = await c.call_tool("memory_read", {"query": "deploy service"})
        assert not first.is_error
        filler = _fill(small_tmpfs)
        write = await c.call_tool(
            "memory_write", {"content": "Written onto a full disk: must fail cleanly. " + "x" * 3000}
        )
        assert write.is_error and "is full: this change was not written" in write.content[0].text
        rate = await c.call_tool("rate_memory", {"memory_id": next(iter(original)), "rating": 1})
        assert rate.is_error and "Free some disk space" in rate.content[0].text
        read = await c.call_tool("memory_read", {"query": "deploy service"})
        assert not read.is_error and read.structured_content["items"]
        assert "not recorded" in read.structured_content["warning"]
        stats = await c.call_tool("memory_stats", {})
        assert not stats.is_error and stats.structured_content["total"] == len(original)
        filler.unlink()
        again = await c.call_tool("memory_write", {"content": "Written after space was freed, same process."})
        assert not again.is_error and again.structured_content["created"]
        recorded = await c.call_tool("memory_read", {"query": "deploy service"})
        assert "warning" not in recorded.structured_content
    after = open_state(db)
    assert len(after) == len(original) + 1 and all(after[k] == original[k] for k in original)


class FullDisk(apsw.VFS):
    """A VFS over the default one whose writes fail with SQLITE_FULL while `full` is set: a full
    disk on demand, where mounting a small filesystem is not possible."""

    def __init__(self):
        self.full = False
        self.base = apsw.vfs_names()[0]
        self.name = f"mnemo-test-full-{uuid.uuid4().hex[:8]}"
        super().__init__(self.name, base=self.base, makedefault=True)

    def xOpen(self, name, flags):
        return FullDiskFile(self, name, flags)


class FullDiskFile(apsw.VFSFile):
    def __init__(self, vfs: FullDisk, name, flags):
        self.vfs = vfs
        super().__init__(vfs.base, name, flags)

    def xWrite(self, data, offset):
        if self.vfs.full:
            raise apsw.FullError("injected: no space left on device")
        return super().xWrite(data, offset)


@pytest.fixture
def full_disk():
    vfs = FullDisk()
    try:
        yield vfs
    finally:
        vfs.full = False
        vfs.unregister()


def _learned(svc: MemoryService) -> tuple:
    with svc.store.db.read():
        rows = list(svc.store.all_memories())
        events = svc.store.feedback_events()
    return [(r["id"], r["content"], r["valence"], r["quality"], r["access_count"], r["metadata"]) for r in rows], len(
        events
    )


async def test_injected_disk_full_changes_nothing_and_reads_go_on_without_their_bookkeeping(tmp_path, full_disk):
    settings = Settings(db=tmp_path / "memory.db", auto_consolidate=False, auto_backup=False)
    svc = MemoryService(settings, HashEmbedder())
    ids = [svc.write(f"Injected fault memory {i} about deploy steps.", allow_duplicate=True).id for i in range(5)]
    server = build_server(settings, service_factory=lambda s: svc)
    async with Client(server, mode="legacy") as c:
        read = (await c.call_tool("memory_read", {"query": "deploy steps"})).structured_content
        before = _learned(svc)
        full_disk.full = True
        for name, args in (
            ("memory_write", {"content": "Never stored."}),
            ("memory_feedback", {"memory_ids": ids[:2], "outcome": 1.0, "read_id": read["read_id"]}),
            ("rate_memory", {"memory_id": ids[0], "rating": -1}),
            ("memory_delete", {"memory_id": ids[1]}),
        ):
            r = await c.call_tool(name, args)
            assert r.is_error and "disk holding the memory database" in r.content[0].text, name
        blind = await c.call_tool("memory_read", {"query": "deploy steps"})
        assert not blind.is_error and len(blind.structured_content["items"]) == 5
        assert _learned(svc) == before  # nothing changed: no half-written feedback, no read counted
        full_disk.full = False
        ok = await c.call_tool("memory_feedback", {"memory_ids": ids[:2], "outcome": 1.0, "read_id": read["read_id"]})
        assert not ok.is_error
        assert _learned(svc)[1] == before[1] + 2


async def test_injected_disk_full_at_start_the_server_answers_then_opens_once_there_is_room(tmp_path, full_disk):
    settings = Settings(db=tmp_path / "new" / "memory.db", auto_consolidate=False, auto_backup=False)
    full_disk.full = True  # a new database cannot even get its tables
    server = build_server(settings, service_factory=lambda s: MemoryService(s, HashEmbedder()))
    async with Client(server, mode="legacy") as c:
        r = await c.call_tool("memory_write", {"content": "first memory"})
        assert r.is_error and "is full" in r.content[0].text
        full_disk.full = False
        r = await c.call_tool("memory_write", {"content": "first memory"})
        assert not r.is_error and r.structured_content["created"]
        assert (await c.call_tool("memory_stats", {})).structured_content["total"] == 1


def test_injected_disk_full_cli_write_prints_the_message_without_a_traceback(tmp_path, full_disk, monkeypatch, capsys):
    from mnemo_mcp.cli import main

    monkeypatch.setenv("MNEMO_DB", str(tmp_path / "memory.db"))
    monkeypatch.setenv("MNEMO_EMBED_MODEL", "mnemo-hash-64")
    monkeypatch.setenv("MNEMO_AUTO_BACKUP", "false")
    assert main(["write", "kept"]) == 0
    capsys.readouterr()
    full_disk.full = True
    assert main(["write", "not kept"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the disk holding the memory database") and "Traceback" not in err
    assert main(["--json", "read", "kept"]) == 0
    read = json.loads(capsys.readouterr().out)
    assert read["items"][0]["content"] == "kept" and read["warning"].startswith("the disk is full")
    assert main(["read", "kept"]) == 0
    assert "warning: the disk is full" in capsys.readouterr().err
    full_disk.full = False
    assert main(["--json", "stats"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 1


def test_damage_found_mid_run_closes_the_file_and_every_later_call_says_so(tmp_path):
    db = tmp_path / "memory.db"
    first = next(iter(make_store(db, 60)))  # on the first page
    leaves = memory_leaves(db)
    corrupt_page(db, leaves[len(leaves) // 2][0])
    before = sha(db)
    svc = MemoryService(Settings(db=db, auto_consolidate=False, auto_backup=False), HashEmbedder())
    try:
        assert svc.quality(first).id == first  # opens, and reads what lies on good pages
        with pytest.raises(StoreDamaged, match="is damaged"):
            svc.stats()  # meets the bad page
        for call in (lambda: svc.read("deploy", record=False), lambda: svc.write("must not go into a damaged file")):
            with pytest.raises(StoreDamaged, match="restore-backup"):
                call()
        assert sha(db) == before and not svc.store_replaced_since_damage()
        shutil.copy(db, tmp_path / "other.db")
        os.replace(tmp_path / "other.db", db)  # what restore-backup does: another file at the path
        assert svc.store_replaced_since_damage()
    finally:
        svc.close()


def test_salvage_leaves_behind_a_row_that_reads_but_whose_content_no_longer_matches_its_id(tmp_path):
    db = tmp_path / "memory.db"
    original = make_store(db, 20)
    victim = next(mid for mid, (content, *_) in original.items() if content.startswith("Fault memory 7:"))
    raw = db.read_bytes()
    at = raw.index(b"Fault memory 7:")
    db.write_bytes(raw[:at] + b"Fault memory 1:" + raw[at + 15 :])  # one flipped digit: SQLite cannot tell
    report = json.loads(cli(db, "--json", "doctor", "--salvage", "-o", str(tmp_path / "out.db")).stdout)
    assert report["memories_skipped"] == 1 and report["memories_recovered"] == len(original) - 1
    recovered = open_state(tmp_path / "out.db")
    assert victim not in recovered and all(recovered[k] == original[k] for k in recovered)
