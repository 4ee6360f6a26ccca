"""The local channel between hook processes and the MCP servers of one database.

A hook is a fresh process per event and cannot wait a second for the embedding model; the MCP
server has it loaded. Each server process listens on its own Unix socket, `<pid>.sock`, in a
0700 directory beside the database (`memory.db-sock/`; under the runtime directory, keyed by a
hash of the database path, when that path is too long for a socket address). A hook finds the
servers of its database through that directory and asks one to handle the event.

The exchange is three newline-delimited JSON messages, so that an event is handled exactly once:
    hook -> server   {"v": 1, "event": ..., "payload": ..., "env": {MNEMO_* of the hook}, "wait_ms": N}
    server -> hook   {"ready": true} (or {"ready": false, "why": ...}: try another, or fall back)
                     first {"wait": true} while its model is still loading: the hook then gives
                     it up to wait_ms more (the first prompt of a session comes ~0.6 s after
                     Claude Code starts the server, before the model is in)
    hook -> server   {"go": true}    (only now does the server change anything)
    server -> hook   {"ok": true, "output": "..." | null} or {"ok": false, "error": "..."}
A hook that got no "ready" within its budget closes the connection without "go" and handles the
event itself (keyword recall); a server that sees no "go" drops the request. After "go" the hook
waits for the result and never falls back, so nothing is counted twice.

The servers of one database also share one loaded model (mnemo_mcp.shared_model): a server that
has none asks the one that has, in one exchange (embedding changes nothing, so no "go"):
    server -> host   {"v": 1, "embed": "query" | "passages", "model": ..., "texts": [...]}
    host -> server   {"ok": true, "dim": N, "vectors": base64 of float32} or {"ok": false, "why": ...}

Only the standard library: the hook entry point imports this.
"""

from __future__ import annotations

import _socket  # the C module: `socket` turns its constants into enums on import (~4 ms of a hook)
import os
import stat
import struct
import time

from .. import paths
from ..paths import HOOK_MODEL_WAIT_MS
from . import quickjson  # not the json package: it imports re, enum, functools, collections

TYPE_CHECKING = False  # `typing` is for checkers only: a hook process does not pay its import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Prepare = Callable[[dict[str, Any]], "Callable[[], dict[str, Any]] | str | Later"]

PROTOCOL = 1
SOCKET_SUFFIX = "-sock"
RESULT_TIMEOUT_S = 8.0  # once committed; Claude Code's hook timeout (10 s) is the outer bound
MAX_MESSAGE = 16 << 20  # a Stop payload carries the whole answer
GO_TIMEOUT_S = 2.0
STOP_WAIT_S = 5.0  # how long a stopping server waits for the events it already took
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


class _suppress:
    """contextlib.suppress, without importing contextlib (collections, functools) into a hook."""

    def __init__(self, *errors: type[BaseException]):
        self.errors = errors

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, _value, _traceback) -> bool:
        return kind is not None and issubclass(kind, self.errors)


class Later:
    """What `prepare` returns when it can only tell after a wait (the model is loading): the
    server tells the hook to wait, then calls `resolve`, which may block up to its bound."""

    def __init__(self, resolve: Callable[[], Callable[[], dict[str, Any]] | str]):
        self.resolve = resolve


def _log(level: str, message: str, *args: Any) -> None:
    import logging  # only the server logs: a hook process never pays for the import

    getattr(logging.getLogger(__name__), level)(message, *args)


def socket_dir(db: str | os.PathLike[str]) -> str:
    """Where the sockets of the servers of `db` live: beside a file; for a server URL, in the
    user's runtime folder under a hash of the URL without its password."""
    real = paths.db_key(db)
    beside = real + SOCKET_SUFFIX
    if not paths.is_url(db) and len(os.fsencode(os.path.join(beside, ".4194304.0123abcd.tmp"))) <= _MAX_SOCKET_PATH:
        return beside
    import hashlib

    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:20]
    for base in (os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("TMPDIR"), "/tmp"):
        folder = os.path.join(base or "/tmp", f"mnemo-mcp-{os.getuid()}", digest)
        if len(os.fsencode(os.path.join(folder, ".4194304.0123abcd.tmp"))) <= _MAX_SOCKET_PATH:
            return folder
    return folder


