"""Transfer: the whole store out and back in as JSON objects (one per line in files),
model-independent (no vectors: import re-embeds), so a store can move to another file or another
model, or be kept as a readable copy."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .. import validate
from ..core import injection
from ..core.secrets import masked, scrubbed, secret_like_word
from ..core.text import content_id, extract_concepts, normalize_content
from ..errors import InvalidInput
from ..models import ImportResult
from ..storage.interface import FEEDBACK_EVENT_FIELDS
from .base import Part
from .trust import quarantine_for

EXPORT_FORMAT = "mnemo-export"
EXPORT_VERSION = 1


def export_records(svc: Part) -> Iterator[dict[str, Any]]:
    """Every memory with its learned state, then feedback events, links: one JSON object each."""
    with svc.store.db.read():
        bound = svc.store.bound_model()
        memories = list(svc.store.all_memories())
        events = svc.store.feedback_events()
        assoc = svc.store.associations()
        cues = svc.store.cues()
    yield {
        "type": "header",
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "embedding_model": bound[0] if bound else None,
    }
    for m in memories:
        m = dict(m)
        m.pop("rowid")
        yield {"type": "memory", **_masked_record(m)}
    for e in events:
        e = dict(e)
        e.pop("seq")
        yield {"type": "feedback_event", **e}
    for a in assoc:
        if not (secret_like_word(a["a"]) or secret_like_word(a["b"])):
            yield {"type": "association", **a}
    for c in cues:
        if not secret_like_word(c["concept"]):
            yield {"type": "cue", **c}


def _masked_record(m: dict[str, Any]) -> dict[str, Any]:
    """An exported memory carries no secret, whatever the store holds (`MNEMO_SECRETS=allow`):
    its text, tags and metadata masked; the id stays (it names the memory), marked `redacted`
    so that the import knows why the id is no longer the text's hash."""
    out = {**m, "content": masked(m["content"]), "tags": scrubbed(m["tags"]), "metadata": scrubbed(m["metadata"])}
    if out["content"] != m["content"]:
        out["concepts"] = [c for c in m.get("concepts") or [] if not secret_like_word(c)]
    if content_id(out["content"]) != m["id"]:
        out["redacted"] = True
    return out


def import_records(svc: Part, records: Iterable[dict[str, Any]], batch: int = 64) -> ImportResult:
    """Load an export. Memories already present (same id) are kept as they are."""
    added = skipped = n_events = n_assoc = n_cues = 0
    pending: list[dict[str, Any]] = []
    present: set[str] = set()

    def flush() -> None:
        nonlocal added
        if not pending:
            return
        vectors = svc.embed_passages([m["content"] for m in pending])
        with svc.store.db.write():
            for m, v in zip(pending, vectors):
                if svc.store.get(m["id"]) is None:
                    svc.store.insert(m, v)
                    added += 1
        pending.clear()

    for lineno, rec in enumerate(records, start=1):
        if not isinstance(rec, dict) or "type" not in rec:
            raise InvalidInput(f"record {lineno}: expected a JSON object with a 'type' field")
        kind = rec["type"]
        if kind == "header":
            if rec.get("format") != EXPORT_FORMAT:
                raise InvalidInput(f"record {lineno}: not a mnemo-mcp export (format {rec.get('format')!r})")
            continue
        if kind == "memory":
            m = _import_memory(svc, rec, lineno)
            with svc.store.db.read():
                exists = svc.store.get(m["id"]) is not None
            if exists or m["id"] in present:
                skipped += 1
                continue
            present.add(m["id"])
            pending.append(m)
            if len(pending) >= batch:
                flush()
            continue
        flush()  # links and events refer to memories: store those first
        with svc.store.db.write():
            if kind == "feedback_event":
                svc.store.add_feedback_events([{k: rec.get(k) for k in FEEDBACK_EVENT_FIELDS}])
                n_events += 1
            elif kind == "association" and (secret_like_word(str(rec["a"])) or secret_like_word(str(rec["b"]))):
                continue
            elif kind == "cue" and secret_like_word(str(rec["concept"])):
                continue
            elif kind == "association":
                svc.store.put_associations(
                    [(rec["a"], rec["b"], rec["weight"], rec["valence"], rec["count"], rec["updated_at"])]
                )
                n_assoc += 1
            elif kind == "cue":
                svc.store.put_cues([(rec["memory_id"], rec["concept"], rec["value"], rec["count"], rec["updated_at"])])
                n_cues += 1
            else:
                raise InvalidInput(f"record {lineno}: unknown type {kind!r}")
    flush()
    return ImportResult(
        memories_added=added,
        memories_skipped=skipped,
        feedback_events=n_events,
        associations=n_assoc,
        context_links=n_cues,
    )


