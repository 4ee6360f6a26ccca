"""Text rules: content normalization, ids, keyword (concept) extraction. Pure functions."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter

STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can cannot could couldn't did didn't do does doesn't doing don't
down during each else ever few for from further get gets got had hadn't has hasn't have haven't
having he he'd he'll he's her here here's hers herself him himself his how how's however i i'd
i'll i'm i've if in into is isn't it it's its itself just let's like made make many me might
more most much must mustn't my myself no nor not now of off on once one only or other ought our
ours ourselves out over own really same say said shall shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's
these they they'd they'll they're they've this those though through thus to too under until up
upon us use used using very was wasn't way we we'd we'll we're we've well were weren't what
what's when when's where where's whether which while who who's whom whose why why's will with
within without won't would wouldn't yes yet you you'd you'll you're you've your yours yourself
yourselves
""".split()
)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# Identifiers as they appear in code (snake_case, dotted.names, kebab-case) are kept whole too:
# they are what a developer searches for.
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9]*(?:[._-][A-Za-z0-9]+)+")


def normalize_content(content: str) -> str:
    """The canonical form stored and hashed: NFC, LF line ends, no trailing spaces, trimmed."""
    text = unicodedata.normalize("NFC", content).replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def content_id(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8", "surrogatepass")).hexdigest()


def words(text: str) -> list[str]:
    """Lowercase word tokens (letters and digits), apostrophes folded."""
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


# -ches/-shes/-xes plurals drop "es" (branches -> branch), except these, which drop "s".
_E_PLURALS = frozenset({"caches", "niches", "headaches", "cliches", "avalanches", "moustaches", "mustaches"})


def _singular(word: str) -> str:
    """A light, readable plural fold so 'retries' and 'retry' meet; not a stemmer."""
    if word in _E_PLURALS:
        return word[:-1]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "'s")):
        return word[:-1]
    return word


def _is_concept(word: str) -> bool:
    return len(word) >= 3 and word not in STOPWORDS and not word.isdigit() and "'" not in word


_REDACTION = re.compile(r"\[REDACTED [^\]\n]{1,60}\]")


def extract_concepts(text: str, limit: int = 16) -> list[str]:
    """Keywords of a text, most frequent first (ties by first appearance); no LLM involved.
    A redaction marker ("[REDACTED GitHub token]") is no keyword of what the text is about."""
    if "[REDACTED " in text:
        text = _REDACTION.sub(" ", text)
    found: list[tuple[int, str]] = [(m.start(), m.group().lower()) for m in _IDENT.finditer(text)]
    for m in _WORD.finditer(text.lower()):
        w = m.group().replace("’", "'")
        if _is_concept(w):
            s = _singular(w)
            if s not in STOPWORDS:
                found.append((m.start(), s))
    found.sort()
    counts = Counter(c for _, c in found)
    first: dict[str, int] = {}
    for pos, c in found:
        first.setdefault(c, pos)
    ranked = sorted(counts, key=lambda c: (-counts[c], first[c]))
    return ranked[: max(limit, 0)]


def query_words(query: str) -> list[str]:
    """Distinct search words of a query: stopwords dropped, unless nothing else is left."""
    ws = list(dict.fromkeys(words(query)))
    kept = [w for w in ws if w not in STOPWORDS and "'" not in w]
    return kept or ws


def fts_match_expression(terms: list[str]) -> str | None:
    """An FTS5 MATCH string that ORs the terms, each quoted so no query syntax gets through."""
    quoted = ['"' + t.replace("\x00", " ").replace('"', '""') + '"' for t in terms if t]
    return " OR ".join(quoted) if quoted else None
