"""Likely secrets in text: private key blocks, well-known API key and token formats, password
assignments, credentials in URLs. Pure functions.

Tuned to be specific rather than exhaustive: a memory refused for a false alarm annoys, so a
generic `password = ...` only counts when the value looks like a real secret (long enough, not a
placeholder, not a variable reference).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


# Each pattern with the strings a match must contain. Most texts contain none of them, and a
# substring test costs a fraction of a regex scan (the assignment pattern alone took 15 us on an
# ordinary 130-character note, and every memory shown is checked). Needles of case-insensitive
# patterns are matched against the casefolded text; they hold no "i", which re's IGNORECASE
# also matches with a dotless "ı" that casefolding keeps as it is.
_PATTERNS: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    (
        "private key block",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: "
            r"BLOCK)?-----|$)"
        ),
        ("PRIVATE KEY",),
    ),
    (
        "AWS access key id",
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA"),
    ),
    (
        "AWS secret access key",
        re.compile(r"(?i)aws_?secret_?access_?key\s*[:=]\s*['\"]?[A-Za-z0-9/+=]{40}\b"),
        ("aws",),
    ),
    (
        "GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"), ("glpat-",)),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), ("xox",)),
    ("Slack webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"), ("hooks.slack.com",)),
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), ("sk-ant-",)),
    ("OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), ("sk-",)),
    ("Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{20,}\b"), ("_live_", "_test_")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), ("AIza",)),
    ("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), ("npm_",)),
    ("PyPI token", re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"), ("pypi-",)),
    (
        "JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
        ("eyJ",),
    ),
]

# Whether each pattern ignores case, decided once: testing `flags & re.IGNORECASE` is an enum
# operation, slower than the substring tests it chooses between.
_SCANS = [(kind, p, needles, bool(p.flags & re.IGNORECASE)) for kind, p, needles in _PATTERNS]

# `password = hunter2x!`, `API_KEY: "..."`, `"client_secret": "..."`; the value is group 2.
_ASSIGNMENT = re.compile(
    r"(?i)\b([a-z0-9_.-]*(?:password|passwd|pwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|"
    r"access[_-]?token|refresh[_-]?token|private[_-]?key|client[_-]?secret|bearer))\b[\"']?\s*(?:[:=]|=>|\s+is\s+)\s*"
    r"[\"']?([^\s\"',;]{8,})"
)
_ASSIGNMENT_NEEDLES = ("pass", "pwd", "secret", "key", "token", "bearer")
_BEARER = re.compile(r"(?i)\bauthorization:\s*bearer\s+([A-Za-z0-9._~+/-]{20,}=*)")
_URL_CREDENTIALS = re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:([^@\s/]{4,})@[^\s/]+")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\[redacted.*|\$\{?\w+\}?|\{\{.*\}\}|<[^>]*>|%\(?\w+\)?s?|x{4,}|\*{3,}|\.{3,}|changeme|password\d*|secret|example\w*|"
    r"your[_-]?\w+|dummy\w*|test\w*|placeholder|redacted|none|null|true|false|os\.environ.*|os\.getenv.*|"
    r"process\.env.*|env\[.*|settings\.\w+|config\.\w+|\w+\(\)?)$"
)


_MARKER = re.compile(r"\[REDACTED [^\]\n]{1,60}\]")


def _looks_secret(value: str) -> bool:
    """A real secret is not a placeholder or a reference, and is not a plain word."""
    v = value.strip("\"'`")
    if len(v) < 8 or _PLACEHOLDER.match(v):
        return False
    classes = sum(bool(re.search(p, v)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    return classes >= 2 and len(set(v)) >= 5


def find_secrets(text: str) -> list[Finding]:
    """Likely secrets in `text`, in order, not overlapping."""
    found: list[Finding] = []
    folded = text.casefold()
    for kind, pattern, needles, ignores_case in _SCANS:
        if any(n in (folded if ignores_case else text) for n in needles):
            found += [Finding(kind, m.start(), m.end()) for m in pattern.finditer(text)]
    if any(n in folded for n in _ASSIGNMENT_NEEDLES):
        for m in _ASSIGNMENT.finditer(text):
            if _looks_secret(m.group(2)):
                found.append(Finding(f"{m.group(1).lower()} assignment", m.start(2), m.end(2)))
    if "bearer" in folded:
        found += [Finding("bearer token", m.start(1), m.end(1)) for m in _BEARER.finditer(text)]
    if "://" in text:
        for m in _URL_CREDENTIALS.finditer(text):
            if _looks_secret(m.group(1)):
                found.append(Finding("password in a URL", m.start(1), m.end(1)))
    found.sort(key=lambda f: (f.start, -f.end))
    # A marker left by an earlier redaction is not a secret: scanning redacted text again changes
    # nothing ("[REDACTED password assignment] password assignment]" was the bug).
    markers = [(m.start(), m.end()) for m in _MARKER.finditer(text)] if "[REDACTED " in text else []
    out: list[Finding] = []
    for f in found:
        if any(a < f.end and f.start < b for a, b in markers):
            continue
        if not out or f.start >= out[-1].end:
            out.append(f)
    return out


def redact(text: str, findings: list[Finding], *, marked: bool = True) -> str:
    """`text` with every finding replaced by `[REDACTED <kind>]` (`marked` False: by a space)."""
    parts, last = [], 0
    for f in findings:
        parts.append(text[last : f.start])
        parts.append(f"[REDACTED {f.kind}]" if marked else " ")
        last = f.end
    parts.append(text[last:])
    return "".join(parts)


def masked(text: str) -> str:
    """`text` with what looks like a secret replaced by its kind, as shown to a model."""
    found = find_secrets(text)
    return redact(text, found) if found else text


def scrubbed(value: Any) -> Any:
    """`value` (a string, or JSON-like lists and dicts of them) with every secret in its strings
    masked: what the store keeps of text that nobody chose to store as written."""
    if isinstance(value, str):
        return masked(value)
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    if isinstance(value, dict):
        return {k: scrubbed(v) for k, v in value.items()}
    return value


def without_secrets(text: str) -> str:
    """`text` with every secret taken out (not marked): for the words a read is searched and
    learned by, so that neither a secret nor the marker's words become concepts."""
    found = find_secrets(text)
    return redact(text, found, marked=False) if found else text


_TOKENISH = re.compile(r"(?=.*\d)(?=.*[a-z])[a-z0-9_+/=-]{20,}", re.I)


def secret_like_word(word: str) -> bool:
    """A single word that is, or may be, a secret: a finding on its own, or a long run of
    letters and digits (lowercased keys and tokens, as concepts hold them)."""
    return bool(find_secrets(word)) or _TOKENISH.fullmatch(word) is not None
