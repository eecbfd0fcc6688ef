"""float32 against float64: time per update and compiled memory at d in {100, 300, 1000}, and gaps.

For each method (stl-proj: Algorithm 3, symmetric root; fd-prox: Algorithm 2, Cholesky; dgg-prox:
b reparameterisation gradients on the Cholesky factor, the per-update work of NumPyro's
AutoMultivariateNormal and BlackJAX's fullrank_vi) and d, the kernel of `make_kernel` on the
Gaussian kappa-family target (kappa = 100, batch 8) cast by `Target.astype`, a jitted `lax.scan` of
a few updates from N(0, I); float32 and float64 calls interleaved, best of the repeats, one BLAS
thread; memory is XLA's compiled estimate (arguments + outputs + temporaries). Ratio = float64
time / float32 time (> 1: float32 faster). Then, on d = 30, the final exact gap of `fit` after
2000 updates in each precision (what float32 costs in accuracy).
Run: python benchmarks/precision.py [--dims 100 300 1000] [--json benchmarks/results/precision.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

from threadpoolctl import threadpool_limits
from inertia.targets import kappa_family
from inertia.vi import fit, make_kernel

METHODS = ("stl-proj", "fd-prox", "dgg-prox")
DTYPES = ("float32", "float64")


def _steps(d):
    return max(2, min(20, int(1e8 / d**3)))


def compiled_run(target, method, dtype, b, n):
    """(compiled scan of n updates, its arguments, compiled memory estimate in bytes)."""
    kernel, *_ = make_kernel(target.astype(dtype), method, batch_size=b)
    d = target.dim
    state = kernel.init(jnp.zeros(d, dtype), jnp.eye(d, dtype=dtype))
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    fn = jax.jit(lambda st, ks: jax.lax.scan(kernel.step, st, ks)[0])
    compiled = fn.lower(state, keys).compile()
    out = jax.block_until_ready(compiled(state, keys))
    assert {x.dtype.name for x in jax.tree_util.tree_leaves(out)} <= {dtype, "int32"}
    mem = compiled.memory_analysis()
    peak = None if mem is None else int(mem.argument_size_in_bytes + mem.output_size_in_bytes
                                        + mem.temp_size_in_bytes)
    return compiled, (state, keys), peak


def timing_rows(dims, b, repeats):
    rows = []
    for d in dims:
        target = kappa_family(d, 100.0)
        n = _steps(d)
        for method in METHODS:
            runs = {dt: compiled_run(target, method, dt, b, n) for dt in DTYPES}
            best = {dt: np.inf for dt in DTYPES}
            for _ in range(repeats):  # interleaved: drifting background load hits both
                for dt in DTYPES:
                    fn, args, _ = runs[dt]
                    t = time.perf_counter()
                    jax.block_until_ready(fn(*args))
                    best[dt] = min(best[dt], (time.perf_counter() - t) / n)
            row = {"method": method, "d": d, "updates_per_call": n,
                   "ms_float32": 1e3 * best["float32"], "ms_float64": 1e3 * best["float64"],
                   "ratio": best["float64"] / best["float32"],
                   "mib_float32": runs["float32"][2] / 2**20 if runs["float32"][2] else None,
                   "mib_float64": runs["float64"][2] / 2**20 if runs["float64"][2] else None,
                   "loadavg": os.getloadavg()[0]}
            rows.append(row)
            print(f"d={d:5d} {method:9s} float32 {row['ms_float32']:9.2f} ms  float64 "
                  f"{row['ms_float64']:9.2f} ms  ratio {row['ratio']:.2f}  load "
                  f"{row['loadavg']:.1f}", flush=True)
    return rows


def accuracy_rows(d=30, steps=2000):
    target = kappa_family(d, 100.0)
    rows = []
    for method in METHODS:
        gaps = {}
        for dt in DTYPES:
            r = fit(target, method, batch_size=8, num_steps=steps, seed=0, checkpoint_every=steps,
                    dtype=dt)
            gaps[dt] = np.ravel(r.history["gap"])
        rows.append({"method": method, "d": d, "kappa": 100.0, "steps": steps,
                     "initial_gap": float(gaps["float64"][0]),
                     "final_gap_float32": float(gaps["float32"][-1]),
                     "final_gap_float64": float(gaps["float64"][-1])})
        print(f"gap d={d} {method:9s} initial {gaps['float64'][0]:.3g}  float32 "
              f"{gaps['float32'][-1]:.3g}  float64 {gaps['float64'][-1]:.3g}", flush=True)
    return rows


def tables(out) -> str:
    lines = ["| method | d | float32 ms/update | float64 ms/update | float64 / float32 | "
             "MiB float32 | MiB float64 |", "|---|---|---|---|---|---|---|"]
    for r in out["timing"]:
        mib = [f"{r[k]:.1f}" if r[k] is not None else "n/a" for k in ("mib_float32",
                                                                        "mib_float64")]
        lines.append(f"| {r['method']} | {r['d']} | {r['ms_float32']:.3g} | {r['ms_float64']:.3g}"
                     f" | **{r['ratio']:.2f}** | {mib[0]} | {mib[1]} |")
    if out.get("accuracy"):
        lines += ["", "| method | d | initial gap | final gap float32 | final gap float64 |",
                  "|---|---|---|---|---|"]
        for r in out["accuracy"]:
            lines.append(f"| {r['method']} | {r['d']} | {r['initial_gap']:.3g} | "
                         f"{r['final_gap_float32']:.2e} | {r['final_gap_float64']:.2e} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[100, 300, 1000])
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-accuracy", action="store_true", help="skip the d = 30 gap comparison")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        out = {"device": str(jax.devices()[0]), "platform": jax.default_backend(),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores",
               "batch_size": args.batch_size, "repeats": args.repeats,
               "timing": timing_rows(args.dims, args.batch_size, args.repeats)}
    if not args.no_accuracy:
        out["accuracy"] = accuracy_rows()
    out["seconds"] = time.perf_counter() - t0
    print("\n" + tables(out))
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
