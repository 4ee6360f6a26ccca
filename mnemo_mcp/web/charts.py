"""Charts as inline SVG drawn on the server: no chart library, no script, nothing fetched.
Colours come from classes in style.css, so the pages need no inline styles (the content
security policy forbids them). Every chart has a text title and per-bar tooltips."""

from __future__ import annotations

from collections.abc import Sequence

from .html import Safe, h, join


def quality_class(q: float) -> str:
    """The badge colour band; 0.5 (a new memory, no evidence) is the neutral middle."""
    if q < 0.35:
        return "q-bad"
    if q < 0.47:
        return "q-low"
    if q < 0.56:
        return "q-mid"
    if q < 0.7:
        return "q-good"
    return "q-top"


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _svg(width: int, height: int, label: str, body: Safe, cls: str = "chart") -> Safe:
    return h(
        '<svg class="{cls}" viewBox="0 0 {w} {hh}" width="{w}" height="{hh}" role="img" aria-label="{label}" '
        'xmlns="http://www.w3.org/2000/svg"><title>{label}</title>{body}</svg>',
        cls=cls,
        w=width,
        hh=height,
        label=label,
        body=body,
    )


def _nice_max(n: int) -> int:
    """A round axis top at or above n (1, 2, 5, 10, 20, 50, ...)."""
    top = 1
    while True:
        for m in (1, 2, 5):
            if top * m >= n:
                return top * m
        top *= 10


