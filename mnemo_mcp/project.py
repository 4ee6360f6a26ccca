"""Which project a process works in: the scope its memories are written to and read from."""

from __future__ import annotations

from pathlib import Path

from .config import Settings


def project_root(cwd: Path | str) -> Path:
    """The enclosing git repository's root folder, else `cwd` itself."""
    start = Path(cwd).expanduser().resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():  # a directory, or a file in worktrees and submodules
            return folder
    return start


def detect_project(cwd: Path | str) -> str | None:
    """The name of the project folder (see `project_root`)."""
    return project_root(cwd).name or None


def scoped(settings: Settings, cwd: Path | str | None = None) -> Settings:
    """`settings` with `project` filled in from `cwd` when it is not set explicitly."""
    if settings.project or settings.scope != "project":
        return settings
    project = detect_project(cwd if cwd is not None else Path.cwd())
    return settings.model_copy(update={"project": project}) if project else settings
