"""One loaded model for all the MCP servers of one database.

Claude Code starts a server per session, and each loaded its own copy of the model (onnxruntime,
its libraries, the weights, the buffers of a run: ~100 MB or more a process). Here the first
server that needs the model holds it and embeds for the others over the hook socket it already
has (`channel.exchange`); the others never import onnxruntime.

Who holds it is decided by a lock: `model-<hash>.lock` in the sockets' private folder, held with
flock(2) by the host for as long as it lives, its pid written inside. A lock that the kernel
releases when its process ends, however it ends, is what keeps this from being a daemon:
there is no process of its own, nothing outlives the sessions, and when the host's session
ends the next server that needs a vector takes the lock and loads the model itself (once, ~1 s),
so a session works whoever has gone. A process that cannot host (no listening socket: the CLI,
a test) asks a host when there is one and otherwise loads its own copy, as before.

Vectors are computed by the same code on the same files whichever process runs it, so they do
not depend on who asks: the request names the model and its weights, and a host with another
refuses.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import channel

if TYPE_CHECKING:
    import numpy as np

    from ..embedding import FastEmbedEmbedder

log = logging.getLogger(__name__)

HOST_WAIT_S = 20.0  # a host still loading its model answers when it has (a first load on a busy machine)
FIND_HOST_S = 3.0  # a lock held by a server whose socket does not answer yet: asked again for this long
PER_TEXT_S = 0.25  # more time for a batch of passages


class SharedEmbedder:
    """An `Embedder` that uses the host's model, or becomes the host (see the module)."""

    def __init__(self, local: FastEmbedEmbedder, db: str | os.PathLike[str]):
        self.name = local.name
        self._local = local
        self._db = db
        self._identity = f"{local.name}|{local.weights}"
        digest = hashlib.sha256(self._identity.encode()).hexdigest()[:12]
        self._lock_path = os.path.join(channel.socket_dir(db), f"model-{digest}.lock")
        self._lock_fd: int | None = None
        self._can_host = False
        self._mutex = threading.Lock()
        self.asked = 0  # vectors this process had from a host (for tests and the benchmark)

    @property
    def dim(self) -> int | None:
        return self._local.dim

    @property
    def hosting(self) -> bool:
        return self._lock_fd is not None

    @property
    def loaded_here(self) -> bool:
        return self._local._model is not None

    def host_through(self, listener: channel.Listener) -> None:
        """This process listens on `listener`: it may host the model for the others."""
        listener.share_model(self._answer)
        self._can_host = True

    def warm_up(self) -> None:
        """At a server's start: load the model if this process is to host it, else nothing
        (the host's vectors are asked for when needed)."""
        if self._take_host() or not self._host_pid():
            self._local.warm_up()

    def release(self) -> None:
        """Stop hosting (the process is closing): the next server to need the model takes it."""
        with self._mutex:
            if self._lock_fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._lock_fd)
                self._lock_fd = None

    # --- embedding -----------------------------------------------------------------------

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed("query", [text])[0]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return self._local.embed_passages([])
        return self._embed("passages", list(texts))

    def _embed(self, kind: str, texts: list[str]) -> np.ndarray:
        if not self.loaded_here and not self.hosting:
            deadline = time.monotonic() + FIND_HOST_S
            while True:
                got = self._from_host(kind, texts)
                if got is not None:
                    self.asked += len(texts)
                    return got
                if self._take_host() or not self._host_pid() or time.monotonic() > deadline:
                    break  # hosting now, nobody hosts, or a host that never answers: embed here
                time.sleep(0.05)
        if kind == "query":
            return self._local.embed_query(texts[0])[None, :]
        return self._local.embed_passages(texts)

    # --- the lock ------------------------------------------------------------------------

    def _take_host(self) -> bool:
        """Become the host if this process listens and nobody holds the lock."""
        import fcntl

        with self._mutex:
            if self._lock_fd is not None:
                return True
            if not self._can_host:
                return False
            try:
                fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                return False
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            self._lock_fd = fd
            log.info("this server hosts the embedding model for the others of %s", self._lock_path)
            return True

    def _host_pid(self) -> int | None:
        """The live host's pid, or None when the lock is free (nobody hosts)."""
        import fcntl

        try:
            fd = os.open(self._lock_path, os.O_RDONLY)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:  # held: read who holds it (written just after the lock is taken)
                for _ in range(50):
                    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
                    if text.isdigit():
                        return int(text)
                    time.sleep(0.002)
                return None
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    # --- both sides of the exchange -----------------------------------------------------------

    def _from_host(self, kind: str, texts: list[str]) -> np.ndarray | None:
        pid = self._host_pid()
        if pid is None or pid == os.getpid():
            return None
        timeout = HOST_WAIT_S + PER_TEXT_S * len(texts)
        message = {"embed": kind, "model": self._identity, "texts": texts}
        reply = channel.exchange(channel.socket_of(self._db, pid), message, timeout)
        if not reply or reply.get("ok") is not True:
            if reply:
                log.info("the model's host did not embed: %s", reply.get("why"))
            return None
        import numpy as np

        try:
            dim = int(reply["dim"])
            flat = np.frombuffer(base64.b64decode(reply["vectors"]), dtype="<f4")
            vectors = flat.reshape(len(texts), dim).astype(np.float32)
        except (KeyError, ValueError, TypeError):
            return None
        return vectors

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The host's side: embed another process's texts with this process's model."""
        kind, model, texts = request.get("embed"), request.get("model"), request.get("texts")
        if model != self._identity:
            return {"ok": False, "why": f"this host runs {self._identity}, not {model}"}
        if kind not in ("query", "passages") or not isinstance(texts, list) or not texts:
            return {"ok": False, "why": "malformed embedding request"}
        if not all(isinstance(t, str) for t in texts):
            return {"ok": False, "why": "texts must be strings"}
        if not self.hosting:
            return {"ok": False, "why": "this server does not host the model"}
        import numpy as np

        if kind == "query":
            vectors = np.stack([self._local.embed_query(t) for t in texts])
        else:
            vectors = self._local.embed_passages(texts)
        out = np.ascontiguousarray(vectors, dtype="<f4")
        return {"ok": True, "dim": int(out.shape[1]), "vectors": base64.b64encode(out.tobytes()).decode()}
