"""The program and arguments a client runs for each hook event: a fresh Python process per event,
whose start is most of what a hook costs.

Where it is safe, the hook runs as `<python> -S -P -c <boot> hook ...` instead of `<mnemo-mcp>
hook ...`: the interpreter named on the `mnemo-mcp` script's first line, without the `site` import
(-S: site-packages and their .pth files, which for an editable install run setuptools' finder
with pathlib, re and enum behind it) and without the working directory on sys.path (-P). The boot
appends the folder that holds `mnemo_mcp` (recorded here, at install) to sys.path and calls the
launcher as the script would; the launcher runs `site.main()` on the first import that nothing
else finds (launcher.SiteOnDemand), so a hook that needs site-packages still gets them. When that
folder no longer holds `mnemo_mcp` (the virtualenv rebuilt on another Python version), the boot
runs `site.main()` first and imports it from where the interpreter finds it.

"Where it is safe": an absolute `mnemo-mcp` script whose first line is `#!<absolute python>`
(pip's and pipx's scripts; not Windows' .exe launchers nor the `#!/bin/sh` trampoline written for
long paths), the Python installing being that script's (its prefix: so the recorded folder is the
one that script imports from), and the boot, run once here, importing this very launcher.
Otherwise, and for project files (they name `mnemo-mcp` and let PATH find it), the script itself.
Entries written before (`<mnemo-mcp> hook ...`) keep working as they are, and both forms are
recognised as ours (merge.is_ours).
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys

FLAGS = ("-S", "-P", "-c")
_TAIL = "from mnemo_mcp.launcher import main;sys.exit(main())"
PROBE_TIMEOUT_S = 20.0


def boot(folder: str, tail: str = _TAIL) -> str:
    """The `-c` program: `folder` (which holds mnemo_mcp) on sys.path, then `tail`."""
    d = json.dumps(folder, ensure_ascii=False)  # a Python string literal too
    path = 'sys.path.append(d) if os.path.isdir(d+"/mnemo_mcp") else __import__("site").main()'
    return f"import os,sys;d={d};{path};{tail}"


def is_boot(words: list[str]) -> bool:
    """True for `<python> -S -P -c <boot> ...` as written by hook_argv."""
    return len(words) > 4 and tuple(words[1:4]) == FLAGS and words[4].endswith(_TAIL) and "d=" in words[4]


def script_python(executable: str) -> str | None:
    """The interpreter on the first line of the script `executable` (`#!/abs/python`, no arguments)."""
    try:
        with open(executable, "rb") as f:
            first = f.readline(1024)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    python = first[2:].strip().decode("utf-8", "replace")
    if not python or not os.path.isabs(python) or any(c.isspace() for c in python):
        return None
    return python if os.access(python, os.X_OK) else None


def _installed_folder() -> str:
    """The folder that holds this `mnemo_mcp` package (site-packages, or an editable install's source)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _same_prefix(python: str) -> bool:
    """`python` is the interpreter of this environment (`<prefix>/bin/python3`)."""
    return os.path.realpath(os.path.dirname(os.path.dirname(python))) == os.path.realpath(sys.prefix)


def _boots(python: str, folder: str) -> bool:
    """The boot, run once: does it import this package's launcher, from `folder`?"""
    launcher = os.path.join(folder, "mnemo_mcp", "launcher.py")
    tail = "import mnemo_mcp.launcher as m;print(m.__file__)"
    try:
        done = subprocess.run(
            [python, *FLAGS, boot(folder, tail)],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            cwd=folder,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    out = done.stdout.strip()
    return done.returncode == 0 and bool(out) and os.path.realpath(out) == os.path.realpath(launcher)


@functools.lru_cache(maxsize=16)
def hook_argv(executable: str) -> tuple[str, ...]:
    """What to run before `hook [--client C] EVENT`: the quick start, else `(executable,)`."""
    if sys.platform.startswith("win") or not os.path.isabs(executable):
        return (executable,)
    python = script_python(executable)
    folder = _installed_folder()
    if python is None or not _same_prefix(python) or not _boots(python, folder):
        return (executable,)
    return (python, *FLAGS, boot(folder))


def hook_prefix(executable: str) -> str:
    """hook_argv as the start of a shell command line."""
    return shlex.join(hook_argv(executable))
