"""Secrets at rest: take out of the store what earlier versions kept in clear (migration 6), and
find what is still there (doctor).

Earlier versions logged every read's query as typed, with its concepts, and kept prompts, answers
and command output in the session log; a secret pasted into a prompt stayed on disk. The scrub
masks (core.secrets) the session log, memory metadata and tags, the text of memories nobody wrote
on purpose (captured, imported: a memory written through `memory_write` passed the secrets policy
of its day, and `MNEMO_SECRETS=allow` is a choice), drops the read log's query text (only its
concepts serve feedback) and every concept, link and cue that looks like a key. A memory keeps its
id when its text is masked (the id names it; it was the hash of the text as first written).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import apsw

from ..core.secrets import find_secrets, masked, scrubbed, secret_like_word


def _concepts(raw: str) -> tuple[str, bool]:
    words = json.loads(raw or "[]")
    kept = [w for w in words if not (isinstance(w, str) and secret_like_word(w))]
    return json.dumps(kept), len(kept) != len(words)


def _json(raw: str) -> tuple[str, bool]:
    value = json.loads(raw or "{}")
    clean = scrubbed(value)
    return json.dumps(clean, ensure_ascii=False), clean != value


def optimize_fts(conn: apsw.Connection) -> None:
    """Rewrite the full-text index's segments, so that no old term survives in them."""
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")


def scrub(conn: Any, text_changed: Callable[[Any], None] = optimize_fts) -> dict[str, int]:
    """Mask every secret the store holds outside what a person chose to keep -> counts of what
    changed, by table. Runs inside the migration's (or doctor's) transaction. `conn` takes qmark
    parameters; `text_changed` brings the text index up to the new text."""
    changed: Counter[str] = Counter()
    for rid, query, concepts in list(conn.execute("SELECT id, query, query_concepts FROM reads")):
        clean, dropped = _concepts(concepts)
        if query or dropped:
            conn.execute("UPDATE reads SET query = '', query_concepts = ? WHERE id = ?", (clean, rid))
            changed["reads"] += 1
    for seq, detail in list(conn.execute("SELECT seq, detail FROM session_events")):
        clean, was = _json(detail)
        if was:
            conn.execute("UPDATE session_events SET detail = ? WHERE seq = ?", (clean, seq))
            changed["session_events"] += 1
    rows = conn.execute("SELECT rowid, content, tags, metadata, concepts, source FROM memories")
    for rowid, content, tags, metadata, concepts, source in list(rows):
        new_content = content if source == "write" else masked(content)
        new_tags, tags_changed = _json(tags)
        new_meta, meta_changed = _json(metadata)
        new_concepts, concepts_changed = _concepts(concepts)
        if new_content != content or tags_changed or meta_changed or concepts_changed:
            conn.execute(
                "UPDATE memories SET content = ?, tags = ?, metadata = ?, concepts = ? WHERE rowid = ?",
                (new_content, new_tags, new_meta, new_concepts, rowid),
            )
            changed["memories"] += 1
    for table, cols in (("cues", ("concept",)), ("associations", ("a", "b"))):
        for key in list(conn.execute(f"SELECT DISTINCT {', '.join(cols)} FROM {table}")):
            if any(secret_like_word(str(v)) for v in key):
                where = " AND ".join(f"{c} = ?" for c in cols)
                conn.execute(f"DELETE FROM {table} WHERE {where}", key)
                changed[table] += 1
    if changed["memories"]:
        text_changed(conn)
    return dict(changed)


def secrets_at_rest(conn: Any, limit: int = 5) -> dict[str, Any]:
    """Where the store still holds something that looks like a secret -> {count, kinds, where}
    (memory ids and tables, never the secret)."""
    kinds: Counter[str] = Counter()
    where: list[str] = []

    def seen(text: str, place: str) -> None:
        found = find_secrets(text)
        for f in found:
            kinds[f.kind] += 1
        if found and len(where) < limit:
            where.append(place)

    for mid, content, tags, metadata in conn.execute("SELECT id, content, tags, metadata FROM memories"):
        seen(f"{content}\n{tags}\n{metadata}", f"memory {mid[:12]}")
    for rid, query in conn.execute("SELECT id, query FROM reads WHERE query != ''"):
        seen(query, f"read {rid}")
    for seq, detail in conn.execute("SELECT seq, detail FROM session_events"):
        seen(detail, f"session event {seq}")
    return {"count": sum(kinds.values()), "kinds": dict(kinds), "where": where}
