"""Where mnemo keeps its files, computed with the standard library only.

The settings object (pydantic, ~100 ms to import) and the hook entry point (which must start in
a few milliseconds) both need the same answers, so they live here. Plain strings and os.path:
even pathlib costs a hook 4 ms.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # for checkers only: a hook process does not import collections for it
if TYPE_CHECKING:
    from collections.abc import Mapping

ENV_PREFIX = "MNEMO_"
HOOK_CONNECT_MS = 300  # a hook looks this long for a ready server, then answers by itself
HOOK_MODEL_WAIT_MS = 3000  # and waits this long for one loading its model, once it said so


def data_dir() -> str:
    """The per-user data directory (XDG on Linux, the platform's usual place elsewhere)."""
    home = os.path.expanduser("~")
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif os.uname().sysname == "Darwin":
        base = os.path.join(home, "Library", "Application Support")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(base, "mnemo-mcp")


def cache_dir() -> str:
    if os.name != "nt" and os.uname().sysname != "Darwin":
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "mnemo-mcp")
    return os.path.join(data_dir(), "cache")


def expand(path: str | os.PathLike[str]) -> str:
    """`$VARS` and `~` expanded, as the settings do for every path."""
    return os.path.expanduser(os.path.expandvars(os.fspath(path)))


def os_user() -> str:
    """The person this process runs for, as the OS names them (MNEMO_USER overrides it)."""
    import getpass

    try:
        return getpass.getuser() or "unknown"
    except (KeyError, OSError):  # no passwd entry (some containers)
        return os.environ.get("USER") or "unknown"


# --- a database is a file or a server ---------------------------------------------------------

_URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(value: object) -> bool:
    """Whether MNEMO_DB names a PostgreSQL server (a URL) rather than a SQLite file. A URL is
    never a path: no `~` or `$VAR` expansion (it would mangle a password), no file made for it."""
    return isinstance(value, str) and value.strip().lower().startswith(_URL_SCHEMES)


def without_password(url: str) -> str:
    """The URL as it may be shown: the password replaced by `***` (core.hosts)."""
    from .core.hosts import without_password as shown

    return shown(url)


def db_key(db: str | os.PathLike[str]) -> str:
    """What identifies a database for the processes that share it (the hook socket): a file's
    real path, or a server URL without its password."""
    if is_url(db):
        return without_password(str(db))
    return os.path.realpath(os.fspath(db))


def mnemo_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The MNEMO_* variables of an environment (names upper-cased: settings ignore case)."""
    env = os.environ if environ is None else environ
    return {k.upper(): v for k, v in env.items() if k.upper().startswith(ENV_PREFIX)}


def db_path(env: Mapping[str, str]) -> str:
    """The database a process with these MNEMO_* variables uses (Settings.db): a file, or a URL."""
    value = env.get("MNEMO_DB")
    if is_url(value):
        return value.strip()
    return expand(value) if value else os.path.join(data_dir(), "memory.db")


def hook_log_path(env: Mapping[str, str]) -> str:
    value = env.get("MNEMO_HOOK_LOG")
    return expand(value) if value else os.path.join(data_dir(), "hooks.log")
