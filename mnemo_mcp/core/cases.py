"""Cases: what a session tried and how it went, read from what it shows, with no model.

- `error_signature`: the lines of a failing check's output that name the failure (exception type
  and message, failing test ids, compiler errors), with what changes from run to run masked
  (paths, line and column numbers, hex ids, addresses, timings, ports, dates), so the same
  failure on another day, in another checkout, has the same signature.
- `actionable`: the part of an answer someone could act on, verbatim: code blocks, commands and
  code in backticks with the sentences that carry them, config lines.
"""

from __future__ import annotations

import re

SIGNATURE_LINES = 3
SIGNATURE_MATCH = (
    0.5  # signatures this alike are one failure (benchmarks/data/capture: 63 of 64 recurrences, 2 of 4,032 others)
)
SIGNATURE_CHARS = 400
ACTIONABLE_CHARS = 1200

# Lines that name a failure, most telling first (a failing test id, then the error itself).
_SALIENT = [
    re.compile(p)
    for p in (
        r"^FAILED\s+\S+",  # pytest short summary: FAILED tests/test_x.py::test_y - AssertionError: ...
        r"^(?:---\s*)?FAIL:?\s+\S+",  # go test: --- FAIL: TestX ; mocha/ava
        r"^\s*●\s+\S",  # jest: ● Suite › test name
        r"^test\s+\S+\s+\.\.\.\s+FAILED",  # cargo test
        r"^error(?:\[E\d+\])?:\s",  # rustc, cargo, gcc-likes
        r"^\S+\.\w+:\d+(?::\d+)?:?\s*(?:-\s*)?(?:error|fatal error)\b",  # file:line: error
        r"^\S+\(\d+,\d+\):\s*error\s",  # tsc: src/a.ts(3,5): error TS2322
        # Python, Java, JS
        r"^\s*(?:E\s+)?(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Failure|Interrupt|Warning)\b(?::|$)",
        r"^(?:thread\s+'[^']*'\s+panicked|panic:)",  # rust, go panics
        r"^\[ERROR\]\s",  # maven
        r"^(?:ERROR|FATAL|fatal):\s",  # docker buildkit, git
        r"^npm ERR!\s",
        r"^(?:PHP\s+)?(?:Parse|Fatal|Catchable fatal)\s+error:\s",  # PHP
        r"^\S+:\s+\d+:\s+(?:\S+:\s+)+(?:not found|Permission denied)",  # sh/dash: x.sh: 1: source: not found
        r"^\s*Error:\s",
        r"^\s*\S+:\d+(?::\d+)?:\s+\S",  # file:line[:col]: anything (linters, go, make, warnings)
        r"^(?:go|cargo|npm|pnpm|yarn|pip|git|docker|bash|sh|zsh|node|python\d?|java|javac|mvn|gradle|terraform):\s",
        r"^\S+\s+FAILED\b",  # test_x FAILED: why (make-driven runners, custom scripts)
        r"(?i)\b(?:error|failed|failure|fatal|cannot|can't|couldn't|unable to|not found|missing|denied|refused|"
        r"invalid|no such|inconsistent|unsupported|not supported|undefined|unexpected|conflict)\b",  # anything else
        r"^make(?:\[\d+\])?: \*\*\*",  # make: *** [Makefile:2: test] Error 1 (says only that make failed)
    )
]
_WEAK = len(_SALIENT) - 2  # the last two: "says it failed" and make's own line
# Stack frames, carets, run summaries ("1 failed, 11 passed in 0.42s", whose counts change from
# run to run while the failure stays the same) and tools' boilerplate after an error.
_NOISE = re.compile(
    r"^\s*(?:at\s|File\s\"|Traceback|During handling|\^+\s*$|~+\s*$|\|)"
    r"|^[\s=_*-]*(?:\d+\s+(?:failed|passed|errors?|skipped|warnings?|xfailed|xpassed)\b[,\s]*)+"
    r"|^\s*(?:Tests?:|Test Suites:|Tests run:)\s"
    r"|^\S+:\d+: in \S+$"  # a pytest traceback frame
    r"|To see the full stack trace|Re-run Maven|For more information about th|"
    r"^\s*\[ERROR\]\s*$|A complete log of this run|rustc --explain|waiting for other jobs to finish"
    r"|^!+ Interrupted"
)
_MASKS = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b"), "<time>"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<hex>"),
    # An absolute path keeps its last two parts (the checkout, home and temp dirs above them vary;
    # `billing/cli.py` does not); relative paths are the project's own and stay.
    (re.compile(r"(?<![\w/.~-])(?:[A-Za-z]:)?~?(?:[/\\][\w.@+-]+)+"), lambda m: _tail_of(m.group(0))),
    (re.compile(r"\b[0-9a-f]{7,}\b", re.I), "<hex>"),  # commit ids, object ids
    (re.compile(r"\b(?:tmp|pytest-of-|pytest-)[\w-]{3,}\b"), "<tmp>"),  # temp dirs
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b"), "<ip>"),
    (re.compile(r"\b(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{16,}\b", re.I), "<id>"),  # build and cache ids
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|m|min|µs|us|ns)\b"), "<t>"),
    (re.compile(r"(?<=[:(,])\d+\b"), "<n>"),  # :line, :line:col, (line,col)
    (re.compile(r"\bline\s+\d+\b", re.I), "line <n>"),
    (re.compile(r"\b(?:pid|port|PID|Port)\s*[=:]?\s*\d+\b"), "<n>"),
    (re.compile(r"(?<![\w.])\d{4,}(?![\w.])"), "<n>"),  # ports, ids; versions (1.24.3) and HTTP codes stay
]
_SPACE = re.compile(r"\s+")
_PREFIX = re.compile(r"^[\w.-]+\s+\|\s+")
_WORD = re.compile(r"[a-z][a-z0-9_]+")
_QUOTED = re.compile(r"['\"`]([^'\"`\s]{2,80})['\"`]")


