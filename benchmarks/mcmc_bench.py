"""HFHR benchmarks, ratios measured in one run:

1. gradient evaluations to reach W2 <= 0.1 W2_0 (exact law) on the d = 100, kappa = 100 Gaussian, HFHR vs
   KLMC, each tuned on a grid (target: HFHR <= 0.7 x KLMC);
2. per-step wall time of the HFHR and KLMC kernels vs BlackJAX's MALA step and BlackJAX's MCLMC step
   (microcanonical Langevin: the underdamped-Langevin-type kernel BlackJAX 1.x ships; it has no
   classical underdamped Langevin kernel) at the same dimension, one interleaved-free run each
   (target HFHR <= 1.0 x MALA). `--step-only` skips part 1.

Usage: python benchmarks/mcmc_bench.py [--quick] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)
from inertia.mcmc import get_method, tune_gaussian
from inertia.mcmc.tuning import default_grid
from inertia.mcmc.kernels import Params
from inertia.targets import kappa_family


def gradient_ratio(dim, kappa, size):
    target = kappa_family(dim, kappa)
    out = {}
    for method in ("klmc", "hfhr", "hfhr-split", "ula"):
        t0 = time.perf_counter()
        out[method] = tune_gaussian(target, method, grid=default_grid(target, method, size),
                                    max_steps=3000)
        out[method]["seconds"] = time.perf_counter() - t0
    out["ratio_hfhr_over_klmc"] = out["hfhr"]["grad_evals"] / out["klmc"]["grad_evals"]
    return out


def _time_scan(step, state, n, repeats):
    @jax.jit
    def run(state, key):
        def body(s, k):
            s, _ = step(k, s)
            return s, None

        return jax.lax.scan(body, state, jax.random.split(key, n))[0]

    jax.block_until_ready(run(state, jax.random.PRNGKey(0)))  # compile
    best = np.inf
    for r in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(run(state, jax.random.PRNGKey(r + 1)))
        best = min(best, time.perf_counter() - t0)
    return best / n


def step_time_ratio(dim, n, repeats, chains):
    import blackjax

    target = kappa_family(dim, 100.0)
    x0 = jnp.zeros(dim)
    times = {}
    for name in ("hfhr", "klmc", "ula"):
        m = get_method(name)
        coeffs = m.prepare(Params(0.05, 2.0, 0.2))

        def step(k, s, m=m, coeffs=coeffs):
            return m.step(k, s, coeffs, target.grad)

        if chains > 1:
            keys = jax.random.split(jax.random.PRNGKey(0), chains)
            state = jax.vmap(lambda k: m.init(x0, k, target.grad))(keys)
            vstep = jax.vmap(step)
            times[name] = _time_scan(lambda k, s: vstep(jax.random.split(k, chains), s), state, n,
                                     repeats)
        else:
            times[name] = _time_scan(step, m.init(x0, jax.random.PRNGKey(0), target.grad), n, repeats)
    mala = blackjax.mala(lambda x: -target.potential(x), 0.05)
    if chains > 1:
        state = jax.vmap(mala.init)(jnp.zeros((chains, dim)))
        vstep = jax.vmap(mala.step)
        times["blackjax_mala"] = _time_scan(lambda k, s: vstep(jax.random.split(k, chains), s),
                                            state, n, repeats)
    else:
        times["blackjax_mala"] = _time_scan(mala.step, mala.init(x0), n, repeats)
    mclmc = blackjax.mclmc(lambda x: -target.potential(x), L=1.0, step_size=0.05)
    if chains > 1:
        keys = jax.random.split(jax.random.PRNGKey(1), chains)
        state = jax.vmap(mclmc.init)(jnp.zeros((chains, dim)), keys)
        vstep = jax.vmap(mclmc.step)
        times["blackjax_mclmc"] = _time_scan(lambda k, s: vstep(jax.random.split(k, chains), s),
                                             state, n, repeats)
    else:
        times["blackjax_mclmc"] = _time_scan(mclmc.step, mclmc.init(x0, jax.random.PRNGKey(1)),
                                             n, repeats)
    return {"seconds_per_step": times, "chains": chains,
            "ratio_hfhr_over_mala": times["hfhr"] / times["blackjax_mala"],
            "ratio_klmc_over_mala": times["klmc"] / times["blackjax_mala"],
            "ratio_hfhr_over_mclmc": times["hfhr"] / times["blackjax_mclmc"],
            "ratio_klmc_over_mclmc": times["klmc"] / times["blackjax_mclmc"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--step-only", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    res = {}
    if not args.step_only:
        res["gradients"] = gradient_ratio(100, 100.0, "small" if args.quick else "normal")
    n, rep = (2000, 3) if args.quick else (20000, 5)
    res["step_time_1_chain"] = step_time_ratio(100, n, rep, 1)
    res["step_time_16_chains"] = step_time_ratio(100, n // 4, rep, 16)
    g = res.get("gradients")
    if g:
        print(f"gradients to W2 <= 0.1 W2_0 (d=100, kappa=100): KLMC {g['klmc']['grad_evals']}, "
              f"HFHR {g['hfhr']['grad_evals']}, HFHR-split {g['hfhr-split']['grad_evals']}, "
              f"ULA {g['ula']['grad_evals']}; HFHR/KLMC = {g['ratio_hfhr_over_klmc']:.3f} "
              "(target <= 0.7)")
    for key in ("step_time_1_chain", "step_time_16_chains"):
        t = res[key]["seconds_per_step"]
        print(f"{key}: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in t.items())
              + f"; HFHR/MALA = {res[key]['ratio_hfhr_over_mala']:.3f} (target <= 1.0), "
              f"KLMC/MALA = {res[key]['ratio_klmc_over_mala']:.3f}, "
              f"HFHR/MCLMC = {res[key]['ratio_hfhr_over_mclmc']:.3f}, "
              f"KLMC/MCLMC = {res[key]['ratio_klmc_over_mclmc']:.3f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1, default=float)
    return res


if __name__ == "__main__":
    main()
