"""Per-update time of accelerated Price-STL-proj and FD-prox (b = 64) against the bare oracle calls.

The bare baseline is one jitted function doing only the gradients / HVPs the update makes
(spec §7), on the same points, in a `lax.scan` of the same length. Ratio = update / oracle.
Also counts the eigendecompositions Algorithm 3 makes per update. `--clock cpu` times process CPU
seconds instead of wall seconds (steadier when other jobs share the cores).
Run: python benchmarks/vi_overhead.py [--steps 400] [--methods price-stl-proj] [--clock cpu]
[--json out.json]
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

import inertia  # noqa: F401
from threadpoolctl import threadpool_limits
from inertia.targets import logistic_regression
from inertia.targets.zoo import make_target
from inertia.vi import make_kernel


def _time_pair(f, a, g, b, repeats=7, clock=time.perf_counter):
    """Best-of-`repeats` seconds of f(*a) and g(*b), alternated so that background load hits both."""
    jax.block_until_ready(f(*a))
    jax.block_until_ready(g(*b))
    best_f = best_g = np.inf
    for _ in range(repeats):
        t = clock()
        jax.block_until_ready(f(*a))
        best_f = min(best_f, clock() - t)
        t = clock()
        jax.block_until_ready(g(*b))
        best_g = min(best_g, clock() - t)
    return best_f, best_g


def eigh_per_update(target, method, b, keys):
    """Eigendecompositions Algorithm 3's projections actually make per update (0 for other methods)."""
    from inertia.variational.algorithms import projected_sym

    count = []
    plain = projected_sym.project_spectrum

    def counted(S, lower, upper):
        jax.debug.callback(lambda: count.append(1))
        return plain(S, lower, upper)

    projected_sym.project_spectrum = counted
    try:
        run, state = method_scan(target, method, b)
        jax.block_until_ready(run(state, keys))
    finally:
        projected_sym.project_spectrum = plain
    return len(count) / len(keys)


def oracle_scan(target, method, b, steps):
    """Only the oracle calls of one update, repeated `steps` times (same batch of points)."""
    d = target.dim

    if method == "fd-prox":
        def one(carry, key):
            m = carry
            xi = jax.random.normal(key, (b, d))
            g0 = target.grad(m)
            shifted = jax.vmap(target.grad)(m + 1e-2 * jnp.eye(d))
            gx = jax.vmap(target.grad)(m + xi)
            return m + 1e-12 * (g0 + shifted.sum(0) + gx.sum(0)), None
    else:  # price-stl-proj: b gradients + the d HVPs per sample as one batch-Hessian product
        def one(carry, key):
            m = carry
            X = m + jax.random.normal(key, (b, d))
            gx = jax.vmap(target.grad)(X)
            HC = target.mean_hess_matmul(X, jnp.eye(d))
            return m + 1e-12 * (gx.sum(0) + HC.sum(0)), None

    @jax.jit
    def run(m, keys):
        return jax.lax.scan(one, m, keys)[0]

    return run


def method_scan(target, method, b):
    kernel, *_ = make_kernel(target, method, batch_size=b)
    d = target.dim

    @jax.jit
    def run(state, keys):
        return jax.lax.scan(kernel.step, state, keys)[0]

    return run, kernel.init(jnp.zeros(d), jnp.eye(d))


def synthetic_logistic(d=200, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d - 1))
    w = rng.normal(size=d) / np.sqrt(d)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(w[0] + X @ w[1:])))).astype(float)
    return logistic_regression(X, y, name=f"synthetic-logistic(d={d})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--methods", nargs="+", default=["price-stl-proj", "fd-prox"])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: process CPU time (all threads), steadier on a loaded machine")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    b = 64
    with threadpool_limits(limits=1, user_api="blas"):
        rows = _measure(args, b)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


def _measure(args, b):
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rows = []
    for target in (make_target("logistic", data="wdbc"), synthetic_logistic()):
        keys = jax.random.split(jax.random.PRNGKey(0), args.steps)
        for method in args.methods:
            run, state = method_scan(target, method, b)
            t_method, t_oracle = _time_pair(run, (state, keys),
                                            oracle_scan(target, method, b, args.steps),
                                            (jnp.zeros(target.dim), keys), args.repeats,
                                            clock)
            row = {"target": target.name, "d": target.dim, "method": method, "b": b,
                   "ms_per_update": 1e3 * t_method / args.steps,
                   "ms_oracle": 1e3 * t_oracle / args.steps, "ratio": t_method / t_oracle,
                   "clock": args.clock, "eigh_per_update": eigh_per_update(target, method, b, keys)}
            rows.append(row)
            print(f"{target.name:28s} {method:15s} update {row['ms_per_update']:.3f} ms  "
                  f"oracle {row['ms_oracle']:.3f} ms  ratio {row['ratio']:.2f}  "
                  f"eigh/update {row['eigh_per_update']:.2f}", flush=True)
    return rows


if __name__ == "__main__":
    main()
