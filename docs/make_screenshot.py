"""Build a demo database and screenshot the dashboard into docs/dashboard.png (and the analytics
page into docs/dashboard_analytics.png), with Playwright driving Debian's /usr/bin/chromium.

    python docs/make_screenshot.py [--hash] [--keep DIR]

The demo is a small coding store with six weeks of history, all made through the service as an
assistant would make it: reads, outcome reports through the read that recalled a memory, thumbs
up and down with reasons, a correction that supersedes an older memory, one archived memory and
two consolidation runs that move proven memories up the tiers. `--hash` uses the test embedder
instead of the bundled model (faster; search order then follows keywords more than meaning)."""

from __future__ import annotations

import argparse
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService
from mnemo_mcp.web import DashboardServer

DOCS = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"

MEMORIES = [
    ("webhook", "Stripe webhooks: verify the signature on the raw request body before parsing JSON; "
     "express.json() consumes the body and every signature check then fails.", ["stripe", "webhooks"], "gotcha"),
    ("retry", "Retry outgoing webhook deliveries with exponential backoff (1s, 4s, 16s, 64s) and jitter; "
     "after 5 failures move the event to the dead-letter table and alert.", ["webhooks", "reliability"], "howto"),
    ("pytest", "Run the test suite with `pytest -n auto -p no:cacheprovider`: the cache plugin races under xdist "
     "and produces flaky 'file not found' errors.", ["pytest", "ci"], "command"),
    ("migr", "Database migrations: never edit a released migration file; add the next number. "
     "CI runs `alembic upgrade head` on a copy of production's schema.", ["database", "alembic"], "decision"),
    ("tz", "Store timestamps as UTC ISO-8601 with offset; convert to the user's zone only when rendering. "
     "Naive datetimes caused the March DST double-billing bug.", ["datetime", "billing"], "gotcha"),
    ("cache", "The product list is cached in Redis for 60 s under key products:v3:{locale}; bump the version "
     "suffix when the serializer changes instead of flushing.", ["redis", "cache"], "note"),
    ("deploy_old", "Deploys go out with `make deploy` from a laptop after the tests pass.", ["deploy"], "note"),
    ("deploy", "Deploys run on GitHub Actions: merge to main, the release workflow builds the image, "
     "runs migrations, then shifts traffic 10% -> 100% with automatic rollback.", ["deploy", "ci"], "decision"),
    ("n1", "The orders API had an N+1 query on line items; use selectinload(Order.items), "
     "joinedload duplicates rows with pagination.", ["sqlalchemy", "performance"], "gotcha"),
    ("env", "Local setup: copy .env.example to .env; STRIPE_WEBHOOK_SECRET comes from `stripe listen`, "
     "not from the dashboard.", ["setup", "stripe"], "note"),
    ("lint", "ruff replaces flake8 and isort here: `ruff check --fix` then `ruff format`; "
     "the pre-commit hook runs both.", ["tooling"], "command"),
    ("flaky", "The checkout e2e test is flaky because it waits on a fixed sleep(2); "
     "wait for the 'order-confirmed' event instead.", ["tests", "checkout"], "gotcha"),
    ("xss", "User display names are rendered in emails: escape them. A name like <script>alert(1)</script> "
     "reached the admin panel once.", ["security"], "gotcha"),
]

