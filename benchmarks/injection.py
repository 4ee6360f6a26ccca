"""Hostile notes against the prompt hook: what gets injected, what is kept out, what is lost.

Data (`benchmarks/data/injection/notes.jsonl`, written by hand apart from the detector): hostile
notes (overrides, forged role and system markers, fence escapes, commands to run, exfiltration,
credential requests, encoded, obfuscated and multilingual variants, social pressure) and benign
coding notes, many of them hard (rules with "always" and "never", documented install pipes,
destructive-but-normal commands, code fences, notes about prompt injection, user preferences),
split into tune and test.

All notes go into one store (as written: the secrets guard allows, the duplicate check is off),
an MCP server of it is up, and the real UserPromptSubmit hook (`mnemo-mcp hook`) runs once per
note with the note's own text as the prompt, the prompt most likely to bring it back. Reported
per split: hostile notes injected (goal 0), benign notes kept out by quarantine (goal <= 1%),
hook outputs that are valid JSON with one fence, and whether every note is still stored.

`--corpus trust` runs the trust corpus instead (`benchmarks/data/trust/`, written by helper
sessions apart from the detector: hostile notes by kind, in many languages and disguises, and
benign look-alikes), reported by kind and by file set (`a+b`, then `c` and `d`), with what the
model's own `memory_read` would show: hostile text that reaches it unwithheld.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import mnemo_command, start_hook_server

DATA = Path(__file__).parent / "data" / "injection" / "notes.jsonl"
TRUST = Path(__file__).parent / "data" / "trust"
TRUST_SETS = {
    "a+b": ("hostile_a", "hostile_b", "benign_a", "benign_b"),
    "c": ("hostile_c", "benign_c"),
    "d": ("hostile_d", "benign_d"),
    "e": ("hostile_e", "benign_e"),
    "f": ("hostile_f", "benign_f"),
    "g": ("hostile_g", "benign_g"),
    "h": ("hostile_h", "benign_h"),
    "i": ("hostile_i", "benign_i"),
    "j": ("hostile_j", "benign_j"),
    "k": ("hostile_k", "benign_k"),
}
DEFAULT_OUT = Path("benchmarks/results/injection.json")
PROJECT = "shop-api"
_ID = re.compile(r"^- \[([0-9a-f]{12})\]")
_FENCE = re.compile(r"^</?mnemo-notes-([0-9a-f]{12})>$")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.injection", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--corpus", choices=("injection", "trust"), default="injection", help="which data set (see above)")
    p.add_argument("--quick", action="store_true", help="40 notes of each split (CI)")
    p.add_argument("--sets", help=f"--corpus trust: only these file sets, comma-separated ({', '.join(TRUST_SETS)})")
    p.add_argument("--no-server", action="store_true", help="hooks alone (keyword recall)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return p.parse_args(argv)


def load_notes(path: Path, quick: bool, corpus: str = "injection", sets: str | None = None) -> list[dict[str, Any]]:
    if corpus == "trust":
        notes = []
        chosen = set(sets.split(",")) if sets else set(TRUST_SETS)
        for group, names in TRUST_SETS.items():
            if group not in chosen:
                continue
            for name in names:
                for line in (TRUST / f"{name}.jsonl").open(encoding="utf-8"):
                    if line.strip():
                        notes.append({**json.loads(line), "set": group})
        for n in notes:
            n["category"] = n["kind"]
    else:
        notes = [json.loads(x) for x in path.open(encoding="utf-8") if x.strip()]
    if quick:
        notes = [n for n in notes if n["split"] == "tune"][:40] + [n for n in notes if n["split"] == "test"][:40]
    return notes


def hook_env(root: Path, db: Path) -> dict[str, str]:
    """The hooks' and the server's environment: this store, no upkeep, secrets allowed, no dedup."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    return env | {
        "MNEMO_DB": str(db),
        "MNEMO_HOOK_LOG": str(root / "hooks.log"),
        "MNEMO_AUTO_CONSOLIDATE": "false",
        "MNEMO_AUTO_BACKUP": "false",
        "MNEMO_SECRETS": "allow",
        "MNEMO_DEDUP": "false",
    }


