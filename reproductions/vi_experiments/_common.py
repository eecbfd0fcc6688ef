"""What the Gaussian-VI experiments share: seeds and data sets, configuration overrides, the paper's
variants, one fit per cell (seeds vmapped), the targets, and gap-curve figures."""
from __future__ import annotations

import contextlib
import functools
import inspect
import math
import warnings
from pathlib import Path

import numpy as np

from inertia.vi import PAPER_METHODS, fit, get_method
from inertia.variational.registry import FIELD_METHODS
from .. import hitting as ht
from .._runner import cell_key, run_cells, save_plot

SEEDS = tuple(20260831 + 997 * j for j in range(5))  # App. D.4
DATASETS = ("sonar", "ionosphere", "wdbc", "pima", "banknote")
PAIRS = tuple(n for n in PAPER_METHODS if get_method(n).accelerable)  # the six matched pairs
THRESHOLDS = (1e-2, 1e-3, 1e-4, 1e-5)  # Table 4 (1e-3 and 1e-4 inferred)
EXACT_ON_GAUSSIANS = ("fd", "paired")  # samplewise exact estimators: one seed suffices (App. D.1)


# ----------------------------------------------------------------------------------- helpers
def _config(table: dict, quick: bool, options: dict) -> dict:
    """The full / quick configuration with any keys overridden from `options`."""
    cfg = dict(table["quick" if quick else "full"])
    for key in cfg:
        if key in options and options[key] is not None:
            val = options[key]
            cfg[key] = tuple(val) if isinstance(val, (list, tuple)) else val
    known = list(PAPER_METHODS) + FIELD_METHODS
    unknown = [m for m in (*cfg.get("methods", ()), *cfg.get("field", ())) if m not in known]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; available: {', '.join(known)}")
    bad = [d for d in cfg.get("datasets", ()) if d not in DATASETS]
    if bad:
        raise ValueError(f"unknown datasets {bad}; available: {', '.join(DATASETS)}")
    return cfg


def variants(methods=PAPER_METHODS) -> list:
    """(method, accelerated) for every paper variant: both for the six pairs, plain for baselines."""
    out = []
    for name in methods:
        accs = (True, False) if get_method(name).accelerable else (False,)
        out += [(name, a) for a in accs]
    return out


def label(method: str, acc: bool) -> str:
    return f"{method} (acc)" if acc else (method if get_method(method).baseline else
                                          f"{method} (plain)")


def _color(method: str):
    import matplotlib

    names = list(PAPER_METHODS) + FIELD_METHODS
    return matplotlib.colormaps["tab20"](names.index(method) % 20)


