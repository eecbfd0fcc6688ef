"""The calibrated-SG(L)D paper's error bound and test-loss predictions, measured:
`inertia reproduce sgmcmc-w2-bound | sgmcmc-test-loss [--quick]` (Fig. D.1 and Fig. E.3).

sgmcmc-w2-bound: Poisson regression (N = 2000, D = 50), data well specified or negative binomial
(r = 5) fitted by Poisson; SGD with Lambda = lambda I for B in {16, 32, 256} over a grid of
lambda / B. Each point runs SGD and its proxy on the same minibatches (synchronous coupling) and
reports the coupled W2 (an upper bound on W2), the mean gap (a lower bound), the exact OT between
the two samples, and the plug-in bounds (Corollary 4.6, and Theorem 4.5 with the measured fourth
moment); the log-log slope of the coupled W2 against lambda / B.
sgmcmc-test-loss: ridge regression on the heteroskedastic data of eq. E.2 (D = 20, N = 2000),
lambda = 0.1: test loss of SGD iterates against the prediction of each theory, over weight decay
(B = 32 as in the paper, and B = 4) and over batch size (no weight decay).
"""
from __future__ import annotations

import math

import numpy as np

from inertia.plots import _plt
from ._runner import cell_key, markdown_table, run_cells, save_plot, start
from ._runner import finish as _finish

THETA_SEED = 7  # theta* ~ N(0, I), fixed across settings




def _g(x, digits=3):
    if x is None:
        return "—"
    x = float(x)
    if not math.isfinite(x):
        return "∞"
    return f"{x:.{digits}g}"


# ------------------------------------------------------------------------- sgmcmc-w2-bound
W2_FULL = dict(N=2000, D=50, Bs=(16, 32, 256), ratios=(0.001, 0.002, 0.004, 0.008, 0.016),
               r=5.0, chains=4, burn_relax=5, run_relax=40, blocks=500, ot_points=2000,
               settings=("poisson", "negbin"))
W2_QUICK = dict(N=400, D=5, Bs=(16, 64), ratios=(0.002, 0.008), r=5.0, chains=4,
                burn_relax=5, run_relax=15, blocks=100, ot_points=400,
                settings=("poisson", "negbin"))


def count_data(setting: str, N: int, D: int, r: float = 5.0, seed: int = 0):
    """x ~ N(0, I / D), theta* ~ N(0, I) (so x^T theta* ~ N(0, 1)); y ~ Poisson(exp(x^T theta*))
    ("poisson", eq. D.1) or NegBin with p = r / (r + exp(x^T theta*)) ("negbin", eq. D.2; same mean,
    variance mu + mu^2 / r)."""
    theta = np.random.default_rng(THETA_SEED).normal(size=D)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)) / math.sqrt(D)
    mu = np.exp(X @ theta)
    if setting == "poisson":
        y = rng.poisson(mu)
    elif setting == "negbin":
        y = rng.negative_binomial(r, r / (r + mu))
    else:
        raise ValueError(f"unknown setting {setting!r}; choose 'poisson' or 'negbin'")
    return X, y.astype(float), theta


_MODELS: dict = {}


def _w2_model(setting, cfg):
    """Poisson model and theta_hat for a setting (memoised in the process)."""
    key = (setting, cfg["N"], cfg["D"], cfg["r"])
    if key not in _MODELS:
        from inertia.sgmcmc import poisson_regression
        from inertia.sgmcmc.offline import fit_map

        X, y, _ = count_data(setting, cfg["N"], cfg["D"], cfg["r"])
        model = poisson_regression(X, y)
        _MODELS[key] = (model, fit_map(model).theta)
    return _MODELS[key]


def _w2_gap_cell(setting, B, ratio, cfg):
    """First-order prediction of the mean gap, ||H^-1 E grad^3 L[Sigma_psi]|| / 2 (bounds.mean_shift)."""
    from inertia.sgmcmc import stationary_cov

    from . import bounds
    from inertia.sgmcmc.offline import curvature

    model, th = _w2_model(setting, cfg)
    key = ("curv", setting, cfg["N"], cfg["D"], cfg["r"])
    if key not in _MODELS:
        _MODELS[key] = curvature(model, th)
    S = stationary_cov(_MODELS[key], ratio * B, batch_size=B)
    return {"gap_predicted": float(np.linalg.norm(bounds.mean_shift(model, th, S)))}


