"""The dashboard's pages as HTML strings. Everything from the database goes through `h`/`esc`
(mnemo_mcp/web/html.py); forms that change anything are POST and carry the CSRF token."""

from __future__ import annotations

import json
from typing import Any

from ..core import lifecycle
from ..models import StatsResult
from ..service.browse import Analytics, BrowsePage, Facets, MemoryDetail, MemoryRow
from . import charts, parts
from .html import Safe, h, join, url

# --- the list ----------------------------------------------------------------------------------


def list_page(ctx: parts.Ctx, page: BrowsePage, facets: Facets, params: dict[str, Any]) -> Safe:
    body = h(
        '<form class="filters" method="get" action="/" role="search">{f}</form>{s}<section '
        'class="list">{c}</section>{p}',
        f=_filters(params, facets),
        s=_list_summary(page, params),
        c=join(parts.memory_card(ctx, row) for row in page.items),
        p=_pager(page, params),
    )
    return parts.layout(ctx, "Memories", body, active="list")


def _filters(params: dict[str, Any], facets: Facets) -> Safe:
    tags_text = ", ".join(params.get("tags") or [])
    return join(
        [
            h(
                '<input type="search" name="q" value="{q}" placeholder="search as the model reads: meaning and '
                'keywords" aria-label="search" autofocus>',
                q=params.get("q") or "",
            ),
            h(
                '<input type="text" name="tags" value="{t}" placeholder="tags (any of, comma separated)" '
                'list="tag-list" aria-label="tags">',
                t=tags_text,
            ),
            h('<datalist id="tag-list">{o}</datalist>', o=join(h('<option value="{t}">', t=t) for t, _ in facets.tags)),
            *_filter_selects(params, facets),
            Safe('<button type="submit" class="primary">Search</button> <a class="clear" href="/">clear</a>'),
        ],
        " ",
    )


def _filter_selects(params: dict[str, Any], facets: Facets) -> list[Safe]:
    # The domain slot stays (empty) without domains: the filters' spacing depends on it.
    return [
        parts.select(
            "type",
            params.get("type") or "",
            [("", "any type")] + [(t, f"{t} ({n})") for t, n in facets.types],
            "type",
        ),
        parts.select("tier", params.get("tier") or "", [("", "any tier")] + [(t, t) for t in lifecycle.TIERS], "tier"),
        parts.select(
            "source",
            params.get("source") or "",
            [("", "any source")] + [(x, f"{x} ({n})") for x, n in facets.sources],
            "source",
        ),
        parts.select(
            "archived",
            params.get("archived") or "live",
            [("live", "live"), ("archived", "archived only"), ("all", "live and archived")],
            "show",
        ),
        parts.select(
            "domain",
            params.get("domain") or "",
            [("", "this scope")] + [(d, d or "(no domain)") for d, _ in facets.domains if d],
            "domain",
        )
        if any(d for d, _ in facets.domains)
        else Safe(""),
        parts.select("sort", params.get("sort") or "newest", list(parts.SORT_LABELS.items()), "order")
        if not params.get("q")
        else parts.select("k", str(params.get("k") or 10), [(str(k), str(k)) for k in parts.SEARCH_SIZES], "top k"),
    ]


def _list_summary(page: BrowsePage, params: dict[str, Any]) -> Safe:
    if page.query is not None:
        concepts = ", ".join(page.query_concepts) or "none"
        return h(
            '<p class="summary">{n} result{s} for <q>{q}</q>, in the order <code>memory_read</code> returns them '
            "(learned signals included; this search is not recorded as a read). Query concepts: {c}.</p>",
            n=page.total,
            s="" if page.total == 1 else "s",
            q=page.query,
            c=concepts,
        )
    if page.total:
        return h(
            '<p class="summary">{a}–{b} of {n} memories, {o}.</p>',
            a=page.offset + 1,
            b=page.offset + len(page.items),
            n=page.total,
            o=parts.SORT_LABELS.get(params.get("sort") or "newest", "newest first"),
        )
    return Safe('<p class="summary">No memories match.</p>')


def _pager(page: BrowsePage, params: dict[str, Any]) -> Safe:
    # A search shows one ranked page (its top k), so only a browse pages.
    if page.query is not None or page.total <= page.limit:
        return Safe("")
    links = []
    base = {k: v for k, v in params.items() if k != "page"}
    number = page.offset // page.limit + 1
    if page.offset > 0:
        links.append(h('<a href="{u}" rel="prev">← previous</a>', u=url("/", {**base, "page": number - 1})))
    if page.offset + page.limit < page.total:
        links.append(h('<a href="{u}" rel="next">next →</a>', u=url("/", {**base, "page": number + 1})))
    return h('<nav class="pager">{l}</nav>', l=join(links, " "))


# --- one memory --------------------------------------------------------------------------------


