"""The secrets scan's shortcut: a pattern runs only on texts holding a string every match must
contain. It must find exactly what running every pattern finds."""

from __future__ import annotations

import random
import re

from mnemo_mcp.core import secrets as S

# Fragments that make (or almost make) each kind of secret, in both cases, with the look-alike
# letters case-insensitive matching accepts (Kelvin sign, long s, dotless i).
FRAGMENTS = [
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "AKIA",
    "ASIA",
    "ANPA",
    "aws_secret_access_key = ",
    "AWS_SECRET_ACCESS_KEY: ",
    "ghp_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "https://hooks.slack.com/services/",
    "sk-ant-",
    "sk-proj-",
    "sk_live_",
    "pk_test_",
    "AIza",
    "npm_",
    "pypi-AgEIcHlwaS5vcmc",
    "eyJ",
    ".eyJ",
    "password",
    "PASSWORD",
    "paſsword",
    "Passwd",
    "pwd",
    "PWD",
    "secret",
    "SECRET",
    "client_secret",
    "api_key",
    "API-KEY",
    "apiKey",
    "\u212aey",
    "auth_token",
    "refresh-token",
    "bearer",
    "Authorization: Bearer ",
    "authorızation: bearer ",
    "postgres://",
    "postgres://admin:",
    "redis://:",
    "https://",
    "user:",
    "@db.example.com",
    " = ",
    ": ",
    " is ",
    "=>",
    '"',
    "'",
    " ",
    "\n",
    ".",
    "_",
    "-",
    "/",
    "+",
    "=",
    ",",
    ";",
    "@",
]
ALPHABET = "ABCDEFGHJKLMNOPQRSTUVWXYZabcdefghjklmnopqrstuvwxyz0123456789"


def _every_pattern(text: str) -> list[S.Finding]:
    """The scan with no shortcut: every pattern on every text."""
    found = [S.Finding(kind, m.start(), m.end()) for kind, p, _ in S._PATTERNS for m in p.finditer(text)]
    for m in S._ASSIGNMENT.finditer(text):
        if S._looks_secret(m.group(2)):
            found.append(S.Finding(f"{m.group(1).lower()} assignment", m.start(2), m.end(2)))
    found += [S.Finding("bearer token", m.start(1), m.end(1)) for m in S._BEARER.finditer(text)]
    for m in S._URL_CREDENTIALS.finditer(text):
        if S._looks_secret(m.group(1)):
            found.append(S.Finding("password in a URL", m.start(1), m.end(1)))
    found.sort(key=lambda f: (f.start, -f.end))
    out: list[S.Finding] = []
    for f in found:
        if not out or f.start >= out[-1].end:
            out.append(f)
    return out


def _text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 8)):
        if rng.random() < 0.5:
            parts.append(rng.choice(FRAGMENTS))
        else:
            parts.append("".join(rng.choice(ALPHABET) for _ in range(rng.choice([3, 8, 12, 20, 36, 40, 64]))))
    return "".join(parts)


def test_the_shortcut_finds_exactly_what_every_pattern_finds():
    rng = random.Random(7)
    texts = [_text(rng) for _ in range(20_000)]
    found_some = 0
    for text in texts:
        expected = _every_pattern(text)
        assert S.find_secrets(text) == expected, text
        found_some += bool(expected)
    # The texts must exercise the patterns, or the comparison proves nothing.
    kinds = {f.kind.split()[-1] for t in texts for f in _every_pattern(t)}
    assert found_some > 2000 and {"block", "key", "token", "assignment", "URL"} <= kinds, kinds


def test_case_insensitive_needles_hold_no_letter_casefolding_misses():
    # re's IGNORECASE matches "i" with a dotless "ı", which casefold() keeps: a needle with an
    # "i" would skip a text that its pattern matches.
    needles = [n for _, p, ns in S._PATTERNS if p.flags & re.IGNORECASE for n in ns] + list(S._ASSIGNMENT_NEEDLES)
    assert needles and not [n for n in needles if "i" in n or n != n.casefold()]
