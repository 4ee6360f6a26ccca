"""A second opinion on hostile notes, learned from examples rather than written as rules.

The rules (core.injection) name what a note asks of the assistant; notes of kinds they have not
seen (a language no rule has a grammar for, a new carrier, a new cover story) pass them. This is a
logistic regression over hashed character and word n-grams of the note, trained by
`benchmarks/hostile_model.py` on the tune parts of the hostile and benign corpora (written apart
from the code) and on ordinary notes, and shipped as `hostile_model.bin` beside this module.
Character n-grams read any script, so it needs no grammar per language.

Addresses are masked before anything is counted: in the corpora every made-up attacker host is in
a hostile note (`*.exfil.test`), so a model that saw them would learn "a reserved host name is
hostile" and flag documentation that uses `api.example.com`.

Pure: the model is package data read once; no I/O of the user's, no clock.
"""

from __future__ import annotations

import math
import mmap
import re
import struct
import zlib
from array import array
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import NamedTuple

from .disguise import base_view

MAGIC = b"MNEMOHM1"
# Hosts and URLs, masked (see above). A bare host needs a known top-level name, so that file names
# (`install.sh`, `main.rs`, `package.json`) stay words.
_ADDRESS = re.compile(
    r"\b(?:[a-z][a-z0-9+.-]*://|www\.)\S+"
    r"|\b(?:[a-z0-9-]+\.)+(?:example|test|invalid|localhost|com|org|net|io|dev|app|cloud|xyz|ru|cn|co|me|"
    r"info|biz|site|online|top|tk|su|pw|cc|ai|gg|ly|to|in|de|uk|fr|jp|br)\b"
    r"|\b\d{1,3}(?:\.\d{1,3}){3}\b",
    re.I,
)
_WORD = re.compile(r"\w+")
CHAR_SIZES = (3, 4, 5)
MIN_WORDS = 6
MIN_CHARACTERS = 30


class Model(NamedTuple):
    bits: int
    bias: float
    threshold: float
    weights: Sequence[float]  # per bucket, the weight times the bucket's idf (what the dot product needs)
    idf: Sequence[float]  # per bucket (what the vector's length needs)


def prepared(text: str) -> str:
    """The text as the model reads it: NFKC, invisible characters out, look-alike words in Latin
    (core.disguise), lower case, addresses masked."""
    return _ADDRESS.sub(" urlx ", base_view(text).lower())


def grams(text: str) -> dict[str, int]:
    """Counts of character n-grams within each padded word, and of words and word pairs."""
    counts: dict[str, int] = {}
    for word in text.split():
        padded = f" {word} "
        for n in CHAR_SIZES:
            if len(padded) < n:
                break
            for i in range(len(padded) - n + 1):
                key = "c" + padded[i : i + n]
                counts[key] = counts.get(key, 0) + 1
    words = _WORD.findall(text)
    for i, word in enumerate(words):
        key = "w" + word
        counts[key] = counts.get(key, 0) + 1
        if i:
            key = f"b{words[i - 1]} {word}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def bucket(key: str, bits: int) -> int:
    """Character n-grams hash into the lower half of the buckets, words and pairs into the upper
    half: each half is scaled to length 1 on its own, so that a note's few words weigh as much as
    its many character n-grams."""
    half = 1 << (bits - 1)
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % half + (0 if key[0] == "c" else half)


def hashed(text: str, bits: int) -> dict[int, float]:
    """Bucket -> sublinear term frequency (1 + ln tf), summed over the keys that share a bucket."""
    return _hashed(prepared(text), bits)


def _hashed(seen: str, bits: int) -> dict[int, float]:
    out: dict[int, float] = {}
    for key, count in grams(seen).items():
        j = bucket(key, bits)
        out[j] = out.get(j, 0.0) + 1.0 + math.log(count)
    return out


def score(model: Model, text: str) -> float:
    """The probability the model gives that `text` is a hostile note; 0 for a text too short for
    n-gram counts to mean anything ("AND" alone scored 0.84): fewer than MIN_WORDS words and
    MIN_CHARACTERS letters and digits (a sentence in Chinese is one "word")."""
    seen = prepared(text)
    if len(_WORD.findall(seen)) < MIN_WORDS and sum(c.isalnum() for c in seen) < MIN_CHARACTERS:
        return 0.0
    features = _hashed(seen, model.bits)
    half = 1 << (model.bits - 1)
    sums, squares = [0.0, 0.0], [0.0, 0.0]
    for j, tf in features.items():
        family = j >= half
        sums[family] += tf * model.weights[j]
        squares[family] += (tf * model.idf[j]) ** 2
    z = model.bias + sum(s / math.sqrt(q) for s, q in zip(sums, squares, strict=True) if q)
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def dumps(bits: int, bias: float, threshold: float, weights: list[float], idf: list[float]) -> bytes:
    """The model file: magic, bits, bias, threshold, then weights*idf and idf as float32."""
    size = 1 << bits
    if len(weights) != size or len(idf) != size:
        raise ValueError(f"expected {size} weights and idf values")
    folded = array("f", (w * d for w, d in zip(weights, idf, strict=True)))
    return MAGIC + struct.pack("<Idd", bits, bias, threshold) + folded.tobytes() + array("f", idf).tobytes()


def loads(data: bytes | memoryview | mmap.mmap) -> Model:
    """A model from its file's bytes, without copying them: a mapped file's pages stay shared by
    every process that maps it (a server's private memory does not grow by the model's 2 MB)."""
    view = memoryview(data)
    if bytes(view[:8]) != MAGIC:
        raise ValueError("not a mnemo hostile-note model")
    bits, bias, threshold = struct.unpack_from("<Idd", view, 8)
    size, start = 1 << bits, 8 + struct.calcsize("<Idd")
    if len(view) < start + 8 * size:
        raise ValueError("the hostile-note model is cut short")
    weights = view[start : start + 4 * size].cast("f")
    idf = view[start + 4 * size : start + 8 * size].cast("f")
    return Model(bits, bias, threshold, weights, idf)


@cache
def shipped() -> Model | None:
    """The model shipped with the package, mapped read-only, or None if it is missing (the rules
    still judge)."""
    resource = resources.files(__package__).joinpath("hostile_model.bin")
    try:
        with resources.as_file(resource) as path, open(path, "rb") as f:
            return loads(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):  # missing, or a file system that cannot map: read it instead
        try:
            return loads(resource.read_bytes())
        except (OSError, ValueError):
            return None


def judge(text: str) -> str | None:
    """A reason if the shipped model scores `text` at or over its threshold, else None."""
    model = shipped()
    if model is None:
        return None
    p = score(model, text)
    if p < model.threshold:
        return None
    return f"reads like the hostile notes the detector learned from ({p:.2f})"