def _tail_of(path: str) -> str:
    parts = [p for p in re.split(r"[/\\]", path) if p]
    return "…/" + "/".join(parts[-2:]) if len(parts) > 2 else "/".join(parts)


def mask(line: str) -> str:
    """A line with what varies between runs of the same failure replaced by placeholders."""
    for pattern, repl in _MASKS:
        line = pattern.sub(repl, line)
    return _SPACE.sub(" ", line).strip()


def error_signature(output: str) -> str | None:
    """The failure a check's output names, normalized; None when nothing in it looks like one."""
    if not isinstance(output, str) or not output.strip():
        return None
    # A container's or CI step's prefix ("worker-1  | ") is not part of the message.
    lines = [_PREFIX.sub("", ln.rstrip()) for ln in output.splitlines() if ln.strip()]
    if lines and re.match(r"^Exit code -?\d+$", lines[0]):  # Claude Code's first line of a failed Bash call
        lines = lines[1:]
    picked: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    for i, line in enumerate(lines):
        if _NOISE.search(line):
            continue
        for rank, pattern in enumerate(_SALIENT):
            if pattern.search(line):
                text = mask(line)[:240]
                if text not in seen:
                    seen.add(text)
                    picked.append((rank, i, text))
                break
    if not picked:
        return None
    if any(rank < _WEAK for rank, _, _ in picked):  # words like "failed" only when nothing better
        picked = [p for p in picked if p[0] < _WEAK]
    # The most telling kinds first; within a kind the last occurrence (a traceback ends with it).
    best = sorted(picked, key=lambda t: (t[0], -t[1]))[:SIGNATURE_LINES]
    best.sort(key=lambda t: t[1])
    return " | ".join(t[2] for t in best)[:SIGNATURE_CHARS]


# A short line that introduces what the user pasted under it, not a question about it.
_LEAD_IN = re.compile(r"^(?![^:]*\b(?:why|how|what|where|which|who)\b)[^?:]{0,60}:\s*$", re.IGNORECASE)


