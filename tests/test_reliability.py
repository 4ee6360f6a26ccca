"""Never lose a memory: doctor and repair, online backup while writing, crashes mid-write,
secrets refused or redacted, no network."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import FastEmbedEmbedder, HashEmbedder
from mnemo_mcp.errors import InvalidInput
from mnemo_mcp.service import MemoryService

TEXTS = [
    f"Reliability memory {i}: the {w} service restarts with the {v} flag."
    for i, (w, v) in enumerate(
        zip(["api", "web", "queue", "cache", "search", "billing"], ["drain", "force", "grace", "quiet", "slow", "dry"])
    )
]


def learned_state(svc: MemoryService) -> dict[str, tuple]:
    """What repair must never change: content, valence, ratings, feedback history."""
    with svc.store.db.read():
        rows = list(svc.store.all_memories())
    return {
        r["id"]: (
            r["content"],
            r["valence"],
            r["metadata"].get("rating_sum"),
            r["metadata"].get("rating_count"),
            r["feedback_count"],
        )
        for r in rows
    }


@pytest.fixture
def svc(tmp_path):
    service = MemoryService(Settings(db=tmp_path / "r.db"), HashEmbedder())
    ids = [service.write(t, allow_duplicate=True).id for t in TEXTS]
    service.feedback(ids[:2], outcome=1.0, query_concepts=["service"])
    service.rate(ids[2], rating=-1, reason="stale")
    service.ids = ids
    yield service
    service.close()


# --- doctor -------------------------------------------------------------------------------------


def test_doctor_passes_a_healthy_store(svc):
    report = svc.doctor()
    assert report.ok and report.memories == len(TEXTS) and all(c.ok for c in report.checks)


def test_doctor_finds_each_kind_of_damage_and_repair_fixes_it_without_touching_learned_state(svc):
    before = learned_state(svc)
    conn = svc.store.conn
    with svc.store.db.write():
        rowids = [r[0] for r in conn.execute("SELECT rowid FROM memories ORDER BY rowid")]
        conn.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowids[0],))  # memory without vector
        conn.execute(
            "INSERT INTO memory_vectors(rowid, embedding, archived, domain) VALUES (9999, ?, 0, '')",
            (HashEmbedder().embed_query("orphan").tobytes(),),
        )  # vector without memory
        conn.execute("UPDATE memory_vectors SET archived = 1 WHERE rowid = ?", (rowids[1],))  # filter drift
        content, tags = conn.execute("SELECT content, tags FROM memories WHERE rowid = ?", (rowids[2],)).fetchone()
        conn.execute(
            "INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', ?, ?, ?)",
            (rowids[2], content, tags),
        )  # text index out of step
        conn.execute(
            "INSERT INTO cues(memory_id, concept, value, count, updated_at) VALUES ('f' || hex(randomblob(31)), 'x', 1, 1, 'now')"
        )
    report = svc.doctor()
    failed = {c.name for c in report.checks if not c.ok}
    assert not report.ok and failed == {
        "every memory has its vector",
        "no vector without its memory",
        "vector filters (archived, domain) match",
        "full-text index matches the memories",
        "no learned state of deleted memories",
    }
    fixed = svc.doctor(repair=True)
    assert fixed.ok and len(fixed.repaired) == 5, fixed.repaired
    assert learned_state(svc) == before
    hits = svc.read("queue service grace flag", top_k=1, record=False).items
    assert hits and "queue" in hits[0].content  # the re-indexed memory is found again


def test_doctor_command_exits_nonzero_on_damage_and_zero_after_repair(svc, tmp_path):
    with svc.store.db.write():
        svc.store.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('delete-all')")
    env = {**os.environ, "MNEMO_DB": str(svc.settings.db), "MNEMO_EMBED_MODEL": "mnemo-hash-64"}
    cmd = [sys.executable, "-m", "mnemo_mcp", "--json", "doctor"]
    broken = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert broken.returncode == 1 and json.loads(broken.stdout)["ok"] is False
    repaired = subprocess.run([*cmd, "--repair"], capture_output=True, text=True, env=env)
    assert repaired.returncode == 0 and json.loads(repaired.stdout)["ok"] is True


# --- crashes --------------------------------------------------------------------------------------

WRITER = """
import sys
from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService
svc = MemoryService(Settings(db=sys.argv[1], auto_consolidate=False), HashEmbedder())
print("ready", flush=True)
i = int(sys.argv[2])
while True:
    batch = [{"content": f"crash batch {i} item {j}: " + "x" * (j * 37 % 400), "allow_duplicate": True} for j in range(40)]
    ids = [r.id for r in svc.write_many(batch)]
    svc.feedback(ids[:10], 1.0 if i % 2 else -1.0, query_concepts=["crash", f"b{i}"])
    svc.rate(ids[0], 1)
    i += 1