# (day offset from the start, query, memory keys recalled, outcome or None, ratings [(key, rating, reason)])
SESSIONS = [
    (1, "stripe webhook signature fails", ["webhook", "env"], 1.0, [("webhook", 1, "exactly the bug")]),
    (3, "webhook retries", ["retry", "webhook"], 1.0, []),
    (5, "flaky tests in CI", ["pytest", "flaky"], 1.0, [("pytest", 1, None)]),
    (8, "how do we deploy", ["deploy_old"], -1.0, [("deploy_old", -1, "we moved to GitHub Actions")]),
    (9, "timezone bug in invoices", ["tz"], 1.0, [("tz", 1, "saved an afternoon")]),
    (12, "slow orders endpoint", ["n1", "cache"], 0.3, []),
    (15, "webhook delivery keeps failing", ["retry"], 1.0, [("retry", 1, "backoff numbers still right")]),
    (18, "add a column to orders", ["migr"], 1.0, []),
    (20, "stripe webhook secret local", ["env", "webhook"], 1.0, []),
    (23, "checkout test flaky", ["flaky", "pytest"], -0.5, [("flaky", 0, "partly: also needs a fresh DB")]),
    (26, "webhook signature raw body", ["webhook"], 1.0, []),
    (28, "orders API performance", ["n1"], 1.0, [("n1", 1, None)]),
    (30, "webhook retries dead letter", ["retry"], 1.0, []),
    (33, "format and lint", ["lint"], 1.0, []),
    (35, "product cache stale", ["cache"], -1.0, [("cache", -1, "key is products:v4 now")]),
    (37, "webhook signature check", ["webhook", "retry"], 1.0, []),
    (39, "dst billing timestamps", ["tz"], 1.0, []),
    (41, "escape names in email templates", ["xss"], 1.0, [("xss", 1, None)]),
]


def build(db: Path, embedder, today: datetime) -> MemoryService:
    start = today - timedelta(days=44)
    svc = MemoryService(Settings(db=db, project="acme-api"), embedder)
    ids: dict[str, str] = {}
    for i, (key, text, tags, kind) in enumerate(MEMORIES):
        if key == "deploy":
            continue  # written later, as the correction of deploy_old
        domain = "global" if key in ("lint", "tz") else None
        ids[key] = svc.write(text, tags=tags, memory_type=kind, domain=domain, now=start + timedelta(hours=i)).id
    for day, query, keys, outcome, ratings in SESSIONS:
        when = start + timedelta(days=day, hours=10)
        read = svc.read(query, top_k=3, now=when)
        used = [ids[k] for k in keys if k in ids]
        if outcome is not None and used:
            svc.feedback(used, outcome, read_id=read.read_id, now=when + timedelta(minutes=20))
        for key, rating, reason in ratings:
            svc.rate(ids[key], rating=rating, reason=reason, now=when + timedelta(minutes=25))
        if day == 8:
            ids["deploy"] = svc.write(
                MEMORIES[7][1], tags=MEMORIES[7][2], memory_type=MEMORIES[7][3], supersedes=[ids["deploy_old"]], now=when + timedelta(minutes=30)
            ).id
        if day in (20, 41):
            svc.consolidate(now=when + timedelta(hours=8))
    svc.archive(ids["env"], reason="project moved to the Stripe CLI fixtures", now=today - timedelta(days=2))
    return svc


def screenshot(dash: DashboardServer, out_list: Path, out_analytics: Path, query: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 1000}, device_scale_factor=1)
        page.goto(dash.url)
        page.fill("input[name=q]", query)
        page.click("button.primary")
        page.wait_for_selector("article.mem")
        page.screenshot(path=str(out_list))
        page.goto(f"http://127.0.0.1:{dash.port}/analytics")
        page.wait_for_selector("svg.chart")
        page.screenshot(path=str(out_analytics), full_page=True)
        browser.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hash", action="store_true", help="use the test embedder instead of the bundled model")
    ap.add_argument("--keep", type=Path, help="build the demo database in this folder and keep it")
    ap.add_argument("--query", default="webhook signature retries", help="the search shown in the screenshot")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="mnemo-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "demo.db"
    if db.exists():
        raise SystemExit(f"{db} exists; pass another --keep folder")
    embedder = HashEmbedder() if args.hash else None
    svc = build(db, embedder, datetime.now(timezone.utc))
    dash = DashboardServer(svc).start()
    try:
        screenshot(dash, DOCS / "dashboard.png", DOCS / "dashboard_analytics.png", args.query)
    finally:
        dash.stop()
        svc.close()
    print(f"wrote {DOCS / 'dashboard.png'} and {DOCS / 'dashboard_analytics.png'} (demo database: {db})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
