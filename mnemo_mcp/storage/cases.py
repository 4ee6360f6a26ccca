"""SQL for captured cases (memory_type 'case'): the memory a case key names, and the cases that
answer an error signature. A mixin of `Store`; the expressions match the indexes of migration 4."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import apsw

_KEY = "json_extract(m.metadata, '$.case.key')"
_SIGNATURE = "json_extract(m.metadata, '$.case.signature')"


class CaseQueries:
    conn: apsw.Connection

    def case_by_key(self, key: str) -> dict[str, Any] | None:
        """The case memory (live or archived) captured under `key`."""
        from .store import _SELECT, _row

        row = self.conn.execute(_SELECT + f" WHERE m.memory_type = 'case' AND {_KEY} = ? LIMIT 1", (key,)).fetchone()
        return _row(row) if row else None

    def cases_for_signature(self, signature: str, domains: list[str] | None, limit: int) -> list[dict[str, Any]]:
        """Live cases captured for this error signature, best record first."""
        from .store import _SELECT, _row

        params: dict[str, Any] = {"sig": signature, "limit": limit}
        where = f"m.memory_type = 'case' AND {_SIGNATURE} = :sig AND m.archived = 0"
        if domains is not None:
            names = {f"d{i}": d for i, d in enumerate(domains)}
            params.update(names)
            where += " AND m.domain IN (" + ", ".join(f":{k}" for k in names) + ")"
        rows = self.conn.execute(_SELECT + f" WHERE {where} ORDER BY m.valence DESC, m.rowid LIMIT :limit", params)
        return [_row(r) for r in rows]
