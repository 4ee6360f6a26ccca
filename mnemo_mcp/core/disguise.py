"""The disguises a hostile note hides behind, found and undone.

A note can carry text the reader does not see (Unicode tag characters, a right-to-left override
that shows a command backwards), words that look Latin but are not (`sh.rustuр.rs` with a
Cyrillic "р"), letters from other blocks (full-width, mathematical bold), zero-width characters
inside a keyword, or a payload in base64, hex, URL escapes, ROT13, reversed or in fragments.
`findings` names what it finds; `views` returns the text with each disguise undone, so the rules
in `core.injection` judge what the note says rather than how it is spelled.

Look-alike letters come from Unicode's confusables table as packaged by `confusable_homoglyphs`
(generated from it into core/confusables.py, checked against it by a test): every letter Unicode
lists as confusable with an ASCII one, not a hand-kept list of a few Cyrillic and Greek letters.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from functools import cache

INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f]"
)
# Zero-width characters that join nothing in Latin text: between two ASCII letters they only
# break up a keyword ("ig\u200bnore"). Persian and Indic words use ZWNJ/ZWJ between their own
# letters, emoji sequences use ZWJ between emoji: neither is between ASCII letters.
_ZERO_WIDTH_IN_WORD = re.compile("[A-Za-z][\u200b-\u200d\u2060\ufeff\u00ad]+[A-Za-z]")
_OVERRIDES = re.compile("[\u202d\u202e]")  # bidi overrides: they show text in the other order
_FLAG_TAGS = re.compile("\U0001f3f4[\U000e0061-\U000e007a\U000e0030-\U000e0039]{2,7}\U000e007f")
_MATH_WORD = re.compile("[\U0001d400-\U0001d7ff\uff21-\uff3a\uff41-\uff5a]{3,}")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_HOST = re.compile(r"(?:https?://|\bwww\.)([^\s/:?#'\"`)<>\]]+)|\b((?:[^\W_][\w-]*\.)+[^\W\d_]{2,})\b", re.UNICODE)


@cache
def _confusables() -> dict[str, str]:
    """Each non-ASCII letter Unicode lists as confusable with one ASCII letter or digit."""
    from .confusables import table

    return table()


def _script(ch: str) -> str:
    """LATIN, CYRILLIC, GREEK, ...: the first word of the character's Unicode name."""
    try:
        return unicodedata.name(ch).split(" ")[0]
    except ValueError:
        return "UNKNOWN"


def _fold(word: str) -> str:
    table = _confusables()
    return "".join(table.get(ch, ch) for ch in word)


def _mixed(word: str) -> bool:
    """Latin letters and look-alikes from another script in one word ("systеm", "--аdmin")."""
    scripts = {_script(ch) for ch in word if ch.isalpha()}
    if "LATIN" not in scripts or len(scripts) < 2:
        return False
    table = _confusables()
    foreign = [(i, ch) for i, ch in enumerate(word) if ch.isalpha() and _script(ch) != "LATIN"]
    if len(word) <= 3 or not all(ch in table for _, ch in foreign):
        return False
    # "kΩ", "μs", "Ωmega": a Greek letter used as a symbol at the edge of a unit or a logo.
    return not all(ch in _GREEK_SYMBOLS and i in (0, len(word) - 1) for i, ch in foreign)


_GREEK_SYMBOLS = set("αβγδελμπρστφωΔΣΩΠΦΨ")


# Latin letters that pass for Cyrillic ones: a Russian word typed with some of them ("accиcтeнтa")
# reads as Russian to a person and as nothing to a keyword match.
_AS_CYRILLIC = str.maketrans("aceopxykmhtbijsABCEHKMOPTXY", "асеорхукмнтвіјѕАВСЕНКМОРТХУ")
_LATIN_LOOKALIKES = set("aceopxykmhtbijsABCEHKMOPTXY")


