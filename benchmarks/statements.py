"""Statements per operation: how many SQL statements (each a round trip on a networked database)
and transactions one `memory_feedback`, one read and each hook event cost.

    python -m benchmarks.statements [--memories 2000]

Counts come from SQLite's own statement tracer on the store's connection (apsw `exec_trace`):
every statement executed, `executemany` bindings counted one by one. The store is built with the
hash test embedder (the counts do not depend on the model); the hook events are handled in
process, as the MCP server handles them for a hook (semantic).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from contextlib import contextmanager
from pathlib import Path

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.hooks import handlers
from mnemo_mcp.service import MemoryService

TOPICS = ["webhook", "retry", "postgres", "cache", "deploy", "pytest", "docker", "celery", "redis", "auth"]


@contextmanager
def counting(svc: MemoryService):
    """Count the statements run on the service's connection (and its transactions) meanwhile."""
    conn = svc.store.db.conn
    seen = {"statements": 0}

    def trace(cursor, sql, bindings) -> bool:
        seen["statements"] += 1
        return True

    before = svc.store.db.transactions
    conn.exec_trace = trace
    try:
        yield seen
    finally:
        conn.exec_trace = None
        seen["transactions"] = svc.store.db.transactions - before


def _store(folder: Path, n: int) -> tuple[MemoryService, list[str]]:
    settings = Settings(db=folder / "m.db", project="shop", auto_consolidate=False, auto_backup=False)
    svc = MemoryService(settings, HashEmbedder())
    items = [
        {
            "content": f"Note {i} about {TOPICS[i % len(TOPICS)]} and {TOPICS[(i * 7) % len(TOPICS)]}: "
            f"detail {i * 31 % 997} of the {TOPICS[(i * 3) % len(TOPICS)]} setup.",
            "allow_duplicate": True,
        }
        for i in range(n)
    ]
    ids = [r.id for batch in range(0, n, 500) for r in svc.write_many(items[batch : batch + 500])]
    return svc, ids


def _payload(event: str, session: str, cwd: str, **fields) -> dict:
    return {
        "session_id": session,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": cwd,
        "hook_event_name": event,
        **fields,
    }


def measure(n: int) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        svc, _ = _store(Path(tmp), n)
        s = svc.settings
        r = svc.read("webhook retry postgres cache", top_k=5)
        ids = [it.id for it in r.items]
        with counting(svc) as c:
            svc.read("webhook retry postgres cache", top_k=5)
        out["memory_read (top 5)"] = dict(c)
        with counting(svc) as c:
            svc.feedback(ids, outcome=1.0, read_id=r.read_id)
        out["memory_feedback (5 ids, read_id)"] = dict(c)

        cwd, sid = tmp, "bench-session"

        def hook(name: str, event: str, **fields) -> None:
            with counting(svc) as c:
                handlers.run(event, _payload(event, sid, cwd, **fields), s, svc, semantic=True)
            out[name] = dict(c)

        hook("SessionStart", "SessionStart", source="startup")
        # The prompt is a stored note's own words, so the hook injects it; the edit carries it out,
        # so the checks after it credit it (the costly path).
        note = svc.read("webhook retry postgres", top_k=1, record=False).items[0].content
        hook("UserPromptSubmit (first prompt)", "UserPromptSubmit", prompt=note)
        fail = {"tool_name": "Bash", "tool_input": {"command": "pytest -q"}, "tool_use_id": "t1"}
        hook(
            "PostToolUseFailure (baseline check)", "PostToolUseFailure", **fail, error="Exit code 1\nE   ValueError: x"
        )
        edit = {"file_path": f"{cwd}/app.py", "old_string": "a = 1", "new_string": f"a = 1  # {note}"}
        hook("PostToolUse (Edit)", "PostToolUse", tool_name="Edit", tool_input=edit, tool_use_id="t2")
        fail = {"tool_name": "Bash", "tool_input": {"command": "pytest -q"}, "tool_use_id": "t2b"}
        hook("PostToolUseFailure (failing check)", "PostToolUseFailure", **fail, error="Exit code 1\nE   ValueError: y")
        edit = {"file_path": f"{cwd}/app.py", "old_string": "b = 1", "new_string": f"b = 2  # {note}"}
        hook("PostToolUse (second Edit)", "PostToolUse", tool_name="Edit", tool_input=edit, tool_use_id="t2c")
        passing = {"tool_name": "Bash", "tool_input": {"command": "pytest -q"}, "tool_use_id": "t3"}
        hook("PostToolUse (passing check)", "PostToolUse", **passing, tool_response={"stdout": "1 passed"})
        hook("Stop", "Stop", last_assistant_message="Webhook retry now backs off; the postgres cache is kept.")
        hook("UserPromptSubmit (reaction: thanks)", "UserPromptSubmit", prompt="thanks, that worked")
        svc.close()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=2000)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    figures = measure(args.memories)
    print(f"{'operation':44} {'statements':>10} {'transactions':>12}")
    for name, c in figures.items():
        print(f"{name:44} {c['statements']:>10} {c['transactions']:>12}")
    if args.json:
        args.json.write_text(json.dumps({"memories": args.memories, "figures": figures}, indent=2))


if __name__ == "__main__":
    main()
