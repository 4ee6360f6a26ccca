"""Run the real Claude Code CLI (`claude -p`) offline against a `ScriptedEndpoint`, with mnemo
registered the way a user does it, in a throwaway HOME and a throwaway project.

    with ScriptedEndpoint(script) as ep:
        cc = ClaudeSandbox.create(tmp_path, ep)    # HOME, project (git repo + Makefile), install
        cc.mnemo("write", "Webhook retries: ...")  # the same MNEMO_DB the server and hooks use
        first = cc.prompt("why does the webhook retry test fail?")
        again = cc.prompt("thanks, that worked", resume=first.session_id)

Layout under the given directory: `home/` (HOME: ~/.claude.json, ~/.claude/settings.json),
`proj/` (the project, cwd of the CLI), `mnemo.db` (MNEMO_DB), `hooks.log` (MNEMO_HOOK_LOG),
`claude-debug-N.log` (the CLI's debug log for prompt N, with its hook and MCP lines).

Registration: `mnemo-mcp install claude --scope user` run with HOME set to the throwaway home,
then, as the README tells a user who keeps the database elsewhere, MNEMO_DB (and the embedder)
added to the server entry's `env` in ~/.claude.json. The hooks get them from the CLI's own
environment, which Claude Code passes to hook commands (and also to the MCP server, so the
entry's `env` is belt and braces). `scope="project"` writes .mcp.json + .claude/settings.json
in the project instead, and pre-approves the server (`enableAllProjectMcpServers`).

First-run prompts: with `-p` the CLI (2.1.332) shows none: no onboarding, no trust dialog, and
project `.mcp.json` servers connect without approval (measured: a bare HOME works). The home is
still seeded with what a person who went through those screens has (onboarding done, project
trusted; `enableAllProjectMcpServers` for project scope), so the same HOME also works
interactively, and the CLI runs with stdin closed, its own process group and a timeout, so
nothing can wait for input or outlive the test. Bash and the mnemo tools are allowed with
`--allowedTools` (not bypassPermissions, which the CLI refuses to root).

The CLI is found by `claude_bin()`: env MNEMO_CLAUDE_BIN, else `claude` on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .endpoint import ScriptedEndpoint

CLI_VERSION = "2.1.332"  # the version the facts in this harness were measured on
PROMPT_TIMEOUT = 90.0  # seconds for one `claude -p` run
HASH_EMBEDDER = "mnemo-hash-64"  # mnemo's small deterministic test embedder: no model load

MAKEFILE = """\
# `make test` fails (exit 2 from make) until the file FIXED exists.
test:
\t@if [ -f FIXED ]; then echo "test_webhook_retry PASSED"; echo "1 passed"; \\
\telse echo "test_webhook_retry FAILED: retry gave up after the first 500"; echo "1 failed"; exit 1; fi
"""


def claude_bin() -> str | None:
    """The Claude Code CLI to drive: MNEMO_CLAUDE_BIN, else `claude` on PATH, else None."""
    configured = os.environ.get("MNEMO_CLAUDE_BIN")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("claude")


def claude_required() -> bool:
    return os.environ.get("MNEMO_REQUIRE_CLAUDE") == "1"


def missing_reason() -> str:
    configured = os.environ.get("MNEMO_CLAUDE_BIN")
    if configured:
        return f"MNEMO_CLAUDE_BIN={configured} is not an executable file"
    return (
        "the Claude Code CLI is not installed: set MNEMO_CLAUDE_BIN or put `claude` on PATH "
        f"(npm install --prefix DIR @anthropic-ai/claude-code@{CLI_VERSION})"
    )


def mnemo_bin() -> str:
    """The `mnemo-mcp` of the Python running the tests (its venv), else the one on PATH."""
    here = Path(sys.executable).parent / "mnemo-mcp"
    if here.exists():
        return str(here)
    found = shutil.which("mnemo-mcp")
    if not found:
        raise RuntimeError("mnemo-mcp is not installed in this environment (pip install -e .)")
    return found


@dataclass
class Result:
    """One `claude -p` run: the exit code, the parsed `--output-format json` result, timings."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    json: dict[str, Any] | None
    debug_log: Path | None

    @property
    def session_id(self) -> str:
        assert self.json and self.json.get("session_id"), f"no session id in the CLI output:\n{self.describe()}"
        return self.json["session_id"]

    @property
    def text(self) -> str:
        return (self.json or {}).get("result") or ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and bool(self.json) and not self.json.get("is_error")

    def debug(self) -> str:
        return self.debug_log.read_text(errors="replace") if self.debug_log and self.debug_log.exists() else ""

    def describe(self) -> str:
        return f"exit {self.returncode} after {self.seconds:.1f}s\nstdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}"


