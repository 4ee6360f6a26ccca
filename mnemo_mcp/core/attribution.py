"""Attribution: which of the memories shown to the assistant did what it *did* follow?

An outcome (a check's exit, the user's reaction) says how the work went, not which of the notes
in the assistant's context guided it. The evidence is what the assistant did after seeing them:
the text its edits added (an Edit's new text less the text it replaced), the commands it ran, and
the sentences of its answer. A memory is followed when its words show up in that evidence, weighed
by how much they say:

- IDF across the store: "signature" in a store of webhook notes says little, `compare_digest`
  a lot;
- shared by several of the notes shown, a word says less about which of them was followed (each
  note's share of it is divided by how many of the shown notes hold it);
- words the evidence only echoes from the problem (the code an edit replaces; for an answer, the
  user's ask) are not evidence of following anything;
- what the evidence adds that is in no note counts against them all: an edit made of the note's
  names follows it closely, one that also does much else less so.

A note's code (its backticked spans: `jest.setTimeout(20000)`, `//go:embed ../../web/dist`,
`--experimental-specifier-resolution=node`) showing up verbatim in what an action added is the
plainest evidence of all: such an action follows the note fully, however few of its words it
shares (a path changed from `web/dist` to `../../web/dist` adds no word at all).

An answer's sentence that sets a note aside ("the saved note says to raise the timeout, but ...",
"instead of clearing the cache ...") is no evidence for that note.

A memory whose alignment stays under `FOLLOW_FLOOR` gets no credit at all: shown is not followed,
and a correct fix that nobody tried must not sink with the attempt that failed.

Pure functions: tokens come in already tokenized by the store's full-text tokenizer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from .rules import clamp

# Chosen on the tune part of benchmarks/data/attribution (python -m benchmarks.attribution): the
# most credit given to followed notes while >= 95% of the valence changes had the right sign.
FOLLOW_FLOOR = 0.35  # under this a memory was not followed: it takes no share of the outcome
FULL_CREDIT = 0.6  # from this alignment on a memory takes the whole outcome
# Blame asks for more evidence than praise: a correct fix wrongly blamed drops under the
# injection floor and is not shown again to earn its way back, while wrong advice that escapes
# one blame is blamed by the next failure that carries it out. Chosen on the same tune stories
# (0.35-0.55 tried: sign right 94.1% at 0.35, 95.5 at 0.4, 96.9 at 0.45 and 0.5, 96.6 at 0.55).
BLAME_FLOOR = 0.45  # under this a failure takes no share of a memory the actions only resembled
# Of the memories over the floor, an outcome credits only those aligned at least this share of
# the best-aligned one's: a neighbour that merely shares the subject's words with what was done
# passes the floor beside the note that was carried out. 0: every memory over the floor. The
# tune stories never had two memories over the floor at one verdict (any ratio gives the same
# figures there), so 0.7 was set without a sweep, from the wrong changes of the tune part and of
# the d, e and f story sets (README, *Credit what was acted on*).
CREDIT_RATIO = 0.7
# Chosen on the tune stories' answers that name a note they did not follow.
ASIDE_FLOOR = 0.15  # a memory named this closely by the answer's setting-aside sentences was not followed
ASIDE_MARGIN = 0.05  # ... when they name it more closely than the rest of the answer does
TOP_TOKENS = 8  # a memory's most telling tokens, the ones following it shows
SMOOTHING = 2.0  # about half a telling token's IDF weight: a one-token edit is weak evidence
EVIDENCE_CHARS = 4000  # of one action's text weighed (a Write of a whole file: its start)
SNIPPET_MIN = 12  # a note's code span this long, of two words or more, counts when an action adds it verbatim
RUN_WORDS = 6  # the longest run of a note's words, outside backticks, looked for as its code

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+\b")
_SPAN = re.compile(r"`([^`\n]*)`")  # paired: the prose between two short spans is no span
_CHUNK = re.compile(r"[a-z0-9]+")
# What marks a run of words as code, not prose: a call or expansion, an assignment, a flag, a
# path or a dotted name. Prose's own dots and dashes ("e.g.", "well-known") do not.
_CODE_MARK = re.compile(r"[$(){}\[\]=<>|@]|(?:^|\s)--?[a-z]")
_NAME_MARK = re.compile(r"[a-z0-9]/[a-z0-9.]|[a-z0-9]\.[a-z_][a-z0-9_]")  # a path, a dotted name: code, but a name
_PROSE_EDGES = ",;:!?\"'“”‘’"
# A sentence that speaks of a recalled note (as answers do when they set one aside).
_NOTE_REF = re.compile(
    r"\b(?:notes?|memor(?:y|ies)|tips?|advice|suggestions?|hints?|saved|stored|recalled|remembered|mnemo|"
    r"earlier\s+fix|previous\s+fix|last\s+time)\b",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# A sentence that sets something aside: what it names was not followed.
_REJECTS = re.compile(
    r"\b(?:instead\s+of|rather\s+than|not\s+(?:the|a|this|that|apply|applied|follow|followed|use|used|needed|"
    r"help|helpful|relevant|the\s+cause)|didn'?t|did\s+not|don'?t|won'?t|wouldn'?t|isn'?t|wasn'?t|aren'?t|"
    r"ignored?|skipp?(?:ed|ing)?|set\s+aside|doesn'?t\s+(?:apply|help|fit)|no\s+longer|outdated|stale|"
    r"wrong|red\s+herring|unrelated|but\s+(?:the\s+)?(?:real|actual)|however)\b",
    re.I,
)


# A sentence that tells what not to do.
_FORBIDS = re.compile(
    r"^\W*(?:(?:and|but|so|also)\s+)?(?:never|don'?t|do\s+not|avoid|stop|no\s+need\s+to|there'?s\s+no\s+need)\b", re.I
)


def split_words(text: str) -> str:
    """Code identifiers split as prose is (`compareDigest` and `compare_digest` both read as
    "compare digest", so a note in words and the code carrying it out share their tokens), and
    each kept whole besides ("comparedigest"): a name like `CSRF_TRUSTED_ORIGINS` says more than
    its words, which neighbouring notes share."""
    text = (text or "")[:EVIDENCE_CHARS]
    whole = " ".join(m.group(0).replace("_", "").lower() for m in _IDENTIFIER.finditer(text))
    return _CAMEL.sub(" ", text).replace("_", " ") + (" " + whole if whole else "")


def _squash(text: str) -> str:
    return " ".join((text or "").lower().split())


@functools.lru_cache(maxsize=4096)
def snippets(note: str) -> tuple[str, ...]:
    """A note's code spans that an action could carry out verbatim: backticked, code-like and
    specific (a command with its argument, a call with its value: `jest.setTimeout(20000)`). A
    lone name (`APP_VERSION`, `.await`, `//go:embed`) names the subject, not what to do with it."""
    out = []
    for m in _SPAN.finditer(note or ""):
        span = _squash(m.group(1))
        if (
            SNIPPET_MIN <= len(span) <= 200
            and (" " in span or _CODE_MARK.search(span))  # `statement_timeout`, `a.b.c`: a name
            and len(_CHUNK.findall(span)) >= 2
            and span not in out
        ):
            out.append(span)
    return tuple(out)


@functools.lru_cache(maxsize=4096)  # the same notes are weighed against every action of a session
def code_runs(note: str) -> tuple[str, ...]:
    """A note's code written without backticks ("change directory with $(shell cd build)", "run
    cmake -S . -B build"): runs of two to `RUN_WORDS` words holding code's marks (a call, a flag,
    a variable, an assignment; or two paths or dotted names), specific as `snippets` are. A lone
    word, however code-like (`github.event.pull_request`, `k8s/configmap.yaml`), names the subject."""
    out: dict[str, None] = {}
    for sentence in sentences(_SPAN.sub(" | ", note or "")):
        words = [_word(w) for w in _squash(sentence).split()]
        marked = [w != "|" and bool(_CODE_MARK.search(w)) for w in words]
        named = [w != "|" and bool(_NAME_MARK.search(w)) for w in words]
        if not any(marked) and sum(named) < 2:
            continue  # prose: most of a note's sentences
        for i in range(len(words)):
            for j in range(i + 2, min(i + RUN_WORDS, len(words)) + 1):
                if not words[j - 1] or words[j - 1] == "|" or not words[i] or words[i] == "|":
                    break  # a longer run holds the same gap
                if not (any(marked[i:j]) or sum(named[i:j]) >= 2):
                    continue
                run = " ".join(words[i:j])
                if len(run) >= SNIPPET_MIN and len(_CHUNK.findall(run)) >= 2:
                    out.setdefault(run)
    return tuple(out)


def _word(w: str) -> str:
    """A word with prose's punctuation off its edges ("(cmake", "build/.", "'main',")."""
    w = w.strip(_PROSE_EDGES)
    if w.startswith("(") and ")" not in w:
        w = w[1:]
    if w.endswith(")") and "(" not in w:
        w = w[:-1]
    if len(w) > 1 and w.endswith(".") and w[-2] != ".":
        w = w[:-1]
    return w


