"""Command line: `mnemo-mcp` (serve) and one subcommand per service operation.

Imports stay light until a command runs, so `--help` answers at once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from . import __version__

if TYPE_CHECKING:
    import argparse

EPILOG = """\
environment: every setting reads MNEMO_<NAME>, e.g. MNEMO_DB (database file),
MNEMO_EMBED_MODEL (fastembed model name), MNEMO_LEARNING_RATE, MNEMO_QUALITY_BOOST.
Run without a command to serve MCP over stdio."""


def _parser() -> argparse.ArgumentParser:
    import argparse

    p = argparse.ArgumentParser(
        prog="mnemo-mcp",
        description="A local MCP memory server that learns from outcomes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"mnemo-mcp {__version__}")
    p.add_argument("--db", help="database file (default: MNEMO_DB or the user data directory)")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    # `--help` lists commands in the order they are added: the groups below keep that order.
    sub.add_parser("serve", help="serve MCP over stdio (the default)")
    _add_memory_commands(sub)
    _add_browse_commands(sub)
    _add_maintenance_commands(sub)
    _add_install_commands(sub)

    from .recovery_cli import add_commands

    add_commands(sub)  # doctor, restore-backup
    _add_tool_commands(sub)
    _add_transfer_commands(sub)
    return p


def _add_memory_commands(sub: Any) -> None:
    """write, read, feedback, rate, quality."""
    import argparse

    w = sub.add_parser("write", help="store a memory")
    w.add_argument("content", help="memory text ('-' reads standard input)")
    w.add_argument("-t", "--tag", action="append", default=[], help="a tag (repeatable)")
    w.add_argument("--type", default="note", dest="memory_type", help="memory type (default: note)")
    w.add_argument("--metadata", help="a JSON object")
    w.add_argument("--domain", help="scope, e.g. a project name")
    w.add_argument(
        "--supersedes",
        action="append",
        default=[],
        metavar="ID",
        help="a memory this one corrects (repeatable; archived and linked)",
    )
    w.add_argument("--allow-duplicate", action="store_true", help="store even when a near-duplicate exists")
    w.add_argument(
        "--source",
        default="write",
        help="who captured it: 'write' (deliberate, default) or e.g. 'hook' (expires sooner)",
    )

    r = sub.add_parser("read", help="recall memories for a query")
    r.add_argument("query")
    r.add_argument("-k", "--top-k", type=int, default=5)
    r.add_argument("-t", "--tag", action="append", default=None, help="only memories with this tag (repeatable)")
    r.add_argument("--domain")
    r.add_argument("--min-relevance", type=float)
    r.add_argument("--include-archived", action="store_true")
    r.add_argument(
        "--expand",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="expand the query through learned concept links (default: MNEMO_EXPAND_ASSOCIATIONS)",
    )

    f = sub.add_parser("feedback", help="report an outcome (-1.0 .. 1.0) for memories")
    f.add_argument("outcome", type=float)
    f.add_argument("memory_ids", nargs="+", metavar="ID")
    f.add_argument("--read-id")
    f.add_argument("--concept", action="append", dest="query_concepts", help="query concept (repeatable)")
    f.add_argument("--response", help="the answer that used them: credit follows what it used")

    ra = sub.add_parser("rate", help="thumbs up (1), neutral (0) or down (-1)")
    ra.add_argument("memory_id")
    ra.add_argument("rating", type=int, choices=(-1, 0, 1))
    ra.add_argument("--reason")

    q = sub.add_parser("quality", help="show a memory's quality score and history")
    q.add_argument("memory_id")


def _add_browse_commands(sub: Any) -> None:
    """list, release, stats, delete."""
    ls = sub.add_parser("list", help="list memories, newest first (filters: source, type, tag, tier)")
    ls.add_argument("--source", help="only memories stored this way, e.g. capture (what the hooks learned) or write")
    ls.add_argument("--type", dest="memory_type", help="only this memory type, e.g. case")
    ls.add_argument("-t", "--tag", action="append", default=None, help="only memories with this tag (repeatable)")
    ls.add_argument("--tier", choices=("working", "history", "pattern"))
    ls.add_argument("--archived", choices=("live", "archived", "all"), default="live")
    ls.add_argument("--sort", choices=("newest", "updated", "quality", "worst", "valence", "used"), default="newest")
    ls.add_argument(
        "--quarantined", action="store_true", help="only notes kept out of injection (they read as instructions)"
    )
    ls.add_argument("-n", "--limit", type=int, default=20)

    rl = sub.add_parser("release", help="let a quarantined note be injected again (you judged it safe)")
    rl.add_argument("memory_id")

    sub.add_parser("stats", help="store statistics")

    d = sub.add_parser("delete", help="erase a memory permanently")
    d.add_argument("memory_id")


def _add_maintenance_commands(sub: Any) -> None:
    """consolidate, restore, archive."""
    c = sub.add_parser("consolidate", help="archive unused memories, move tiers, merge near-duplicates, decay links")
    c.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    c.add_argument("--now", help="run as of this ISO-8601 date, e.g. 2027-06-01 (simulations, tests)")

    rs = sub.add_parser("restore", help="bring an archived memory back into reads")
    rs.add_argument("memory_id")

    ar = sub.add_parser("archive", help="take a memory out of reads without deleting it")
    ar.add_argument("memory_id")
    ar.add_argument("--reason")


CLIENT_NAMES = ("claude", "codex", "gemini", "opencode", "cursor", "vscode")
HOOK_CLIENTS = ("claude", "codex", "gemini", "opencode")


def _add_install_commands(sub: Any) -> None:
    """install, uninstall."""
    ins = sub.add_parser(
        "install",
        help="register mnemo-mcp (server, and hooks where the client has them) with a client; "
        "no client: list the clients found here and what installing would change",
    )
    ins.add_argument("client", nargs="?", choices=CLIENT_NAMES, help="the client to configure")
    ins.add_argument(
        "--scope",
        choices=("user", "project"),
        default="user",
        help="user: the client's settings in your home; project: the repository's files (shared with the team)",
    )
    ins.add_argument("--no-hooks", action="store_true", help="only the MCP server entry")
    un = sub.add_parser("uninstall", help="remove what `install` added (other servers and hooks are kept)")
    un.add_argument("client", choices=CLIENT_NAMES)
    un.add_argument("--scope", choices=("user", "project"), default="user")


def _add_tool_commands(sub: Any) -> None:
    """backup, dashboard, hook."""
    bk = sub.add_parser("backup", help="a consistent copy of the database, safe while servers write")
    bk.add_argument("path")
    bk.add_argument("--force", action="store_true", help="replace an existing file")

    dash = sub.add_parser("dashboard", help="a local web dashboard on 127.0.0.1: browse, search, rate, analytics")
    dash.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    dash.add_argument("--no-browser", action="store_true", help="print the URL only, do not open a browser")

    h = sub.add_parser("hook", help="handle a client's hook event (JSON on standard input); always exits 0")
    h.add_argument("event", help="the client's event name: UserPromptSubmit, PostToolUse, ... (Gemini: AfterTool, ...)")
    h.add_argument("--client", choices=HOOK_CLIENTS, default="claude", help="whose hook this is (default claude)")


def _add_transfer_commands(sub: Any) -> None:
    """export, import."""
    e = sub.add_parser("export", help="write every memory and its learned state as JSON lines")
    e.add_argument("-o", "--output", help="file (default: standard output)")

    i = sub.add_parser("import", help="load a JSON lines export")
    i.add_argument("input", help="file ('-' reads standard input)")


def _settings(args: argparse.Namespace):
    from .config import Settings
    from .project import scoped

    overrides: dict[str, Any] = {}
    if args.db:
        overrides["db"] = args.db
    return scoped(Settings(**overrides))


def _print(result: Any, as_json: bool, human) -> None:
    if as_json:
        print(json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        human(result)


def _human_read(r) -> None:
    if not r.items:
        print("no memories found")
    for i, it in enumerate(r.items, start=1):
        tags = f" [{', '.join(it.tags)}]" if it.tags else ""
        flags = (
            f" {it.tier}"
            + (" archived" if it.archived else "")
            + (f" via={it.expanded_via}" if it.expanded_via else "")
        )
        print(
            f"{i}. {it.id[:12]} score={it.score:.3f} rel={it.relevance:.3f} val={it.valence:+.2f} "
            f"q={it.quality:.2f}{flags}{tags}"
        )
        if it.superseded_by:
            print(f"   superseded by {it.superseded_by}")
        print("   " + it.content.replace("\n", "\n   "))
    if r.expanded_concepts:
        print(f"expanded with: {', '.join(r.expanded_concepts)}")
    print(f"read_id: {r.read_id}")
    if r.warning:
        print(f"warning: {r.warning}", file=sys.stderr)


def _human_list(page) -> None:
    if not page.items:
        print("no memories match")
    for m in page.items:
        flags = " ".join(
            x for x in (m.memory_type, m.source, m.by and f"by={m.by}", m.tier, "archived" if m.archived else "") if x
        )
        print(f"{m.id[:12]} val={m.valence:+.2f} q={m.quality:.2f} {flags}")
        if m.quarantine:
            print(
                f"   QUARANTINED ({m.quarantine}): never injected; `mnemo-mcp release {m.id[:12]}` if you judge it safe"
            )
        print("   " + m.content.replace("\n", "\n   "))
    print(f"{len(page.items)} of {page.total}")


def _human_consolidation(r) -> None:
    head = "dry run as of" if r.dry_run else "consolidated as of"
    print(f"{head} {r.as_of}: {r.examined} live memories examined")
    print("  " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r.counts.items()))
    for kind in ("archived", "promoted", "demoted", "merged"):
        for ch in getattr(r, kind):
            into = f" -> {ch.into[:12]}" if ch.into else ""
            print(f"  {kind:8} {ch.id[:12]}{into}  {ch.reason}  | {ch.preview}")
    if r.truncated:
        print("  (lists truncated; counts are complete; use --json for the first entries of each)")


def _parse_now(text: str):
    from datetime import datetime

    from .errors import InvalidInput

    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            f"--now {text!r} is not an ISO-8601 date; use e.g. 2027-06-01 or 2027-06-01T12:00:00+00:00"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _human_kv(r) -> None:
    for k, v in r.model_dump(mode="json").items():
        print(f"{k}: {json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v}")


def _write(svc, args: argparse.Namespace) -> None:
    content = sys.stdin.read() if args.content == "-" else args.content
    meta = json.loads(args.metadata) if args.metadata else None
    r = svc.write(
        content,
        tags=args.tag,
        memory_type=args.memory_type,
        metadata=meta,
        domain=args.domain,
        supersedes=args.supersedes,
        allow_duplicate=args.allow_duplicate,
        source=args.source,
        by="cli",
    )
    _print(r, args.json, _human_kv)


def _read(svc, args: argparse.Namespace) -> None:
    r = svc.read(
        args.query,
        top_k=args.top_k,
        tags=args.tag,
        domain=args.domain,
        min_relevance=args.min_relevance,
        include_archived=args.include_archived,
        expand_associations=args.expand,
    )
    _print(r, args.json, _human_read)


def _consolidate(svc, args: argparse.Namespace) -> None:
    now = _parse_now(args.now) if args.now else None
    _print(svc.consolidate(dry_run=args.dry_run, now=now), args.json, _human_consolidation)


def _feedback(svc, args: argparse.Namespace) -> None:
    r = svc.feedback(
        args.memory_ids,
        outcome=args.outcome,
        read_id=args.read_id,
        query_concepts=args.query_concepts,
        response=args.response,
        source="cli",
    )
    _print(r, args.json, _human_kv)


def _list(svc, args: argparse.Namespace) -> None:
    page = svc.browse_list(
        None,
        source=args.source,
        memory_type=args.memory_type,
        tags=args.tag,
        tier=args.tier,
        archived=args.archived,
        sort=args.sort,
        limit=args.limit,
        quarantined=args.quarantined,
    )
    _print(page, args.json, _human_list)


def _export(svc, args: argparse.Namespace) -> None:
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for rec in svc.export():
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()


def _import(svc, args: argparse.Namespace) -> None:
    src = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    try:
        records = (_json_line(line, n) for n, line in enumerate(src, start=1) if line.strip())
        _print(svc.import_records(records), args.json, _human_kv)
    finally:
        if src is not sys.stdin:
            src.close()


# The commands that run against an open MemoryService; main() dispatches the others itself.
def _release(svc: Any, a: argparse.Namespace) -> None:
    """Release only with a person's yes, typed at a terminal outside any agent (consent.py)."""
    from . import consent

    pending = svc.quarantined(a.memory_id)
    if pending.reason is None:
        _print(svc.release(pending.id, by="cli"), a.json, _human_kv)  # not quarantined: says so
        return
    how = consent.confirm_release(
        pending.id, pending.reason, pending.content_preview, stdin=sys.stdin, stdout=sys.stderr
    )
    _print(svc.release(pending.id, by="cli", how=how), a.json, _human_kv)


