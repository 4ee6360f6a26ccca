"""The `mnemo-mcp` command. Claude Code runs `mnemo-mcp hook EVENT` for every hook event, so
that path imports nothing but the hook entry point; the bare server (`mnemo-mcp`, `mnemo-mcp
serve`) answers the MCP 2026-07-28 `server/discover` probe before it imports anything (probe.py)
and imports no more than the MCP SDK before it answers `initialize` (its settings are read once
the handshake is done); everything else goes to the CLI."""

from __future__ import annotations

import sys


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
        from .server import serve

        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="mnemo-mcp: %(levelname)s %(message)s")
        serve()
        return 0
    from .cli import main as cli_main

    return cli_main(argv)
