"""`sample(target)` (exact HFHR by default) against NumPyro NUTS with a dense mass matrix, same run.

Per target: inertia's default `sample(target, seed=s)` (Laplace/VI preconditioner, dual-averaged
step, trajectory by gradients per ESS, run until bulk ESS >= 400) and NumPyro NUTS(dense_mass=True),
1000 warm-up + 1000 draws, 4 chains each. Gradients are every gradient of the run, all chains and
warm-up included (inertia: `res.total_grad_evals`, fit and HVPs counted; NUTS: the leapfrog steps of
warm-up and sampling). ESS is the least bulk ESS (inertia's diagnostics) over the model's parameters (rank-based, so
the same in constrained and unconstrained coordinates). Errors are the largest over parameters of
|mean - ref| / sd_ref and |sd - sd_ref| / sd_ref against closed forms (Gaussian, Student-t, banana,
funnel) or a long NUTS reference run (4 x 25 000 draws). Optionally the unadjusted default of
before (`--with-hfhr`: method="hfhr").
Run: `nice -n 19 python benchmarks/mcmc_exact.py [--targets a,b] [--seeds 0,1] [--json PATH]`;
the numbers in docs/hfhr.md are in benchmarks/results/mcmc_exact.json.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)
from inertia.diagnostics import chain_stats
from inertia.targets import from_potential, kappa_family

CHAINS = 4
SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def _identity(x):
    return np.asarray(x)


def gaussian10():
    t = kappa_family(10, 100.0, seed=0)
    cov = np.linalg.inv(np.asarray(t.info["precision"]))
    return t, _identity, (np.asarray(t.info["mean"]), np.sqrt(np.diag(cov)))


def student10(nu=30.0):
    """Correlated Student-t (nu = 30, d = 10, kappa 100): the Laplace fit's scale is off by
    sqrt((nu + d) / (nu - 2)), so the whitening is imperfect and the tails are not Gaussian."""
    g = kappa_family(10, 100.0, seed=1)
    P = jnp.asarray(g.info["precision"])
    d = 10

    def potential(x):
        return 0.5 * (nu + d) * jnp.log1p(x @ P @ x / nu)

    sd = np.sqrt(np.diag(np.linalg.inv(np.asarray(P))) * nu / (nu - 2))
    return from_potential(potential, d, name="student-t10"), _identity, (np.zeros(d), sd)


def banana():
    """x1 ~ N(0, 9), x2 | x1 ~ N(0.25 (x1^2 - 9), 1): sd(x2) = sqrt(11.125)."""
    t = from_potential(lambda x: x[0] ** 2 / 18 + 0.5 * (x[1] - 0.25 * (x[0] ** 2 - 9)) ** 2, 2,
                       name="banana")
    return t, _identity, (np.zeros(2), np.array([3.0, math.sqrt(11.125)]))


def funnel(d=10):
    """Neal's funnel: v ~ N(0, 9), x_i | v ~ N(0, e^v) (i < d): sd(x_i) = e^{9/4}."""
    def potential(z):
        v, x = z[0], z[1:]
        return v**2 / 18 + 0.5 * (d - 1) * v + 0.5 * jnp.sum(x**2) * jnp.exp(-v)

    sd = np.concatenate([[3.0], np.full(d - 1, math.exp(2.25))])
    return from_potential(potential, d, name="funnel10"), _identity, (np.zeros(d), sd)


def _numpyro_target(model, *args):
    from inertia.targets import from_numpyro

    t = from_numpyro(model, *args)
    sites = sorted(t.info["sites"])

    def constrain(x):
        out = t.info["constrain"](np.asarray(x))
        return np.concatenate([np.asarray(out[s]).reshape(*np.shape(x)[:-1], -1) for s in sites],
                              axis=-1)

    return t, constrain, None