def _private(path: str, create: bool) -> bool:
    """True when `path` is a directory only this user can enter (made so when `create`)."""
    if create:
        parent = os.path.dirname(path)
        if os.path.basename(parent).startswith("mnemo-mcp-"):  # the runtime-dir fallback
            os.makedirs(parent, mode=0o700, exist_ok=True)
            if not _private(parent, create=False):
                return False
        with _suppress(FileExistsError):
            os.mkdir(path, mode=0o700)
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return False
    if st.st_mode & 0o077:
        if not create:
            return False
        os.chmod(path, 0o700)
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process reuses the number: not ours, but alive
        return True
    return True


def _sockets(folder: str) -> list[str]:
    """The servers' sockets, newest first."""
    try:
        entries = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".sock")]
    except OSError:
        return []
    stamped = []
    for p in entries:
        with _suppress(OSError):
            stamped.append((os.lstat(p).st_mtime, p))
    return [p for _, p in sorted(stamped, reverse=True)]


def _peer_is_us(conn: _socket.socket) -> bool:
    """The other end runs as this user (Linux; elsewhere the 0700 directory is the guard)."""
    opt = getattr(_socket, "SO_PEERCRED", None)
    if opt is None:
        return True
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(_socket.SOL_SOCKET, opt, struct.calcsize("3i")))
    except OSError:
        return False
    return uid == os.getuid()


class _Lines:
    """Newline-delimited JSON over a socket, with a deadline per message."""

    def __init__(self, conn: _socket.socket):
        self.conn = conn
        self.buf = b""

    def send(self, message: dict[str, Any]) -> None:
        self.conn.sendall(quickjson.dumps(message, compact=True).encode() + b"\n")

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None on timeout, a closed connection or garbage."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or len(self.buf) > MAX_MESSAGE:
                return None
            self.conn.settimeout(left)
            try:
                chunk = self.conn.recv(1 << 16)
            except (TimeoutError, OSError):
                return None
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            message = quickjson.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None


# --- the hook's side ---------------------------------------------------------------------


def ask(
    db: str | os.PathLike[str],
    request: dict[str, Any],
    *,
    budget_s: float,
    wait_s: float = HOOK_MODEL_WAIT_MS / 1000,
    result_timeout_s: float = RESULT_TIMEOUT_S,
) -> dict[str, Any] | None:
    """Have a server of `db` handle `request`. -> its result ({"ok": ...}), or None when no
    server was ready within `budget_s` (or `wait_s` more for one loading its model): then
    nothing was done and the caller handles it."""
    folder = socket_dir(db)
    deadline = time.monotonic() + budget_s
    if not _private(folder, create=False):
        return None
    for path in _sockets(folder):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            conn.settimeout(left)
            try:
                conn.connect(path)
            except (ConnectionRefusedError, FileNotFoundError):
                _drop_stale(path)
                continue
            except OSError:
                continue
            if not _peer_is_us(conn):
                continue
            lines = _Lines(conn)
            lines.send({"v": PROTOCOL, **request, "wait_ms": int(wait_s * 1000)})
            answer = lines.recv(deadline - time.monotonic())
            if answer and answer.get("wait") is True:
                answer = lines.recv(wait_s)
            if not answer or answer.get("ready") is not True:
                continue  # busy, warming up, or another model: try the next server
            lines.send({"go": True})
            result = lines.recv(result_timeout_s)
            return (
                result if result is not None else {"ok": False, "error": "the server took the event but gave no result"}
            )
        except OSError:
            continue
        finally:
            conn.close()
    return None


