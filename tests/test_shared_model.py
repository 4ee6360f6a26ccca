"""Many sessions on one laptop: the bundled model keeps its int8 weights int8 (vectors within
cosine 0.999 of the float model's, and the float model when that cannot be had), and the servers
of one database share one loaded model over the hook socket; whoever goes, a session still works."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_hook_channel import hook, wait_for

from mnemo_mcp import embedding, quantized
from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import (
    INT8_FILE,
    INT8_STAMP,
    SPINNING,
    BundledModel,
    FastEmbedEmbedder,
    prepare_default_model,
)
from mnemo_mcp.hooks import channel
from mnemo_mcp.hooks.shared_model import SharedEmbedder
from mnemo_mcp.service import MemoryService

TEXTS = [
    "The checkout end-to-end test fails randomly on CI.",
    "Use a connection pool of 20 for Postgres and close idle connections after 30 seconds.",
    "we keep getting 'too many clients' from the database when traffic spikes",
    "Caroline went to the support group yesterday.",
    "Les chaînes françaises ne s'affichent pas après modification des fichiers de traduction.",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return prepare_default_model(tmp_path_factory.mktemp("models"), "int8")


# --- int8 weights ------------------------------------------------------------------------------


def test_the_int8_graph_keeps_the_weights_int8_and_its_vectors_match_the_float_models(folder):
    import onnx
    from onnx import TensorProto

    graph = onnx.load(str(folder / INT8_FILE)).graph
    floats = sum(np.prod(i.dims) * 4 for i in graph.initializer if i.data_type == TensorProto.FLOAT)
    assert any(n.op_type == "MatMulNBits" for n in graph.node)
    assert floats < 8 << 20  # the per-block scales, layer norms and biases; not the 90 MB of weights
    int8 = BundledModel(folder, weights="int8")
    float32 = BundledModel(folder, weights="float32")
    assert (int8.weights, float32.weights) == ("int8", "float32")
    cosines = (int8._embed(TEXTS) * float32._embed(TEXTS)).sum(axis=1)
    assert cosines.min() >= 0.999
    assert cosines.min() < 1.0 - 1e-7  # it is the other graph that ran (its numbers differ a little)
    assert json.loads((folder / INT8_STAMP).read_text())["min_cosine"] >= 0.999


def test_the_bundled_models_worker_threads_sleep_between_queries_instead_of_spinning(folder):
    # Spinning kept a core busy after every query, which the hook process, the MCP client and
    # other sessions' servers then waited for.
    for weights in ("int8", "float32"):
        options = BundledModel(folder, weights=weights)._session.get_session_options()
        assert options.get_session_config_entry(SPINNING) == "0"


def test_a_model_the_rewrite_does_not_know_is_refused(tmp_path, folder):
    with pytest.raises(ValueError, match="no int8 weights"):
        quantized.write_int8_model(folder / INT8_FILE, tmp_path / "again.onnx")  # already rewritten


@pytest.mark.parametrize("failure", ["rewrite fails", "vectors differ"])
def test_when_the_int8_graph_cannot_be_had_the_float_model_is_used_and_that_is_decided_once(
    tmp_path, monkeypatch, failure
):
    if failure == "rewrite fails":

        def broken(src, dst):
            raise RuntimeError("this onnxruntime has no 8-bit MatMulNBits")

        monkeypatch.setattr(quantized, "write_int8_model", broken)
    else:
        monkeypatch.setattr(embedding, "INT8_MIN_COSINE", 1.01)
    folder = prepare_default_model(tmp_path, "int8")
    assert not (folder / INT8_FILE).exists()
    assert "failed" in json.loads((folder / INT8_STAMP).read_text())
    model = FastEmbedEmbedder(cache_dir=tmp_path, weights="int8")
    assert len(model.embed_query("still works")) == 384 and model._model.weights == "float32"
    monkeypatch.undo()
    prepare_default_model(tmp_path, "int8")  # stamped: not tried again at every start
    assert not (folder / INT8_FILE).exists()


# --- one model for the servers of a database ------------------------------------------------------


def _server(db: Path, tmp_path: Path) -> subprocess.Popen:
    """A real MCP server of `db` with the bundled model (it opens its store a second after start
    without a client), as Claude Code starts one per session."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH", "LANG")}
    env |= {"MNEMO_DB": str(db), "MNEMO_AUTO_CONSOLIDATE": "false", "MNEMO_AUTO_BACKUP": "false"}
    env |= {"MNEMO_MODEL_CACHE_DIR": str(Settings(db=db).model_cache_dir)}
    return subprocess.Popen(
        [sys.executable, "-m", "mnemo_mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


def _host_pid(lock: Path) -> int | None:
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        text = os.read(fd, 32).decode()
        return int(text) if text.isdigit() else 0  # held, its pid not written yet
    else:
        return None
    finally:
        os.close(fd)


def _has_onnxruntime(pid: int) -> bool:
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


def _lock_of(db: Path) -> Path:
    probe = SharedEmbedder(FastEmbedEmbedder(), db)
    return Path(probe._lock_path)


def _prompt_hook(db: Path, project: Path, text: str) -> str:
    """A UserPromptSubmit hook as Claude Code runs it: the newest server of `db` answers it."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH", "LANG")}
    env |= {"MNEMO_DB": str(db), "MNEMO_HOOK_LOG": str(db) + ".hooks.log"}
    # By meaning only: in full from any relevance; keywords (the hook alone) would show nothing.
    env |= {
        "MNEMO_INJECT_BY_CONFIDENCE": "false",
        "MNEMO_INJECT_FULL_RELEVANCE": "0.0",
        "MNEMO_INJECT_MIN_RELEVANCE": "0.0",
    }
    env |= {"MNEMO_INJECT_MIN_RELEVANCE_KEYWORD": "1.0", "MNEMO_INJECT_FULL_RELEVANCE_KEYWORD": "1.0"}
    payload = {"session_id": text[:8], "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": text}
    done = hook(env, "UserPromptSubmit", payload)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _recalled(db: Path, project: Path, text: str) -> str:
    """The prompt hook's output once a server answers it by meaning (a server still starting
    leaves the prompt to the hook, which here shows nothing)."""
    deadline = time.monotonic() + 60
    while not (out := _prompt_hook(db, project, text)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc to see what a process loaded")
def test_the_second_server_embeds_through_the_first_and_a_third_takes_over_when_it_is_killed(tmp_path, project):
    db = tmp_path / "shared.db"
    svc = MemoryService(Settings(db=db, project="shop-api", auto_consolidate=False), FastEmbedEmbedder())
    svc.write(TEXTS[1])
    svc.close()
    lock = _lock_of(db)
    local = FastEmbedEmbedder().embed_passages(TEXTS)
    first = _server(db, tmp_path)
    procs = [first]
    try:
        wait_for(lambda: lock.exists() and _host_pid(lock) == first.pid, timeout=60)
        second = _server(db, tmp_path)
        procs.append(second)
        wait_for(lambda: os.path.exists(channel.socket_of(db, second.pid)), timeout=60)
        # the newest server (the second, once up) answers the prompt by meaning, with the first's model
        assert "connection pool" in _recalled(db, project, TEXTS[2])
        time.sleep(1.0)
        assert "connection pool" in _prompt_hook(db, project, TEXTS[2] + ", again")
        assert _has_onnxruntime(first.pid) and not _has_onnxruntime(second.pid)
        client = SharedEmbedder(FastEmbedEmbedder(), db)  # this process has no socket: never the host
        assert np.allclose(client.embed_passages(TEXTS), local, atol=1e-6)
        assert client.asked == len(TEXTS) and not client.loaded_here

        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert _host_pid(lock) is None  # the kernel let go of the dead host's lock
        third = _server(db, tmp_path)
        procs.append(third)
        wait_for(lambda: _host_pid(lock) == third.pid, timeout=60)  # nobody hosted: the new server loads and hosts
        assert "connection pool" in _recalled(db, project, TEXTS[2] + " after the first has gone")
        fresh = SharedEmbedder(FastEmbedEmbedder(), db)
        assert np.allclose(fresh.embed_query(TEXTS[1]), local[1], atol=1e-6) and fresh.asked == 1
        assert not _has_onnxruntime(second.pid)  # the second went on asking, now the third
        third.send_signal(signal.SIGKILL)
        third.wait(timeout=30)
        assert "connection pool" in _recalled(db, project, TEXTS[2] + " once more")  # alone, it loads its own
        wait_for(lambda: _host_pid(lock) == second.pid, timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs:
            try:
                assert proc.wait(timeout=30) in (0, -signal.SIGKILL)
            finally:
                if proc.poll() is None:
                    proc.kill()
            assert b"Traceback" not in proc.stderr.read()


def test_a_host_refuses_texts_for_another_model_or_malformed_requests(tmp_path):
    db = tmp_path / "h.db"
    listener = channel.Listener(db, lambda request: "no events here")
    assert listener.start()
    try:
        host = SharedEmbedder(FastEmbedEmbedder(), db)
        host.host_through(listener)
        assert host._take_host() and host.hosting
        path = channel.socket_of(db, os.getpid())
        other = channel.exchange(path, {"embed": "query", "model": "some/other-model|int8", "texts": ["x"]}, 10)
        assert other["ok"] is False and "not some/other-model" in other["why"]
        bad = channel.exchange(path, {"embed": "query", "model": host._identity, "texts": [3]}, 10)
        assert bad["ok"] is False
        good = channel.exchange(path, {"embed": "query", "model": host._identity, "texts": ["webhook retries"]}, 60)
        assert good["ok"] is True and good["dim"] == 384
        host.release()
        assert not host.hosting and _host_pid(Path(host._lock_path)) is None
    finally:
        listener.stop()