def reported_error(message: str) -> str | None:
    """The error a user's message opens with when it is pasted output ("node: bad option: ...",
    "TypeError: ...", "error[E0277]: ..."), normalized; None for prose about an error ("why
    does it say TypeError?"). A short lead-in line ("now:", "staging boots for 2 sec then:") may
    come first. After the assistant changed something, such a message is the user showing that
    the change failed."""
    lines = [ln for ln in (message or "").splitlines() if ln.strip()]
    if len(lines) > 1 and _LEAD_IN.match(lines[0]):  # "now:", "staging boots for 2 sec then:"
        lines = lines[1:]
    if not lines:
        return None
    traceback = lines[0].lstrip().startswith("Traceback (most recent call last)")
    if not traceback and (_NOISE.search(lines[0]) or not any(p.search(lines[0]) for p in _SALIENT[:_WEAK])):
        return None
    return error_signature(message)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def signature_similarity(a: str | None, b: str | None) -> float:
    """How alike two signatures are (0..1): the share of their words they have in common (the
    same failure listing another file among the same errors stays alike), and as much again the
    share of the names they quote, which say what failed: "No module named 'httpx'" and "No
    module named 'ledger'" are two failures in the same words."""
    if not a or not b:
        return 0.0
    words = _jaccard(set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower())))
    qa, qb = set(_QUOTED.findall(a)), set(_QUOTED.findall(b))
    return 0.5 * words + 0.5 * _jaccard(qa, qb) if qa or qb else words


_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|$)", re.S)
_INLINE = re.compile(r"`([^`\n]+)`")
_CONFIG = re.compile(r"^\s*(?:[A-Za-z_][\w.-]*\s*[=:]\s*\S.*|export\s+\w+=.*|\$\s+\S.*)$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])|\n+")


def actionable(answer: str, limit: int = ACTIONABLE_CHARS) -> str:
    """The part of an answer someone could act on, verbatim, within `limit` characters: code
    blocks, the sentences that carry inline commands or code, and config-looking lines, in the
    order they appear. "" when the answer holds none (prose alone is no case)."""
    if not isinstance(answer, str) or not answer.strip():
        return ""
    parts: list[tuple[int, str]] = []
    for m in _FENCE.finditer(answer):
        body = m.group(1).strip("\n")
        if body.strip():
            parts.append((m.start(), "```\n" + body + "\n```"))
    prose = _FENCE.sub(lambda m: "\n" + " " * (len(m.group(0)) - 1), answer)  # keep offsets
    offset = 0
    for chunk in _SENTENCE.split(prose):
        start = prose.find(chunk, offset)
        offset = start + len(chunk)
        sentence = chunk.strip()
        if not sentence:
            continue
        if _INLINE.search(sentence) or _CONFIG.match(sentence):
            parts.append((start, " ".join(sentence.split())))
    parts.sort()
    out, used = [], 0
    for _, text in parts:
        if used + len(text) > limit:
            room = limit - used
            if room > 80:
                out.append(text[: room - 1] + "…")
            break
        out.append(text)
        used += len(text) + 1
    return "\n".join(out)


# The words of a sentence that says what was done, or why.
_DONE = re.compile(
    r"\b(?:add(?:ed|s|ing)?|chang(?:ed|es|ing)|replac(?:ed|es|ing)|switch(?:ed|es|ing)?|set(?:s|ting)?|mov(?:ed|es|ing)|"
    r"pinn?(?:ed|ing)?|upgrad(?:ed|es|ing)|downgrad(?:ed|es|ing)|bump(?:ed|s)?|configur(?:ed|es|ing)|enabl(?:ed|es|ing)|"
    r"disabl(?:ed|es|ing)|install(?:ed|s|ing)?|wrapp?(?:ed|s|ing)?|renam(?:ed|es|ing)|remov(?:ed|es|ing)|dropp?(?:ed|s|ing)?|"
    r"fix(?:ed|es|ing)?|now|us(?:e|es|ed|ing)|compar(?:e|es|ed|ing)|point(?:ed|s)?|quot(?:ed|es|ing)|escap(?:ed|es|ing)|"
    r"load(?:ed|s|ing)?|read(?:s|ing)?|pass(?:es|ed|ing)?|mak(?:e|es|ing)|made|keep|kept|put|call(?:ed|s|ing)?|"
    r"instead|register(?:ed|s)?|export(?:ed|s)?|import(?:ed|s)?|declar(?:ed|es|ing)|mount(?:ed|s)?|map(?:ped|s)?)\b",
    re.I,
)
_WHY = re.compile(
    r"\b(?:because|since|so that|the (?:real |root |actual )?(?:cause|problem|issue|reason) (?:is|was)|caused by|"
    r"which (?:means|is why)|that'?s why|due to|otherwise|requires?|expects?)\b",
    re.I,
)
_SETS_ASIDE = re.compile(
    r"\b(?:didn'?t|did not|doesn'?t|does not|won'?t|isn'?t|wasn'?t|not the cause|no longer)\b", re.I
)
EXPLANATION_CHARS = 360


