"""`hfhr-bnn`: a Bayesian neural network on diabetes regression, test log-likelihood."""
from __future__ import annotations

import numpy as np

from inertia.plots import _plt
from .._runner import cell_key, markdown_table, run_cells, save_plot, start
from .._runner import finish as _finish
from ._common import LOGI_METHODS, _budgets, _mode_and_curvature, _window_estimates

BNN_FULL = dict(hidden=16, chains=32, steps=20000, thinning=20, checkpoints=20, h_factors=(0.5, 1.0),
                map_iters=3000)
BNN_QUICK = dict(hidden=8, chains=4, steps=400, thinning=4, checkpoints=5, h_factors=(1.0,),
                 map_iters=200)


def _diabetes_split(seed=0):
    """sklearn's diabetes regression, 80/20 split, X and y standardised on the training part."""
    try:
        from inertia.data import load_dataset

        ds = load_dataset("diabetes", standardize=False)
        X, y = np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y, dtype=np.float64)
    except (ImportError, KeyError, ValueError):
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = len(y) // 5
    te, tr = perm[:n_test], perm[n_test:]
    mx, sx = X[tr].mean(0), X[tr].std(0)
    my, sy = y[tr].mean(), y[tr].std()
    return ((X[tr] - mx) / sx, (y[tr] - my) / sy, (X[te] - mx) / sx, (y[te] - my) / sy)


def _bnn(hidden, X, y):
    """One-hidden-layer tanh network, N(0, 1) priors on weights and log noise sd; flat parameters."""
    import jax.numpy as jnp

    from inertia.targets import from_potential

    p = X.shape[1]
    shapes = [(p, hidden), (hidden,), (hidden,), (), ()]  # W1, b1, w2, b2, log_sigma
    sizes = [int(np.prod(s)) for s in shapes]
    offs = np.cumsum([0] + sizes)

    def unpack(theta):
        return [theta[offs[i]:offs[i + 1]].reshape(shapes[i]) for i in range(len(shapes))]

    def predict(theta, Xq):
        W1, b1, w2, b2, ls = unpack(theta)
        return jnp.tanh(Xq @ W1 + b1) @ w2 + b2, ls

    def predict_np(thetas, Xq):
        """Predictions (S, n) and log noise sds (S,) for S flat parameter draws, in numpy."""
        W1, b1, w2, b2, ls = (thetas[:, offs[i]:offs[i + 1]].reshape((-1,) + shapes[i])
                              for i in range(len(shapes)))
        hid = np.tanh(np.einsum("np,sph->snh", Xq, W1) + b1[:, None, :])
        return np.einsum("snh,sh->sn", hid, w2) + b2[:, None], ls

    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def potential(theta):
        f, ls = predict(theta, Xj)
        nll = jnp.sum(0.5 * ((yj - f) * jnp.exp(-ls)) ** 2 + ls)
        return nll + 0.5 * jnp.sum(theta**2)

    return from_potential(potential, int(offs[-1]), name=f"bnn-diabetes(h={hidden})"), predict_np


def _test_loglik(predict_np, draws, Xte, yte):
    """Mean over test points of log (1/S) sum_s N(y | f_s(x), sigma_s^2), and the RMSE of the mean."""
    from scipy.special import logsumexp

    f, ls = predict_np(draws, Xte)
    lp = -0.5 * ((yte - f) * np.exp(-ls)[:, None]) ** 2 - ls[:, None] - 0.5 * np.log(2 * np.pi)
    ll = logsumexp(lp, axis=0) - np.log(draws.shape[0])
    return float(np.mean(ll)), float(np.sqrt(np.mean((f.mean(0) - yte) ** 2)))


