"""Registering with Codex CLI, Gemini CLI, opencode, Cursor and VS Code: each in its own format and
place, everything else in those files kept, idempotent, reversible, backed up, and nothing
touched when a file is broken. Cursor and VS Code cannot run here: their files are checked
against the schema their documentation gives (servers by name: command and args; VS Code's type)."""

from __future__ import annotations

import json
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from mnemo_mcp.cli import main
from mnemo_mcp.installers import detect
from mnemo_mcp.installers.agents import CLIENTS, Where, install, uninstall
from mnemo_mcp.installers.merge import InstallError

EXE = "/opt/venv/bin/mnemo-mcp"
NOW = datetime(2025, 1, 2, 3, 4, 5)
CODEX_CONFIG = """\
# my settings: kept, with this comment
model = "o3"

[mcp_servers.other]
command = "other-server"   # theirs

[projects."/home/dev/proj"]
trust_level = "trusted"
"""


@pytest.fixture
def where(tmp_path: Path) -> Where:
    (tmp_path / "home").mkdir()
    (tmp_path / "proj").mkdir()
    return Where(tmp_path / "home", tmp_path / "proj", {}, "linux")


def _file(where: Where, client: str, scope: str = "user", n: int = 0) -> Path:
    return CLIENTS[client].files(scope, where)[n]


def test_codex_gets_a_table_in_config_toml_and_every_other_line_stays_as_it_was(where: Where) -> None:
    config = _file(where, "codex")
    config.parent.mkdir(parents=True)
    config.write_text(CODEX_CONFIG)
    changes = install("codex", "user", EXE, where, now=NOW)
    text = config.read_text()
    assert text.startswith(CODEX_CONFIG)  # byte for byte, comments included
    data = tomllib.loads(text)
    assert data["mcp_servers"]["mnemo"] == {"command": EXE, "args": [], "required": True}
    assert data["mcp_servers"]["other"] == {"command": "other-server"}
    assert (config.parent / "config.toml.mnemo-backup-20250102T030405").read_text() == CODEX_CONFIG
    assert "added mcp_servers.mnemo" in [c.action for c in changes]
    hooks = json.loads(_file(where, "codex", n=1).read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}
    assert hooks["PostToolUse"][0]["matcher"] == "Bash|mcp__mnemo__memory_read"
    assert hooks["Stop"][0]["hooks"][0] == {
        "type": "command",
        "command": f"{EXE} hook --client codex Stop",
        "timeout": 10,
    }
    # Again: nothing to change, nothing written. Then uninstall restores the original bytes.
    assert install("codex", "user", EXE, where, now=NOW) == []
    uninstall("codex", "user", where, now=NOW)
    assert config.read_text() == CODEX_CONFIG
    assert json.loads(_file(where, "codex", n=1).read_text()) == {}


def test_codex_keeps_what_the_user_put_in_our_table_and_updates_a_moved_executable(where: Where) -> None:
    config = _file(where, "codex")
    config.parent.mkdir(parents=True)
    config.write_text(
        '[mcp_servers.mnemo]\ncommand = "/old/mnemo-mcp"\nrequired = false\nenv = { MNEMO_DB = "/d/m.db" }\n'
    )
    install("codex", "user", EXE, where, now=NOW)
    entry = tomllib.loads(config.read_text())["mcp_servers"]["mnemo"]
    assert entry == {"command": EXE, "args": [], "required": False, "env": {"MNEMO_DB": "/d/m.db"}}
    assert config.read_text().count("[mcp_servers.mnemo]") == 1


def test_codex_refuses_a_server_written_as_an_inline_table_and_changes_nothing(where: Where) -> None:
    config = _file(where, "codex")
    config.parent.mkdir(parents=True)
    original = '[mcp_servers]\nmnemo = { command = "/x/mnemo-mcp" }\n'
    config.write_text(original)
    with pytest.raises(InstallError, match=r"make it a \[mcp_servers.mnemo\] table"):
        install("codex", "user", EXE, where, now=NOW)
    assert config.read_text() == original and not _file(where, "codex", n=1).exists()


