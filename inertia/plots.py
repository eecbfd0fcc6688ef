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
    from ._io import save_figure

    fig.tight_layout()
    try:
        save_figure(fig, path, dpi=120)
    finally:
        plt.close(fig)
    return Path(path)


def hitting_table(rows, columns, path, *, title=None, row_labels=None, fmt="{:.3g}"):
    """A hitting-time table as a figure: rows x thresholds, `None` printed as "never" (censored).

    rows: list of lists of numbers or None (one list per method); columns: threshold labels.
    Cells are shaded by log10 of the value within each column (lighter = faster).
    """
    plt = _plt()
    vals = np.array([[np.nan if v is None else float(v) for v in r] for r in rows], dtype=float)
    if vals.ndim != 2 or vals.shape[1] != len(columns):
        raise ValueError(f"rows must be a list of lists of length {len(columns)}")
    labels = row_labels or [f"row {i}" for i in range(len(rows))]
    text = [["never" if not np.isfinite(v) else fmt.format(v) for v in r] for r in vals]
    colours = np.ones(vals.shape + (4,))
    cmap = plt.get_cmap("Blues")
    with np.errstate(divide="ignore", invalid="ignore"):
        logv = np.log10(vals)
        for j in range(vals.shape[1]):
            col = logv[:, j]
            ok = np.isfinite(col)
            if ok.any():
                lo, hi = col[ok].min(), col[ok].max()
                scale = (col - lo) / (hi - lo) if hi > lo else np.zeros_like(col)
                colours[ok, j] = cmap(0.15 + 0.6 * scale[ok])
            colours[~ok, j] = (0.92, 0.92, 0.92, 1.0)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(columns), 0.6 + 0.35 * len(rows)))
    ax.axis("off")
    tab = ax.table(cellText=text, rowLabels=labels, colLabels=[str(c) for c in columns],
                   cellColours=colours, loc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(8)
    if title:
        ax.set_title(title, fontsize=9)
    return _save(fig, path)


def ellipse_points(mean, cov, *, dims=(0, 1), level=2.0, num=200):
    """Points (num, 2) of the level-sigma ellipse of N(mean, cov) projected on coordinates `dims`."""
    i, j = dims
    m = np.asarray(mean, dtype=float)[[i, j]]
    S = np.asarray(cov, dtype=float)[np.ix_([i, j], [i, j])]
    w, V = np.linalg.eigh(S)
    t = np.linspace(0, 2 * np.pi, num)
    circle = np.stack([np.cos(t), np.sin(t)], axis=1)
    return m + level * (circle * np.sqrt(np.maximum(w, 0))) @ V.T


def covariance_ellipses(path, *, predicted, empirical=None, draws=None, dims=(0, 1),
                        level=2.0, labels=("predicted", "empirical"), title=None):
    """Covariance ellipses: predicted (mean, cov) vs empirical (mean, cov) and optional draws."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    if draws is not None:
        x = np.asarray(draws, dtype=float).reshape(-1, np.shape(draws)[-1])
        ax.scatter(x[:, dims[0]], x[:, dims[1]], s=2, alpha=0.15, color="grey")
    p = ellipse_points(*predicted, dims=dims, level=level)
    ax.plot(p[:, 0], p[:, 1], "-", color="C0", label=labels[0])
    if empirical is not None:
        e = ellipse_points(*empirical, dims=dims, level=level)
        ax.plot(e[:, 0], e[:, 1], "--", color="C3", label=labels[1])
    ax.set_xlabel(f"x[{dims[0]}]")
    ax.set_ylabel(f"x[{dims[1]}]")
    ax.set_title(title or f"{level:g}-sigma ellipses")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return _save(fig, path)


def w2_curves(path, curves: dict, *, x_label="step", title=None, floor=None):
    """W2 (or any distance) curves on log axes: curves = {label: (x, values)}; optional floor."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, (x, y) in curves.items():
        y = np.asarray(y, dtype=float)
        ax.plot(np.asarray(x), np.where(y > 0, y, np.nan), label=label)
    if floor is not None:
        ax.axhline(floor, color="grey", ls=":", label="floor")
    ax.set_yscale("log")
    ax.set_xlabel(x_label)
    ax.set_ylabel("W2")
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def traces(path, draws, *, names=None, max_dims=4, title=None):
    """Trace plots of draws (chain, draw, dim): one panel per coordinate (first max_dims)."""
    plt = _plt()
    x = np.asarray(draws, dtype=float)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3:
        raise ValueError(f"draws must be (chain, draw, dim); got shape {x.shape}")
    k = min(max_dims, x.shape[2])
    fig, axes = plt.subplots(k, 1, figsize=(7, 1.6 * k + 0.4), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        for c in range(x.shape[0]):
            ax.plot(x[c, :, i], lw=0.6, alpha=0.8)
        ax.set_ylabel(names[i] if names else f"x[{i}]")
    axes[-1, 0].set_xlabel("draw")
    if title:
        axes[0, 0].set_title(title)
    return _save(fig, path)
