"""The server's request-state codec (MCP 2026-07-28), on hmac instead of the SDK's AES-GCM."""

from __future__ import annotations

import base64

import pytest
from mcp.server.request_state import InvalidRequestState

from mnemo_mcp.request_state import PREFIX, SignedStateCodec, security
from mnemo_mcp.server import build_server


def test_a_sealed_state_unseals_to_what_was_sealed():
    codec = SignedStateCodec()
    for payload in (b"", b"x", b'{"round": 2, "asked": "which branch?"}', bytes(range(256))):
        assert codec.unseal(codec.seal(payload)) == payload


def test_a_token_changed_anywhere_is_refused():
    codec = SignedStateCodec()
    token = codec.seal(b'{"round": 2}')
    body = bytearray(base64.urlsafe_b64decode(token[len(PREFIX) :] + "=" * (-len(token) % 4)))
    for i in range(len(body)):
        changed = bytearray(body)
        changed[i] ^= 0x01
        forged = PREFIX + base64.urlsafe_b64encode(bytes(changed)).decode().rstrip("=")
        with pytest.raises(InvalidRequestState):
            codec.unseal(forged)


@pytest.mark.parametrize(
    "token", ["", "m1.", "v1.AAAA", "m1.!!!!", "m1.AAAA", "m1.AAAA==", "M1.AAAA", "m1." + "A" * 43 + "="]
)
def test_malformed_tokens_are_refused(token):
    with pytest.raises(InvalidRequestState):
        SignedStateCodec().unseal(token)


def test_a_token_of_another_process_is_refused():
    # Each process makes its key (as the SDK's default does): a state minted elsewhere is refused.
    with pytest.raises(InvalidRequestState):
        SignedStateCodec().unseal(SignedStateCodec().seal(b"state"))
    assert SignedStateCodec(b"k" * 32).unseal(SignedStateCodec(b"k" * 32).seal(b"state")) == b"state"


def test_short_keys_are_refused():
    with pytest.raises(ValueError, match="32 bytes"):
        SignedStateCodec(b"short")


def test_the_server_seals_request_state_with_this_codec():
    assert isinstance(security().codec, SignedStateCodec)
    server = build_server()
    boundaries = [m for m in server._lowlevel_server.middleware if type(m).__name__ == "RequestStateBoundary"]
    assert len(boundaries) == 1
    assert isinstance(boundaries[0]._security.codec, SignedStateCodec)
