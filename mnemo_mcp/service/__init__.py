"""The service API: `MemoryService` is what every interface calls."""

from .api import MemoryService

__all__ = ["MemoryService"]