"""


@pytest.mark.slow
def test_kill_nine_during_batch_writes_and_feedback_never_leaves_an_inconsistent_store(tmp_path):
    db = tmp_path / "crash.db"
    MemoryService(Settings(db=db), HashEmbedder()).close()
    kills = 0
    for round_ in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), str(round_ * 1000)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3 + 0.15 * round_)  # land the kill at varied points of a transaction
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        svc = MemoryService(Settings(db=db), HashEmbedder())
        try:
            report = svc.doctor()
            assert report.ok, [c for c in report.checks if not c.ok]
            with svc.store.db.read():
                # Every batch is all or nothing: 40 per batch, never a partial one.
                per_batch = svc.store.conn.execute(
                    "SELECT count(*) FROM memories WHERE content LIKE 'crash batch%' "
                    "GROUP BY substr(content, 1, instr(content, ' item'))"
                ).fetchall()
            assert all(n == 40 for (n,) in per_batch)
        finally:
            svc.close()
    assert kills == 8 and report.memories > 0


# --- backup -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_backup_while_another_process_writes_is_a_consistent_copy(svc, tmp_path):
    db = str(svc.settings.db)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, db, "50000"], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        result = svc.backup(tmp_path / "copy.db")
    finally:
        writer.kill()
        writer.wait()
    assert (tmp_path / "copy.db").stat().st_mode & 0o777 == 0o600
    copy = MemoryService(Settings(db=tmp_path / "copy.db"), HashEmbedder())
    try:
        assert copy.doctor().ok and copy.stats().total == result.memories >= len(TEXTS)
    finally:
        copy.close()
    with pytest.raises(InvalidInput, match="already exists"):
        svc.backup(tmp_path / "copy.db")


# --- secrets ------------------------------------------------------------------------------------------

AWS = "Deploy with AKIAIOSFODNN7EXAMPLE and region eu-west-1"


def test_a_likely_secret_is_refused_by_default_naming_what_and_where_and_nothing_is_stored(svc):
    before = learned_state(svc)
    with pytest.raises(InvalidInput, match=r"AWS access key id at characters 12-32") as err:
        svc.write(AWS)
    assert "AKIAIOSFODNN7EXAMPLE" not in str(err.value) and "MNEMO_SECRETS" in str(err.value)
    with pytest.raises(InvalidInput, match="in metadata"):
        svc.write("The staging database", metadata={"url": "postgres://app:s3cr3tPw9@db.internal/app"})
    assert learned_state(svc) == before


def test_redact_policy_stores_the_memory_with_the_secret_masked(tmp_path):
    svc = MemoryService(Settings(db=tmp_path / "s.db", secrets="redact"), HashEmbedder())
    try:
        mid = svc.write(AWS, metadata={"note": "token ghp_aBcdEfGhIjKlMnOpQrStUvWxYz0123456789"}).id
        row = svc.read("deploy region", record=False).items[0]
        assert row.id == mid and "AKIA" not in row.content and "[REDACTED AWS access key id]" in row.content
        assert "ghp_" not in json.dumps(list(svc.export()))
    finally:
        svc.close()


def test_allow_policy_stores_the_secret_as_written_but_every_read_masks_it(tmp_path, svc):
    assert svc.write("Reset the password from the admin page; the token lives in 1Password.").created
    assert svc.write("DB_PASSWORD=${DB_PASSWORD} comes from the environment").created
    open_svc = MemoryService(Settings(db=tmp_path / "a.db", secrets="allow"), HashEmbedder())
    try:
        assert open_svc.write(AWS).created
        shown = open_svc.read("deploy region", record=False).items[0].content
        assert "AKIA" not in shown and "[REDACTED AWS access key id]" in shown and "eu-west-1" in shown
        stored = open_svc.store.get(open_svc.read("deploy region", record=False).items[0].id)
        assert stored["content"] == AWS  # kept as written: the person chose to
        exported = [r for r in open_svc.export() if r["type"] == "memory"]
        assert "AKIA" not in exported[0]["content"] and exported[0]["redacted"] is True  # an export is a copy
    finally:
        open_svc.close()


# --- privacy and network --------------------------------------------------------------------------


def test_the_database_and_its_directory_are_owner_only(tmp_path):
    svc = MemoryService(Settings(db=tmp_path / "private" / "m.db"), HashEmbedder())
    try:
        svc.write("private memory")
        assert (tmp_path / "private").stat().st_mode & 0o777 == 0o700
        assert (tmp_path / "private" / "m.db").stat().st_mode & 0o777 == 0o600
    finally:
        svc.close()


def test_nothing_opens_a_network_connection(tmp_path, monkeypatch):
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    # A fresh embedder loads the bundled model here, under the guard.
    svc = MemoryService(Settings(db=tmp_path / "n.db"), FastEmbedEmbedder())
    try:
        mid = svc.write("Offline memory: no network at run time.").id
        read = svc.read("offline run time network")
        svc.feedback([mid], outcome=1.0, read_id=read.read_id)
        svc.consolidate()
        assert read.items[0].id == mid
    finally:
        svc.close()
    assert attempts == []