def eight_schools_nc():
    import numpyro
    import numpyro.distributions as dist

    def model(sigma, y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        with numpyro.plate("J", 8):
            th = numpyro.sample("theta_tilde", dist.Normal(0.0, 1.0))
            numpyro.sample("obs", dist.Normal(mu + tau * th, sigma), obs=y)

    return _numpyro_target(model, jnp.asarray(SCHOOLS_SIGMA), jnp.asarray(SCHOOLS_Y))


def hier_linear(G=8, n=10):
    """y_ij ~ N(a_j + b x_ij, sigma), a_j = mu + tau a~_j (non-centred), 8 groups of 10."""
    import numpyro
    import numpyro.distributions as dist

    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(G), n)
    x = rng.normal(size=G * n)
    a = 1.0 + 0.7 * rng.normal(size=G)
    y = a[g] + 0.5 * x + rng.normal(size=G * n)

    def model(g, x, y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfNormal(2.5))
        b = numpyro.sample("b", dist.Normal(0.0, 2.5))
        sigma = numpyro.sample("sigma", dist.HalfNormal(2.5))
        with numpyro.plate("G", G):
            ar = numpyro.sample("a_raw", dist.Normal(0.0, 1.0))
        numpyro.sample("obs", dist.Normal(mu + tau * ar[g] + b * x, sigma), obs=y)

    return _numpyro_target(model, jnp.asarray(g), jnp.asarray(x), jnp.asarray(y))


def scaled_regression(n=50):
    """Linear regression with predictors on scales 1, 100, 0.01 and unknown sigma (near-Gaussian)."""
    import numpyro
    import numpyro.distributions as dist

    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3)) * np.array([1.0, 100.0, 0.01])
    y = 0.5 + X @ np.array([1.0, 0.01, 50.0]) + rng.normal(size=n)

    def model(X, y):
        b0 = numpyro.sample("b0", dist.Normal(0.0, 10.0))
        b = numpyro.sample("b", dist.Normal(jnp.zeros(3), jnp.array([10.0, 1.0, 1000.0])))
        sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
        numpyro.sample("obs", dist.Normal(b0 + X @ b, sigma), obs=y)

    return _numpyro_target(model, jnp.asarray(X), jnp.asarray(y))


TARGETS = {"gaussian10": gaussian10, "student-t10": student10, "regression-scaled": scaled_regression,
           "hier-linear8": hier_linear, "eight-schools-nc": eight_schools_nc, "banana": banana,
           "funnel10": funnel}


def nuts(t, seed, warmup=1000, draws=1000, chains=CHAINS):
    """NumPyro NUTS(dense_mass=True) on V: (draws (chain, draw, d), gradients, divergences, s)."""
    from numpyro.infer import MCMC, NUTS

    kern = NUTS(potential_fn=t.potential, dense_mass=True)
    mc = MCMC(kern, num_warmup=warmup, num_samples=draws, num_chains=chains,
              chain_method="vectorized", progress_bar=False)
    key = jax.random.PRNGKey(seed)
    init = t.info.get("init")
    x0 = (jnp.broadcast_to(jnp.asarray(init), (chains, t.dim)) if init is not None else
          jax.random.normal(jax.random.fold_in(key, 1), (chains, t.dim)))
    x0 = x0 + 0.1 * jax.random.normal(jax.random.fold_in(key, 2), (chains, t.dim))
    t0 = time.perf_counter()
    mc.warmup(key, init_params=x0, extra_fields=("num_steps",), collect_warmup=True)
    warm = int(np.sum(np.asarray(mc.get_extra_fields()["num_steps"])))
    mc.run(jax.random.fold_in(key, 3), extra_fields=("num_steps", "diverging"))
    ex = mc.get_extra_fields(group_by_chain=True)
    z = np.asarray(mc.get_samples(group_by_chain=True))
    return z, warm + int(np.sum(np.asarray(ex["num_steps"]))), int(np.sum(ex["diverging"])), \
        time.perf_counter() - t0


