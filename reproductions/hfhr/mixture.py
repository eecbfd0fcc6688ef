"""`hfhr-mixture`: mode switches on a two-component Gaussian mixture."""
from __future__ import annotations

import numpy as np

from inertia.plots import _plt
from .._runner import cell_key, markdown_table, run_cells, save_plot, start
from .._runner import finish as _finish
from ._common import _label

MIX_FULL = dict(sep=2.5, chains=64, steps=20000, thinning=2, step_sizes=(0.1, 0.25, 0.5),
                gammas=(0.5, 1.0, 2.0), alphas=(0.5, 1.0, 2.0))
MIX_QUICK = dict(sep=2.5, chains=16, steps=2000, thinning=2, step_sizes=(0.25,), gammas=(1.0,),
                 alphas=(1.0,))


def _mixture(sep):
    """(1/2) N(-sep e1, I) + (1/2) N(sep e1, I) in 2-D; -log pi has hess <= I (L = 1)."""
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    from inertia.targets import from_potential

    mu = jnp.array([sep, 0.0])

    def potential(x):
        return -logsumexp(jnp.stack([-0.5 * jnp.sum((x - mu) ** 2), -0.5 * jnp.sum((x + mu) ** 2)]))

    return from_potential(potential, 2, beta=1.0, name=f"mixture(sep={sep:g})")


def _switches(x1, sep):
    """Mode labels with hysteresis (switch when x1 crosses +-sep/2); switches per chain over time."""
    lab = np.where(x1 > sep / 2, 1, np.where(x1 < -sep / 2, -1, 0))
    # carry the last non-zero label forward along each chain
    idx = np.where(lab != 0, np.arange(lab.shape[1])[None, :], 0)
    np.maximum.accumulate(idx, axis=1, out=idx)
    filled = np.take_along_axis(lab, idx, axis=1)
    first = np.argmax(filled != 0, axis=1)
    filled = np.where(np.arange(lab.shape[1])[None, :] < first[:, None], 0, filled)
    change = (filled[:, 1:] != filled[:, :-1]) & (filled[:, :-1] != 0)
    return np.concatenate([np.zeros((lab.shape[0], 1), int), np.cumsum(change, axis=1)], axis=1), filled


def _mixture_cell(method, h, gamma, alpha, cfg):
    from inertia.mcmc import sample

    target = _mixture(cfg["sep"])
    res = sample(target, method, step_size=h, gamma=gamma, alpha=alpha, num_chains=cfg["chains"],
                 num_steps=cfg["steps"], thinning=cfg["thinning"], seed=7,
                 init=np.tile([-cfg["sep"], 0.0], (cfg["chains"], 1)), on_divergence="stop")
    cum, lab = _switches(res.draws[:, :, 0], cfg["sep"])
    grads = (np.arange(res.draws.shape[1]) + 1) * cfg["thinning"] + 1
    idx = np.unique(np.geomspace(1, len(grads), 60).astype(int) - 1)
    half = lab[:, lab.shape[1] // 2:]
    return {"method": method, "step_size": h, "gamma": gamma, "alpha": alpha,
            "switch_rate_per_1000_grads": float(cum[:, -1].mean() / res.grad_evals * 1000),
            "weight_plus": float((half > 0).mean()),
            "var_x2": float(res.draws[:, res.draws.shape[1] // 2:, 1].var()),
            "curve_grads": grads[idx],
            "curve_switches": cum[:, idx].mean(0), "diverged": int((res.diverged_at > 0).sum())}


def run_mixture(out, quick=False, **options):
    """Two-component Gaussian mixture: mode switches per gradient evaluation (ULA, KLMC, HFHR)."""
    cfg = MIX_QUICK if quick else MIX_FULL
    out, t0, store = start(out)
    cells = []
    for h in cfg["step_sizes"]:
        cells.append(("ula", h, None, None))
        for g in cfg["gammas"]:
            cells.append(("klmc", h, g, None))
            for a in cfg["alphas"]:
                if a * h < 2.0:
                    cells.append(("hfhr", h, g, a))
    keyed = [(cell_key(mix=m, h=h, g=g, a=a, n=cfg["steps"], c=cfg["chains"], v=2),
              (lambda m=m, h=h, g=g, a=a: _mixture_cell(m, h, g, a, cfg))) for m, h, g, a in cells]
    runs = run_cells(store, keyed, "hfhr-mixture")
    rows = []
    best = {}
    for v in runs.values():
        lab = _label(v["method"], v["alpha"])
        rows.append([lab, v["step_size"], v["gamma"], v["switch_rate_per_1000_grads"],
                     v["weight_plus"], v["var_x2"], v["diverged"]])
        if lab not in best or v["switch_rate_per_1000_grads"] > best[lab]["switch_rate_per_1000_grads"]:
            best[lab] = v
    rows.sort(key=lambda r: (r[0], r[1], r[2] or 0))
    table = (f"(1/2) N(-{cfg['sep']} e1, I) + (1/2) N({cfg['sep']} e1, I); {cfg['chains']} chains "
             f"x {cfg['steps']} steps from the left mode; a switch is a crossing of x1 = -+"
             f"{cfg['sep'] / 2:g} after visiting the other side; weight = fraction of time in the "
             "right mode over the second half (exact 0.5); Var x2 over the second half (exact 1) "
             "shows each setting's discretisation bias.\n\n"
             + markdown_table(["method", "h", "gamma", "switches / 1000 grads", "weight right",
                               "Var x2", "diverged chains"], rows))
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for lab, v in sorted(best.items()):
        ax.plot(v["curve_grads"], v["curve_switches"], label=f"{lab} h={v['step_size']:g}")
    ax.set(xlabel="gradient evaluations per chain", ylabel="mode switches per chain")
    ax.legend(fontsize=6)
    save_plot(fig, out / "switches_vs_grads.png")
    return _finish(out, "hfhr-mixture", store, {"rows": rows, "runs": runs}, table, t0)


EXPERIMENTS = {"hfhr-mixture": run_mixture}
