"""Helpers every benchmark shares (no benchmark imports another's private parts)."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """The q-quantile by nearest rank (q in [0, 1])."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
