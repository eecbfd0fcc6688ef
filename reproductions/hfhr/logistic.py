"""`hfhr-logistic`: Bayesian logistic regression, error against a NUTS reference."""
from __future__ import annotations

import time

import numpy as np

from inertia.convergence import ess_bulk
from inertia.plots import _plt
from .._runner import cell_key, markdown_table, run_cells, save_plot, start
from .._runner import finish as _finish
from ._common import LOGI_METHODS, _budgets, _mode_and_curvature, _window_estimates

LOGI_FULL = dict(datasets=("wdbc", "german"), chains=64, steps=10000, thinning=10, checkpoints=25,
                 h_factors=(0.5, 1.0, 2.0), nuts=dict(chains=4, warmup=1000, samples=5000))
LOGI_QUICK = dict(datasets=("wdbc",), chains=16, steps=600, thinning=4, checkpoints=6,
                  h_factors=(1.0,), nuts=dict(chains=1, warmup=100, samples=150))


def _logistic_target(name):
    from inertia.data import load_dataset
    from inertia.targets import logistic_regression

    ds = load_dataset(name, standardize=True)
    return logistic_regression(ds.X, ds.y, prior_scale=1.0, name=f"logistic-{name}")


def _nuts_reference(target, chains, warmup, samples, seed=0):
    """Long NUTS run (NumPyro) on the potential: posterior mean, covariance, min ESS."""
    try:
        import jax
        import jax.numpy as jnp
        from numpyro.infer import MCMC, NUTS
    except ImportError as err:
        raise ImportError("hfhr-logistic needs NumPyro for its NUTS reference: "
                          "pip install 'inertia[numpyro]'") from err
    t0 = time.perf_counter()
    mc = MCMC(NUTS(potential_fn=target.potential), num_warmup=warmup, num_samples=samples,
              num_chains=chains, chain_method="vectorized", progress_bar=False)
    init = jnp.zeros((chains, target.dim)) if chains > 1 else jnp.zeros(target.dim)
    mc.run(jax.random.PRNGKey(seed), init_params=init)
    x = np.asarray(mc.get_samples(group_by_chain=True))
    flat = x.reshape(-1, target.dim)
    return {"mean": flat.mean(0), "cov": np.cov(flat, rowvar=False),
            "ess_min": float(np.min(ess_bulk(x))),
            "draws": int(flat.shape[0]), "seconds": time.perf_counter() - t0}


def _logistic_cell(dataset, method, h_factor, cfg, ref, curv):
    from inertia.mcmc import default_parameters, sample

    target = _logistic_target(dataset)
    tuned = target.replace(alpha=curv["m"], beta=curv["L"])
    p = default_parameters(tuned, method)
    p["step_size"] *= h_factor
    if "gamma" in p:
        p["gamma"] = max(2.0 * np.sqrt(curv["m"]), p["step_size"] * curv["L"])
    if "alpha" in p:
        p["alpha"] = 0.5 / (p["step_size"] * curv["L"])
    res = sample(tuned, method, num_chains=cfg["chains"], num_steps=cfg["steps"],
                 thinning=cfg["thinning"], seed=1, on_divergence="stop", **p)
    m_ref, C_ref = np.asarray(ref["mean"]), np.asarray(ref["cov"])
    grads, me, ce = [], [], []
    for B, x in _window_estimates(res.draws, cfg["thinning"],
                                  _budgets(cfg["steps"], cfg["thinning"], cfg["checkpoints"])):
        if not np.all(np.isfinite(x)) or x.shape[0] < 2:
            me.append(None), ce.append(None), grads.append(B + 1)
            continue
        grads.append(B + 1)
        me.append(float(np.linalg.norm(x.mean(0) - m_ref) / np.sqrt(np.trace(C_ref))))
        ce.append(float(np.linalg.norm(np.cov(x, rowvar=False) - C_ref) / np.linalg.norm(C_ref)))
    return {"dataset": dataset, "method": method, "h_factor": h_factor, "params": p,
            "grads": grads, "mean_err": me, "cov_err": ce, "diverged": int((res.diverged_at > 0).sum())}


def _first_below(xs, ys, tol):
    for x, y in zip(xs, ys):
        if y is not None and y <= tol:
            return x
    return None


