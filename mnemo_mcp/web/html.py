"""Escaping by default. Every value that goes into a page passes through `esc` unless it is
already `Safe` (markup this package built), so memory content, tags, metadata and query text
can only ever appear as text. Jinja2 is not a dependency of the package, hence this small kit."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode


class Safe(str):
    """Markup built here from escaped parts: `esc` passes it through unchanged."""

    __slots__ = ()


def esc(value: Any) -> Safe:
    if isinstance(value, Safe):
        return value
    return Safe(html.escape("" if value is None else str(value), quote=True))


def h(template: str, *args: Any, **kwargs: Any) -> Safe:
    """`template.format` with every argument escaped (the template itself is trusted)."""
    return Safe(template.format(*(esc(a) for a in args), **{k: esc(v) for k, v in kwargs.items()}))


def join(parts: Iterable[Any], sep: str = "") -> Safe:
    return Safe(sep.join(esc(p) for p in parts))


def url(path: str, params: dict[str, Any] | None = None) -> str:
    """A same-site URL with query parameters (None and '' dropped; lists repeat the key).
    Returned unescaped: `h` escapes it where it lands in an attribute."""
    pairs: list[tuple[str, str]] = []
    for key, value in (params or {}).items():
        values = value if isinstance(value, (list, tuple)) else [value]
        pairs.extend((key, str(v)) for v in values if v is not None and v != "")
    return path + ("?" + urlencode(pairs) if pairs else "")


def local_path(target: str | None, default: str = "/") -> str:
    """`target` when it is a path on this server, else `default`: a redirect after a POST
    must never send the browser elsewhere (`//host` and `/\\host` are other hosts)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    if any(ord(ch) < 32 for ch in target):
        return default
    return target
