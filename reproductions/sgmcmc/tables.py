"""Tables 2-4 of the calibrated SG(L)D paper as printed (Sec. 6.1-6.2): misspecified linear
regression, Boston housing, simulated Poisson and German credit."""
from __future__ import annotations

import math

from .._runner import cell_key, start
from ._data import _boston, _german, sim_linear, sim_poisson
from ._report import _batch_grid, _table_run, _with_reps
from ._runs import _gaussian_refs, _linear_columns, _tuned_runs

LINEAR_FULL = dict(D=50, N=5000, runs=30, epochs=100, nuts_draws=1000)
LINEAR_QUICK = dict(D=5, N=400, runs=2, epochs=10, nuts_draws=0)  # NUTS: its own test
PAPER_T2 = {("log", "16"): dict(posterior=0.943, ct=0.672, **{"lr-ws": 0.995, "dq-exact": 0.664}),
            ("log", "0.1N"): dict(posterior=0.943, ct=0.975, **{"lr-ws": 0.996, "dq-exact": 0.672}),
            ("beta", "16"): dict(nuts=0.795, sandwich=0.0, ct=0.640,
                                 **{"lr-ws": 1.115, "dq-exact": 0.695}),
            ("beta", "0.1N"): dict(nuts=0.799, sandwich=0.0, ct=1.006,
                                   **{"lr-ws": 1.322, "dq-exact": 0.748})}


def _linear_cell(seed, loss, B, cfg):
    from inertia.sgmcmc import linear_regression
    from inertia.sgmcmc.offline import offline

    X, y, theta = sim_linear(seed, cfg["D"], cfg["N"])
    model = linear_regression(X, y, loss=loss, beta_div=1.5)
    return _linear_columns(model, offline(model), ("ct", "lr-ws", "dq-exact"), B, cfg, seed, theta)


def run_linear(out, quick=False, reps=None, **_):
    """Table 2: simulated misspecified linear regression, log loss and beta-loss."""
    cfg = _with_reps(LINEAR_QUICK if quick else LINEAR_FULL, reps)
    out, t0, store = start(out)
    cells, groups = _batch_grid(
        "linear", cfg, "loss", [("log", cfg["N"]), ("beta", cfg["N"])],
        lambda loss, B, s: _linear_cell(s, loss, B, cfg), D=cfg["D"], N=cfg["N"],
        epochs=cfg["epochs"], nuts=cfg["nuts_draws"])
    return _table_run(out, t0, store, "sgmcmc-linear", cfg, cells, groups,
                      ("posterior", "nuts", "ct", "lr-ws", "dq-exact", "sandwich"),
                      calib="calib_err", what="data sets", row_label="loss, B",
                      papers=[("paper, Table 2 (covariance error, means)", PAPER_T2)],
                      title="Table 2: covariance error")


# ---------------------------------------------------------------------------- sgmcmc-boston
BOSTON_FULL = dict(runs=30, epochs=100)
BOSTON_QUICK = dict(runs=1, epochs=10)
PAPER_T3 = {("log", "16"): dict(posterior=0.358, ct=0.247, **{"lr-ws": 9.23e8, "dq-exact": 0.337}),
            ("log", "0.1N"): dict(posterior=0.358, ct=0.589, **{"lr-ws": 1.40e7, "dq-exact": 0.352}),
            ("beta", "16"): dict(ct=2.054, **{"lr-ws": math.inf, "dq-exact": 2.782}),
            ("beta", "0.1N"): dict(ct=3.126, **{"lr-ws": math.inf, "dq-exact": 1.398})}


def _boston_setup(loss):
    from inertia.sgmcmc import linear_regression
    from inertia.sgmcmc.offline import offline

    X, y = _boston()
    model = linear_regression(X, y, loss=loss, beta_div=1.5)  # no intercept, sigma = OLS sd
    return model, offline(model)


def _boston_cell(loss, B, seed, cfg):
    model, curv = _boston_setup(loss)
    res = _tuned_runs(model, curv, ("ct", "lr-ws", "dq-exact"), B, cfg["epochs"], seed)
    res.update(_gaussian_refs(curv))
    return res


