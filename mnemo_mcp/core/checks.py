"""Which shell commands are tests, builds, type checks or lints, and what their result says.

Conservative by design: a command gives a signal only when its exit status is the check's own.
`pytest | tail` reports tail's status; `make deploy && pytest` may fail in make; `pytest || true`
always passes. Those give nothing. Wrappers that keep the status (`uv run`, `npx`, `timeout 60`,
`FOO=1`, `cd dir &&`) are looked through.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

PASS, FAIL = "pass", "fail"
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")  # Claude Code's tools that change a file

DEFAULT_CHECKS: tuple[str, ...] = (
    r"pytest|py\.test|python[\d.]* -m (?:pytest|unittest|mypy|ruff|pyright|flake8|pylint|tox|nox)",
    r"python[\d.]* manage\.py (?:test|check)",  # Django's test runner and system checks
    r"tox|nox|mypy|pyright|ruff check|ruff(?=\s*$)|flake8|pylint|black --check|isort --check(?:-only)?",
    # `pnpm --filter @acme/admin build`, `npm --prefix web test`, `yarn workspace admin build`
    r"(?:npm|pnpm|yarn|bun)(?: --?[\w-]+(?:[= ](?!(?:run|test|build|lint)\b)[^\s-]\S*)?)*(?: workspace \S+)?"
    r" (?:run )?(?:test|build|lint|typecheck|type-check|check|smoke|e2e|verify)(?::[\w-]+)?",
    r"(?:jest|vitest|mocha|ava|playwright test|cypress run|tsc|eslint|biome check|prettier --check|lint-staged)",
    r"cargo (?:test|build|check|clippy|nextest run)",
    r"go (?:test|build|vet)|golangci-lint run",
    # `make`, `make test`, and the targets projects name after what they check (`make lint-ci`,
    # `make migrate-check`, `make smoke`)
    r"make(?:\s+-j\s*\d*)?(?=\s*$)|make(?:\s+-j\s*\d*)? (?:[\w-]*(?:test|check|lint|smoke|verify|ci)[\w-]*|build|all"
    r"|typecheck)|ninja|cmake --build \S+|ctest",
    # `./mvnw -B -pl billing -am verify`, `./gradlew :billing:test`
    r"(?:mvn|\./mvnw)(?: -\S+(?: (?!(?:clean|test|verify|package|compile|install)\b)[^\s-]\S*)?)*(?: clean)?"
    r" (?:test|verify|package|compile|install)"
    r"|(?:gradle|\./gradlew)(?: -\S+)*(?: clean)? (?:\S*:)?(?:test|build|check)",
    r"docker (?:buildx )?build|docker compose build|pre-commit run|cmake -S",
    r"dotnet (?:test|build)|bazel (?:test|build)|swift (?:test|build)|mix test|rspec|bundle exec rspec|phpunit|deno "
    r"test",
    # CI's own verdict, waited for: the exit status is the run's
    r"gh run watch \S+(?: --?[\w-]+)* --exit-status|gh pr checks(?: \S+)* --watch",
)
# Prefixes that run the next word with the same exit status.
_WRAPPERS = re.compile(
    r"^(?:(?:\w+=\S*\s+)+|(?:uv|poetry|pipenv|hatch|pdm|rye) run\s+|npx\s+|bunx\s+|pnpm exec\s+|yarn "
    r"exec\s+|time\s+|timeout\s+\S+\s+|nice\s+(?:-n\s*\S+\s+)?|command\s+|exec\s+|sudo\s+)"
)
# Segments that may precede a check without muddying its status.
_BENIGN = re.compile(r"^(?:cd|pushd|export|source|\.|set|unset|echo|clear|true)\b")


def _compile(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"^(?:" + "|".join(f"(?:{p})" for p in patterns) + r")(?:\s|$)")


def _strip_wrappers(segment: str) -> str:
    prev = None
    while prev != segment:
        prev = segment
        segment = _WRAPPERS.sub("", segment, count=1).strip()
    return segment


def segments(command: str) -> list[str] | None:
    """The simple commands of a command line (split at `;`, `&&`, `||`, `|`, `&` outside
    quotes), redirections kept; None when it cannot be read."""
    # A stream copied to another (`2>&1`) changes nothing; `&>` writes to a file like `>`.
    command = re.sub(r"&>", ">", re.sub(r"\d?>&\d\b", " ", command))
    found = _segments(command, keep_redirections=True)
    return None if found is None else [seg for _, seg in found]


def _segments(command: str, keep_redirections: bool = False) -> list[tuple[str, str]] | None:
    """[(operator before it, segment)], or None when the shell structure hides exit codes."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return None
    out: list[tuple[str, str]] = []
    op, words = "", []
    for tok in tokens:
        if tok in (";", "&&", "||", "|", "&", "|&", ";;"):
            if words:
                out.append((op, " ".join(words)))
            op, words = tok, []
        elif set(tok) <= set(";&|"):
            if keep_redirections and words:  # `2>&1`: part of the command before it
                words.append(tok)
                continue
            return None  # redirections like >& or odd operators: do not guess
        else:
            words.append(tok)
    if words:
        out.append((op, " ".join(words)))
    return out


