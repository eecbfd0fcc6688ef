"""Tables D.1-D.2: the time to compute Lambda against the time to sample."""
from __future__ import annotations

import math
import time

import numpy as np

from .._runner import cell_key, markdown_table, run_cells, start
from .._runner import finish as _finish
from ._data import sim_linear, sim_poisson


COST_FULL = dict(Ds=(5, 10, 20, 50), N=1000, B=64, epochs=10, repeats=5)
COST_QUICK = dict(Ds=(5, 10), N=400, B=64, epochs=10, repeats=2)


def _cost_cell(kind, D, cfg):
    import jax

    from inertia.sgmcmc import kernels, linear_regression, poisson_regression, tune
    from inertia.sgmcmc.offline import offline

    N, B = cfg["N"], cfg["B"]
    if kind == "linear":
        X, y, _ = sim_linear(0, D, N)
        model = linear_regression(X, y)
    else:
        X, y, _ = sim_poisson(0, D, N, theta_scale=1 / math.sqrt(D))
        model = poisson_regression(X, y)
    t0 = time.perf_counter()
    curv = offline(model)
    t_off = time.perf_counter() - t0
    lam_t = []
    for _ in range(cfg["repeats"]):
        t0 = time.perf_counter()
        t = tune(curv, batch_size=B, check=False)
        lam_t.append(time.perf_counter() - t0)
    steps = int(cfg["epochs"] * N / B)
    t0 = time.perf_counter()
    run = kernels.make_sampler(model, batch_size=B, num_draws=steps)
    np.asarray(run(jax.random.key(0), t.Lambda, curv.theta_hat[None]))
    first = time.perf_counter() - t0
    samp_t = []
    for r in range(cfg["repeats"]):
        t0 = time.perf_counter()
        np.asarray(run(jax.random.key(r + 1), t.Lambda, curv.theta_hat[None]))
        samp_t.append(time.perf_counter() - t0)
    lam, samp = float(np.median(lam_t)), float(np.median(samp_t))
    return {"lambda_s": lam, "offline_s": t_off, "sampling_s": samp, "sampling_first_s": first,
            "ratio": lam / samp, "ratio_incl_compile": lam / first, "steps": steps}


def run_cost(out, quick=False, **_):
    """Tables D.1-D.2: time to compute Lambda vs time to sample (N = 1000, B = 64, 10 epochs)."""
    cfg = COST_QUICK if quick else COST_FULL
    out, t0, store = start(out)
    cells = [(cell_key(exp="cost", kind=k, D=D, N=cfg["N"], B=cfg["B"]),
              lambda k=k, D=D: _cost_cell(k, D, cfg)) for k in ("linear", "poisson")
             for D in cfg["Ds"]]
    res = run_cells(store, cells, "sgmcmc-cost")
    rows = []
    for (k, _), (kind, D) in zip(cells, [(k, D) for k in ("linear", "poisson") for D in cfg["Ds"]]):
        r = res[k]
        rows.append([kind, D, f"{r['lambda_s']:.2e}", f"{r['sampling_s']:.2e}",
                     f"{r['ratio']:.2e}", f"{r['sampling_first_s']:.2e}",
                     f"{r['ratio_incl_compile']:.2e}"])
    table = (f"## Lambda time vs sampling time (N={cfg['N']}, B={cfg['B']}, {cfg['epochs']} "
             "epochs; median of repeats; 'first' includes JIT compilation)\n\n")
    table += markdown_table(["model", "D", "Lambda s", "sampling s", "ratio", "first run s",
                             "ratio incl. compile"], rows)
    table += "\npaper (Tables D.1-D.2): ratio 1e-5 to 1e-3 (their sampler runs 1.5-3 s).\n"
    return _finish(out, "sgmcmc-cost", store, {"config": cfg, "cells": res}, table, t0)


EXPERIMENTS = {"sgmcmc-cost": run_cost}
