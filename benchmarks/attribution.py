"""Credit what was acted on: multi-session coding stories through the real hooks.

Data (`benchmarks/data/attribution/`, written by helper sessions apart from the code): in each
story the store already holds a note with the real fix, a note with plausible wrong advice and
notes on neighbouring subjects; over two to four Claude Code sessions weeks apart the assistant
is shown some of them, runs the check before changing anything, follows the wrong note or the
fix or its own idea, runs checks (some in the background), and the user reacts. Each step's
`follows` says what the assistant's action carried out. All stories share one store, their
sessions interleaved by day; every event is a `mnemo-mcp hook EVENT` process fed the payload
shapes Claude Code 2.1.332 sends, with an MCP server of the store up.

What is scored, from the store and from what reached the model:
- sign accuracy of every valence change of a story's notes: a note followed in the attempt a
  verdict judges moves the verdict's way (up for a pass or "it worked", down for a failure);
  any other change is wrong. The attempt a verdict judges is what the assistant did since the
  previous verdict (a failing check or a reaction): a check with nothing done before it judges
  nothing;
- shown, not followed: each verdict, each note shown in the session so far that the attempt did
  not follow: moved by at most 0.02;
- when each story's problem is asked again (its recurrence prompt, in other words), the first of
  the story's memories in the injected text: the working fix (its note, or a captured case that
  worked), the failed advice (its note, or a captured case that failed), or none;
- tokens injected per prompt.

    python -m benchmarks.attribution [--split test] [--quick]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .agent import AgentSession, InProcessHooks, edit_payloads
from .capture import Hooks, capture_env
from .common import mnemo_command, start_hook_server

DATA = Path(__file__).parent / "data" / "attribution"
DEFAULT_OUT = Path("benchmarks/results/attribution.json")
START = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
MOVED = 0.02  # a shown, unfollowed note may move this much and still count as unchanged
_ID = re.compile(r"^- \[([0-9a-f]{12})\]", re.M)
ROLES = ("fix", "wrong", "own")


def load(folder: Path) -> list[dict[str, Any]]:
    stories = []
    for path in sorted(folder.glob("stories_*.jsonl")):
        stories += [json.loads(x) for x in path.open(encoding="utf-8") if x.strip()]
    return stories


# Commands that only look (the data's `follows: null` covers both checks and looks): the story's
# truth, kept apart from mnemo's own check detection.
_LOOK = re.compile(
    r"^\s*(?:cd\s+\S+\s*(?:&&|;)\s*)?(?:grep|rg|sed|cat|head|tail|less|ls|tree|find|echo|printf|pwd|which|env|sleep|"
    r"wc|diff|stat|file|jq|curl\s+-s?I|git\s+(?:log|ls-files|diff|status|show|config|blame|branch|remote|rev-parse|-C)|"
    r"helm\s+(?:history|get|status|list)|cargo\s+tree|go\s+(?:env|list|version)|kubectl(?:\s+-n\s+\S+)?\s+"
    r"(?:get|describe|logs)|docker\s+(?:ps|logs|inspect|images)|gh\s+(?:api|run\s+(?:view|list)|pr\s+view)|npm\s+ls|pip\s+(?:show|list))\b"
)


def _verdict_sign(step: dict[str, Any], commands: dict[str, str] | None = None) -> int:
    """+1 / -1 for a step that judges the work (a reaction, a check's end), 0 for any other."""
    if step["type"] == "prompt":
        return {"worked": 1, "partial": 1, "failed": -1}.get(step.get("reaction") or "", 0)
    if step["type"] == "task_done":
        command = (commands or {}).get(step["task_id"], "")
    elif step["type"] == "bash" and step.get("follows") is None:
        command = step["command"]
    else:
        return 0
    if _LOOK.match(command):
        return 0
    return 1 if int(step["exit_code"]) == 0 else -1


class Truth:
    """What the story says was followed in the attempt each verdict judges: a check judges what
    was done since the previous check or reaction; a reaction what was done since the last
    failing check (what a failure refuted is judged already) or the previous reaction."""

    def __init__(self) -> None:
        self.since_check: set[str] = set()
        self.since_failure: set[str] = set()
        self.at_background: dict[str, set[str]] = {}
        self.commands: dict[str, str] = {}  # background task id -> its command

    def judged_by(self, step: dict[str, Any]) -> set[str]:
        sign = _verdict_sign(step, self.commands)
        if step["type"] == "prompt":
            roles = set(self.since_failure)
            self.since_check, self.since_failure = set(), set()
            return roles
        roles = set(self.at_background.get(step.get("task_id"), self.since_check))
        self.since_check = set()
        if sign < 0:
            self.since_failure = set()
        return roles

    def act(self, step: dict[str, Any]) -> None:
        if step["type"] == "bash_background":
            self.at_background[step["task_id"]] = set(self.since_check)
            self.commands[step["task_id"]] = step["command"]
        role = step.get("follows")
        if role not in ROLES:
            return
        if step["type"] in ("edit", "write", "bash"):  # a check judges what was done
            self.since_check.add(role)
        if step["type"] in ("edit", "write", "bash", "answer"):  # a reaction, also what was said
            self.since_failure.add(role)


class Run:
    """The whole store's run: every story's sessions in day order, scored as they go."""

    def __init__(self, root: Path, hooks: Hooks, filters: list[str], embedder: Any):
        self.root, self.hooks, self.filters, self.embedder = root, hooks, filters, embedder
        self.services: dict[str, Any] = {}
        self.changes: list[dict[str, Any]] = []  # every valence change of a story's note
        self.unfollowed: list[dict[str, Any]] = []  # every (verdict, shown note not followed)
        self.followed: list[dict[str, Any]] = []  # every (verdict, shown note followed): was it credited?
        self.recurrences: list[dict[str, Any]] = []
        self.tokens: list[int] = []
        self.cases: dict[str, str] = {}  # captured case id -> story id
        self.tool_roles: dict[str, str | None] = {}  # tool_use id -> what that call carried out
        self.sessions: list[tuple[dict[str, Any], str, dict[str, str]]] = []  # (story, session id, its ids)

    def service(self, project: str):
        from mnemo_mcp.config import Settings
        from mnemo_mcp.service import MemoryService

        if project not in self.services:
            settings = Settings(
                db=self.root / "attribution.db",
                project=project,
                auto_consolidate=False,
                auto_backup=False,
                secrets="redact",  # a story's note may quote a placeholder credential
            )
            self.services[project] = MemoryService(settings, self.embedder)
        return self.services[project]

    def close(self) -> None:
        for svc in self.services.values():
            svc.close()

    def keep(self, folder: Path) -> None:
        """A copy of the store, for reading what the session log recorded."""
        import shutil

        folder.mkdir(parents=True, exist_ok=True)
        for f in self.root.glob("attribution.db*"):
            if f.is_file():
                shutil.copy2(f, folder / f.name)

    def seed(self, story: dict[str, Any]) -> dict[str, str]:
        """The story's notes in the store -> role -> memory id."""
        svc = self.service(story["project"])
        mem = story["memories"]
        roles = {"fix": mem.get("fix"), "wrong": mem.get("wrong")}
        roles |= {f"near{i}": text for i, text in enumerate(mem.get("near") or [])}
        return {role: svc.write(text, allow_duplicate=True).id for role, text in roles.items() if text}

    def valences(self, project: str, ids: dict[str, str]) -> dict[str, float]:
        svc = self.service(project)
        with svc.store.db.read():
            rows = svc.store.rows_by_ids(list(ids.values()))
        return {role: rows[mid]["valence"] for role, mid in ids.items() if mid in rows}

    def session(self, story: dict[str, Any], n: int, ids: dict[str, str], when: datetime) -> None:
        cwd = self.root / story["project"]
        svc = self.service(story["project"])
        s = AgentSession(
            self.hooks, f"{story['id']}-s{n}", cwd, when, self.filters, read=lambda q: svc.read(q, top_k=5)
        )
        truth, shown = Truth(), set()
        self.sessions.append((story, s.sid, ids))
        shown |= self._seen(s.start(), ids)
        for k, step in enumerate(story["sessions"][n]["steps"]):
            self.where = (n, k)
            before = self.valences(story["project"], ids)
            sign = _verdict_sign(step, truth.commands)
            judged = truth.judged_by(step) if sign else set()
            calls = s.tools
            context = self._step(s, step, cwd)
            for i in range(calls + 1, s.tools + 1):
                self.tool_roles[f"toolu_{s.sid}_{i:03d}"] = step.get("follows")
            shown |= self._seen(context, ids)
            if step["type"] == "read":
                shown |= {r for r, mid in ids.items() if mid in set(context)}
            after = self.valences(story["project"], ids)
            self._score(story, step, sign, judged, shown, before, after)
            truth.act(step)
        self._note_cases(story)

    def _step(self, s: AgentSession, step: dict[str, Any], cwd: Path):
        kind = step["type"]
        if kind == "prompt":
            context = s.prompt(step["text"])
            self.tokens.append(_tokens(context))
            return context
        if kind == "read":
            return s.memory_read(step["query"])
        if kind == "bash":
            return s.bash(step["command"], step.get("output", ""), int(step["exit_code"]))
        if kind == "bash_background":
            return s.bash_background(step["command"], step["task_id"])
        if kind == "task_done":
            return s.task_done(step["task_id"], int(step["exit_code"]), step.get("output", ""))
        if kind in ("edit", "write"):
            s.file_edit(*edit_payloads(step, cwd))
            return ""
        if kind == "answer":
            s.stop(step["text"])
            return ""
        raise ValueError(f"unknown step type {kind!r}")

    @staticmethod
    def _seen(context: Any, ids: dict[str, str]) -> set[str]:
        if not isinstance(context, str) or not context:
            return set()
        prefixes = set(_ID.findall(context))
        return {role for role, mid in ids.items() if mid[:12] in prefixes}

    def _score(self, story, step, sign, judged, shown, before, after) -> None:
        for role, v in after.items():
            delta = v - before.get(role, v)
            followed = role in judged
            if abs(delta) > 1e-9:
                right = bool(sign) and followed and (delta > 0) == (sign > 0)
                self.changes.append(
                    {
                        "story": story["id"],
                        "split": story["split"],
                        "role": role,
                        "delta": delta,
                        "step": step["type"],
                        "sign": sign,
                        "followed": followed,
                        "right": right,
                        "at": list(self.where),
                    }
                )
            if sign and role in shown and followed and role in ("fix", "wrong"):
                self.followed.append(
                    {
                        "story": story["id"],
                        "split": story["split"],
                        "role": role,
                        "at": list(self.where),
                        "step": step["type"],
                        "credited": abs(delta) > 1e-9 and (delta > 0) == (sign > 0),
                    }
                )
            if sign and role in shown and not followed:
                self.unfollowed.append(
                    {
                        "story": story["id"],
                        "split": story["split"],
                        "role": role,
                        "delta": delta,
                        "kept": abs(delta) <= MOVED,
                    }
                )

    def _note_cases(self, story: dict[str, Any]) -> None:
        svc = self.service(story["project"])
        for m in svc.browse_list(None, source="capture", archived="all", limit=200).items:
            self.cases.setdefault(m.id, story["id"])

    def recur(self, story: dict[str, Any], ids: dict[str, str], when: datetime) -> None:
        cwd = self.root / story["project"]
        svc = self.service(story["project"])
        s = AgentSession(
            self.hooks, f"{story['id']}-again", cwd, when, self.filters, read=lambda q: svc.read(q, top_k=5)
        )
        s.start()
        context = s.prompt(story["recurrence"]["prompt"])
        self.tokens.append(_tokens(context))
        mine = {mid[:12]: role for role, mid in ids.items() if role in ("fix", "wrong")}
        for mid, owner in self.cases.items():
            if owner == story["id"]:
                mine[mid[:12]] = self._case_role(svc, mid)
        first = next((mine[p] for p in _ID.findall(context or "") if p in mine), None)
        verdict = {"fix": "fix first", "wrong": "failed first", None: "none"}.get(first, "other first")
        self.recurrences.append(
            {"story": story["id"], "split": story["split"], "verdict": verdict, "shown": (context or "")[:1500]}
        )

    def alignments(self) -> list[dict[str, Any]]:
        """Each batch of actions the store weighed, against each story note shown before it:
        its alignment, and whether one of the batch's calls carried that note out (the data's
        truth). What tells followed from shown, measured apart from any outcome."""
        out = []
        for story, sid, ids in self.sessions:
            svc = self.service(story["project"])
            with svc.store.db.read():
                events = svc.store.session_events(sid)
            shown: set[str] = set()
            for e in events:
                if e["kind"] in ("recall", "digest"):
                    shown |= set(e["memory_ids"])
                if e["kind"] != "actions" or not e["detail"].get("changes"):
                    continue
                done = {self.tool_roles.get(i) for i in e["detail"].get("ids", [])}
                aligned = e["detail"].get("alignment", {})
                for role, mid in ids.items():
                    if mid in shown:
                        out.append(
                            {
                                "split": story["split"],
                                "role": role,
                                "followed": role in done,
                                "alignment": float(aligned.get(mid, 0.0)),
                                "story": story["id"],
                                "calls": e["detail"].get("ids", []),
                            }
                        )
        return out

    @staticmethod
    def _case_role(svc, mid: str) -> str:
        """A captured case counts as the working fix when its outcomes say it worked."""
        try:
            q = svc.quality(mid)
        except Exception:  # noqa: BLE001 - deleted or merged meanwhile
            return "other"
        return "fix" if q.valence > 0 else "wrong" if q.valence < 0 else "other"


def _tokens(context: Any) -> int:
    from mnemo_mcp.hooks.handlers import tokens

    return tokens(context) if isinstance(context, str) and context else 0


def schedule(stories: list[dict[str, Any]]) -> list[tuple[datetime, int, int | None]]:
    """(when, story index, session index or None for the recurrence), in time order: the stories'
    sessions interleaved by day in one store."""
    plan = []
    for i, st in enumerate(stories):
        day = 0
        for n, sess in enumerate(st["sessions"]):
            day = max(day, int(sess.get("days_later", 0)))
            plan.append((START + timedelta(days=day, minutes=7 * i), i, n))
        day = max(day + 1, int(st["recurrence"].get("days_later", day + 1)))
        plan.append((START + timedelta(days=day, minutes=7 * i), i, None))
    return sorted(plan, key=lambda t: (t[0], t[1]))


def run(
    stories: list[dict[str, Any]], command: str, no_server: bool, keep: Path | None = None, in_process: bool = False
) -> Run:
    from mnemo_mcp.claude_install import CHECK_FILTERS
    from mnemo_mcp.embedding import make_embedder

    filters = [f[len("Bash(") : -1] for f in CHECK_FILTERS]
    tmp = tempfile.TemporaryDirectory()
    root = Path(tmp.name)
    db = root / "attribution.db"
    env = capture_env(root, db, "outcomes")
    for st in stories:
        (root / st["project"] / ".git").mkdir(parents=True, exist_ok=True)
    embedder = make_embedder("sentence-transformers/all-MiniLM-L6-v2", None)
    hooks = InProcessHooks(env, embedder) if in_process else Hooks(command, env)
    r = Run(root, hooks, filters, embedder)
    ids = [r.seed(st) for st in stories]
    server = None if no_server or in_process else start_hook_server(env, root, db)
    try:
        for when, i, n in schedule(stories):
            if n is None:
                r.recur(stories[i], ids[i], when)
            else:
                r.session(stories[i], n, ids[i], when)
    finally:
        if server is not None:
            server.send_signal(2)
            server.wait(timeout=30)
        log = root / "hooks.log"
        r.errors = log.read_text() if log.exists() else ""
        if in_process:
            hooks.close()
        r.points = r.alignments()
        r.close()
        if keep is not None:
            r.keep(keep)
        tmp.cleanup()
    return r


def separation(points: list[dict[str, Any]], floor: float) -> dict[str, float]:
    """How well alignment tells a followed note from one merely shown: the share of followed
    ones at or above the floor (recall), of unfollowed ones there (false credit), and the AUC."""
    pos = [p["alignment"] for p in points if p["followed"]]
    neg = [p["alignment"] for p in points if not p["followed"]]
    if not pos or not neg:
        return {"followed": len(pos), "unfollowed": len(neg)}
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return {
        "followed": len(pos),
        "unfollowed": len(neg),
        "auc": wins / (len(pos) * len(neg)),
        "followed_credited": sum(a >= floor for a in pos) / len(pos),
        "unfollowed_credited": sum(b >= floor for b in neg) / len(neg),
    }


def report(r: Run, split: str) -> dict[str, Any]:
    ch = [c for c in r.changes if split == "all" or c["split"] == split]
    un = [u for u in r.unfollowed if split == "all" or u["split"] == split]
    rec = [x for x in r.recurrences if split == "all" or x["split"] == split]
    fol = [x for x in r.followed if split == "all" or x["split"] == split]
    share = lambda xs, key: sum(1 for x in xs if x[key]) / len(xs) if xs else float("nan")  # noqa: E731
    verdicts = defaultdict(int)
    for x in rec:
        verdicts[x["verdict"]] += 1
    from mnemo_mcp.config import Settings

    points = [p for p in r.points if split == "all" or p["split"] == split]
    return {
        "split": split,
        "actions_vs_notes": separation(points, Settings().follow_floor),
        "valence_changes": len(ch),
        "sign_accuracy": share(ch, "right"),
        "wrong_changes": [c for c in ch if not c["right"]][:40],
        "followed_cases": len(fol),
        "followed_credited": share(fol, "credited"),
        "followed_missed": [x for x in fol if not x["credited"]][:60],
        "unfollowed_cases": len(un),
        "unfollowed_kept": share(un, "kept"),
        "recurrences": len(rec),
        "fix_first": verdicts["fix first"] / len(rec) if rec else float("nan"),
        "failed_first": verdicts["failed first"] / len(rec) if rec else float("nan"),
        "none": verdicts["none"] / len(rec) if rec else float("nan"),
        "recurrences_without_the_fix_first": [x for x in rec if x["verdict"] != "fix first"][:40],
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.attribution",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data-dir", type=Path, default=DATA)
    p.add_argument("--split", choices=("tune", "test", "all"), default="test", help="stories scored (all run)")
    p.add_argument("--quick", action="store_true", help="every 8th story (CI)")
    p.add_argument("--no-server", action="store_true", help="hooks alone (keyword recall), no MCP server up")
    p.add_argument("--mnemo", help="the mnemo-mcp command to run (another checkout's, to compare)")
    p.add_argument("--only", nargs="*", help="these story ids only")
    p.add_argument("--in-process", action="store_true", help="handle the events in this process (fast, for tuning)")
    p.add_argument("--keep", type=Path, help="copy the store here when done (to look at its session log)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv)
    stories = load(a.data_dir)
    if a.quick:
        stories = stories[::8]
    if a.only:
        stories = [st for st in stories if st["id"] in a.only]
    r = run(stories, a.mnemo or mnemo_command(), a.no_server, keep=a.keep, in_process=a.in_process)
    splits = ("tune", "test") if a.split == "all" else (a.split,)
    results = {s: report(r, s) for s in splits}
    print(
        f"attribution through the real hooks: {len(stories)} stories in one store, "
        f"{'an MCP server up' if not a.no_server else 'no server'}"
    )
    for s, x in results.items():
        print(f"\n{s} part:")
        sep = x["actions_vs_notes"]
        if "auc" in sep:
            print(
                f"  actions x notes shown: {sep['followed']} followed, {sep['unfollowed']} not; AUC {sep['auc']:.3f}, "
                f"over the floor: followed {sep['followed_credited']:.1%}, "
                f"not followed {sep['unfollowed_credited']:.1%}"
            )
        print(f"  valence changes of the stories' notes: {x['valence_changes']}, sign right {x['sign_accuracy']:.1%}")
        print(
            f"  shown, not followed, at a verdict: {x['unfollowed_cases']}, moved <= {MOVED}: "
            f"{x['unfollowed_kept']:.1%}"
        )
        print(
            f"  recurrences: {x['recurrences']}, working fix first {x['fix_first']:.1%}, failed advice first "
            f"{x['failed_first']:.1%}, none {x['none']:.1%}"
        )
    toks = r.tokens
    print(f"\ntokens injected per prompt (all stories): {sum(toks) / max(len(toks), 1):.1f} over {len(toks)} prompts")
    if r.errors:
        print(f"hook errors:\n{r.errors[-3000:]}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(
        json.dumps(
            {
                "benchmark": "attribution",
                "actions_vs_notes": r.points,
                "stories": len(stories),
                "results": results,
                "tokens_per_prompt": sum(toks) / max(len(toks), 1),
            },
            indent=2,
        )
    )
    print(f"results: {a.out}")
    return 1 if r.errors else 0


if __name__ == "__main__":
    sys.exit(main())
