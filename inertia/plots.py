"""Plots used by the CLI and the experiments (matplotlib, optional dependency)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from ._io import save_figure


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
    xs = h["step"] if x == "step" else h["grad_evals"]
    if h["gap"] is None:
        if h.get("objective_estimate") is None:
            raise ValueError("this fit has neither exact gaps nor an objective estimate")
        return _plot_objective(result, xs, path, x, plt, fig, ax)
    gap_band(ax, xs, h["gap"], label=f"{result.method} ({'acc' if result.accelerated else 'plain'})",
             accelerated=result.accelerated)
    ax.set_xlabel("update" if x == "step" else "gradient queries")
    ax.set_ylabel("F(q) - F*  [nats]")
    ax.set_title(f"{result.target_name}: b = {result.batch_size}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    _save(fig, path)
    return Path(path)


def _plot_objective(result, xs, path, x, plt, fig, ax):
    """F_hat(q_k) with a 2 s.e. band (common random numbers) when no exact gap exists."""
    h = result.history
    f = np.asarray(h["objective_estimate"], dtype=float).reshape(len(xs), -1).mean(axis=1)
    se = np.asarray(h["objective_stderr"], dtype=float).reshape(len(xs), -1).mean(axis=1)
    ax.plot(xs, f, color="C0", label=f"{result.method}: F_hat(q)")
    ax.fill_between(xs, f - 2 * se, f + 2 * se, color="C0", alpha=0.25, label="2 s.e.")
    avg = np.asarray(h.get("averaged", np.zeros(len(xs), bool)))
    if avg.any():
        ax.axvline(xs[int(np.argmax(avg))], color="grey", ls="--", label="averaging from here")
    finite = np.isfinite(f)
    if finite.sum() > 2:  # zoom on the converged part; the start can be far above
        lo, hi = np.nanmin(f - 2 * se), np.nanpercentile(f[finite], 90)
        ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    ax.set_xlabel("update" if x == "step" else "gradient queries")
    ax.set_ylabel("F(q) = E_q V - H(q)  [nats, up to a constant]")
    ax.set_title(f"{result.target_name}: b = {result.batch_size}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    _save(fig, path)
    return Path(path)


def _save(fig, path):
    plt = _plt()
    fig.tight_layout()
    try:
        save_figure(fig, path, dpi=120)
    finally:
        plt.close(fig)
    return Path(path)