_COMMANDS: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "write": _write,
    "read": _read,
    "consolidate": _consolidate,
    "backup": lambda svc, a: _print(svc.backup(a.path, overwrite=a.force), a.json, _human_kv),
    "restore": lambda svc, a: _print(svc.restore(a.memory_id), a.json, _human_kv),
    "archive": lambda svc, a: _print(svc.archive(a.memory_id, reason=a.reason), a.json, _human_kv),
    "feedback": _feedback,
    "rate": lambda svc, a: _print(svc.rate(a.memory_id, rating=a.rating, reason=a.reason), a.json, _human_kv),
    "quality": lambda svc, a: _print(svc.quality(a.memory_id), a.json, _human_kv),
    "stats": lambda svc, a: _print(svc.stats(), a.json, _human_kv),
    "list": _list,
    "release": lambda svc, a: _release(svc, a),
    "delete": lambda svc, a: _print(svc.delete(a.memory_id), a.json, _human_kv),
    "export": _export,
    "import": _import,
}


def _run(args: argparse.Namespace) -> int:
    from .service import MemoryService

    svc = MemoryService(_settings(args))
    try:
        _COMMANDS[args.command](svc, args)
        return 0
    finally:
        svc.close()


def _executable() -> str:
    """The absolute path of the `mnemo-mcp` command, for configs that run it later."""
    import shutil
    from pathlib import Path

    from .errors import MnemoError

    found = shutil.which("mnemo-mcp") or shutil.which("mnemo-mcp", path=str(Path(sys.executable).parent))
    if not found:
        raise MnemoError(
            "cannot find the mnemo-mcp command; install the package (pip install mnemo-mcp) so it is on PATH"
        )
    return str(Path(found).resolve())


