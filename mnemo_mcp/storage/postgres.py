"""PostgreSQL with pgvector, for a store shared by several machines or a team: reaching the
server, and saying what is wrong when it cannot be used.

Every failure is a named error whose message says what to do, and never holds the password: the
URL is shown with `***` in its place, and the password is cut out of anything the driver says.
The store itself is pgstore.py's; `ready()` checks the server, the database and the extension.
"""

from __future__ import annotations

import re
from typing import Any

from ..core.hosts import password_of
from ..core.hosts import without_password as shown
from ..errors import DatabaseAuthFailed, DatabaseMissing, DatabaseUnreachable, ExtensionMissing, StoreUnavailable

CONNECT_TIMEOUT_S = 5


def _said(err: BaseException, url: str) -> str:
    """What the driver said, on one line, with the password (if it repeats it) cut out."""
    text = " ".join(str(err).split())
    secret = password_of(url)
    return text.replace(secret, "***") if secret else text


def connect(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> Any:
    """An open psycopg connection to `url`, or a named error that says what to do."""
    try:
        import psycopg
    except ImportError:
        raise StoreUnavailable(
            "MNEMO_DB is a PostgreSQL URL but the PostgreSQL driver is not installed; "
            "install it with: pip install 'mnemo-mcp[postgres]'"
        ) from None
    where = shown(url)
    try:
        return psycopg.connect(url, connect_timeout=max(1, int(timeout_s)), autocommit=True)
    except psycopg.OperationalError as err:
        said = _said(err, url)
        state = getattr(err, "sqlstate", None)
        if state in ("28P01", "28000") or "authentication failed" in said or "password" in said.lower():
            raise DatabaseAuthFailed(
                f"PostgreSQL at {where} refused the login ({said}); check the user and password in MNEMO_DB "
                "(or PGPASSWORD, ~/.pgpass)"
            ) from None
        if state == "3D000" or re.search(r"database \S+ does not exist", said):
            raise DatabaseMissing(
                f"PostgreSQL at {where} has no such database ({said}); create it (createdb, or CREATE DATABASE) "
                "or fix the name in MNEMO_DB"
            ) from None
        raise DatabaseUnreachable(
            f"cannot reach PostgreSQL at {where} ({said}); start the server or fix the host and port in MNEMO_DB"
        ) from None
    except psycopg.ProgrammingError as err:  # a malformed URL
        raise StoreUnavailable(f"MNEMO_DB is not a valid PostgreSQL URL ({_said(err, url)}): {where}") from None


def ready(url: str) -> dict[str, str]:
    """Check that `url` can hold a store: the server answers, the login and the database are
    right, pgvector's `vector` extension is created -> {server, vector} versions."""
    conn = connect(url)
    try:
        return check(conn, url)
    finally:
        conn.close()


def check(conn: Any, url: str) -> dict[str, str]:
    """On an open connection to `url`: pgvector's `vector` extension is there -> {server, vector}."""
    server = conn.execute("SHOW server_version").fetchone()[0]
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        available = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        database = conn.execute("SELECT current_database()").fetchone()[0]
        if available is None:
            raise ExtensionMissing(
                f"PostgreSQL {server} at {shown(url)} has no pgvector; install pgvector on the server, then run "
                f"once as a superuser: CREATE EXTENSION vector; (in database {database})"
            )
        raise ExtensionMissing(
            f"the database {database} at {shown(url)} lacks the vector extension; run once as a superuser: "
            "CREATE EXTENSION vector;"
        )
    return {"server": str(server), "vector": str(row[0])}


_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def _database_url(url: str, name: str) -> str:
    from urllib.parse import urlsplit

    if not _NAME.fullmatch(name):
        raise ValueError(f"not a plain database name: {name!r} (lowercase letters, digits and _)")
    return urlsplit(url)._replace(path="/" + name).geturl()


def create_database(url: str, name: str, *, with_vector: bool = True) -> str:
    """Make an empty database `name` on the server of `url` (its role may create databases; with
    pgvector created in it, which needs the right to) -> a connection string for it."""
    conn = connect(url)
    try:
        conn.execute(f"CREATE DATABASE {name}")
    finally:
        conn.close()
    target = _database_url(url, name)
    if with_vector:
        conn = connect(target)
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        finally:
            conn.close()
    return target


def drop_database(url: str, name: str) -> None:
    _database_url(url, name)  # the name is checked before it is put in SQL
    conn = connect(url)
    try:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        conn.close()
