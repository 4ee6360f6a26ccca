"""The one service API that every interface (MCP server, CLI) calls. No SQL here, no I/O but
through the store and the embedder; `now` can be passed to every operation that stamps time."""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from . import validate
from .config import Settings
from .core import rules
from .core.text import content_id, extract_concepts, fts_match_expression, normalize_content, query_words
from .embedding import Embedder, make_embedder
from .errors import InvalidInput, NotFound
from .models import (
    DeleteResult,
    FeedbackEvent,
    FeedbackResult,
    ImportResult,
    MemoryItem,
    QualityReport,
    RateResult,
    RatingEntry,
    ReadResult,
    StatsResult,
    ValenceChange,
    WriteResult,
    preview,
)
from .storage.store import Store

log = logging.getLogger(__name__)

RATING_HISTORY_LIMIT = 20
LEXICAL_SCORED = 2000  # keyword matches scored per read (see _candidates)
# Pairs per memory in one Hebbian step: query concepts x memory concepts, bounded so one call
# stays a few hundred row writes at most.
ASSOC_CONCEPTS = 8


def _iso(now: datetime) -> str:
    return now.astimezone(timezone.utc).isoformat(timespec="seconds")


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


@dataclass
class Candidate:
    rowid: int
    cosine: float | None = None
    bm25: float | None = None


