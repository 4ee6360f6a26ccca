"""Attribution: how closely what the assistant did followed each memory it had been shown (the
rules are core.attribution; this part turns tool calls and answers into the tokens they weigh,
with the store's own tokenizer and document counts)."""

from __future__ import annotations

from typing import Any

from ..core import attribution, cases, checks, rules
from ..core.text import STOPWORDS
from .base import Part

# The memories shown most recently in a session that an action is weighed against: a long
# session shows dozens, and what it acts on is what it saw lately.
CANDIDATES = 40


class Evidence:
    """What one tool call did, as attribution weighs it."""

    __slots__ = ("tokens", "change", "file", "added", "replaced")

    def __init__(self, tokens: set[str], change: bool, file: str | None = None, added: str = "", replaced: str = ""):
        self.tokens, self.change, self.file = tokens, change, file
        self.added, self.replaced = added, replaced  # the text itself, for code carried out verbatim


class Attribution(Part):
    _stop: set[str] | None = None

    def _tokens(self, text: str | None) -> set[str]:
        """The store's tokens of a text, less stopwords and single characters (no evidence)."""
        if not text:
            return set()
        if self._stop is None:
            self._stop = set(self.store.tokenize(" ".join(STOPWORDS)))
        return {t for t in self.store.tokenize(attribution.split_words(text)) if len(t) > 1 and t not in self._stop}

    def _note_tokens(self, note: str) -> set[str]:
        """A note's tokens as evidence of following it: not those only its "never do X" sentences hold."""
        keep, forbid = attribution.prescribed(note)
        return self._tokens(keep) if forbid else self._tokens(note)

    def evidence(self, tool: str, tool_input: dict[str, Any], file: str | None = None) -> Evidence | None:
        """The tokens a call added (an edit's new text less what it replaced, a command that
        changes something), or None for a call that only looks (a check, `ls`, a Read)."""
        if tool == "Bash":
            command = tool_input.get("command") or ""
            patterns = (*checks.DEFAULT_CHECKS, *self.settings.extra_check_commands)
            if not isinstance(command, str) or not cases.is_change(command) or checks.check_kind(command, patterns):
                return None
            return Evidence(self._tokens(command), True, added=command)
        if tool not in checks.EDIT_TOOLS:
            return None
        edits = tool_input.get("edits") if isinstance(tool_input.get("edits"), list) else [tool_input]
        added: set[str] = set()
        texts, replaced = [], []
        for e in edits:
            if not isinstance(e, dict):
                continue
            new = e.get("new_string", e.get("content", e.get("new_source")))
            old = e.get("old_string", e.get("originalFile", e.get("old_source")))
            new, old = (new if isinstance(new, str) else ""), (old if isinstance(old, str) else "")
            added |= self._tokens(new) - self._tokens(old)
            texts.append(new[: attribution.EVIDENCE_CHARS])
            replaced.append(old[: attribution.EVIDENCE_CHARS * 4])
        return Evidence(added, True, file, "\n".join(texts), "\n".join(replaced))

    def answer_evidence(self, answer: str) -> set[str]:
        """The answer's tokens, less the sentences that set a suggestion aside."""
        return self._tokens(attribution.affirmed(answer))

    def aside_evidence(self, answer: str, affirmed: set[str]) -> set[str]:
        """The tokens only the answer's sentences that set a recalled note aside hold (`affirmed`:
        the rest's, from `answer_evidence`)."""
        return self._tokens(attribution.set_aside(answer)) - affirmed

    def follows(
        self,
        memory_ids: list[str],
        evidence: list[set[str]],
        background: set[str],
        texts: list[tuple[str, str]] = (),  # type: ignore[assignment]
        carried_out: set[str] | None = None,
    ) -> dict[str, float]:
        """Each memory's alignment with the evidence (0..1), the problem's own words aside.
        `texts`: (added, replaced) of each action, for a note's code carried out verbatim; the
        memories whose code was are added to `carried_out` when given."""
        if not memory_ids or not (any(evidence) or any(a for a, _ in texts)):
            return {}
        with self.store.db.read():
            rows = self.store.rows_by_ids(memory_ids)
            memory_tokens = {mid: self._note_tokens(r["content"]) for mid, r in rows.items()}
            vocab = sorted(set().union(*memory_tokens.values(), *evidence)) if memory_tokens else []
            total, counts = self.store.term_document_counts(vocab)
        idf = {t: rules.concept_weight(total, n) for t, n in counts.items()}
        carried: list[str] = []
        explained: set[str] = set()
        for mid, r in rows.items() if texts else ():  # an answer carries no code out: only actions'
            spans = [*attribution.snippets(r["content"]), *attribution.code_runs(r["content"])]
            done = (
                [s for added, before in texts for s in attribution.carried_out(spans, added, before)] if spans else []
            )
            if done:
                carried.append(mid)
                explained |= self._tokens(" ".join(done))
        if carried_out is not None:
            carried_out.update(carried)
        return attribution.followed(memory_tokens, evidence, idf, background, carried, explained)

    def background(self, ask: str | None) -> set[str]:
        """Words that say nothing of which memory was followed: the project's own name (in its
        paths, in every note about it) and, for an answer, the problem as the user put it."""
        return self._tokens(ask) | self._tokens(self.settings.project)
