"""Tuned SVI on posteriordb's `mcycle_gp-accel_gp` (d = 66): the F that `inertia.vi.fit` must reach.

NumPyro SVI, AutoMultivariateNormal (full-rank Gaussian on the unconstrained space, the family of
`fit`), Adam at each learning rate of a grid for a fixed number of steps, float64. Each final q,
and inertia's automatic fit, is scored by one estimator: F(q) = E_q V - H(q) over the same
NUM_DRAWS standard normals (common random numbers), V the target's potential (NumPyro's potential
energy: negative log joint plus log |Jacobian| on the unconstrained space), H the Gaussian's full
entropy (d/2) log(2 pi e) + log |det L|. This F is NumPyro's -ELBO; the script checks that on a
small model first (inertia's own F_hat, NumPyro's Trace_ELBO loss and this estimator at one q).

Run (from the repository root): `OPENBLAS_NUM_THREADS=1 python3 benchmarks/svi_accel_gp.py
[--steps 50000] [--lrs 3e-4,1e-3,3e-3] [--no-fit]` (the coarser grid: `--steps 20000 --lrs
1e-3,3e-3,1e-2,3e-2`); the numbers are printed (measured ones:
docs/benchmarks/index.md, "Gaussian VI against tuned SVI").
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpyro

numpyro.enable_x64()  # this script only: float64 SVI, as inertia's fit

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402
from numpyro.infer import SVI, Trace_ELBO  # noqa: E402
from numpyro.infer.autoguide import AutoMultivariateNormal  # noqa: E402
from numpyro.optim import Adam  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "public"))

import catalogue  # noqa: E402
import pdb_models  # noqa: E402
from inertia.targets import from_numpyro  # noqa: E402
from inertia.vi import fit  # noqa: E402

NAME = "mcycle_gp-accel_gp"
NUM_DRAWS = 10_000
SEED = 0


def score(target, mean, L, xi):
    """(F_hat, its standard error): mean_j V(mean + L xi_j) - H(N(mean, L L^T)) over the draws xi."""
    V = jax.jit(jax.vmap(target.potential))
    vals = np.concatenate([np.asarray(V(jnp.asarray(mean + c @ L.T))) for c in np.split(xi, 10)])
    d = len(mean)
    H = 0.5 * d * math.log(2 * math.pi * math.e) + float(np.sum(np.log(np.abs(np.diag(L)))))
    bad = ~np.isfinite(vals)
    if bad.any():
        return math.inf, math.inf
    return float(vals.mean() - H), float(vals.std() / math.sqrt(len(vals)))


def to_target_order(guide, params, d):
    """(mean, L) of the guide's q in the target's coordinate order (sorted site names, as
    `from_numpyro` flattens) from the guide's (trace order)."""
    loc = np.asarray(params["auto_loc"])
    Lg = np.asarray(params["auto_scale_tril"])
    perm = np.asarray(ravel_pytree(guide._unpack_latent(jnp.arange(d, dtype=jnp.float64)))[0])
    perm = perm.astype(int)  # entry k of the target's vector is entry perm[k] of the guide's
    # x_t = P x_g: mean P loc, covariance P Lg Lg^T P^T (its Cholesky factor for the entropy)
    S = Lg[perm] @ Lg[perm].T
    return loc[perm], np.linalg.cholesky(S)


def svi(model, args, lr, steps, seed=SEED):
    guide = AutoMultivariateNormal(model)
    run = SVI(model, guide, Adam(lr), Trace_ELBO()).run(
        jax.random.PRNGKey(seed), steps, *args, progress_bar=False, stable_update=True)
    return guide, run.params, np.asarray(run.losses)


def check_units():
    """inertia's F_hat, this script's F and NumPyro's -ELBO at one q of a small model."""
    y = jnp.array([0.3, -1.2, 2.1, 0.8, -0.4, 1.5])

    def small(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 3.0))
        sigma = numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)

    t = from_numpyro(small, y)
    r = fit(t, seed=SEED, quality=False)
    L = np.linalg.cholesky(np.asarray(r.cov))
    xi = np.random.default_rng(SEED).standard_normal((NUM_DRAWS, t.dim))
    mine, se = score(t, np.asarray(r.mean), L, xi)
    guide = AutoMultivariateNormal(small)
    numpyro.handlers.seed(guide, 0)(y)  # builds the guide's site layout
    perm = np.asarray(ravel_pytree(guide._unpack_latent(jnp.arange(t.dim, dtype=jnp.float64)))[0])
    inv = np.argsort(perm.astype(int))
    params = {"auto_loc": jnp.asarray(np.asarray(r.mean)[inv]),
              "auto_scale_tril": jnp.asarray(np.linalg.cholesky(np.asarray(r.cov)[np.ix_(inv, inv)]))}
    loss = Trace_ELBO(num_particles=NUM_DRAWS).loss(jax.random.PRNGKey(1), params, small, guide, y)
    print(f"units check (d = {t.dim}, a normal model with a log-normal scale), one q:")
    print(f"  inertia F_hat (its monitor)          {float(r.history['objective_estimate'][-1][0]):.4f}")
    print(f"  this script's E_q V - H               {mine:.4f} +- {se:.4f}")
    print(f"  NumPyro Trace_ELBO loss (-ELBO)       {float(loss):.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50000)
    ap.add_argument("--lrs", default="3e-4,1e-3,3e-3")
    ap.add_argument("--no-fit", action="store_true", help="skip inertia's fit")
    a = ap.parse_args()
    check_units()
    data = catalogue.load_data("mcycle_gp")
    model = pdb_models.accel_gp
    t = catalogue.load(NAME).target
    d = t.dim
    xi = np.random.default_rng(SEED).standard_normal((NUM_DRAWS, d))
    print(f"\n{NAME} (d = {d}); F = E_q V - H(q) on {NUM_DRAWS} common draws; lower is better")
    best = None
    for lr in [float(s) for s in a.lrs.split(",")]:
        t0 = time.time()
        guide, params, losses = svi(model, (data,), lr, a.steps)
        mean, L = to_target_order(guide, params, d)
        F, se = score(t, mean, L, xi)
        tail = losses[-1000:]
        print(f"  SVI Adam lr {lr:g}, {a.steps} steps: F {F:.3f} +- {se:.3f} (last 1000 losses "
              f"mean {np.nanmean(tail):.3f}); {time.time() - t0:.0f} s under load")
        if best is None or F < best[0]:
            best = (F, se, lr)
    print(f"  tuned SVI: F {best[0]:.3f} +- {best[1]:.3f} (lr {best[2]:g})")
    if not a.no_fit:
        t0 = time.time()
        r = fit(t, seed=SEED)
        L = np.linalg.cholesky(np.asarray(r.cov))
        F, se = score(t, np.asarray(r.mean), L, xi)
        print(f"  inertia.vi.fit(target, seed={SEED}): F {F:.3f} +- {se:.3f} (its F_hat "
              f"{float(r.history['objective_estimate'][-1][0]):.3f}); verdict: {r.verdict.line()}; "
              f"Pareto k-hat {r.quality['khat']:.3g}; {int(r.history['step'][-1])} updates; "
              f"{time.time() - t0:.0f} s under load")
        print(f"  F(fit) - F(tuned SVI) = {F - best[0]:.3f} +- {math.hypot(se, best[1]):.3f}")


if __name__ == "__main__":
    main()