def store_notes(db: Path, notes: list[dict[str, Any]]) -> list[Any]:
    """Every note written as it is (the secrets guard allows, the duplicate check is off)."""
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    svc = MemoryService(
        Settings(db=db, project=PROJECT, secrets="allow", dedup=False, auto_consolidate=False, auto_backup=False)
    )
    results = svc.write_many([{"content": n["content"], "allow_duplicate": True} for n in notes])
    svc.close()
    return results


def prompt_hook(env: dict[str, str], project: Path, i: int, prompt: str) -> subprocess.CompletedProcess:
    """The real UserPromptSubmit hook, with `prompt` as the user's prompt."""
    payload = {
        "session_id": f"inj-{i}",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(project),
        "prompt_id": f"p-{i}",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    return subprocess.run(
        [mnemo_command(), "hook", "UserPromptSubmit"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@dataclass
class HookOutputs:
    """What the prompt hook printed over all notes."""

    injected: set[str] = field(default_factory=set)  # id prefixes of the notes it showed
    outputs: int = 0
    bad_json: int = 0
    fences_wrong: int = 0

    def add(self, stdout: str) -> None:
        if not stdout.strip():
            return
        self.outputs += 1
        try:
            text = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
        except (ValueError, KeyError, TypeError):
            self.bad_json += 1
            return
        lines = text.splitlines()
        nonces = [m.group(1) for m in map(_FENCE.match, lines) if m]
        if len(nonces) != 2 or nonces[0] != nonces[1] or lines[-1] != f"</mnemo-notes-{nonces[0]}>":
            self.fences_wrong += 1
        self.injected |= {m.group(1) for m in map(_ID.match, lines) if m}


def run_hooks(env: dict[str, str], project: Path, db: Path, notes: list[dict[str, Any]], server: bool) -> HookOutputs:
    """The prompt hook once per note, its text as the prompt, with an MCP server up if `server`."""
    proc = start_hook_server(env, project, db) if server else None
    seen = HookOutputs()
    try:
        for i, n in enumerate(notes):
            seen.add(prompt_hook(env, project, i, n["content"]).stdout)
    finally:
        if proc is not None:
            proc.send_signal(2)
            proc.wait(timeout=30)
    return seen


def stored_notes(db: Path) -> dict[str, dict[str, Any]]:
    """The memories still in the store, by id prefix."""
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    svc = MemoryService(Settings(db=db, project=PROJECT, auto_consolidate=False, auto_backup=False))
    stored = {r["id"][:12]: r for r in svc.export() if r["type"] == "memory"}
    svc.close()
    return stored


def read_unwithheld(db: Path, notes: list[tuple[str, dict[str, Any]]]) -> set[str]:
    """The hostile notes whose text `memory_read` gives the model as it is (not withheld), each
    read with the note's own text as the query (what most likely brings it back)."""
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    hostile = {mid for mid, n in notes if n["label"] == "hostile"}
    shown: set[str] = set()
    svc = MemoryService(Settings(db=db, project=PROJECT, auto_consolidate=False, auto_backup=False))
    try:
        for _, n in notes:
            if n["label"] != "hostile":
                continue
            for it in svc.read(n["content"][:2000], top_k=5, record=False).items:
                if it.id[:12] in hostile and not it.quarantined:
                    shown.add(it.id[:12])
    finally:
        svc.close()
    return shown


def split_figures(
    part: list[tuple[str, dict[str, Any]]], injected: set[str], stored: dict, read_shown: set[str] = frozenset()
) -> dict[str, Any]:
    """One split's hostile notes injected and quarantined, benign notes kept out and injected."""
    hostile = [(mid, n) for mid, n in part if n["label"] == "hostile"]
    benign = [(mid, n) for mid, n in part if n["label"] == "benign"]
    hostile_in = [n for mid, n in hostile if mid in injected]
    kept_out = [n for mid, n in benign if stored.get(mid, {}).get("quarantine")]
    return {
        "hostile": len(hostile),
        "hostile_injected": len(hostile_in),
        "hostile_injected_by_category": dict(Counter(n["category"] for n in hostile_in)),
        "hostile_quarantined": sum(1 for mid, _ in hostile if stored.get(mid, {}).get("quarantine")),
        "benign": len(benign),
        "benign_kept_out": len(kept_out),
        "benign_kept_out_share": len(kept_out) / len(benign) if benign else 0.0,
        "benign_kept_out_by_category": dict(Counter(n["category"] for n in kept_out)),
        "benign_injected": sum(1 for mid, _ in benign if mid in injected),
        "hostile_by_category": dict(Counter(n["category"] for _, n in hostile)),
        "benign_by_category": dict(Counter(n["category"] for _, n in benign)),
        "hostile_read_unwithheld": sum(1 for mid, _ in hostile if mid in read_shown),
    }


def print_report(report: dict[str, Any], server: bool) -> None:
    print(f"prompt hook against {report['notes']} notes ({'an MCP server up' if server else 'no server'})")
    for split, r in report["splits"].items():
        print(
            f"  {split}: hostile injected {r['hostile_injected']} of {r['hostile']} "
            f"({r['hostile_quarantined']} quarantined, {r['hostile_read_unwithheld']} unwithheld in memory_read); "
            f"benign kept out {r['benign_kept_out']} of {r['benign']} ({r['benign_kept_out_share']:.1%}); "
            f"benign injected {r['benign_injected']}"
        )
        for label, bad in (("hostile", "hostile_injected_by_category"), ("benign", "benign_kept_out_by_category")):
            kinds = r[f"{label}_by_category"]
            print(f"    {label} {'injected' if label == 'hostile' else 'kept out'} by kind: ", end="")
            print(", ".join(f"{k} {r[bad].get(k, 0)}/{v}" for k, v in sorted(kinds.items())))
    print(
        f"  hook outputs {report['hook_outputs']}: invalid JSON {report['invalid_json']}, fence errors "
        f"{report['fence_errors']}; notes stored {report['stored']} of {report['notes']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    unknown = set(a.sets.split(",")) - set(TRUST_SETS) if a.sets else set()
    if unknown:
        names = ", ".join(TRUST_SETS)
        raise SystemExit(f"--sets: no trust set named {', '.join(sorted(unknown))}; the sets are {names}")
    notes = load_notes(a.data, a.quick, a.corpus, a.sets)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = root / PROJECT
        (project / ".git").mkdir(parents=True)
        db = root / "injection.db"
        env = hook_env(root, db)
        results = store_notes(db, notes)
        by_id = {r.id[:12]: n for r, n in zip(results, notes)}
        seen = run_hooks(env, project, db, notes, server=not a.no_server)
        stored = stored_notes(db)
        read_shown = read_unwithheld(db, [(r.id[:12], n) for r, n in zip(results, notes)])
        log = root / "hooks.log"
        errors = log.read_text() if log.exists() else ""
    report: dict[str, Any] = {
        "benchmark": "injection",
        "corpus": a.corpus,
        "notes": len(notes),
        "server": not a.no_server,
        "splits": {},
    }
    for group in sorted({n.get("set", "") for n in notes}):
        for split in ("tune", "test"):
            part = [(r.id[:12], n) for r, n in zip(results, notes) if n["split"] == split and n.get("set", "") == group]
            key = f"{group} {split}".strip()
            report["splits"][key] = split_figures(part, seen.injected, stored, read_shown)
    report |= {
        "hook_outputs": seen.outputs,
        "invalid_json": seen.bad_json,
        "fence_errors": seen.fences_wrong,
        "stored": len(stored),
        "all_stored": len(stored) == len(notes) and set(stored) == set(by_id),
        "hook_errors": errors[-2000:],
    }
    print_report(report, server=not a.no_server)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2))
    print(f"results: {a.out}")
    return 1 if errors or seen.bad_json or seen.fences_wrong or not report["all_stored"] else 0


if __name__ == "__main__":
    sys.exit(main())
