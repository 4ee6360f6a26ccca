"""Hooks asking the MCP server: a hook process finds the servers of its database through the
socket directory beside it, has one handle the event with the loaded model, and falls back to
keywords when none is ready; an event is never handled twice and a hook never hangs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.hooks import channel
from mnemo_mcp.hooks.host import HookHost
from mnemo_mcp.service import MemoryService

WEBHOOK = (
    "Webhook retries: use exponential backoff starting at 2 seconds and keep failed payloads in the dead letter queue."
)
NOTES = [
    WEBHOOK,
    "Stripe webhook signatures are checked with the endpoint secret from STRIPE_WEBHOOK_SECRET.",
    "The flaky test test_upload_retry needs the mock server on a fixed port 8089.",
    "Deploys go through the GitHub Actions workflow deploy.yml on the main branch.",
    "Postgres migrations must be reversible: every upgrade has a downgrade.",
    "Celery workers must be restarted after a settings change.",
    "The API rate limit is 120 requests per minute per token.",
]
HEAVY = ("pydantic", "pydantic_settings", "apsw", "numpy", "mcp", "fastembed", "onnxruntime")


def seed(db: str, embedder=None) -> dict[str, str]:
    svc = MemoryService(Settings(db=db, project="shop-api", auto_consolidate=False), embedder or HashEmbedder())
    try:
        return {text: svc.write(text, allow_duplicate=True).id for text in NOTES}
    finally:
        svc.close()


def hook(env: dict[str, str], event: str, payload: dict, *flags: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *flags, "-m", "mnemo_mcp", "hook", event],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={**env, **extra},
        timeout=60,
    )


def prompt(project: Path, text: str, session: str = "s-1", prompt_id: str | None = None) -> dict:
    payload = {
        "session_id": session,
        "cwd": str(project / "src"),
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    }
    if prompt_id:
        payload["prompt_id"] = prompt_id
    return payload


def injected(result: subprocess.CompletedProcess) -> list[str]:
    """The 12-character id prefixes of the memories a prompt hook injected, in order."""
    assert result.returncode == 0, result.stderr
    if not result.stdout:
        return []
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    return [line[3:15] for line in text.splitlines() if line.startswith("- [")]


class Server:
    """A HookHost listening in this process, as an MCP server does."""

    def __init__(self, env: dict[str, str], embedder=None, ready: bool = True):
        self.settings = Settings.from_env(
            {k: v for k, v in env.items() if k.startswith("MNEMO_")}, auto_consolidate=False
        )
        self.embedder = embedder or HashEmbedder()
        self.is_ready = ready
        self.is_loading = False
        self.host = HookHost(self.settings, self.embedder, ready=lambda: self.is_ready, loading=lambda: self.is_loading)
        self.listener = self.host.listener()
        assert self.listener.start()

    def close(self) -> None:
        self.listener.stop()
        self.host.close()


@pytest.fixture
def server(env):
    seed(env["MNEMO_DB"])
    srv = Server(env)
    yield srv
    srv.close()


# --- recall through the server ----------------------------------------------------------------


def test_with_a_server_up_the_hook_injects_in_the_order_memory_read_gives(env, project, real_embedder):
    ids = seed(env["MNEMO_DB"], real_embedder)
    floor = {
        "MNEMO_INJECT_MIN_RELEVANCE": "0.05",
        "MNEMO_INJECT_BY_CONFIDENCE": "false",  # the relevance floors, low: anything by meaning
        "MNEMO_INJECT_MIN_RELEVANCE_KEYWORD": "0.05",
        "MNEMO_INJECT_TOP_K": "3",
    }
    env = {**env, "MNEMO_EMBED_MODEL": Settings().embed_model, **floor}
    srv = Server(env, real_embedder)
    try:
        query = "the callbacks we send to partners bounce, how often do we try again?"  # no word in common
        svc = MemoryService(srv.settings.model_copy(update={"project": "shop-api"}), real_embedder)
        expected = svc.read(query, top_k=3, min_relevance=srv.settings.inject_min_relevance, record=False)
        svc.close()
        assert expected.items and expected.items[0].id == ids[WEBHOOK]
        got = injected(hook(env, "UserPromptSubmit", prompt(project, query)))
        assert got and got == [it.id[:12] for it in expected.items][: len(got)]  # the read's order
        # The same prompt without a server (keywords only) would not have found it.
        alone = injected(hook(env, "UserPromptSubmit", prompt(project, query, session="s-2"), MNEMO_HOOK_SERVER="0"))
        assert alone == []
    finally:
        srv.close()


def test_the_hooks_own_settings_apply_not_the_servers(env, project, server):
    wide = {
        "MNEMO_INJECT_MIN_RELEVANCE": "0.0",
        "MNEMO_INJECT_BY_CONFIDENCE": "false",
        "MNEMO_INJECT_MIN_RELEVANCE_KEYWORD": "1.0",
        "MNEMO_INJECT_FULL_RELEVANCE_KEYWORD": "1.0",
        "MNEMO_INJECT_TOKENS": "400",
    }
    three = injected(
        hook(env, "UserPromptSubmit", prompt(project, "webhook retries backoff"), **wide, MNEMO_INJECT_TOP_K="3")
    )
    one = injected(
        hook(env, "UserPromptSubmit", prompt(project, "webhook retries backoff", "s-2"), **wide, MNEMO_INJECT_TOP_K="1")
    )
    assert one and one == three[:1]  # the keyword floor 1.0 shows the server answered
    off = hook(
        env,
        "UserPromptSubmit",
        prompt(project, "webhook retries backoff", "s-3"),
        **{**wide, "MNEMO_INJECT_TOKENS": "0"},
    )
    assert injected(off) == []  # the hook's budget, not the server's


def test_a_server_still_loading_its_model_leaves_the_event_to_the_hook(env, project, server):
    server.is_ready = False
    got = injected(
        hook(
            env,
            "UserPromptSubmit",
            prompt(project, "webhook retries backoff"),
            MNEMO_INJECT_MIN_RELEVANCE_KEYWORD="0.3",
        )
    )
    assert got  # answered by keywords in the hook process
    assert not Path(env["MNEMO_HOOK_LOG"]).exists()


def test_a_server_loading_its_model_is_waited_for_and_answers_by_meaning(env, project, server):
    # Claude Code's first prompt comes ~0.6 s after it starts the server, before the model is in.
    server.is_ready, server.is_loading = False, True
    threading.Timer(0.6, lambda: setattr(server, "is_ready", True)).start()
    only_server = {
        "MNEMO_INJECT_MIN_RELEVANCE": "0.0",
        "MNEMO_INJECT_BY_CONFIDENCE": "false",
        "MNEMO_INJECT_MIN_RELEVANCE_KEYWORD": "1.0",
        "MNEMO_INJECT_FULL_RELEVANCE_KEYWORD": "1.0",
    }
    assert injected(hook(env, "UserPromptSubmit", prompt(project, "webhook retries backoff"), **only_server))
    # A model that never comes (its load failed): the hook does not wait past its bound.
    server.is_ready = False
    out = hook(
        env,
        "UserPromptSubmit",
        prompt(project, "webhook retries backoff", "s-2"),
        **only_server,
        MNEMO_HOOK_MODEL_WAIT_MS="300",
    )
    assert injected(out) == [] and out.returncode == 0


def test_a_server_of_another_model_is_not_asked(env, project, server):
    out = hook(
        env,
        "UserPromptSubmit",
        prompt(project, "webhook retries backoff"),
        MNEMO_EMBED_MODEL="mnemo-hash-32",
        MNEMO_INJECT_MIN_RELEVANCE="0.0",
        MNEMO_INJECT_BY_CONFIDENCE="false",
        MNEMO_INJECT_MIN_RELEVANCE_KEYWORD="1.0",
        MNEMO_INJECT_FULL_RELEVANCE_KEYWORD="1.0",
    )
    assert injected(out) == []  # the server refused; the hook, alone, found nothing above 1.0


def test_a_hook_with_a_server_up_imports_no_heavy_library(env, project, server):
    for event, payload in (
        ("UserPromptSubmit", prompt(project, "webhook retries backoff")),
        (
            "PostToolUse",
            {"session_id": "s-1", "cwd": str(project), "tool_name": "Bash", "tool_input": {"command": "git status"}},
        ),
        (
            "PostToolUse",
            {
                "session_id": "s-1",
                "cwd": str(project),
                "tool_name": "Bash",
                "tool_input": {"command": "pytest -q"},
                "tool_response": {"stdout": "1 passed", "stderr": "", "interrupted": False},
            },
        ),
    ):
        out = hook(env, event, payload, "-X", "importtime")
        assert out.returncode == 0
        imported = {
            line.split("|")[-1].strip().split(".")[0]
            for line in out.stderr.splitlines()
            if line.startswith("import time:")
        }
        assert "mnemo_mcp" in imported and not imported & set(HEAVY), (event, imported & set(HEAVY))


def test_a_prompt_hook_with_a_server_up_imports_neither_the_socket_module_nor_the_tool_event_code(env, project, server):
    out = hook(env, "UserPromptSubmit", prompt(project, "webhook retries backoff"), "-X", "importtime")
    assert out.returncode == 0
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "mnemo_mcp.hooks.channel" in imported  # it did ask the server
    # `socket` turns its constants into enums on import; the C module `_socket` is all a hook uses.
    # hooks.events and core.checks are for tool events.
    assert not imported & {"socket", "selectors", "mnemo_mcp.hooks.events", "mnemo_mcp.core.checks"}


def test_the_server_reads_a_hooks_settings_once_per_environment(env, project, server, monkeypatch):
    read = []
    real = Settings.from_env.__func__

    def counting(cls, environ, **overrides):
        read.append(dict(environ))
        return real(cls, environ, **overrides)

    monkeypatch.setattr(Settings, "from_env", classmethod(counting))
    mnemo = {k: v for k, v in env.items() if k.startswith("MNEMO_")}

    def ask(extra: dict[str, str], session: str) -> dict | None:
        payload = prompt(project, "webhook retries backoff", session=session)
        request = {"event": "UserPromptSubmit", "payload": payload, "env": {**mnemo, **extra}, "cwd": str(project)}
        return channel.ask(env["MNEMO_DB"], request, budget_s=5.0)

    assert ask({}, "s-1")["ok"] and ask({}, "s-2")["ok"]
    assert len(read) == 1  # the second event reused the settings read for the first
    assert ask({"MNEMO_INJECT_TOKENS": "40"}, "s-3")["ok"]
    assert len(read) == 2 and read[1]["MNEMO_INJECT_TOKENS"] == "40"  # another environment is read anew
    # Invalid settings are refused every time, with the reason (the hook then handles it itself).
    bad = {"MNEMO_INJECT_TOKENS": "many"}
    assert ask(bad, "s-4") is None and ask(bad, "s-5") is None
    assert len(read) == 3


class SignallingEmbedder(HashEmbedder):
    """Records each query it embeds and signals it."""

    def __init__(self):
        super().__init__()
        self.queries: list[str] = []
        self.embedded = threading.Event()

    def embed_query(self, text):
        self.queries.append(text)
        self.embedded.set()
        return super().embed_query(text)


def test_the_server_embeds_a_prompt_before_the_hook_says_go_and_only_once(env, project):
    seed(env["MNEMO_DB"])
    embedder = SignallingEmbedder()
    srv = Server(env, embedder)
    try:
        text = "webhook retries backoff"

        def prepared(session: str):  # what the server does before it answers "ready"
            mnemo = {k: v for k, v in env.items() if k.startswith("MNEMO_")}
            payload = prompt(project, text, session=session)
            request = {
                "event": "UserPromptSubmit",
                "payload": payload,
                "env": mnemo,
                "cwd": str(project),
                "wait_ms": 2000,
            }
            handle = srv.host.prepare(request)
            while isinstance(handle, channel.Later):  # the service for the hook's settings opens first
                handle = handle.resolve()
            assert callable(handle)
            return handle

        assert prepared("s-0")()["ok"]  # the first prompt binds the model to that service's store
        embedder.queries.clear()
        embedder.embedded.clear()
        handle = prepared("s-1")
        assert embedder.embedded.wait(5)  # started already, before the hook's "go"
        result = handle()  # after "go": the turn is logged and the prompt read
        assert result["ok"] and injected_text(result["output"])
        assert embedder.queries == [text]
    finally:
        srv.close()


def injected_text(output: str | None) -> str:
    return json.loads(output)["hookSpecificOutput"]["additionalContext"] if output else ""


# A hook run through the launcher, with os._exit replaced to say it was called.
FAST_EXIT_PROBE = (
    "import os, sys\n"
    "from mnemo_mcp import launcher\n"
    "def fast(code):\n"
    "    print('FAST EXIT', code, flush=True)\n"
    "    sys.exit(code)\n"
    "os._exit = fast\n"
    "sys.argv = ['mnemo-mcp', 'hook', sys.argv[1]]\n"
    "sys.exit(launcher.main())\n"
)


def launched_hook(env: dict[str, str], event: str, payload: dict, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", FAST_EXIT_PROBE, event],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={**env, **extra},
        timeout=60,
    )


def test_a_hook_with_nothing_left_to_run_ends_without_the_interpreters_teardown_its_output_delivered(env, project):
    command = {"session_id": "s-1", "cwd": str(project), "tool_name": "Bash"}
    quiet = launched_hook(env, "PreToolUse", {**command, "tool_input": {"command": "ls"}})
    assert quiet.returncode == 0 and quiet.stdout == "FAST EXIT 0\n"
    denied = launched_hook(env, "PreToolUse", {**command, "tool_input": {"command": "mnemo-mcp release abc"}})
    assert denied.returncode == 0
    decision, end = denied.stdout.splitlines()
    assert json.loads(decision)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert end == "FAST EXIT 0"  # printed after the hook's whole output


def test_a_hook_that_handled_its_event_itself_ends_normally(env, project, server):
    # No server asked: the hook opens the store and imports logging, which registers its flush
    # at exit, so the interpreter's normal exit runs it.
    out = launched_hook(env, "UserPromptSubmit", prompt(project, "webhook retries backoff"), MNEMO_HOOK_SERVER="0")
    assert out.returncode == 0 and "FAST EXIT" not in out.stdout
    assert injected(out)  # it did its work: the keyword recall found the note
    with_server = launched_hook(env, "UserPromptSubmit", prompt(project, "webhook retries backoff", session="s-2"))
    assert with_server.returncode == 0 and with_server.stdout.endswith("FAST EXIT 0\n")


# --- never twice, never hanging --------------------------------------------------------------------


def test_a_prompt_hook_started_as_installed_imports_neither_re_nor_json_nor_typing(env, project, server, mnemo_script):
    from mnemo_mcp.installers.hook_start import hook_argv

    program, *flags = hook_argv(mnemo_script)
    out = subprocess.run(
        [program, "-X", "importtime", *flags, "hook", "UserPromptSubmit"],
        input=json.dumps(prompt(project, "webhook retries backoff")),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert json.loads(out.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit", out.stderr
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "mnemo_mcp.hooks.channel" in imported  # it did ask the server
    # `re` (with enum, functools, collections), the json package, typing, contextlib, site: none is needed.
    assert not imported & {"re", "enum", "json", "typing", "contextlib", "collections", "site"}


def test_an_event_the_hook_gave_up_on_is_never_handled_by_the_server(tmp_path):
    db = tmp_path / "m.db"
    handled = threading.Event()

    def slow(request):
        time.sleep(0.5)  # past the hook's budget: the hook stops waiting before "ready"
        return lambda: (handled.set(), {"ok": True, "output": None})[1]

    listener = channel.Listener(db, slow)
    assert listener.start()
    try:
        assert channel.ask(db, {"event": "Stop", "payload": {}}, budget_s=0.1) is None
        time.sleep(1.0)
        assert not handled.is_set()
        # The same server, ready within the budget this time, handles it.
        assert channel.ask(db, {"event": "Stop", "payload": {}}, budget_s=5.0) == {"ok": True, "output": None}
        assert handled.is_set()
    finally:
        listener.stop()


def test_a_stopping_server_finishes_the_event_it_took_before_its_store_closes_and_refuses_new_ones(tmp_path):
    db = tmp_path / "m.db"
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def handle():
        started.set()
        release.wait(5)
        finished.set()
        return {"ok": True, "output": "done"}

    listener = channel.Listener(db, lambda request: handle)
    assert listener.start()
    answers = []
    asker = threading.Thread(target=lambda: answers.append(channel.ask(db, {"event": "Stop"}, budget_s=5.0)))
    asker.start()
    assert started.wait(5)
    threading.Timer(0.3, release.set).start()
    listener.stop()  # what the server does before it closes the store
    assert finished.is_set()  # it waited for the event it took
    asker.join(5)
    assert answers == [{"ok": True, "output": "done"}]
    assert not listener._take()  # an event arriving now is the hook's to handle


def test_a_server_that_never_answers_costs_the_hook_its_budget_and_no_more(env, project, tmp_path):
    seed(env["MNEMO_DB"])
    folder = channel.socket_dir(env["MNEMO_DB"])
    os.makedirs(folder, mode=0o700, exist_ok=True)
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(os.path.join(folder, f"{os.getpid()}.sock"))
    mute.listen(8)  # accepts connections (the kernel does) and never says a word
    try:
        out = hook(
            env,
            "UserPromptSubmit",
            prompt(project, "webhook retries backoff"),
            MNEMO_HOOK_CONNECT_MS="200",
            MNEMO_INJECT_MIN_RELEVANCE_KEYWORD="0.3",
        )
        assert injected(out)  # recalled by keywords after the budget
    finally:
        mute.close()


def test_sockets_of_dead_servers_are_removed_by_the_next_hook_and_the_next_server(env, project):
    seed(env["MNEMO_DB"])
    folder = channel.socket_dir(env["MNEMO_DB"])
    os.makedirs(folder, mode=0o700, exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name in (f"{dead.pid}.sock", "999999999.sock"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(os.path.join(folder, name))
        s.close()  # the file stays; nobody listens
    hook(env, "UserPromptSubmit", prompt(project, "webhook retries backoff"))
    assert not os.path.exists(os.path.join(folder, "999999999.sock"))  # refused: gone
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(folder, f"{dead.pid}.sock"))
    s.close()
    srv = Server(env)
    try:
        assert os.listdir(folder) == [f"{os.getpid()}.sock"]  # its process is dead: gone
    finally:
        srv.close()
    assert os.listdir(folder) == []


def test_the_socket_and_its_directory_are_owner_only(env, server):
    folder = channel.socket_dir(env["MNEMO_DB"])
    assert folder == env["MNEMO_DB"] + "-sock"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(server.listener.path).st_mode) == 0o600
    os.chmod(folder, 0o755)  # widened by someone: the hook will not talk through it
    assert channel.ask(env["MNEMO_DB"], {"event": "Stop", "payload": {}}, budget_s=0.2) is None
    os.chmod(folder, 0o700)


def test_a_database_path_too_long_for_a_socket_uses_a_private_runtime_directory(tmp_path, monkeypatch):
    run = tempfile.mkdtemp(prefix="r", dir="/tmp")  # a short one, like /run/user/1000
    monkeypatch.setenv("XDG_RUNTIME_DIR", run)
    monkeypatch.delenv("TMPDIR", raising=False)
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "memory.db"
    folder = channel.socket_dir(deep)
    assert folder.startswith(os.path.join(run, f"mnemo-mcp-{os.getuid()}"))
    assert channel.socket_dir(deep) == folder  # the same for every process
    listener = channel.Listener(deep, lambda request: "not now")
    assert listener.start()
    try:
        assert stat.S_IMODE(os.stat(os.path.dirname(folder)).st_mode) == 0o700
        assert channel.ask(deep, {"event": "Stop", "payload": {}}, budget_s=0.5) is None  # "not now": not ready
    finally:
        listener.stop()
        shutil.rmtree(run)


def test_settings_for_a_hook_come_from_its_environment_only(monkeypatch):
    monkeypatch.setenv("MNEMO_INJECT_TOP_K", "7")
    assert Settings().inject_top_k == 7
    theirs = Settings.from_env({"MNEMO_INJECT_TOKENS": "12", "mnemo_extra_check_commands": '["just test"]'})
    assert (
        theirs.inject_top_k == Settings.model_fields["inject_top_k"].default
        and theirs.inject_tokens == 12
        and theirs.extra_check_commands == ["just test"]
    )


# --- real servers --------------------------------------------------------------------------------


def start_server(env: dict[str, str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mnemo_mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**env, "MNEMO_AUTO_CONSOLIDATE": "false"},
        cwd=cwd,
    )


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


@pytest.mark.slow
def test_several_servers_on_one_file_answer_hooks_and_leave_no_socket_behind(env, project):
    seed(env["MNEMO_DB"])
    folder = channel.socket_dir(env["MNEMO_DB"])
    servers = [start_server(env, project) for _ in range(2)]
    try:
        wait_for(lambda: os.path.isdir(folder) and len(os.listdir(folder)) == 2)
        only_server = {
            "MNEMO_INJECT_MIN_RELEVANCE": "0.0",
            "MNEMO_INJECT_BY_CONFIDENCE": "false",
            "MNEMO_INJECT_MIN_RELEVANCE_KEYWORD": "1.0",
            "MNEMO_INJECT_FULL_RELEVANCE_KEYWORD": "1.0",
        }
        wait_for(
            lambda: injected(hook(env, "UserPromptSubmit", prompt(project, "webhook retries"), **only_server)) != []
        )
        servers[0].send_signal(signal.SIGKILL)
        servers[0].wait(timeout=30)
        for i in range(3):  # the killed one's socket is stale; the other one answers
            assert injected(hook(env, "UserPromptSubmit", prompt(project, "webhook retries", f"k-{i}"), **only_server))
        servers[1].send_signal(signal.SIGINT)  # what Claude Code sends when it quits
        assert servers[1].wait(timeout=30) == 0
        assert b"Traceback" not in servers[1].stderr.read()
        hook(env, "UserPromptSubmit", prompt(project, "webhook retries", "last"))
        assert os.listdir(folder) == []
        assert not Path(env["MNEMO_HOOK_LOG"]).exists()
    finally:
        for proc in servers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
