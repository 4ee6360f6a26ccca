"""Errors that carry a message fit to show a user or a model: what went wrong and how to fix it."""

from __future__ import annotations


class MnemoError(Exception):
    """Base class; the MCP server and the CLI show `str(err)` as it is."""


class InvalidInput(MnemoError):
    """An argument was rejected before anything changed."""


class NotFound(MnemoError):
    """No memory (or read) matches the given id."""


class AmbiguousId(MnemoError):
    """An id prefix matches several memories."""

    def __init__(self, prefix: str, candidates: list[str]):
        self.candidates = candidates
        shown = ", ".join(candidates[:10])
        more = f" and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        super().__init__(
            f"id prefix {prefix!r} matches {len(candidates)} memories ({shown}{more}); pass more characters of the id"
        )


class ModelMismatch(MnemoError):
    """The database holds vectors from another embedding model than the configured one."""


class EmbeddingUnavailable(MnemoError):
    """The embedding model could not be loaded."""


class StoreUnavailable(MnemoError):
    """The database cannot be used right now; the message says why and what to do."""


class StoreDamaged(StoreUnavailable):
    """SQLite found the file damaged (or not a database at all). Nothing more is written to it."""


class ForeignDatabase(StoreUnavailable):
    """The file is a SQLite database made by something else; it is never modified."""


class StoreInUse(StoreUnavailable):
    """Another process has the database open, so it cannot be replaced now."""


class DiskFull(MnemoError):
    """A change did not fit on the disk; it was rolled back, nothing was lost."""


class DatabaseUnreachable(StoreUnavailable):
    """The PostgreSQL server in MNEMO_DB does not answer (not running, wrong host or port)."""


class DatabaseAuthFailed(StoreUnavailable):
    """PostgreSQL refused the user or password in MNEMO_DB."""


class DatabaseMissing(StoreUnavailable):
    """The server answers but the database named in MNEMO_DB does not exist."""


class ExtensionMissing(StoreUnavailable):
    """The database lacks pgvector's `vector` extension, which a superuser creates once."""