def detail_page(ctx: parts.Ctx, d: MemoryDetail) -> Safe:
    body = h(
        '<article class="detail" data-id="{id}">{head}{columns}'
        "<section><h2>Outcomes over time</h2>{outcomes}</section>{linked}</article>",
        id=d.memory.id,
        head=_detail_head(ctx, d),
        columns=_about_and_quality(d),
        outcomes=_outcomes(d),
        linked=_linked_concepts(d),
    )
    return parts.layout(ctx, f"Memory {d.memory.id[:8]}", body, active="list")


def _detail_head(ctx: parts.Ctx, d: MemoryDetail) -> Safe:
    m = d.memory
    return h(
        '<h1>Memory <code>{short}</code> {badge} <span class="val">{vbar} {v}</span></h1>'
        '<div class="meta">{chips}</div><pre class="content-full">{content}</pre>'
        '<div class="actions wide">{rate_form} {life}</div>',
        short=parts.short(m.id),
        badge=parts.quality_badge(m.quality),
        vbar=charts.valence_bar(m.valence),
        v=f"valence {m.valence:+.2f}",
        chips=parts.chips(m),
        content=m.content,
        rate_form=_rate_form(ctx, m),
        life=parts.lifecycle_buttons(ctx, m),
    )


def _rate_form(ctx: parts.Ctx, m: MemoryRow) -> Safe:
    return h(
        '<form method="post" action="/memory/{id}/rate" class="rate-form">{hidden}'
        '<input type="text" name="reason" maxlength="500" placeholder="reason (optional)" aria-label="reason">'
        '<button name="rating" value="1" class="thumb up" aria-label="thumbs up">{iu} up</button>'
        '<button name="rating" value="0" class="thumb" aria-label="neutral">neutral</button>'
        '<button name="rating" value="-1" class="thumb down" aria-label="thumbs down">{idn} down</button></form>',
        id=m.id,
        hidden=parts.hidden(ctx),
        iu=parts.THUMB_UP,
        idn=parts.THUMB_DOWN,
    )


def _about_and_quality(d: MemoryDetail) -> Safe:
    return h(
        '<div class="columns"><section><h2>About</h2>{about}</section>'
        '<section><h2>Quality {qs}</h2><table class="components">{components}</table>'
        "<h3>Rating history</h3>{ratings}</section></div>",
        about=parts.dl(_about(d)),
        qs=parts.quality_badge(d.quality.quality_score),
        components=_component_rows(d),
        ratings=parts.grid(("when", "rating", "reason"), _rating_rows(d)),
    )


