"""Stress: several real `mnemo-mcp` stdio servers and CLI writers on one database file at once.

Four server processes (driven through the official MCP client, two concurrent request lanes
each) mix memory_write / memory_read / memory_feedback / rate_memory, while two CLI processes
keep writing (`write` in a loop, `import` of JSONL batches) and the test process holds long read
transactions and samples the WAL. Afterwards nothing acknowledged may be missing: every write is
there, every feedback update has its event, every valence is the replay of its events in commit
order, every rating is counted, and the WAL stayed bounded and can be truncated.

Run with `-s` to see the figures (operations, wall time, throughput, largest WAL).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from mnemo_mcp.config import Settings
from mnemo_mcp.core.rules import delta_rule
from mnemo_mcp.core.text import content_id, normalize_content
from mnemo_mcp.service import MemoryService
from mnemo_mcp.storage.db import connect

SERVERS = 4  # stdio server processes
LANES = 2  # concurrent request lanes per server session (requests interleave inside a server too)
OPS_PER_LANE = int(os.environ.get("STRESS_OPS_PER_LANE", "150"))  # x LANES: tool calls per server client
CLI_WRITERS = 2
CLI_MIN_RUNS = 4  # each CLI writer runs at least this many commands, then keeps going until the servers are done
CLI_MAX_RUNS = 60
IMPORT_BATCH = 25
READER_HOLD_S = 2.0  # the long-lived reader keeps its snapshot this long ...
READER_GAP_S = 0.3  # ... then lets go for this long
# Each tool call appends about 30 KiB to the WAL (reads too: the read log, access counts), and no
# checkpoint can reset it while a snapshot is held, so its high-water mark is about the WAL
# written during a hold or two: 5 MiB with no long reader, 20-40 MiB with 2 s holds at 150-200
# calls/s on 2 CPUs, and it stays there (6,400 calls in 34 s: 36 MiB). The bound is 64 MiB, or
# more on a machine fast enough to write more than that during a few holds; past it, checkpoints
# have stopped keeping up.
WAL_BOUND = 64 * 1024 * 1024
WAL_PER_CALL = 40 * 1024
MODEL = "mnemo-hash-64"
PROJECT = "stress"
# Every lane writes these same texts first (one creates each, the others get created=false) and
# aims half its feedback and ratings at them: many processes updating the same rows at once.
HOT = (
    "Hot memory one: the deploy queue retries with backoff.",
    "Hot memory two: the cache index is rebuilt after a migration.",
    "Hot memory three: the webhook worker holds the session lock.",
)
HOT_IDS = [content_id(normalize_content(t)) for t in HOT]
WORDS = (
    "deploy retry cache webhook database migration timeout queue index build "
    "token session backoff schema replica lock worker signal parser render"
).split()


def _env(db: Path, home: Path) -> dict[str, str]:
    return {
        "MNEMO_DB": str(db),
        "MNEMO_EMBED_MODEL": MODEL,
        "MNEMO_AUTO_CONSOLIDATE": "false",
        "MNEMO_PROJECT": PROJECT,
        "HOME": os.environ.get("HOME", str(home)),
        "PATH": os.environ.get("PATH", ""),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_DATA_HOME": str(home / "data"),
    }


def _text(rng: random.Random, who: str, i: int) -> str:
    a, b, c, d = rng.sample(WORDS, 4)
    return f"{who} note {i}: when the {a} {b} fails, check the {c} before the {d} ({rng.getrandbits(48):012x})."


class Ledger:
    """What the clients were told: the acknowledged effects, to compare with the file."""

    def __init__(self) -> None:
        self.writes: set[str] = set()
        self.feedback_updates: dict[str, list[tuple[float, float]]] = {}  # id -> (valence before, after) as told
        self.ratings: dict[str, list[int]] = {}  # id -> rating_count as told after each rating
        self.ops: Counter[str] = Counter()
        self.errors: list[str] = []


async def _lane(client: Client, who: str, seed: int, ledger: Ledger) -> None:
    rng = random.Random(seed)
    known: list[str] = []
    last_read: dict | None = None

    async def call(tool: str, args: dict) -> dict | None:
        result = await client.call_tool(tool, args)
        ledger.ops[tool] += 1
        if result.is_error:
            ledger.errors.append(f"{who} {tool}: {result.content}")
            return None
        return result.structured_content

    for text in HOT:
        r = await call("memory_write", {"content": text, "tags": ["hot"], "allow_duplicate": True})
        if r is not None:
            assert r["id"] in HOT_IDS, r
            ledger.writes.add(r["id"])
    for i in range(len(HOT), OPS_PER_LANE):
        if i < len(HOT) + 3:
            kind = "write"
        else:
            kind = rng.choices(("write", "read", "feedback", "rate"), weights=(3, 3, 3, 2))[0]
        if kind == "feedback" and not (last_read and last_read["items"]):
            kind = "read"
        if kind == "write":
            r = await call("memory_write", {"content": _text(rng, who, i), "tags": [who], "allow_duplicate": True})
            if r is not None:
                assert r["created"] is True, r  # every text is distinct
                ledger.writes.add(r["id"])
                known.append(r["id"])
        elif kind == "read":
            query = " ".join(rng.sample(WORDS, 2))
            r = await call("memory_read", {"query": query, "top_k": 5})
            if r is not None:
                last_read = r
                known.extend(it["id"] for it in r["items"])
        elif kind == "feedback":
            assert last_read is not None
            items = last_read["items"]
            pool = HOT_IDS if rng.random() < 0.5 else [it["id"] for it in items]
            ids = rng.sample(pool, rng.randint(1, min(3, len(pool))))
            outcome = round(rng.uniform(-1.0, 1.0), 3)
            r = await call("memory_feedback", {"memory_ids": ids, "outcome": outcome, "read_id": last_read["read_id"]})
            if r is not None:
                assert not r["not_found"], r
                assert sorted(u["id"] for u in r["updated"]) == sorted(set(ids)), r
                for u in r["updated"]:
                    ledger.feedback_updates.setdefault(u["id"], []).append((u["valence_before"], u["valence_after"]))
        else:  # rate
            mid = rng.choice(HOT_IDS if rng.random() < 0.5 else known)
            r = await call("rate_memory", {"memory_id": mid, "rating": rng.choice((-1, 0, 1)), "reason": f"{who} {i}"})
            if r is not None:
                assert r["id"] == mid, r
                ledger.ratings.setdefault(mid, []).append(r["rating_count"])


async def _server_client(
    params: StdioServerParameters, n: int, ledger: Ledger, finished: asyncio.Queue, release: asyncio.Event
) -> None:
    async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
        try:
            await asyncio.gather(*(_lane(client, f"s{n}l{lane}", 1000 * n + lane, ledger) for lane in range(LANES)))
        finally:
            finished.put_nowait(n)
        # Stay connected (an open connection keeps the WAL) until the test has checkpointed.
        await release.wait()


async def _cli(env: dict[str, str], cwd: Path, *args: str) -> dict:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mnemo_mcp",
        "--json",
        *args,
        env=env,
        cwd=str(cwd),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, f"mnemo-mcp {args[0]} exited {proc.returncode}: {err.decode(errors='replace')}"
    return json.loads(out)


async def _cli_writer(n: int, env: dict[str, str], cwd: Path, done: asyncio.Event, ledger: Ledger) -> None:
    """Writer 0 runs `write` again and again; writer 1 alternates `import` of a batch and `write`."""
    rng = random.Random(7000 + n)
    who = f"cli{n}"
    for i in range(CLI_MAX_RUNS):
        if i >= CLI_MIN_RUNS and done.is_set():
            break
        if n % 2 == 1 and i % 2 == 0:
            batch = cwd / f"{who}-batch{i}.jsonl"
            stamp = datetime.now(UTC).isoformat()
            lines = [{"type": "header", "format": "mnemo-export", "version": 1, "embedding_model": MODEL}]
            ids = []
            for k in range(IMPORT_BATCH):
                text = normalize_content(_text(rng, f"{who} import {i}", k))
                ids.append(content_id(text))
                lines.append(
                    {
                        "type": "memory",
                        "id": ids[-1],
                        "content": text,
                        "domain": PROJECT,
                        "tags": [who],
                        "created_at": stamp,
                    }
                )
            batch.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
            r = await _cli(env, cwd, "import", str(batch))
            ledger.ops["cli_import"] += 1
            assert r["memories_added"] == IMPORT_BATCH and r["memories_skipped"] == 0, r
            ledger.writes.update(ids)
        else:
            r = await _cli(env, cwd, "write", _text(rng, who, i), "-t", who, "--allow-duplicate")
            ledger.ops["cli_write"] += 1
            assert r["created"] is True, r
            ledger.writes.add(r["id"])


class WalWatcher(threading.Thread):
    """A long-lived reader in this process: holds a read snapshot for seconds at a time (what a
    slow reader does to checkpoints), and samples the size of the -wal file meanwhile."""

    def __init__(self, db: Path):
        super().__init__(name="wal-watcher", daemon=True)
        self.db = db
        self.wal = Path(str(db) + "-wal")
        self.stop = threading.Event()
        self.max_wal = 0
        self.samples = 0
        self.holds = 0
        self.error: Exception | None = None

    def sample(self) -> None:
        try:
            size = self.wal.stat().st_size
        except FileNotFoundError:
            size = 0
        self.max_wal = max(self.max_wal, size)
        self.samples += 1

    def wait(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.stop.is_set() and time.monotonic() < end:
            self.sample()
            time.sleep(0.05)

    def run(self) -> None:
        try:
            # Wait for the servers to create the schema, then open a second connection.
            while not self.stop.is_set():
                self.sample()
                if self.wal.exists():
                    conn = connect(self.db, 10_000)
                    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories'").fetchone():
                        break
                    conn.close()
                time.sleep(0.05)
            else:
                return
            try:
                while not self.stop.is_set():
                    conn.execute("BEGIN")
                    conn.execute("SELECT count(*) FROM memories").fetchone()  # takes the snapshot
                    self.holds += 1
                    self.wait(READER_HOLD_S)
                    conn.execute("COMMIT")
                    self.wait(READER_GAP_S)
            finally:
                conn.close()
        except Exception as err:  # reported to the test
            self.error = err


@pytest.mark.slow
def test_servers_and_cli_writers_lose_nothing_under_load(tmp_path):
    db = tmp_path / "stress.db"
    env = _env(db, tmp_path)
    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemo_mcp"], env=env, cwd=str(tmp_path))
    ledger = Ledger()
    watcher = WalWatcher(db)
    checkpoint: dict[str, object] = {}

    def truncate_checkpoint() -> None:
        """From a fresh connection, with every server still connected and the load stopped."""
        wal = Path(str(db) + "-wal")
        checkpoint["wal_before"] = wal.stat().st_size if wal.exists() else 0
        conn = connect(db, 10_000)
        try:
            # PASSIVE first, for the figures: (busy, frames in the WAL, frames checkpointed);
            # a successful TRUNCATE then reports (0, 0, 0) and leaves an empty -wal file.
            checkpoint["passive"] = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            checkpoint["result"] = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.close()
        checkpoint["wal_after"] = wal.stat().st_size if wal.exists() else 0

    async def load() -> None:
        finished: asyncio.Queue = asyncio.Queue()
        done, release = asyncio.Event(), asyncio.Event()

        async def servers_finished() -> None:
            for _ in range(SERVERS):
                await finished.get()
            done.set()

        async def then_checkpoint() -> None:
            try:
                await asyncio.gather(
                    servers_finished(), *(_cli_writer(n, env, tmp_path, done, ledger) for n in range(CLI_WRITERS))
                )
                checkpoint["load_s"] = time.monotonic() - start
                watcher.stop.set()
                await asyncio.to_thread(watcher.join, 30)
                await asyncio.to_thread(truncate_checkpoint)
            finally:
                done.set()
                release.set()

        await asyncio.gather(
            then_checkpoint(), *(_server_client(params, n, ledger, finished, release) for n in range(SERVERS))
        )

    start = time.monotonic()
    watcher.start()
    try:
        asyncio.run(load())
    finally:
        watcher.stop.set()
        watcher.join(timeout=30)
    assert watcher.error is None, watcher.error
    wall = checkpoint["load_s"]  # from the start of the processes to the end of the last operation

    total_ops = sum(ledger.ops.values())
    throughput = total_ops / wall
    wal_bound = max(WAL_BOUND, 4 * WAL_PER_CALL * throughput * READER_HOLD_S)
    n_updates = sum(len(v) for v in ledger.feedback_updates.values())
    n_ratings = sum(len(v) for v in ledger.ratings.values())
    print(
        f"\nstress: {SERVERS} stdio servers x {LANES} lanes x {OPS_PER_LANE} ops + {CLI_WRITERS} CLI writers: "
        f"{total_ops} operations ({dict(sorted(ledger.ops.items()))}) in {wall:.1f} s = {throughput:.1f} ops/s; "
        f"{len(ledger.writes)} memories written, {n_updates} feedback updates, {n_ratings} ratings; "
        f"max WAL {watcher.max_wal / 2**20:.2f} MiB (bound {wal_bound / 2**20:.0f}) "
        f"over {watcher.samples} samples, {watcher.holds} long read holds; "
        f"checkpoint with servers connected: PASSIVE {checkpoint['passive']}, TRUNCATE {checkpoint['result']} "
        f"({checkpoint['wal_before'] / 2**20:.2f} MiB -> "
        f"{checkpoint['wal_after']} bytes)"
    )

    # No tool call failed: locking is handled inside, never surfaced.
    assert not ledger.errors, ledger.errors[:5]
    server_ops = sum(n for tool, n in ledger.ops.items() if not tool.startswith("cli_"))
    assert server_ops == SERVERS * LANES * OPS_PER_LANE
    assert ledger.ops["cli_write"] + ledger.ops["cli_import"] >= CLI_WRITERS * CLI_MIN_RUNS
    assert ledger.ops["memory_feedback"] > 0 and ledger.ops["rate_memory"] > 0
    assert throughput > 20 and wall < 120, (total_ops, wall)
    assert watcher.holds >= 2, "the long-lived reader never overlapped the load"
    assert 0 < watcher.max_wal < wal_bound, f"WAL reached {watcher.max_wal} bytes"

    # A fresh connection checkpointed the whole WAL and truncated it, servers still connected.
    busy, log_frames, checkpointed = checkpoint["passive"]
    assert busy == 0 and log_frames == checkpointed, checkpoint
    assert checkpoint["result"] == (0, 0, 0), checkpoint
    assert checkpoint["wal_after"] == 0, checkpoint

    svc = MemoryService(Settings(db=db, embed_model=MODEL, project=PROJECT, auto_consolidate=False))
    try:
        store = svc.store
        with store.db.read() as c:
            present = {row[0] for row in c.execute("SELECT id FROM memories")}
            events = store.feedback_events()
            rows = {mid: store.get(mid) for mid in present}
        # Every acknowledged write is there, and nothing else.
        assert ledger.writes <= present, sorted(ledger.writes - present)[:5]
        assert present == ledger.writes
        # One event per acknowledged feedback update, per memory, with the valences the client was told.
        assert len(events) == n_updates
        by_memory: dict[str, list[dict]] = {}
        for e in events:
            by_memory.setdefault(e["memory_id"], []).append(e)
        assert by_memory.keys() == ledger.feedback_updates.keys()
        for mid, told in ledger.feedback_updates.items():
            stored = [(round(e["valence_before"], 6), round(e["valence_after"], 6)) for e in by_memory[mid]]
            assert sorted(stored) == sorted(told), mid
        for mid, row in rows.items():
            mine = sorted(by_memory.get(mid, []), key=lambda e: e["seq"])
            assert row["feedback_count"] == len(mine), (
                f"feedback_count of {mid} disagrees with its events (lost update)"
            )
            value = 0.0
            for e in mine:  # each event starts where the previous one (in commit order) left off
                assert e["valence_before"] == pytest.approx(value, abs=1e-9), (mid, e)
                value = delta_rule(value, e["outcome"], e["rate"])
                assert e["valence_after"] == pytest.approx(value, abs=1e-9), (mid, e)
            assert row["valence"] == pytest.approx(value, abs=1e-9), f"valence of {mid} is not the replay of its events"
            # Ratings: the count matches, and the counts returned were 1..n, each once (serialised).
            told_counts = sorted(ledger.ratings.get(mid, []))
            assert int(row["metadata"].get("rating_count", 0)) == len(told_counts), f"lost rating on {mid}"
            assert told_counts == list(range(1, len(told_counts) + 1)), (mid, told_counts)
    finally:
        svc.close()