def _w2_setup(setting, cfg):
    from . import bounds

    model, th = _w2_model(setting, cfg)
    c = bounds.constants(model, th)
    return {"constants": c._asdict(), "theta_hat": th,
            "A": bounds.corollary_constant(c),
            "corollary_ratio_limit": {B: bounds.regime(c, 1e-3, B)["corollary_limit"] / B
                                      for B in cfg["Bs"]}}


def _lengths(B, mu, cfg):
    """Burn-in and run length (per chain) for batch size B: set by the smallest lambda / B of the
    grid and the smallest mu of the settings, so one compilation serves every cell with this B."""
    relax = 1.0 / (min(cfg["ratios"]) * B * mu)  # iterations per e-fold of the slowest direction
    burn = int(math.ceil(cfg["burn_relax"] * relax))
    block = max(1, int(math.ceil(cfg["run_relax"] * relax / cfg["blocks"])))
    return burn, block


def _w2_cell(setting, B, ratio, setup, mu_min, cfg):
    from . import bounds

    model, th = _w2_model(setting, cfg)
    c = bounds.BoundConstants(**setup["constants"])
    burn, block = _lengths(B, mu_min, cfg)
    lam = ratio * B
    rec = bounds.measure(model, th, lam, batch_size=B, num_steps=block * cfg["blocks"],
                         burn_in=burn, num_chains=cfg["chains"], num_blocks=cfg["blocks"],
                         seed=int(1000 * B + 1e6 * ratio), ot=True,
                         ot_points=cfg["ot_points"], constants_=c, predict_gap=False)
    rec.update(setting=setting, lambda_L=lam * c.L)
    return rec


def _w2_plot(path, cfg, setups, rows):
    plt = _plt()
    fig, axes = plt.subplots(1, len(cfg["settings"]), figsize=(5 * len(cfg["settings"]), 3.8),
                             squeeze=False)
    ratios = np.array(cfg["ratios"])
    for ax, s in zip(axes[0], cfg["settings"]):
        for B in cfg["Bs"]:
            rs = [r for r in rows if r["setting"] == s and r["batch_size"] == B]
            x = np.array([r["ratio"] for r in rs])
            ax.errorbar(x, [r["coupled"] for r in rs], yerr=[2 * r["coupled_se"] for r in rs],
                        fmt="o-", ms=4, label=f"coupled W2, B={B}")
            ax.plot(x, [r["mean_gap"] for r in rs], "x", color=ax.lines[-1].get_color(), ms=4)
            ax.plot(x, [r["gap_predicted"] for r in rs], ":", color=ax.lines[-1].get_color())
            ax.plot(x, [r["bound_theorem_m4_measured"] for r in rs], "--", lw=1,
                    color=ax.lines[-1].get_color())
        ax.plot(ratios, setups[s]["A"] * ratios, "k-", lw=1.5, label="Cor. 4.6 plug-in A λ/B")
        ref = np.median([r["coupled"] / r["ratio"] for r in rows if r["setting"] == s])
        ax.plot(ratios, ref * ratios, color="0.6", lw=0.8, label="slope 1")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("λ / B")
        ax.set_ylabel("W2(SGD, proxy)")
        ax.set_title({"poisson": "well specified (Poisson data)",
                      "negbin": "misspecified (NegBin data, r=5)"}[s], fontsize=9)
        ax.legend(fontsize=6)
    fig.text(0.01, 0.01, "x: mean gap (lower bound), dotted: its first-order prediction; "
             "dashed: Thm 4.5 with measured E||psi-theta_hat||^4",
             fontsize=6)
    save_plot(fig, path)


