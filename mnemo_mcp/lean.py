"""Memory a server gives back to the system, where the C library allows it (glibc; elsewhere
these do nothing).

- The imports and the model's loading free a few MB that glibc keeps in the heap until told:
  measured ~5 MB less resident in a server after its warm-up (benchmarks.sessions).
- glibc serves a large allocation with its own mapping, returned when freed, but it raises that
  threshold to the size of every such block freed (up to 32 MB): after the model's first runs,
  onnxruntime's and numpy's scratch buffers of a few hundred KB to a few MB come from the heap
  and its per-thread arenas instead, and what they leave there stays. A fixed threshold keeps
  them in mappings. 512 KiB was the smallest threshold that cost an embedding or a read nothing
  measurable (128 KiB: embeddings 6% and reads at 1k memories 11% slower). In one process, 120
  reads at 1k memories: 103 -> 92 MB of anonymous memory; servers after 100 reads each
  (benchmarks.sessions --reads 100, 10k memories): one server 176 -> 174 MB resident (185 -> 176
  for the one that writes the vectors' snapshot), five servers' PSS 399 -> 394 MB.
(Fewer malloc arenas, M_ARENA_MAX 2, was tried too and changed nothing measurable.)
"""

from __future__ import annotations

import sys

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
LARGE_ALLOCATION = 512 * 1024


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None)
    except OSError:
        return None


def keep_large_allocations_apart() -> None:
    """Large blocks (LARGE_ALLOCATION and up) always in their own mappings, given back when freed."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, LARGE_ALLOCATION)


def give_back_freed_memory() -> None:
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)
