"""The `mnemo-mcp` command. Claude Code runs `mnemo-mcp hook EVENT` for every hook event, so
that path imports nothing but the hook entry point; the bare server (`mnemo-mcp`, `mnemo-mcp
serve`) imports no more than the MCP SDK before it answers `initialize` (its settings are read
once the handshake is done); everything else goes to the CLI."""

from __future__ import annotations

import sys


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "hook" and not argv[1].startswith("-"):
        from .hooks.entry import main as hook_main

        return hook_main(argv[1])
    if argv in ([], ["serve"]):
        import logging

        from .server import serve

        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="mnemo-mcp: %(levelname)s %(message)s")
        serve()
        return 0
    from .cli import main as cli_main

    return cli_main(argv)
