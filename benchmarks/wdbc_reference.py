"""NUTS reference for the WDBC logistic posterior's intercept (the CLI test's expected values).

BlackJAX NUTS with window adaptation (dense mass matrix) on `make_target("logistic", data="wdbc")`
(standardised predictors, intercept, prior N(0, I)); 4 chains x (1000 warm-up + 5000 draws).
Writes benchmarks/results/wdbc_reference.json: intercept mean and sd with their ArviZ MCSEs.
"""
import json
import time
from pathlib import Path

import arviz as az
import blackjax
import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)
from inertia.targets import make_target

CHAINS, WARMUP, DRAWS = 4, 1000, 5000


def main():
    t0 = time.perf_counter()
    t = make_target("logistic", data="wdbc")
    logdensity = lambda z: -t.potential(z)  # noqa: E731
    k0, k1, k2 = jax.random.split(jax.random.PRNGKey(0), 3)
    x0 = 0.1 * jax.random.normal(k0, (CHAINS, t.dim), dtype=jnp.float64)

    def one(x, ka, ks):
        adapt = blackjax.window_adaptation(blackjax.nuts, logdensity, is_mass_matrix_diagonal=False)
        (state, params), _ = adapt.run(ka, x, num_steps=WARMUP)
        kernel = blackjax.nuts(logdensity, **params).step

        def body(s, k):
            s, _ = kernel(k, s)
            return s, s.position[0]

        return jax.lax.scan(body, state, jax.random.split(ks, DRAWS))[1]

    b0 = np.asarray(jax.jit(jax.vmap(one))(x0, jax.random.split(k1, CHAINS),
                                           jax.random.split(k2, CHAINS)))
    out = {"intercept_mean": float(b0.mean()), "intercept_sd": float(b0.std()),
           "mcse_mean": float(az.mcse(b0, method="mean")),
           "mcse_sd": float(az.mcse(b0, method="sd")),
           "ess_bulk": float(az.ess(b0, method="bulk")), "rhat": float(az.rhat(b0)),
           "chains": CHAINS, "warmup": WARMUP, "draws": DRAWS,
           "seconds": time.perf_counter() - t0}
    path = Path(__file__).resolve().parent / "results" / "wdbc_reference.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