def explanation(answer: str, limit: int = EXPLANATION_CHARS) -> str:
    """The sentence or two of an answer that say what was done and why, verbatim, within
    `limit` characters ("" when none does): a captured fix keeps its reason, not only its
    commands. Questions, code blocks and sentences that set something aside are left out."""
    if not isinstance(answer, str) or not answer.strip():
        return ""
    prose = _FENCE.sub(" ", answer)
    scored = []
    for i, chunk in enumerate(_SENTENCE.split(prose)):
        sentence = " ".join(chunk.split())
        if len(sentence) < 20 or sentence.endswith("?") or _SETS_ASIDE.search(sentence):
            continue
        score = 2 * bool(_WHY.search(sentence)) + bool(_DONE.search(sentence))
        if score:
            scored.append((-score, i, sentence))
    picked, used = [], 0
    for _, i, sentence in sorted(scored)[:2]:
        if used + len(sentence) > limit:
            if not picked and limit > 80:
                picked.append((i, sentence[: limit - 1] + "…"))
            break
        picked.append((i, sentence))
        used += len(sentence) + 1
    return " ".join(s for _, s in sorted(picked))


# --- what changed between a failure and the next result ----------------------------------------

# Commands that look and do not touch: no part of a fix.
_READ_ONLY = re.compile(
    r"^(?:cd|pushd|popd|ls|ll|la|cat|bat|head|tail|less|more|grep|egrep|fgrep|rg|ag|ack|find|fd|tree|wc|pwd|echo|"
    r"printf|which|type|whereis|file|stat|du|df|ps|top|htop|env|printenv|id|whoami|date|uname|man|help|history|"
    r"clear|true|false|sleep|jq|yq|diff|cmp|sort|uniq|cut|tr|column|xxd|od|hexdump|nl|awk(?!.*>)|"
    r"sed(?!\s+(?:-\w*i|--in-place))|"
    r"git\s+(?:status|diff|log|show|branch|remote|blame|grep|ls-files|ls-tree|ls-remote|rev-parse|rev-list|describe|"
    r"shortlog|fetch|cat-file|reflog|config\s+--get|tag\s+(?:-l|--list)|stash\s+list|submodule\s+status|"
    r"worktree\s+list)|"
    r"docker\s+(?:ps|images|logs|inspect|version|info)|docker\s+compose\s+(?:ps|logs|config)|"
    r"kubectl\s+(?:get|describe|logs|top|version|explain|auth\s+can-i)|helm\s+(?:history|get|status|list|"
    r"template|show)|npm\s+(?:ls|list|view|outdated|why|explain|config\s+get)|pnpm\s+(?:ls|list|why)|"
    r"yarn\s+(?:why|list)|pip\s+(?:show|list|freeze)|cargo\s+(?:tree|metadata)|"
    r"go\s+(?:env(?!\s+-[wu])|list|version|doc)|gh\s+(?:api|run\s+(?:view|list)|pr\s+(?:view|list|diff)|"
    r"issue\s+(?:view|list))|terraform\s+(?:show|output|state\s+(?:list|show))|"
    r"python[\d.]*\s+(?:--version|-V)|node\s+(?:--version|-v)|java\s+-version|\S+\s+--version)\b"
)
# Output written to a file (not to another stream or /dev/null) makes a looking command a change.
_WRITES_FILE = re.compile(r"(?<![0-9&])>>?\s*(?!&|/dev/null)\S")
# A run that says it changes nothing: `makemigrations --check --dry-run`, `black --check`,
# `kubectl apply --dry-run=client`, `terraform fmt -check`, `git push --dry-run`.
_CHANGES_NOTHING = re.compile(r"\s--?(?:dry-run|check)(?:=\S*)?(?=\s|$)")
_ASSIGNMENTS = re.compile(r"^(?:\w+=\S*\s+)+")
_GIT_C = re.compile(r"^git\s+-C\s+\S+\s+")