def test_codex_refuses_a_broken_config_toml_saying_where(where: Where) -> None:
    config = _file(where, "codex")
    config.parent.mkdir(parents=True)
    config.write_text("model = \n")
    with pytest.raises(InstallError, match="not valid TOML.*Nothing was changed"):
        install("codex", "user", EXE, where)


def test_codex_home_follows_codex_home_and_project_scope_uses_dot_codex(where: Where) -> None:
    moved = Where(where.home, where.project_dir, {"CODEX_HOME": str(where.home / "elsewhere")})
    assert _file(moved, "codex") == where.home / "elsewhere" / "config.toml"
    assert _file(where, "codex", "project", 1) == where.project_dir / ".codex" / "hooks.json"


def test_gemini_gets_its_server_and_hooks_in_settings_json_with_millisecond_timeouts(where: Where) -> None:
    settings = _file(where, "gemini")
    settings.parent.mkdir(parents=True)
    theirs = {"hooks": {"AfterTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "fmt"}]}]}}
    settings.write_text(json.dumps({"theme": "dark", "mcpServers": {"other": {"command": "o"}}, **theirs}))
    install("gemini", "user", EXE, where, now=NOW)
    data = json.loads(settings.read_text())
    assert data["theme"] == "dark" and data["mcpServers"]["other"] == {"command": "o"}
    assert data["mcpServers"]["mnemo"] == {"command": EXE, "args": []}
    assert set(data["hooks"]) == {"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent"}
    after = data["hooks"]["AfterTool"]
    assert after[0] == theirs["hooks"]["AfterTool"][0]  # theirs first, as before
    assert after[1]["matcher"] == "run_shell_command|mcp_mnemo_memory_read|replace|write_file"
    ours = after[1]["hooks"][0]
    assert ours["command"] == f"{EXE} hook --client gemini AfterTool" and ours["timeout"] == 10_000
    assert ours["name"] == "mnemo-AfterTool"
    assert install("gemini", "user", EXE, where, now=NOW) == []
    uninstall("gemini", "user", where, now=NOW)
    assert json.loads(settings.read_text()) == {"theme": "dark", "mcpServers": {"other": {"command": "o"}}, **theirs}


def test_gemini_without_hooks_gets_only_the_server(where: Where) -> None:
    install("gemini", "project", "mnemo-mcp", where, hooks=False, now=NOW)
    data = json.loads((where.project_dir / ".gemini" / "settings.json").read_text())
    assert data == {"mcpServers": {"mnemo": {"command": "mnemo-mcp", "args": []}}}


def test_opencode_gets_a_local_server_with_a_command_list(where: Where) -> None:
    install("opencode", "project", EXE, where, now=NOW)
    data = json.loads((where.project_dir / "opencode.json").read_text())
    assert data == {"mcp": {"mnemo": {"type": "local", "command": [EXE], "enabled": True}}}
    user = Where(where.home, where.project_dir, {"XDG_CONFIG_HOME": str(where.home / "xdg")})
    assert _file(user, "opencode") == where.home / "xdg" / "opencode" / "opencode.json"


def test_opencode_leaves_a_jsonc_config_alone_and_says_what_to_add(where: Where) -> None:
    jsonc = where.project_dir / "opencode.jsonc"
    jsonc.write_text('{ // mine\n "mcp": {} }\n')
    with pytest.raises(InstallError, match="JSONC.*by hand"):
        install("opencode", "project", EXE, where)
    assert jsonc.read_text() == '{ // mine\n "mcp": {} }\n' and not (where.project_dir / "opencode.json").exists()


def test_cursor_files_match_its_documented_schema(where: Where) -> None:
    for scope, path in (
        ("user", where.home / ".cursor" / "mcp.json"),
        ("project", where.project_dir / ".cursor" / "mcp.json"),
    ):
        install("cursor", scope, EXE, where, now=NOW)
        server = json.loads(path.read_text())["mcpServers"]["mnemo"]
        # cursor.com/docs/mcp: mcpServers.<name> with command (string), args (strings), env (object)
        assert isinstance(server["command"], str) and all(isinstance(a, str) for a in server["args"])
        assert isinstance(server["env"], dict) and set(server) <= {"command", "args", "env", "type", "url"}


@pytest.mark.parametrize(
    "platform, env, expected",
    [
        ("linux", {}, ".config/Code/User/mcp.json"),
        ("darwin", {}, "Library/Application Support/Code/User/mcp.json"),
        ("win32", {"APPDATA": "APPDATA"}, "Code/User/mcp.json"),
    ],
)
def test_vscode_files_match_its_documented_schema_in_each_place(where: Where, platform, env, expected) -> None:
    env = {k: str(where.home / v) for k, v in env.items()}
    here = Where(where.home, where.project_dir, env, platform)
    assert str(_file(here, "vscode")).endswith(expected)
    for scope in ("user", "project"):
        install("vscode", scope, EXE, here, now=NOW)
        data = json.loads(_file(here, "vscode", scope).read_text())
        # code.visualstudio.com MCP configuration reference: "servers" by name; stdio needs type and command.
        server = data["servers"]["mnemo"]
        assert server["type"] == "stdio" and isinstance(server["command"], str) and server["args"] == []
        assert set(data) <= {"servers", "inputs"}


@pytest.mark.parametrize("client", ["gemini", "opencode", "cursor", "vscode"])
def test_a_broken_json_file_is_refused_and_left_as_it_was(where: Where, client: str) -> None:
    path = _file(where, client, "project")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    with pytest.raises(InstallError, match="not valid JSON"):
        install(client, "project", EXE, where)
    assert path.read_text() == "{not json"


def test_detection_names_the_clients_found_and_what_it_would_change_without_writing(where: Where) -> None:
    (where.home / ".gemini").mkdir()
    report = detect.report(where, "user", which=lambda p: "/usr/bin/codex" if p == "codex" else None)
    assert "codex: the MCP server and hooks in" in report and "`codex` on PATH" in report
    assert "gemini: the MCP server and hooks in" in report and "cursor" not in report
    assert "nothing was changed" in report
    assert not (where.home / ".gemini" / "settings.json").exists() and not (where.home / ".codex").exists()
    assert "no MCP client found" in detect.report(
        Where(where.project_dir, where.project_dir, {}), "user", lambda p: None
    )


def test_the_command_line_installs_and_uninstalls_each_client(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    for client in ("codex", "gemini", "opencode", "cursor", "vscode"):
        assert main(["install", client]) == 0
        assert "added" in capsys.readouterr().out
        assert main(["install", client]) == 0
        assert capsys.readouterr().out.strip() == "nothing to change"
        assert main(["uninstall", client]) == 0
        assert "removed" in capsys.readouterr().out


# Answers `codex app-server`'s hooks/list as Codex 0.171.0 does (tests/test_agents_cli.py runs the
# real one): each hook of hooks.json with its key, command and a hash.
FAKE_CODEX = r"""#!PYTHON
import hashlib, json, os, sys
home = os.environ.get("CODEX_HOME") or os.path.join(os.environ["HOME"], ".codex")
path = os.path.join(home, "hooks.json")
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("id") == 1:
        print(json.dumps({"id": 1, "result": {}}), flush=True)
    if msg.get("id") == 2:
        print(json.dumps({"method": "configWarning", "params": {}}), flush=True)
        hooks = json.load(open(path)).get("hooks", {}) if os.path.exists(path) else {}
        out = []
        for event, groups in hooks.items():
            snake = "".join("_" + c.lower() if c.isupper() else c for c in event).lstrip("_")
            for g, group in enumerate(groups):
                for h, hook in enumerate(group["hooks"]):
                    digest = "sha256:" + hashlib.sha256(json.dumps(hook).encode()).hexdigest()
                    out.append({"key": f"{path}:{snake}:{g}:{h}", "command": hook["command"],
                                "currentHash": digest, "trustStatus": "untrusted"})
        print(json.dumps({"id": 2, "result": {"data": [{"cwd": ".", "hooks": out}]}}), flush=True)
"""


def test_codex_hooks_are_trusted_as_codex_lists_them_ours_only_and_untrusted_on_uninstall(where: Where) -> None:
    import sys

    bin_dir = where.home / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text(FAKE_CODEX.replace("PYTHON", sys.executable))
    (bin_dir / "codex").chmod(0o755)
    here = Where(where.home, where.project_dir, {"PATH": str(bin_dir), "HOME": str(where.home)})
    hooks = _file(here, "codex", n=1)
    hooks.parent.mkdir(parents=True)
    theirs = {"type": "command", "command": "notify-me"}
    hooks.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}}))
    changes = install("codex", "user", EXE, here, now=NOW)
    state = tomllib.loads(_file(here, "codex").read_text())["hooks"]["state"]
    assert len(state) == 5 and f"{hooks}:stop:0:0" not in state  # theirs is not trusted for them
    assert f"{hooks}:stop:1:0" in state and all(v["trusted_hash"].startswith("sha256:") for v in state.values())
    assert sum(c.action.startswith("trusted hook") for c in changes) == 5
    assert sum(c.action.startswith("backup") for c in changes) == 1  # one backup: hooks.json's original
    assert not CLIENTS["codex"].untrusted
    assert install("codex", "user", EXE, here, now=NOW) == []
    uninstall("codex", "user", here, now=NOW)
    assert "hooks" not in tomllib.loads(_file(here, "codex").read_text())
    assert json.loads(hooks.read_text()) == {"hooks": {"Stop": [{"hooks": [theirs]}]}}