def _cyrillic_with_latin(word: str) -> bool:
    """A Cyrillic word with Latin look-alike letters in it: some of its Cyrillic letters have no
    Latin look-alike (so it cannot be a Latin word in disguise) and all its Latin ones have one."""
    latin = [ch for ch in word if ch.isalpha() and _script(ch) == "LATIN"]
    cyrillic = [ch for ch in word if ch.isalpha() and _script(ch) == "CYRILLIC"]
    if not latin or not cyrillic or len(word) <= 3 or any(not ch.isalpha() for ch in word):
        return False
    table = _confusables()
    return all(ch in _LATIN_LOOKALIKES for ch in latin) and any(ch not in table for ch in cyrillic)


def _lookalike_host(host: str) -> bool:
    """A host name with a label in mixed scripts, or non-ASCII letters that all pass for ASCII."""
    if host.isascii() or host.lower().startswith("xn--"):
        return False
    table = _confusables()
    for label in host.split("."):
        letters = [ch for ch in label if ch.isalpha()]
        if not letters or label.isascii():
            continue
        if _mixed(label) or all(ch.isascii() or ch in table for ch in letters):
            return True
    return False


def hidden_text(text: str) -> str:
    """ASCII spelled in Unicode tag characters (invisible on screen); flag emoji excepted."""
    text = _FLAG_TAGS.sub("", text)
    return "".join(chr(ord(ch) - 0xE0000) for ch in text if 0xE0020 <= ord(ch) <= 0xE007E)


# Bytes smuggled as a run of variation selectors after a visible character (one selector picks a
# glyph's form; a run of them picks nothing and carries data, a byte each).
_SELECTOR_RUN = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{4,}")
# A URL's host written as one integer or in hex ("http://3405803790/", "http://0xcb.0x0.0x71.0xe/"):
# a network address dressed so that no reader or host rule recognises it.
_NUMERIC_HOST = re.compile(
    r"\b(?:https?|ftp)://(?:\d{8,10}|0x[0-9a-f]{6,8}|(?:0x[0-9a-f]{1,2}\.){3}0x[0-9a-f]{1,2})(?=[:/\s]|$)", re.I
)


def selector_bytes(text: str) -> str:
    """The text a run of variation selectors carries (VS1-16: bytes 0-15, VS17-256: 16-255)."""
    out = []
    for run in _SELECTOR_RUN.findall(text):
        raw = bytes((ord(ch) - 0xFE00) if ord(ch) < 0x10000 else (ord(ch) - 0xE0100 + 16) for ch in run)
        out.append(raw.decode("utf-8", "replace"))
    return " ".join(out)


def findings(text: str) -> list[str]:
    """The disguises in `text`, in words; empty for ordinary Unicode (accents, CJK, RTL, emoji)."""
    out = []
    if len(hidden_text(text).strip()) >= 3:
        out.append("hides text in invisible tag characters")
    if _OVERRIDES.search(text):
        out.append("reverses text with a bidi override")
    if _ZERO_WIDTH_IN_WORD.search(text):
        out.append("breaks up words with zero-width characters")
    hosts = [m.group(1) or m.group(2) for m in _HOST.finditer(text)]
    if any(_lookalike_host(h) for h in hosts if h):
        out.append("names a look-alike host")
    elif any(_mixed(w) or _cyrillic_with_latin(w) for w in _WORD.findall(INVISIBLE.sub("", text))):
        out.append("spells words with look-alike letters")
    if _SELECTOR_RUN.search(text):
        out.append("hides bytes in variation selectors")
    if _NUMERIC_HOST.search(text):
        out.append("names a host as a bare number")
    if _MATH_WORD.search(text):
        out.append("spells words in full-width or mathematical letters")
    return out


# --- views: the text with each disguise undone --------------------------------------------------

_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
_SPACED = re.compile(r"\b(?:\w[ .\-_*]){3,}\w\b")
_PRINTABLE = 0.9


def _readable(raw: bytes) -> str | None:
    for codec in ("utf-8", "utf-16-le"):
        if codec == "utf-16-le" and raw[1::2].count(0) < len(raw) // 4:
            continue
        decoded = raw.decode(codec, "ignore")
        if decoded and sum(ch.isprintable() or ch in "\n\t" for ch in decoded) / len(decoded) > _PRINTABLE:
            return decoded
    return None