def _import_memory(svc: Part, rec: dict[str, Any], lineno: int) -> dict[str, Any]:
    s = svc.settings
    try:
        written = normalize_content(validate.content(rec["content"], s))
        metadata = rec.get("metadata", {}) if isinstance(rec.get("metadata", {}), dict) else {}
        # A file can hold secrets: they are masked on the way in (unless MNEMO_SECRETS=allow).
        policy = "allow" if s.secrets == "allow" else "redact"
        text, metadata = validate.secrets(written, metadata, policy)
        m = {
            "id": rec["id"],
            "content": text,
            "memory_type": validate.memory_type(rec.get("memory_type", "note")),
            "domain": validate.domain(rec.get("domain")) or "",
            "tags": validate.secret_tags(validate.tags(rec.get("tags", []), s), policy),
            "metadata": metadata,
            "concepts": [c for c in rec.get("concepts") or extract_concepts(text) if not secret_like_word(c)],
        }
        for key, default in (("valence", 0.0), ("quality", 0.5), ("reciprocal_rank_sum", 0.0)):
            m[key] = float(rec.get(key, default))
        for key in ("access_count", "retrieval_count", "feedback_count"):
            m[key] = int(rec.get(key, 0))
        m["archived"] = bool(rec.get("archived", False))
        # Lifecycle state (schema 2): absent from older exports, where the defaults are right.
        m["tier"] = str(rec.get("tier") or "working")
        m["source"] = validate.source(rec.get("source") or "write")
        for key in ("superseded_by", "archived_at", "archive_reason"):
            m[key] = rec.get(key)
        # Trust (schema 5): where it came from travels with it (an export from before counts as
        # imported). The text is judged again: a file can say anything, so a release recorded in
        # it is not taken on trust (a person releases again after the import).
        earlier = rec.get("provenance") if isinstance(rec.get("provenance"), dict) else {}
        stamp = svc.clock().isoformat(timespec="seconds")
        provenance = {k: v for k, v in earlier.items() if k != "released"} or {"by": "import", "at": stamp}
        m["provenance"] = {**provenance, "judged": injection.VERSION}
        now_judged = quarantine_for(text, stamp, tuple(s.trusted_hosts))
        kept = rec.get("quarantine") if isinstance(rec.get("quarantine"), dict) else None
        m["quarantine"] = (kept or now_judged) if now_judged else None
        m["created_at"] = str(rec["created_at"])
        m["updated_at"] = str(rec.get("updated_at", rec["created_at"]))
        m["last_accessed_at"] = rec.get("last_accessed_at")
    except KeyError as err:
        raise InvalidInput(f"record {lineno}: memory is missing the field {err}") from None
    except (TypeError, ValueError) as err:
        raise InvalidInput(f"record {lineno}: {err}") from None
    # The id is the hash of the text as first written; a text masked since (here or by the export)
    # keeps it, and says so.
    masked_since = (text != written or rec.get("redacted") is True) and "[REDACTED " in text
    if content_id(written) != m["id"] and not masked_since:
        raise InvalidInput(f"record {lineno}: id does not match the SHA-256 of its content; the export was altered")
    return m


class Transfer(Part):
    def export(self) -> Iterator[dict[str, Any]]:
        """Every memory with its learned state, then feedback events and links: JSON objects."""
        return export_records(self)

    def import_records(self, records: Iterable[dict[str, Any]], *, batch: int = 64) -> ImportResult:
        """Load an export; memories already present (same id) are kept as they are."""
        return import_records(self, records, batch)