def _blas_threads(n):
    """Limit OpenBLAS/MKL threads (used by numpy, scipy and XLA's CPU LAPACK calls) to n.

    With more runnable threads than cores, multithreaded OpenBLAS spins: a 208 x 208 eigh took
    0.67 s with 2 threads on a loaded 2-core machine and 13 ms with one (docs/reproduction.md).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def _run_cells(store, cells, name, options):
    """`run_cells`, passing backend/address through when the runner accepts them; with
    `saved_only=True` only the cells already saved are loaded (a report on a partial run)."""
    if options.get("saved_only"):
        cells = [(key, fn) for key, fn in cells if store.has(key)]
    params = inspect.signature(run_cells).parameters
    extra = {k: options[k] for k in ("backend", "address") if k in options and k in params}
    with _blas_threads(options.get("blas_threads", 1)):
        return run_cells(store, cells, name, **extra)


def _fit_cell(target_fn, target_arg, method, acc, batch, num_steps, every, seeds) -> dict:
    """One fit with vmapped seeds; checkpointed gaps (checkpoints x seeds) and query counts."""
    target = target_fn(target_arg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # divergence is recorded in the cell
        res = fit(target, method, accelerated=acc, batch_size=batch, num_steps=num_steps,
                  seed=list(seeds), checkpoint_every=every)
    h = res.history
    gap = np.asarray(h["gap"], dtype=float).reshape(len(h["step"]), len(seeds))
    return {"target": target.name, "method": method, "accelerated": acc, "batch": batch,
            "seeds": list(seeds), "num_steps": num_steps, "steps": h["step"], "gap": gap,
            "grad_evals": h["grad_evals"], "hvp_evals": h["hvp_evals"],
            "run_seconds": float(h["seconds"][-1]), "compile_seconds": res.compile_seconds,
            "eta": res.step_rule["eta"], "rho": res.step_rule["rho"], "diverged": res.diverged,
            "f_star": res.f_star, "final_mean_gap": float(ht.mean_gap(gap)[-1])}


def _arrays(cell):
    return (np.asarray(cell["steps"]), np.asarray(cell["gap"], dtype=float),
            np.asarray(cell["grad_evals"], dtype=float))


def _final(cell):
    """Seed-mean gap after the last update, None if the run stopped early (diverged) or is
    missing (not saved, in a `saved_only` report)."""
    if cell is None:
        return None
    steps, gap, _ = _arrays(cell)
    if cell.get("diverged") or steps[-1] < cell["num_steps"]:
        return None
    v = ht.mean_gap(gap)[-1]
    return float(v) if math.isfinite(v) else None


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # gaps at float64 rounding level (<= 0) are masked; an all-masked checkpoint is not an error
    warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
    warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
    return plt


def _curve_figure(path, panels, *, xlabel="update", ylabel="F(q) - F_ref", log_x=False):
    """One panel per (title, curves); a curve is (label, x, gaps, accelerated, method)."""
    from inertia.plots import gap_band

    plt = _plt()
    n = max(len(panels), 1)
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    for ax, (title, curves) in zip(axes.ravel(), panels):
        for lab, x, gaps, acc, method in curves:
            if np.any(np.asarray(gaps, dtype=float) > 0):
                gap_band(ax, x, gaps, label=lab, accelerated=acc, color=_color(method))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if log_x:
            ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=7,
                   frameon=False)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_plot(fig, path, rect=(0, 0.06 + 0.02 * (len(labels) // 6), 1, 1))


# ----------------------------------------------------------------------------------- targets
@functools.lru_cache(maxsize=None)
def kappa_target(kappa):
    """The d = 8 kappa-family pi_kappa."""
    from inertia.targets import kappa_family

    return kappa_family(8, float(kappa))


@functools.lru_cache(maxsize=None)
def graph_probit_target(name):
    """Graph-probit posterior of a data set, cached so F_ref is solved once."""
    from inertia.targets.graph_probit import graph_probit_dataset

    return graph_probit_dataset(name)


LOGISTIC_NODE_FACTORS = (1, 2, 4, 8)


def _node_factor(t) -> int:
    """Smallest node multiplier whose rungs (192 f, 384 f) agree within 1e-8 at q0 = N(0, I) and at
    N(0, 4 I) (wider than any iterate we saw): the trapezoid must resolve softplus at scale 1/sd."""
    import jax.numpy as jnp

    from inertia.variational.objective import AGREEMENT, _objective_fn, half_logdet

    m = jnp.zeros((2, t.dim))
    S = jnp.stack([jnp.eye(t.dim), 4.0 * jnp.eye(t.dim)])
    hld = half_logdet(S, "cov")
    for f in LOGISTIC_NODE_FACTORS:
        lo, hi = (np.asarray(_objective_fn(t.expectations_at(f * o))(m, S, hld))
                  for o in (192, 384))
        if np.all(np.abs(lo - hi) <= AGREEMENT):
            return f
    return LOGISTIC_NODE_FACTORS[-1]


@functools.lru_cache(maxsize=None)
def logistic_target(name):
    """Bayesian logistic regression with intercept, prior N(0, I) (our setup)."""
    from inertia.data import load_dataset
    from inertia.targets import logistic_regression

    ds = load_dataset(name)
    t = logistic_regression(ds.X, ds.y, name=f"logistic-{ds.name}")
    # Wide marginals (sd ~ 8-50 for x_i^T w on Sonar) defeat the 192/384-node trapezoid: there
    # orders 192 and 384 differ by 2e-5 at q0 = N(0, I). The evaluation ladder's order k uses
    # f * k nodes, f the smallest multiplier that agrees within 1e-8 (docs/reproduction.md).
    f = _node_factor(t)
    at, bound_at = t.expectations_at, t.quadrature_error_at
    return t.replace(expectations=at(f * 192), expectations_at=lambda order: at(f * order),
                     quadrature_error_at=lambda order: bound_at(f * order),
                     info=dict(t.info, dataset=ds.name, n=ds.X.shape[0], p=ds.X.shape[1],
                               quadrature_nodes_factor=f))


TARGETS = {"kappa": kappa_target, "graph-probit": graph_probit_target,
           "logistic": logistic_target}


def _fit(kind, arg, method, acc, batch, num_steps, every, seeds):
    return _fit_cell(TARGETS[kind], arg, method, acc, batch, num_steps, every, seeds)


def _key(kind, arg, method, acc, batch, num_steps, every, seeds):
    return cell_key(target=f"{kind}-{arg}", method=method, acc=int(acc), b=batch, T=num_steps,
                    every=every, seeds=f"{seeds[0]}x{len(seeds)}")


def _cell(kind, arg, method, acc, batch, num_steps, every, seeds):
    args = (kind, arg, method, acc, batch, num_steps, every, tuple(seeds))
    return _key(*args), functools.partial(_fit, *args)
