"""Learning without being told, through the real hooks: scripted Claude Code sessions, each
event a `mnemo-mcp hook EVENT` process fed the payload shapes Claude Code 2.1.332 sends, with a
transcript written the way it writes one.

Data (`benchmarks/data/capture/`, written by hand apart from the code): debugging stories across
ecosystems. In the first session the user asks (often pasting an error), a check fails, the
assistant gives the usual wrong advice, the user says it still fails, the assistant gives the
real fix, the check passes, the user says it worked. Weeks later (MNEMO_NOW) a new session meets
the problem again: in other words (a prompt), as the same failing check (its output with other
paths, line numbers and timings), or both. Then ordinary prompts that are about none of it.

Reported, with capture on and with capture off (same run, same store otherwise):
- recurrences whose first case shown is the working fix of that story; where the failed advice
  comes first; where no case of the story is shown;
- unrelated prompts that get a captured case;
- case memories stored per first session, and how many without an outcome (must be 0);
- tokens injected per prompt; hook latency (spawn to exit) per event.
An MCP server of the store is up (it answers hooks with the model loaded) unless --no-server.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .common import mnemo_command, percentile, start_hook_server

DATA = Path(__file__).parent / "data" / "capture"
DEFAULT_OUT = Path("benchmarks/results/capture.json")
START = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
_LINE = re.compile(r"^- \[([0-9a-f]{12})\] \(([^)]*)\)")


def load(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    scenarios = [json.loads(x) for x in (folder / "scenarios.jsonl").open(encoding="utf-8") if x.strip()]
    unrelated = [json.loads(x) for x in (folder / "unrelated.jsonl").open(encoding="utf-8") if x.strip()]
    return scenarios, unrelated


class Hooks:
    """Runs hook processes as Claude Code does and keeps their timings."""

    def __init__(self, command: str, env: dict[str, str]):
        self.command, self.env = command, env
        self.ms: dict[str, list[float]] = defaultdict(list)

    def __call__(self, event: str, payload: dict[str, Any], now: datetime) -> str:
        t = time.perf_counter()
        done = subprocess.run(
            [self.command, "hook", event],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env={**self.env, "MNEMO_NOW": now.isoformat()},
            timeout=60,
        )
        self.ms[event].append((time.perf_counter() - t) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"hook {event} exited {done.returncode}: {done.stderr[-500:]}")
        if not done.stdout.strip():
            return ""
        return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


class Session:
    """One Claude Code session: its transcript file and the hook events its steps fire."""

    def __init__(self, hooks: Hooks, sid: str, cwd: Path, now: datetime, filters: list[str]):
        self.hooks, self.sid, self.cwd, self.now, self.filters = hooks, sid, cwd, now, filters
        self.transcript = cwd / f".transcript-{sid}.jsonl"
        self.prompt_id = ""
        self.tools = 0

    def _write(self, entry: dict[str, Any]) -> None:
        with self.transcript.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def _base(self, event: str) -> dict[str, Any]:
        self.now += timedelta(seconds=20)
        return {
            "session_id": self.sid,
            "transcript_path": str(self.transcript),
            "cwd": str(self.cwd),
            "prompt_id": self.prompt_id,
            "permission_mode": "default",
            "effort": {"level": "medium"},
            "hook_event_name": event,
        }

    def start(self) -> str:
        return self.hooks("SessionStart", {**self._base("SessionStart"), "source": "startup"}, self.now)

    def prompt(self, text: str) -> str:
        self.prompt_id = f"{self.sid}-p{self.tools}"
        self._write({"type": "user", "message": {"role": "user", "content": text}})
        return self.hooks("UserPromptSubmit", {**self._base("UserPromptSubmit"), "prompt": text}, self.now)

    def _tool(self, name: str, tool_input: dict[str, Any]) -> str:
        self.tools += 1
        tid = f"toolu_{self.sid}_{self.tools:03d}"
        self._write(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": tid, "name": name, "input": tool_input}],
                },
            }
        )
        return tid

    def _spawns(self, command: str) -> bool:
        """Whether the installer's `if` filters let Claude Code run PostToolUse for this command."""
        parts = [command, *re.split(r"\s*(?:&&|;)\s*", command)]
        # `pytest *` also matches a bare `pytest` (as Claude Code 2.1.332 matches it)
        return any(
            fnmatch.fnmatchcase(p.strip(), pat) or (pat.endswith(" *") and p.strip() == pat[:-2])
            for p in parts
            for pat in self.filters
        )

    def bash(self, command: str, output: str, exit_code: int) -> str:
        tid = self._tool("Bash", {"command": command, "description": "run it"})
        self._write(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": tid, "content": output, "is_error": exit_code != 0}
                    ],
                },
            }
        )
        if exit_code == 0 and not self._spawns(command):  # failures spawn the hook whatever the command
            return ""
        base = {
            **self._base("PostToolUse"),
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "run it"},
            "tool_use_id": tid,
            "duration_ms": 800,
        }
        if exit_code == 0:
            return self.hooks(
                "PostToolUse",
                {
                    **base,
                    "tool_response": {
                        "stdout": output,
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                        "noOutputExpected": False,
                    },
                },
                self.now,
            )
        return self.hooks(
            "PostToolUseFailure",
            {
                **base,
                "hook_event_name": "PostToolUseFailure",
                "error": f"Exit code {exit_code}\n{output}",
                "is_interrupt": False,
            },
            self.now,
        )

    def edit(self, edit: dict[str, Any]) -> None:
        tool = edit.get("tool") or "Edit"
        tool_input = {k: v for k, v in edit.items() if k != "tool"}
        tid = self._tool(tool, tool_input)
        self._write(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tid, "content": "The file was updated."}],
                },
            }
        )
        self.hooks(
            "PostToolUse",
            {
                **self._base("PostToolUse"),
                "tool_name": tool,
                "tool_input": tool_input,
                "tool_response": {"filePath": edit.get("file_path")},
                "tool_use_id": tid,
            },
            self.now,
        )

    def stop(self, answer: str) -> None:
        self._write(
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}}
        )
        self.hooks(
            "Stop",
            {
                **self._base("Stop"),
                "stop_hook_active": False,
                "last_assistant_message": answer,
                "background_tasks": [],
                "session_crons": [],
            },
            self.now,
        )


