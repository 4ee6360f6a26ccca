"""Running the dashboard: a loopback socket, uvicorn, the per-run token, the browser."""

from __future__ import annotations

import logging
import secrets
import socket
import threading
import time
import webbrowser
from typing import Any

import uvicorn

from .app import create_app

HOST = "127.0.0.1"  # loopback only, never configurable: the token is the only other lock


class DashboardServer:
    """The dashboard for one service on 127.0.0.1:`port` (0: any free port). The socket is
    bound here, before the app exists, so the Host/Origin checks know the real port."""

    def __init__(self, service: Any, port: int = 0):
        self.service = service
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.bind((HOST, port))
            # Listening now, not when uvicorn starts: a browser that opens the printed URL at
            # once (or a slow start on a loaded machine) waits in the backlog instead of being refused.
            self.sock.listen(128)
        except OSError:
            self.sock.close()
            raise
        self.port = self.sock.getsockname()[1]
        self.token = secrets.token_urlsafe(32)
        self.app = create_app(service, port=self.port, token=self.token)
        self.url = f"http://{HOST}:{self.port}/?token={self.token}"
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve until Ctrl-C (uvicorn handles the signal and returns)."""
        try:
            self.server.run(sockets=[self.sock])
        finally:
            self.sock.close()

    def start(self, timeout: float = 10.0) -> DashboardServer:
        """Serve from a background thread (tests, scripts); returns once it accepts requests."""
        self._thread = threading.Thread(target=self.run, name="mnemo-dashboard", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the dashboard server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)


def serve(settings: Any, port: int = 0, open_browser: bool = True) -> int:
    """`mnemo-mcp dashboard`: serve the database of `settings` until interrupted."""
    from ..service import MemoryService

    service = MemoryService(settings)
    try:
        # Searching needs the embedding model; load it now rather than on the first search.
        threading.Thread(target=service.warm_up, name="mnemo-warm-up", daemon=True).start()
        dash = DashboardServer(service, port)
        print(f"mnemo-mcp dashboard: {dash.url}", flush=True)
        print("(only this URL, with its token, opens it; Ctrl-C stops it)", flush=True)
        if open_browser:
            threading.Thread(target=_open_when_up, args=(dash,), daemon=True).start()
        dash.run()
    finally:
        service.close()
    return 0


def _open_when_up(dash: DashboardServer) -> None:
    deadline = time.monotonic() + 10
    while not dash.server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        webbrowser.open(dash.url)
    except Exception as err:  # no browser: the printed URL still works
        logging.getLogger("mnemo_mcp.web").warning("could not open a browser: %s", err)