def run_w2_bound(out, quick=False, **_):
    """Fig. D.1: empirical W2 between SGD and the proxy against lambda / B, with the bound."""
    from reproductions.bounds import loglog_slope

    cfg = W2_QUICK if quick else W2_FULL
    out, t0, store = start(out)
    base = dict(exp="w2", N=cfg["N"], D=cfg["D"], r=cfg["r"])
    setup_cells = [(cell_key(part="setup", setting=s, **base), lambda s=s: _w2_setup(s, cfg))
                   for s in cfg["settings"]]
    res = run_cells(store, setup_cells, "sgmcmc-w2-bound setup")
    setups = {s: res[k] for s, (k, _) in zip(cfg["settings"], setup_cells)}
    mu_min = min(setups[s]["constants"]["mu"] for s in cfg["settings"])
    grid = [(s, B, q) for s in cfg["settings"] for B in cfg["Bs"] for q in cfg["ratios"]]
    cells = [(cell_key(part="run", setting=s, B=B, ratio=q, chains=cfg["chains"],
                       relax=f"{cfg['burn_relax']}-{cfg['run_relax']}", blocks=cfg["blocks"],
                       **base),
              lambda s=s, B=B, q=q: _w2_cell(s, B, q, setups[s], mu_min, cfg))
             for s, B, q in grid]
    res = run_cells(store, cells, "sgmcmc-w2-bound")
    gap_cells = [(cell_key(part="gap", setting=s, B=B, ratio=q, **base),
                  lambda s=s, B=B, q=q: _w2_gap_cell(s, B, q, cfg)) for s, B, q in grid]
    gaps = run_cells(store, gap_cells, "sgmcmc-w2-bound gap prediction")
    rows = [dict(res[k], **gaps[g]) for (k, _), (g, _) in zip(cells, gap_cells)]
    slopes = {}
    for s in cfg["settings"]:
        sel = [r for r in rows if r["setting"] == s]
        per_b = {}
        for B in cfg["Bs"]:
            rb = [r for r in sel if r["batch_size"] == B]
            sl, se = loglog_slope([r["ratio"] for r in rb], [r["coupled"] for r in rb],
                                  [r["coupled_se"] for r in rb])
            per_b[B] = {"slope": sl, "se": se}
        sl, se = loglog_slope([r["ratio"] for r in sel], [r["coupled"] for r in sel],
                              [r["coupled_se"] for r in sel])
        slopes[s] = {"pooled": {"slope": sl, "se": se}, "per_batch": per_b,
                     "max_coupled_over_bound": max(r["coupled"] / r["bound"] for r in sel),
                     "all_below_bound": all(r["coupled"] <= r["bound"] for r in sel)}
    table = (f"## Fig. D.1: W2 between SGD and its proxy, N={cfg['N']}, D={cfg['D']}, "
             f"Lambda = lambda I\n\ncoupled: sqrt(mean ||theta_t - psi_t||^2) on the same "
             "minibatches (upper bound on W2) ± 1 s.e.; gap: ||mean(theta_t - psi_t)|| (lower "
             "bound); gap pred.: first-order mean shift ||H^-1 E grad^3 L[Sigma_psi]|| / 2; "
             "OT: exact W2 between the two samples; Cor. 4.6: plug-in A lambda/B; "
             "Thm 4.5 (m4): stationary Theorem 4.5 with the measured E||psi - theta_hat||^4.\n\n")
    table += markdown_table(
        ["data", "B", "λ/B", "λ", "coupled", "gap", "gap pred.", "OT", "Cor. 4.6",
         "Thm 4.5 (m4)", "in Cor. regime"],
        [[r["setting"], r["batch_size"], _g(r["ratio"]), _g(r["step_size"]),
          f"{_g(r['coupled'])} ± {_g(r['coupled_se'], 2)}", _g(r["mean_gap"]),
          _g(r["gap_predicted"]), _g(r["ot"]),
          _g(r["bound"]), _g(r["bound_theorem_m4_measured"]),
          "yes" if r["in_corollary_regime"] else "no"] for r in rows])
    table += "\n## log-log slope of the coupled W2 against λ/B (weighted, ± 1 s.e.)\n\n"
    table += markdown_table(
        ["data", "pooled"] + [f"B={B}" for B in cfg["Bs"]] + ["max coupled / bound"],
        [[s, f"{v['pooled']['slope']:.3f} ± {v['pooled']['se']:.3f}"]
         + [f"{v['per_batch'][B]['slope']:.3f} ± {v['per_batch'][B]['se']:.3f}"
            for B in cfg["Bs"]] + [f"{v['max_coupled_over_bound']:.2e}"]
         for s, v in slopes.items()])
    table += "\n## plug-in constants at theta_hat\n\n" + markdown_table(
        ["data", "L", "mu", "M̄", "M²̄", "tau4^4", "max_n ||J_n||", "A"],
        [[s, _g(v["constants"]["L"]), _g(v["constants"]["mu"]), _g(v["constants"]["M_bar"]),
          _g(v["constants"]["M2_bar"]), _g(v["constants"]["tau4_4"]),
          _g(v["constants"]["L_obs"]), _g(v["A"])] for s, v in setups.items()])
    table += f"\nsettings: {cfg}\n"
    _w2_plot(out / "w2_bound.png", cfg, setups, rows)
    summary = {"config": cfg, "setups": setups, "points": rows, "slopes": slopes}
    return _finish(out, "sgmcmc-w2-bound", store, summary, table, t0)