@dataclass
class ClaudeSandbox:
    root: Path
    endpoint: ScriptedEndpoint
    claude: str
    mnemo_exe: str
    scope: str = "user"
    embed_model: str | None = HASH_EMBEDDER
    allowed_tools: tuple[str, ...] = ("Bash", "mcp__mnemo")
    extra_env: dict[str, str] = field(default_factory=dict)
    runs: list[Result] = field(default_factory=list)

    home: Path = field(init=False)
    project: Path = field(init=False)
    db: Path = field(init=False)
    hook_log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "proj"
        self.db = self.root / "mnemo.db"
        self.hook_log = self.root / "hooks.log"

    # Setup -----------------------------------------------------------------------------------
    @classmethod
    def create(
        cls, root: Path, endpoint: ScriptedEndpoint, claude: str | None = None, install: bool = True, **kwargs: Any
    ) -> ClaudeSandbox:
        claude = claude or claude_bin()
        if not claude:
            raise RuntimeError(missing_reason())
        sb = cls(Path(root), endpoint, claude, kwargs.pop("mnemo_exe", None) or mnemo_bin(), **kwargs)
        sb.make_home()
        sb.make_project()
        if install:
            sb.install()
        return sb

    def make_home(self) -> None:
        (self.home / ".claude").mkdir(parents=True, exist_ok=True)
        # What the CLI records once a person has gone through its first-run screens.
        self.update_json(
            self.home / ".claude.json",
            lambda d: d.update(
                {
                    "hasCompletedOnboarding": True,
                    "lastOnboardingVersion": CLI_VERSION,
                    "hasSeenTasksHint": True,
                    "autoUpdates": False,
                    "projects": {
                        **d.get("projects", {}),
                        str(self.project): {
                            "hasTrustDialogAccepted": True,
                            "hasCompletedProjectOnboarding": True,
                            "allowedTools": [],
                        },
                    },
                }
            ),
        )

    def make_project(self) -> None:
        self.project.mkdir(parents=True, exist_ok=True)
        (self.project / "Makefile").write_text(MAKEFILE)
        (self.project / "README.md").write_text("# shop-api\nA webhook service.\n")
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
            subprocess.run([*git, *args], cwd=self.project, check=True, capture_output=True, timeout=30)

    def set_fixed(self, fixed: bool = True) -> None:
        """Make `make test` pass (True) or fail (False)."""
        marker = self.project / "FIXED"
        if fixed:
            marker.write_text("yes\n")
        else:
            marker.unlink(missing_ok=True)

    def install(self) -> str:
        """`mnemo-mcp install claude --scope SCOPE` as a user runs it, then MNEMO_DB into the entry's env."""
        out = self.mnemo("install", "claude", "--scope", self.scope).stdout
        mcp_file = self.home / ".claude.json" if self.scope == "user" else self.project / ".mcp.json"
        server_env = {"MNEMO_DB": str(self.db), "MNEMO_HOOK_LOG": str(self.hook_log)}
        if self.embed_model:
            server_env["MNEMO_EMBED_MODEL"] = self.embed_model
        self.update_json(mcp_file, lambda d: d["mcpServers"]["mnemo"].setdefault("env", {}).update(server_env))
        if self.scope == "project":
            self.update_json(
                self.project / ".claude" / "settings.json", lambda d: d.update({"enableAllProjectMcpServers": True})
            )
        return out

    @staticmethod
    def update_json(path: Path, change) -> dict[str, Any]:
        data = json.loads(path.read_text()) if path.exists() and path.read_text().strip() else {}
        change(data)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
        return data

    @property
    def settings_path(self) -> Path:
        return (
            self.home / ".claude" / "settings.json"
            if self.scope == "user"
            else self.project / ".claude" / "settings.json"
        )

    # Environment -----------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TZ", "PYTHONPATH")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            {
                "HOME": str(self.home),
                "USER": os.environ.get("USER", "dev"),
                "SHELL": "/bin/bash",
                "TERM": "dumb",
                "TMPDIR": str(self.root / "tmp"),
                "ANTHROPIC_BASE_URL": self.endpoint.url,
                "ANTHROPIC_API_KEY": "sk-ant-scripted-dummy-key",
                # Nothing of the CLI's own goes to the network: no updater, telemetry, error reports.
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1",
                "MNEMO_DB": str(self.db),
                "MNEMO_HOOK_LOG": str(self.hook_log),
            }
        )
        if self.embed_model:
            env["MNEMO_EMBED_MODEL"] = self.embed_model
        # The venv's bin first, so `mnemo-mcp` and the venv's python are found as a user's shell would.
        env["PATH"] = f"{Path(self.mnemo_exe).parent}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env.update(self.extra_env)
        (self.root / "tmp").mkdir(exist_ok=True)
        return env

    # Running ---------------------------------------------------------------------------------
    def mnemo(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run `mnemo-mcp ARGS` in the project with the sandbox's environment (same MNEMO_DB)."""
        p = subprocess.run(
            [self.mnemo_exe, *args],
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if check and p.returncode != 0:
            raise RuntimeError(f"mnemo-mcp {' '.join(args)} failed ({p.returncode}): {p.stderr}")
        return p

    def mnemo_json(self, *args: str) -> Any:
        return json.loads(self.mnemo("--json", *args).stdout)

    def prompt(
        self,
        text: str,
        resume: str | None = None,
        timeout: float = PROMPT_TIMEOUT,
        extra_args: tuple[str, ...] = (),
        debug: bool = True,
    ) -> Result:
        """One `claude -p TEXT --output-format json` (with `--resume SESSION` for a later prompt)."""
        args = [self.claude, "-p", text, "--output-format", "json"]
        if resume:
            args += ["--resume", resume]
        if self.allowed_tools:
            args += ["--allowedTools", ",".join(self.allowed_tools)]
        debug_log = self.root / f"claude-debug-{len(self.runs) + 1}.log" if debug else None
        if debug_log:
            args += ["--debug-file", str(debug_log)]
        args += list(extra_args)
        rc, out, err, seconds = run_in_group(args, self.project, self.env(), timeout)
        try:
            parsed = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
        except ValueError:
            parsed = None
        result = Result(rc, out, err, seconds, parsed if isinstance(parsed, dict) else None, debug_log)
        self.runs.append(result)
        return result

    def hook_log_text(self) -> str:
        return self.hook_log.read_text(errors="replace") if self.hook_log.exists() else ""


def run_in_group(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str, float]:
    """Run a CLI with stdin closed in its own process group, so a timeout ends it and everything
    it started (MCP server, hooks). -> (exit code, stdout, stderr, seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        rc, err = -9, err + f"\n[{Path(args[0]).name} timed out after {timeout}s and was killed]"
    return rc, out, err, time.monotonic() - start


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