class MemoryService:
    def __init__(
        self,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] | None = None,
    ):
        self.settings = settings or Settings()
        self.store = Store(self.settings.db, self.settings.busy_timeout_ms)
        try:
            self.embedder = embedder or make_embedder(self.settings.embed_model, self.settings.model_cache_dir)
            # Name check now (cheap); the dimension is checked when the model has loaded.
            self.store.check_model(self.embedder.name, None)
        except BaseException:
            self.store.close()
            raise
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self._bound = False
        self._bind_lock = threading.Lock()
        self.weights = rules.QualityWeights(
            self.settings.quality_w_rating,
            self.settings.quality_w_access,
            self.settings.quality_w_ranking,
            self.settings.quality_w_consolidation,
        )

    def close(self) -> None:
        self.store.close()

    # --- embedding ---------------------------------------------------------------------

    def warm_up(self) -> None:
        """Load the model and bind it to the database (call from a background thread)."""
        try:
            self._ensure_bound()
        except Exception as err:
            log.warning("warm-up failed: %s", err)

    def _ensure_bound(self) -> None:
        if self._bound:
            return
        with self._bind_lock:
            if self._bound:
                return
            # Embedding a probe loads the model (surfacing load errors here) and gives its true size.
            dim = len(self.embedder.embed_query("probe"))
            self.store.bind_model(self.embedder.name, dim)
            self._bound = True

    def _embed_passages(self, texts: list[str]) -> np.ndarray:
        self._ensure_bound()
        return self.embedder.embed_passages(texts)

    def _embed_query(self, text: str) -> np.ndarray:
        self._ensure_bound()
        return self.embedder.embed_query(text)

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

    def _refresh_quality(self, row: dict[str, Any]) -> float:
        """Recompute quality into row['metadata'] and row['quality'] (caller persists)."""
        quality, components = self._quality_fields(row)
        row["metadata"]["quality_score"] = round(quality, 6)
        row["metadata"]["quality_components"] = {k: round(v, 6) for k, v in components.items()}
        row["quality"] = quality
        return quality

    # --- write -------------------------------------------------------------------------

    def write(
        self,
        content: str,
        tags: list[str] | None = None,
        memory_type: str = "note",
        metadata: dict[str, Any] | None = None,
        domain: str | None = None,
        *,
        now: datetime | None = None,
    ) -> WriteResult:
        item = {"content": content, "tags": tags, "memory_type": memory_type, "metadata": metadata, "domain": domain}
        return self.write_many([item], now=now)[0]

    def write_many(self, items: Sequence[dict[str, Any]], *, now: datetime | None = None) -> list[WriteResult]:
        """Write several memories (dicts with the `write` arguments) with one embedding batch and
        one transaction: all are checked first, and either all are stored or none."""
        stamp = _iso(now or self.clock())
        rows = [self._new_row(item, stamp, i if len(items) > 1 else None) for i, item in enumerate(items)]
        with self.store.db.read():
            present = {r["id"] for r in rows if self.store.get(r["id"]) is not None}
        fresh = list({r["id"]: r for r in rows if r["id"] not in present}.values())
        vectors = dict(zip((r["id"] for r in fresh), self._embed_passages([r["content"] for r in fresh]))) if fresh else {}
        results: list[WriteResult] = []
        with self.store.db.write():
            for row in rows:
                existing = self.store.get(row["id"])
                if existing:
                    results.append(self._merge_into(existing, row, stamp))
                    continue
                vector = vectors.get(row["id"])
                if vector is None:  # deleted by another process between our two looks
                    vector = self.embedder.embed_passages([row["content"]])[0]
                self.store.insert(row, vector)
                results.append(WriteResult(id=row["id"], created=True, concepts=row["concepts"], tags=row["tags"]))
        return results

    def _new_row(self, item: dict[str, Any], stamp: str, index: int | None) -> dict[str, Any]:
        s = self.settings
        try:
            if not isinstance(item, dict) or "content" not in item:
                raise InvalidInput("each memory needs a 'content' field")
            text = normalize_content(validate.content(item["content"], s))
            if not text:
                raise InvalidInput("content is empty after trimming whitespace; pass some text")
            row: dict[str, Any] = {
                "id": content_id(text),
                "content": text,
                "memory_type": validate.memory_type(item.get("memory_type") or "note"),
                "domain": validate.domain(item.get("domain")) or "",
                "tags": validate.tags(item.get("tags"), s),
                "metadata": dict(validate.metadata(item.get("metadata"), s)),
                "concepts": extract_concepts(text),
                "valence": 0.0,
                "access_count": 0,
                "retrieval_count": 0,
                "reciprocal_rank_sum": 0.0,
                "created_at": stamp,
                "updated_at": stamp,
            }
        except InvalidInput as err:
            if index is None:
                raise
            raise InvalidInput(f"memory {index}: {err}") from None
        self._refresh_quality(row)
        return row

    def _merge_into(self, existing: dict[str, Any], row: dict[str, Any], stamp: str) -> WriteResult:
        """Same content written again: merge tags and user metadata, keep everything learned."""
        limit = self.settings.max_tags
        merged = existing["tags"] + [t for t in row["tags"] if t not in existing["tags"]]
        if len(merged) > limit:
            raise InvalidInput(
                f"this memory already has {len(existing['tags'])} tags; adding these would make "
                f"{len(merged)}, over the limit of {limit}"
            )
        user_meta = {k: v for k, v in row["metadata"].items() if k not in validate.RESERVED_METADATA_KEYS}
        new_meta = {**existing["metadata"], **user_meta}
        if merged != existing["tags"] or new_meta != existing["metadata"]:
            self.store.update(existing["id"], tags=merged, metadata=new_meta, updated_at=stamp)
        return WriteResult(id=existing["id"], created=False, concepts=existing["concepts"], tags=merged)

    # --- read --------------------------------------------------------------------------

    def read(
        self,
        query: str,
        top_k: int = 5,
        tags: list[str] | None = None,
        domain: str | None = None,
        min_relevance: float | None = None,
        include_archived: bool = False,
        *,
        now: datetime | None = None,
        record: bool = True,
    ) -> ReadResult:
        s = self.settings
        query = validate.text(query, "query", s.max_content_chars)
        k = validate.top_k(top_k, s)
        tag_filter = validate.tags(tags, s, what="tags filter") or None
        dom = validate.domain(domain)
        floor = None if min_relevance is None else validate.unit_number(min_relevance, "min_relevance", 0.0, 1.0)
        if not isinstance(include_archived, bool):
            raise InvalidInput("include_archived must be true or false")
        q_concepts = extract_concepts(query)
        qvec = self._embed_query(query)
        ranked = self._rank(query, qvec, q_concepts, k, tag_filter, dom, include_archived)
        if floor is not None:
            ranked = [r for r in ranked if r[1] >= floor]
        ranked = ranked[:k]

        read_id = secrets.token_hex(8)
        if not record:
            with self.store.db.read():
                rows = self.store.by_rowids([r[0] for r in ranked])
            items = [self._item(rows[rowid], rel, score) for rowid, rel, score in ranked if rowid in rows]
            return ReadResult(read_id=read_id, query_concepts=q_concepts, items=items)
        stamp = _iso(now or self.clock())
        items = []
        with self.store.db.write():
            rows = self.store.by_rowids([r[0] for r in ranked])
            for rowid, rel, score in ranked:
                if rowid not in rows:  # deleted by another process since ranking
                    continue
                row = rows[rowid]
                self._count_retrieval(row, len(items) + 1, stamp)
                items.append(self._item(row, rel, score))
            self.store.record_read(
                {
                    "id": read_id,
                    "query": query,
                    "query_concepts": q_concepts,
                    "domain": dom,
                    "results": [[it.id, i] for i, it in enumerate(items, start=1)],
                    "created_at": stamp,
                },
                keep=s.read_log_limit,
            )
        return ReadResult(read_id=read_id, query_concepts=q_concepts, items=items)

    def _count_retrieval(self, row: dict[str, Any], rank: int, stamp: str) -> None:
        """A read returned this memory at `rank`: update its usage and quality (inside a write)."""
        row["access_count"] += 1
        row["retrieval_count"] += 1
        row["reciprocal_rank_sum"] += 1.0 / rank
        self._refresh_quality(row)
        self.store.update(
            row["id"],
            access_count=row["access_count"],
            retrieval_count=row["retrieval_count"],
            reciprocal_rank_sum=row["reciprocal_rank_sum"],
            last_accessed_at=stamp,
            quality=row["quality"],
            metadata=row["metadata"],
        )

    def _item(self, row: dict[str, Any], rel: float, score: float) -> MemoryItem:
        return MemoryItem(
            id=row["id"],
            content=row["content"],
            tags=row["tags"],
            memory_type=row["memory_type"],
            domain=row["domain"] or None,
            relevance=_r(rel),
            valence=_r(row["valence"]),
            quality=_r(row["quality"]),
            score=_r(score),
            created_at=row["created_at"],
            archived=row["archived"],
        )

    def _candidates(
        self, query: str, qvec: np.ndarray, pool: int, tags: list[str] | None, domain: str | None, archived: bool
    ) -> tuple[dict[int, Candidate], float]:
        """Union of vector and keyword candidates, each with both scores filled in."""
        st = self.store
        words = query_words(query)
        match = fts_match_expression(words)
        tokens = list(dict.fromkeys(t for w in words for t in st.tokenize(w)))
        cands: dict[int, Candidate] = {}
        for rowid, cos in st.knn(qvec, pool, domain=domain, include_archived=archived, tags=tags):
            cands[rowid] = Candidate(rowid, cosine=cos)
        idf_total = 0.0
        if match and tokens:
            # FTS5 scores every match to sort them anyway, so one pass that returns up to
            # LEXICAL_SCORED rows costs about what the top `pool` cost: the first `pool` are keyword
            # candidates, the rest give vector candidates their BM25. (A second query filtered by
            # rowid took 14 ms of a 15 ms read.) A vector candidate below that depth keeps BM25 None.
            scored = st.fts(match, max(pool, LEXICAL_SCORED), domain=domain, include_archived=archived, tags=tags)
            for i, (rowid, bm) in enumerate(scored):
                if i < pool:
                    cands.setdefault(rowid, Candidate(rowid)).bm25 = bm
                elif rowid in cands:
                    cands[rowid].bm25 = bm
            total, counts = st.term_document_counts(tokens)
            idf_total = sum(rules.fts5_idf(total, n) for n in counts.values())
        missing_cos = [c.rowid for c in cands.values() if c.cosine is None]
        for rowid, cos in st.cosines(qvec, missing_cos).items():
            cands[rowid].cosine = cos
        return cands, idf_total

    def _rank(
        self,
        query: str,
        qvec: np.ndarray,
        q_concepts: list[str],
        k: int,
        tags: list[str] | None,
        domain: str | None,
        archived: bool,
    ) -> list[tuple[int, float, float]]:
        """Every candidate as (rowid, relevance, score), best first."""
        s = self.settings
        pool = max(s.candidates, 2 * k)
        with self.store.db.read():
            cands, idf_total = self._candidates(query, qvec, pool, tags, domain, archived)
            rows = self.store.scoring_rows(cands)
            cue_map = self.store.cue_values([r["id"] for r in rows.values()], q_concepts) if s.boost_enabled else {}
            concept_weights = self._concept_weights(q_concepts) if cue_map else {}
        out = []
        for rowid, c in cands.items():
            row = rows.get(rowid)
            if row is None:
                continue
            rel = rules.relevance(
                rules.semantic_score(c.cosine, s.sem_floor, s.sem_ceil),
                rules.lexical_score(c.bm25, idf_total),
                s.sem_weight,
            )
            score = rel
            if s.boost_enabled:
                explicit = row["feedback_count"] + row["rating_count"]
                g = rules.global_signal(row["valence"], row["quality"], explicit, s.valence_share)
                ctx = rules.context_signal(cue_map.get(row["id"], {}), concept_weights, s.context_sharpness)
                score = rules.final_score(
                    rel,
                    g,
                    ctx,
                    global_weight=s.global_weight,
                    context_weight=s.context_weight,
                    context_gate=s.context_gate,
                    context_gate_floor=s.context_gate_floor,
                )
            out.append((rowid, rel, score, row["created_at"], row["id"]))
        out.sort(key=lambda t: (-t[2], -t[1], t[3], t[4]))
        return [(rowid, rel, score) for rowid, rel, score, _, _ in out]

    def _concept_weights(self, concepts: list[str]) -> dict[str, float]:
        """Each concept's specificity: the IDF of its rarest token in the full-text index."""
        tokens = {c: self.store.tokenize(c) for c in concepts}
        total, counts = self.store.term_document_counts(sorted({t for ts in tokens.values() for t in ts}))
        return {
            c: max((rules.concept_weight(total, counts[t]) for t in ts), default=0.0) for c, ts in tokens.items()
        }

    # --- feedback ----------------------------------------------------------------------

    def _resolve_many(self, refs: list[str]) -> tuple[list[str], list[str]]:
        found, missing = [], []
        for ref in refs:
            try:
                mid = self.store.resolve(ref)
            except NotFound:
                missing.append(ref)
                continue
            if mid not in found:
                found.append(mid)
        return found, missing

    def feedback(
        self,
        memory_ids: list[str],
        outcome: float,
        read_id: str | None = None,
        query_concepts: list[str] | None = None,
        *,
        source: str = "memory_feedback",
        now: datetime | None = None,
    ) -> FeedbackResult:
        s = self.settings
        refs = validate.memory_refs(memory_ids)
        value = validate.unit_number(outcome, "outcome", -1.0, 1.0)
        concepts = validate.concepts(query_concepts)
        if read_id is not None and (not isinstance(read_id, str) or not read_id.strip()):
            raise InvalidInput("read_id must be the read_id string returned by memory_read")
        stamp = _iso(now or self.clock())
        updated: list[ValenceChange] = []
        links = 0
        cue_updates = 0
        with self.store.db.write():
            if read_id is not None:
                read = self.store.get_read(read_id.strip())
                if read is None:
                    raise InvalidInput(
                        f"no read has read_id {read_id[:40]!r} (only the last {s.read_log_limit} reads are kept); "
                        "pass query_concepts instead, or omit read_id"
                    )
                if concepts is None:
                    concepts = read["query_concepts"]
            found, missing = self._resolve_many(refs)
            if not found:
                raise NotFound(f"none of the memory_ids exist: {', '.join(missing)}; nothing was changed")
            for mid in found:
                row = self.store.get(mid)
                before = row["valence"]
                after = rules.delta_rule(before, value, s.learning_rate)
                meta = row["metadata"]
                meta["last_outcome"] = round(value, 4)
                meta["feedback_source"] = source
                self.store.update(
                    mid, valence=after, feedback_count=row["feedback_count"] + 1, metadata=meta, updated_at=stamp
                )
                self.store.add_feedback_event(
                    {
                        "memory_id": mid,
                        "read_id": read_id,
                        "outcome": value,
                        "rate": s.learning_rate,
                        "valence_before": before,
                        "valence_after": after,
                        "source": source,
                        "created_at": stamp,
                    }
                )
                updated.append(ValenceChange(id=mid, valence_before=_r(before, 6), valence_after=_r(after, 6)))
                if concepts:
                    cue_updates += self._teach_cues(mid, concepts, value, stamp)
                    links += self._hebbian(concepts, row["concepts"], value, stamp)
        return FeedbackResult(
            updated=updated, not_found=missing, associations_strengthened=links, context_links_updated=cue_updates
        )

    def _teach_cues(self, memory_id: str, concepts: list[str], outcome: float, stamp: str) -> int:
        for concept in concepts:
            old = self.store.get_cue(memory_id, concept)
            value, count = old if old else (0.0, 0)
            self.store.put_cue(
                memory_id, concept, rules.link_update(value, count, outcome, self.settings.context_rate), count + 1, stamp
            )
        return len(concepts)

    def _hebbian(self, query_concepts: list[str], memory_concepts: list[str], outcome: float, stamp: str) -> int:
        """Co-activation strengthens concept links; their valence follows the outcome."""
        n = 0
        for a in query_concepts[:ASSOC_CONCEPTS]:
            for b in memory_concepts[:ASSOC_CONCEPTS]:
                if a == b:
                    continue
                old = self.store.get_association(a, b)
                weight, valence, count = old if old else (0.0, 0.0, 0)
                self.store.put_association(
                    a,
                    b,
                    rules.strengthen(weight, self.settings.association_rate),
                    rules.delta_rule(valence, outcome, self.settings.association_rate),
                    count + 1,
                    stamp,
                )
                n += 1
        return n

    # --- ratings and quality -----------------------------------------------------------

    def rate(self, memory_id: str, rating: int, reason: str | None = None, *, now: datetime | None = None) -> RateResult:
        ref = validate.memory_ref(memory_id)
        value = validate.rating(rating)
        if reason is not None:
            reason = validate.text(reason, "reason", 500, allow_empty=True).strip() or None
        stamp = _iso(now or self.clock())
        with self.store.db.write():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            meta = row["metadata"]
            meta["user_rating"] = value
            meta["outcome"] = {1: "positive", -1: "negative", 0: "neutral"}[value]
            meta["feedback_source"] = "rate_memory"
            meta["rating_sum"] = float(meta.get("rating_sum", 0.0)) + value
            meta["rating_count"] = int(meta.get("rating_count", 0)) + 1
            history = list(meta.get("rating_history", []))
            history.append({"rating": value, "reason": reason, "at": stamp})
            meta["rating_history"] = history[-RATING_HISTORY_LIMIT:]
            quality = self._refresh_quality(row)
            self.store.update(mid, metadata=meta, quality=quality, updated_at=stamp)
        return RateResult(id=mid, user_rating=value, quality_score=_r(quality), rating_count=meta["rating_count"])

    def quality(self, memory_id: str) -> QualityReport:
        ref = validate.memory_ref(memory_id)
        with self.store.db.read():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            events = self.store.feedback_events(mid, limit=10)
        quality, components = self._quality_fields(row)
        meta = row["metadata"]
        return QualityReport(
            id=mid,
            content_preview=preview(row["content"]),
            quality_score=_r(quality),
            components={k: _r(v) for k, v in components.items()},
            valence=_r(row["valence"]),
            access_count=row["access_count"],
            retrieval_count=row["retrieval_count"],
            feedback_count=row["feedback_count"],
            rating_count=int(meta.get("rating_count", 0)),
            user_rating=meta.get("user_rating"),
            rating_history=[RatingEntry(**h) for h in meta.get("rating_history", [])],
            recent_feedback=[
                FeedbackEvent(
                    outcome=e["outcome"],
                    valence_after=_r(e["valence_after"]),
                    read_id=e["read_id"],
                    source=e["source"],
                    at=e["created_at"],
                )
                for e in events
            ],
            archived=row["archived"],
        )

    def stats(self) -> StatsResult:
        with self.store.db.read():
            st = self.store.stats()
            bound = (self.store.get_meta("embedding_model"), self.store.get_meta("embedding_dim"))
        return StatsResult(
            total=st["total"],
            archived=st["archived"],
            avg_valence=_r(st["avg_valence"]),
            avg_quality=_r(st["avg_quality"]),
            quality_histogram=st["quality_histogram"],
            by_type=st["by_type"],
            by_domain={(k or "(none)"): v for k, v in st["by_domain"].items()},
            feedback_events=st["feedback_events"],
            associations=st["associations"],
            db_size_bytes=st["db_size_bytes"],
            embedding_model=bound[0] or self.embedder.name,
            embedding_dim=int(bound[1]) if bound[1] else self.embedder.dim,
        )

    def delete(self, memory_id: str) -> DeleteResult:
        ref = validate.memory_ref(memory_id)
        with self.store.db.write():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            self.store.delete(mid)
        return DeleteResult(id=mid, deleted=True, content_preview=preview(row["content"]))

    # --- export / import (mnemo_mcp/backup.py) ---------------------------------------------

    def export(self) -> Iterator[dict[str, Any]]:
        """Every memory with its learned state, then feedback events and links: JSON objects."""
        from .backup import export_records

        return export_records(self)

    def import_records(self, records: Iterable[dict[str, Any]], batch: int = 64) -> ImportResult:
        """Load an export; memories already present (same id) are kept as they are."""
        from .backup import import_records

        return import_records(self, records, batch)
