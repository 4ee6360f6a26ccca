"""One settings object for every interface; each field reads `MNEMO_<NAME>` from the environment."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _data_dir() -> Path:
    """The per-user data directory (XDG on Linux, the platform's usual place elsewhere)."""
    if os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif os.uname().sysname == "Darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
    return base / "mnemo-mcp"


def _cache_dir() -> Path:
    if os.name != "nt" and os.uname().sysname != "Darwin":
        return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mnemo-mcp"
    return _data_dir() / "cache"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_", extra="ignore", validate_default=True)

    # Storage
    db: Path = Field(default_factory=lambda: _data_dir() / "memory.db", description="SQLite file")
    busy_timeout_ms: int = Field(10_000, ge=0)
    read_log_limit: int = Field(20_000, ge=100, description="reads kept for feedback by read_id")

    # Embedding
    embed_model: str = DEFAULT_MODEL
    model_cache_dir: Path = Field(default_factory=lambda: _cache_dir() / "models")

    # Input limits
    max_content_chars: int = Field(10_000, ge=1)
    max_tags: int = Field(20, ge=0)
    max_tag_chars: int = Field(64, ge=1)
    max_metadata_bytes: int = Field(16_384, ge=2)
    max_top_k: int = Field(50, ge=1)

    # Retrieval: relevance = sem_weight * semantic + (1 - sem_weight) * lexical, both in [0, 1]
    sem_weight: float = Field(0.4, ge=0.0, le=1.0, description="chosen on LoCoMo tune split (benchmarks.locomo_retrieval)")
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
    valence_share: float = Field(0.5, ge=0.0, le=1.0, description="valence's share of the global signal (rest: quality)")
    context_weight: float = Field(0.6, ge=0.0, le=2.0, description="weight of query->memory links")
    context_sharpness: float = Field(
        3.0, ge=1.0, le=6.0, description="exponent on the taught share of a query: higher = stays with the question"
    )
    context_gate: float = Field(0.35, gt=0.0, le=1.0, description="relevance at which links act fully")
    context_gate_floor: float = Field(0.1, ge=0.0, le=1.0, description="relevance below which links do nothing")
    association_rate: float = Field(0.2, gt=0.0, le=1.0, description="Hebbian rate for concept links")

    # Quality score weights (normalized to sum 1 when used)
    quality_w_rating: float = Field(0.30, ge=0.0)
    quality_w_access: float = Field(0.30, ge=0.0)
    quality_w_ranking: float = Field(0.20, ge=0.0)
    quality_w_consolidation: float = Field(0.20, ge=0.0)

    log_level: str = "WARNING"

    @field_validator("db", "model_cache_dir", mode="after")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return Path(os.path.expandvars(str(v))).expanduser()

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
        return self

    @property
    def boost_enabled(self) -> bool:
        return self.quality_boost and (self.global_weight > 0 or self.context_weight > 0)
