"""LoCoMo loading and normalization, shared by the LoCoMo benchmarks.

The data (CC BY-NC 4.0) is never copied into the repository: every function takes its path.
Format (`locomo10.json`): a list of conversations, each with `sample_id`, `conversation`
(`speaker_a`, `speaker_b`, `session_N` = list of turns, `session_N_date_time`) and `qa`.

Normalization, as the data's README asks:
- one dialogue turn = one memory, content "Speaker: text", plus " [image: caption]" when the
  turn has a `blip_caption`;
- evidence fields holding several ids in one string ("D9:1 D4:4", "D8:6; D9:17") are split;
  zero-padded ids ("D30:05") become "D30:5"; ids that still name no turn are skipped (and
  counted); a question left with no valid evidence is skipped (and counted).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mnemo_mcp.core.text import normalize_content
from mnemo_mcp.embedding import Embedder

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
# Parameters are tuned on these two conversations only; the others are the held-out test split.
TUNE_CONVERSATIONS = ("conv-26", "conv-30")

_SESSION = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_EVIDENCE_SPLIT = re.compile(r"[\s,;]+")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    session: int
    session_date: str

    @property
    def content(self) -> str:
        """The memory's content, normalized as MemoryService.write stores (and hashes) it."""
        body = f"{self.speaker}: {self.text}"
        if self.caption:
            body += f" [image: {self.caption}]"
        return normalize_content(body)

    @property
    def metadata(self) -> dict[str, Any]:
        return {"dia_id": self.dia_id, "session_date": self.session_date}


@dataclass(frozen=True)
class Question:
    index: int  # position in the conversation's original `qa` list
    question: str
    category: int
    evidence: tuple[str, ...]  # normalized dia_ids, all present in the conversation


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    skipped_evidence_ids: list[str] = field(default_factory=list)
    normalized_evidence_ids: int = 0  # ids rewritten, e.g. "D30:05" -> "D30:5"
    split_evidence_fields: int = 0  # evidence strings holding several ids
    skipped_questions: int = 0  # QA with no valid evidence (or an unknown category)

    @property
    def split(self) -> str:
        return "tune" if self.sample_id in TUNE_CONVERSATIONS else "test"


def normalize_dia_id(raw: str) -> str:
    """'D30:05' -> 'D30:5'; anything not shaped 'D<n>:<n>' is returned stripped but unchanged."""
    s = raw.strip()
    m = _DIA_ID.match(s)
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else s


def split_evidence(evidence: Sequence[str] | str | None) -> list[str]:
    """Every id in an evidence field, split on spaces, commas and semicolons, normalized, in order."""
    if evidence is None:
        return []
    if isinstance(evidence, str):
        evidence = [evidence]
    out: list[str] = []
    for item in evidence:
        for part in _EVIDENCE_SPLIT.split(str(item)):
            if part:
                out.append(normalize_dia_id(part))
    return out


def _turns(conv: dict[str, Any]) -> list[Turn]:
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)) and isinstance(conv[k], list))
    turns: list[Turn] = []
    for n in sessions:
        date = str(conv.get(f"session_{n}_date_time", ""))
        for t in conv[f"session_{n}"]:
            caption = t.get("blip_caption")
            turns.append(
                Turn(
                    dia_id=normalize_dia_id(t["dia_id"]),
                    speaker=str(t["speaker"]),
                    text=str(t["text"]),
                    caption=str(caption).strip() if caption and str(caption).strip() else None,
                    session=n,
                    session_date=date,
                )
            )
    return turns


def _conversation(sample: dict[str, Any]) -> Conversation:
    turns = _turns(sample["conversation"])
    known = {t.dia_id for t in turns}
    conv = Conversation(sample_id=str(sample["sample_id"]), turns=turns, questions=[])
    for i, qa in enumerate(sample.get("qa", [])):
        fields = qa.get("evidence") or []
        fields = [fields] if isinstance(fields, str) else fields
        raw_parts = [p for item in fields for p in _EVIDENCE_SPLIT.split(str(item)) if p]
        conv.split_evidence_fields += len(raw_parts) - len(fields)
        ids = split_evidence(fields)
        conv.normalized_evidence_ids += sum(1 for raw, norm in zip(raw_parts, ids) if raw != norm)
        valid = []
        for d in ids:
            if d in known:
                if d not in valid:
                    valid.append(d)
            else:
                conv.skipped_evidence_ids.append(d)
        category = qa.get("category")
        if not valid or category not in CATEGORIES:
            conv.skipped_questions += 1
            continue
        conv.questions.append(Question(i, str(qa["question"]), int(category), tuple(valid)))
    return conv


def load_locomo(path: Path | str, only: Sequence[str] | None = None) -> list[Conversation]:
    """The conversations of a LoCoMo file, in file order (only those named in `only`, if given)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"LoCoMo data not found at {path}; pass --data with the path to locomo_dev.json")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise ValueError(f"{path} is not LoCoMo data: expected a list of conversations")
    convs = [_conversation(s) for s in data]
    if only:
        wanted = list(dict.fromkeys(only))
        have = {c.sample_id for c in convs}
        unknown = [w for w in wanted if w not in have]
        if unknown:
            raise ValueError(f"unknown conversation(s) {unknown}; this file holds {sorted(have)}")
        convs = [c for c in convs if c.sample_id in wanted]
    return convs


class PrecomputedEmbedder:
    """An `Embedder` that answers from vectors computed earlier in one batch.

    It delegates to the real embedder (same `name`, so the store binds the same model and the
    vectors are the ones the real model gives), but `embed_passages` first looks each text up in
    a table filled by `precompute`, and query vectors are kept once computed (the same questions
    are asked of several retrievers and settings).
    """

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.name = inner.name
        self._passages: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        self.passage_misses = 0

    @property
    def dim(self) -> int | None:
        return self.inner.dim

    def precompute(self, texts: Sequence[str], batch_size: int = 1) -> None:
        """Embed every new text now. Small batches on purpose: with the bundled int8 MiniLM,
        fastembed's default batch (256, padded to the longest text) measured about 5x slower per
        text than one text per call on LoCoMo turns (3.3 s vs 0.63 s for 64 turns, 2 CPUs), and the
        vectors are identical either way."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._passages))
        for i in range(0, len(todo), batch_size):
            chunk = todo[i : i + batch_size]
            for text, vec in zip(chunk, self.inner.embed_passages(chunk)):
                self._passages[text] = np.asarray(vec, dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._passages]
        if missing:
            self.passage_misses += len(missing)
            self.precompute(missing)
        return np.stack([self._passages[t] for t in texts]) if texts else np.zeros((0, self.dim or 0), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        vec = self._queries.get(text)
        if vec is None:
            vec = self._queries[text] = np.asarray(self.inner.embed_query(text), dtype=np.float32)
        return vec


def conversations_or_error(load: Callable[[], list[Conversation]]) -> list[Conversation] | None:
    """The conversations `load` selects, or None after saying on stderr why there are none (a
    benchmark then exits 2)."""
    try:
        convs = load()
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return None
    if not convs:
        print("error: no conversations selected", file=sys.stderr)
        return None
    return convs
