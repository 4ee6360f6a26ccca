"""Our `[mcp_servers.mnemo]` table in Codex's config.toml, edited as text: every other line of
the file (comments, layout, other servers, trust entries) stays byte for byte. The result is
parsed back and must equal the original with only our table changed; anything else (our server
written as dotted keys or an inline table, a file that does not parse) is refused, with nothing
written."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from typing import Any

from .merge import SERVER_NAME, ConfigFile, fail

_HEADER = re.compile(r"^\s*\[\[?\s*(?P<key>[^\]#]+?)\s*\]\]?\s*(#.*)?$")
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def parse(f: ConfigFile) -> dict[str, Any]:
    """The file's TOML (a missing file: {}); a broken one is refused."""
    if f.raw is None:
        return {}
    try:
        data = tomllib.loads(f.raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise fail(f.path, f"not valid TOML ({err})") from None
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict) or not isinstance(servers.get(SERVER_NAME, {}), dict):
        raise fail(f.path, '"mcp_servers" and "mcp_servers.mnemo" must be tables')
    return data


def _key_path(key: str) -> list[str]:
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([^.\s]+)', key)
    return [a or b or c for a, b, c in parts]


def _under(line: str, path: tuple[str, ...]) -> bool | None:
    """True for a header of the table at `path` (or one of its sub-tables), False for another
    header, None for a line that is no header."""
    m = _HEADER.match(line)
    if not m:
        return None
    return tuple(_key_path(m.group("key"))[: len(path)]) == path


def without(text: str, path: tuple[str, ...]) -> tuple[list[str], int | None]:
    """The file's lines without the table at `path` -> (lines, where it was)."""
    out: list[str] = []
    at, skipping = None, False
    for line in text.splitlines(keepends=True):
        header = _under(line, path)
        if header is not None:
            skipping = header
            if header and at is None:
                at = len(out)
        if not skipping:
            out.append(line)
    return out, at


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }" if v else "{}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def table(path: tuple[str, ...], entry: dict[str, Any]) -> str:
    body = "".join(f"{key(k)} = {value(v)}\n" for k, v in entry.items())
    return f"[{'.'.join(key(p) for p in path)}]\n{body}"


def _set(data: dict[str, Any], path: tuple[str, ...], entry: dict[str, Any] | None) -> dict[str, Any]:
    """`data` with the table at `path` set to `entry` (None: removed), emptied parents dropped."""
    out = copy.deepcopy(data)
    node = out
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if entry is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = entry
    return _pruned(out, path)


def _pruned(data: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for depth in range(len(path) - 1, 0, -1):
        parent = data
        for part in path[: depth - 1]:
            parent = parent.get(part, {})
        if parent.get(path[depth - 1]) == {}:
            del parent[path[depth - 1]]
    return data


def rewrite(f: ConfigFile, path: tuple[str, ...], entry: dict[str, Any] | None) -> None:
    """Set `f.text` to the file (as edited so far) with the table at `path` replaced by `entry`
    (None: removed); refused when the result would differ anywhere else."""
    text = f.text if f.text is not None else (f.raw.decode("utf-8-sig") if f.raw is not None else "")
    data = tomllib.loads(text)
    lines, at = without(text, path)
    if entry is None and at == len(lines) and lines and not lines[-1].strip():
        lines.pop()  # the blank line install put before the table
    if entry is not None:
        block = table(path, entry)
        if at is None:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            if lines and lines[-1].strip():
                block = "\n" + block
            lines.append(block)
        else:
            lines.insert(at, block + ("\n" if at < len(lines) and lines[at].strip() else ""))
    new_text = "".join(lines)
    try:
        got = _pruned(tomllib.loads(new_text), path)
    except tomllib.TOMLDecodeError:
        got = None
    if got != _set(data, path, entry):
        name = ".".join(key(p) for p in path)
        raise fail(
            f.path,
            f"{name} is written in a form this installer does not edit (dotted keys or an inline table); "
            f"make it a [{name}] table",
        )
    f.text = new_text