def _about(d: MemoryDetail) -> list[tuple[str, Any]]:
    m = d.memory
    q = d.quality
    about: list[tuple[str, Any]] = [
        ("id", h("<code>{i}</code>", i=m.id)),
        ("type", m.memory_type),
        ("domain", m.domain or "(none)"),
        ("tags", ", ".join(m.tags) or "(none)"),
        ("tier", m.tier),
        ("source", d.source),
        ("created", parts.when(m.created_at)),
        ("changed", parts.when(m.updated_at)),
        ("last read", parts.when(m.last_accessed_at)),
        ("reads", f"{q.access_count} (returned by {q.retrieval_count} reads)"),
        ("outcome reports", q.feedback_count),
        ("ratings", q.rating_count),
    ]
    if m.archived:
        about.append(("archived", f"{parts.when(d.archived_at)}: {d.archive_reason or 'no reason given'}"))
    if d.superseded_by:
        about.append(("superseded by", parts.ref_link(d.superseded_by)))
    if d.supersedes:
        about.append(("replaces", join((parts.ref_link(r) for r in d.supersedes), Safe("<br>"))))
    for key, value in d.user_metadata.items():
        about.append((f"metadata: {key}", value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    return about


def _component_rows(d: MemoryDetail) -> Safe:
    return join(
        h(
            '<tr><th>{k}</th><td>{bar}</td><td class="num">{v}</td></tr>',
            k=k.replace("_", " "),
            bar=charts.meter(v),
            v=f"{v:.2f}",
        )
        for k, v in d.quality.components.items()
    )


def _rating_rows(d: MemoryDetail) -> Safe:
    return join(
        h(
            '<tr><td>{at}</td><td class="{c}">{r}</td><td>{why}</td></tr>',
            at=parts.when(e.at),
            c=parts.sign_class(e.rating),
            r={1: "thumbs up", -1: "thumbs down"}.get(e.rating, "neutral"),
            why=e.reason or "",
        )
        for e in reversed(d.quality.rating_history)
    ) or Safe('<tr><td colspan="3" class="muted">no ratings yet</td></tr>')


def _outcomes(d: MemoryDetail) -> Safe:
    if not d.feedback:
        return Safe(
            '<p class="muted">No outcome reports yet: they come from memory_feedback and the Claude Code hooks.</p>'
        )
    chart = charts.valence_history(
        [(e.at, e.outcome, e.valence_after) for e in d.feedback], label="valence after each outcome report"
    )
    more = f" (the latest {len(d.feedback)} of {d.feedback_total})" if d.feedback_total > len(d.feedback) else ""
    return h(
        '{chart}{table}<p class="muted">{n} outcome reports{more}.</p>',
        chart=chart,
        table=parts.grid(("when", "outcome", "valence", "from", "read"), _outcome_rows(d)),
        n=d.feedback_total,
        more=more,
    )


def _outcome_rows(d: MemoryDetail) -> Safe:
    # The chart shows every report loaded; the table only the newest 50, newest first.
    return join(
        h(
            '<tr><td>{at}</td><td class="{c}">{o}</td><td>{b} → {a}</td><td>{src}</td><td><code>{rid}</code></td></tr>',
            at=parts.when(e.at),
            c=parts.sign_class(e.outcome),
            o=f"{e.outcome:+.2f}",
            b=f"{e.valence_before:+.3f}",
            a=f"{e.valence_after:+.3f}",
            src=e.source,
            rid=e.read_id or "",
        )
        for e in reversed(d.feedback[-50:])
    )


def _linked_concepts(d: MemoryDetail) -> Safe:
    return h(
        "<section><h2>Linked concepts</h2><p>Its concepts: {concepts}</p>"
        '<div class="columns"><div><h3>Questions that lead here</h3><p class="muted">query concept → this memory, '
        "the running mean of outcomes reported through it</p>{cues}</div>"
        '<div><h3>Associated concepts</h3><p class="muted">Hebbian links from its concepts, used to expand queries</p>'
        "{links}</div></div></section>",
        concepts=join((h('<span class="chip">{c}</span>', c=c) for c in d.concepts), " ") or "none",
        cues=parts.grid(("concept", "link", "reports", "last"), _cue_rows(d)),
        links=parts.grid(("link", "weight", "valence", "uses"), _association_rows(d)),
    )


def _cue_rows(d: MemoryDetail) -> Safe:
    return join(
        h(
            '<tr><td>{c}</td><td class="{cls}">{v}</td><td class="num">{n}</td><td>{at}</td></tr>',
            c=c.concept,
            cls=parts.sign_class(c.value),
            v=f"{c.value:+.2f}",
            n=c.count,
            at=parts.day(c.updated_at),
        )
        for c in d.cues
    ) or Safe('<tr><td colspan="4" class="muted">no question has been linked to this memory yet</td></tr>')


def _association_rows(d: MemoryDetail) -> Safe:
    return join(
        h(
            '<tr><td>{a} ↔ {b}</td><td class="num">{w}</td><td class="num">{v}</td><td class="num">{n}</td></tr>',
            a=a.concept,
            b=a.other,
            w=f"{a.weight:.2f}",
            v=f"{a.valence:+.2f}",
            n=a.count,
        )
        for a in d.associations
    ) or Safe('<tr><td colspan="4" class="muted">none</td></tr>')


def confirm_delete_page(ctx: parts.Ctx, row: MemoryRow, back: str) -> Safe:
    body = h(
        '<section class="confirm"><h1>Delete this memory for good?</h1>'
        "<p>Deleting erases it with everything it learned (valence, ratings, outcome history, linked questions). "
        "Archiving takes it out of reads and keeps all of that; it can be restored.</p>{card}"
        '<form method="post" action="/memory/{id}/delete" class="inline">{hidden}<button class="danger" '
        'id="confirm-delete">Delete permanently</button></form> '
        '<a class="act" href="{back}">cancel</a></section>',
        card=parts.memory_card(ctx, row, actions=False),
        id=row.id,
        hidden=parts.hidden(ctx, back),
        back=back,
    )
    return parts.layout(ctx, "Delete?", body, active="list")


# --- analytics ---------------------------------------------------------------------------------


def analytics_page(ctx: parts.Ctx, a: Analytics) -> Safe:
    tier_chart, type_chart = _tier_and_type_charts(a)
    body = h(
        '<h1>Analytics</h1><div class="cards">{summary}</div>'
        '<div class="columns"><section><h2>Quality</h2><p class="muted">0.5 is a new memory; ratings, reads and '
        "consolidation move it</p>{quality}</section>"
        '<section><h2>Valence</h2><p class="muted">learned outcome: -1 misled, +1 helped; new memories sit at '
        "0</p>{valence}</section></div>"
        "{activity}"
        '<div class="columns"><section><h2>By tier</h2>{tier_chart}</section><section><h2>By '
        "type</h2>{type_chart}</section></div>"
        "<section><h2>Tier × type</h2>{matrix}"
        '<p class="muted">embedding model {model} ({dim}-d)</p></section>',
        summary=_summary_cards(a.stats),
        quality=_quality_chart(a),
        valence=_valence_chart(a),
        activity=_activity_section(a),
        tier_chart=tier_chart,
        type_chart=type_chart,
        matrix=parts.grid(("tier", "type", "live", "archived"), _tier_type_rows(a)),
        model=a.stats.embedding_model,
        dim=a.stats.embedding_dim,
    )
    return parts.layout(ctx, "Analytics", body, active="analytics")


def _summary_cards(s: StatsResult) -> Safe:
    cards = [
        ("live memories", s.total),
        ("archived", s.archived),
        ("average quality", f"{s.avg_quality:.2f}" if s.avg_quality is not None else "–"),
        ("average valence", f"{s.avg_valence:+.2f}" if s.avg_valence is not None else "–"),
        ("outcome reports", s.feedback_events),
        ("concept links", s.associations),
        ("database", f"{s.db_size_bytes / 1e6:.1f} MB"),
        ("last consolidation", parts.day(s.last_consolidation)),
        ("last backup", parts.age(s.last_backup_age_hours)),
    ]
    return join(
        h('<div class="card"><div class="big">{v}</div><div class="muted">{k}</div></div>', k=k, v=v) for k, v in cards
    )


def _quality_chart(a: Analytics) -> Safe:
    return charts.columns(
        a.quality_histogram,
        [f"{i / 10:.1f}" for i in range(10)],
        [charts.quality_class(i / 10 + 0.05) for i in range(10)],
        label="live memories by quality",
        tips=[f"quality {i / 10:.1f}–{(i + 1) / 10:.1f}: {n}" for i, n in enumerate(a.quality_histogram)],
    )


def _valence_chart(a: Analytics) -> Safe:
    bins = len(a.valence_histogram)
    v_lo = [-1 + 2 * i / bins for i in range(bins)]
    return charts.columns(
        a.valence_histogram,
        [f"{lo:+.1f}" if abs(lo) > 1e-9 else "0" for lo in v_lo],
        ["neg" if lo < 0 else "pos" if lo > 0 else "zero" for lo in v_lo],
        label="live memories by valence",
        tips=[f"valence {lo:+.1f} to {lo + 2 / bins:+.1f}: {n}" for lo, n in zip(v_lo, a.valence_histogram)],
    )


def _activity_section(a: Analytics) -> Safe:
    days = [d.model_dump() for d in a.activity]
    totals = {k: sum(d[k] for d in days) for k in ("positive", "negative", "neutral", "thumbs_up", "thumbs_down")}
    return h(
        '<section><h2>Feedback activity</h2><p class="muted">above the line: outcomes that helped (green) and thumbs '
        "up (blue); below: outcomes that misled (red) and thumbs down (orange). In this window: {pos} helped, "
        "{neg} misled, {neu} neutral, {up} thumbs up, {down} thumbs down.</p>{act}</section>",
        pos=totals["positive"],
        neg=totals["negative"],
        neu=totals["neutral"],
        up=totals["thumbs_up"],
        down=totals["thumbs_down"],
        act=charts.activity(days, label=f"outcome reports and ratings per day, last {len(days)} days"),
    )


def _tier_and_type_charts(a: Analytics) -> tuple[Safe, Safe]:
    tiers: dict[str, int] = {}
    types: dict[str, int] = {}
    for c in a.tier_type:
        tiers[c.tier] = tiers.get(c.tier, 0) + c.live
        types[c.memory_type] = types.get(c.memory_type, 0) + c.live
    tier_chart = charts.bars(
        [(t, tiers.get(t, 0), f"tier-{t}") for t in lifecycle.TIERS], label="live memories by tier"
    )
    type_chart = charts.bars(
        sorted(((t, n, "bar") for t, n in types.items()), key=lambda r: -r[1]), label="live memories by type"
    )
    return tier_chart, type_chart


def _tier_type_rows(a: Analytics) -> Safe:
    return join(
        h(
            '<tr><td>{t}</td><td>{m}</td><td class="num">{lv}</td><td class="num">{ar}</td></tr>',
            t=c.tier,
            m=c.memory_type,
            lv=c.live,
            ar=c.archived,
        )
        for c in a.tier_type
    )


def error_page(ctx: parts.Ctx | None, status: int, message: str) -> Safe:
    body = h(
        '<section class="error"><h1>{s}</h1><p>{m}</p><p><a href="/">back to the memories</a></p></section>',
        s=status,
        m=message,
    )
    if ctx is None:
        return h(
            '<!doctype html><html lang="en"><head><meta '
            'charset="utf-8"><title>{s}</title></head><body>{b}</body></html>',
            s=status,
            b=body,
        )
    return parts.layout(ctx, str(status), body, active="")
