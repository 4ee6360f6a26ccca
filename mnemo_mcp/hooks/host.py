"""The MCP server's side of the hook channel: it handles a hook's event with the hook's own
settings (its MNEMO_* environment, its working directory) and the model the server has loaded,
so a prompt is matched by meaning, exactly as `memory_read` would rank it."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from .. import paths
from ..config import Settings
from ..embedding import Embedder
from ..project import scoped
from ..service import MemoryService
from . import channel, events, handlers

log = logging.getLogger(__name__)

SERVICES_KEPT = 4  # distinct hook settings served at once (normally one)
SETTINGS_KEPT = 16  # distinct hook environments whose settings are kept read


class HookHost:
    def __init__(
        self,
        settings: Settings,
        embedder: Embedder,
        ready: Callable[[], bool],
        loading: Callable[[], bool] = lambda: False,
    ):
        self.settings = settings
        self._embedder = embedder
        self._ready = ready
        self._loading = loading
        self._services: OrderedDict[str, tuple[MemoryService, threading.Lock]] = OrderedDict()
        self._lock = threading.Lock()
        self._db = paths.db_key(settings.db)
        self._read: OrderedDict[tuple[tuple[str, str], ...], Settings | str] = OrderedDict()

    def listener(self) -> channel.Listener:
        """The socket hooks find this server by: the one the launcher opened early, now given
        this host's handler, or a new one."""
        early = channel.EARLY
        if early is not None and early.db == self._db:
            early.attach(self.prepare)
            return early
        return channel.Listener(self.settings.db, self.prepare)

    def prepare(self, request: dict[str, Any]) -> Callable[[], dict[str, Any]] | str | channel.Later:
        """The handler for a request, or why this server cannot take it (the hook then asks
        another server or handles the event itself), or `Later` while the model loads."""
        event, payload, env = (request.get(k) for k in ("event", "payload", "env"))
        if event not in events.EVENTS or not isinstance(payload, dict) or not isinstance(env, dict):
            return "malformed request"
        if not self._ready() and event != "UserPromptSubmit":
            return self._handler(request, semantic=False)  # only a prompt's recall needs the model
        if not self._ready():
            wait = request.get("wait_ms")
            if not self._loading() or not isinstance(wait, int) or wait <= 0:
                return "the embedding model is not loaded"
            return channel.Later(lambda: self._after_load(request, wait / 1000))
        return self._handler(request)

    def _after_load(self, request: dict[str, Any], wait_s: float) -> Callable[[], dict[str, Any]] | str:
        deadline = time.monotonic() + wait_s
        while not self._ready():
            if time.monotonic() > deadline or not self._loading():
                return "the embedding model did not load in time"
            time.sleep(0.02)
        found = self._handler(request)
        return found.resolve() if isinstance(found, channel.Later) else found

    def _handler(
        self, request: dict[str, Any], semantic: bool = True
    ) -> Callable[[], dict[str, Any]] | str | channel.Later:
        event, payload, env, cwd = (request.get(k) for k in ("event", "payload", "env", "cwd"))
        settings = self._settings_of(env)
        if isinstance(settings, str):
            return settings
        if paths.db_key(settings.db) != self._db:
            return "another database"
        if settings.embed_model != self.settings.embed_model:
            return "another embedding model"
        settings = scoped(settings, cwd if isinstance(cwd, str) and cwd else None)

        def handler() -> Callable[[], dict[str, Any]]:
            svc, lock = self._service(settings)
            if semantic and event == "UserPromptSubmit" and isinstance(payload, dict):
                handlers.embed_ahead(settings, svc, payload)  # while the hook confirms ("go")

            def handle() -> dict[str, Any]:
                with lock:  # one event at a time per connection: apsw is not for two threads at once
                    return {"ok": True, "output": handlers.run(event, payload, settings, svc, semantic=semantic)}

            return handle

        wait = request.get("wait_ms")
        if self._has_service(settings) or not isinstance(wait, int) or wait <= 0:
            return handler()
        # A service for these settings is opened first (a store connection: tens of ms, more on a
        # busy machine): the hook is told to wait for it rather than give up on its short budget.
        return channel.Later(handler)

    def _settings_of(self, env: dict[Any, Any]) -> Settings | str:
        """The settings a hook with this MNEMO_ environment reads, or why they are invalid. Read
        once per distinct environment (pydantic-settings took ~1.5 ms of every event): they
        depend only on it and on this process's own environment."""
        key = tuple(sorted((str(k), str(v)) for k, v in env.items()))
        with self._lock:
            found = self._read.get(key)
            if found is not None:
                self._read.move_to_end(key)
        if found is None:
            try:
                found = Settings.from_env(dict(key))
            except ValidationError as err:
                found = f"the hook's MNEMO_ settings are invalid: {err.errors()[0].get('msg', err)}"
            with self._lock:
                self._read[key] = found
                while len(self._read) > SETTINGS_KEPT:
                    self._read.popitem(last=False)
        return found

    def _has_service(self, settings: Settings) -> bool:
        with self._lock:
            return settings.model_dump_json() in self._services

    def _service(self, settings: Settings) -> tuple[MemoryService, threading.Lock]:
        key = settings.model_dump_json()
        with self._lock:
            if key in self._services:
                self._services.move_to_end(key)
                return self._services[key]
            entry = (MemoryService(settings, self._embedder), threading.Lock())
            self._services[key] = entry
            while len(self._services) > SERVICES_KEPT:
                _, (old, old_lock) = self._services.popitem(last=False)
                with old_lock:
                    old.close()
            return entry

    def close(self) -> None:
        with self._lock:
            for svc, lock in self._services.values():
                with lock:
                    svc.close()
            self._services.clear()