def _install(args: argparse.Namespace) -> int:
    import shutil
    from pathlib import Path

    from . import claude_install
    from .installers import agents, detect
    from .project import project_root

    # The project is the enclosing git repository, as for memory scoping.
    project_dir = project_root(Path.cwd()) if args.scope == "project" else Path.cwd()
    where = agents.where_here(project_dir)
    if args.command == "install" and args.client is None:
        print(detect.report(where, args.scope))
        return 0
    if args.command == "install":
        # Project files are committed: an absolute path to this machine's virtualenv would give a
        # teammate ENOENT, so they name the command and each machine finds it on PATH. The user's
        # own files keep the absolute path, which works whatever PATH the client is started with.
        if args.scope == "project":
            executable = claude_install.PROGRAM
            if shutil.which(executable) is None:
                print(
                    f"warning: `{executable}` is not on PATH here; the client runs it by that name from these "
                    "project files, so install it where PATH finds it (e.g. `pipx install mnemo-mcp`)",
                    file=sys.stderr,
                )
        else:
            executable = _executable()
        if args.client == "claude":
            changes = claude_install.install(args.scope, executable, where.home, project_dir, hooks=not args.no_hooks)
        else:
            changes = agents.install(args.client, args.scope, executable, where, hooks=not args.no_hooks)
    elif args.client == "claude":
        changes = claude_install.uninstall(args.scope, where.home, project_dir)
    else:
        changes = agents.uninstall(args.client, args.scope, where)
    print(claude_install.render(changes))
    notes = getattr(agents.CLIENTS.get(args.client), "notes", None)
    for note in notes(args.scope) if notes and args.command == "install" and changes else ():
        print(f"note: {note}", file=sys.stderr)
    return 0


