"""SQL for captured cases (memory_type 'case'): the memory a case key names, and the cases that
answer an error signature. A mixin of `Store`; the expressions match the indexes of migration 4."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import apsw

from .rows import SELECT_MEMORIES, decode_row

_KEY = "json_extract(m.metadata, '$.case.key')"
_SIGNATURE = "json_extract(m.metadata, '$.case.signature')"


class CaseQueries:
    conn: apsw.Connection

    def case_by_key(self, key: str) -> dict[str, Any] | None:
        """The case memory (live or archived) captured under `key`."""
        row = self.conn.execute(
            SELECT_MEMORIES + f" WHERE m.memory_type = 'case' AND {_KEY} = ? LIMIT 1", (key,)
        ).fetchone()
        return decode_row(row) if row else None

    def case_signatures(self, domains: list[str] | None, limit: int) -> list[tuple[str, str]]:
        """(id, error signature) of the newest live cases that answer a failing check."""
        params: dict[str, Any] = {"limit": limit}
        where = f"m.memory_type = 'case' AND {_SIGNATURE} IS NOT NULL AND m.archived = 0 AND m.quarantine IS NULL"
        if domains is not None:
            names = {f"d{i}": d for i, d in enumerate(domains)}
            params.update(names)
            where += " AND m.domain IN (" + ", ".join(f":{k}" for k in names) + ")"
        return list(
            self.conn.execute(
                f"SELECT m.id, {_SIGNATURE} FROM memories m WHERE {where} ORDER BY m.rowid DESC LIMIT :limit", params
            )
        )
