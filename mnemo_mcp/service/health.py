"""Health: `doctor` checks that memories, vectors, the full-text index and the learned state
agree, and repairs what can be repaired without touching content, valence or ratings. A file
SQLite finds damaged is beyond repair in place: `recovery.salvage` copies out what reads."""

from __future__ import annotations

from ..models import DoctorReport, HealthCheck, StatsResult
from .backups import Backups
from .base import Part, ServiceContext, rnd

REEMBED_BATCH = 64
DAMAGED_ADVICE = [
    "the file is damaged: `mnemo-mcp doctor --salvage` copies every memory that still reads into a new file "
    "(this one stays as it is), then `mnemo-mcp restore-backup <that file>` puts it in place",
    "or `mnemo-mcp restore-backup` puts back the latest automatic backup (`--list` shows them)",
]


class Health(Part):
    def __init__(self, ctx: ServiceContext, *, backups: Backups):
        super().__init__(ctx)
        self.backups = backups

    def stats(self) -> StatsResult:
        with self.store.db.read():
            st = self.store.stats()
            bound = (self.store.get_meta("embedding_model"), self.store.get_meta("embedding_dim"))
            last = self.store.last_consolidation()
        last_backup, backup_age, backup_count = self.backups.backup_status()
        return StatsResult(
            total=st["total"],
            archived=st["archived"],
            avg_valence=rnd(st["avg_valence"]),
            avg_quality=rnd(st["avg_quality"]),
            quality_histogram=st["quality_histogram"],
            by_type=st["by_type"],
            by_domain={(k or "(none)"): v for k, v in st["by_domain"].items()},
            by_tier=st["by_tier"],
            feedback_events=st["feedback_events"],
            associations=st["associations"],
            db_size_bytes=st["db_size_bytes"],
            embedding_model=bound[0] or self.embedder.name,
            embedding_dim=int(bound[1]) if bound[1] else self.embedder.dim,
            last_consolidation=last["as_of"] if last else None,
            last_backup=last_backup,
            last_backup_age_hours=backup_age,
            backups=backup_count,
        )

    def doctor(self, *, repair: bool = False) -> DoctorReport:
        with self.store.db.read():
            problems = self.store.integrity_problems()
        if problems:
            # The other checks would read the damaged pages; nothing can be repaired in place.
            check = HealthCheck(
                name="sqlite integrity_check", ok=False, found=len(problems), detail="; ".join(problems[:5])
            )
            return DoctorReport(ok=False, memories=0, checks=[check], advice=DAMAGED_ADVICE)
        name = "sqlite integrity_check" if self.settings.backend == "sqlite" else "server answers, schema current"
        integrity = HealthCheck(name=name, ok=True)
        checks, repaired = [integrity, *self._checks()], []
        if repair and not all(c.ok for c in checks):
            repaired = self._repair(checks)
            checks = [integrity, *self._checks()]
        with self.store.db.read():
            memories = self.store.memory_count()
        return DoctorReport(ok=all(c.ok for c in checks), memories=memories, checks=checks, repaired=repaired)

    def _checks(self) -> list[HealthCheck]:
        st = self.store
        with st.db.read():
            has_vectors = st.has_vector_table()
            total = st.memory_count()
            if has_vectors:
                missing, orphans, drift = (
                    st.memories_without_vector(),
                    st.vectors_without_memory(),
                    st.vector_filters_out_of_step(),
                )
            else:  # no model bound yet: every memory lacks a vector
                missing, orphans, drift = ([0] * total if total else []), [], []
            checks = [
                HealthCheck(name="every memory has its vector", ok=not missing, found=len(missing)),
                HealthCheck(name="no vector without its memory", ok=not orphans, found=len(orphans)),
                HealthCheck(name="vector filters (archived, domain) match", ok=not drift, found=len(drift)),
                HealthCheck(name="full-text index matches the memories", ok=st.text_index_ok()),
            ]
            orphaned = st.orphan_counts()
            checks.append(
                HealthCheck(
                    name="no learned state of deleted memories",
                    ok=not any(orphaned.values()),
                    found=sum(orphaned.values()),
                    detail=", ".join(f"{n} {k}" for k, n in orphaned.items() if n) or None,
                )
            )
            checks.append(self._secrets_check())
        return checks

    def _secrets_check(self) -> HealthCheck:
        """Secrets at rest: none outside what `MNEMO_SECRETS=allow` kept on purpose."""
        found = self.store.secrets_at_rest()
        scrubbed = self.store.secrets_migration_report()
        detail = []
        if found["count"]:
            kinds = ", ".join(f"{n} {k}" for k, n in found["kinds"].items())
            detail.append(f"{kinds} in {', '.join(found['where'])}")
        if scrubbed:
            detail.append("masked on upgrade: " + ", ".join(f"{n} {k}" for k, n in scrubbed.items()))
        return HealthCheck(
            name="no secret at rest", ok=not found["count"], found=found["count"], detail="; ".join(detail) or None
        )

    def _repair(self, checks: list[HealthCheck]) -> list[str]:
        st = self.store
        done: list[str] = []
        by_name = {c.name: c for c in checks}
        if not by_name["every memory has its vector"].ok:
            self._ensure_bound()  # loads the model: missing vectors are made from the stored text
            with st.db.read():
                missing = st.memories_without_vector()
                rows = st.by_rowids(missing)
            for i in range(0, len(missing), REEMBED_BATCH):
                chunk = [r for r in missing[i : i + REEMBED_BATCH] if r in rows]
                vectors = self.embedder.embed_passages([rows[r]["content"] for r in chunk])
                with st.db.write():
                    for rowid, vector in zip(chunk, vectors):
                        if rowid in st.memories_without_vector():
                            st.add_vector(rowid, vector)
            done.append(f"re-embedded {len(missing)} memories without a vector")
        with st.db.write():
            orphans = st.vectors_without_memory() if st.has_vector_table() else []
            for rowid in orphans:
                st.drop_vector(rowid)
            if orphans:
                done.append(f"dropped {len(orphans)} vectors without a memory")
            drift = st.vector_filters_out_of_step() if st.has_vector_table() else []
            for rowid in drift:
                st.sync_vector_filters(rowid)
            if drift:
                done.append(f"re-synced the archived/domain filters of {len(drift)} vectors")
            if not st.text_index_ok():
                st.rebuild_text_index()
                done.append("rebuilt the full-text index from the memories")
            if any(st.orphan_counts().values()):
                st.delete_orphans()
                done.append("dropped links and events of memories that no longer exist")
            if st.secrets_at_rest()["count"]:
                changed = st.scrub_secrets()
                done.append("masked secrets at rest: " + (", ".join(f"{n} {k}" for k, n in changed.items()) or "none"))
        return done
