"""What the dashboard's pages are built from: the page context, the layout around every page,
a memory's card with its buttons, form and text helpers. Everything from the database goes
through `h`/`esc` (mnemo_mcp/web/html.py); forms that change anything are POST and carry the
CSRF token."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..service.browse import MemoryRow
from . import charts
from .html import Safe, h, join, url

SEARCH_SIZES = (5, 10, 20, 50)  # top_k choices for a search; memory_read's default is 5
SORT_LABELS = {
    "newest": "newest first",
    "updated": "recently changed",
    "quality": "best quality",
    "worst": "worst quality",
    "valence": "most helpful",
    "used": "recently read",
}
# Thumb icon path: Material Icons "thumb_up" (Apache-2.0); thumbs down is the same, rotated.
_THUMB = (
    "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 "
    "7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z"
)
THUMB_UP = h(
    '<svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path d="{d}"/></svg>', d=_THUMB
)
THUMB_DOWN = h(
    '<svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path transform="rotate(180 12 '
    '12)" d="{d}"/></svg>',
    d=_THUMB,
)
FLASHES = {
    "rated-up": "Thumbs up recorded for",
    "rated-down": "Thumbs down recorded for",
    "rated-neutral": "Neutral rating recorded for",
    "archived": "Archived",
    "restored": "Restored",
    "released": "Released from quarantine (it may be injected again):",
    "deleted": "Deleted for good:",
}


@dataclass
class Ctx:
    """What every page needs: the CSRF token for its forms, where it is, what it shows."""

    csrf: str
    here: str  # this page's URL without flash parameters: where actions come back to
    db_path: str
    scope: list[str] | None
    flash: tuple[str, str] | None = None  # (kind, memory id)
    extra_head: list[str] = field(default_factory=list)


def short(mid: str) -> str:
    return mid[:8] + "…"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def day(stamp: str | None) -> str:
    return stamp[:10] if stamp else "never"


def age(hours: float | None) -> str:
    if hours is None:
        return "never"
    if hours < 1:
        return "under an hour ago"
    return f"{hours:.0f} hours ago" if hours < 48 else f"{hours / 24:.0f} days ago"


def when(stamp: str | None) -> str:
    return stamp[:16].replace("T", " ") if stamp else "never"


def hidden(ctx: Ctx, next_url: str | None = None) -> Safe:
    return h(
        '<input type="hidden" name="csrf" value="{c}"><input type="hidden" name="next" value="{n}">',
        c=ctx.csrf,
        n=next_url or ctx.here,
    )


def form(ctx: Ctx, action: str, button: Safe, *, next_url: str | None = None, cls: str = "inline") -> Safe:
    return h(
        '<form method="post" action="{a}" class="{c}">{hidden}{button}</form>',
        a=action,
        c=cls,
        hidden=hidden(ctx, next_url),
        button=button,
    )


def layout(ctx: Ctx, title: str, body: Safe, *, active: str) -> Safe:
    scope = "every domain" if ctx.scope is None else ", ".join(d or "(no domain)" for d in ctx.scope)
    nav = join(
        h('<a href="{u}" class="{c}">{t}</a>', u=u, c="active" if key == active else "", t=t)
        for key, u, t in (("list", "/", "Memories"), ("analytics", "/analytics", "Analytics"))
    )
    return h(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="same-origin">'
        '<title>{title} · mnemo</title><link rel="stylesheet" href="/static/style.css">'
        '<script src="/static/app.js" defer></script></head><body>'
        '<header class="top"><a class="brand" href="/">mnemo</a><nav>{nav}</nav>'
        '<div class="where" title="database file and the domains this dashboard shows">{db} · scope: '
        "{scope}</div></header>"
        "<main>{flash}{body}</main></body></html>",
        title=title,
        nav=nav,
        db=ctx.db_path,
        scope=scope,
        flash=flash(ctx),
        body=body,
    )


def flash(ctx: Ctx) -> Safe:
    if not ctx.flash or ctx.flash[0] not in FLASHES:
        return Safe("")
    kind, mid = ctx.flash
    undo = Safe("")
    if kind == "archived":
        undo = form(ctx, f"/memory/{mid}/restore", Safe('<button class="link">undo</button>'))
    return h(
        '<div class="flash" role="status">{t} <code>{m}</code> {undo}</div>', t=FLASHES[kind], m=short(mid), undo=undo
    )


# --- pieces ----------------------------------------------------------------------------------


def sign_class(value: float) -> str:
    """The colour of a signed number in a table: helped, misled, or neither."""
    return "pos" if value > 0 else "neg" if value < 0 else ""


def quality_badge(q: float) -> Safe:
    return h(
        '<span class="badge {c}" title="quality {q} (0.5 = new, no evidence yet)">{q}</span>',
        c=charts.quality_class(q),
        q=f"{q:.2f}",
    )


def chips(row: MemoryRow) -> Safe:
    parts = [
        h('<span class="chip tier-{t}" title="tier">{t}</span>', t=row.tier),
        h('<span class="chip" title="memory type">{t}</span>', t=row.memory_type),
    ]
    if row.domain:
        parts.append(h('<span class="chip domain" title="domain">{d}</span>', d=row.domain))
    if row.source != "write":
        parts.append(
            h(
                '<a class="chip source" href="{u}" title="how it was stored">{s}</a>',
                u=url("/", {"source": row.source}),
                s=row.source,
            )
        )
    for tag in row.tags:
        parts.append(
            h(
                '<a class="chip tag" href="{u}" title="show memories tagged {t}">#{t}</a>',
                u=url("/", {"tags": tag}),
                t=tag,
            )
        )
    if row.by:
        parts.append(h('<span class="chip" title="who stored it">by {b}</span>', b=row.by))
    if row.quarantine:
        parts.append(
            h(
                '<a class="chip quarantined" href="{u}" title="it reads as instructions to the assistant: never '
                'injected until you release it">quarantined: {r}</a>',
                u=url("/", {"quarantined": "1"}),
                r=row.quarantine,
            )
        )
    if row.archived:
        parts.append(Safe('<span class="chip archived">archived</span>'))
    if row.superseded_by:
        parts.append(
            h(
                '<a class="chip" href="/memory/{s}">superseded by {short}</a>',
                s=row.superseded_by,
                short=short(row.superseded_by),
            )
        )
    return join(parts, " ")


def rating_buttons(ctx: Ctx, row: MemoryRow, next_url: str | None = None) -> Safe:
    buttons = h(
        '<button name="rating" value="1" class="thumb up{on_up}" title="thumbs up: this memory is right and useful" '
        'aria-label="thumbs up">{iu}</button>'
        '<button name="rating" value="-1" class="thumb down{on_down}" title="thumbs down: wrong or unhelpful" '
        'aria-label="thumbs down">{idn}</button>',
        on_up=" on" if row.user_rating == 1 else "",
        on_down=" on" if row.user_rating == -1 else "",
        iu=THUMB_UP,
        idn=THUMB_DOWN,
    )
    return form(ctx, f"/memory/{row.id}/rate", buttons, next_url=next_url)


def lifecycle_buttons(ctx: Ctx, row: MemoryRow, next_url: str | None = None) -> Safe:
    if row.archived:
        keep = form(
            ctx,
            f"/memory/{row.id}/restore",
            Safe('<button class="act" title="bring it back into reads">restore</button>'),
            next_url=next_url,
        )
    else:
        keep = form(
            ctx,
            f"/memory/{row.id}/archive",
            Safe('<button class="act" title="take it out of reads, keep it">archive</button>'),
            next_url=next_url,
        )
    delete = h(
        '<a class="act danger" href="{u}" title="erase it (asks first)">delete</a>',
        u=url(f"/memory/{row.id}/confirm-delete", {"next": next_url or ctx.here}),
    )
    if row.quarantine:
        release = form(
            ctx,
            f"/memory/{row.id}/release",
            Safe(
                '<button class="act" title="you read it and judge it safe: it may be injected again">release</button>'
            ),
            next_url=next_url,
        )
        return join([release, keep, delete], " ")
    return join([keep, delete], " ")


def memory_card(ctx: Ctx, row: MemoryRow, *, actions: bool = True) -> Safe:
    text = row.content if len(row.content) <= 700 else row.content[:699] + "…"
    ranked = Safe("")
    if row.score is not None:
        ranked = h(
            '<span class="ranked" title="relevance to the query, and the score the read ranked by">relevance {r} · '
            "score {s}</span>",
            r=f"{row.relevance:.2f}",
            s=f"{row.score:.3f}",
        )
    return h(
        '<article class="mem{arch}" id="m-{id}" data-id="{id}">'
        '<div class="side">{badge}<div class="val" title="valence: learned outcome, -1 misled .. +1 '
        'helped">{vbar}<span class="num">{v}</span></div></div>'
        '<div class="body"><div class="meta"><a class="mid" href="/memory/{id}">{short}</a> {chips} {ranked}</div>'
        '<div class="content">{text}</div>'
        '<div class="facts">created {created} · {reads} · {outcomes} · {ratings}</div></div>'
        '<div class="actions">{rate}{life}</div></article>',
        arch=" is-archived" if row.archived else "",
        id=row.id,
        badge=quality_badge(row.quality),
        vbar=charts.valence_bar(row.valence),
        v=f"{row.valence:+.2f}",
        short=short(row.id),
        chips=chips(row),
        ranked=ranked,
        text=text,
        created=day(row.created_at),
        reads=count(row.access_count, "read"),
        outcomes=count(row.feedback_count, "outcome report"),
        ratings=count(row.rating_count, "rating"),
        rate=rating_buttons(ctx, row) if actions else "",
        life=lifecycle_buttons(ctx, row) if actions else "",
    )


def select(name: str, current: str, options: list[tuple[str, str]], label: str) -> Safe:
    opts = join(
        h('<option value="{v}"{sel}>{t}</option>', v=v, t=t, sel=Safe(" selected") if v == current else Safe(""))
        for v, t in options
    )
    return h(
        '<label>{label} <select name="{n}" data-autosubmit>{opts}</select></label>', label=label, n=name, opts=opts
    )


# --- pages -----------------------------------------------------------------------------------


def dl(pairs: list[tuple[str, Any]]) -> Safe:
    return h('<dl class="facts-list">{x}</dl>', x=join(h("<dt>{k}</dt><dd>{v}</dd>", k=k, v=v) for k, v in pairs))


def grid(heads: tuple[str, ...], rows: Safe) -> Safe:
    """A data table: a header row, then `rows` (already `<tr>` markup)."""
    return h(
        '<table class="grid"><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table>',
        th=join(h("<th>{t}</th>", t=t) for t in heads),
        rows=rows,
    )


def ref_link(ref) -> Safe:
    if ref.content is None:
        return h("<code>{s}</code> (deleted)", s=short(ref.id))
    text = " ".join(ref.content.split())
    text = text if len(text) <= 90 else text[:89] + "…"
    return h(
        '<a href="/memory/{id}"><code>{s}</code></a> {t}{a}',
        id=ref.id,
        s=short(ref.id),
        t=text,
        a=" (archived)" if ref.archived else "",
    )
