"""The `mnemo-mcp` command. Claude Code runs `mnemo-mcp hook EVENT` for every hook event (other
clients `mnemo-mcp hook --client CLIENT EVENT`), so that path imports nothing but the hook entry
point; the bare server (`mnemo-mcp`, `mnemo-mcp serve`) answers the MCP 2026-07-28
`server/discover` probe before it imports anything (probe.py) and imports no more than the MCP
SDK before it answers `initialize` (its settings are read once the handshake is done);
everything else goes to the CLI."""

from __future__ import annotations

import sys

# Packages whose `__init__` runs only when one of its names is asked for (see _deferred):
# `mcp`'s imports the SDK's client side (Client; stdio, SSE, streamable-HTTP transports; session
# groups) for its names, and the server imports only its submodules (`mcp.server.mcpserver`);
# `httpx2` is imported by the SDK's resources module for the HTTP resources a server may define
# (mnemo defines none). ~1.2 and ~2.5 MB of every server's private memory.
DEFERRED_PACKAGES = ("mcp", "httpx2")


def _deferred(name: str) -> None:
    """Put the package `name` in sys.modules with its `__init__` not run yet: the first
    attribute asked of it (`from mcp import Client`, `httpx2.AsyncClient`) runs it in the same
    module object, then answers. Its submodules import as before."""
    import importlib.util
    import threading

    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)
    lock = threading.Lock()

    def complete(attribute: str):
        with lock:
            if package.__dict__.get("__getattr__") is complete:
                del package.__dict__["__getattr__"]
                spec.loader.exec_module(package)  # the real __init__
        try:
            return package.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    package.__dict__["__getattr__"] = complete
    sys.modules[name] = package


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


def nothing_left_at_exit() -> bool:
    """True when ending the process at once loses nothing: no thread was ever started (the
    `threading` module is not even imported) and no exit function is registered (`atexit`:
    logging's flush, a thread pool's join). A hook answered by a server ends this way; one that
    handled its event itself (the store, logging) does not."""
    import atexit

    count = getattr(atexit, "_ncallbacks", None)  # CPython's; elsewhere: assume there are some
    return "threading" not in sys.modules and count is not None and count() == 0


def _hook_exit(code: int) -> int:
    """The hook's exit: its output flushed, then, when nothing is left to run (see
    nothing_left_at_exit), without the interpreter's teardown, which freed every imported module
    one by one (~5 ms of a hook's ~50 here, measured against the normal exit)."""
    if not nothing_left_at_exit():
        return code
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away: the normal exit would not have delivered it either
        pass
    os._exit(code)


class SiteOnDemand:
    """The last finder on sys.meta_path of a hook started with `python -S` (the command the
    installers write: installers/hook_start.py). A hook's usual path imports only the standard
    library and mnemo_mcp; the first import that nothing else finds (pydantic, for a hook that
    handles its event itself) runs `site.main()`, which does what a normal start does (the
    virtualenv's site-packages, the user's, the .pth files), and is then looked up again."""

    done = False

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        # A standard-library name nothing found (`_winapi` on Linux, tried by a module within
        # `try`) or a submodule (its package was found) is not in site-packages either.
        if cls.done or path is not None or name.partition(".")[0] in sys.stdlib_module_names:
            return None
        cls.done = True
        import site

        site.main()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not cls else None
            spec = find(name, path, target) if find else None
            if spec is not None:
                return spec
        return None


def _hook_args(argv: list[str]) -> tuple[str, str] | None:
    """(event, client) of the two forms the installers write, `hook EVENT` and `hook --client
    CLIENT EVENT`; None for anything else (the CLI parses it and explains its errors)."""
    if len(argv) == 2 and argv[0] == "hook" and not argv[1].startswith("-"):
        return argv[1], "claude"
    if len(argv) == 4 and argv[:2] == ["hook", "--client"] and not argv[3].startswith("-"):
        from .hooks.clients import CLIENTS

        if argv[2] in CLIENTS:
            return argv[3], argv[2]
    return None


def main() -> int:
    argv = sys.argv[1:]
    hook = _hook_args(argv)
    if hook is not None:
        if sys.flags.no_site and not any(f is SiteOnDemand for f in sys.meta_path):
            sys.meta_path.append(SiteOnDemand)
        from .hooks.entry import main as hook_main

        return _hook_exit(hook_main(*hook))
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
        for package in DEFERRED_PACKAGES:
            _deferred(package)
        serve = _server_without_uvicorn()

        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="mnemo-mcp: %(levelname)s %(message)s")
        serve()
        return 0
    from .cli import main as cli_main

    return cli_main(argv)
