"""The command line: same operations as the tools, JSON output, clean errors, instant help."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mnemo_mcp.cli import main
from mnemo_mcp.installers.hook_start import hook_prefix


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "cli.db"
    monkeypatch.setenv("MNEMO_DB", str(path))
    monkeypatch.setenv("MNEMO_EMBED_MODEL", "mnemo-hash-64")
    return path


def run_json(capsys, *argv):
    assert main(["--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_help_does_not_import_the_model_or_the_mcp_sdk():
    code = (
        "import sys\n"
        "from mnemo_mcp.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('fastembed', 'onnxruntime', 'mcp', 'numpy', 'apsw') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out
    assert "write" in out and "feedback" in out


def test_write_read_feedback_rate_quality_stats_delete(db, capsys):
    w = run_json(capsys, "write", "Deploys go through the release branch.", "-t", "deploy")
    assert w["created"] is True
    r = run_json(capsys, "read", "release branch deploy", "-k", "3")
    assert r["items"][0]["id"] == w["id"]
    fb = run_json(capsys, "feedback", "0.5", w["id"][:8], "--read-id", r["read_id"])
    assert fb["updated"][0]["valence_after"] > 0
    rate = run_json(capsys, "rate", w["id"], "1", "--reason", "right")
    assert rate["quality_score"] > 0.5
    q = run_json(capsys, "quality", w["id"])
    assert q["feedback_count"] == 1 and q["rating_count"] == 1
    s = run_json(capsys, "stats")
    assert s["total"] == 1
    d = run_json(capsys, "delete", w["id"])
    assert d["deleted"] is True
    assert run_json(capsys, "stats")["total"] == 0


def test_human_output_lists_results(db, capsys):
    main(["write", "Use uv to manage Python versions."])
    capsys.readouterr()
    assert main(["read", "python versions"]) == 0
    out = capsys.readouterr().out
    assert "Use uv to manage Python versions." in out and "read_id:" in out


def test_export_import_round_trip(db, tmp_path, capsys):
    main(["write", "first exported memory", "-t", "a"])
    main(["write", "second exported memory"])
    dump = tmp_path / "dump.jsonl"
    assert main(["export", "-o", str(dump)]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert lines[0]["type"] == "header" and sum(rec["type"] == "memory" for rec in lines) == 2
    res = run_json(capsys, "--db", str(tmp_path / "copy.db"), "import", str(dump))
    assert res["memories_added"] == 2


def test_errors_are_one_clean_line_with_nonzero_exit(db, capsys):
    assert main(["feedback", "1.0", "not-an-id"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and "prefix of at least 8" in err
    assert main(["write", "x", "--metadata", "{bad"]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_consolidate_as_of_a_later_date_archives_and_restore_brings_back(db, capsys):
    w = run_json(capsys, "write", "The legacy cron host is cron-01.", "--source", "hook")
    dry = run_json(capsys, "consolidate", "--dry-run", "--now", "2099-01-01")
    assert dry["dry_run"] and dry["counts"]["archived"] == 1
    assert run_json(capsys, "stats")["archived"] == 0
    real = run_json(capsys, "consolidate", "--now", "2099-01-01T00:00:00")
    assert [c["id"] for c in real["archived"]] == [w["id"]]
    assert run_json(capsys, "read", "legacy cron host")["items"] == []
    assert run_json(capsys, "restore", w["id"][:10])["archived"] is False
    assert run_json(capsys, "read", "legacy cron host")["items"][0]["id"] == w["id"]


def test_write_with_supersedes_and_human_consolidation_report(db, capsys):
    old = run_json(capsys, "write", "Builds run on Travis CI.")
    new = run_json(capsys, "write", "Builds run on GitHub Actions since 2026.", "--supersedes", old["id"])
    assert new["superseded"] == [old["id"]]
    assert main(["consolidate", "--now", "2099-01-01"]) == 0
    out = capsys.readouterr().out
    assert "consolidated as of 2099-01-01" in out and "archived" in out


def test_consolidate_rejects_a_malformed_date_without_changing_anything(db, capsys):
    run_json(capsys, "write", "Something to keep.")
    assert main(["consolidate", "--now", "next tuesday"]) == 1
    assert "ISO-8601" in capsys.readouterr().err
    assert run_json(capsys, "stats")["archived"] == 0


def test_project_is_the_git_root_name_or_the_folder(tmp_path):
    from mnemo_mcp.project import detect_project

    repo = tmp_path / "shop-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert detect_project(repo / "src" / "deep") == "shop-api"
    plain = tmp_path / "scratch"
    plain.mkdir()
    assert detect_project(plain) == "scratch"


def test_install_claude_writes_server_and_hooks_once_and_uninstall_removes_them(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert main(["install", "claude"]) == 0
    out = capsys.readouterr().out
    assert "added mcpServers.mnemo" in out and "added hook UserPromptSubmit" in out
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["mnemo"]
    assert server["command"].endswith("mnemo-mcp") and os.path.isabs(server["command"])
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    # The quick start (`<python> -S -P -c <boot>`) where the script allows it, else the script itself.
    assert (
        hooks["UserPromptSubmit"][0]["hooks"][0]["command"] == f"{hook_prefix(server['command'])} hook UserPromptSubmit"
    )
    assert [g["matcher"] for g in hooks["PostToolUse"]] == [
        "Bash",
        "mcp__mnemo__memory_read",
        "Edit|Write|MultiEdit|NotebookEdit",
    ]
    assert main(["install", "claude"]) == 0
    assert capsys.readouterr().out.strip() == "nothing to change"
    assert main(["uninstall", "claude"]) == 0
    assert "mnemo" not in json.loads((home / ".claude.json").read_text()).get("mcpServers", {})


def test_project_install_names_the_command_so_a_teammates_checkout_finds_it_on_path(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "shop-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(repo / "src")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    assert main(["install", "claude", "--scope", "project"]) == 0
    assert capsys.readouterr().err == ""
    server = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["mnemo"]
    assert server["command"] == "mnemo-mcp"
    hooks = json.loads((repo / ".claude" / "settings.json").read_text())["hooks"]
    commands = {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]}
    assert commands == {f"mnemo-mcp hook {e}" for e in hooks}
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["install", "claude", "--scope", "project"]) == 0
    assert "not on PATH" in capsys.readouterr().err


def test_a_reader_that_stops_early_gets_no_traceback(db):
    from mnemo_mcp.config import Settings
    from mnemo_mcp.embedding import HashEmbedder
    from mnemo_mcp.service import MemoryService

    svc = MemoryService(Settings(db=db), HashEmbedder())
    svc.write_many([{"content": f"note {i}: " + "padding words " * 30, "allow_duplicate": True} for i in range(400)])
    svc.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnemo_mcp", "export"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "MNEMO_DB": str(db), "MNEMO_EMBED_MODEL": "mnemo-hash-64"},
    )
    assert proc.stdout.read(10)  # `mnemo-mcp export | head -c 10`
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err
