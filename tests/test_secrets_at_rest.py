"""No secret at rest: what a user pastes into a prompt, what a command prints, what the model
writes or answers never lands on disk in clear, through any entry point (MCP tools, CLI, hooks,
import); not in the database, its WAL and shm, the backups or an export. And the fix of that
session is still learned and recalled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import apsw
import pytest
from mcp import Client

from mnemo_mcp.config import Settings
from mnemo_mcp.core.secrets import find_secrets, masked
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.server import build_server
from mnemo_mcp.service import MemoryService

PAYLOADS = json.loads((Path(__file__).parent / "fixtures" / "claude_code_2.1.332_hook_payloads.json").read_text())

# Made up, in the real formats (built from parts so that no scanner mistakes this file for a leak).
AWS_KEY = "AKIA" + "QXJ7ZL2PRW4MN6TB"
AWS_SECRET = "wJalrXUtnFEMIK7MDENG" + "bPxRfiCYzq8Nv2Lk3Hs9"
GITHUB = "ghp_" + "Zq8Nv2Lk3Hs9wJalrXUtnFEMIK7MDENGbPxR"
OPENAI = "sk-proj-" + "Lk3Hs9wJalrXUtnFEMIK7MDENGbPxRfiCYzq8Nv2"
SLACK = "xoxb-" + "2740118836-QmT7cLwz4RkP"
STRIPE = "sk_live_" + "51HqLk3Hs9wJalrXUtnFEMIK"
JWT = "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiJkZXBsb3ktYm90In0" + "." + "Qm9vdHN0cmFwU2lnbmF0dXJl"
KEY_BODY = "MIIEowIBAAKCAQEAv3xQm9vdHN0cmFwU2lnbmF0dXJlLk3Hs9wJalrXUtnFEMIK7"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\n" + KEY_BODY + "\n-----END RSA PRIVATE KEY-----"
PASSWORD = "Hunter2" + "Passw0rd!"
DB_PASSWORD = "S3cretDb" + "Pass99"
DB_URL = f"postgres://app:{DB_PASSWORD}@db.internal:5432/shop"
GOOGLE = "AIza" + "SyB7cLwz4RkPQmT7cLwz4RkPQmT7cLwz4Rk"
GITLAB = "glpat-" + "Xy7cLwz4RkPQmT7cLwz4"
BEARER = "Qm9vdHN0cmFwU2lnbmF0dXJlLk3Hs9"

# What must appear nowhere (the secret part of each; compared without case, as concepts are kept).
SECRETS = {
    "AWS access key id": AWS_KEY,
    "AWS secret access key": AWS_SECRET,
    "GitHub token": GITHUB,
    "OpenAI key": OPENAI,
    "Slack token": SLACK,
    "Stripe key": STRIPE,
    "JSON web token": JWT,
    "private key": KEY_BODY,
    "password in prose": PASSWORD,
    "password in a URL": DB_PASSWORD,
    "Google API key": GOOGLE,
    "GitLab token": GITLAB,
    "bearer token": BEARER,
}
FIX = "deploy.sh reads its AWS key from the deploy profile: run `aws configure --profile deploy`, then `make test`."


@pytest.fixture
def store_env(env, tmp_path):
    """The hooks' and the CLI's environment (conftest's `env`) on this test's store."""
    return {
        **env,
        "MNEMO_DB": str(tmp_path / "m.db"),
        "MNEMO_HOOK_SERVER": "off",
        "MNEMO_AUTO_BACKUP": "false",
        "MNEMO_INJECT_MIN_RELEVANCE_KEYWORD": "0.05",
    }


def run(env, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mnemo_mcp", *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
    )


def hook(env, event: str, name: str, project: Path, **changes) -> str:
    payload = {**json.loads(json.dumps(PAYLOADS[name])), "cwd": str(project), "session_id": "s1", **changes}
    out = run(env, "hook", event, stdin=json.dumps(payload))
    assert out.returncode == 0, out.stderr
    return out.stdout


def through_the_tools(tmp_path: Path, fix_id: str) -> None:
    settings = Settings(db=tmp_path / "m.db", project="shop", auto_consolidate=False, auto_backup=False)
    server = build_server(settings, service_factory=lambda s: MemoryService(s, HashEmbedder()))

    async def go():
        async with Client(server, mode="legacy") as c:
            refused = await c.call_tool("memory_write", {"content": f"staging key {AWS_KEY} / {AWS_SECRET}"})
            assert refused.is_error  # the default policy refuses, storing nothing
            read = await c.call_tool("memory_read", {"query": f"deploy fails, my token is {GITHUB} and {SLACK}"})
            assert not read.is_error
            await c.call_tool(
                "memory_feedback",
                {
                    "memory_ids": [fix_id],
                    "outcome": 1.0,
                    "query_concepts": ["deploy", OPENAI.lower(), GOOGLE.lower()],
                    "response": f"Used the profile; the old key was {STRIPE}.",
                },
            )
            await c.call_tool("rate_memory", {"memory_id": fix_id, "rating": 1, "reason": f"works; was {JWT}"})

    anyio.run(go)


def through_the_hooks(env, project: Path) -> None:
    ask = f"deploy.sh fails to authenticate. my AWS key is {AWS_KEY} and the vault password is {PASSWORD}, can you fix it?"
    hook(env, "UserPromptSubmit", "UserPromptSubmit", project, prompt=ask, prompt_id="p1")
    printed = (
        f"Exit code 2\nAuthFailure: token {GITHUB} rejected\nDATABASE_URL={DB_URL}\n{PRIVATE_KEY}\n"
        f"OPENAI_API_KEY={OPENAI}\nFAILED tests/test_deploy.py::test_upload - AuthFailure\nmake: *** [test] Error 1"
    )
    hook(env, "PostToolUseFailure", "PostToolUseFailure-Bash", project, error=printed, tool_use_id="t1")
    edit = json.loads(json.dumps(PAYLOADS["PostToolUse-Edit"]["tool_input"]))
    edit.update(
        file_path=str(project / "deploy.sh"), old_string=f"STRIPE_KEY={STRIPE}", new_string="aws --profile deploy s3 cp"
    )
    hook(env, "PostToolUse", "PostToolUse-Edit", project, tool_input=edit, tool_use_id="t2")
    passed = {"stdout": f"1 passed\nsession {JWT}", "stderr": "", "interrupted": False}
    hook(env, "PostToolUse", "PostToolUse-Bash", project, tool_response=passed, tool_use_id="t3")
    answer = f"{FIX} The Slack token {SLACK} was in the log too; rotate it. Authorization: Bearer {BEARER}"
    hook(env, "Stop", "Stop", project, last_assistant_message=answer)
    hook(env, "UserPromptSubmit", "UserPromptSubmit", project, prompt="thanks, that worked", prompt_id="p2")


def through_the_cli_and_an_import(env, tmp_path: Path, fix_id: str) -> None:
    assert run(env, "read", f"deploy key {AWS_KEY} password {PASSWORD}").returncode == 0
    assert run(env, "rate", fix_id, "1", "--reason", f"fine with {GITLAB}").returncode == 0
    refused = run(env, "write", f"prod db is {DB_URL}")
    assert refused.returncode != 0 and "secret" in refused.stderr
    redacted = run({**env, "MNEMO_SECRETS": "redact"}, "--json", "write", f"reporting db is {DB_URL}, key {GOOGLE}")
    assert redacted.returncode == 0, redacted.stderr
    # A teammate's export that carries secrets in a note, its tags and a learned link.
    text = f"The CI deploy bot uses {GITLAB} and {GOOGLE}."
    from mnemo_mcp.core.text import content_id

    record = {
        "type": "memory",
        "id": content_id(text),
        "content": text,
        "tags": ["ci", AWS_KEY],
        "metadata": {"note": f"rotated from {SLACK}"},
        "created_at": "2026-11-30T10:00:00+00:00",
    }
    association = {"type": "association", "a": "deploy", "b": GITHUB.lower(), "weight": 0.2, "valence": 0.0}
    lines = [{"type": "header", "format": "mnemo-export", "version": 1}, record, {**association, "count": 1}]
    lines[-1]["updated_at"] = "2026-11-30T10:00:00+00:00"
    (tmp_path / "teammate.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    imported = run(env, "import", str(tmp_path / "teammate.jsonl"))
    assert imported.returncode == 0, imported.stderr


def leaks(tmp_path: Path) -> dict[str, list[str]]:
    """Every secret found in any byte of any file under tmp_path (case ignored), by file."""
    found: dict[str, list[str]] = {}
    for path in tmp_path.rglob("*"):
        if not path.is_file() or path.name in ("teammate.jsonl",):
            continue
        data = path.read_bytes().lower()
        hits = [kind for kind, s in SECRETS.items() if s.lower().encode() in data]
        if hits:
            found[str(path.relative_to(tmp_path))] = hits
    return found


def test_secrets_of_every_kind_through_every_entry_point_never_reach_the_disk(tmp_path, store_env):
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    env = store_env
    svc = MemoryService(Settings(db=tmp_path / "m.db", project="shop", auto_backup=False), HashEmbedder())
    fix_id = svc.write(FIX).id
    for note in ("Deploys go through GitHub Actions.", "The cache TTL is five minutes.", "Use ruff for lint."):
        svc.write(note)
    svc.close()

    through_the_tools(tmp_path, fix_id)
    through_the_hooks(env, project)
    through_the_cli_and_an_import(env, tmp_path, fix_id)
    upkeep = MemoryService(Settings(db=tmp_path / "m.db", project="shop", auto_backup=True), HashEmbedder())
    automatic = upkeep.maybe_backup()  # what a server's upkeep takes
    upkeep.close()
    assert automatic is not None and Path(automatic.path).parent == tmp_path / "backups"
    assert run(env, "backup", str(tmp_path / "backups" / "manual.db")).returncode == 0
    exported = run(env, "export", "-o", str(tmp_path / "export.jsonl"))
    assert exported.returncode == 0, exported.stderr
    assert not (tmp_path / "hooks.log").exists(), (tmp_path / "hooks.log").read_text()

    # The store's files, WAL and shm included (still open in no process: as a user finds them).
    assert {p.name for p in tmp_path.iterdir()} >= {"m.db", "backups", "export.jsonl"}
    assert leaks(tmp_path) == {}
    conn = apsw.Connection(str(tmp_path / "m.db"))
    terms = [t for (t,) in conn.execute("SELECT term FROM memories_fts_vocab")]
    conn.close()
    assert not [t for t in terms if any(s.lower()[:12] in t for s in SECRETS.values())]

    # And the session still taught something: the fix is a case, and a new session recalls it.
    svc = MemoryService(Settings(db=tmp_path / "m.db", project="shop", auto_backup=False), HashEmbedder())
    cases = [m for m in svc.export() if m.get("memory_type") == "case"]
    doctor = {c.name: c for c in svc.doctor().checks}
    svc.close()
    fix = next(c for c in cases if c["content"].startswith("Fix: editing deploy.sh"))
    assert fix["metadata"]["case"]["worked"] >= 1 and fix["valence"] > 0
    assert "[REDACTED GitHub token] rejected" in fix["content"]  # masked in place, the rest kept
    assert (
        "[REDACTED AWS access key id] and the vault password is [REDACTED password assignment], can"
        in (fix["metadata"]["case"]["ask"])
    )
    assert doctor["no secret at rest"].ok, doctor["no secret at rest"]
    again = hook(
        env,
        "UserPromptSubmit",
        "UserPromptSubmit",
        project,
        session_id="s2",
        prompt="deploy.sh fails to authenticate again",
    )
    assert fix["id"][:12] in again and "Fix: editing deploy.sh" in again, again


def test_a_redacted_text_scanned_again_is_unchanged_and_has_no_doubled_marker():
    text = f"password: {PASSWORD} and token {GITHUB} at {DB_URL}"
    once = masked(text)
    assert masked(once) == once and find_secrets(once) == []
    assert once.count("[REDACTED") == 3 and "assignment] " not in once.replace("assignment] and", "")


def test_the_upgrade_masks_what_earlier_versions_kept_and_doctor_reports_what_is_left(tmp_path):
    db = tmp_path / "old.db"
    svc = MemoryService(Settings(db=db, project="p", auto_backup=False, secrets="allow"), HashEmbedder())
    kept = svc.write(f"on purpose: the staging key is {AWS_KEY}").id  # written with MNEMO_SECRETS=allow
    svc.close()
    # What an earlier version left: the read log with the query, a session event, a captured note.
    conn = apsw.Connection(str(db))
    with conn:
        conn.execute(
            "INSERT INTO reads VALUES ('r1', ?, ?, NULL, '[]', '2026-11-01T00:00:00+00:00')",
            (f"why does {GITHUB} fail", json.dumps(["fail", GITHUB.lower()])),
        )
        conn.execute(
            "INSERT INTO session_events(session_id, kind, detail, created_at) VALUES ('s', 'turn', ?, '2026-11-01')",
            (json.dumps({"ask": f"password is {PASSWORD}"}),),
        )
        conn.execute("UPDATE memories SET source = 'capture', metadata = ? WHERE id = ?", ('{"x": 1}', kept))
        conn.execute(
            "INSERT INTO associations(a, b, weight, valence, count, updated_at) VALUES ('deploy', ?, 0.1, 0.0, 1, 'x')",
            (OPENAI.lower(),),
        )
        conn.execute("DELETE FROM schema_migrations WHERE version >= 6")  # as schema 5 left it
        conn.execute("ALTER TABLE schema_migrations DROP COLUMN report")
        conn.execute("ALTER TABLE feedback_events DROP COLUMN by_user")
    conn.close()
    # An automatic backup that earlier version took, secrets and all.
    (tmp_path / "backups").mkdir()
    old_backup = tmp_path / "backups" / "old-20261101T000000Z.db"
    source = apsw.Connection(str(db))
    with apsw.Connection(str(old_backup)).backup("main", source, "main") as b:
        b.step()
    source.close()
    assert leaks(tmp_path)  # the test can see them
    svc = MemoryService(Settings(db=db, project="p", auto_backup=True), HashEmbedder())  # migrates
    try:
        check = {c.name: c for c in svc.doctor().checks}["no secret at rest"]
        assert check.ok and "masked on upgrade" in (check.detail or ""), check
        assert "reads" in check.detail and "session_events" in check.detail and "memories" in check.detail
        assert svc.quality(kept).id == kept  # a masked memory keeps its id
        assert [p.name for _, p in svc.list_backups()] == [old_backup.name]
        assert svc.scrub_backups().get("memories") == 1
        svc.maybe_backup()  # upkeep: a new backup of the clean store; the old one is not done twice
    finally:
        svc.close()
    assert leaks(tmp_path) == {}


def test_doctor_names_where_a_secret_kept_on_purpose_is_and_never_the_secret(tmp_path):
    svc = MemoryService(Settings(db=tmp_path / "a.db", project="p", auto_backup=False, secrets="allow"), HashEmbedder())
    try:
        mid = svc.write(f"the staging key is {AWS_KEY}").id
        check = {c.name: c for c in svc.doctor().checks}["no secret at rest"]
        assert not check.ok and check.found == 1 and mid[:12] in check.detail and AWS_KEY not in check.detail
        exported = [r for r in svc.export() if r["type"] == "memory"]
        assert AWS_KEY not in json.dumps(exported) and exported[0]["redacted"] is True  # exports are masked
    finally:
        svc.close()


@pytest.mark.parametrize("query", [GITHUB, f"  {AWS_KEY}  "])
def test_a_query_that_is_only_a_secret_is_refused_with_a_way_out(tmp_path, query):
    from mnemo_mcp.errors import InvalidInput

    svc = MemoryService(Settings(db=tmp_path / "q.db", project="p", auto_backup=False), HashEmbedder())
    try:
        with pytest.raises(InvalidInput, match="words around it"):
            svc.read(query)
    finally:
        svc.close()