def test_without_codex_on_path_install_says_its_hooks_are_not_trusted(where: Where) -> None:
    install("codex", "user", EXE, where, now=NOW)
    assert CLIENTS["codex"].untrusted
    assert any("could not be trusted" in n for n in CLIENTS["codex"].notes("user"))
    assert "hooks" not in tomllib.loads(_file(where, "codex").read_text())


def test_opencode_hooks_are_a_plugin_of_ours_naming_the_executable_and_uninstall_removes_it(where: Where) -> None:
    import shutil
    import subprocess

    install("opencode", "user", EXE, where, now=NOW)
    plugin = _file(where, "opencode", n=1)
    assert plugin == where.home / ".config" / "opencode" / "plugin" / "mnemo.js"
    text = plugin.read_text()
    assert text.startswith("// mnemo-mcp:") and f"const MNEMO = {json.dumps([EXE])};" in text
    if shutil.which("node"):  # the plugin parses as JavaScript (opencode loads it as an ES module)
        (where.home / "check.mjs").write_text(text)
        p = subprocess.run(["node", "--check", str(where.home / "check.mjs")], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    assert install("opencode", "user", EXE, where, now=NOW) == []
    moved = install("opencode", "user", "/new/mnemo-mcp", where, now=NOW)
    assert "updated the mnemo plugin" in [c.action for c in moved] and "/new/mnemo-mcp" in plugin.read_text()
    uninstall("opencode", "user", where, now=NOW)
    assert not plugin.exists() and json.loads(_file(where, "opencode").read_text()) == {}


def test_opencode_leaves_someone_elses_plugin_of_that_name_alone(where: Where) -> None:
    plugin = where.project_dir / ".opencode" / "plugin" / "mnemo.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Mine = async () => ({})\n")
    with pytest.raises(InstallError, match="not mnemo's plugin"):
        install("opencode", "project", EXE, where)
    assert plugin.read_text() == "export const Mine = async () => ({})\n"
    assert not (where.project_dir / "opencode.json").exists()
    install("opencode", "project", EXE, where, hooks=False)  # the server alone needs no plugin
    uninstall("opencode", "project", where)  # and uninstall takes out the server, not their plugin
    assert plugin.read_text() == "export const Mine = async () => ({})\n"
