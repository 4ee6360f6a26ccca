"""The `mnemo-mcp` command. Claude Code runs `mnemo-mcp hook EVENT` for every hook event, so
that path imports nothing but the hook entry point; the bare server (`mnemo-mcp`, `mnemo-mcp
serve`) answers the MCP 2026-07-28 `server/discover` probe before it imports anything (probe.py)
and imports no more than the MCP SDK before it answers `initialize` (its settings are read once
the handshake is done); everything else goes to the CLI."""

from __future__ import annotations

import sys


def _server_without_uvicorn():
    """`server.serve`, imported with `import uvicorn` failing meanwhile. The SDK's HTTP
    transport imports sse_starlette, which imports uvicorn (and with it click, multiprocessing,
    logging.config) only to patch uvicorn's shutdown, inside `try: ... except ImportError`
    ("graceful shutdown disabled"). A stdio server never runs uvicorn, and those imports were
    ~3 MB of every server's private memory. Afterwards `import uvicorn` works again."""
    blocked = "uvicorn" not in sys.modules
    if blocked:
        sys.modules["uvicorn"] = None  # type: ignore[assignment]  # a None entry: import raises ImportError
    try:
        from .server import serve
    finally:
        if blocked and sys.modules.get("uvicorn", 0) is None:
            del sys.modules["uvicorn"]
    return serve


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "hook" and not argv[1].startswith("-"):
        from .hooks.entry import main as hook_main

        return hook_main(argv[1])
    if argv in ([], ["serve"]):
        import logging
        import os

        if os.environ.get("MNEMO_HOOK_SERVER", "1").strip().lower() not in ("0", "false", "no", "off"):
            from . import paths
            from .hooks import channel

            # The session's first prompt comes before the server is up: it finds this socket and
            # waits for the server's recall by meaning instead of falling back to keywords.
            channel.listen_early(paths.db_path(paths.mnemo_env()))
        if os.environ.get("MNEMO_EARLY_DISCOVER", "1") != "0":
            from .probe import answer_early

            answer_early()  # Claude Code's first probe answered before the SDK is even imported
        serve = _server_without_uvicorn()

        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="mnemo-mcp: %(levelname)s %(message)s")
        serve()
        return 0
    from .cli import main as cli_main

    return cli_main(argv)