_HIDDEN = ("|", "||", "&", "|&")  # operators after which the exit status is not the command's before them


def _final_check(command: str, patterns: Iterable[str]) -> tuple[str, bool] | None:
    """The check a command line ends with, and whether its exit status is the check's whatever
    it is (True) or only when it passes (False: a change joined to it by `&&`); None when no
    check ends it or the structure hides its status."""
    if not isinstance(command, str) or not command.strip() or "\n" in command.strip():
        return None
    if re.search(r"\$\(|`|<\(|>\(", command):
        return None  # substitutions: the status could come from anywhere
    if re.search(r"&\s*$", command):
        return None  # backgrounded: its status is not reported
    # Redirections change where output goes, not the exit status.
    command = re.sub(r"\s\d?>&\d\b|\s&>>?\s*\S+|\s\d?>>?\s*\S+|\s<\s*\S+", " ", command)
    segments = _segments(command)
    if not segments:
        return None
    matcher = _compile(patterns)
    *before, (last_op, last) = segments
    check = _strip_wrappers(last)
    if last_op in _HIDDEN or not matcher.search(check) or any(op in _HIDDEN for op, _ in before):
        return None
    # `cd api && ...`, or other checks chained before it (`cargo build && cargo test`): whichever
    # of them failed, the checks failed.
    parts = [_strip_wrappers(seg) for _, seg in before]
    if all(_BENIGN.search(p) or matcher.search(p) for p in parts):
        return check, True
    # A change first (`rm MANIFEST.in && nox -s installed`): a zero exit of `a && b` means every
    # part succeeded; a failure could be any part's.
    if all(op in ("", "&&") for op, _ in segments):
        return check, False
    return None


def check_kind(command: str, patterns: Iterable[str] = DEFAULT_CHECKS) -> str | None:
    """The check a command runs (its normalized text), or None when it is not one, or when
    its exit status might not be the check's."""
    found = _final_check(command, patterns)
    return found[0] if found and found[1] else None


def passed_check(command: str, patterns: Iterable[str] = DEFAULT_CHECKS) -> str | None:
    """The check a command that succeeded ran: `check_kind`'s, or the check that ends a change
    (`rm MANIFEST.in && nox -s installed`, `npm install && npm test`): every part succeeded, so
    did the check. (The same command failing tells nothing: that is `check_kind`'s None.)"""
    found = _final_check(command, patterns)
    return found[0] if found else None


def outcome_of(tool_response: object, failed_event: bool) -> str | None:
    """PASS / FAIL from Claude Code's Bash tool result, or None when it cannot be told.

    PostToolUse fires for commands that succeeded and PostToolUseFailure for those that did not;
    an exit code in the response, where a version provides one, wins. An interrupted command
    (the user pressed Esc, a timeout) says nothing about the code.
    """
    if isinstance(tool_response, dict):
        if tool_response.get("interrupted") or tool_response.get("is_interrupt"):
            return None
        for key in ("exit_code", "exitCode", "returncode", "return_code"):
            code = tool_response.get(key)
            if isinstance(code, int) and not isinstance(code, bool):
                return PASS if code == 0 else FAIL
    return FAIL if failed_event else PASS
