"""The dashboard's pages as HTML strings. Everything from the database goes through `h`/`esc`
(mnemo_mcp/web/html.py); forms that change anything are POST and carry the CSRF token."""

from __future__ import annotations

import json
from typing import Any

from ..core import lifecycle
from ..service.browse import Analytics, BrowsePage, Facets, MemoryDetail, MemoryRow
from . import charts, parts
from .html import Safe, h, join, url


def list_page(ctx: parts.Ctx, page: BrowsePage, facets: Facets, params: dict[str, Any]) -> Safe:
    tags_text = ", ".join(params.get("tags") or [])
    filters = join(
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
            parts.select(
                "type",
                params.get("type") or "",
                [("", "any type")] + [(t, f"{t} ({n})") for t, n in facets.types],
                "type",
            ),
            parts.select(
                "tier", params.get("tier") or "", [("", "any tier")] + [(t, t) for t in lifecycle.TIERS], "tier"
            ),
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
            Safe('<button type="submit" class="primary">Search</button> <a class="clear" href="/">clear</a>'),
        ],
        " ",
    )
    if page.query is not None:
        concepts = ", ".join(page.query_concepts) or "none"
        summary = h(
            '<p class="summary">{n} result{s} for <q>{q}</q>, in the order <code>memory_read</code> returns them '
            "(learned signals included; this search is not recorded as a read). Query concepts: {c}.</p>",
            n=page.total,
            s="" if page.total == 1 else "s",
            q=page.query,
            c=concepts,
        )
    elif page.total:
        summary = h(
            '<p class="summary">{a}–{b} of {n} memories, {o}.</p>',
            a=page.offset + 1,
            b=page.offset + len(page.items),
            n=page.total,
            o=parts.SORT_LABELS.get(params.get("sort") or "newest", "newest first"),
        )
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
    cards = join(parts.memory_card(ctx, row) for row in page.items)
    body = h(
        '<form class="filters" method="get" action="/" role="search">{f}</form>{s}<section '
        'class="list">{c}</section>{p}',
        f=filters,
        s=summary,
        c=cards,
        p=pager,
    )
    return parts.layout(ctx, "Memories", body, active="list")


