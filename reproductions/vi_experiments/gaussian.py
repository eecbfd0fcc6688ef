"""The Gaussian experiments (App. D.1): Fig. 2 (`kappa-scaling`, updates to a 1e-6 gap against
kappa) and Fig. 5 (`gaussian-methods`, every variant on one ill-conditioned Gaussian)."""
from __future__ import annotations

import math

import numpy as np

from inertia.vi import PAPER_METHODS, get_method
from inertia.variational.registry import FIELD_METHODS
from .. import hitting as ht
from .._runner import finish, markdown_table, save_plot, start
from ._common import (EXACT_ON_GAUSSIANS, SEEDS, _arrays, _cell, _config, _curve_figure, _final,
                      _plt, _run_cells, label, variants)

KAPPA = {"full": dict(kappas=(10, 30, 100, 300, 1000, 3000), dim=8, batch=64, budget=120,
                      threshold=1e-6, seeds=SEEDS, field=tuple(FIELD_METHODS), field_steps=300),
         "quick": dict(kappas=(10, 30, 100), dim=8, batch=64, budget=90, threshold=1e-6,
                       seeds=SEEDS, field=(), field_steps=300)}
GAUSS = {"full": dict(kappa=300, dim=8, batches=(1, 8, 64), num_steps=6000, every=1,
                      methods=(*PAPER_METHODS, *FIELD_METHODS), threshold=1e-6, seeds=SEEDS),
         "quick": dict(kappa=300, dim=8, batches=(8,), num_steps=600, every=5,
                       methods=("stl-proj", "fd-proj", "svrgvi"), threshold=1e-6, seeds=SEEDS)}


