"""MNEMO_DB as a PostgreSQL URL: never a path, never a file; every reason the server cannot be
used is a named error that says what to do and never shows the password, with the MCP server up.
(The PostgreSQL store itself is not built yet: a ready server is reported as such.)"""

from __future__ import annotations

import os

import anyio
import pytest
from mcp import Client

from mnemo_mcp import paths
from mnemo_mcp.config import Settings
from mnemo_mcp.errors import (
    BackendNotReady,
    DatabaseAuthFailed,
    DatabaseMissing,
    DatabaseUnreachable,
    ExtensionMissing,
)
from mnemo_mcp.hooks import channel
from mnemo_mcp.server import build_server
from mnemo_mcp.service import MemoryService

SECRET = "s3cr~t$HOME/pa:ss"  # what path expansion would mangle


def test_a_postgresql_url_stays_as_written_and_is_no_path(tmp_path, monkeypatch):
    url = f"postgresql://app:{SECRET.replace('/', '%2F').replace(':', '%3A')}@db.internal:5432/mnemo"
    monkeypatch.setenv("MNEMO_DB", url)
    settings = Settings()
    assert settings.db == url and settings.backend == "postgresql" and settings.backup_folder is None
    assert "s3cr" not in settings.db_label and settings.db_label.startswith("postgresql://app:***@db.internal")
    assert paths.db_path(paths.mnemo_env()) == url
    assert Settings(db="postgres://u@h/d").backend == "postgresql"
    assert Settings(db=tmp_path / "m.db").backend == "sqlite"


def test_an_unreachable_server_is_a_named_error_and_makes_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = "postgresql://app:Sup3rS3cret@127.0.0.1:1/mnemo"
    with pytest.raises(DatabaseUnreachable, match="start the server or fix the host and port") as err:
        MemoryService(Settings(db=url))
    assert "Sup3rS3cret" not in str(err.value) and "postgresql://app:***@127.0.0.1:1/mnemo" in str(err.value)
    assert list(tmp_path.iterdir()) == []  # no "postgresql:" folder or file


def test_the_hook_socket_is_keyed_by_the_url_without_its_password():
    one = channel.socket_dir("postgresql://app:first@db.internal:5432/mnemo")
    other = channel.socket_dir("postgresql://app:second@db.internal:5432/mnemo")
    elsewhere = channel.socket_dir("postgresql://app:first@db.internal:5432/other")
    assert one == other != elsewhere
    assert "first" not in one and "db.internal" not in one and one.startswith(("/", os.sep))


def test_a_wrong_password_is_a_named_error_without_the_password(pg):
    with pytest.raises(DatabaseAuthFailed, match="check the user and password") as err:
        MemoryService(Settings(db=pg.url(password="not-the-Pa55")))
    assert "not-the-Pa55" not in str(err.value)


def test_a_missing_database_is_a_named_error(pg):
    with pytest.raises(DatabaseMissing, match="create it"):
        MemoryService(Settings(db=pg.url(database="nowhere")))


def test_a_database_without_pgvector_says_how_to_add_it(pg):
    with pytest.raises(ExtensionMissing, match="CREATE EXTENSION vector"):
        MemoryService(Settings(db=pg.url(database="novector")))


def test_a_ready_server_is_reported_ready_and_the_store_not_built_yet(pg):
    with pytest.raises(BackendNotReady, match=r"PostgreSQL 18\.\d+ with pgvector 0\.8\.\d+") as err:
        MemoryService(Settings(db=pg.url()))
    assert "Pa55" not in str(err.value)


def test_the_mcp_server_stays_up_and_every_tool_names_the_problem(pg, tmp_path):
    server = build_server(Settings(db=pg.url(password="wrong-Pa55"), auto_backup=False))

    async def run():
        async with Client(server, mode="legacy") as c:
            first = await c.call_tool("memory_stats", {})
            again = await c.call_tool("memory_read", {"query": "anything"})
            return first, again

    first, again = anyio.run(run)
    for result in (first, again):
        text = " ".join(getattr(b, "text", "") for b in result.content)
        assert result.is_error and "refused the login" in text and "wrong-Pa55" not in text


def test_doctor_and_restore_say_they_are_for_sqlite_files_and_name_pg_dump(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "MNEMO_DB": "postgresql://app:Sup3rS3cret@127.0.0.1:1/mnemo"}
    for command in (["doctor"], ["restore-backup", "--list"]):
        out = subprocess.run(
            [sys.executable, "-m", "mnemo_mcp", *command], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode != 0 and "pg_dump" in out.stderr and "Sup3rS3cret" not in out.stderr


def test_the_schema_is_laid_out_once_when_four_processes_start_at_once(pg):
    import subprocess
    import sys

    pg.psql("CREATE DATABASE racing OWNER app")
    url = pg.url(database="racing")
    code = (
        "import sys\nfrom mnemo_mcp.storage import pgschema, postgres\n"
        "conn = postgres.connect(sys.argv[1])\nprint(pgschema.migrate(conn))\nconn.close()"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    from mnemo_mcp.storage import pgschema

    assert {out.strip() for out, _ in outs} == {str(pgschema.MIGRATIONS[-1][0])}
    rows = pg.psql("SELECT count(*) FROM schema_migrations", database="racing")
    assert f" {len(pgschema.MIGRATIONS)}\n" in rows
    tables = pg.psql(
        "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'", "racing"
    )
    for table in ("memories", "reads", "feedback_events", "associations", "cues", "session_events", "meta"):
        assert table in tables
