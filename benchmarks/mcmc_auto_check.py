"""Quick check of `inertia.mcmc.sample(target)` defaults against BlackJAX NUTS on Inference Gym targets.

Per target: inertia's automatic warm-up, then sampling until bulk ESS >= 400 (at most 100 000 steps);
BlackJAX NUTS with `window_adaptation` (dense mass matrix, 1000 steps) and 1000 draws per chain.
Four chains each from N(0, I) on the unconstrained space. Reported: gradient evaluations per chain
(warm-up included), the worst standardised errors of the mean and sd against the Gym's ground truth
(identity space), the least bulk ESS, gradients per effective sample, inertia's verdict.
Run: `nice -n 19 python benchmarks/mcmc_auto_check.py [--targets a,b] [--method M] [--json PATH]`;
the numbers in docs/hfhr.md are in benchmarks/results/mcmc_auto_check.json.
"""
from __future__ import annotations

import argparse
import json
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
from inertia.targets import from_potential

CHAINS = 4


def gym_target(name):
    """(inertia Target on the unconstrained space, constrain z -> identity space, truth mean, sd)."""
    from inference_gym import using_jax as gym

    model = {"ill-cond-gaussian": gym.targets.IllConditionedGaussian,
             "brownian-missing": gym.targets.BrownianMotionMissingMiddleObservations,
             "banana": gym.targets.Banana, "neals-funnel": gym.targets.NealsFunnel,
             "eight-schools-centred": gym.targets.EightSchools}[name]()
    m = gym.targets.VectorModel(model, flatten_sample_transformations=True)
    b, ident = m.default_event_space_bijector, m.sample_transformations["identity"]

    def potential(z):
        lp = m.unnormalized_log_prob(b.forward(z)) + b.forward_log_det_jacobian(z, event_ndims=1)
        return -jnp.asarray(lp, jnp.float64)

    def constrain(z):
        return jnp.asarray(ident(b.forward(z)), jnp.float64)

    t = from_potential(potential, int(m.event_shape[0]), name=name)
    return t, constrain, np.asarray(ident.ground_truth_mean), np.asarray(
        ident.ground_truth_standard_deviation)


def errors(draws, constrain, mu, sd):
    y = np.asarray(jax.jit(jax.vmap(jax.vmap(constrain)))(jnp.asarray(draws)))
    flat = y.reshape(-1, y.shape[-1])
    ess = float(np.nanmin(chain_stats(y)["ess_bulk"]))
    return (float(np.max(np.abs(flat.mean(0) - mu) / sd)),
            float(np.max(np.abs(flat.std(0, ddof=1) - sd) / sd)), ess)


def run_inertia(t, constrain, mu, sd, seed=0, method="hfhr"):
    from inertia.mcmc import sample

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            res = sample(t, method, seed=seed, target_ess=400, max_steps=100_000, on_divergence="stop")
        except (FloatingPointError, ValueError) as err:
            return {"error": str(err)[:200], "seconds": time.perf_counter() - t0}
    grads = res.grad_evals + res.warmup_grad_evals
    me, se, ess = errors(res.draws, constrain, mu, sd)
    return {"grads": grads, "mean_err": me, "sd_err": se, "ess": ess,
            "grads_per_ess": CHAINS * grads / ess, "converged": res.converged,
            "nonfinite_draws": int(np.sum(~np.isfinite(res.draws).all(-1))),
            "params": res.params, "seconds": time.perf_counter() - t0,
            "verdict": res.diagnostics.line()}


def run_nuts(t, constrain, mu, sd, seed=0, warmup=1000, draws=1000):
    import blackjax

    t0 = time.perf_counter()
    logdensity = lambda z: -t.potential(z)  # noqa: E731
    key = jax.random.PRNGKey(seed)
    k0, k1, k2 = jax.random.split(key, 3)
    x0 = jax.random.normal(k0, (CHAINS, t.dim), dtype=jnp.float64)

    def one(x, ka, ks):
        adapt = blackjax.window_adaptation(blackjax.nuts, logdensity, is_mass_matrix_diagonal=False)
        (state, params), info = adapt.run(ka, x, num_steps=warmup)
        kernel = blackjax.nuts(logdensity, **params).step

        def body(s, k):
            s, i = kernel(k, s)
            return s, (s.position, i.num_integration_steps)

        _, (pos, n) = jax.lax.scan(body, state, jax.random.split(ks, draws))
        return pos, jnp.sum(info.info.num_integration_steps) + jnp.sum(n)

    pos, n = jax.jit(jax.vmap(one))(x0, jax.random.split(k1, CHAINS), jax.random.split(k2, CHAINS))
    grads = float(np.mean(np.asarray(n)))
    me, se, ess = errors(np.asarray(pos), constrain, mu, sd)
    return {"grads": grads, "mean_err": me, "sd_err": se, "ess": ess,
            "grads_per_ess": CHAINS * grads / ess, "seconds": time.perf_counter() - t0}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", default="ill-cond-gaussian,brownian-missing,banana,neals-funnel",
                   help="comma-separated Gym targets")
    p.add_argument("--method", default="hfhr", help="inertia method (auto-tuned)")
    p.add_argument("--no-nuts", action="store_true", help="skip NUTS")
    p.add_argument("--json", default=None, help="write the results to this path")
    a = p.parse_args(argv)
    out = {}
    for name in a.targets.split(","):
        t, c, mu, sd = gym_target(name)
        out[name] = {"dim": t.dim, "inertia": run_inertia(t, c, mu, sd, method=a.method)}
        if not a.no_nuts:
            out[name]["nuts"] = run_nuts(t, c, mu, sd)
        print(name, json.dumps(out[name], default=float), flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
