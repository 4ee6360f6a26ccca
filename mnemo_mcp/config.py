"""One settings object for every interface; each field reads `MNEMO_<NAME>` from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from . import paths
from .core.alignment import AlignmentRule
from .core.attribution import BLAME_FLOOR, CREDIT_RATIO, FOLLOW_FLOOR, FULL_CREDIT
from .core.dedup import MEANING_ALIKE, SYNONYMS_ALIKE, WORDS_ALIKE
from .core.lifecycle import RetentionPolicy, TierPolicy
from .core.recall import RecallPolicy
from .paths import HOOK_CONNECT_MS, HOOK_MODEL_WAIT_MS, cache_dir, data_dir, expand

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

# The environment `Settings()` reads in this context; None: the process's own (os.environ).
_ENVIRON: ContextVar[Mapping[str, str] | None] = ContextVar("mnemo_settings_environ", default=None)


class _MappingEnvSource(EnvSettingsSource):
    """The environment source, reading a given mapping instead of os.environ."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]):
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # What pydantic-settings does with os.environ (names fold case unless case-sensitive).
        return {
            (k if self.case_sensitive else k.lower()): (None if v == self.env_parse_none_str else v)
            for k, v in self._environ.items()
            if not (self.env_ignore_empty and v == "")
        }


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_", extra="ignore", validate_default=True)

    # Storage
    db: Path | str = Field(
        default_factory=lambda: Path(data_dir(), "memory.db"),
        description="a SQLite file, or a postgresql:// URL (PostgreSQL with pgvector)",
    )
    busy_timeout_ms: int = Field(10_000, ge=0)
    vector_index: bool = Field(
        True, description="keep the vectors in memory for reads (false: sqlite-vec's scan on every read; same results)"
    )
    read_log_limit: int = Field(20_000, ge=100, description="reads kept for feedback by read_id")
    read_log_days: int = Field(
        7, ge=1, le=3650, description="days a read is kept for feedback by read_id (its concepts and results, no text)"
    )

    # Backups: the MCP server takes an online copy when the newest is older than the interval
    auto_backup: bool = Field(True, description="false: no automatic backups")
    backup_interval_hours: float = Field(24.0, gt=0.0, description="at most one automatic backup per this many hours")
    backup_keep: int = Field(7, ge=1, description="automatic backups kept; older ones are deleted")
    backup_dir: Path | None = Field(None, description="folder for backups (default: 'backups' beside the database)")

    # Scope: memories belong to a project (a domain); reads rank the project's and global ones
    project: str | None = Field(None, description="project scope name; interfaces default it to the git root's name")
    user: str = Field(
        default_factory=lambda: paths.os_user(),
        min_length=1,
        max_length=80,
        description="who gives this process's feedback, ratings and writes (the OS user by default)",
    )
    scope: Literal["project", "all"] = Field("project", description="'all': reads search every domain")
    client: str | None = Field(
        None,
        max_length=80,
        description="whose hooks this process handles, kept in what they store (set by `mnemo-mcp hook --client`)",
    )

    # Privacy: what memory_write does with text that looks like a key, token or password
    secrets: Literal["refuse", "redact", "allow"] = Field(
        "refuse", description="refuse (default), redact (mask it), allow"
    )

    # Trust: hosts a team installs from or posts to, beside the tools' documented ones (core.hosts).
    # A note that pipes a script from, installs from or sends a secret to any other host is
    # quarantined (JSON list, e.g. ["artifacts.acme.io", "git.acme.com"]; subdomains included).
    trusted_hosts: list[str] = Field(default_factory=list, description="the team's own hosts (JSON list)")

    # Embedding
    embed_model: str = DEFAULT_MODEL
    embed_weights: Literal["int8", "float32"] = Field(
        "int8",
        description="the bundled model's weights in memory: int8 (about 100 MB less per process; vectors within "
        "cosine 0.999) or float32 (onnxruntime's folding of them: fastembed's vectors bit for bit)",
    )
    model_cache_dir: Path = Field(default_factory=lambda: Path(cache_dir(), "models"))

    # Input limits
    max_content_chars: int = Field(10_000, ge=1)
    max_tags: int = Field(20, ge=0)
    max_tag_chars: int = Field(64, ge=1)
    max_metadata_bytes: int = Field(16_384, ge=2)
    max_top_k: int = Field(50, ge=1)

    # Retrieval: relevance = sem_weight * semantic + (1 - sem_weight) * lexical, both in [0, 1]
    sem_weight: float = Field(
        0.4, ge=0.0, le=1.0, description="chosen on LoCoMo tune split (benchmarks.locomo_retrieval)"
    )
    sem_floor: float = Field(0.1, ge=-1.0, le=1.0, description="cosine mapped to semantic 0")
    sem_ceil: float = Field(0.8, ge=-1.0, le=1.0, description="cosine mapped to semantic 1")
    candidates: int = Field(100, ge=10, description="candidates drawn from each retriever")

    # Learning
    quality_boost: bool = True
    learning_rate: float = Field(0.3, gt=0.0, le=1.0, description="delta rule rate for valence")
    context_rate: float = Field(
        0.2, gt=0.0, le=1.0, description="smallest step of a query->memory link (running mean of outcomes above it)"
    )
    global_weight: float = Field(0.1, ge=0.0, le=1.0, description="weight of valence and quality")
    valence_share: float = Field(
        0.5, ge=0.0, le=1.0, description="valence's share of the global signal (rest: quality)"
    )
    context_weight: float = Field(0.6, ge=0.0, le=2.0, description="weight of query->memory links")
    context_sharpness: float = Field(
        3.0, ge=1.0, le=6.0, description="exponent on the taught share of a query: higher = stays with the question"
    )
    context_gate: float = Field(0.35, gt=0.0, le=1.0, description="relevance at which links act fully")
    cue_half_life_days: float = Field(
        180.0,
        ge=0.0,
        description="a query->memory link weighs half as much this long after it was last taught (0: never)",
    )
    context_gate_floor: float = Field(0.1, ge=0.0, le=1.0, description="relevance below which links do nothing")
    association_rate: float = Field(0.2, gt=0.0, le=1.0, description="Hebbian rate for concept links")

    # Associations (Hebbian concept links)
    write_link_rate: float = Field(
        0.05, ge=0.0, le=1.0, description="weak link between concepts of one memory, on write"
    )
    write_link_concepts: int = Field(5, ge=0, le=16, description="leading concepts of a memory linked on write")
    link_half_life_days: float = Field(90.0, gt=0.0, description="unused links lose half their weight in this time")
    recovery_half_life_days: float = Field(
        60.0,
        ge=0.0,
        description="a memory that misled and was not tried since recovers half its valence in this time (0: never)",
    )
    link_prune_below: float = Field(
        0.01, ge=0.0, le=1.0, description="decayed links never touched by feedback are dropped below this"
    )
    expand_associations: bool = Field(
        False, description="memory_read expands the query through strong links by default"
    )
    expand_concepts: int = Field(4, ge=1, le=16, description="linked concepts added by an expansion")
    expand_min_weight: float = Field(0.1, ge=0.0, le=1.0, description="weakest link an expansion follows")
    expand_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="relevance of a memory reached only through a link, relative to a direct match"
    )

    # Response alignment (memory_feedback with the answer text; MemWire's documented defaults)
    align_credit: bool = Field(
        True, description="weight each memory's share of an outcome by its alignment with the response"
    )
    align_min_credit: float = Field(
        0.1, ge=0.0, le=1.0, description="share of an outcome a memory the answer did not follow keeps"
    )
    strengthen_rate: float = Field(0.1, ge=0.0, le=1.0)
    weaken_rate: float = Field(0.05, ge=0.0, le=1.0)
    align_strengthen: float = Field(0.5, ge=0.0, le=1.0, description="links strengthen above this alignment")
    align_weaken: float = Field(0.2, ge=0.0, le=1.0, description="links weaken below this alignment")
    edge_weight_min: float = Field(0.01, ge=0.0, le=1.0)
    edge_weight_max: float = Field(1.0, ge=0.0, le=1.0)
    response_only_scale: float = Field(0.5, ge=0.0, le=1.0, description="link rates without an outcome, relative")
    tension_similarity: float = Field(
        0.85, ge=0.0, le=1.0, description="recalled memories this similar are about one subject"
    )
    tension_margin: float = Field(
        0.1, ge=0.0, le=1.0, description="alignment gap that shows which side the answer took"
    )
    max_response_chars: int = Field(50_000, ge=1)

    # Lifecycle
    auto_consolidate: bool = Field(True, description="consolidate on server start when due, and every N writes")
    consolidate_interval_hours: float = Field(24.0, gt=0.0)
    consolidate_every_writes: int = Field(500, ge=0, description="0: only by the interval")
    retention_days_low: float = Field(30.0, gt=0.0, description="unused days before archiving, quality below 0.3")
    retention_days_fair: float = Field(90.0, gt=0.0, description="... quality below 0.5")
    retention_days_good: float = Field(180.0, gt=0.0, description="... quality below 0.7")
    retention_days_high: float = Field(365.0, gt=0.0, description="... quality 0.7 and above")
    auto_retention_factor: float = Field(
        0.5, gt=0.0, le=1.0, description="share of the window for automatically captured memories"
    )
    recency_half_life_days: float = Field(30.0, gt=0.0, description="recency part of the consolidation score")
    history_standing: float = Field(0.6, ge=0.0, le=1.0)
    history_uses: int = Field(2, ge=0)
    pattern_standing: float = Field(0.75, ge=0.0, le=1.0)
    pattern_uses: int = Field(5, ge=0)
    pattern_positive: int = Field(3, ge=0)
    history_keep: float = Field(0.5, ge=0.0, le=1.0, description="history drops to working below this standing")
    pattern_keep: float = Field(0.65, ge=0.0, le=1.0, description="pattern drops to history below this standing")
    dedup: bool = Field(True, description="report near-duplicate writes instead of storing them")
    duplicate_similarity: float = Field(
        MEANING_ALIKE,
        gt=0.0,
        le=1.0,
        description="cosine at which a write means the same as a stored one (benchmarks.dedup)",
    )
    duplicate_words: float = Field(
        WORDS_ALIKE,
        gt=0.0,
        le=1.0,
        description="share of words at which it reads the same; a changed number, path or name is an update",
    )
    duplicate_synonyms: float = Field(
        SYNONYMS_ALIKE, gt=0.0, le=1.0, description="cosine at which a swapped word is a synonym"
    )
    merge_scan_per_run: int = Field(2000, ge=0, description="memories checked for near-duplicates per consolidation")

    # Claude Code hooks
    # Chosen with benchmarks.natural_prompts on its tune split (best correct + clean share).
    inject_tokens: int = Field(150, ge=0, description="budget of memories injected into a prompt's context (0: none)")
    inject_top_k: int = Field(3, ge=1, le=20, description="notes shown per prompt at most (in full and as pointers)")
    inject_full_relevance: float = Field(
        0.7, ge=0.0, le=1.0, description="a note this relevant (or a little less, with a clear lead) is shown in full"
    )
    inject_min_relevance: float = Field(
        0.3, ge=0.0, le=1.0, description="nothing below this relevance is shown, not even as a one-line pointer"
    )
    inject_by_confidence: bool = Field(
        True, description="with the model at hand, decide by confidence (core.recall) rather than relevance floors"
    )
    inject_full_confidence: float = Field(
        0.3, ge=0.0, le=1.0, description="the best candidate this confident is shown in full"
    )
    inject_best_confidence: float = Field(
        0.22,
        ge=0.0,
        le=1.0,
        description="the best candidate this confident is shown, as a pointer under the full floor",
    )
    inject_pointer_confidence: float = Field(
        0.3, ge=0.0, le=1.0, description="another candidate this confident is shown as a pointer too"
    )
    inject_full_relevance_keyword: float = Field(
        0.75, ge=0.0, le=1.0, description="the full floor when no server answers and the hook recalls by keywords alone"
    )
    inject_min_relevance_keyword: float = Field(
        0.3, ge=0.0, le=1.0, description="the pointer floor when the hook recalls by keywords alone"
    )
    hook_server: bool = Field(True, description="the MCP server answers hooks on a Unix socket beside the database")
    share_model: bool = Field(
        True,
        description="the servers of one database share one loaded embedding model over that socket (false: "
        "each server loads its own)",
    )
    early_discover: bool = Field(
        True, description="the launcher answers MCP's server/discover probe before importing the SDK (read by it)"
    )
    hook_connect_ms: int = Field(
        HOOK_CONNECT_MS,
        ge=0,
        le=5000,
        description="how long a hook looks for a ready server before recalling by itself",
    )
    hook_model_wait_ms: int = Field(
        HOOK_MODEL_WAIT_MS, ge=0, le=8000, description="how long it waits for a server that is still loading its model"
    )
    session_start_tokens: int = Field(400, ge=0, description="budget of the session-start digest (0: none)")
    session_start_items: int = Field(5, ge=0, le=20)
    outcome_worked: float = Field(1.0, ge=-1.0, le=1.0)
    outcome_partial: float = Field(0.3, ge=-1.0, le=1.0)
    outcome_failed: float = Field(-1.0, ge=-1.0, le=1.0)
    check_fail_outcome: float = Field(
        -0.5, ge=-1.0, le=1.0, description="a test/build failure, for what the changes since its last run followed"
    )
    check_pass_outcome: float = Field(
        0.5, ge=-1.0, le=1.0, description="a pass after a failure, for what the changes since followed"
    )
    extra_check_commands: list[str] = Field(default_factory=list, description="more check-command regexes (JSON list)")
    # Attribution (core.attribution): an outcome credits what the session's actions followed.
    follow_floor: float = Field(
        FOLLOW_FLOOR, ge=0.0, le=1.0, description="alignment under which a shown memory was not followed: no credit"
    )
    blame_floor: float = Field(
        BLAME_FLOOR,
        ge=0.0,
        le=1.0,
        description="alignment under which a failure does not count against a shown memory (a success: follow_floor)",
    )
    full_credit: float = Field(
        FULL_CREDIT, gt=0.0, le=1.0, description="alignment from which a followed memory takes the whole outcome"
    )
    credit_ratio: float = Field(
        CREDIT_RATIO,
        ge=0.0,
        le=1.0,
        description="an outcome credits only the memories aligned at least this share of the best-aligned one's",
    )

    # Capture: cases learned from sessions without being told (hooks; no model, no LLM)
    capture: Literal["off", "outcomes", "fixes"] = Field(
        "outcomes",
        description="off; outcomes: a turn's advice once a reaction or a check judged it, and error->fix cases; "
        "fixes: only error->fix cases that a check proved",
    )
    capture_pending_turns: int = Field(2, ge=1, le=20, description="later turns a pending case waits for its outcome")
    capture_pending_hours: float = Field(24.0, gt=0.0, description="... and at most this long")
    capture_max_chars: int = Field(1500, ge=200, le=10_000, description="size cap of a captured case")
    capture_recall_items: int = Field(
        3, ge=0, le=10, description="cases shown when a failing check matches them (0: none)"
    )
    hook_log: Path = Field(
        default_factory=lambda: Path(data_dir(), "hooks.log"), description="where hooks log their errors"
    )

    # Quality score weights (normalized to sum 1 when used)
    quality_w_rating: float = Field(0.30, ge=0.0)
    quality_w_access: float = Field(0.30, ge=0.0)
    quality_w_ranking: float = Field(0.20, ge=0.0)
    quality_w_consolidation: float = Field(0.20, ge=0.0)

    log_level: str = "WARNING"
    now: datetime | None = Field(
        None, description="act as if it were this time (simulations, benchmarks); unset: the clock"
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: Any) -> Settings:
        """The settings a process with this environment would read (none of this process's
        MNEMO_* variables leak in): the MCP server answers hooks with the hook's own settings."""
        token = _ENVIRON.set(dict(environ))
        try:
            return cls(**overrides)
        finally:
            _ENVIRON.reset(token)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        environ = _ENVIRON.get()
        if environ is None:
            return init_settings, env_settings, dotenv_settings, file_secret_settings
        return init_settings, _MappingEnvSource(settings_cls, environ)

    @field_validator("now", mode="after")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return v.replace(tzinfo=UTC) if v is not None and v.tzinfo is None else v

    @field_validator("db", mode="before")
    @classmethod
    def _location(cls, v: Any) -> Path | str:
        """A postgresql:// URL stays a string, as written (never a path: expanding `~` or `$` in it
        would mangle a password); anything else is a file path, expanded."""
        if paths.is_url(v):
            return str(v).strip()
        if isinstance(v, str | os.PathLike):
            return Path(expand(v))
        return v

    @field_validator("model_cache_dir", "hook_log", "backup_dir", mode="after")
    @classmethod
    def _expand(cls, v: Path | None) -> Path | None:
        return None if v is None else Path(expand(v))

    @property
    def backend(self) -> str:
        """`sqlite` (a file) or `postgresql` (a server URL)."""
        return "postgresql" if isinstance(self.db, str) else "sqlite"

    @property
    def db_label(self) -> str:
        """The database as it may be shown: a file's path, or the URL without its password."""
        return paths.without_password(self.db) if isinstance(self.db, str) else str(self.db)

    @property
    def backup_folder(self) -> Path | None:
        """Where this database's backups go (None: an in-memory database has none, and a server
        database is backed up by its own tools, pg_dump)."""
        if isinstance(self.db, str) or str(self.db) == ":memory:":
            return None
        return self.backup_dir or self.db.parent / "backups"

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.sem_ceil <= self.sem_floor:
            raise ValueError("MNEMO_SEM_CEIL must be greater than MNEMO_SEM_FLOOR")
        weights = (
            self.quality_w_rating,
            self.quality_w_access,
            self.quality_w_ranking,
            self.quality_w_consolidation,
        )
        if sum(weights) <= 0:
            raise ValueError("at least one MNEMO_QUALITY_W_* weight must be positive")
        windows = (
            self.retention_days_low,
            self.retention_days_fair,
            self.retention_days_good,
            self.retention_days_high,
        )
        if list(windows) != sorted(windows):
            raise ValueError("MNEMO_RETENTION_DAYS_LOW <= _FAIR <= _GOOD <= _HIGH: better memories are kept longer")
        if self.align_weaken > self.align_strengthen or self.edge_weight_min > self.edge_weight_max:
            raise ValueError(
                "MNEMO_ALIGN_WEAKEN <= MNEMO_ALIGN_STRENGTHEN and MNEMO_EDGE_WEIGHT_MIN <= MNEMO_EDGE_WEIGHT_MAX"
            )
        if self.history_keep > self.history_standing or self.pattern_keep > self.pattern_standing:
            raise ValueError("a tier's keep threshold (MNEMO_*_KEEP) must not exceed its promotion standing")
        return self

    def retention_policy(self) -> RetentionPolicy:
        return RetentionPolicy(
            self.retention_days_low,
            self.retention_days_fair,
            self.retention_days_good,
            self.retention_days_high,
            self.auto_retention_factor,
        )

    def recall_policy(self, semantic: bool = True) -> RecallPolicy:
        """What the prompt hook shows in full, as pointers or not at all (core.recall)."""
        full, floor = (
            (self.inject_full_relevance, self.inject_min_relevance)
            if semantic
            else (self.inject_full_relevance_keyword, self.inject_min_relevance_keyword)
        )
        return RecallPolicy(
            full_floor=full,
            lead_floor=max(full - 0.1, 0.0),
            worked_floor=min(floor + 0.05, full),
            pointer_floor=floor,
            notes=self.inject_top_k,
            **(
                {
                    "full_confidence": self.inject_full_confidence,
                    "best_confidence": self.inject_best_confidence,
                    "pointer_confidence": self.inject_pointer_confidence,
                }
                if semantic and self.inject_by_confidence
                else {}
            ),
        )

    def alignment_rule(self, scale: float = 1.0) -> AlignmentRule:
        return AlignmentRule(
            self.strengthen_rate * scale,
            self.weaken_rate * scale,
            self.align_strengthen,
            self.align_weaken,
            self.edge_weight_min,
            self.edge_weight_max,
        )

    def tier_policy(self) -> TierPolicy:
        return TierPolicy(
            self.history_standing,
            self.history_uses,
            self.pattern_standing,
            self.pattern_uses,
            self.pattern_positive,
            self.history_keep,
            self.pattern_keep,
        )

    @property
    def boost_enabled(self) -> bool:
        return self.quality_boost and (self.global_weight > 0 or self.context_weight > 0)
