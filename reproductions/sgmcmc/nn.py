"""Fig. 2: a tanh network on diabetes, the theories' predicted against empirical SGD covariance."""
from __future__ import annotations

import numpy as np

from inertia.plots import _plt
from .._runner import cell_key, markdown_table, run_cells, save_plot, start
from .._runner import finish as _finish
from ._report import _fmt, _interval


NN_FULL = dict(lams=(0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 0.5), reps=30, epochs=300,
               max_steps=400_000, starts=(0, 1, 2, 3, 4))
NN_QUICK = dict(lams=(0.03, 0.3), reps=1, epochs=20, max_steps=10_000, starts=(0, 1, 2))
NN_SIZES = ((10, 2), (2, 3), (3, 1))


def _nn_loss():
    import jax.numpy as jnp

    def forward(theta, x):
        h, k = x, 0
        for j, (a, b) in enumerate(NN_SIZES):
            W = theta[k:k + a * b].reshape(a, b)
            c = theta[k + a * b:k + a * b + b]
            k += a * b + b
            h = h @ W + c
            if j < len(NN_SIZES) - 1:
                h = jnp.tanh(h)
        return h[0]

    def loss(theta, datum):
        x, y = datum
        return 0.5 * (y - forward(theta, x)) ** 2

    return loss, sum(a * b + b for a, b in NN_SIZES)


def _nn_setup(starts):
    """MAP of the network with a N(0, I) prior on the weights (weight decay 1/N; the paper does
    not state its regularisation): L-BFGS then Newton from each start; keep the minimum whose
    H = J + I/N is best conditioned (largest mu_min(H): fastest-mixing SGD, see docs)."""
    import jax
    import scipy.optimize
    import sklearn.datasets

    from inertia.sgmcmc import from_loss
    from inertia.sgmcmc.offline import curvature, fit_map

    d = sklearn.datasets.load_diabetes()
    X = (d.data - d.data.mean(0)) / d.data.std(0)
    y = (d.target - d.target.mean()) / d.target.std()
    loss, dim = _nn_loss()
    model = from_loss(loss, (X, y), dim, prior_precision=np.eye(dim), name="tanh-10-2-3-1")
    vg = jax.jit(jax.value_and_grad(model.objective))
    best = None
    for s in starts:
        th0 = np.random.default_rng(s).normal(size=dim) * 0.5
        r = scipy.optimize.minimize(lambda t: tuple(np.asarray(v) for v in vg(t)), th0, jac=True,
                                    method="L-BFGS-B",
                                    options=dict(maxiter=5000, gtol=1e-12, ftol=1e-15))
        fit = fit_map(model, r.x)
        curv = curvature(model, fit.theta)
        mu = np.linalg.eigvalsh(curv.H)[0]
        if mu > 0 and (best is None or mu > best[0]):
            best = (mu, curv, fit.objective, s)
    if best is None:
        raise RuntimeError("no local minimum with positive-definite H found")
    return model, best[1], {"mu_min": float(best[0]), "objective": float(best[2]),
                            "start": int(best[3])}


_NN_CACHE = {}


