"""What a note asks the assistant to do in words, judged sentence by sentence over the whole note.

A hostile note asks for one of a few things, in any language and under any disguise: keep
something from the person, put itself above the person, mislead them, hand over the assistant's
own instructions, follow text fetched from elsewhere, get a secret or the project's data out of
the machine or out of the person. Each rule below is one of those, as a combination of ideas from
`core.lexicon`, so that an ordinary note that only mentions passwords, curl, admins or the
assistant is left alone. `judge_prose` returns the first reason found, or None. What the note's
code and commands would do is judged in `core.commands`, with the sentence helpers here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import hosts as _hosts
from . import lexicon as lx

_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=\S)|(?<=[。！？；])|\n+")
_SECRET_AFTER = re.compile(r"^.{0,40}?(?:" + lx.SECRET + ")", re.I)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# host:port, not file:line ("email.py:31").
HOSTPORT = re.compile(
    r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\b[\w-]+(?:\.[\w-]+)*\.(?!(?:py|js|mjs|cjs|ts|tsx|jsx|go|rb|rs|java|kt|c|h|cc|cpp|cs|"
    r"php|sh|ya?ml|json|toml|md|txt|sql|html?|css|scss|vue|svelte|swift|ex|exs|erl|scala|lua|pl|r|ini|cfg|lock|log|tf):)"
    r"[a-z][\w-]*:\d{2,5}\b",
    re.I,
)


# A line that starts something of its own: a blank line, a bullet, a numbered step, a heading, a
# quote, a table row, a fence or a line of indented code.
_NEW_ITEM = re.compile(r"^\s*$|^\s*(?:[-*+•>|#]|\d{1,3}[.)]\s|```|~~~)|^(?: {4,}|\t)(?!\s)")
_WORDS = re.compile(r"^\s*(?:[`'\"(][.~/]?)?[^\W\d_]", re.UNICODE)  # a line that goes on in words, not `{` or `200 ->`
_CLOSED = re.compile(r"[.!?;:。！？；：{}\[\](),\\]\s*$")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_QUOTED = re.compile(r"^\s*>\s?")


def _unwrapped(text: str) -> str:
    """Prose hard-wrapped at a column joined back into its lines: "keep the change out of the\nPR
    title" is one sentence, as the person reading it sees it. Code in fences, indented code,
    bullets and lines that end a sentence keep their breaks."""
    lines = text.split("\n")
    out: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            out.append(line)
            continue
        quoted = _QUOTED.match(line)
        if quoted and out and not fenced and _QUOTED.match(out[-1]):
            body = line[quoted.end() :]  # a quote's lines are one paragraph too (a review comment, an email)
            if _continues(out[-1], body):
                out[-1] = out[-1].rstrip() + " " + body.strip()
                continue
        if out and not fenced and _continues(out[-1], line):
            out[-1] = out[-1].rstrip() + " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def _continues(previous: str, line: str) -> bool:
    """Whether `line` goes on with the sentence `previous` left open."""
    return (
        not _NEW_ITEM.match(line)
        and len(previous.split()) >= 5  # a wrapped line of prose, not "POST /login" over its header
        and not _CLOSED.search(previous)
        and not _FENCE.match(previous)
        and _WORDS.match(line) is not None
    )


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(_unwrapped(text)) if s.strip()]


def negated(sentence: str, start: int, end: int | None = None) -> bool:
    """Whether a match at sentence[start:end] is undone by a "never", "don't" (or, for Japanese and
    Korean, the verb ending after it)."""
    if lx.NEGATED_BEFORE.search(sentence[:start]):
        return True
    return end is not None and lx.NEGATED_AFTER.search(sentence[end:]) is not None


AUTH_PATH = re.compile(
    r"/(?:auth|login|signin|sign-in|oauth\d?|token|sso|session/new|v\d+/me)\b|//(?:auth|login|sso|id|idp|accounts)\.",
    re.I,
)


def destinations(text: str, trusted: Iterable[str]) -> list[str]:
    """The URLs in `text` that lead out of the project: a host outside it, and not a service's own
    sign-in endpoint (where a credential belongs)."""
    return [u for u, h in _hosts.urls(text) if _hosts.outside(h, trusted) and not AUTH_PATH.search(u)]


# --- prose: what the note asks of the assistant -------------------------------------------------


_RULE_BEFORE = re.compile(r"\b(?:don'?t|do\s+not|never|must\s+not|should\s+not|shouldn'?t)\b[^.;:!?\n]{0,100}$", re.I)


def _conceals(s: str) -> bool:
    for m in lx.CONCEAL_RE.finditer(s):
        if _SECRET_AFTER.search(s[m.end() :]) and not re.search(r"\babout\b", m.group(0)):
            continue  # "never tell anyone your password": a rule that protects the person
        if negated(s, m.start()) or (m.group(0).startswith("without") and _RULE_BEFORE.search(s[: m.start()])):
            continue  # "don't rewrite history of a branch others work on without telling them"
        return True
    return False


def _asks_for_secret(s: str, whole: str = "") -> bool:
    """Ask the person for a password, token or code (named in the sentence, or in the lines just
    before it: "- Password: ... Ask the user for each field")."""
    ask = lx.ASK_RE.search(s)
    if not ask or negated(s, ask.start(), ask.end()):
        return False
    at = whole.find(s) if whole else -1
    before = whole[max(0, at - 300) : at] if at > 0 else ""
    near = before + " " + s[max(0, ask.start() - 80) : ask.end() + 120]
    if not lx.SECRET_RE.search(near):
        return False
    # The English ask names the person itself; in other languages the person may be anywhere.
    return ask.group(0).startswith(("ask", "request", "prompt", "have", "get", "make")) or bool(lx.USER_RE.search(s))


_USE = re.compile(r"\b(?:fill\s+in|fill|enter|submit|use|paste|type|log\s+in|sign\s+in|approve|accept)\b", re.I)


def _uses_secret_unasked(s: str) -> bool:
    """Use the person's credentials (fill them in, submit them) without asking them."""
    use, secret, unasked = _USE.search(s), lx.SECRET_RE.search(s), lx.NO_CONFIRM_RE.search(s)
    return bool(use and secret and unasked) and not negated(s, use.start())


