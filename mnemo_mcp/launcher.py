"""The `mnemo-mcp` command. Claude Code runs `mnemo-mcp hook EVENT` for every hook event, so
that path imports nothing but the hook entry point; everything else goes to the CLI."""

from __future__ import annotations

import sys


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) == 2 and argv[0] == "hook" and not argv[1].startswith("-"):
        from .hooks.entry import main as hook_main

        return hook_main(argv[1])
    from .cli import main as cli_main

    return cli_main(argv)