# ------------------------------------------------------------------------ sgmcmc-test-loss
TL_FULL = dict(D=20, N=2000, M=10_000, lam=0.1, wd_batches=(32, 4),
               decays=(0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0), batches=(2, 4, 8, 16, 32, 64, 128, 256),
               chains=4, draws=20_000, thin=5, burn=500)
TL_QUICK = dict(D=5, N=500, M=2000, lam=0.1, wd_batches=(4,), decays=(0.0, 1.0),
                batches=(4, 32), chains=2, draws=2000, thin=2, burn=200)
THEORY_LABEL = {"dq-exact": "ours (discrete, exact noise)", "ct": "continuous time",
                "dq-const": "discrete, constant noise"}


def _tl_data(cfg):
    from .sgmcmc import sim_linear

    X, y, _ = sim_linear(0, cfg["D"], cfg["N"], p_out=0.0)  # eq. E.2
    Xt, yt, _ = sim_linear(1, cfg["D"], cfg["M"], p_out=0.0)  # test set, same theta*
    return X, y, Xt, yt


def _tl_cell(B, decay, cfg):
    """Test loss of SGD iterates (Lambda = lam I) vs each theory; weight decay gamma = decay * N."""
    import jax

    from inertia.sgmcmc import kernels

    from . import test_loss
    from inertia.sgmcmc.offline import offline

    X, y, Xt, yt = _tl_data(cfg)
    gamma = decay * cfg["N"]
    model = test_loss.ridge(X, y, gamma)
    curv = offline(model)
    lam = cfg["lam"]
    pred = test_loss.predicted(curv, Xt, yt, lam, batch_size=B)
    rec = {"B": B, "decay": decay, "gamma": gamma,
           "lambda_mu_max": float(lam * np.linalg.eigvalsh(curv.H)[-1]),
           "predicted": {k: (None if v is None else v._asdict()) for k, v in pred.items()}}
    if pred["dq-exact"] is None:
        rec["empirical"] = None
        rec["error"] = "no stationary covariance for this step and batch (second moments diverge)"
        return rec
    run = kernels.make_sampler(model, batch_size=B, num_draws=cfg["draws"], thin=cfg["thin"],
                               burn_in=cfg["burn"])
    draws = np.asarray(run(jax.random.key(int(B * 1000 + 100 * decay)), lam * np.eye(model.dim),
                           np.tile(curv.theta_hat, (cfg["chains"], 1))))
    if not np.all(np.isfinite(draws)):
        rec["empirical"] = None
        rec["error"] = "SGD diverged"
        return rec
    emp = test_loss.empirical(draws, Xt, yt)
    rec["empirical"] = emp._asdict()
    rec["z"] = {k: (None if v is None else (v["total"] - emp.mean) / emp.se)
                for k, v in rec["predicted"].items()}
    rec["excess_rel_err"] = {  # error of the predicted spread term relative to the measured one
        k: (None if v is None else (v["total"] - emp.mean) / (emp.mean - v["residual"]))
        for k, v in rec["predicted"].items()}
    return rec


def _tl_plot(path, cfg, wd, bs):
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    ax = axes[0]
    for B, recs in wd.items():
        x = [r["decay"] for r in recs]
        ok = [r for r in recs if r["empirical"]]
        ax.errorbar([r["decay"] for r in ok], [r["empirical"]["mean"] for r in ok],
                    yerr=[2 * r["empirical"]["se"] for r in ok], fmt="ko", ms=4,
                    label="SGD iterates" if B == list(wd)[0] else None)
        for th, st in zip(THEORY_LABEL, ("-", "--", ":")):
            ax.plot(x, [np.nan if r["predicted"][th] is None else r["predicted"][th]["total"]
                        for r in recs], st, label=f"{THEORY_LABEL[th]}, B={B}")
    ax.set_xlabel("weight decay γ / N")
    ax.set_ylabel("test loss (MSE)")
    ax.set_title(f"λ = {cfg['lam']}", fontsize=9)
    ax.legend(fontsize=6)
    ax = axes[1]
    x = [r["B"] for r in bs]
    ok = [r for r in bs if r["empirical"]]
    ax.errorbar([r["B"] for r in ok], [r["empirical"]["mean"] for r in ok],
                yerr=[2 * r["empirical"]["se"] for r in ok], fmt="ko", ms=4, label="SGD iterates")
    for th, st in zip(THEORY_LABEL, ("-", "--", ":")):
        ax.plot(x, [np.nan if r["predicted"][th] is None else r["predicted"][th]["total"]
                    for r in bs], st, label=THEORY_LABEL[th])
    ax.axhline(bs[0]["predicted"]["dq-exact"]["residual"] if bs[0]["predicted"]["dq-exact"]
               else np.nan, color="0.6", lw=0.8, label="residual at θ̂")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_title(f"λ = {cfg['lam']}, γ = 0", fontsize=9)
    ax.legend(fontsize=6)
    save_plot(fig, path)


