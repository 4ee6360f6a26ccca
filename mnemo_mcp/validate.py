"""Argument checks shared by every interface. Each rejection names the problem and the fix."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .config import Settings
from .errors import InvalidInput

RESERVED_METADATA_KEYS = frozenset(
    {
        "quality_score",
        "quality_components",
        "user_rating",
        "outcome",
        "feedback_source",
        "rating_history",
        "rating_count",
        "rating_sum",
        "last_outcome",
        "duplicate_allowed",
        "restored_at",
    }
)
_HEX = re.compile(r"^[0-9a-f]+$")


def _check_unicode(text: str, what: str) -> None:
    if "\x00" in text:
        raise InvalidInput(f"{what} contains a NUL character (\\x00); remove it")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} contains invalid Unicode (a lone surrogate); send valid UTF-8 text") from None


def text(value: Any, what: str, max_chars: int, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
    _check_unicode(value, what)
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{what} is empty; pass some text")
    if len(value) > max_chars:
        raise InvalidInput(
            f"{what} has {len(value)} characters; the limit is {max_chars} (split it, or raise the MNEMO_ limit)"
        )
    return value


def content(value: Any, s: Settings) -> str:
    return text(value, "content", s.max_content_chars)


def tags(value: Any, s: Settings, *, what: str = "tags") -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        raise InvalidInput(f'{what} must be a list of strings, e.g. ["python", "testing"], not one string')
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(f"{what} must be a list of strings, got {type(value).__name__}")
    if len(value) > 4 * s.max_tags + 16:  # before any per-item work: a 100k list costs nothing
        raise InvalidInput(f"{len(value)} tags given; the limit is {s.max_tags}")
    out: list[str] = []
    seen: set[str] = set()
    for t in value:
        if not isinstance(t, str):
            raise InvalidInput(f"every tag must be a string; got {type(t).__name__} {t!r}")
        _check_unicode(t, "a tag")
        t = t.strip()
        if not t:
            raise InvalidInput(f"a tag is empty; drop it or give it 1 to {s.max_tag_chars} characters")
        if len(t) > s.max_tag_chars:
            raise InvalidInput(f"tag {t[:20]!r}... has {len(t)} characters; the limit is {s.max_tag_chars}")
        if t not in seen:
            seen.add(t)
            out.append(t)
    if len(out) > s.max_tags:
        raise InvalidInput(f"{len(out)} tags given; the limit is {s.max_tags}")
    return out


def memory_type(value: Any) -> str:
    return text(value, "memory_type", 64).strip()


def domain(value: Any) -> str | None:
    if value is None:
        return None
    v = text(value, "domain", 200, allow_empty=True).strip()
    return v or None


def metadata(value: Any, s: Settings) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"metadata must be a JSON object, got {type(value).__name__}")
    reserved = sorted(RESERVED_METADATA_KEYS & set(value))
    if reserved:
        raise InvalidInput(f"metadata keys {reserved} are reserved for the quality score; rename them")
    try:
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as err:
        raise InvalidInput(f"metadata must be plain JSON (no NaN or infinity): {err}") from None
    _check_unicode(encoded, "metadata")
    size = len(encoded.encode("utf-8"))
    if size > s.max_metadata_bytes:
        raise InvalidInput(f"metadata is {size} bytes as JSON; the limit is {s.max_metadata_bytes}")
    return value


def top_k(value: Any, s: Settings) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"top_k must be a whole number from 1 to {s.max_top_k}")
    if not 1 <= value <= s.max_top_k:
        raise InvalidInput(f"top_k is {value}; use 1 to {s.max_top_k}")
    return value


def unit_number(value: Any, what: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{what} must be a number from {lo} to {hi}")
    v = float(value)
    if not math.isfinite(v):
        raise InvalidInput(f"{what} must be a finite number from {lo} to {hi}, not {value}")
    if not lo <= v <= hi:
        raise InvalidInput(f"{what} is {v}; use a number from {lo} to {hi}")
    return v


def rating(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in (-1, 0, 1):
        raise InvalidInput("rating must be -1 (thumbs down), 0 (neutral) or 1 (thumbs up)")
    return int(value)


def memory_ref(value: Any, what: str = "memory_id") -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string id (64 hex characters, or a unique prefix of at least 8)")
    v = value.strip().lower()
    if len(v) < 8 or len(v) > 64 or not _HEX.match(v):
        raise InvalidInput(
            f"{what} {value[:80]!r} is not a memory id: give the 64-character hex id from memory_read, "
            "or a unique prefix of at least 8 of its characters"
        )
    return v


def memory_refs(value: Any, limit: int = 100) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise InvalidInput("memory_ids must be a non-empty list of memory ids (from memory_read)")
    if len(value) > limit:
        raise InvalidInput(f"{len(value)} memory_ids given; send at most {limit} per call")
    return list(dict.fromkeys(memory_ref(v, "memory_ids entry") for v in value))


def concepts(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise InvalidInput("query_concepts must be a list of strings (as returned by memory_read)")
    out: list[str] = []
    for c in value[:1000]:  # only 32 are kept: a huge list is cut before any work on it
        _check_unicode(c, "a query concept")
        c = c.strip().lower()
        if c and len(c) <= 100 and c not in out:
            out.append(c)
            if len(out) == 32:
                break
    return out


def supersedes(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InvalidInput("supersedes must be a list of memory ids (the memories this one corrects)")
    if len(value) > 20:
        raise InvalidInput(f"supersedes lists {len(value)} ids; a write can replace at most 20")
    return list(dict.fromkeys(memory_ref(v, "supersedes entry") for v in value))


_SOURCE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def source(value: Any) -> str:
    if not isinstance(value, str) or not _SOURCE.match(value):
        raise InvalidInput("source must be a short lowercase name such as 'write' or 'hook' (letters, digits, - and _)")
    return value


def flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be true or false")
    return value


def secrets(content: str, metadata: dict[str, Any], policy: str) -> tuple[str, dict[str, Any]]:
    """Apply the secrets policy to a memory's text and metadata: refuse (naming what was found
    and where, never the secret itself), redact, or let it through."""
    if policy == "allow":
        return content, metadata
    from .core.secrets import find_secrets, redact, scrubbed

    in_text = find_secrets(content)
    in_meta = find_secrets(json.dumps(metadata, ensure_ascii=False)) if metadata else []
    if not in_text and not in_meta:
        return content, metadata
    if policy == "redact":
        return redact(content, in_text), scrubbed(metadata)
    where = [f"{f.kind} at characters {f.start}-{f.end}" for f in in_text] + [f"{f.kind} in metadata" for f in in_meta]
    raise InvalidInput(
        f"this looks like it contains a secret ({'; '.join(where[:3])}); nothing was stored. Store where the "
        "secret lives instead (e.g. 'the staging key is in 1Password, item Staging AWS'), or ask the user to "
        "set MNEMO_SECRETS=redact (store it masked) or MNEMO_SECRETS=allow"
    )


def secret_tags(tags: list[str], policy: str) -> list[str]:
    """Tags under the secrets policy: a tag that holds a secret is refused, or masked."""
    if policy == "allow" or not tags:
        return tags
    from .core.secrets import find_secrets, masked

    if not any(find_secrets(t) for t in tags):
        return tags
    if policy == "redact":
        return [masked(t) for t in tags]
    raise InvalidInput("a tag looks like it contains a secret; nothing was stored. Use a tag that names it instead")


def read_id(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("read_id must be the read_id string returned by memory_read")
    _check_unicode(value, "read_id")
    return value.strip()
