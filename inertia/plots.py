"""Plots used by the CLI and the experiments (matplotlib, optional dependency)."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - exercised only without matplotlib
        raise ImportError("plots need matplotlib: pip install 'inertia[plots]'") from err
    return plt


def gap_band(ax, x, gaps, *, label=None, accelerated=True, color=None, q=(20, 80)):
    """Mean gap curve with a 20-80 % band over seeds (gaps: (checkpoints, seeds)); solid = acc."""
    gaps = np.asarray(gaps, dtype=float)
    if gaps.ndim == 1:
        gaps = gaps[:, None]
    pos = np.where(gaps > 0, gaps, np.nan)
    mean = np.nanmean(pos, axis=1)
    line, = ax.plot(x, mean, "-" if accelerated else "--", label=label, color=color)
    if gaps.shape[1] > 1:
        lo, hi = np.nanpercentile(pos, q, axis=1)
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_yscale("log")
    return line


def plot_fit(result, path, *, x="step"):
    """Objective gap of a `FitResult` against updates (or gradient queries) on log axes."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    h = result.history
    if h["gap"] is None:
        raise ValueError("this fit has no gap history (target without exact expectations)")
    xs = h["step"] if x == "step" else h["grad_evals"]
    gap_band(ax, xs, h["gap"], label=f"{result.method} ({'acc' if result.accelerated else 'plain'})",
             accelerated=result.accelerated)
    ax.set_xlabel("update" if x == "step" else "gradient queries")
    ax.set_ylabel("F(q) - F*  [nats]")
    ax.set_title(f"{result.target_name}: b = {result.batch_size}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