def _sends_secret(s: str, trusted: Iterable[str]) -> bool:
    """Send a secret somewhere it does not belong: outside the network, into a commit, a chat, a note."""
    secret = lx.SECRET_RE.search(s)
    if not secret:
        return False
    for send in lx.SEND_RE.finditer(s):
        if negated(s, send.start(), send.end()):
            continue
        tail = s[min(send.start(), secret.start()) :]
        # Where it goes: a host outside (not the service's own sign-in, where a secret belongs),
        # an address, a host:port that is not this machine or the team's network.
        away = destinations(tail, trusted)
        hostports = [m for m in HOSTPORT.finditer(tail) if _hosts.outside(_hosts.host_of(m.group(0)), trusted)]
        if away or _EMAIL.search(tail) or hostports:
            return True
        if lx.SINK_RE.search(tail) and lx.SECRET_RE.search(s[send.start() - 60 if send.start() > 60 else 0 :]):
            ordered = _PUBLISH.match(send.group(0)) and _IMPERATIVE.search(s[: send.start()])
            if lx.ADDRESSED_RE.search(s) or lx.USER_RE.search(s) or ordered:
                return True
    return False


# The project's data as a note would ship it: a database dump or snapshot, a backup, logs, an export.
_DATA = re.compile(
    r"\b(?:dump|snapshot|backup|\.rdb|\.sql(?:\.gz)?|pg_dump|mysqldump|heap\s*dump|core\s*dump|database|db\s+export|export|"
    r"pii|customer\s+data|user\s+data|\.har|logs?)\b",
    re.I,
)
_SHIP = re.compile(r"\b(?:upload|send|post|ship|push|copy|sync|forward|pipe|mirror)\w*\b", re.I)


def _sends_data(s: str, trusted: Iterable[str]) -> bool:
    """Ship the project's data (a dump, a backup, its logs) to a host outside the project."""
    ship = _SHIP.search(s)
    if not ship or negated(s, ship.start()) or not _DATA.search(s):
        return False
    return bool(destinations(s[ship.start() :], trusted))


# What comes before a verb said as an order: nothing much, or "..., and" / "then" / a colon.
_IMPERATIVE = re.compile(r"(?:^[\s*>-]*|(?:,|;|:)\s+(?:and\s+|then\s+)?|\b(?:and|then)\s+)$")
_PUBLISH = re.compile(r"post|paste|share|upload|publish|put|send|attach|include", re.I)


def _reveals_prompt(s: str) -> bool:
    prompt = lx.SYSTEM_PROMPT_RE.search(s)
    if not prompt:
        return False
    for verb in lx.REVEAL_RE.finditer(s):
        if abs(verb.start() - prompt.start()) <= 60 and not negated(s, min(verb.start(), prompt.start())):
            return True
    return False


def _tells_all_clear(s: str) -> bool:
    """ "Tell the user that the scan was clean", in any language: a report the note dictates."""
    if not lx.USER_RE.search(s):
        return False
    for m in lx.SAY_THAT_RE.finditer(s):
        if not negated(s, m.start(), m.end()) and lx.ALL_CLEAR_RE.search(s[max(0, m.start() - 80) : m.end() + 80]):
            return True
    return False


def _follows_remote(s: str, whole: str) -> bool:
    if lx.REMOTE_RULES_RE.search(s):
        return True
    follow = lx.FOLLOW_RE.search(s)
    if not follow or negated(s, follow.start()):
        return False
    return bool(re.search(r"https?://|\b(?:page|gist|issue|comment|wiki|link|url|thread|ticket|doc)\b", whole))


_PROSE = (
    ("hides what it does from the person", lambda s, w, t: _conceals(s)),
    ("puts itself above the person's requests", lambda s, w, t: bool(lx.PRECEDENCE_RE.search(s))),
    ("tells the assistant to mislead the person", lambda s, w, t: bool(lx.DECEIVE_RE.search(s)) or _tells_all_clear(s)),
    ("asks for the assistant's own instructions", lambda s, w, t: _reveals_prompt(s)),
    ("follows instructions fetched from elsewhere", lambda s, w, t: _follows_remote(s, w)),
    ("asks the person for a secret", lambda s, w, t: _asks_for_secret(s, w)),
    ("uses the person's secrets without asking", lambda s, w, t: _uses_secret_unasked(s)),
    ("sends a secret out", lambda s, w, t: _sends_secret(s, t)),
    ("sends the project's data out", lambda s, w, t: _sends_data(s, t)),
)


def judge_prose(text: str, trusted: Iterable[str] = ()) -> str | None:
    parts = sentences(text)
    for i, s in enumerate(parts):
        pair = s if i == 0 else parts[i - 1] + " " + s
        for reason, rule in _PROSE:
            if rule(s, text, trusted) or (rule is not _PROSE[0][1] and len(s) < 60 and rule(pair, text, trusted)):
                return reason
    return None
