"""The codec of MCP 2026-07-28's `requestState` for this server, on the standard library.

The SDK seals the state a server hands a client between the rounds of a multi-round-trip request
(`mcp.server.request_state`); by default with AES-256-GCM from `cryptography`, whose import (its
Rust extension, cffi, OpenSSL's bindings) cost every server ~6 MB of private memory (~1.7 MB of
it Python objects). mnemo's tools never ask the client for input, so the server never mints any
state: what a codec must still do is refuse every token it did not mint. This one signs with
HMAC-SHA256 under a key made by the process (as the SDK's default key is), so the launcher keeps
`cryptography` out of the server (launcher.py). Signed, not encrypted: a state it minted would be
readable by the client, which holds nothing secret here (no handler payload, no principal on
stdio)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from mcp.server.request_state import InvalidRequestState

PREFIX = "m1."  # the format, bound under the signature; never the algorithm's name (RFC 8725)
_TAG = 32


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class SignedStateCodec:
    """`seal` / `unseal` of the SDK's RequestStateCodec protocol: unseal(seal(p)) == p, and any
    token not sealed by this object unmodified raises InvalidRequestState."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = bytes(key) if key is not None else os.urandom(32)
        if len(self._key) < 32:
            raise ValueError("a request-state key needs at least 32 bytes of secret randomness")

    def _tag(self, payload: bytes) -> bytes:
        return hmac.new(self._key, PREFIX.encode() + payload, hashlib.sha256).digest()

    def seal(self, payload: bytes) -> str:
        return PREFIX + _b64u(payload + self._tag(payload))

    def unseal(self, token: str) -> bytes:
        if not isinstance(token, str) or not token.startswith(PREFIX):
            raise InvalidRequestState("malformed")
        text = token[len(PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except ValueError:
            raise InvalidRequestState("malformed") from None
        if _b64u(raw) != text or len(raw) < _TAG:  # one spelling per token: no padding variants
            raise InvalidRequestState("malformed")
        payload, tag = raw[:-_TAG], raw[-_TAG:]
        if not hmac.compare_digest(tag, self._tag(payload)):
            raise InvalidRequestState("seal")
        return payload


def security():
    """The SDK's request-state policy with this codec (its TTL, principal and audience checks)."""
    from mcp.server.request_state import RequestStateSecurity

    return RequestStateSecurity(codec=SignedStateCodec())