_PROGRAMS_WITH_SUBCOMMAND = {
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "cargo",
    "go",
    "make",
    "mvn",
    "./mvnw",
    "gradle",
    "./gradlew",
    "dotnet",
    "bazel",
    "swift",
    "mix",
    "deno",
    "bundle",
    "golangci-lint",
    "ruff",
    "docker",
}


def check_identity(check: str) -> str:
    """Which check a command is, whatever its arguments: `pytest -q tests/x.py` and `pytest` are
    one check, `npm test` and `npm run build` two."""
    words = check.split()
    if len(words) >= 3 and words[0].startswith("python") and words[1] == "-m":
        words = words[2:]
    words = [w for w in words if not w.startswith("-")]
    if not words:
        return check.strip()
    if words[0] in _PROGRAMS_WITH_SUBCOMMAND and len(words) > 1:
        second = words[2] if words[1] == "run" and len(words) > 2 else words[1]
        return f"{words[0]} {second}"
    return words[0]


def command_identity(command: str) -> str:
    """Which command a non-check is, for telling a rerun: the program and its subcommand
    (`git push`, `docker compose up`, `./scripts/dev.sh`); arguments and flags aside."""
    words = [w for w in command.split() if not w.startswith("-") and "=" not in w]
    take = 3 if len(words) > 2 and words[1] in ("compose", "run", "exec") else 2
    return " ".join(words[:take]) or command.strip()


def is_change(command: str) -> bool:
    """A command that may have changed something (an install, an edit, an env change): any part
    of it that is not a check and not only a look (`grep 'a\\|b' x`, `git -C sub log`, `sed -n`, a
    run with `--dry-run` or `--check`), or that writes its output to a file."""
    from .checks import check_kind, segments

    text = command.strip()
    if not text:
        return False
    parts = segments(text)
    if parts is None:  # shell structure we do not read: assume it may change something
        return True
    for part in parts:
        part = _GIT_C.sub("git ", _ASSIGNMENTS.sub("", part.strip()))
        if not part or check_kind(part) is not None:
            continue
        if _WRITES_FILE.search(part) or not (_READ_ONLY.match(part) or _CHANGES_NOTHING.search(part)):
            return True
    return False


def describe_changes(files: list[str], commands: list[str], limit: int = 600) -> str:
    """`editing a.py, b.py; running `x`, `y`` within `limit` characters ("" for none)."""
    parts = []
    if files:
        parts.append("editing " + ", ".join(dict.fromkeys(files)))
    if commands:
        parts.append("running " + ", ".join(f"`{c}`" for c in dict.fromkeys(commands)))
    text = "; ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fingerprint(files: list[str], commands: list[str], advice: str = "") -> str:
    """What was done, independent of order and spacing: the same fix captured again has the
    same fingerprint."""
    items = sorted({f.strip() for f in files} | {" ".join(c.split()) for c in commands})
    if not items and advice:
        items = [" ".join(advice.split()).lower()]
    return "\n".join(items)


def case_key(kind: str, problem: str, done: str) -> str:
    import hashlib

    return hashlib.sha256(f"{kind}\x00{problem}\x00{done}".encode("utf-8", "replace")).hexdigest()[:32]


WORKED, FAILED, UNPROVEN = "worked", "failed", "unproven"


def case_standing(valence: float) -> str:
    """How a case is shown: what worked, what was tried and did not work, or not yet known."""
    if valence > 0.05:
        return WORKED
    if valence < -0.05:
        return FAILED
    return UNPROVEN


CASE_MARKS = {WORKED: "worked before", FAILED: "tried before, did not work", UNPROVEN: "tried before, outcome unclear"}
