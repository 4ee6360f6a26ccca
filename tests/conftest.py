from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import FastEmbedEmbedder, HashEmbedder
from mnemo_mcp.service import MemoryService

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"


@pytest.fixture(scope="session")
def real_embedder() -> FastEmbedEmbedder:
    """The bundled default model, loaded once for the whole run."""
    return FastEmbedEmbedder()


# The suites that run on both backends: every test of theirs that takes `db` (or `settings`) runs once on a
# SQLite file and once on a fresh PostgreSQL database. MNEMO_TEST_BACKEND=postgresql runs every
# test that takes `db` on PostgreSQL instead (to try the rest of the suite there).
BOTH_BACKENDS = {
    "test_service",
    "test_server",
    "test_lifecycle",
    "test_alignment",
    "test_capture",
    "test_trust",
    "test_dashboard",
    "test_concurrency",
    "test_bad_input",
    "test_bad_input_ids",
}
_databases = itertools.count()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "db" in metafunc.fixturenames and metafunc.module.__name__.rsplit(".", 1)[-1] in BOTH_BACKENDS:
        if os.environ.get("MNEMO_TEST_BACKEND") != "postgresql":
            metafunc.parametrize("backend", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return getattr(request, "param", os.environ.get("MNEMO_TEST_BACKEND", "sqlite"))


@pytest.fixture
def new_db(request: pytest.FixtureRequest, backend: str, tmp_path: Path):
    """Makes new, empty stores on the test's backend: SQLite files, or PostgreSQL databases (lent
    from a pool of emptied ones: tests/pg_server.py)."""
    made: list[str] = []

    def make() -> Path | str:
        name = f"t{next(_databases)}_{os.getpid()}"
        if backend != "postgresql":
            made.append(name)
            return tmp_path / ("memory.db" if len(made) == 1 else f"{name}.db")
        name, url = request.getfixturevalue("pg").lend_database(name)
        made.append(name)
        return url

    yield make
    if backend == "postgresql":
        for name in made:
            request.getfixturevalue("pg").give_back(name)


@pytest.fixture
def db(new_db) -> Path | str:
    """Where the test's store lives: a SQLite file, or a fresh PostgreSQL database's URL."""
    return new_db()


@pytest.fixture
def settings(db: Path | str) -> Settings:
    # No background consolidation or backup: tests that compare the store (and its stats) before
    # and after a call would otherwise race the server's first automatic run (tested on their
    # own in test_lifecycle and test_backups).
    return Settings(db=db, auto_consolidate=False, auto_backup=False)


@pytest.fixture
def service(settings: Settings, real_embedder: FastEmbedEmbedder):
    svc = MemoryService(settings, real_embedder)
    yield svc
    svc.close()


@pytest.fixture
def hash_service(settings: Settings):
    svc = MemoryService(settings, HashEmbedder())
    yield svc
    svc.close()


# The hook tests' project and environment (test_hooks, test_hook_channel): a git checkout for the
# project scope, and a hook process's env with its own database, log and the hash model.
@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop-api"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH", "LANG")}
    return {
        **keep,
        "MNEMO_DB": str(tmp_path / "hooks.db"),
        "MNEMO_HOOK_LOG": str(tmp_path / "hooks.log"),
        "MNEMO_EMBED_MODEL": "mnemo-hash-64",
    }


@pytest.fixture
def mnemo_script(tmp_path: Path) -> str:
    """A `mnemo-mcp` script as pip writes it for this environment's Python (what the installers
    read to write the hooks' quick start: installers/hook_start.py)."""
    script = tmp_path / "venv-bin" / "mnemo-mcp"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom mnemo_mcp.launcher import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return str(script)


@pytest.fixture(scope="session")
def pg():
    """A PostgreSQL 18 server with pgvector for the whole run (tests/pg_server.py); the tests that
    need it skip, saying why, where it cannot start."""
    import pg_server

    server = pg_server.start()
    if isinstance(server, str):
        pytest.skip(server)
    yield server
    server.stop()