def _decodings(text: str) -> list[str]:
    """Readable text hidden in base64 or hex runs of `text`."""
    out = []
    for run in re.findall(r"[A-Za-z0-9+/_-]{24,}={0,2}", text):
        try:
            raw = base64.b64decode(run + "=" * (-len(run) % 4), altchars=b"-_" if "-" in run or "_" in run else None)
        except (binascii.Error, ValueError):
            continue
        if (decoded := _readable(raw)) is not None:
            out.append(decoded)
    for run in re.findall(r"\b(?:[0-9a-fA-F]{2}[\s:]?){16,}", text):
        try:
            raw = bytes.fromhex(re.sub(r"[\s:]", "", run))
        except ValueError:
            continue
        if (decoded := _readable(raw)) is not None:
            out.append(decoded)
    return out


def _rot13(text: str) -> str:
    return text.translate(
        str.maketrans(
            "ABCDEFGHIJKLMabcdefghijklmNOPQRSTUVWXYZnopqrstuvwxyz",
            "NOPQRSTUVWXYZnopqrstuvwxyzABCDEFGHIJKLMabcdefghijklm",
        )
    )


def _unmix(word: re.Match[str]) -> str:
    """A word or host spelled with look-alike letters, in ASCII; every other word as it is."""
    w = word.group(0)
    if _mixed(w) or ("." in w and _lookalike_host(w)):
        return _fold(w)
    if not w.isascii() and not w.isalpha():  # "api-ключ": each run of letters on its own
        return re.sub(r"[^\W\d_]+", lambda m: _as_cyrillic(m.group(0)), w)
    return _as_cyrillic(w)


def _as_cyrillic(w: str) -> str:
    return w.translate(_AS_CYRILLIC) if _cyrillic_with_latin(w) else w


def _strip_marks(text: str, *, all_marks: bool = False) -> str:
    """Combining marks off Latin letters: those that compose nothing (I̷g̷n̷o̷r̷e̷, u̲n̲d̲e̲r̲l̲i̲n̲e̲d̲),
    or with `all_marks` every one ("mèrge" -> "merge"; it also turns "künftig" into "kunftig",
    so it is a second view, not the only one)."""
    out = []
    for ch in unicodedata.normalize("NFD" if all_marks else "NFC", text):
        if unicodedata.combining(ch) and out and out[-1].isascii():
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def base_view(text: str) -> str:
    """NFKC, invisible characters out, stray marks off Latin letters, look-alike words in Latin."""
    base = _strip_marks(unicodedata.normalize("NFKC", INVISIBLE.sub("", text)))
    return re.sub(r"[\w.-]+", _unmix, base)


def _fragments(base: str) -> list[str]:
    """Instructions split into short string literals and put together at run time."""
    out = []
    literals = re.findall(r"'([^'\n]{1,40})'|\"([^\"\n]{1,40})\"", base)
    parts = [a or b for a, b in literals]
    if len(parts) >= 3 and sum(len(p) <= 16 for p in parts) >= 3:
        out.append("".join(parts))
    if base.count("[") >= 3:
        out.append(" ".join(re.findall(r"\[([^\]\s]{1,30})\]", base)))  # "read only the bracketed words"
    return out


_PRINTF = re.compile(r"\$\(\s*(?:printf|echo\s+-e)\s+['\"]([^'\"\n]{1,60})['\"]\s*\)")
_CONCAT = re.compile(r"""(['"])([^'"\n]{0,40})\1(?:\s*[+.]\s*(['"])[^'"\n]{0,40}\3)+""")
_SUBSCRIPT = re.compile(r"""\[\s*(['"])([A-Za-z_]\w*)\1\s*\]""")


def _joined_literals(base: str) -> str:
    """String literals put together with + (or PHP's .) written as one, and `obj['name']` as
    `obj.name`: "globalThis['fe' + 'tch'](h" reads "globalThis.fetch(h"."""

    def join(m: re.Match[str]) -> str:
        parts = re.findall(r"""(['"])([^'"\n]*)\1""", m.group(0))
        return m.group(1) + "".join(p for _, p in parts) + m.group(1)

    return _SUBSCRIPT.sub(lambda m: "." + m.group(2), _CONCAT.sub(join, base))


def leet(view: str) -> str:
    """A view with l33t digits and symbols read as letters ("1gn0r3" -> "ignore"), lowercased."""
    return view.translate(_LEET).lower()