def carried_out(spans: Iterable[str], added: str, before: str = "") -> list[str]:
    """The spans an action's added text carries verbatim (and the text it replaced, or the
    problem as asked, did not already hold)."""
    text, old = _squash(added), _squash(before)
    return [span for span in spans if span in text and span not in old]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text or "") if len(s.strip()) >= 3]


def prescribed(note: str) -> tuple[str, str]:
    """A note's text split in two: what it says to do or explains, and what it says not to do
    ("Never switch to `pull_request_target` ...", "Don't rely on MANIFEST.in ..."). Doing what a
    note forbids is not following it: those words are no evidence for it."""
    keep, forbid = [], []
    for s in sentences(note):
        (forbid if _FORBIDS.match(s) else keep).append(s)
    return "\n".join(keep), "\n".join(forbid)


def affirmed(text: str) -> str:
    """The answer without the sentences that set something aside."""
    return "\n".join(s for s in sentences(text) if not _REJECTS.search(s))


def set_aside(text: str) -> str:
    """Only the answer's sentences that set a recalled note aside ("the saved `--no-cache` tip
    doesn't apply", "I did not use the note's retry advice"): what they name, the turn did not
    follow, whatever its edits share with it. A sentence that only explains with a negation
    ("the runner wasn't slow") sets nothing aside."""
    return "\n".join(s for s in sentences(text) if _REJECTS.search(s) and _NOTE_REF.search(s))