def _reruns(check: dict[str, Any] | None, command: str) -> bool:
    """Whether `command` runs the story's check again (`tox -r -e py311` reruns `tox -e py311`)."""
    from mnemo_mcp.core import cases, checks

    if not check:
        return False
    kind = checks.check_kind(command)
    return kind is not None and cases.check_identity(kind) == cases.check_identity(check["command"])


def first_session(s: Session, sc: dict[str, Any]) -> None:
    f = sc["first"]
    check = f.get("check")
    s.start()
    s.prompt(f["ask"])
    if check:
        s.bash(check["command"], check["fail_output"], 1)
    for e in f.get("wrong_edits") or []:
        s.edit(e)
    for c in f.get("wrong_commands") or []:
        still = _reruns(check, c)
        s.bash(c, check["fail_output"] if still else "", 1 if still else 0)
    s.stop(f["wrong_answer"])
    s.prompt(f["failed_reaction"])
    for e in f.get("fix_edits") or []:
        s.edit(e)
    verified = False
    for c in f.get("fix_commands") or []:
        is_check = _reruns(check, c)
        s.bash(c, check["pass_output"] if is_check else "", 0)
        verified = verified or is_check
    if check and not verified:
        s.bash(check["command"], check["pass_output"], 0)
    s.stop(f["fix_answer"])
    s.prompt(f["worked_reaction"])
    s.stop("Glad it works.")


def shown(context: str) -> list[tuple[str, str]]:
    """(id prefix, label) of each memory in a hook's context, in order."""
    return [(m.group(1), m.group(2)) for m in map(_LINE.match, context.splitlines()) if m]


def verdict(context: str, mine: dict[str, str], captured: set[str]) -> str:
    """What the first case shown is: this story's working fix, its failed advice, or neither
    (`captured`: the id prefixes of every case the stories left)."""
    cases = [(mid, label) for mid, label in shown(context) if mid in captured]
    if not cases:
        return "none"
    mid, _ = cases[0]
    standing = mine.get(mid)
    if standing == "worked":
        return "fix first"
    if standing == "failed":
        return "failed first"
    return "other case first"