def _json_line(line: str, n: int) -> dict:
    from .errors import InvalidInput

    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        raise InvalidInput(f"line {n} is not valid JSON: {err.msg}") from None


def main(argv: Sequence[str] | None = None) -> int:
    import logging

    args = _parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="mnemo-mcp: %(levelname)s %(message)s")
    try:
        if args.command in ("install", "uninstall"):
            return _install(args)
        if args.command == "hook":
            from .hooks.entry import main as hook_main

            return hook_main(args.event, args.client)
        if args.command in ("doctor", "restore-backup"):
            from .recovery_cli import run as recovery

            return recovery(args, _settings(args))
        if args.command == "dashboard":
            from .consent import refuse_in_agent_shell
            from .web import serve as dashboard

            refuse_in_agent_shell("`mnemo-mcp dashboard`")  # its page releases notes

            return dashboard(_settings(args), port=args.port, open_browser=not args.no_browser)
        if args.command in (None, "serve"):
            from .server import serve

            settings = _settings(args)
            logging.getLogger().setLevel(settings.log_level.upper())
            serve(settings)
            return 0
        return _run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `mnemo-mcp export | head`: the reader left; say nothing more, as other tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except json.JSONDecodeError as err:
        print(f"error: --metadata is not valid JSON: {err.msg}", file=sys.stderr)
        return 2
    except Exception as err:
        from pydantic import ValidationError

        from .errors import MnemoError

        if isinstance(err, MnemoError):
            print(f"error: {err}", file=sys.stderr)
            return 1
        if isinstance(err, ValidationError):
            print(f"error: invalid MNEMO_ setting: {err}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
