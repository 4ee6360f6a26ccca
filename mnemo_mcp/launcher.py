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


# Modules the SDK's request-state module (MCP 2026-07-28) imports names from for its default
# codec, AES-GCM. The server passes its own codec (request_state.py), so none of these names is
# ever used: while the server is imported they are stand-ins (see StandIn), and `cryptography`
# (its Rust extension, cffi, OpenSSL's bindings: ~6 MB of a server's private memory) stays out.
STAND_IN_MODULES = (
    "cryptography.exceptions",
    "cryptography.hazmat.primitives.ciphers.aead",
    "cryptography.hazmat.primitives.hashes",
    "cryptography.hazmat.primitives.kdf.hkdf",
)


class StandIn:
    """A name imported from a module that was not loaded: the first use (a call, an attribute,
    a subclass, isinstance) loads the module and is answered by the real object. Only an
    `except` clause naming it could not use it; the SDK's names above appear in one only on
    the path of the codec the server does not use."""

    __slots__ = ("_module", "_name")

    def __init__(self, module: str, name: str) -> None:
        self._module, self._name = module, name

    def resolve(self):
        import importlib

        if getattr(sys.modules.get(self._module), "__mnemo_stand_in__", False):
            del sys.modules[self._module]  # still inside the import below: load the real one
        return getattr(importlib.import_module(self._module), self._name)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, attribute: str):
        return getattr(self.resolve(), attribute)

    def __mro_entries__(self, bases):
        return (self.resolve(),)

    def __instancecheck__(self, instance) -> bool:
        return isinstance(instance, self.resolve())

    def __subclasscheck__(self, subclass) -> bool:
        return issubclass(subclass, self.resolve())

    def __repr__(self) -> str:
        return f"<stand-in for {self._module}.{self._name}>"


def _stand_in_module(name: str):
    import types

    module = types.ModuleType(name)
    module.__mnemo_stand_in__ = True

    def attribute(attr: str):
        if attr.startswith("__"):  # the import system's probes (__path__, __spec__, ...)
            raise AttributeError(attr)
        return StandIn(name, attr)

    module.__getattr__ = attribute
    return module


def lean_server_import():
    """`server.serve`, imported without what a stdio server never runs:
    - uvicorn: the SDK's HTTP transport imports sse_starlette, which imports uvicorn (and with it
      click, multiprocessing, logging.config) only to patch uvicorn's shutdown, inside `try: ...
      except ImportError` ("graceful shutdown disabled"); ~3 MB of every server's private memory;
    - `cryptography`, through the stand-ins of STAND_IN_MODULES.
    Afterwards `import uvicorn` and `cryptography` work again (sys.modules is as before)."""
    blocked = "uvicorn" not in sys.modules
    if blocked:
        sys.modules["uvicorn"] = None  # type: ignore[assignment]  # a None entry: import raises ImportError
    placed = {}
    if "cryptography" not in sys.modules:  # loaded already: the SDK gets the real names
        for name in STAND_IN_MODULES:
            placed[name] = sys.modules[name] = _stand_in_module(name)
    try:
        from .server import serve
    finally:
        if blocked and sys.modules.get("uvicorn", 0) is None:
            del sys.modules["uvicorn"]
        for name, module in placed.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
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
        serve = lean_server_import()

        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="mnemo-mcp: %(levelname)s %(message)s")
        serve()
        return 0
    from .cli import main as cli_main

    return cli_main(argv)