# Shell variables set to short pieces and used together ("a=cu; b=rl; $a$b -s ..."): a command
# spelled so that no word of it appears whole.
_SHORT_VAR = re.compile(r"(?:^|[\s;])([A-Za-z_]\w{0,11})=([\w.:/-]{1,12})(?=[\s;]|$)", re.M)


def _expanded_vars(text: str) -> str:
    """The text with its short shell variables put in where they are used, when two or more
    are used back to back (`$c$d`, `${a}${b}`): what the shell will run."""
    values = dict(_SHORT_VAR.findall(text))
    if len(values) < 2 or not re.search(r"\$\{?\w+\}?\$\{?\w+", text):
        return text
    return re.sub(r"\$\{?([A-Za-z_]\w*)\}?", lambda m: values.get(m.group(1), m.group(0)), text)


# Text written as character codes: a byte slice, an array, fromCharCode(...), chr(..) + chr(..).
_CODE_RUN = re.compile(r"(?<![\w.])(?:\d{2,3}\s*,\s*){3,}\d{2,3}(?![\w.])")
_CHR_RUN = re.compile(r"(?:chr\(\s*\d{2,3}\s*\)\s*[+.,]\s*){3,}chr\(\s*\d{2,3}\s*\)", re.I)


def _char_codes(text: str) -> str | None:
    """The text with each run of printable character codes replaced by what it spells (None when
    there is none): the run must spell printable ASCII, so lists of ports or sizes stay numbers."""

    def spelled(m: re.Match[str]) -> str:
        codes = [int(n) for n in re.findall(r"\d+", m.group(0))]
        if not all(c == 10 or 32 <= c <= 126 for c in codes):
            return m.group(0)
        return '"' + "".join(map(chr, codes)) + '"'

    out = _CHR_RUN.sub(spelled, _CODE_RUN.sub(spelled, text))
    return out if out != text else None


def views(text: str) -> list[str]:
    """The text as an attacker may have disguised it, undone several ways, lowercased."""
    base = base_view(text)
    out = [base]
    if (bare := _strip_marks(base, all_marks=True)) != base:
        out.append(bare)
    if tags := hidden_text(text):
        out.append(tags)
    if smuggled := selector_bytes(text):
        out.append(smuggled)
    tokens = base.split()
    if tokens and sum(len(t) == 1 for t in tokens) / len(tokens) > 0.5:  # "I g n o r e  p r e v i o u s"
        out.append(re.sub(r" {2,}", " ", re.sub(r"(?<! ) (?! )", "", base)))
    joined = _SPACED.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group(0)), base)
    if joined != base:
        out.append(joined)
    if re.search(r"[0-9@$]", base) and re.search(r"[a-z]", base, re.I):
        out.append(base.translate(_LEET))  # leet(): judged by the prose rules only
    if re.search(r"\brot-?13\b", base, re.I):
        out.append(_rot13(base))
    if "%" in base:
        from urllib.parse import unquote

        out.append(unquote(base))
    if "\\u" in base or "\\x" in base:
        out.append(
            re.sub(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1) or m.group(2), 16)), base)
        )
    if "&#" in base:  # numeric character references (an HTML comment a browser would not show)
        import html

        out.append(html.unescape(base))
    if codes := _char_codes(base):
        out.append(codes)
    if re.search(r"\\[0-3][0-7]{2}", base):  # octal escapes, as printf and echo -e read them
        unescaped = re.sub(r"\\([0-3][0-7]{2})", lambda m: chr(int(m.group(1), 8)), base)
        out.append(_PRINTF.sub(lambda m: m.group(1), unescaped))
    out += _fragments(base)
    if (joined_literals := _joined_literals(base)) != base:
        out.append(joined_literals)
    if (expanded := _expanded_vars(base)) != base:
        out.append(expanded)
    if re.search(
        r"\b(?:backwards|reversed?|in\s+reverse|reverse\(\)|strrev)\b|\[::-1\]", base, re.I
    ) or _OVERRIDES.search(text):
        out.append(base[::-1])
    out += [base_view(d) for d in _decodings(base)]
    return [v.lower() for v in out]
