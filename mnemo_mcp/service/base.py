"""What every part of the service shares: the context (settings, store, embedder, clock) and the
helpers built on it (quality upkeep, id resolution, scopes)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..core import dedup, rules
from ..embedding import Embedder, make_embedder
from ..errors import NotFound
from ..storage.factory import open_store
from ..storage.interface import MemoryStore

if TYPE_CHECKING:  # numpy costs 50 ms to import; hook processes never need it
    import numpy as np

log = logging.getLogger("mnemo_mcp.service")


GLOBAL_DOMAIN = "global"  # memories every project's reads include
# A write or read with this domain means the person's own scope, "@<MNEMO_USER>": on a store a
# team shares, notes one keeps for oneself (editor habits, a machine's paths) that the others'
# project reads leave out. A scope organizes reads; it is not access control (roles are).
PERSONAL = "@me"


def iso(now: datetime) -> str:
    return now.astimezone(UTC).isoformat(timespec="seconds")


def rnd(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


AHEAD_KEPT = 8  # queries embedded ahead of their read and not read yet, kept per context
_EMBEDDING_THREAD: ThreadPoolExecutor | None = None
_EMBEDDING_LOCK = threading.Lock()


def _embedding_thread() -> ThreadPoolExecutor:
    global _EMBEDDING_THREAD
    with _EMBEDDING_LOCK:
        if _EMBEDDING_THREAD is None:
            _EMBEDDING_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemo-embed")
        return _EMBEDDING_THREAD


class ServiceContext:
    """What every part of the service is built from: settings, the store, the embedder and the
    clock. It binds the model to the store once, for every part."""

    def __init__(
        self,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] | None = None,
    ):
        self.settings = settings or Settings()
        self.store: MemoryStore = open_store(
            self.settings.db, self.settings.busy_timeout_ms, vector_index=self.settings.vector_index
        )
        try:
            self.embedder = embedder or make_embedder(
                self.settings.embed_model, self.settings.model_cache_dir, self.settings.embed_weights
            )
            # Name check now (cheap); the dimension is checked when the model has loaded.
            self.store.check_model(self.embedder.name, None)
        except BaseException:
            self.store.close()
            raise
        fixed = self.settings.now
        self.clock = clock or ((lambda: fixed) if fixed is not None else (lambda: datetime.now(UTC)))
        self.bound = False
        self._bind_lock = threading.Lock()
        self._ahead: dict[str, Future] = {}  # query text -> its embedding, started before its read
        self._ahead_lock = threading.Lock()
        self.weights = rules.QualityWeights(
            self.settings.quality_w_rating,
            self.settings.quality_w_access,
            self.settings.quality_w_ranking,
            self.settings.quality_w_consolidation,
        )

    def close(self) -> None:
        self.store.close()

    def embed_ahead(self, text: str) -> None:
        """Start embedding `text` now, for a read of it that comes soon (see Part._embed_query_soon).
        Only once the model is bound: binding writes, and this may run beside another thread's
        transaction."""
        if not self.bound:
            return
        future = _embedding_thread().submit(self.embedder.embed_query, text)
        with self._ahead_lock:
            self._ahead[text] = future
            while len(self._ahead) > AHEAD_KEPT:
                del self._ahead[next(iter(self._ahead))]

    def take_ahead(self, text: str) -> Future | None:
        with self._ahead_lock:
            return self._ahead.pop(text, None)

    def ensure_bound(self) -> None:
        if self.bound:
            return
        with self._bind_lock:
            if self.bound:
                return
            # Embedding a probe loads the model (surfacing load errors here) and gives its true size.
            dim = len(self.embedder.embed_query("probe"))
            self.store.bind_model(self.embedder.name, dim)
            self.bound = True


class Part:
    """One concern of the service, built from the shared context (and the peers it names)."""

    def __init__(self, ctx: ServiceContext):
        self.ctx = ctx
        self.settings = ctx.settings
        self.store = ctx.store
        self.embedder = ctx.embedder
        self.clock = ctx.clock
        self.weights = ctx.weights

    # --- embedding ---------------------------------------------------------------------

    def _ensure_bound(self) -> None:
        self.ctx.ensure_bound()

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Vectors for stored texts, with the model bound to this database first."""
        self.ctx.ensure_bound()
        return self.embedder.embed_passages(texts)

    def _embed_query(self, text: str) -> np.ndarray:
        self.ctx.ensure_bound()
        return self.embedder.embed_query(text)

    def _embed_query_soon(self, text: str) -> Callable[[], np.ndarray]:
        """Start embedding `text` on the process's embedding thread -> a call that waits for
        the vector. onnxruntime and SQLite both release the GIL, so a read's keyword pass runs
        meanwhile. The model is loaded and bound here first: binding may write, and the caller
        will be inside a read transaction when it waits."""
        self.ctx.ensure_bound()
        ahead = self.ctx.take_ahead(text)  # embedded ahead of this read (ServiceContext.embed_ahead)
        return (ahead or _embedding_thread().submit(self.embedder.embed_query, text)).result

    # --- quality -----------------------------------------------------------------------

    def _quality_fields(self, row: dict[str, Any]) -> tuple[float, dict[str, float]]:
        meta = row["metadata"]
        components = rules.quality_components(
            rating_sum=float(meta.get("rating_sum", 0.0)),
            rating_count=int(meta.get("rating_count", 0)),
            access_count=row["access_count"],
            reciprocal_rank_sum=row["reciprocal_rank_sum"],
            retrievals=row["retrieval_count"],
            consolidation=float(meta.get("quality_components", {}).get("consolidation_score", rules.NEUTRAL_QUALITY)),
        )
        return rules.quality_score(components, self.weights), components

    def _quality_with_consolidation(self, row: dict[str, Any], consolidation: float) -> float:
        """The quality this memory would have with another consolidation component."""
        _, components = self._quality_fields(row)
        return rules.quality_score({**components, "consolidation_score": consolidation}, self.weights)

    def _refresh_quality(self, row: dict[str, Any]) -> float:
        """Recompute quality into row['metadata'] and row['quality'] (caller persists)."""
        quality, components = self._quality_fields(row)
        row["metadata"]["quality_score"] = round(quality, 6)
        row["metadata"]["quality_components"] = {k: round(v, 6) for k, v in components.items()}
        row["quality"] = quality
        return quality

    def _dedup_verdict(self, new: str, old: str, similarity: float) -> dedup.Verdict:
        """How a new text relates to a stored one (duplicate / update / different), by the
        thresholds in the settings: writing and consolidation must judge alike."""
        s = self.settings
        return dedup.compare(
            new,
            old,
            similarity,
            words_alike=s.duplicate_words,
            meaning_alike=s.duplicate_similarity,
            synonyms_alike=s.duplicate_synonyms,
        )

    def _resolve_many(self, refs: list[str]) -> tuple[list[str], list[str]]:
        """Full ids and unique prefixes -> (the full ids found, in order, once each; the refs not
        found). Full ids are looked up together, prefixes one by one."""
        full = [r.strip().lower() for r in refs if len(r.strip()) == 64]
        stored = self.store.existing_ids(full) if full else set()
        found, missing = [], []
        for ref in refs:
            key = ref.strip().lower()
            if len(key) == 64 and key in stored:
                mid = key
            else:
                try:
                    mid = self.store.resolve(ref)
                except NotFound:
                    missing.append(ref)
                    continue
            if mid not in found:
                found.append(mid)
        return found, missing

    def _resolve_domain(self, domain: str | None) -> str | None:
        return f"@{self.settings.user}" if domain == PERSONAL else domain

    def _default_domain(self) -> str:
        """Where a write without a domain goes: the current project when scoped, else nowhere."""
        if self.settings.project and self.settings.scope == "project":
            return self.settings.project
        return ""

    def _read_scope(self, domain: str | None) -> list[str] | None:
        """The domains a read searches: the one asked for ('@me': the person's own); else, scoped
        to a project, that project's memories plus global ones (domain 'global', or none) and the
        person's own; else every domain."""
        if domain is not None:
            return [self._resolve_domain(domain) or domain]
        project = self.settings.project
        if project and self.settings.scope == "project":
            return list(dict.fromkeys([project, GLOBAL_DOMAIN, "", f"@{self.settings.user}"]))
        return None