# ----------------------------------------------------------------------------- kappa-scaling
def run_kappa_scaling(out, quick=False, **options) -> dict:
    """Fig. 2: STL-proj b = 64, acc vs plain; first update with 5-seed mean gap <= 1e-6 vs kappa."""
    cfg = _config(KAPPA, quick, options)
    out, t0, store = start(out)
    cells, index = [], {}
    for kappa in cfg["kappas"]:
        for acc in (True, False):
            key, fn = _cell("kappa", kappa, "stl-proj", acc, cfg["batch"],
                            int(cfg["budget"] * kappa), max(1, kappa // 30), cfg["seeds"])
            cells.append((key, fn))
            index[(kappa, acc)] = key
    findex = {}  # the field's affine-invariant methods: a fixed, kappa-free budget
    for kappa in cfg["kappas"]:
        for method in cfg["field"]:
            key, fn = _cell("kappa", kappa, method, False, cfg["batch"], cfg["field_steps"], 1,
                            cfg["seeds"])
            cells.append((key, fn))
            findex[(kappa, method)] = key
    res = _run_cells(store, cells, "kappa-scaling", options)
    hits = {k: ht.hitting_time(*_arrays(res[key])[:2], cfg["threshold"], relative=False)
            for k, key in index.items()}
    rows, slopes = [], {}
    for kappa in cfg["kappas"]:
        a, p = hits[(kappa, True)], hits[(kappa, False)]
        rows.append([kappa, int(cfg["budget"] * kappa), a, p, (p / a) if a and p else None,
                     a / math.sqrt(kappa) if a else None, p / kappa if p else None])
    for acc in (True, False):
        ks = [k for k in cfg["kappas"] if hits[(k, acc)]]
        if len(ks) >= 3:
            slopes["acc" if acc else "plain"] = ht.loglog_slope(ks, [hits[(k, acc)] for k in ks])
    md = [markdown_table(["kappa", "budget", "acc hit", "plain hit", "plain/acc", "acc/sqrt(kappa)",
                          "plain/kappa"], rows),
          "\nHitting step: first update where the 5-seed mean gap is <= 1e-6 "
          "(checkpoints every max(1, kappa // 30) updates; — = censored at the budget).\n\n"]
    srows = [[k, s["slope"], s["stderr"], f"[{s['low']:.3f}, {s['high']:.3f}]", s["n"],
              {"acc": 0.5, "plain": 1.0}[k]] for k, s in slopes.items()]
    md.append(markdown_table(["variant", "log-log slope", "stderr", "95 % interval", "points",
                              "theory"], srows, floatfmt=".4g"))
    if cfg["field"]:
        fhits = {k: ht.hitting_time(*_arrays(res[key])[:2], cfg["threshold"], relative=False)
                 for k, key in findex.items()}
        frows = [[k] + [fhits[(k, f)] for f in cfg["field"]] for k in cfg["kappas"]]
        md += ["\n\nThe field's methods (default steps, b = "
               f"{cfg['batch']}, budget {cfg['field_steps']} updates): first update with 5-seed "
               "mean gap <= 1e-6.\n\n",
               markdown_table(["kappa", *cfg["field"]], frows)]
        summary_field = [[k, f, fhits[(k, f)]] for (k, f) in fhits]
    else:
        summary_field = []
    _plot_kappa(out, cfg, res, index, hits, slopes)
    summary = {"config": cfg, "hits": [[k, a, hits[(k, a)]] for (k, a) in hits],
               "slopes": slopes, "rows": rows, "field_hits": summary_field,
               "cells": {key: {k: v for k, v in res[key].items() if k not in ("gap", "steps",
                                                                                 "grad_evals",
                                                                                 "hvp_evals")}
                         for key in res}}
    return finish(out, "kappa-scaling", store, summary, "".join(md), t0)


def _plot_kappa(out, cfg, res, index, hits, slopes):
    from inertia.plots import gap_band

    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    cmap = plt.get_cmap("viridis")
    for i, kappa in enumerate(cfg["kappas"]):
        col = cmap(i / max(1, len(cfg["kappas"]) - 1))
        for acc in (True, False):
            steps, gap, _ = _arrays(res[index[(kappa, acc)]])
            gap_band(ax1, steps / kappa, gap, accelerated=acc, color=col,
                     label=f"kappa={kappa}" if acc else None)
    ax1.axhline(cfg["threshold"], color="k", lw=0.6)
    ax1.set_xlabel("update / kappa")
    ax1.set_ylabel("KL(q || pi_kappa)")
    ax1.set_title("STL-proj b=64: solid acc, dashed plain")
    ax1.legend(fontsize=7)
    ax1.grid(True, which="both", alpha=0.3)
    for acc, marker, col in ((True, "o", "C0"), (False, "s", "C3")):
        ks = [k for k in cfg["kappas"] if hits[(k, acc)]]
        hs = [hits[(k, acc)] for k in ks]
        name = "acc" if acc else "plain"
        ax2.loglog(ks, hs, marker, color=col, label=name)
        if name in slopes:
            s = slopes[name]
            kk = np.geomspace(min(ks), max(ks), 20)
            ax2.loglog(kk, np.exp(s["intercept"]) * kk ** s["slope"], "-" if acc else "--",
                       color=col, label=f"{name}: slope {s['slope']:.3f} ± {s['stderr']:.3f}")
    ax2.set_xlabel("kappa")
    ax2.set_ylabel("updates to mean gap <= 1e-6")
    ax2.legend(fontsize=8)
    ax2.grid(True, which="both", alpha=0.3)
    save_plot(fig, out / "kappa_scaling.png")


# -------------------------------------------------------------------------- gaussian-methods
def run_gaussian_methods(out, quick=False, **options) -> dict:
    """Fig. 5: all 17 variants at kappa = 300, b in {1, 8, 64}, 6000 updates, exact gaps."""
    cfg = _config(GAUSS, quick, options)
    out, t0, store = start(out)
    cells, index = [], {}
    for b in cfg["batches"]:
        for method, acc in variants(cfg["methods"]):
            exact = get_method(method).estimator in EXACT_ON_GAUSSIANS
            seeds = cfg["seeds"][:1] if exact else cfg["seeds"]
            key, fn = _cell("kappa", cfg["kappa"], method, acc, b, cfg["num_steps"], cfg["every"],
                            seeds)
            cells.append((key, fn))
            index[(b, method, acc)] = key
    res = _run_cells(store, cells, "gaussian-methods", options)
    rows, panels = [], []
    for b in cfg["batches"]:
        curves = []
        for method, acc in variants(cfg["methods"]):
            c = res[index[(b, method, acc)]]
            steps, gap, _ = _arrays(c)
            hit = ht.hitting_time(steps, gap, cfg["threshold"], relative=False)
            rows.append([b, label(method, acc), len(c["seeds"]), _final(c), hit, c["eta"],
                         c["rho"], c["grad_evals"][1] / max(1, c["steps"][1]) if len(c["steps"]) > 1
                         else None, c["run_seconds"], "yes" if c["diverged"] else ""])
            curves.append((label(method, acc), steps, gap, acc, method))
        panels.append((f"kappa = {cfg['kappa']}, b = {b}", curves))
    _curve_figure(out / "gaussian_methods.png", panels, ylabel="KL(q || pi)")
    md = markdown_table(["b", "variant", "seeds", f"final mean gap (T={cfg['num_steps']})",
                         "first update with gap <= 1e-6", "eta", "rho", "grads/update",
                         "run s", "diverged"], rows)
    summary = {"config": cfg, "rows": rows}
    return finish(out, "gaussian-methods", store, summary, md, t0)


EXPERIMENTS = {"kappa-scaling": run_kappa_scaling, "gaussian-methods": run_gaussian_methods}