def exchange(path: str, message: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
    """One request and its reply with the server listening at `path` (None: nobody answered in
    time, or the other end is not this user)."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout_s)
        conn.connect(path)
        if not _peer_is_us(conn):
            return None
        lines = _Lines(conn)
        lines.send({"v": PROTOCOL, **message})
        return lines.recv(timeout_s)
    except OSError:
        return None
    finally:
        conn.close()


def socket_of(db: str | os.PathLike[str], pid: int) -> str:
    return os.path.join(socket_dir(db), f"{pid}.sock")


EARLY: Listener | None = None  # the one the launcher started before the server was up


def listen_early(db: str | os.PathLike[str]) -> Listener | None:
    """Start listening for hooks now, before the server can handle them (see Listener)."""
    global EARLY
    listener = Listener(db, None)
    if listener.start():
        EARLY = listener
        return listener
    return None


def _drop_stale(path: str) -> None:
    """Nobody listens on this socket: its server is gone (killed, crashed)."""
    with _suppress(OSError):
        os.unlink(path)


# --- the server's side -------------------------------------------------------------------


class Listener:
    """One server process's socket, answering hook events with `prepare`, which returns the
    reason it cannot take a request (a string) or the function that handles it.

    A listener may start before it knows how to handle anything (`prepare` None: the launcher
    starts it before the MCP SDK is even imported, so that the first prompt of a session finds
    its server): a prompt then waits, within the hook's own bound, until `attach` gives it the
    handler; any other event is left to the hook at once (it needs no model)."""

    def __init__(self, db: str | os.PathLike[str], prepare: Prepare | None):
        import threading

        self.db = paths.db_key(db)
        self.folder = socket_dir(db)
        self.path = os.path.join(self.folder, f"{os.getpid()}.sock")
        self._prepare = prepare
        self._embed: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self._attached = threading.Event()
        if prepare is not None:
            self._attached.set()
        self._sock: _socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._taken = 0  # events answered "ready" and not yet finished
        self._idle = threading.Condition()

    def attach(self, prepare: Prepare) -> None:
        """How to handle events from now on (the server is up)."""
        self._prepare = prepare
        self._attached.set()

    def share_model(self, embed: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Answer other processes' embedding requests with `embed` (this one hosts the model)."""
        self._embed = embed

    def _prepared(self, request: dict[str, Any]) -> Callable[[], dict[str, Any]] | str | Later:
        if self._attached.is_set():
            return self._prepare(request)
        if request.get("event") != "UserPromptSubmit":
            return "the server is still starting"
        wait = request.get("wait_ms")
        bound = max(int(wait), 0) / 1000 if isinstance(wait, int) else 0.0

        def later() -> Callable[[], dict[str, Any]] | str:
            if not self._attached.wait(bound):
                return "the server did not start in time"
            found = self._prepare(request)
            while isinstance(found, Later):
                found = found.resolve()
            return found

        return Later(later)

    def start(self) -> bool:
        """Listen (once); False (logged) when the directory is not private or binding fails."""
        if self._sock is not None:
            return True
        try:
            if not _private(self.folder, create=True):
                _log(
                    "warning",
                    "hook socket directory %s is not private to this user: hooks recall by keywords",
                    self.folder,
                )
                return False
            self._clean_stale()
            import socket  # the server's side: accept() gives socket objects

            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            # Bound under a temporary name and renamed when listening: a hook that finds the
            # socket can always connect (a refused connection means a dead server, see ask()).
            tmp = os.path.join(self.folder, f".{os.getpid()}.{os.urandom(4).hex()}.tmp")
            old_umask = os.umask(0o177)
            try:
                sock.bind(tmp)
            finally:
                os.umask(old_umask)
            os.chmod(tmp, 0o600)
            sock.listen(16)
            sock.settimeout(0.5)
            os.replace(tmp, self.path)
        except OSError as err:
            _log("warning", "cannot listen for hooks at %s: %s; hooks recall by keywords", self.folder, err)
            return False
        import threading

        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="mnemo-hooks", daemon=True)
        self._thread.start()
        return True

    def stop(self, remove_folder: bool = False, wait_s: float = STOP_WAIT_S) -> None:
        """Stop listening, the socket removed (`remove_folder`: its folder too, when empty), then
        wait up to `wait_s` for the events already taken: the store closes after this, and an
        event the hook was told "ready" for is the server's to finish (the hook no longer falls
        back). An event arriving meanwhile is refused, and its hook handles it itself."""
        with self._idle:
            self._stop.set()
        with _suppress(OSError):
            os.unlink(self.path)
        if remove_folder:
            with _suppress(OSError):
                os.rmdir(self.folder)
        if self._sock is not None:
            with _suppress(OSError):
                self._sock.close()
        with self._idle:
            self._idle.wait_for(lambda: self._taken == 0, timeout=wait_s)

    def _take(self) -> bool:
        """Count an event in, unless the server is stopping."""
        with self._idle:
            if self._stop.is_set():
                return False
            self._taken += 1
            return True

    def _done(self) -> None:
        with self._idle:
            self._taken -= 1
            self._idle.notify_all()

    def _clean_stale(self) -> None:
        for name in os.listdir(self.folder):
            if name.endswith(".sock"):
                pid = name[:-5]
            elif name.endswith(".tmp") and name.startswith("."):
                pid = name[1:].split(".", 1)[0]
            else:
                continue
            if pid.isdigit() and not _pid_alive(int(pid)):
                _drop_stale(os.path.join(self.folder, name))

    def _embedding(self, lines: _Lines, request: dict[str, Any]) -> None:
        embed = self._embed
        if embed is None:
            lines.send({"ok": False, "why": "this server does not share a model"})
            return
        try:
            reply = embed(request)
        except Exception as err:  # a bad request never takes the listener down
            reply = {"ok": False, "why": f"{type(err).__name__}: {err}"}
        lines.send(reply)

    def _serve(self) -> None:
        import threading

        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                time.sleep(0.05)
                continue
            threading.Thread(target=self._one, args=(conn,), name="mnemo-hook", daemon=True).start()

    def _one(self, conn: _socket.socket) -> None:
        try:
            if not _peer_is_us(conn):
                return
            lines = _Lines(conn)
            request = lines.recv(GO_TIMEOUT_S)
            if request is None:
                return
            if request.get("v") != PROTOCOL:
                lines.send({"ready": False, "why": f"protocol {request.get('v')!r}, this server speaks {PROTOCOL}"})
                return
            if "embed" in request:
                self._embedding(lines, request)
                return
            try:
                handler = self._prepared(request)
                if isinstance(handler, Later):
                    lines.send({"wait": True})
                    while isinstance(handler, Later):
                        handler = handler.resolve()
            except Exception as err:  # a bad request never takes the listener down
                handler = f"cannot take this event: {err}"
            if isinstance(handler, Later) or not (isinstance(handler, str) or callable(handler)):
                handler = "cannot take this event"
            if isinstance(handler, str) or not self._take():
                lines.send({"ready": False, "why": handler if isinstance(handler, str) else "the server is stopping"})
                return
            try:
                self._run(lines, handler)
            finally:
                self._done()
        except OSError:
            pass
        finally:
            conn.close()

    @staticmethod
    def _run(lines: _Lines, handler: Callable[[], dict[str, Any]]) -> None:
        lines.send({"ready": True})
        go = lines.recv(GO_TIMEOUT_S)
        if not go or go.get("go") is not True:
            return  # the hook gave up waiting and handles the event itself
        try:
            result = handler()
        except Exception as err:
            _log("warning", "hook event failed in the server: %r", err)
            result = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        lines.send(result)