def vetoed(affirmed_alignment: Mapping[str, float], aside_alignment: Mapping[str, float], floor: float) -> set[str]:
    """Memories the answer set aside (their alignment with its setting-aside sentences at `floor`
    and clearly above their alignment with the rest): no reaction to the turn is theirs."""
    return {m for m, a in aside_alignment.items() if a >= floor and a >= affirmed_alignment.get(m, 0.0) + ASIDE_MARGIN}


def token_weights(
    memory_tokens: Mapping[str, set[str]], idf: Mapping[str, float], background: set[str]
) -> dict[str, dict[str, float]]:
    """Per memory, each of its tokens' weight as evidence of following it: its IDF, divided by
    how many of the shown memories hold it; 0 for tokens of the problem itself (`background`)."""
    holders: dict[str, int] = {}
    for toks in memory_tokens.values():
        for t in toks:
            holders[t] = holders.get(t, 0) + 1
    return {
        mid: {t: 0.0 if t in background else idf.get(t, 0.0) / holders[t] for t in toks}
        for mid, toks in memory_tokens.items()
    }


def alignment(weights: Mapping[str, float], evidence: set[str], evidence_weight: float, top: int = TOP_TOKENS) -> float:
    """How closely the evidence follows a memory, in [0, 1]: the mean of two shares.

    - of the memory's most telling tokens (its `top` by weight), the weighted share the evidence
      holds: carrying out a note means its key names and values, not all its prose, so a long
      note is no harder to follow than a short one;
    - of the evidence's weight (`evidence_weight`: the IDF of everything it added), the share
      that comes from the memory (with about one token's weight added, so that a one-token
      change does not count as following a note whole): an edit whose new names are the note's
      follows it, one that also adds much else follows it less."""
    ranked = sorted((w for w in weights.items() if w[1] > 0), key=lambda tw: (-tw[1], tw[0]))[:top]
    total = sum(w for _, w in ranked)
    if total <= 0 or evidence_weight <= 0:
        return 0.0
    coverage = sum(w for t, w in ranked if t in evidence) / total
    share = sum(w for t, w in weights.items() if t in evidence) / (evidence_weight + SMOOTHING)
    return clamp((coverage + share) / 2, 0.0, 1.0)


def followed(
    memory_tokens: Mapping[str, set[str]],
    evidence: Iterable[set[str]],
    idf: Mapping[str, float],
    background: set[str] = frozenset(),  # type: ignore[assignment]
    carried: Iterable[str] = (),
    explained: set[str] = frozenset(),  # type: ignore[assignment]
) -> dict[str, float]:
    """Each memory's alignment with everything the assistant did in the window together (a fix
    is often carried out over several edits and commands). `idf` covers the evidence's tokens too.
    `carried`: memories whose code an action added verbatim (`carried_out`): followed fully.
    `explained`: the tokens of that code, no evidence for the other memories (the action's
    words are explained by the note it carried out: `--experimental-specifier-resolution=node`
    from one note does not follow another note that speaks of module resolution)."""
    carried = set(carried)
    together = set().union(*evidence) - background
    rest = together - explained
    weight = sum(idf.get(t, 0.0) for t in together)
    weights = token_weights(memory_tokens, idf, background)
    out = {mid: alignment(w, together if mid in carried else rest, weight) for mid, w in weights.items()}
    for mid in carried:
        if mid in out:
            out[mid] = max(out[mid], FULL_CREDIT)
    return out


def share(
    alignment_value: float,
    outcome: float,
    floor: float = FOLLOW_FLOOR,
    blame_floor: float = BLAME_FLOOR,
    full: float = FULL_CREDIT,
) -> float:
    """A memory's share of an outcome of this sign: a failure needs the memory followed more
    closely (`blame_floor`) than a success does."""
    return credit(alignment_value, max(floor, blame_floor) if outcome < 0 else floor, full)


def leading(aligned: dict[str, float], ratio: float = CREDIT_RATIO) -> set[str]:
    """The memories aligned at least `ratio` of the best alignment among `aligned`."""
    if not aligned:
        return set()
    best = max(aligned.values())
    return {m for m, a in aligned.items() if a >= ratio * best}


def credit(alignment_value: float, floor: float = FOLLOW_FLOOR, full: float = FULL_CREDIT) -> float:
    """A memory's share of an outcome: none under the floor (shown, not followed), then rising
    to the whole outcome at `full`."""
    if alignment_value < floor:
        return 0.0
    return clamp(alignment_value / full, 0.0, 1.0) if full > 0 else 1.0
