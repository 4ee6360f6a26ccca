"""PNG figures for the README, drawn by the benchmarks themselves (optional `bench` extra)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no picture drawn", file=sys.stderr)
        return None
    return plt


def latency_vs_n(rows: Sequence[dict[str, Any]], path: Path) -> Path | None:
    plt = _pyplot()
    if plt is None or not rows:
        return None
    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for key, label in (
        ("read_p50_ms", "read p50 (service)"),
        ("read_p95_ms", "read p95 (service)"),
        ("stdio_read_p50_ms", "read p50 (stdio server)"),
        ("floor_p50_ms", "floor: embed + raw KNN"),
        ("single_write_p50_ms", "write p50 (one by one)"),
    ):
        ax.plot(ns, [r[key] for r in rows], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("memories in the store (N)")
    ax.set_ylabel("milliseconds")
    ax.set_title("mnemo-mcp latency against store size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def learning_curves(curves: dict[str, dict[str, list[float]]], metric: str, path: Path, title: str) -> Path | None:
    """curves: {set name: {configuration: [metric per round]}} -> one panel per set."""
    plt = _pyplot()
    if plt is None or not curves:
        return None
    fig, axes = plt.subplots(1, len(curves), figsize=(4.2 * len(curves), 3.6), dpi=120, sharey=True)
    if len(curves) == 1:
        axes = [axes]
    for ax, (set_name, by_config) in zip(axes, curves.items()):
        for config, values in by_config.items():
            ax.plot(range(0, len(values)), values, marker="o", label=config)
        ax.set_title(set_name)
        ax.set_xlabel("round (0 = before any feedback)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(metric)
    axes[-1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
