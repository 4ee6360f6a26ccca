"""The command line for a database in trouble: `doctor` (which also works on a file the service
cannot open, and salvages it with --salvage) and `restore-backup`. Kept apart from cli.py so
that the command line's main module stays small; cli.main dispatches here."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_commands(sub: Any) -> None:
    dr = sub.add_parser(
        "doctor", help="check the database; on a damaged file, say what is wrong (exit 1 if anything is)"
    )
    dr.add_argument("--repair", action="store_true", help="fix what can be fixed (never content, valence or ratings)")
    dr.add_argument(
        "--salvage",
        action="store_true",
        help="copy every memory that still reads into a new database file (the damaged one is left as it is)",
    )
    dr.add_argument("-o", "--output", help="with --salvage: the new file (default: <db>-salvaged-<time>.db beside it)")
    rb = sub.add_parser(
        "restore-backup",
        help="put a backup in place of the database (the newest automatic one by default); keeps the replaced file",
    )
    rb.add_argument("path", nargs="?", help="a backup file, or a file made by `doctor --salvage`")
    rb.add_argument("--list", action="store_true", help="list the automatic backups and exit")


def run(args: argparse.Namespace, settings: Any) -> int:
    if settings.backend != "sqlite" and (args.command == "restore-backup" or args.salvage):
        from .errors import MnemoError

        what = "restore-backup" if args.command == "restore-backup" else "doctor --salvage"
        raise MnemoError(
            f"`mnemo-mcp {what}` is for SQLite files; {settings.db_label} is a PostgreSQL database: back it up "
            "with pg_dump and restore it with pg_restore (`mnemo-mcp doctor` checks it)"
        )
    if args.command == "restore-backup":
        return _restore(args, settings)
    return _doctor(args, settings)


def _emit(result: Any, as_json: bool, human) -> None:
    if as_json:
        print(
            json.dumps(
                result.model_dump(mode="json") if hasattr(result, "model_dump") else result,
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        human(result)


def _doctor(args: argparse.Namespace, settings: Any) -> int:
    from .errors import MnemoError, StoreDamaged
    from .service import MemoryService, recovery

    if args.salvage:
        report = recovery.salvage(settings, args.output)
        _emit(report, args.json, _human_salvage)
        return 0 if report.memories_recovered else 1
    try:
        svc = MemoryService(settings)
    except MnemoError as err:
        if settings.backend != "sqlite":
            raise  # a server that cannot be used says why itself (unreachable, login, extension)
        # The store cannot open: look at the file itself instead of failing with the same error.
        _emit(recovery.diagnose(settings, err), args.json, _human_diagnosis)
        return 1
    try:
        report = svc.doctor(repair=args.repair)
    except StoreDamaged as err:
        svc.close()
        _emit(recovery.diagnose(settings, err), args.json, _human_diagnosis)
        return 1
    finally:
        svc.close()
    _emit(report, args.json, _human_doctor)
    return 0 if report.ok else 1


def _restore(args: argparse.Namespace, settings: Any) -> int:
    from .service import recovery

    if args.list:
        found = recovery.backup_infos(settings)
        if args.json:
            print(json.dumps([b.model_dump(mode="json") for b in found], indent=2))
        elif not found:
            print(f"no automatic backups in {settings.backup_folder}")
        for b in found:
            print(f"{b.taken_at}  {b.bytes:>12,} bytes  {b.path}")
        return 0
    result = recovery.restore_backup(settings, args.path)
    _emit(result, args.json, _human_restore)
    return 0


def _human_doctor(r) -> None:
    for c in r.checks:
        mark = "ok  " if c.ok else "FAIL"
        extra = f" ({c.found} found{'; ' + c.detail if c.detail else ''})" if not c.ok else ""
        print(f"{mark} {c.name}{extra}")
    for line in r.repaired:
        print(f"repaired: {line}")
    for line in r.advice:
        print(f"next: {line}")
    if r.advice:
        print("problems remain")
    else:
        print(f"{r.memories} memories; " + ("healthy" if r.ok else "problems remain (run with --repair)"))


def _human_diagnosis(d) -> None:
    if not d.exists:
        print(f"FAIL database file {d.path}: missing")
    else:
        print(f"FAIL database file {d.path} ({d.bytes:,} bytes): {d.problem.replace('_', ' ')}")
    print(f"     {d.detail}")
    for line in d.integrity[:5]:
        print(f"     quick_check: {line}")
    if d.memories_listed is not None:
        print(f"     the file still counts {d.memories_listed} memories")
    for line in d.advice:
        print(f"next: {line}")


def _human_salvage(r) -> None:
    listed = f" (the damaged file counts {r.memories_listed})" if r.memories_listed is not None else ""
    print(f"salvaged {r.source} into {r.output}" if r.output else f"nothing could be salvaged from {r.source}")
    print(f"  memories recovered: {r.memories_recovered}{listed}")
    if r.memories_skipped:
        print(f"  rows left behind because their content no longer matched their id: {r.memories_skipped}")
    if r.unreadable_regions:
        print(f"  unreadable stretches stepped over: {r.unreadable_regions}")
    print(f"  vectors copied: {r.vectors_copied}, made again from the text: {r.vectors_reembedded}")
    print(f"  feedback events: {r.feedback_events}, context links: {r.context_links}, associations: {r.associations}")
    for note in r.notes:
        print(f"  note: {note}")
    print(
        "the damaged file was not changed."
        + (f" To use the salvaged one: mnemo-mcp restore-backup {r.output}" if r.output else "")
    )


def _human_restore(r) -> None:
    print(f"restored {r.database} from {r.restored_from}: {r.memories} memories")
    if r.previous_kept_at:
        print(f"the file it replaced is kept at {r.previous_kept_at}")
