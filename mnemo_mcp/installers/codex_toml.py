"""Our `[mcp_servers.mnemo]` table in Codex's config.toml, edited as text: every other line of
the file (comments, layout, other servers, trust entries) stays byte for byte. The result is
parsed back and must equal the original with only our table changed; anything else (our server
written as dotted keys or an inline table, a file that does not parse) is refused, with nothing
written."""

from __future__ import annotations

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


def _ours(line: str) -> bool | None:
    """True for a header of our table (or one of its sub-tables), False for another header,
    None for a line that is no header."""
    m = _HEADER.match(line)
    if not m:
        return None
    return _key_path(m.group("key"))[:2] == ["mcp_servers", SERVER_NAME]


def without_ours(text: str) -> tuple[list[str], int | None]:
    """The file's lines without our tables -> (lines, where the first of them was)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    at, skipping = None, False
    for line in lines:
        header = _ours(line)
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


def table(entry: dict[str, Any]) -> str:
    body = "".join(f"{key(k)} = {value(v)}\n" for k, v in entry.items())
    return f"[mcp_servers.{SERVER_NAME}]\n{body}"


def rewrite(f: ConfigFile, data: dict[str, Any], entry: dict[str, Any] | None) -> None:
    """Set `f.text` to the file with our table replaced by `entry` (None: removed)."""
    text = f.raw.decode("utf-8-sig") if f.raw is not None else ""
    lines, at = without_ours(text)
    if entry is None and at == len(lines) and lines and not lines[-1].strip():
        lines.pop()  # the blank line install put before our table
    if entry is not None:
        block = table(entry)
        if at is None:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            if lines and lines[-1].strip():
                block = "\n" + block
            lines.append(block)
        else:
            lines.insert(at, block + ("\n" if at < len(lines) and lines[at].strip() else ""))
    new_text = "".join(lines)
    expected = {k: v for k, v in data.items()}
    servers = {k: v for k, v in data.get("mcp_servers", {}).items() if k != SERVER_NAME}
    if entry is not None:
        servers[SERVER_NAME] = entry
    if servers or "mcp_servers" in data:
        expected["mcp_servers"] = servers
    try:
        got = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        got = None
    got_servers = (got or {}).get("mcp_servers")
    if got is not None and not got_servers and not servers:
        got.pop("mcp_servers", None)
        expected.pop("mcp_servers", None)
    if got != expected:
        raise fail(
            f.path,
            f"mcp_servers.{SERVER_NAME} is written in a form this installer does not edit (dotted keys or an "
            f"inline table); make it a [mcp_servers.{SERVER_NAME}] table",
        )
    f.text = new_text
