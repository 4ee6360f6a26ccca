"""Registering with Claude Code: our server entry and hooks merged into its settings files, everything
else in them kept, idempotent, reversible, backed up, and nothing touched when a file is broken."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime

import pytest

from mnemo_mcp.claude_install import (
    CHECK_FILTERS,
    HOOK_EVENTS,
    Change,
    InstallError,
    install,
    plan_paths,
    render,
    uninstall,
)

EXE = "/opt/venv/bin/mnemo-mcp"
NOW = datetime(2025, 1, 2, 3, 4, 5)
STAMP = "20250102T030405"

EXPECTED_SERVERS = {"mcpServers": {"mnemo": {"type": "stdio", "command": EXE, "args": [], "env": {}}}}
EXPECTED_HOOKS = {
    "hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": f"{EXE} hook SessionStart", "timeout": 15}]}],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": f"{EXE} hook UserPromptSubmit", "timeout": 10}]}
        ],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{EXE} hook PreToolUse", "timeout": 10}]}
        ],
        "PostToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": f"{EXE} hook PostToolUse", "timeout": 10, "if": f}
                    for f in CHECK_FILTERS
                ],
            },
            {
                "matcher": "mcp__mnemo__memory_read",
                "hooks": [{"type": "command", "command": f"{EXE} hook PostToolUse", "timeout": 10}],
            },
            {
                "matcher": "Edit|Write|MultiEdit|NotebookEdit",
                "hooks": [{"type": "command", "command": f"{EXE} hook PostToolUse", "timeout": 10}],
            },
        ],
        "PostToolUseFailure": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": f"{EXE} hook PostToolUseFailure", "timeout": 10}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": f"{EXE} hook Stop", "timeout": 10}]}],
    }
}

OTHER_TOOL_HOOKS = {
    "PostToolUse": [
        {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write", "timeout": 5}]}
    ],
    "SessionStart": [{"hooks": [{"type": "command", "command": "direnv export json"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    "Notification": [{"hooks": [{"type": "command", "command": "say hi"}]}],
}


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "project"
    path.mkdir()
    return path


def read(path):
    return json.loads(path.read_text())


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def backups(directory):
    return sorted(p.name for p in directory.rglob("*.mnemo-backup-*"))


def test_fresh_user_install_writes_exactly_the_server_entry_and_hooks(home, project):
    changes = install("user", EXE, home, project, now=NOW)

    assert read(home / ".claude.json") == EXPECTED_SERVERS
    assert read(home / ".claude" / "settings.json") == EXPECTED_HOOKS
    assert (home / ".claude.json").read_text() == json.dumps(EXPECTED_SERVERS, indent=2) + "\n"
    assert [c.action for c in changes] == [
        "added mcpServers.mnemo",
        "added hook SessionStart",
        "added hook UserPromptSubmit",
        "added hook PreToolUse",
        "added hook PostToolUse",
        "added hook PostToolUseFailure",
        "added hook Stop",
    ]
    assert backups(home) == []
    assert list(project.iterdir()) == []


def test_project_scope_writes_mcp_json_and_project_settings_only(home, project):
    install("project", EXE, home, project, now=NOW)

    assert read(project / ".mcp.json") == EXPECTED_SERVERS
    assert read(project / ".claude" / "settings.json") == EXPECTED_HOOKS
    assert not home.exists()


def test_plan_paths_rejects_an_unknown_scope_naming_the_choices(home, project):
    assert plan_paths("user", home, project) == (home / ".claude.json", home / ".claude" / "settings.json")
    with pytest.raises(ValueError, match="choose .user. or .project."):
        plan_paths("global", home, project)


def test_second_install_changes_nothing_writes_nothing_and_makes_no_backup(home, project):
    install("user", EXE, home, project, now=NOW)
    files = [home / ".claude.json", home / ".claude" / "settings.json"]
    before = [(p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino) for p in files]

    assert install("user", EXE, home, project, now=NOW) == []

    assert [(p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino) for p in files] == before
    assert backups(home) == []


def test_other_tools_hooks_stay_first_and_intact_ours_are_appended_and_other_settings_kept(home, project):
    settings = home / ".claude" / "settings.json"
    original = {"permissions": {"allow": ["Bash(ls)"]}, "hooks": OTHER_TOOL_HOOKS, "model": "opus", "env": {"A": "1"}}
    write(settings, original)

    install("user", EXE, home, project, now=NOW)

    data = read(settings)
    assert list(data) == ["permissions", "hooks", "model", "env"]
    assert {k: v for k, v in data.items() if k != "hooks"} == {k: v for k, v in original.items() if k != "hooks"}
    hooks = data["hooks"]
    assert hooks["PostToolUse"] == OTHER_TOOL_HOOKS["PostToolUse"] + EXPECTED_HOOKS["hooks"]["PostToolUse"]
    assert hooks["SessionStart"] == OTHER_TOOL_HOOKS["SessionStart"] + EXPECTED_HOOKS["hooks"]["SessionStart"]
    # Events we do not install are left exactly as they were.
    assert hooks["Stop"] == OTHER_TOOL_HOOKS["Stop"] + EXPECTED_HOOKS["hooks"]["Stop"]
    assert hooks["Notification"] == OTHER_TOOL_HOOKS["Notification"]
    assert list(hooks)[:4] == ["PostToolUse", "SessionStart", "Stop", "Notification"]


def test_existing_claude_json_keeps_every_unrelated_key_and_other_servers(home, project):
    state = {
        "numStartups": 42,
        "projects": {"/src/app": {"allowedTools": [], "mcpServers": {}, "history": [{"display": "hi ✓"}]}},
        "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": ["--x"], "env": {"T": "1"}}},
        "oauthAccount": {"emailAddress": "a@b.c"},
        "tipsHistory": {"x": 1},
    }
    write(home / ".claude.json", state)

    install("user", EXE, home, project, hooks=False, now=NOW)

    data = read(home / ".claude.json")
    assert list(data) == list(state)
    assert data["mcpServers"] == {**state["mcpServers"], **EXPECTED_SERVERS["mcpServers"]}
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {k: v for k, v in state.items() if k != "mcpServers"}
    assert "hi ✓" in (home / ".claude.json").read_text(encoding="utf-8")


def test_moved_executable_updates_server_and_hooks_in_place_without_duplicating(home, project):
    settings = home / ".claude" / "settings.json"
    old = "/old/venv/bin/mnemo-mcp"
    ours = {"type": "command", "command": f"{old} hook SessionStart", "timeout": 15}
    theirs = {"type": "command", "command": "direnv export json"}
    write(settings, {"hooks": {"SessionStart": [{"hooks": [ours]}, {"hooks": [theirs]}]}})
    write(
        home / ".claude.json",
        {"mcpServers": {"mnemo": {"type": "stdio", "command": old, "args": [], "env": {"MNEMO_DB": "/d.db"}}}},
    )

    changes = install("user", EXE, home, project, now=NOW)

    session_start = read(settings)["hooks"]["SessionStart"]
    assert session_start == [{"hooks": [{**ours, "command": f"{EXE} hook SessionStart"}]}, {"hooks": [theirs]}]
    # The user's env on our entry survives: it may point at their database.
    assert read(home / ".claude.json")["mcpServers"]["mnemo"] == {
        "type": "stdio",
        "command": EXE,
        "args": [],
        "env": {"MNEMO_DB": "/d.db"},
    }
    actions = [c.action for c in changes]
    assert "updated mcpServers.mnemo" in actions and "updated hook SessionStart" in actions
    assert "added hook SessionStart" not in actions
    assert install("user", EXE, home, project, now=NOW) == []


def test_executable_not_named_mnemo_mcp_is_still_recognised_through_the_server_entry(home, project):
    odd = "/opt/tools/my memory/mnemo"  # space: the hook command must quote it
    install("user", odd, home, project, now=NOW)
    assert (
        read(home / ".claude" / "settings.json")["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        == "'/opt/tools/my memory/mnemo' hook SessionStart"
    )

    assert install("user", odd, home, project, now=NOW) == []
    uninstall("user", home, project, now=NOW)
    assert read(home / ".claude" / "settings.json") == {}


def test_another_program_with_a_hook_subcommand_is_not_mistaken_for_ours(home, project):
    settings = home / ".claude" / "settings.json"
    theirs = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "other-tool hook SessionStart"}]}]}}
    write(settings, theirs)

    install("user", EXE, home, project, now=NOW)
    assert read(settings)["hooks"]["SessionStart"][0] == theirs["hooks"]["SessionStart"][0]
    assert len(read(settings)["hooks"]["SessionStart"]) == 2

    uninstall("user", home, project, now=NOW)
    assert read(settings) == theirs


def test_no_hooks_writes_only_the_server_entry(home, project):
    changes = install("user", EXE, home, project, hooks=False, now=NOW)

    assert read(home / ".claude.json") == EXPECTED_SERVERS
    assert not (home / ".claude" / "settings.json").exists()
    assert [c.action for c in changes] == ["added mcpServers.mnemo"]


@pytest.mark.parametrize(
    "claude_json, settings",
    [
        (None, None),
        (
            {"numStartups": 3, "mcpServers": {"github": {"type": "stdio", "command": "gh"}}},
            {"model": "opus", "hooks": OTHER_TOOL_HOOKS},
        ),
        ({"numStartups": 3}, {"permissions": {"deny": []}}),
    ],
    ids=["fresh", "other-servers-and-hooks", "unrelated-keys-only"],
)
@pytest.mark.parametrize("scope", ["user", "project"])
def test_uninstall_restores_an_equivalent_document_to_the_one_before_install(
    home, project, scope, claude_json, settings
):
    mcp_path, hooks_path = plan_paths(scope, home, project)
    if claude_json is not None:
        write(mcp_path, claude_json)
        write(hooks_path, settings)
    before = {p: read(p) for p in (mcp_path, hooks_path) if p.exists()}

    install(scope, EXE, home, project, now=NOW)
    changes = uninstall(scope, home, project, now=NOW)

    assert {c.action for c in changes} >= {"removed mcpServers.mnemo", *(f"removed hook {e}" for e in HOOK_EVENTS)}
    for path in (mcp_path, hooks_path):
        expected = before.get(path, {})
        assert read(path) == expected
        assert list(read(path)) == list(expected)
    assert uninstall(scope, home, project, now=NOW) == []


def test_uninstall_with_nothing_installed_creates_no_file(home, project):
    assert uninstall("user", home, project, now=NOW) == []
    assert not home.exists()


@pytest.mark.parametrize(
    "which, content, message",
    [
        ("mcp", "{not json", "not valid JSON"),
        ("settings", '{"hooks": [1]', "not valid JSON"),
        ("settings", '{"hooks": []}', '"hooks" must be an object'),
        ("mcp", '{"mcpServers": "x"}', '"mcpServers" must be an object'),
        ("settings", '{"hooks": {"SessionStart": {}}}', '"hooks"."SessionStart" must be an array'),
        ("settings", "[]", "must hold a JSON object"),
    ],
)
@pytest.mark.parametrize("operation", ["install", "uninstall"])
def test_broken_file_raises_naming_it_and_changes_nothing(home, project, which, content, message, operation):
    mcp_path, hooks_path = plan_paths("user", home, project)
    write(mcp_path, {"mcpServers": {"mnemo": {"command": "/x/mnemo-mcp"}}})
    write(hooks_path, {"model": "opus"})
    broken = mcp_path if which == "mcp" else hooks_path
    broken.write_text(content)
    before = {p: p.read_bytes() for p in (mcp_path, hooks_path)}

    with pytest.raises(InstallError, match=message) as err:
        if operation == "install":
            install("user", EXE, home, project, now=NOW)
        else:
            uninstall("user", home, project, now=NOW)

    assert str(broken) in str(err.value)
    assert {p: p.read_bytes() for p in (mcp_path, hooks_path)} == before
    assert backups(home) == []
    assert not list(home.rglob("*.tmp"))


def test_empty_file_is_treated_as_an_empty_object(home, project):
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("")

    install("user", EXE, home, project, now=NOW)

    assert read(home / ".claude" / "settings.json") == EXPECTED_HOOKS


def test_backup_holds_the_exact_previous_bytes_and_is_reported(home, project):
    path = home / ".claude.json"
    path.parent.mkdir(parents=True)
    previous = b'{"numStartups":1,  "x": [1,2]}'
    path.write_bytes(previous)

    changes = install("user", EXE, home, project, hooks=False, now=NOW)

    backup = home / f".claude.json.mnemo-backup-{STAMP}"
    assert backup.read_bytes() == previous
    assert changes[0] == Change(path, f"backup -> {backup}")


def test_a_second_backup_in_the_same_second_does_not_overwrite_the_first(home, project):
    path = home / ".claude.json"
    write(path, {"numStartups": 1})
    original = path.read_bytes()

    install("user", EXE, home, project, hooks=False, now=NOW)
    uninstall("user", home, project, now=NOW)

    assert (home / f".claude.json.mnemo-backup-{STAMP}").read_bytes() == original
    assert read(home / f".claude.json.mnemo-backup-{STAMP}-1") == {"numStartups": 1, **EXPECTED_SERVERS}


def test_file_mode_is_preserved_and_backup_is_no_wider(home, project):
    path = home / ".claude.json"
    write(path, {"numStartups": 1})
    os.chmod(path, 0o600)

    install("user", EXE, home, project, hooks=False, now=NOW)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / f".claude.json.mnemo-backup-{STAMP}").stat().st_mode) & 0o077 == 0


def test_symlinked_settings_file_is_written_through_the_link(home, project, tmp_path):
    real = tmp_path / "dotfiles" / "settings.json"
    write(real, {"model": "opus"})
    link = home / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)

    install("user", EXE, home, project, now=NOW)

    assert link.is_symlink()
    assert read(real) == {"model": "opus", **EXPECTED_HOOKS}


def test_render_prints_one_line_per_change_or_nothing_to_change(tmp_path):
    path = tmp_path / "x.json"
    assert render([Change(path, "added mcpServers.mnemo"), Change(path, "added hook SessionStart")]) == (
        f"{path}: added mcpServers.mnemo\n{path}: added hook SessionStart"
    )
    assert render([]) == "nothing to change"


def test_a_hook_written_before_the_quick_start_is_replaced_by_it_and_uninstall_removes_it(home, project, mnemo_script):
    import sys

    install("user", EXE, home, project, now=NOW)
    settings = home / ".claude" / "settings.json"
    assert read(settings)["hooks"]["Stop"][0]["hooks"][0]["command"] == f"{EXE} hook Stop"

    install("user", mnemo_script, home, project, now=NOW)
    stop = read(settings)["hooks"]["Stop"]
    assert len(stop) == 1 and len(stop[0]["hooks"]) == 1
    assert stop[0]["hooks"][0]["command"].startswith(f"{sys.executable} -S -P -c ")
    assert stop[0]["hooks"][0]["command"].endswith(" hook Stop")
    assert install("user", mnemo_script, home, project, now=NOW) == []

    uninstall("user", home, project, now=NOW)
    assert read(settings) == {}