def columns(
    values: Sequence[int],
    labels: Sequence[str],
    classes: Sequence[str],
    *,
    label: str,
    tips: Sequence[str] | None = None,
    width: int = 520,
    height: int = 210,
) -> Safe:
    """Vertical bars (histograms): one per value, labelled below, y axis with three ticks."""
    left, right, top, bottom = 34, 8, 10, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    ymax = _nice_max(max(values, default=0) or 1)
    step = plot_w / max(len(values), 1)
    parts = []
    for tick in (0, ymax / 2, ymax):
        y = top + plot_h - plot_h * tick / ymax
        parts.append(
            h('<line class="grid" x1="{x1}" x2="{x2}" y1="{y}" y2="{y}"/>', x1=left, x2=width - right, y=_num(y))
        )
        parts.append(
            h(
                '<text class="tick" x="{x}" y="{y}" text-anchor="end">{t}</text>',
                x=left - 4,
                y=_num(y + 4),
                t=_num(tick),
            )
        )
    every = max(1, len(labels) // 10)
    for i, value in enumerate(values):
        bar_h = plot_h * value / ymax
        x = left + i * step + step * 0.12
        tip = tips[i] if tips else f"{labels[i]}: {value}"
        parts.append(
            h(
                '<rect class="{c}" x="{x}" y="{y}" width="{w}" height="{bh}"><title>{tip}</title></rect>',
                c=classes[i],
                x=_num(x),
                y=_num(top + plot_h - bar_h),
                w=_num(step * 0.76),
                bh=_num(bar_h),
                tip=tip,
            )
        )
        if i % every == 0:
            parts.append(
                h(
                    '<text class="tick" x="{x}" y="{y}" text-anchor="middle">{t}</text>',
                    x=_num(left + (i + 0.5) * step),
                    y=height - bottom + 14,
                    t=labels[i],
                )
            )
    parts.append(
        h('<line class="axis" x1="{x1}" x2="{x2}" y1="{y}" y2="{y}"/>', x1=left, x2=width - right, y=top + plot_h)
    )
    return _svg(width, height, label, join(parts))


def bars(rows: Sequence[tuple[str, int, str]], *, label: str, width: int = 420, row_h: int = 24) -> Safe:
    """Horizontal bars (counts by category): label, bar, number."""
    left, right = 110, 44
    height = max(1, len(rows)) * row_h + 8
    top_value = max((v for _, v, _ in rows), default=0) or 1
    parts = []
    for i, (name, value, cls) in enumerate(rows):
        y = 4 + i * row_h
        bar_w = (width - left - right) * value / top_value
        parts.append(
            h('<text class="tick" x="{x}" y="{y}" text-anchor="end">{t}</text>', x=left - 6, y=y + row_h * 0.65, t=name)
        )
        parts.append(
            h(
                '<rect class="{c}" x="{x}" y="{y}" width="{w}" height="{bh}"><title>{name}: {v}</title></rect>',
                c=cls,
                x=left,
                y=y + 3,
                w=_num(max(bar_w, 1 if value else 0)),
                bh=row_h - 8,
                name=name,
                v=value,
            )
        )
        parts.append(
            h('<text class="tick" x="{x}" y="{y}">{v}</text>', x=_num(left + bar_w + 5), y=y + row_h * 0.65, v=value)
        )
    if not rows:
        parts.append(h('<text class="tick" x="{x}" y="18">nothing yet</text>', x=left))
    return _svg(width, height, label, join(parts))


def activity(days: Sequence[dict], *, label: str, width: int = 900, height: int = 230) -> Safe:
    """Outcome reports and ratings per day: good news above the axis, bad news below."""
    left, right, top, bottom = 34, 8, 10, 26
    plot_w, plot_h = width - left - right, height - top - bottom
    ups = [d["positive"] + d["thumbs_up"] for d in days]
    downs = [d["negative"] + d["thumbs_down"] for d in days]
    ymax = _nice_max(max(ups + downs + [1]))
    mid = top + plot_h / 2
    scale = (plot_h / 2) / ymax
    step = plot_w / max(len(days), 1)
    parts = _activity_scale(left, width - right, mid, ymax, scale)
    for i, d in enumerate(days):
        x = left + i * step + step * 0.1
        w = step * 0.8
        tip = (
            f"{d['day']}: {d['positive']} helped, {d['negative']} misled, {d['neutral']} neutral; "
            f"{d['thumbs_up']} thumbs up, {d['thumbs_down']} thumbs down"
        )
        parts += _stack(
            d, (("positive", "pos"), ("thumbs_up", "up")), x=x, w=w, base=mid, scale=scale, tip=tip, up=True
        )
        parts += _stack(
            d, (("negative", "neg"), ("thumbs_down", "down")), x=x, w=w, base=mid, scale=scale, tip=tip, up=False
        )
        # A date on every bar would overlap: one a week, and the last day's to show where the window ends.
        if i % 7 == 0 or i == len(days) - 1:
            parts.append(
                h(
                    '<text class="tick" x="{x}" y="{y}" text-anchor="middle">{t}</text>',
                    x=_num(left + (i + 0.5) * step),
                    y=height - 8,
                    t=d["day"][5:],
                )
            )
    parts.append(
        h('<line class="axis" x1="{x1}" x2="{x2}" y1="{y}" y2="{y}"/>', x1=left, x2=width - right, y=_num(mid))
    )
    return _svg(width, height, label, join(parts))


def _activity_scale(x1: int, x2: int, mid: float, ymax: int, scale: float) -> list[Safe]:
    """Grid lines at +ymax and -ymax, labelled on the left."""
    levels = (("+", mid - ymax * scale), ("-", mid + ymax * scale))
    lines = [
        h('<line class="grid" x1="{x1}" x2="{x2}" y1="{y}" y2="{y}"/>', x1=x1, x2=x2, y=_num(y)) for _, y in levels
    ]
    labels = [
        h('<text class="tick" x="{x}" y="{y}" text-anchor="end">{s}{t}</text>', x=x1 - 4, y=_num(y + 4), s=sign, t=ymax)
        for sign, y in levels
    ]
    return lines + labels


def _stack(
    d: dict, keys: Sequence[tuple[str, str]], *, x: float, w: float, base: float, scale: float, tip: str, up: bool
) -> list[Safe]:
    """One day's counts for `keys`, stacked from the axis at `base`: upwards or downwards."""
    parts = []
    y = base
    for key, cls in keys:
        bh = d[key] * scale
        if not bh:
            continue
        if up:
            y -= bh
        parts.append(
            h(
                '<rect class="{c}" x="{x}" y="{y}" width="{w}" height="{bh}"><title>{tip}</title></rect>',
                c=cls,
                x=_num(x),
                y=_num(y),
                w=_num(w),
                bh=_num(bh),
                tip=tip,
            )
        )
        if not up:
            y += bh
    return parts


def valence_bar(v: float, *, width: int = 90, height: int = 12) -> Safe:
    """A bar from the middle (0) towards +1 (right, green) or -1 (left, red)."""
    half = width / 2
    span = half * min(abs(v), 1.0)
    x = half if v >= 0 else half - span
    cls = "pos" if v > 0 else "neg" if v < 0 else "zero"
    body = join(
        [
            h('<rect class="track" x="0" y="0" width="{w}" height="{hh}" rx="3"/>', w=width, hh=height),
            h(
                '<rect class="{c}" x="{x}" y="1" width="{w}" height="{hh}" rx="2"/>',
                c=cls,
                x=_num(x),
                w=_num(span),
                hh=height - 2,
            ),
            h('<line class="axis" x1="{x}" x2="{x}" y1="0" y2="{hh}"/>', x=_num(half), hh=height),
        ]
    )
    return _svg(width, height, f"valence {v:+.2f}", body, cls="valence-bar")


def meter(value: float, *, width: int = 140, height: int = 10) -> Safe:
    """A 0..1 bar (quality components), coloured like the quality badge."""
    fill = width * max(0.0, min(value, 1.0))
    body = join(
        [
            h('<rect class="track" x="0" y="0" width="{w}" height="{hh}" rx="3"/>', w=width, hh=height),
            h(
                '<rect class="{c}" x="0" y="0" width="{w}" height="{hh}" rx="3"/>',
                c=quality_class(value),
                w=_num(fill),
                hh=height,
            ),
        ]
    )
    return _svg(width, height, f"{value:.2f}", body, cls="meter")


def valence_history(
    points: Sequence[tuple[str, float, float]], *, label: str, width: int = 640, height: int = 180
) -> Safe:
    """Valence after each outcome report (at, outcome, valence after), oldest left."""
    left, right, top, bottom = 34, 10, 10, 24
    plot_w, plot_h = width - left - right, height - top - bottom

    def y_of(v: float) -> float:
        return top + plot_h * (1 - (v + 1) / 2)

    n = len(points)
    xs = [left + (plot_w * (i / (n - 1)) if n > 1 else plot_w / 2) for i in range(n)]
    parts = []
    for tick in (-1, 0, 1):
        parts.append(
            h(
                '<line class="{c}" x1="{x1}" x2="{x2}" y1="{y}" y2="{y}"/>',
                c="axis" if tick == 0 else "grid",
                x1=left,
                x2=width - right,
                y=_num(y_of(tick)),
            )
        )
        parts.append(
            h(
                '<text class="tick" x="{x}" y="{y}" text-anchor="end">{t}</text>',
                x=left - 4,
                y=_num(y_of(tick) + 4),
                t=f"{tick:+d}" if tick else "0",
            )
        )
    if n > 1:
        path = " ".join(
            f"{'M' if i == 0 else 'L'}{_num(x)},{_num(y_of(p[2]))}" for i, (x, p) in enumerate(zip(xs, points))
        )
        parts.append(h('<path class="line" d="{d}"/>', d=path))
    for x, (at, outcome, after) in zip(xs, points):
        cls = "pos" if outcome > 0 else "neg" if outcome < 0 else "zero"
        parts.append(
            h(
                '<circle class="{c}" cx="{x}" cy="{y}" r="4"><title>{at}: outcome {o}, valence now '
                "{v}</title></circle>",
                c=cls,
                x=_num(x),
                y=_num(y_of(after)),
                at=at,
                o=f"{outcome:+.2f}",
                v=f"{after:+.3f}",
            )
        )
    if points:
        parts.append(h('<text class="tick" x="{x}" y="{y}">{t}</text>', x=left, y=height - 6, t=points[0][0][:10]))
        parts.append(
            h(
                '<text class="tick" x="{x}" y="{y}" text-anchor="end">{t}</text>',
                x=width - right,
                y=height - 6,
                t=points[-1][0][:10],
            )
        )
    return _svg(width, height, label, join(parts))