def run_boston(out, quick=False, reps=None, **_):
    """Table 3: Boston housing, 12 standardised predictors (no CHAS), no intercept."""
    cfg = _with_reps(BOSTON_QUICK if quick else BOSTON_FULL, reps)
    out, t0, store = start(out)
    cells, groups = _batch_grid("boston", cfg, "loss", [("log", 506), ("beta", 506)],
                                lambda loss, B, s: _boston_cell(loss, B, s, cfg),
                                epochs=cfg["epochs"])
    notes = {}
    for loss in ("log", "beta"):
        _, curv = _boston_setup(loss)
        notes[loss] = {"sigma": curv.sigma, "D": curv.dim, "N": curv.num_obs}
    return _table_run(out, t0, store, "sgmcmc-boston", cfg, cells, groups,
                      ("posterior", "ct", "lr-ws", "dq-exact", "sandwich"), calib=None,
                      what="SGD runs", row_label="loss, B",
                      papers=[("paper, Table 3 (means)", PAPER_T3)],
                      title="Table 3 (Boston): covariance error",
                      plot_methods=("posterior", "ct", "dq-exact"), notes=notes)


# ---------------------------------------------------------------------------- sgmcmc-poisson
POISSON_FULL = dict(D=50, N=5000, runs=30, epochs=100)
POISSON_QUICK = dict(D=5, N=400, runs=1, epochs=10)
PAPER_T4 = {("simulated", "16"): dict(ct=0.207, **{"dq-const": 0.672, "dq-exact": 0.208}),
            ("simulated", "0.1N"): dict(ct=0.230, **{"dq-const": 0.991, "dq-exact": 0.211}),
            ("credit", "16"): dict(ct=0.132, **{"dq-const": 0.982, "dq-exact": 0.157}),
            ("credit", "0.1N"): dict(ct=0.191, **{"dq-const": 0.997, "dq-exact": 0.154})}


def _poisson_cell(data, B, seed, cfg):
    from inertia.sgmcmc import poisson_regression
    from inertia.sgmcmc.offline import offline

    if data == "simulated":
        X, y, theta = sim_poisson(seed, cfg["D"], cfg["N"])
        model = poisson_regression(X, y)
    elif data == "simulated-scaled":  # x ~ N(0, I / D): eta ~ N(0, |theta*|^2 / D), moderate counts
        X, y, theta = sim_poisson(seed, cfg["D"], cfg["N"], x_scale=1 / math.sqrt(cfg["D"]))
        model = poisson_regression(X, y)
    else:
        X, y = _german()
        theta = None
        model = poisson_regression(X, y, intercept=True)
    curv = offline(model)
    res = _tuned_runs(model, curv, ("ct", "dq-const", "dq-exact"), B, cfg["epochs"], seed, theta)
    res["grad_norm"] = curv.grad_norm
    return res


def run_poisson(out, quick=False, reps=None, **_):
    """Table 4: simulated (well-specified) Poisson regression and German credit."""
    cfg = _with_reps(POISSON_QUICK if quick else POISSON_FULL, reps)
    out, t0, store = start(out)
    cells, groups = [], []
    for data, N in (("simulated", cfg["N"]), ("simulated-scaled", cfg["N"]), ("credit", 1000)):
        for B, bl in zip((16, N // 10), ("16", "0.1N")):
            keys = []
            for s in range(cfg["runs"]):
                k = cell_key(exp="poisson", data=data, B=B, seed=s, D=cfg["D"], N=N,
                             epochs=cfg["epochs"])
                cells.append((k, lambda s=s, data=data, B=B: _poisson_cell(data, B, s, cfg)))
                keys.append(k)
            groups.append((f"{data} B={bl}", keys))
    return _table_run(out, t0, store, "sgmcmc-poisson", cfg, cells, groups,
                      ("ct", "dq-const", "dq-exact"), calib="calib_err", what="runs",
                      row_label="data, B",
                      papers=[("paper, Table 4 (covariance error, means)", PAPER_T4)],
                      title="Table 4: covariance error")


EXPERIMENTS = {"sgmcmc-linear": run_linear, "sgmcmc-boston": run_boston,
               "sgmcmc-poisson": run_poisson}