def _nn_cell(lam, rep, cfg):
    import jax

    from inertia.sgmcmc import iat, kernels, rel_fro, stationary, theory_cov

    key = tuple(cfg["starts"])
    if key not in _NN_CACHE:
        _NN_CACHE[key] = _nn_setup(cfg["starts"])
    model, curv, facts = _NN_CACHE[key]
    B, N, D = 32, model.num_obs, model.dim
    L = lam * np.eye(D)
    mu = np.linalg.eigvalsh(curv.H)
    rec = {"lambda_mu_max": float(lam * mu[-1]), "setup": facts}
    try:
        st = stationary(curv, L, batch_size=B)
    except ValueError as err:
        return dict(rec, error=str(err))
    tau = iat(st).worst
    steps = int(min(max(cfg["epochs"] * N / B, 50 * tau), cfg["max_steps"]))
    burn = min(steps // 2, max(steps // 10, int(5 * tau)))
    thin = max(1, (steps - burn) // 50_000)
    run = kernels.make_sampler(model, batch_size=B,
                               num_draws=(steps - burn) // thin, thin=thin, burn_in=burn)
    draws = np.asarray(run(jax.random.key(100 + rep), L, curv.theta_hat[None]))[0]
    if not np.all(np.isfinite(draws)):
        return dict(rec, error="SGD diverged")
    emp = np.cov(draws.T)
    rec.update(iat=tau, steps=steps, n_eff=(steps - burn) / tau,
               left_mode=float(np.linalg.norm(draws.mean(0) - curv.theta_hat)
                               / np.sqrt(np.trace(emp))))
    for th in ("ct", "dq-const", "dq-exact"):
        try:
            rec[th] = rel_fro(theory_cov(curv, L, th, batch_size=B), emp)
        except ValueError as err:
            rec[th] = None
            rec[th + "_error"] = str(err)
    return rec


def run_nn(out, quick=False, **_):
    """Fig. 2: tanh network 10 -> 2 -> 3 -> 1 on diabetes; predicted vs empirical covariance."""
    cfg = NN_QUICK if quick else NN_FULL
    out, t0, store = start(out)
    cells = [(cell_key(exp="nn", lam=lam, rep=r, epochs=cfg["epochs"], max_steps=cfg["max_steps"],
                       starts=len(cfg["starts"])),
              lambda lam=lam, r=r: _nn_cell(lam, r, cfg))
             for lam in cfg["lams"] for r in range(cfg["reps"])]
    res = run_cells(store, cells, "sgmcmc-nn")
    theories = ("ct", "dq-const", "dq-exact")
    summ, rows = {}, []
    for lam in cfg["lams"]:
        vals = [res[cell_key(exp="nn", lam=lam, rep=r, epochs=cfg["epochs"],
                             max_steps=cfg["max_steps"], starts=len(cfg["starts"]))]
                for r in range(cfg["reps"])]
        if any("error" in v for v in vals):
            summ[lam] = {"error": vals[0].get("error")}
            rows.append([lam] + ["unstable"] * 3 + ["—", "—"])
            continue
        summ[lam] = {th: _interval([v[th] for v in vals]) for th in theories}
        summ[lam]["iat"] = float(np.mean([v["iat"] for v in vals]))
        summ[lam]["n_eff"] = float(np.mean([v["n_eff"] for v in vals]))
        rows.append([lam] + [_fmt(summ[lam][th]) for th in theories]
                    + [f"{summ[lam]['iat']:.3g}", f"{summ[lam]['n_eff']:.3g}"])
    table = (f"## Fig. 2: ||Sigma_theory - Sigma_emp||_F / ||Sigma_emp||_F, B = 32, Lambda = "
             f"lambda I (mean [2.5 %, 97.5 %] over {cfg['reps']} SGD runs)\n\n")
    table += markdown_table(["lambda"] + list(theories) + ["IAT (pred.)", "n_eff"], rows)
    facts = next(iter(res.values())).get("setup")
    table += f"\nsettings: {cfg}; mode: {facts}\n"
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    lams = [l for l in cfg["lams"] if "error" not in summ[l]]
    for th in theories:
        m = np.array([summ[l][th]["mean"] for l in lams])
        lo = np.array([summ[l][th]["lo"] for l in lams])
        hi = np.array([summ[l][th]["hi"] for l in lams])
        ax.plot(lams, m, "-o", ms=3, label=th)
        ax.fill_between(lams, lo, hi, alpha=0.2)
    if lams:
        ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no stable learning rate", ha="center", transform=ax.transAxes)
    ax.set(xlabel="learning rate lambda", ylabel="relative covariance prediction error")
    ax.legend(fontsize=7)
    save_plot(fig, out / "fig2.png")
    return _finish(out, "sgmcmc-nn", store, {"config": cfg, "summary": summ}, table, t0)


EXPERIMENTS = {"sgmcmc-nn": run_nn}