def reference(name, t, constrain, truth, cache):
    if truth is not None:
        return truth
    if name not in cache:
        z, _, div, _ = nuts(t, 12345, warmup=2000, draws=25000)
        y = constrain(z).reshape(-1, len(constrain(z[0, :1])[0]))
        cache[name] = (y.mean(0), y.std(0, ddof=1))
        print(f"  reference {name}: 4 x 25000 NUTS draws, {div} divergences", file=sys.stderr)
    return cache[name]


def score(y, ref):
    mu, sd = ref
    flat = y.reshape(-1, y.shape[-1])
    ess = float(np.nanmin(chain_stats(y)["ess_bulk"]))
    return {"mean_err": float(np.max(np.abs(flat.mean(0) - mu) / sd)),
            "sd_err": float(np.max(np.abs(flat.std(0, ddof=1) - sd) / sd)), "ess": ess}


def run_inertia(t, constrain, ref, seed, method=None):
    from inertia.mcmc import sample

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kw = {} if method is None else {"method": method}
        res = sample(t, seed=seed, on_divergence="stop", **kw)
    wall = time.perf_counter() - t0
    s = score(constrain(res.draws), ref)
    out = {"sampler": res.method, "grads": int(res.total_grad_evals), "wall_s": wall, **s,
           "grads_per_ess": res.total_grad_evals / max(s["ess"], 1e-9),
           "converged": bool(res.converged), "params": res.params,
           "verdict": res.diagnostics.line() if res.diagnostics is not None else None}
    if res.chains:
        out.update(acceptance=res.chains["acceptance_rate"], divergences=res.chains["divergences"],
                   step_size=res.chains["step_size"], choice=res.tuning["choice"],
                   final_accept=res.tuning["final_accept"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--with-hfhr", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--refs", default="benchmarks/results/mcmc_exact_refs.json",
                    help="cache of the long NUTS reference runs (mean, sd per parameter)")
    args = ap.parse_args(argv)
    rows, cache = [], {}
    try:
        with open(args.refs) as fh:
            cache = {k: (np.asarray(v[0]), np.asarray(v[1])) for k, v in json.load(fh).items()}
    except FileNotFoundError:
        pass
    for name in args.targets.split(","):
        t, constrain, truth = TARGETS[name]()
        ref = reference(name, t, constrain, truth, cache)
        with open(args.refs, "w") as fh:
            json.dump({k: [np.asarray(v[0]).tolist(), np.asarray(v[1]).tolist()]
                       for k, v in cache.items()}, fh, indent=1)
        for seed in (int(s) for s in args.seeds.split(",")):
            r = run_inertia(t, constrain, ref, seed)
            z, g, div, wall = nuts(t, seed)
            s = score(constrain(z), ref)
            n = {"sampler": "nuts-dense", "grads": g, "wall_s": wall, **s,
                 "grads_per_ess": g / max(s["ess"], 1e-9), "divergences": div}
            entry = {"target": name, "dim": t.dim, "seed": seed, "inertia": r, "nuts": n,
                     "ratio": r["grads_per_ess"] / n["grads_per_ess"]}
            if args.with_hfhr:
                entry["hfhr"] = run_inertia(t, constrain, ref, seed, method="hfhr")
            rows.append(entry)
            print(f"{name} seed {seed}: inertia {r['grads_per_ess']:.1f} grads/ESS (ESS "
                  f"{r['ess']:.0f}, mean err {r['mean_err']:.3f}, sd err {r['sd_err']:.3f}, "
                  f"{'converged' if r['converged'] else 'NOT converged'}); NUTS "
                  f"{n['grads_per_ess']:.1f} (ESS {n['ess']:.0f}, mean err {n['mean_err']:.3f}, sd "
                  f"err {n['sd_err']:.3f}, {div} div); ratio {entry['ratio']:.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"chains": CHAINS, "rows": rows}, fh, indent=1, default=float)
    return rows


if __name__ == "__main__":
    main()