def detail_page(ctx: parts.Ctx, d: MemoryDetail) -> Safe:
    m = d.memory
    q = d.quality
    about = [
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

    components = join(
        h(
            '<tr><th>{k}</th><td>{bar}</td><td class="num">{v}</td></tr>',
            k=k.replace("_", " "),
            bar=charts.meter(v),
            v=f"{v:.2f}",
        )
        for k, v in q.components.items()
    )
    ratings = join(
        h(
            '<tr><td>{at}</td><td class="{c}">{r}</td><td>{why}</td></tr>',
            at=parts.when(e.at),
            c="pos" if e.rating > 0 else "neg" if e.rating < 0 else "",
            r={1: "thumbs up", -1: "thumbs down"}.get(e.rating, "neutral"),
            why=e.reason or "",
        )
        for e in reversed(q.rating_history)
    ) or Safe('<tr><td colspan="3" class="muted">no ratings yet</td></tr>')
    rate_form = h(
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
    if d.feedback:
        chart = charts.valence_history(
            [(e.at, e.outcome, e.valence_after) for e in d.feedback], label="valence after each outcome report"
        )
        rows = join(
            h(
                '<tr><td>{at}</td><td class="{c}">{o}</td><td>{b} → '
                "{a}</td><td>{src}</td><td><code>{rid}</code></td></tr>",
                at=parts.when(e.at),
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
            '{chart}<table class="grid"><thead><tr><th>when</th><th>outcome</th><th>valence</th><th>from</th>'
            "<th>read</th></tr></thead><tbody>{rows}</tbody></table>"
            '<p class="muted">{n} outcome reports{more}.</p>',
            chart=chart,
            rows=rows,
            n=d.feedback_total,
            more=more,
        )
    else:
        outcomes = Safe(
            '<p class="muted">No outcome reports yet: they come from memory_feedback and the Claude Code hooks.</p>'
        )
    cues = join(
        h(
            '<tr><td>{c}</td><td class="{cls}">{v}</td><td class="num">{n}</td><td>{at}</td></tr>',
            c=c.concept,
            cls="pos" if c.value > 0 else "neg" if c.value < 0 else "",
            v=f"{c.value:+.2f}",
            n=c.count,
            at=parts.day(c.updated_at),
        )
        for c in d.cues
    ) or Safe('<tr><td colspan="4" class="muted">no question has been linked to this memory yet</td></tr>')
    links = join(
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
    body = h(
        '<article class="detail" data-id="{id}"><h1>Memory <code>{short}</code> {badge} <span class="val">{vbar} '
        "{v}</span></h1>"
        '<div class="meta">{chips}</div><pre class="content-full">{content}</pre>'
        '<div class="actions wide">{rate_form} {life}</div>'
        '<div class="columns"><section><h2>About</h2>{about}</section>'
        '<section><h2>Quality {qs}</h2><table class="components">{components}</table>'
        "<h3>Rating history</h3><table "
        'class="grid"><thead><tr><th>when</th><th>rating</th><th>reason</th></tr></thead><tbody>{ratings}</tbody></table></section></div>'
        "<section><h2>Outcomes over time</h2>{outcomes}</section>"
        "<section><h2>Linked concepts</h2><p>Its concepts: {concepts}</p>"
        '<div class="columns"><div><h3>Questions that lead here</h3><p class="muted">query concept → this memory, '
        "the running mean of outcomes reported through it</p>"
        '<table class="grid"><thead><tr><th>concept</th><th>link</th><th>reports</th><th>last</th></tr></thead>'
        "<tbody>{cues}</tbody></table></div>"
        '<div><h3>Associated concepts</h3><p class="muted">Hebbian links from its concepts, used to expand queries</p>'
        '<table class="grid"><thead><tr><th>link</th><th>weight</th><th>valence</th><th>uses</th></tr></thead>'
        "<tbody>{links}</tbody></table></div></div></section></article>",
        id=m.id,
        short=parts.short(m.id),
        badge=parts.quality_badge(m.quality),
        vbar=charts.valence_bar(m.valence),
        v=f"valence {m.valence:+.2f}",
        chips=parts.chips(m),
        content=m.content,
        rate_form=rate_form,
        life=parts.lifecycle_buttons(ctx, m),
        about=parts.dl(about),
        qs=parts.quality_badge(q.quality_score),
        components=components,
        ratings=ratings,
        outcomes=outcomes,
        concepts=join((h('<span class="chip">{c}</span>', c=c) for c in d.concepts), " ") or "none",
        cues=cues,
        links=links,
    )
    return parts.layout(ctx, f"Memory {m.id[:8]}", body, active="list")


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


def analytics_page(ctx: parts.Ctx, a: Analytics) -> Safe:
    s = a.stats
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
    summary = join(
        h('<div class="card"><div class="big">{v}</div><div class="muted">{k}</div></div>', k=k, v=v) for k, v in cards
    )
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
    tier_chart = charts.bars(
        [(t, tiers.get(t, 0), f"tier-{t}") for t in lifecycle.TIERS], label="live memories by tier"
    )
    type_chart = charts.bars(
        sorted(((t, n, "bar") for t, n in types.items()), key=lambda r: -r[1]), label="live memories by type"
    )
    matrix = join(
        h(
            '<tr><td>{t}</td><td>{m}</td><td class="num">{lv}</td><td class="num">{ar}</td></tr>',
            t=c.tier,
            m=c.memory_type,
            lv=c.live,
            ar=c.archived,
        )
        for c in a.tier_type
    )
    body = h(
        '<h1>Analytics</h1><div class="cards">{summary}</div>'
        '<div class="columns"><section><h2>Quality</h2><p class="muted">0.5 is a new memory; ratings, reads and '
        "consolidation move it</p>{quality}</section>"
        '<section><h2>Valence</h2><p class="muted">learned outcome: -1 misled, +1 helped; new memories sit at '
        "0</p>{valence}</section></div>"
        '<section><h2>Feedback activity</h2><p class="muted">above the line: outcomes that helped (green) and thumbs '
        "up (blue); "
        "below: outcomes that misled (red) and thumbs down (orange). In this window: {pos} helped, {neg} misled, "
        "{neu} neutral, "
        "{up} thumbs up, {down} thumbs down.</p>{act}</section>"
        '<div class="columns"><section><h2>By tier</h2>{tier_chart}</section><section><h2>By '
        "type</h2>{type_chart}</section></div>"
        "<section><h2>Tier × type</h2><table "
        'class="grid"><thead><tr><th>tier</th><th>type</th><th>live</th><th>archived</th></tr></thead><tbody>{matrix}</tbody></table>'
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
    return parts.layout(ctx, "Analytics", body, active="analytics")


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
