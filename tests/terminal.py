"""A person at a terminal: run a command with a pseudo-terminal as stdin and type an answer
once it asks (its question goes to stderr), as someone in their own shell would."""

from __future__ import annotations

import os
import select
import subprocess
import time


def answer_at_a_terminal(argv: list[str], env: dict[str, str], typed: str, cwd=None) -> tuple[int, str]:
    """-> (exit code, everything it printed)."""
    main, tty = os.openpty()
    proc = subprocess.Popen(
        argv, stdin=tty, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd, text=True
    )
    os.close(tty)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:  # it is asking
                os.write(main, (typed + "\n").encode())
                break
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(main)
    return proc.returncode, out + err
