"""Writing: new memories (validated, embedded in one batch, checked against near-duplicates and
updates, linked by co-occurring concepts), the same content written again, supersede, delete."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .. import validate
from ..core import dedup, injection, lifecycle, rules
from ..core.text import content_id, extract_concepts, normalize_content
from ..errors import InvalidInput
from ..models import DeleteResult, SimilarMemory, WriteResult, preview
from . import trust
from .base import Part, ServiceContext, iso, rnd
from .lifecycle import Lifecycle

DUP_COMPARED = 5  # nearest stored memories a write is compared with, word by word
SIMILAR_FLOOR = 0.6  # below this cosine nothing is the same memory or an update of it
SIMILAR_REPORTED = 3


class Writing(Part):
    def __init__(self, ctx: ServiceContext, *, lifecycle: Lifecycle):
        super().__init__(ctx)
        self.lifecycle = lifecycle

    def write(
        self,
        content: str,
        *,
        tags: list[str] | None = None,
        memory_type: str = "note",
        metadata: dict[str, Any] | None = None,
        domain: str | None = None,
        supersedes: list[str] | None = None,
        allow_duplicate: bool = False,
        source: str = "write",
        by: str = "api",
        client: str | None = None,
        now: datetime | None = None,
    ) -> WriteResult:
        """`by`: who stores it, kept as its provenance (mcp: the model through the MCP server;
        cli; capture: the hooks; import; api: a program using this class); `client`: the MCP
        client it came through, as that client names itself."""
        item = {
            "content": content,
            "tags": tags,
            "memory_type": memory_type,
            "metadata": metadata,
            "domain": domain,
            "supersedes": supersedes,
            "allow_duplicate": allow_duplicate,
            "source": source,
            "_by": by,
            "_origin": {"client": client} if client else None,
        }
        return self.write_many([item], now=now)[0]

    def write_many(self, items: Sequence[dict[str, Any]], *, now: datetime | None = None) -> list[WriteResult]:
        """Write several memories (dicts with the `write` arguments) with one embedding batch and
        one transaction: all are checked first, and either all are stored or none."""
        stamp = iso(now or self.clock())
        rows = [self._new_row(item, stamp, i if len(items) > 1 else None) for i, item in enumerate(items)]
        with self.store.db.read():
            present = {r["id"] for r in rows if self.store.get(r["id"]) is not None}
        fresh = list({r["id"]: r for r in rows if r["id"] not in present}.values())
        vectors = (
            dict(zip((r["id"] for r in fresh), self.embed_passages([r["content"] for r in fresh]))) if fresh else {}
        )
        results: list[WriteResult] = []
        with self.store.db.write():
            for i, row in enumerate(rows):
                try:
                    replaced = self._resolve_superseded(row)
                except InvalidInput as err:
                    raise InvalidInput(f"memory {i}: {err}" if len(rows) > 1 else str(err)) from None
                existing = self.store.get(row["id"])
                if existing:
                    result = self._merge_into(existing, row, stamp)
                else:
                    vector = vectors.get(row["id"])
                    if vector is None:  # deleted by another process between our two looks
                        vector = self.embedder.embed_passages([row["content"]])[0]
                    found = None if row.pop("_allow_duplicate") else self._near_duplicate(row, vector, replaced)
                    if isinstance(found, WriteResult):
                        results.append(found)
                        continue
                    self.store.insert(row, vector)
                    self._link_cooccurring(row["concepts"], stamp)
                    result = WriteResult(
                        id=row["id"],
                        created=True,
                        concepts=row["concepts"],
                        tags=row["tags"],
                        similar=found,
                        quarantined=trust.quarantine_note(row["quarantine"], row["id"]),
                    )
                if replaced:
                    self.lifecycle.supersede(replaced, result.id, stamp)
                    result.superseded = replaced
                results.append(result)
        return results

    def _new_row(self, item: dict[str, Any], stamp: str, index: int | None) -> dict[str, Any]:
        s = self.settings
        try:
            if not isinstance(item, dict) or "content" not in item:
                raise InvalidInput("each memory needs a 'content' field")
            text = normalize_content(validate.content(item["content"], s))
            if not text:
                raise InvalidInput("content is empty after trimming whitespace; pass some text")
            allow_duplicate = validate.flag(item.get("allow_duplicate", False), "allow_duplicate")
            metadata = dict(validate.metadata(item.get("metadata"), s))
            tags = validate.tags(item.get("tags"), s)
            # Captured text is redacted whatever MNEMO_SECRETS says: nobody chose to store it.
            policy = item.get("_secrets") or s.secrets
            text, metadata = validate.secrets(text, metadata, policy)
            tags = validate.secret_tags(tags, policy)
            if allow_duplicate:
                # Consolidation's merge pass leaves alone what the writer chose to keep twice.
                metadata["duplicate_allowed"] = True
            row: dict[str, Any] = {
                "id": content_id(text),
                "content": text,
                "memory_type": validate.memory_type(item.get("memory_type") or "note"),
                "domain": self._resolve_domain(validate.domain(item.get("domain"))) or self._default_domain(),
                "tags": tags,
                "metadata": metadata,
                "concepts": extract_concepts(text),
                "valence": 0.0,
                "access_count": 0,
                "retrieval_count": 0,
                "reciprocal_rank_sum": 0.0,
                "created_at": stamp,
                "updated_at": stamp,
                "tier": lifecycle.WORKING,
                "source": validate.source(item.get("source", "write")),
                "provenance": {
                    "by": validate.source(item.get("_by") or "api"),
                    "at": stamp,
                    "user": s.user,
                    **({"client": s.client} if s.client else {}),
                    **(item.get("_origin") or {}),
                    "judged": injection.VERSION,
                },
                "quarantine": trust.quarantine_for(text, stamp, tuple(s.trusted_hosts)),
                "_supersedes": validate.supersedes(item.get("supersedes")),
                "_allow_duplicate": allow_duplicate,
            }
        except InvalidInput as err:
            if index is None:
                raise
            raise InvalidInput(f"memory {index}: {err}") from None
        self._refresh_quality(row)
        return row

    def _resolve_superseded(self, row: dict[str, Any]) -> list[str]:
        """The full ids this write replaces; unknown ids reject the whole write (inside it)."""
        refs = row.pop("_supersedes")
        found, missing = self._resolve_many(refs)
        if missing:
            raise InvalidInput(f"supersedes: no memory has id {', '.join(missing)}; nothing was written")
        if row["id"] in found:
            raise InvalidInput("a memory cannot supersede itself: the new content is identical to the one it replaces")
        return found

    def _near_duplicate(
        self, row: dict[str, Any], vector: Any, replaced: list[str]
    ) -> WriteResult | list[SimilarMemory] | None:
        """The stored memory this write repeats (a WriteResult not storing it), or the stored
        memories it updates (a changed number, version, path or name: it is stored, and they are
        reported), or None."""
        s = self.settings
        if not s.dedup:
            return None
        updates: list[SimilarMemory] = []
        for mid, sim in self.lifecycle.similar_live(row["content"], vector, row["domain"], exclude_rowid=None)[
            :DUP_COMPARED
        ]:
            if mid in replaced or sim < SIMILAR_FLOOR:
                continue
            other = self.store.get(mid)
            verdict = self._dedup_verdict(row["content"], other["content"], sim)
            if verdict.kind == dedup.DUPLICATE:
                return WriteResult(
                    id=mid,
                    created=False,
                    concepts=other["concepts"],
                    tags=other["tags"],
                    tier=other["tier"],
                    duplicate_of=mid,
                    similarity=rnd(sim),
                )
            if verdict.kind == dedup.UPDATE and len(updates) < SIMILAR_REPORTED:
                updates.append(SimilarMemory(id=mid, similarity=rnd(sim), differs=verdict.differs[:8]))
        return updates or None

    def _link_cooccurring(self, concepts: list[str], stamp: str) -> None:
        """Concepts written together get a weak Hebbian link (valence untouched: no outcome yet)."""
        head = concepts[: self.settings.write_link_concepts]
        rate = self.settings.write_link_rate
        if rate <= 0:
            return
        pairs = [(a, b) for i, a in enumerate(head) for b in head[i + 1 :] if a != b]
        old = self.store.associations_between(pairs)
        rows = []
        for pair in pairs:
            weight, valence, count = old.get((min(pair), max(pair)), (0.0, 0.0, 0))
            rows.append((*pair, rules.strengthen(weight, rate), valence, count, stamp))
        self.store.put_associations(rows)

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
        return WriteResult(
            id=existing["id"],
            created=False,
            concepts=existing["concepts"],
            tags=merged,
            tier=existing["tier"],
            quarantined=trust.quarantine_note(existing["quarantine"], existing["id"]),
        )

    def delete(self, memory_id: str) -> DeleteResult:
        ref = validate.memory_ref(memory_id)
        with self.store.db.write():
            mid = self.store.resolve(ref)
            row = self.store.get(mid)
            self.store.delete(mid)
        return DeleteResult(id=mid, deleted=True, content_preview=preview(row["content"]))