def run_logistic(out, quick=False, **options):
    """Bayesian logistic regression (WDBC, German credit): error vs NUTS reference vs gradient evals."""
    cfg = LOGI_QUICK if quick else LOGI_FULL
    out, t0, store = start(out)
    res = {}
    for ds in cfg["datasets"]:
        nuts = cfg["nuts"]
        rkey = cell_key(ds=ds, ref="nuts", **nuts)
        ref = run_cells(store, [(rkey, lambda ds=ds: _nuts_reference(
            _logistic_target(ds), nuts["chains"], nuts["warmup"], nuts["samples"]))],
            f"hfhr-logistic reference {ds}")[rkey]
        ckey = cell_key(ds=ds, curvature="map")

        def curvature(ds=ds):
            t = _logistic_target(ds)
            mode, m, L = _mode_and_curvature(t, np.zeros(t.dim), dense_hessian=True)
            return {"mode": mode, "m": m, "L": L, "L_bound": t.beta}

        curv = run_cells(store, [(ckey, curvature)], f"hfhr-logistic curvature {ds}")[ckey]
        cells = [(cell_key(ds=ds, method=meth, hf=hf, n=cfg["steps"], c=cfg["chains"]),
                  (lambda meth=meth, hf=hf, ds=ds, ref=ref, curv=curv: _logistic_cell(
                      ds, meth, hf, cfg, ref, curv)))
                 for meth in LOGI_METHODS for hf in cfg["h_factors"]]
        res[ds] = {"reference": ref, "curvature": curv, "runs": run_cells(store, cells,
                                                                           f"hfhr-logistic {ds}")}
    rows = []
    best = {}
    for ds, r in res.items():
        for meth in LOGI_METHODS:
            runs = [v for v in r["runs"].values() if v["method"] == meth]
            finals = [(v["cov_err"][-1] if v["cov_err"][-1] is not None else np.inf) for v in runs]
            v = runs[int(np.argmin(finals))]
            best[(ds, meth)] = v
            p = v["params"]
            rows.append([ds, meth, p["step_size"], p.get("gamma"), p.get("alpha"),
                         _first_below(v["grads"], v["mean_err"], 0.1),
                         _first_below(v["grads"], v["cov_err"], 0.2),
                         v["mean_err"][-1], v["cov_err"][-1], v["grads"][-1]])
    refs = [[ds, r["reference"]["draws"], r["reference"]["ess_min"], r["curvature"]["m"],
             r["curvature"]["L"], r["curvature"]["L_bound"]] for ds, r in res.items()]
    table = ("Error of the posterior mean (|m - m_NUTS| / sqrt(tr C_NUTS)) and covariance "
             "(|C - C_NUTS|_F / |C_NUTS|_F) from all chains' draws in steps (B/2, B], "
             f"{cfg['chains']} chains started from the prior; best step-size factor per method.\n\n"
             + markdown_table(["data", "method", "h", "gamma", "alpha", "grads to mean err<=0.1",
                               "grads to cov err<=0.2", "final mean err", "final cov err",
                               "grads/chain"], rows)
             + "\n\nNUTS references and curvature at the mode (m, L) vs the global bound:\n\n"
             + markdown_table(["data", "NUTS draws", "min ESS", "m at mode", "L at mode",
                               "L bound"], refs))
    plt = _plt()
    fig, axes = plt.subplots(len(res), 2, figsize=(9, 3.3 * len(res)), squeeze=False)
    for i, ds in enumerate(res):
        for meth in LOGI_METHODS:
            v = best[(ds, meth)]
            for j, key in enumerate(("mean_err", "cov_err")):
                y = np.array([np.nan if e is None else e for e in v[key]])
                axes[i][j].loglog(v["grads"], y, label=meth)
                axes[i][j].set_title(f"{ds}: {key.replace('_', ' ')}", fontsize=9)
                axes[i][j].set_xlabel("gradient evaluations per chain")
    axes[0][0].legend(fontsize=7)
    save_plot(fig, out / "error_vs_grads.png")
    summary = {"rows": rows, "references": refs,
               "runs": {ds: r["runs"] for ds, r in res.items()}}
    return _finish(out, "hfhr-logistic", store, summary, table, t0)


EXPERIMENTS = {"hfhr-logistic": run_logistic}
