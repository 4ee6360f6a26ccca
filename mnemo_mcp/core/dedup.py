"""Is a new memory the same as a stored one, an update of it, or another memory?

Meaning alone misses one-word edits ("Always pin numpy to 1.21 for this service." and "Always
pin numpy to version 1.21 for this service!" are 0.921 apart for MiniLM) and cannot see that
"port 5433" and "port 5434" are two facts. So the words decide with the meaning: texts whose
words are nearly the same (or whose meaning is nearly the same) are one memory, unless a number,
version, path, identifier or flag changed, or a rule was turned around (a "not", a "no longer"):
that is an update, which is stored and reported so the writer can mark the old one superseded.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import NamedTuple

DUPLICATE, UPDATE, DIFFERENT = "duplicate", "update", "different"
# Chosen on the tune split of benchmarks/data/capture/dedup_pairs.jsonl (benchmarks.dedup).
WORDS_ALIKE = 0.80  # share of the word sequence two texts have in common
MEANING_ALIKE = 0.84  # cosine at which the meaning alone makes them one memory
SYNONYMS_ALIKE = 0.96  # a word swapped for another is a synonym only this close ("kept"/"retained"), else a new fact

_TOKEN = re.compile(r"`[^`\n]+`|--?[\w][\w.-]*(?:=\S+)?|[\w$@~./:+-]*\w")
_NEGATION = re.compile(r"\b(?:not|no|never|don'?t|doesn'?t|isn'?t|won'?t|avoid|stop|without|longer|instead)\b", re.I)
_FILLER = {
    "a",
    "an",
    "the",
    "to",
    "of",
    "for",
    "in",
    "on",
    "at",
    "is",
    "are",
    "be",
    "and",
    "or",
    "with",
    "this",
    "that",
    "it",
    "its",
    "we",
    "our",
    "you",
    "your",
    "note",
    "always",
    "please",
    "version",
    "v",
    "just",
    "also",
}


class Verdict(NamedTuple):
    kind: str
    words: float  # how alike the word sequences are, 0..1
    differs: list[str]  # what changed, for an update: the specific tokens on either side, or "negation"


def _specific(token: str) -> bool:
    """A token that names one fact: a number or version, a path, a flag, an identifier."""
    core = token.strip("`")
    return bool(
        re.search(r"\d", core)
        or re.search(r"[_/@:]", core)
        or re.search(r"\w[.-]\w", core)
        and not core.endswith(".")
        or core.startswith("-")
        or re.search(r"[a-z][A-Z]", core)
        or (core.isupper() and len(core) > 2)
        or token.startswith("`")
    )


def tokens(text: str) -> list[str]:
    return [t.rstrip(".,;:!?)") or t for t in _TOKEN.findall(text)]


def compare(
    a: str,
    b: str,
    cosine: float | None = None,
    *,
    words_alike: float = WORDS_ALIKE,
    meaning_alike: float = MEANING_ALIKE,
    synonyms_alike: float = SYNONYMS_ALIKE,
) -> Verdict:
    ta, tb = tokens(a), tokens(b)
    la = [t.lower().strip("`") for t in ta if t.lower() not in _FILLER]
    lb = [t.lower().strip("`") for t in tb if t.lower() not in _FILLER]
    matcher = SequenceMatcher(None, la, lb, autojunk=False)
    words = matcher.ratio() if la or lb else 1.0
    alike = words >= words_alike or (cosine is not None and cosine >= meaning_alike)
    if not alike:
        return Verdict(DIFFERENT, words, [])
    sa = {t.lower().strip("`") for t in ta if _specific(t)}
    sb = {t.lower().strip("`") for t in tb if _specific(t)}
    changed = sorted(sa ^ sb)
    negated = len(_NEGATION.findall(a)) != len(_NEGATION.findall(b))
    if changed or negated:
        return Verdict(UPDATE, words, changed + (["negation"] if negated else []))
    # Words added or dropped keep the memory; a word swapped for another ("Postgres" for "Redis",
    # "alpha" for "bravo") is another fact unless the meaning says it is a synonym.
    swapped = sorted(
        {w for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag == "replace" for w in la[i1:i2] + lb[j1:j2]}
    )
    if swapped and (cosine is None or cosine < synonyms_alike):
        return Verdict(UPDATE, words, swapped[:8])
    return Verdict(DUPLICATE, words, [])