def _bnn_cell(method, h_factor, cfg, curv):
    from inertia.mcmc import default_parameters, sample

    Xtr, ytr, Xte, yte = _diabetes_split()
    target, predict = _bnn(cfg["hidden"], Xtr, ytr)
    tuned = target.replace(alpha=1.0, beta=curv["L"])  # m = prior precision (non-convex target)
    p = default_parameters(tuned, method)
    p["step_size"] *= h_factor
    if "gamma" in p:
        p["gamma"] = max(2.0, p["step_size"] * curv["L"])
    if "alpha" in p:
        p["alpha"] = 0.5 / (p["step_size"] * curv["L"])
    init = 0.1 * np.random.default_rng(2).standard_normal((cfg["chains"], target.dim))
    res = sample(tuned, method, num_chains=cfg["chains"], num_steps=cfg["steps"],
                 thinning=cfg["thinning"], seed=3, init=init, on_divergence="stop", **p)
    grads, lls, rmses = [], [], []
    for B, x in _window_estimates(res.draws, cfg["thinning"],
                                  _budgets(cfg["steps"], cfg["thinning"], cfg["checkpoints"])):
        grads.append(B + 1)
        if x.shape[0] == 0 or not np.all(np.isfinite(x)):
            lls.append(None), rmses.append(None)
            continue
        ll, rmse = _test_loglik(predict, x, Xte, yte)
        lls.append(ll), rmses.append(rmse)
    return {"method": method, "h_factor": h_factor, "params": p, "grads": grads,
            "test_loglik": lls, "test_rmse": rmses, "diverged": int((res.diverged_at > 0).sum())}


def run_bnn(out, quick=False, **options):
    """Bayesian neural network on diabetes regression: test log-likelihood vs gradient evaluations."""
    cfg = BNN_QUICK if quick else BNN_FULL
    out, t0, store = start(out)
    ckey = cell_key(bnn="curvature", hidden=cfg["hidden"], iters=cfg["map_iters"])

    def curvature():
        Xtr, ytr, _, _ = _diabetes_split()
        target, _ = _bnn(cfg["hidden"], Xtr, ytr)
        x0 = 0.1 * np.random.default_rng(2).standard_normal(target.dim)
        mode, _, L = _mode_and_curvature(target, x0, dense_hessian=False,
                                         maxiter=cfg["map_iters"])
        return {"L": L}

    curv = run_cells(store, [(ckey, curvature)], "hfhr-bnn curvature")[ckey]
    cells = [(cell_key(bnn=meth, hf=hf, hidden=cfg["hidden"], n=cfg["steps"], c=cfg["chains"]),
              (lambda meth=meth, hf=hf: _bnn_cell(meth, hf, cfg, curv)))
             for meth in LOGI_METHODS for hf in cfg["h_factors"]]
    runs = run_cells(store, cells, "hfhr-bnn")
    rows, best = [], {}
    for meth in LOGI_METHODS:
        cand = [v for v in runs.values() if v["method"] == meth]
        v = max(cand, key=lambda v: -np.inf if v["test_loglik"][-1] is None else v["test_loglik"][-1])
        best[meth] = v
        p = v["params"]
        mid = len(v["grads"]) // 2
        rows.append([meth, p["step_size"], p.get("gamma"), p.get("alpha"), v["grads"][mid],
                     v["test_loglik"][mid], v["grads"][-1], v["test_loglik"][-1], v["test_rmse"][-1],
                     v["diverged"]])
    table = (f"One-hidden-layer ({cfg['hidden']} tanh) BNN on diabetes (80/20 split, standardised); "
             f"{cfg['chains']} chains; predictive from all chains' draws in steps (B/2, B]; "
             f"L = {curv['L']:.4g} (power iteration at the MAP).\n\n"
             + markdown_table(["method", "h", "gamma", "alpha", "grads (mid)", "test loglik (mid)",
                               "grads (end)", "test loglik (end)", "test RMSE (end)",
                               "diverged chains"], rows))
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for meth, v in best.items():
        ax.semilogx(v["grads"], [np.nan if a is None else a for a in v["test_loglik"]], label=meth)
    ax.set_xlabel("gradient evaluations per chain")
    ax.set_ylabel("test log-likelihood")
    ax.legend(fontsize=7)
    save_plot(fig, out / "test_loglik_vs_grads.png")
    return _finish(out, "hfhr-bnn", store, {"rows": rows, "L": curv["L"], "runs": runs}, table, t0)


EXPERIMENTS = {"hfhr-bnn": run_bnn}
