"""Run Gemini CLI, Codex CLI or opencode offline against an `AgentEndpoint`, with mnemo
registered the way a user does it (`mnemo-mcp install <agent>`), in a throwaway HOME and a
throwaway git project:

    with AgentEndpoint(script) as ep:
        sb = AgentSandbox.create(tmp_path, "gemini", ep)
        sb.mnemo("write", "The demo project builds with make.")
        run = sb.prompt("How do I build the demo project?")

What each agent needs besides the installer's entries (measured on the pinned versions): Gemini
CLI an API-key auth type, the project in trustedFolders.json and `--yolo` (else `-p` declares no
MCP tool); Codex CLI a model provider at the endpoint, the project trusted and, for hooks,
the hooks trusted (which `mnemo-mcp install codex` does, asking
`codex app-server` for their hashes: an untrusted hook is skipped silently); opencode a provider
and model. MNEMO_DB and the test embedder are added to the server entry's env as the README tells
a user who keeps the database elsewhere (Gemini CLI and Codex CLI filter what MCP servers
inherit); hooks inherit them from the CLI's environment.

Binaries: MNEMO_GEMINI_BIN, MNEMO_CODEX_BIN, MNEMO_OPENCODE_BIN, else the name on PATH. With
MNEMO_REQUIRE_AGENTS=1 (CI) a missing one fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_cli.driver import mnemo_bin, run_in_group

from .endpoint import AgentEndpoint

VERSIONS = {"gemini": "0.61.0", "codex": "0.171.0", "opencode": "1.18.33"}
PACKAGES = {"gemini": "@google/gemini-cli", "codex": "@openai/codex", "opencode": "opencode-ai"}
RUN_TIMEOUT = 120.0
HASH_EMBEDDER = "mnemo-hash-64"
MAKEFILE = """\
test:
\t@echo "test_build PASSED"; echo "1 passed"
broken:
\t@echo "test_build FAILED: ModuleNotFoundError: No module named 'demo_config'"; echo "1 failed"; exit 1
"""


def agent_bin(agent: str) -> str | None:
    configured = os.environ.get(f"MNEMO_{agent.upper()}_BIN")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which(agent)


def agents_required() -> bool:
    return os.environ.get("MNEMO_REQUIRE_AGENTS") == "1"


def missing_reason(agent: str) -> str:
    return (
        f"{agent} is not installed: set MNEMO_{agent.upper()}_BIN or put `{agent}` on PATH "
        f"(npm install --prefix DIR {PACKAGES[agent]}@{VERSIONS[agent]})"
    )


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return f"exit {self.returncode} after {self.seconds:.1f}s\nstdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}"


@dataclass
class AgentSandbox:
    root: Path
    agent: str
    binary: str
    endpoint: AgentEndpoint
    store: Path | None = None  # a database shared with other sandboxes (default: one of its own)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "proj"

    @property
    def db(self) -> Path:
        return self.store or self.root / "mnemo.db"

    @property
    def hook_log(self) -> Path:
        return self.root / "hooks.log"

    @classmethod
    def create(
        cls, root: Path, agent: str, binary: str, endpoint: AgentEndpoint, store: Path | None = None
    ) -> AgentSandbox:
        sb = cls(root, agent, binary, endpoint, store)
        sb.home.mkdir(parents=True)
        sb.project.mkdir()
        (sb.project / "Makefile").write_text(MAKEFILE)
        (sb.project / "README.md").write_text("demo\n")
        for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "i"]):
            subprocess.run(["git", *args], cwd=sb.project, check=True, capture_output=True)
        getattr(sb, f"_before_{agent}")()
        sb.install()
        getattr(sb, f"_after_{agent}")()
        return sb

    def mnemo_env(self) -> dict[str, str]:
        return {"MNEMO_DB": str(self.db), "MNEMO_EMBED_MODEL": HASH_EMBEDDER, "MNEMO_HOOK_LOG": str(self.hook_log)}

    def server_env(self) -> dict[str, str]:
        """The server entry's env: the database, and the checkout under test when PYTHONPATH names one."""
        extra = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
        return self.mnemo_env() | extra

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "TERM", "PYTHONPATH", "TMPDIR", "SYSTEMROOT")
        env = {k: v for k, v in os.environ.items() if k in keep}
        # The agent on PATH, as for a user: `mnemo-mcp install codex` asks it which hooks to trust.
        env["PATH"] = os.pathsep.join(
            [str(Path(mnemo_bin()).parent), str(Path(self.binary).parent), env.get("PATH", "")]
        )
        env |= {"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"), "NO_COLOR": "1"}
        env |= {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": self.endpoint.url, "MOCK_API_KEY": "dummy"}
        env |= {"CODEX_HOME": str(self.home / ".codex"), "GEMINI_CLI_NO_RELAUNCH": "true"}
        # opencode installs its plugin package (@opencode-ai/plugin) from npm when it has a plugin:
        # the endpoint's empty registry makes that fail at once, offline (mnemo's plugin needs none).
        env |= {"OPENCODE_DISABLE_AUTOUPDATE": "1", "npm_config_registry": f"{self.endpoint.url}/npm/"}
        return env | self.mnemo_env()

    def mnemo(self, *args: str) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([mnemo_bin(), *args], cwd=self.project, env=self.env(), capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p

    def mnemo_json(self, *args: str) -> Any:
        return json.loads(self.mnemo("--json", *args).stdout)

    def install(self) -> str:
        return self.mnemo("install", self.agent).stdout

    def hook_log_text(self) -> str:
        return self.hook_log.read_text() if self.hook_log.exists() else ""

    def prompt(self, text: str, resume: bool = False) -> Run:
        """One non-interactive run; `resume`: in the session of the last run."""
        argv = {
            "gemini": [self.binary, "-p", text, "-m", "gemini-2.5-flash", "--yolo", *(["--resume", "latest"] * resume)],
            "codex": [self.binary, "exec", "--skip-git-repo-check"]
            + (["resume", "--last", text] if resume else [text]),
            "opencode": [self.binary, "run", *(["--continue"] * resume), text],
        }[self.agent]
        if self.agent == "opencode":
            # `opencode run` exits leaving the lock of its background plugin-package install (seen
            # with 1.18.33 and no registry), and the next run waits about a minute for it to go stale.
            shutil.rmtree(self.home / ".local" / "state" / "opencode" / "locks", ignore_errors=True)
        return Run(*run_in_group(argv, self.project, self.env(), RUN_TIMEOUT))

    # What each agent needs that is not mnemo's --------------------------------------------------
    def _json(self, path: Path) -> dict[str, Any]:
        return json.loads(path.read_text()) if path.exists() else {}

    def _put_json(self, path: Path, data: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))

    def _before_gemini(self) -> None:
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
        }
        self._put_json(self.home / ".gemini" / "settings.json", settings)
        self._put_json(self.home / ".gemini" / "trustedFolders.json", {str(self.project): "TRUST_FOLDER"})

    def _after_gemini(self) -> None:
        path = self.home / ".gemini" / "settings.json"
        data = self._json(path)
        data["mcpServers"]["mnemo"]["env"] = self.mnemo_env()  # it refuses PYTHONPATH here, and passes its own on
        self._put_json(path, data)

    def _before_codex(self) -> None:
        # A user's own config, with our table's env written by them: install must keep both.
        env = ", ".join(f"{k} = {json.dumps(v)}" for k, v in self.server_env().items())
        (self.home / ".codex").mkdir()
        (self.home / ".codex" / "config.toml").write_text(
            f'# the user\'s own settings\nmodel = "mock-model"\nmodel_provider = "mock"\n\n'
            f'[model_providers.mock]\nname = "Mock"\nbase_url = "{self.endpoint.url}/v1"\n'
            f'wire_api = "responses"\nenv_key = "MOCK_API_KEY"\n\n'
            f'[projects."{self.project}"]\ntrust_level = "trusted"\n\n[mcp_servers.mnemo]\nenv = {{ {env} }}\n'
        )

    def _after_codex(self) -> None:
        pass

    def _before_opencode(self) -> None:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": f"{self.endpoint.url}/v1", "apiKey": "dummy"},
            "models": {"mock-model": {"name": "Mock model", "tool_call": True}},
        }
        config = {"model": "mock/mock-model", "provider": {"mock": provider}, "autoupdate": False}
        self._put_json(self.home / ".config" / "opencode" / "opencode.json", config)

    def _after_opencode(self) -> None:
        path = self.home / ".config" / "opencode" / "opencode.json"
        data = self._json(path)
        data["mcp"]["mnemo"]["environment"] = self.server_env()
        self._put_json(path, data)