def run_test_loss(out, quick=False, **_):
    """Fig. E.3: ridge-regression test loss of SGD iterates vs each theory's prediction."""
    cfg = TL_QUICK if quick else TL_FULL
    out, t0, store = start(out)
    pairs = [(B, d) for B in cfg["wd_batches"] for d in cfg["decays"]]
    pairs += [(B, 0.0) for B in cfg["batches"] if (B, 0.0) not in pairs]
    base = dict(exp="testloss", D=cfg["D"], N=cfg["N"], M=cfg["M"], lam=cfg["lam"],
                chains=cfg["chains"], draws=cfg["draws"], thin=cfg["thin"], burn=cfg["burn"])
    cells = [(cell_key(B=B, decay=d, **base), lambda B=B, d=d: _tl_cell(B, d, cfg))
             for B, d in pairs]
    res = run_cells(store, cells, "sgmcmc-test-loss")
    by = {pair: res[k] for pair, (k, _) in zip(pairs, cells)}
    wd = {B: [by[(B, d)] for d in cfg["decays"]] for B in cfg["wd_batches"]}
    bs = [by[(B, 0.0)] for B in cfg["batches"]]

    def row(r, first):
        emp = r["empirical"]
        cells_ = [first, f"{emp['mean']:.4f} ± {emp['se']:.4f}" if emp else "diverges"]
        for th in THEORY_LABEL:
            p = r["predicted"][th]
            if p is None:
                cells_.append("—")
            elif emp:
                cells_.append(f"{p['total']:.4f} ({r['z'][th]:+.1f} s.e.)")
            else:
                cells_.append(f"{p['total']:.4f}")
        p = r["predicted"]["dq-exact"] or r["predicted"]["ct"]
        cells_.append(f"{p['residual']:.4f}" if p else "—")
        return cells_

    hdr = ["", "SGD iterates ± s.e."] + [THEORY_LABEL[t] for t in THEORY_LABEL] + ["residual at θ̂"]
    table = (f"## Fig. E.3: ridge regression test loss, eq. E.2 data (D={cfg['D']}, N={cfg['N']}, "
             f"{cfg['M']} test points), Lambda = {cfg['lam']} I\n\nPredicted: mean squared residual "
             "at θ̂ + mean xᵀΣx with Σ from each theory; in brackets (prediction − empirical) in "
             "Monte Carlo standard errors.\n")
    for B, recs in wd.items():
        table += f"\n### over weight decay γ/N, B = {B}\n\n"
        table += markdown_table(["γ/N"] + hdr[1:], [row(r, r["decay"]) for r in recs])
    table += "\n### over batch size, γ = 0\n\n"
    table += markdown_table(["B"] + hdr[1:], [row(r, r["B"]) for r in bs])
    best = {}
    for B, recs in wd.items():
        ok = [r for r in recs if r["empirical"]]
        if ok:
            emp_best = min(ok, key=lambda r: r["empirical"]["mean"])["decay"]
            best[B] = {"empirical": emp_best}
            for th in THEORY_LABEL:
                cand = [r for r in recs if r["predicted"][th]]
                if cand:
                    best[B][th] = min(cand, key=lambda r: r["predicted"][th]["total"])["decay"]
    table += "\n### weight decay (γ/N on the grid) minimising the test loss\n\n"
    table += markdown_table(["B", "SGD iterates"] + [THEORY_LABEL[t] for t in THEORY_LABEL],
                            [[B, v["empirical"]] + [v.get(t, "—") for t in THEORY_LABEL]
                             for B, v in best.items()])
    table += f"\nsettings: {cfg}\n"
    _tl_plot(out / "test_loss.png", cfg, wd, bs)
    summary = {"config": cfg, "weight_decay": {str(B): v for B, v in wd.items()},
               "batch_size": bs, "best_decay": {str(B): v for B, v in best.items()}}
    return _finish(out, "sgmcmc-test-loss", store, summary, table, t0)


EXPERIMENTS = {"sgmcmc-w2-bound": run_w2_bound, "sgmcmc-test-loss": run_test_loss}
