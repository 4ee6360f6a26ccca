"""JSON for the hook process without the `json` package, which imports `re` for its decoder's and
encoder's patterns, and `re` imports enum, functools and collections: about a third of a hook
process's start (~7 of ~20 ms here, started without `site`). These are the C functions the `json`
package itself runs (CPython's `_json`: its scanner and its encoder), so a value reads and writes
exactly as with `json.loads` and `json.dumps`; the `json` package where they are missing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:
    import _json
except ImportError:  # not CPython
    _json = None

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Decoding:
    """What the C scanner reads from a `json.JSONDecoder` made with the defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


_scan = None
_encoders: dict[bool, Any] = {}


def _default(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def loads(s: str | bytes) -> Any:
    """`json.loads(s)` (bytes: UTF-8); ValueError for what is not one JSON value."""
    global _scan
    if _json is None:
        import json

        return json.loads(s)
    if isinstance(s, (bytes, bytearray)):
        s = s.decode("utf-8")
    if _scan is None:
        _scan = _json.make_scanner(_Decoding())
    start = len(s) - len(s.lstrip(_WHITESPACE))
    try:
        value, end = _scan(s, start)
    except StopIteration as err:
        raise ValueError(f"Expecting value: char {err.value}") from None
    if s[end:].strip(_WHITESPACE):
        raise ValueError(f"Extra data: char {end}")
    return value


def dumps(obj: Any, compact: bool = False) -> str:
    """`json.dumps(obj)`; `compact`: with `separators=(",", ":")`."""
    encode = _encoders.get(compact)
    if encode is None:
        encode = _encoders[compact] = _encoder(compact)
    return "".join(encode(obj, 0))


def _encoder(compact: bool):
    item, key = (",", ":") if compact else (", ", ": ")
    if _json is not None:
        try:
            # json.encoder.JSONEncoder.iterencode's call, with its defaults (ensure_ascii, check_circular).
            return _json.make_encoder({}, _default, _json.encode_basestring_ascii, None, key, item, False, False, True)
        except (AttributeError, TypeError):  # another interpreter's signature: the package's way
            pass
    import json

    encoder = json.JSONEncoder(separators=(item, key))
    return lambda obj, _level: encoder.iterencode(obj, _one_shot=True)