def capture_env(root: Path, db: Path, capture: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    # A setting given to the benchmark (MNEMO_FOLLOW_FLOOR=0.4 python -m benchmarks....) reaches
    # the hooks and the server, as it would from a user's environment; the store is the run's own.
    env |= {k: v for k, v in os.environ.items() if k.startswith("MNEMO_") and k not in ("MNEMO_DB", "MNEMO_PROJECT")}
    return env | {
        "MNEMO_DB": str(db),
        "MNEMO_HOOK_LOG": str(root / "hooks.log"),
        "MNEMO_AUTO_CONSOLIDATE": "false",
        "MNEMO_CAPTURE": capture,
    }


def make_projects(root: Path, scenarios) -> dict[str, Path]:
    """Every story's project folder (a git checkout); the first folder of each ecosystem."""
    projects = {}
    for sc in scenarios:
        folder = root / sc["project"]
        (folder / ".git").mkdir(parents=True, exist_ok=True)
        projects.setdefault(sc["ecosystem"], folder)
    return projects


def teach(
    hooks: Hooks, root: Path, scenarios, env: dict[str, str], filters: list[str]
) -> tuple[dict[str, dict[str, str]], list[int]]:
    """Every story's first session: (per story, the standing of each case it left, by id
    prefix; the number of new cases per session)."""
    mine: dict[str, dict[str, str]] = {}
    per_session: list[int] = []
    seen: set[str] = set()
    for i, sc in enumerate(scenarios):
        s = Session(hooks, f"s1-{sc['id']}", root / sc["project"], START + timedelta(minutes=30 * i), filters)
        first_session(s, sc)
        captured = _captured(env, root / sc["project"])
        new = {m.id: m for m in captured if m.id not in seen}
        seen |= set(new)
        mine[sc["id"]] = {mid[:12]: _standing(m.valence) for mid, m in new.items()}
        per_session.append(len(new))
    return mine, per_session


def _story(sc: dict[str, Any], met_as: str, outcome: str, ctx: str, mine: dict[str, dict[str, str]]) -> dict:
    return {"id": sc["id"], "as": met_as, "verdict": outcome, "shown": shown(ctx), "captured": mine[sc["id"]]}


def recur(
    hooks: Hooks, root: Path, scenarios, mine: dict[str, dict[str, str]], filters: list[str], tokens: list[int]
) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """Every story met again weeks later, as a prompt, as the failing check, or both: (the
    verdicts per way, one record per meeting); the prompts' tokens go to `tokens`."""
    outcomes: dict[str, list[str]] = {"prompt": [], "check": []}
    stories: list[dict[str, Any]] = []
    captured = {p for story in mine.values() for p in story}
    for i, sc in enumerate(scenarios):
        rec = sc["recurrence"]
        later = START + timedelta(days=rec["days_later"], minutes=30 * i)
        s = Session(hooks, f"s2-{sc['id']}", root / sc["project"], later, filters)
        s.start()
        if rec["mode"] in ("prompt", "both") and rec.get("prompt"):
            ctx = s.prompt(rec["prompt"])
            tokens.append(_tokens(ctx))
            outcomes["prompt"].append(verdict(ctx, mine[sc["id"]], captured))
            stories.append(_story(sc, "prompt", outcomes["prompt"][-1], ctx, mine))
        if rec["mode"] in ("check", "both") and rec.get("check"):
            if rec["mode"] == "check":
                s.prompt("run the tests")
            ctx = s.bash(rec["check"]["command"], rec["check"]["fail_output"], 1)
            outcomes["check"].append(verdict(ctx, mine[sc["id"]], captured))
            stories.append(_story(sc, "check", outcomes["check"][-1], ctx, mine))
    return outcomes, stories


def reached(context: str, mine: dict[str, str], captured: set[str]) -> str:
    """What of a story reached the model first: its working fix whole (`fix whole`), or only as a
    one-line pointer (`fix pointer`), its failed advice, another case, or nothing."""
    first = verdict(context, mine, captured)
    if first != "fix first":
        return first
    line = next(ln for ln in (context or "").splitlines() if any(ln.startswith(f"- [{p}]") for p in mine))
    return "fix pointer" if line.rstrip().endswith("…") else "fix whole"


def recur_in_words(
    hooks: Hooks, root: Path, scenarios, words, mine: dict[str, dict[str, str]], filters: list[str], tokens: list[int]
) -> list[dict[str, Any]]:
    """Every story's problem asked again in the user's own words (recurrences_words.jsonl, apart
    from the code): what reached the model, scored from the hook's own output."""
    by_id = {sc["id"]: (i, sc) for i, sc in enumerate(scenarios)}
    captured = {p for story in mine.values() for p in story}
    out = []
    for j, w in enumerate(words):
        if w["scenario"] not in by_id:
            continue
        i, sc = by_id[w["scenario"]]
        later = START + timedelta(days=sc["recurrence"]["days_later"] + 1, minutes=30 * i + j)
        s = Session(hooks, f"w-{w['id']}", root / sc["project"], later, filters)
        ctx = s.prompt(w["prompt"])
        tokens.append(_tokens(ctx))
        out.append(
            {
                "id": w["id"],
                "scenario": sc["id"],
                "split": w["split"],
                "reached": reached(ctx, mine[sc["id"]], captured),
            }
        )
    return out


def unrelated_prompts(
    hooks: Hooks, unrelated, projects: dict[str, Path], filters: list[str], tokens: list[int], captured: set[str]
) -> int:
    """Prompts about none of the stories: how many got a captured case (their tokens go to `tokens`)."""
    noise = 0
    for i, u in enumerate(unrelated):
        folder = projects.get(u.get("ecosystem")) or next(iter(projects.values()))
        s = Session(hooks, f"u-{u['id']}", folder, START + timedelta(days=70, minutes=i), filters)
        ctx = s.prompt(u["prompt"])
        tokens.append(_tokens(ctx))
        noise += any(mid in captured for mid, _ in shown(ctx))
    return noise


def stored_cases(db: Path) -> tuple[int, dict[str, int], int]:
    """The captured cases in the store: (how many, how many of each kind, how many without an outcome)."""
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    svc = MemoryService(Settings(db=db, scope="all", auto_consolidate=False))
    try:
        page = svc.browse_list(None, source="capture", archived="all", limit=200)
        without_outcome = sum(1 for m in page.items if m.feedback_count == 0)
        kinds = defaultdict(int)
        for m in page.items:
            kinds[next((t for t in m.tags if t in ("fix", "attempt", "advice")), "other")] += 1
    finally:
        svc.close()
    return page.total, kinds, without_outcome


def run(a: argparse.Namespace, scenarios, unrelated, capture: str, command: str, words=()) -> dict[str, Any]:
    from mnemo_mcp.claude_install import CHECK_FILTERS

    filters = [f[len("Bash(") : -1] for f in CHECK_FILTERS]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        db = root / "capture.db"
        env = capture_env(root, db, capture)
        hooks = Hooks(command, env)
        projects = make_projects(root, scenarios)
        server = None if a.no_server else start_hook_server(env, root, db)
        try:
            mine, per_session = teach(hooks, root, scenarios, env, filters)
            tokens: list[int] = []
            outcomes, stories = recur(hooks, root, scenarios, mine, filters, tokens)
            in_words = recur_in_words(hooks, root, scenarios, words, mine, filters, tokens)
            captured = {p for story in mine.values() for p in story}
            noise = unrelated_prompts(hooks, unrelated, projects, filters, tokens, captured)
            total, kinds, without_outcome = stored_cases(db)
        finally:
            if server is not None:
                server.send_signal(2)
                server.wait(timeout=30)
        log = root / "hooks.log"
        errors = log.read_text() if log.exists() else ""
    share = {k: _shares(v) for k, v in outcomes.items()}
    return {
        "capture": capture,
        "recurrences": share,
        "recurrences_all": _shares(outcomes["prompt"] + outcomes["check"]),
        "recurrences_in_words": {
            split: _reach_shares([x["reached"] for x in in_words if x["split"] == split]) for split in ("tune", "test")
        },
        "unrelated_with_a_case": noise / len(unrelated) if unrelated else 0.0,
        "cases_per_first_session": sum(per_session) / len(per_session),
        "cases_stored": total,
        "cases_by_kind": dict(kinds),
        "stored_without_an_outcome": without_outcome,
        "tokens_per_prompt": sum(tokens) / len(tokens) if tokens else 0.0,
        "hook_ms": {
            e: {"p50": percentile(v, 0.5), "p95": percentile(v, 0.95), "n": len(v)} for e, v in hooks.ms.items()
        },
        "hook_errors": errors[-2000:],
        "stories": stories,
    }


def _reach_shares(values: list[str]) -> dict[str, float]:
    n = len(values) or 1
    kinds = ("fix whole", "fix pointer", "failed first", "other case first", "none")
    return {k: sum(1 for v in values if v == k) / n for k in kinds} | {"n": len(values)}


def _shares(values: list[str]) -> dict[str, float]:
    n = len(values) or 1
    return {
        k: sum(1 for v in values if v == k) / n for k in ("fix first", "failed first", "other case first", "none")
    } | {"n": len(values)}


def _standing(valence: float) -> str:
    from mnemo_mcp.core.cases import case_standing

    return case_standing(valence)


def _tokens(context: str) -> int:
    from mnemo_mcp.hooks.handlers import tokens

    return tokens(context) if context else 0


def _captured(env: dict[str, str], cwd: Path):
    from mnemo_mcp.config import Settings
    from mnemo_mcp.service import MemoryService

    svc = MemoryService(Settings(db=env["MNEMO_DB"], scope="all", auto_consolidate=False))
    try:
        return svc.browse_list(None, source="capture", archived="all", limit=200).items
    finally:
        svc.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.capture", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data-dir", type=Path, default=DATA)
    p.add_argument("--quick", action="store_true", help="8 stories and 10 unrelated prompts (CI)")
    p.add_argument("--no-server", action="store_true", help="hooks alone (keyword recall), no MCP server up")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv)
    scenarios, unrelated = load(a.data_dir)
    words_file = a.data_dir / "recurrences_words.jsonl"
    words = [json.loads(x) for x in words_file.open(encoding="utf-8") if x.strip()] if words_file.exists() else []
    if a.quick:
        scenarios, unrelated = scenarios[::9][:8], unrelated[:10]
    command = mnemo_command()
    report = {
        "benchmark": "capture",
        "stories": len(scenarios),
        "unrelated": len(unrelated),
        "server": not a.no_server,
        "runs": [run(a, scenarios, unrelated, mode, command, words) for mode in ("outcomes", "off")],
    }
    print(
        f"capture through the real hooks: {len(scenarios)} stories, {len(unrelated)} unrelated prompts, "
        f"{'an MCP server up' if not a.no_server else 'no server'}"
    )
    for r in report["runs"]:
        allr = r["recurrences_all"]
        print(f"\nMNEMO_CAPTURE={r['capture']}")
        print(
            f"  recurrences (n={allr['n']}): fix first {allr['fix first']:.0%}, failed advice first "
            f"{allr['failed first']:.0%}, "
            f"another case first {allr['other case first']:.0%}, none {allr['none']:.0%}"
        )
        for k, v in r["recurrences"].items():
            print(
                f"    as a {k} (n={v['n']}): fix first {v['fix first']:.0%}, failed first {v['failed first']:.0%}, "
                f"none {v['none']:.0%}"
            )
        for split, v in r["recurrences_in_words"].items():
            print(
                f"  asked again in other words, {split} (n={v['n']}): the fix reached the model whole "
                f"{v['fix whole']:.0%}, as a pointer {v['fix pointer']:.0%}; failed advice first "
                f"{v['failed first']:.0%}, another case first {v['other case first']:.0%}, nothing {v['none']:.0%}"
            )
        print(f"  unrelated prompts given a case: {r['unrelated_with_a_case']:.0%}")
        print(
            f"  cases per first session {r['cases_per_first_session']:.2f} ({r['cases_stored']} in all, "
            f"{r['cases_by_kind']}); "
            f"stored without an outcome: {r['stored_without_an_outcome']}"
        )
        print(f"  tokens injected per prompt {r['tokens_per_prompt']:.1f}")
        print(
            "  hook p50/p95 ms: "
            + ", ".join(f"{e} {v['p50']:.0f}/{v['p95']:.0f}" for e, v in sorted(r["hook_ms"].items()))
        )
        if r["hook_errors"]:
            print(f"  hook errors:\n{r['hook_errors']}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2))
    print(f"\nresults: {a.out}")
    return 1 if any(r["hook_errors"] for r in report["runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
