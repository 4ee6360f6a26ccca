"""The real `mnemo-mcp` command as a subprocess over stdio, through the official client."""

from __future__ import annotations

import os
import shutil
import sys
import threading

import pytest
from mcp import Client, StdioServerParameters

from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.server import build_server
from mnemo_mcp.service import MemoryService

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _checkout(env: dict[str, str]) -> dict[str, str]:
    """The server's environment, with PYTHONPATH when the tests run a checkout through it."""
    return env | ({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})


def _command() -> tuple[str, list[str]]:
    exe = shutil.which("mnemo-mcp")
    return (exe, []) if exe else (sys.executable, ["-m", "mnemo_mcp"])


@pytest.mark.slow
async def test_stdio_server_write_read_feedback_read(tmp_path):
    command, args = _command()
    env = {"MNEMO_DB": str(tmp_path / "stdio.db"), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env = _checkout(env)
    params = StdioServerParameters(command=command, args=args, env=env)
    async with Client(params, mode="legacy") as c:
        for text in (
            "Retry the webhook three times, then drop it.",
            "Retry with backoff and keep the dead letter.",
            "Webhook signatures expire after five minutes.",
        ):
            w = await c.call_tool("memory_write", {"content": text})
            assert not w.is_error, w.content
        r = (await c.call_tool("memory_read", {"query": "webhook retry"})).structured_content
        assert r["items"][0]["content"].startswith("Retry the webhook")
        backoff = next(it["id"] for it in r["items"] if "backoff" in it["content"])
        fb = await c.call_tool("memory_feedback", {"memory_ids": [backoff], "outcome": 1.0, "read_id": r["read_id"]})
        assert not fb.is_error, fb.content
        again = (await c.call_tool("memory_read", {"query": "webhook retry"})).structured_content
        assert again["items"][0]["id"] == backoff
    assert oct(os.stat(tmp_path / "stdio.db").st_mode & 0o777) == "0o600"


@pytest.mark.slow
async def test_a_bad_setting_is_answered_by_every_tool_and_the_server_stays_up(tmp_path):
    """The bare server reads its settings after the handshake: a bad MNEMO_ value must not kill
    it (Claude Code would show a dead server), it must say what is wrong, and change nothing."""
    command, args = _command()
    env = {
        "MNEMO_DB": str(tmp_path / "bad.db"),
        "HOME": str(tmp_path),
        "MNEMO_LEARNING_RATE": "banana",
        "MNEMO_EMBED_MODEL": "mnemo-hash-64",
    }
    env = _checkout(env)
    async with Client(StdioServerParameters(command=command, args=args, env=env), mode="legacy") as c:
        assert {t.name for t in (await c.list_tools()).tools} >= {"memory_read", "memory_write"}
        for _ in range(2):
            r = await c.call_tool("memory_write", {"content": "A note that must not be stored."})
            assert r.is_error and "invalid MNEMO_ setting" in r.content[0].text and "learning_rate" in r.content[0].text
    assert not (tmp_path / "bad.db").exists()


class BlockingEmbedder(HashEmbedder):
    """Stands for a model that takes long to load: nothing embeds until `release` is set."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def embed_query(self, text):
        self.release.wait(timeout=60)
        return super().embed_query(text)

    def embed_passages(self, texts):
        self.release.wait(timeout=60)
        return super().embed_passages(texts)


async def test_handshake_and_model_free_tools_do_not_wait_for_the_model(settings):
    embedder = BlockingEmbedder()
    server = build_server(settings, service_factory=lambda s: MemoryService(s, embedder))
    try:
        async with Client(server, mode="legacy") as c:
            tools = await c.list_tools()
            stats = await c.call_tool("memory_stats", {})
            assert not embedder.release.is_set()
            assert len(tools.tools) == 9 and stats.structured_content["total"] == 0
            embedder.release.set()
            w = await c.call_tool("memory_write", {"content": "written once the model is there"})
            assert w.structured_content["created"] is True
    finally:
        embedder.release.set()


PROBE = {
    "jsonrpc": "2.0",
    "id": "server-discover-probe-1",
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
            "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
        }
    },
}


def _first_answer(tmp_path, early: str) -> dict:
    import json
    import subprocess

    command, args = _command()
    env = {
        "MNEMO_DB": str(tmp_path / "probe.db"),
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", ""),
        "MNEMO_EARLY_DISCOVER": early,
    }
    env = _checkout(env)
    proc = subprocess.Popen(
        [command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        proc.stdin.write(json.dumps(PROBE).encode() + b"\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_the_discover_probe_is_answered_before_the_sdk_loads_exactly_as_the_sdk_answers_it(tmp_path):
    # Claude Code gives a stdio server 3 s to answer `server/discover` before it falls back to
    # `initialize`; the launcher answers it itself, and must say what the SDK would say.
    early, sdk = _first_answer(tmp_path, "1"), _first_answer(tmp_path, "0")
    assert early == sdk and early["id"] == PROBE["id"]
    assert early["result"]["supportedVersions"] == ["2026-07-28"]


HELD_CHILD = """
import asyncio, os, sys, threading
from mnemo_mcp import probe
from mnemo_mcp.stdio import streams

print(probe.answer_early(wait_s=5.0), threading.active_count(), flush=True)

async def main():
    async with streams() as (lines, out):
        async for line in lines:
            await out.write("got " + line)
            await out.flush()

asyncio.run(main())
"""


def test_a_first_message_that_is_not_the_probe_is_read_first_by_the_transport_without_a_relay():
    # An older client's `initialize`, read by the launcher to see whether it was the probe, is the
    # first line the transport reads; the rest of the stream is read straight from stdin, not
    # through a thread that copies it into a pipe (a hop for every later message).
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen(
        [sys.executable, "-c", HELD_CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    out, err = proc.communicate(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}\nsecond\nthird\n', timeout=60)
    assert proc.returncode == 0, err
    assert out.decode().splitlines() == [
        "False 1",  # not the probe; no thread started
        'got {"jsonrpc":"2.0","id":1,"method":"initialize"}',
        "got second",
        "got third",
    ]


@pytest.mark.slow
async def test_after_the_early_probe_a_modern_client_lists_and_calls_the_tools(tmp_path):
    command, args = _command()
    env = {"MNEMO_DB": str(tmp_path / "modern.db"), "HOME": str(tmp_path), "MNEMO_EMBED_MODEL": "mnemo-hash-64"}
    env = _checkout(env)
    async with Client(StdioServerParameters(command=command, args=args, env=env), mode="auto") as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"memory_read", "memory_write", "memory_feedback"} <= names
        w = await c.call_tool("memory_write", {"content": "Webhook signatures expire after five minutes."})
        assert not w.is_error, w.content


def test_the_stdio_server_imports_no_uvicorn_sdk_client_httpx2_nor_cryptography_and_they_still_import_after(
    tmp_path,
):
    # The SDK's sse_starlette imports uvicorn only to patch its shutdown, within `except
    # ImportError`; `mcp/__init__` imports the client side, and the resources module httpx2,
    # for names a stdio server never uses; its request-state module imports `cryptography` for a
    # codec the server replaces: the launcher keeps them out (~3, ~1, ~2.5, ~6 MB a server).
    import subprocess

    code = (
        "import sys\n"
        "from mnemo_mcp import launcher\n"
        "for package in launcher.DEFERRED_PACKAGES:\n"
        "    launcher._deferred(package)\n"
        "serve = launcher.lean_server_import()\n"
        "import mcp.server.mcpserver, sse_starlette\n"
        "print(callable(serve), *(n in sys.modules for n in ('uvicorn', 'mcp.client', 'httpx2._client', 'cryptography')))\n"
        "print(*(n in sys.modules for n in launcher.STAND_IN_MODULES))\n"
        "import httpx2, uvicorn\n"
        "from mcp import Client, types\n"  # the SDK's package names: its __init__ runs now
        "import mcp\n"
        "print(uvicorn.Server.__name__, Client.__name__, mcp.StdioServerParameters.__name__, types.Tool.__name__,"
        " httpx2.AsyncClient.__name__)\n"
        # The SDK's own names for the codec are stand-ins that load the real ones when used.
        "import mcp.server.request_state as rs\n"
        "codec = rs.AESGCMRequestStateCodec([b'k' * 32])\n"
        "token = codec.seal(b'state')\n"
        "print(codec.unseal(token).decode(), 'cryptography' in sys.modules)\n"
        "from cryptography.hazmat.primitives.ciphers.aead import AESGCM\n"
        "print(AESGCM.__name__, isinstance(codec._ring[codec._mint_kid], rs.AESGCM))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == (
        ["True", "False", "False", "False", "False"]
        + ["False"] * 4
        + ["Server", "Client", "StdioServerParameters", "Tool", "AsyncClient"]
        + ["state", "True", "AESGCM", "True"]
    )
    # Without the launcher's guards the SDK does import them: the test above is not vacuous.
    bare = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, mcp.server.mcpserver as m; print(*(n in sys.modules for n in"
            " ('uvicorn', 'mcp.client', 'httpx2._client', 'cryptography')))",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bare.stdout.split() == ["True", "True", "True", "True"], bare.stderr


STREAMS_CHILD = """
import asyncio, os, sys
from mnemo_mcp.stdio import streams

async def main():
    async with streams() as (lines, out):
        print("stray print", flush=True)  # while serving, fd 1 is stderr
        os.write(1, b"stray write\\n")
        async for line in lines:
            await out.write(f"{len(line)} {line[:3]}\\n")
            await out.flush()
    print("after", flush=True)  # the wire again

asyncio.run(main())
"""


def test_the_event_loop_transport_keeps_stray_output_off_the_wire_and_takes_long_lines():
    import subprocess

    long = "x" * 300_000 + "\n"  # past asyncio's default line limit (64 KiB)
    done = subprocess.run(
        [sys.executable, "-c", STREAMS_CHILD],
        input="abc\n" + long,
        capture_output=True,
        text=True,
        env=_checkout({k: v for k, v in os.environ.items() if k != "PYTHONPATH"}),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "4 abc\n300001 xxx\nafter\n"
    assert "stray print" in done.stderr and "stray write" in done.stderr
