"""The dashboard's pages as HTML strings. Everything from the database goes through `h`/`esc`
(mnemo_mcp/web/html.py); forms that change anything are POST and carry the CSRF token."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core import lifecycle
from ..service.browse import Analytics, BrowsePage, Facets, MemoryDetail, MemoryRow
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
THUMB_UP = h('<svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path d="{d}"/></svg>', d=_THUMB)
THUMB_DOWN = h(
    '<svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path transform="rotate(180 12 12)" d="{d}"/></svg>',
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


def _short(mid: str) -> str:
    return mid[:8] + "…"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _day(stamp: str | None) -> str:
    return stamp[:10] if stamp else "never"


def _age(hours: float | None) -> str:
    if hours is None:
        return "never"
    if hours < 1:
        return "under an hour ago"
    return f"{hours:.0f} hours ago" if hours < 48 else f"{hours / 24:.0f} days ago"


def _when(stamp: str | None) -> str:
    return stamp[:16].replace("T", " ") if stamp else "never"


def _hidden(ctx: Ctx, next_url: str | None = None) -> Safe:
    return h(
        '<input type="hidden" name="csrf" value="{c}"><input type="hidden" name="next" value="{n}">',
        c=ctx.csrf,
        n=next_url or ctx.here,
    )


def _form(ctx: Ctx, action: str, button: Safe, *, next_url: str | None = None, cls: str = "inline") -> Safe:
    return h('<form method="post" action="{a}" class="{c}">{hidden}{button}</form>', a=action, c=cls, hidden=_hidden(ctx, next_url), button=button)


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
        '<div class="where" title="database file and the domains this dashboard shows">{db} · scope: {scope}</div></header>'
        '<main>{flash}{body}</main></body></html>',
        title=title,
        nav=nav,
        db=ctx.db_path,
        scope=scope,
        flash=_flash(ctx),
        body=body,
    )


def _flash(ctx: Ctx) -> Safe:
    if not ctx.flash or ctx.flash[0] not in FLASHES:
        return Safe("")
    kind, mid = ctx.flash
    undo = Safe("")
    if kind == "archived":
        undo = _form(ctx, f"/memory/{mid}/restore", Safe('<button class="link">undo</button>'))
    return h('<div class="flash" role="status">{t} <code>{m}</code> {undo}</div>', t=FLASHES[kind], m=_short(mid), undo=undo)


# --- pieces ----------------------------------------------------------------------------------


def quality_badge(q: float) -> Safe:
    return h(
        '<span class="badge {c}" title="quality {q} (0.5 = new, no evidence yet)">{q}</span>',
        c=charts.quality_class(q),
        q=f"{q:.2f}",
    )


def _chips(row: MemoryRow) -> Safe:
    parts = [
        h('<span class="chip tier-{t}" title="tier">{t}</span>', t=row.tier),
        h('<span class="chip" title="memory type">{t}</span>', t=row.memory_type),
    ]
    if row.domain:
        parts.append(h('<span class="chip domain" title="domain">{d}</span>', d=row.domain))
    if row.source != "write":
        parts.append(h('<a class="chip source" href="{u}" title="how it was stored">{s}</a>', u=url("/", {"source": row.source}), s=row.source))
    for tag in row.tags:
        parts.append(h('<a class="chip tag" href="{u}" title="show memories tagged {t}">#{t}</a>', u=url("/", {"tags": tag}), t=tag))
    if row.by:
        parts.append(h('<span class="chip" title="who stored it">by {b}</span>', b=row.by))
    if row.quarantine:
        parts.append(h('<a class="chip quarantined" href="{u}" title="it reads as instructions to the assistant: never injected until you release it">quarantined: {r}</a>',
                       u=url("/", {"quarantined": "1"}), r=row.quarantine))
    if row.archived:
        parts.append(Safe('<span class="chip archived">archived</span>'))
    if row.superseded_by:
        parts.append(h('<a class="chip" href="/memory/{s}">superseded by {short}</a>', s=row.superseded_by, short=_short(row.superseded_by)))
    return join(parts, " ")


def rating_buttons(ctx: Ctx, row: MemoryRow, next_url: str | None = None) -> Safe:
    buttons = h(
        '<button name="rating" value="1" class="thumb up{on_up}" title="thumbs up: this memory is right and useful" aria-label="thumbs up">{iu}</button>'
        '<button name="rating" value="-1" class="thumb down{on_down}" title="thumbs down: wrong or unhelpful" aria-label="thumbs down">{idn}</button>',
        on_up=" on" if row.user_rating == 1 else "",
        on_down=" on" if row.user_rating == -1 else "",
        iu=THUMB_UP,
        idn=THUMB_DOWN,
    )
    return _form(ctx, f"/memory/{row.id}/rate", buttons, next_url=next_url)


def lifecycle_buttons(ctx: Ctx, row: MemoryRow, next_url: str | None = None) -> Safe:
    if row.archived:
        keep = _form(ctx, f"/memory/{row.id}/restore", Safe('<button class="act" title="bring it back into reads">restore</button>'), next_url=next_url)
    else:
        keep = _form(ctx, f"/memory/{row.id}/archive", Safe('<button class="act" title="take it out of reads, keep it">archive</button>'), next_url=next_url)
    delete = h('<a class="act danger" href="{u}" title="erase it (asks first)">delete</a>', u=url(f"/memory/{row.id}/confirm-delete", {"next": next_url or ctx.here}))
    if row.quarantine:
        release = _form(ctx, f"/memory/{row.id}/release",
                        Safe('<button class="act" title="you read it and judge it safe: it may be injected again">release</button>'), next_url=next_url)
        return join([release, keep, delete], " ")
    return join([keep, delete], " ")


def memory_card(ctx: Ctx, row: MemoryRow, *, actions: bool = True) -> Safe:
    text = row.content if len(row.content) <= 700 else row.content[:699] + "…"
    ranked = Safe("")
    if row.score is not None:
        ranked = h('<span class="ranked" title="relevance to the query, and the score the read ranked by">relevance {r} · score {s}</span>', r=f"{row.relevance:.2f}", s=f"{row.score:.3f}")
    return h(
        '<article class="mem{arch}" id="m-{id}" data-id="{id}">'
        '<div class="side">{badge}<div class="val" title="valence: learned outcome, -1 misled .. +1 helped">{vbar}<span class="num">{v}</span></div></div>'
        '<div class="body"><div class="meta"><a class="mid" href="/memory/{id}">{short}</a> {chips} {ranked}</div>'
        '<div class="content">{text}</div>'
        '<div class="facts">created {created} · {reads} · {outcomes} · {ratings}</div></div>'
        '<div class="actions">{rate}{life}</div></article>',
        arch=" is-archived" if row.archived else "",
        id=row.id,
        badge=quality_badge(row.quality),
        vbar=charts.valence_bar(row.valence),
        v=f"{row.valence:+.2f}",
        short=_short(row.id),
        chips=_chips(row),
        ranked=ranked,
        text=text,
        created=_day(row.created_at),
        reads=_count(row.access_count, "read"),
        outcomes=_count(row.feedback_count, "outcome report"),
        ratings=_count(row.rating_count, "rating"),
        rate=rating_buttons(ctx, row) if actions else "",
        life=lifecycle_buttons(ctx, row) if actions else "",
    )


def _select(name: str, current: str, options: list[tuple[str, str]], label: str) -> Safe:
    opts = join(h('<option value="{v}"{sel}>{t}</option>', v=v, t=t, sel=Safe(" selected") if v == current else Safe("")) for v, t in options)
    return h('<label>{label} <select name="{n}" data-autosubmit>{opts}</select></label>', label=label, n=name, opts=opts)


# --- pages -----------------------------------------------------------------------------------


def list_page(ctx: Ctx, page: BrowsePage, facets: Facets, params: dict[str, Any]) -> Safe:
    tags_text = ", ".join(params.get("tags") or [])
    filters = join(
        [
            h('<input type="search" name="q" value="{q}" placeholder="search as the model reads: meaning and keywords" aria-label="search" autofocus>', q=params.get("q") or ""),
            h('<input type="text" name="tags" value="{t}" placeholder="tags (any of, comma separated)" list="tag-list" aria-label="tags">', t=tags_text),
            h('<datalist id="tag-list">{o}</datalist>', o=join(h('<option value="{t}">', t=t) for t, _ in facets.tags)),
            _select("type", params.get("type") or "", [("", "any type")] + [(t, f"{t} ({n})") for t, n in facets.types], "type"),
            _select("tier", params.get("tier") or "", [("", "any tier")] + [(t, t) for t in lifecycle.TIERS], "tier"),
            _select("source", params.get("source") or "", [("", "any source")] + [(x, f"{x} ({n})") for x, n in facets.sources], "source"),
            _select("archived", params.get("archived") or "live", [("live", "live"), ("archived", "archived only"), ("all", "live and archived")], "show"),
            _select("domain", params.get("domain") or "", [("", "this scope")] + [(d, d or "(no domain)") for d, _ in facets.domains if d], "domain")
            if any(d for d, _ in facets.domains)
            else Safe(""),
            _select("sort", params.get("sort") or "newest", list(SORT_LABELS.items()), "order")
            if not params.get("q")
            else _select("k", str(params.get("k") or 10), [(str(k), str(k)) for k in SEARCH_SIZES], "top k"),
            Safe('<button type="submit" class="primary">Search</button> <a class="clear" href="/">clear</a>'),
        ],
        " ",
    )
    if page.query is not None:
        concepts = ", ".join(page.query_concepts) or "none"
        summary = h(
            '<p class="summary">{n} result{s} for <q>{q}</q>, in the order <code>memory_read</code> returns them '
            '(learned signals included; this search is not recorded as a read). Query concepts: {c}.</p>',
            n=page.total,
            s="" if page.total == 1 else "s",
            q=page.query,
            c=concepts,
        )
    elif page.total:
        summary = h('<p class="summary">{a}–{b} of {n} memories, {o}.</p>', a=page.offset + 1, b=page.offset + len(page.items), n=page.total, o=SORT_LABELS.get(params.get("sort") or "newest", "newest first"))
    else:
        summary = Safe('<p class="summary">No memories match.</p>')
    pager = Safe("")
    if page.query is None and page.total > page.limit:
        links = []
        base = {k: v for k, v in params.items() if k != "page"}
        number = page.offset // page.limit + 1
        if page.offset > 0:
            links.append(h('<a href="{u}" rel="prev">← previous</a>', u=url("/", {**base, "page": number - 1})))
        if page.offset + page.limit < page.total:
            links.append(h('<a href="{u}" rel="next">next →</a>', u=url("/", {**base, "page": number + 1})))
        pager = h('<nav class="pager">{l}</nav>', l=join(links, " "))
    cards = join(memory_card(ctx, row) for row in page.items)
    body = h(
        '<form class="filters" method="get" action="/" role="search">{f}</form>{s}<section class="list">{c}</section>{p}',
        f=filters,
        s=summary,
        c=cards,
        p=pager,
    )
    return layout(ctx, "Memories", body, active="list")


def _dl(pairs: list[tuple[str, Any]]) -> Safe:
    return h('<dl class="facts-list">{x}</dl>', x=join(h("<dt>{k}</dt><dd>{v}</dd>", k=k, v=v) for k, v in pairs))


def _ref_link(ref) -> Safe:
    if ref.content is None:
        return h("<code>{s}</code> (deleted)", s=_short(ref.id))
    text = " ".join(ref.content.split())
    text = text if len(text) <= 90 else text[:89] + "…"
    return h('<a href="/memory/{id}"><code>{s}</code></a> {t}{a}', id=ref.id, s=_short(ref.id), t=text, a=" (archived)" if ref.archived else "")


def detail_page(ctx: Ctx, d: MemoryDetail) -> Safe:
    m = d.memory
    q = d.quality
    about = [
        ("id", h("<code>{i}</code>", i=m.id)),
        ("type", m.memory_type),
        ("domain", m.domain or "(none)"),
        ("tags", ", ".join(m.tags) or "(none)"),
        ("tier", m.tier),
        ("source", d.source),
        ("created", _when(m.created_at)),
        ("changed", _when(m.updated_at)),
        ("last read", _when(m.last_accessed_at)),
        ("reads", f"{q.access_count} (returned by {q.retrieval_count} reads)"),
        ("outcome reports", q.feedback_count),
        ("ratings", q.rating_count),
    ]
    if m.archived:
        about.append(("archived", f"{_when(d.archived_at)}: {d.archive_reason or 'no reason given'}"))
    if d.superseded_by:
        about.append(("superseded by", _ref_link(d.superseded_by)))
    if d.supersedes:
        about.append(("replaces", join((_ref_link(r) for r in d.supersedes), Safe("<br>"))))
    for key, value in d.user_metadata.items():
        about.append((f"metadata: {key}", value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))

    components = join(
        h('<tr><th>{k}</th><td>{bar}</td><td class="num">{v}</td></tr>', k=k.replace("_", " "), bar=charts.meter(v), v=f"{v:.2f}")
        for k, v in q.components.items()
    )
    ratings = (
        join(
            h('<tr><td>{at}</td><td class="{c}">{r}</td><td>{why}</td></tr>', at=_when(e.at), c="pos" if e.rating > 0 else "neg" if e.rating < 0 else "", r={1: "thumbs up", -1: "thumbs down"}.get(e.rating, "neutral"), why=e.reason or "")
            for e in reversed(q.rating_history)
        )
        or Safe('<tr><td colspan="3" class="muted">no ratings yet</td></tr>')
    )
    rate_form = h(
        '<form method="post" action="/memory/{id}/rate" class="rate-form">{hidden}'
        '<input type="text" name="reason" maxlength="500" placeholder="reason (optional)" aria-label="reason">'
        '<button name="rating" value="1" class="thumb up" aria-label="thumbs up">{iu} up</button>'
        '<button name="rating" value="0" class="thumb" aria-label="neutral">neutral</button>'
        '<button name="rating" value="-1" class="thumb down" aria-label="thumbs down">{idn} down</button></form>',
        id=m.id,
        hidden=_hidden(ctx),
        iu=THUMB_UP,
        idn=THUMB_DOWN,
    )
    if d.feedback:
        chart = charts.valence_history([(e.at, e.outcome, e.valence_after) for e in d.feedback], label="valence after each outcome report")
        rows = join(
            h(
                '<tr><td>{at}</td><td class="{c}">{o}</td><td>{b} → {a}</td><td>{src}</td><td><code>{rid}</code></td></tr>',
                at=_when(e.at),
                c="pos" if e.outcome > 0 else "neg" if e.outcome < 0 else "",
                o=f"{e.outcome:+.2f}",
                b=f"{e.valence_before:+.3f}",
                a=f"{e.valence_after:+.3f}",
                src=e.source,
                rid=e.read_id or "",
            )
            for e in reversed(d.feedback[-50:])
        )
        more = f" (the latest {len(d.feedback)} of {d.feedback_total})" if d.feedback_total > len(d.feedback) else ""
        outcomes = h(
            '{chart}<table class="grid"><thead><tr><th>when</th><th>outcome</th><th>valence</th><th>from</th><th>read</th></tr></thead><tbody>{rows}</tbody></table><p class="muted">{n} outcome reports{more}.</p>',
            chart=chart,
            rows=rows,
            n=d.feedback_total,
            more=more,
        )
    else:
        outcomes = Safe('<p class="muted">No outcome reports yet: they come from memory_feedback and the Claude Code hooks.</p>')
    cues = (
        join(
            h('<tr><td>{c}</td><td class="{cls}">{v}</td><td class="num">{n}</td><td>{at}</td></tr>', c=c.concept, cls="pos" if c.value > 0 else "neg" if c.value < 0 else "", v=f"{c.value:+.2f}", n=c.count, at=_day(c.updated_at))
            for c in d.cues
        )
        or Safe('<tr><td colspan="4" class="muted">no question has been linked to this memory yet</td></tr>')
    )
    links = (
        join(
            h('<tr><td>{a} ↔ {b}</td><td class="num">{w}</td><td class="num">{v}</td><td class="num">{n}</td></tr>', a=a.concept, b=a.other, w=f"{a.weight:.2f}", v=f"{a.valence:+.2f}", n=a.count)
            for a in d.associations
        )
        or Safe('<tr><td colspan="4" class="muted">none</td></tr>')
    )
    body = h(
        '<article class="detail" data-id="{id}"><h1>Memory <code>{short}</code> {badge} <span class="val">{vbar} {v}</span></h1>'
        '<div class="meta">{chips}</div><pre class="content-full">{content}</pre>'
        '<div class="actions wide">{rate_form} {life}</div>'
        '<div class="columns"><section><h2>About</h2>{about}</section>'
        '<section><h2>Quality {qs}</h2><table class="components">{components}</table>'
        '<h3>Rating history</h3><table class="grid"><thead><tr><th>when</th><th>rating</th><th>reason</th></tr></thead><tbody>{ratings}</tbody></table></section></div>'
        '<section><h2>Outcomes over time</h2>{outcomes}</section>'
        '<section><h2>Linked concepts</h2><p>Its concepts: {concepts}</p>'
        '<div class="columns"><div><h3>Questions that lead here</h3><p class="muted">query concept → this memory, the running mean of outcomes reported through it</p>'
        '<table class="grid"><thead><tr><th>concept</th><th>link</th><th>reports</th><th>last</th></tr></thead><tbody>{cues}</tbody></table></div>'
        '<div><h3>Associated concepts</h3><p class="muted">Hebbian links from its concepts, used to expand queries</p>'
        '<table class="grid"><thead><tr><th>link</th><th>weight</th><th>valence</th><th>uses</th></tr></thead><tbody>{links}</tbody></table></div></div></section></article>',
        id=m.id,
        short=_short(m.id),
        badge=quality_badge(m.quality),
        vbar=charts.valence_bar(m.valence),
        v=f"valence {m.valence:+.2f}",
        chips=_chips(m),
        content=m.content,
        rate_form=rate_form,
        life=lifecycle_buttons(ctx, m),
        about=_dl(about),
        qs=quality_badge(q.quality_score),
        components=components,
        ratings=ratings,
        outcomes=outcomes,
        concepts=join((h('<span class="chip">{c}</span>', c=c) for c in d.concepts), " ") or "none",
        cues=cues,
        links=links,
    )
    return layout(ctx, f"Memory {m.id[:8]}", body, active="list")


def confirm_delete_page(ctx: Ctx, row: MemoryRow, back: str) -> Safe:
    body = h(
        '<section class="confirm"><h1>Delete this memory for good?</h1>'
        '<p>Deleting erases it with everything it learned (valence, ratings, outcome history, linked questions). '
        'Archiving takes it out of reads and keeps all of that; it can be restored.</p>{card}'
        '<form method="post" action="/memory/{id}/delete" class="inline">{hidden}<button class="danger" id="confirm-delete">Delete permanently</button></form> '
        '<a class="act" href="{back}">cancel</a></section>',
        card=memory_card(ctx, row, actions=False),
        id=row.id,
        hidden=_hidden(ctx, back),
        back=back,
    )
    return layout(ctx, "Delete?", body, active="list")


def analytics_page(ctx: Ctx, a: Analytics) -> Safe:
    s = a.stats
    cards = [
        ("live memories", s.total),
        ("archived", s.archived),
        ("average quality", f"{s.avg_quality:.2f}" if s.avg_quality is not None else "–"),
        ("average valence", f"{s.avg_valence:+.2f}" if s.avg_valence is not None else "–"),
        ("outcome reports", s.feedback_events),
        ("concept links", s.associations),
        ("database", f"{s.db_size_bytes / 1e6:.1f} MB"),
        ("last consolidation", _day(s.last_consolidation)),
        ("last backup", _age(s.last_backup_age_hours)),
    ]
    summary = join(h('<div class="card"><div class="big">{v}</div><div class="muted">{k}</div></div>', k=k, v=v) for k, v in cards)
    q_labels = [f"{i / 10:.1f}" for i in range(10)]
    quality = charts.columns(
        a.quality_histogram,
        q_labels,
        [charts.quality_class(i / 10 + 0.05) for i in range(10)],
        label="live memories by quality",
        tips=[f"quality {i / 10:.1f}–{(i + 1) / 10:.1f}: {n}" for i, n in enumerate(a.quality_histogram)],
    )
    bins = len(a.valence_histogram)
    v_lo = [-1 + 2 * i / bins for i in range(bins)]
    valence = charts.columns(
        a.valence_histogram,
        [f"{lo:+.1f}" if abs(lo) > 1e-9 else "0" for lo in v_lo],
        ["neg" if lo < 0 else "pos" if lo > 0 else "zero" for lo in v_lo],
        label="live memories by valence",
        tips=[f"valence {lo:+.1f} to {lo + 2 / bins:+.1f}: {n}" for lo, n in zip(v_lo, a.valence_histogram)],
    )
    days = [d.model_dump() for d in a.activity]
    totals = {k: sum(d[k] for d in days) for k in ("positive", "negative", "neutral", "thumbs_up", "thumbs_down")}
    act = charts.activity(days, label=f"outcome reports and ratings per day, last {len(days)} days")
    tiers: dict[str, int] = {}
    types: dict[str, int] = {}
    for c in a.tier_type:
        tiers[c.tier] = tiers.get(c.tier, 0) + c.live
        types[c.memory_type] = types.get(c.memory_type, 0) + c.live
    tier_chart = charts.bars([(t, tiers.get(t, 0), f"tier-{t}") for t in lifecycle.TIERS], label="live memories by tier")
    type_chart = charts.bars(sorted(((t, n, "bar") for t, n in types.items()), key=lambda r: -r[1]), label="live memories by type")
    matrix = join(
        h('<tr><td>{t}</td><td>{m}</td><td class="num">{lv}</td><td class="num">{ar}</td></tr>', t=c.tier, m=c.memory_type, lv=c.live, ar=c.archived)
        for c in a.tier_type
    )
    body = h(
        '<h1>Analytics</h1><div class="cards">{summary}</div>'
        '<div class="columns"><section><h2>Quality</h2><p class="muted">0.5 is a new memory; ratings, reads and consolidation move it</p>{quality}</section>'
        '<section><h2>Valence</h2><p class="muted">learned outcome: -1 misled, +1 helped; new memories sit at 0</p>{valence}</section></div>'
        '<section><h2>Feedback activity</h2><p class="muted">above the line: outcomes that helped (green) and thumbs up (blue); '
        'below: outcomes that misled (red) and thumbs down (orange). In this window: {pos} helped, {neg} misled, {neu} neutral, '
        '{up} thumbs up, {down} thumbs down.</p>{act}</section>'
        '<div class="columns"><section><h2>By tier</h2>{tier_chart}</section><section><h2>By type</h2>{type_chart}</section></div>'
        '<section><h2>Tier × type</h2><table class="grid"><thead><tr><th>tier</th><th>type</th><th>live</th><th>archived</th></tr></thead><tbody>{matrix}</tbody></table>'
        '<p class="muted">embedding model {model} ({dim}-d)</p></section>',
        summary=summary,
        quality=quality,
        valence=valence,
        pos=totals["positive"],
        neg=totals["negative"],
        neu=totals["neutral"],
        up=totals["thumbs_up"],
        down=totals["thumbs_down"],
        act=act,
        tier_chart=tier_chart,
        type_chart=type_chart,
        matrix=matrix,
        model=s.embedding_model,
        dim=s.embedding_dim,
    )
    return layout(ctx, "Analytics", body, active="analytics")


def error_page(ctx: Ctx | None, status: int, message: str) -> Safe:
    body = h('<section class="error"><h1>{s}</h1><p>{m}</p><p><a href="/">back to the memories</a></p></section>', s=status, m=message)
    if ctx is None:
        return h('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{s}</title></head><body>{b}</body></html>', s=status, b=body)
    return layout(ctx, str(status), body, active="")
