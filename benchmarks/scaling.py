"""Time per update and compiled peak memory against d, per method family, beside NumPyro and BlackJAX.

Target: the Gaussian kappa family (kappa = 100), batch b = 8, float64, one BLAS thread, started at
N(0, I). Families: Cholesky prox (fd-prox, paired-prox; dgg-prox, the b-gradient baseline) and
projected (fd-proj, paired-proj), symmetric-root projected
(stl-proj, Algorithm 3), Bures (fb-gvi); peers: one NumPyro SVI update (AutoMultivariateNormal,
Trace_ELBO(num_particles=b), optax Adam) and one BlackJAX fullrank_vi step (num_samples=b, Adam).
Each is a jitted lax.scan of a few updates; the time is the best of `--repeats` calls after
compilation, divided by the updates; memory is XLA's compiled estimate (arguments + outputs +
temporaries, `memory_analysis()`), which is what the run allocates on CPU. The fitted exponent is
the least-squares slope of log time on log d over d >= 100 (below that, fixed per-call overhead
dominates). A reference row times one d x d `eigh` (with vectors), the cost goal of the
symmetric-root methods; stl-proj and fb-gvi are skipped above --max-d-expensive. Run:
python benchmarks/scaling.py [--dims 30 100 300 1000 3000] [--clock cpu] [--json out.json]
[--plot docs/benchmarks_scaling.png]; tables and plot from a saved run: --report JSON [--plot ...]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)
from threadpoolctl import threadpool_limits
from inertia.targets import kappa_family
from inertia.vi import make_kernel

METHODS = {"fd-prox": "Cholesky prox", "fd-proj": "Cholesky projected",
           "paired-prox": "Cholesky prox", "paired-proj": "Cholesky projected",
           "dgg-prox": "Cholesky prox (b-gradient baseline)",
           "stl-proj": "sym-root projected", "fb-gvi": "Bures"}
PEERS = ("numpyro AutoMVN+Adam", "blackjax fullrank_vi+Adam")
EIGH = "one d x d eigh"  # reference: the cost goal of the symmetric-root methods
EXPENSIVE = ("stl-proj", "fb-gvi")  # skipped above --max-d-expensive


def _steps(d):
    return max(2, min(40, int(3e8 / d**3)))


def inertia_run(target, method, b, n):
    kernel, *_ = make_kernel(target, method, batch_size=b)
    d = target.dim
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    state = kernel.init(jnp.zeros(d), jnp.eye(d))
    return jax.jit(lambda st, ks: jax.lax.scan(kernel.step, st, ks)[0]), (state, keys)


def numpyro_run(target, b, n):
    from peers import numpyro_svi  # benchmarks/peers.py: the same NumPyro set-up as there

    svi, state = numpyro_svi(target, 1e-2, b)
    return jax.jit(lambda st: jax.lax.scan(lambda s, _: svi.update(s), st, None, length=n)[0]), \
        (state,)


def blackjax_run(target, b, n):
    import blackjax
    import optax

    d = target.dim
    frvi = blackjax.fullrank_vi(lambda x: -target.potential(x), optax.adam(1e-2), num_samples=b)
    state = frvi.init(jnp.zeros(d))
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    return jax.jit(lambda st, ks: jax.lax.scan(lambda s, k: (frvi.step(k, s)[0], None), st, ks)[0]), \
        (state, keys)


def eigh_run(d, n):
    """n eigendecompositions (with vectors) of a d x d SPD matrix in a lax.scan."""
    S = jnp.eye(d) + jax.random.normal(jax.random.PRNGKey(0), (d, d)) / (2.0 * np.sqrt(d))
    S = S @ S.T
    keys = jnp.arange(n)

    def body(M, _):
        w, Q = jnp.linalg.eigh(M)
        return M + 1e-300 * (Q[0, 0] + w[0]), None

    return jax.jit(lambda M, ks: jax.lax.scan(body, M, ks)[0]), (S, keys)


def measure(fn, args, n, repeats, clock=time.perf_counter):
    compiled = fn.lower(*args).compile()
    mem = compiled.memory_analysis()
    peak = None if mem is None else int(mem.argument_size_in_bytes + mem.output_size_in_bytes
                                        + mem.temp_size_in_bytes)
    jax.block_until_ready(compiled(*args))
    best = np.inf
    for _ in range(repeats):
        t = clock()
        jax.block_until_ready(compiled(*args))
        best = min(best, clock() - t)
    return best / n, peak


def exponent(ds, ts, dmin=100):
    ds, ts = np.asarray(ds, float), np.asarray(ts, float)
    keep = ds >= dmin
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(ds[keep]), np.log(ts[keep]), 1)[0])


def family(name):
    return METHODS.get(name, "reference" if name == EIGH else "peer")


def report(rows, names, dims):
    """Markdown tables: ms per update, exponents, memory; ratios to the faster peer and to eigh."""
    def at(name, d):
        return next((r for r in rows if r["method"] == name and r["d"] == d), None)

    print("\n| method | family | " + " | ".join(f"d={d} ms" for d in dims)
          + " | exponent (d>=100) | peak MiB at largest d |")
    print("|---|---|" + "---|" * (len(dims) + 2))
    fits = {}
    for name in names:
        rs = [r for r in rows if r["method"] == name]
        if not rs:
            continue
        fits[name] = exponent([r["d"] for r in rs], [r["s_per_update"] for r in rs])
        cells = [at(name, d) for d in dims]
        print(f"| {name} | {family(name)} | "
              + " | ".join("-" if c is None else f"{1e3 * c['s_per_update']:.3g}" for c in cells)
              + f" | {fits[name]:.2f} | {(rs[-1]['peak_bytes'] or 0) / 2**20:.1f}"
              + f" (d={rs[-1]['d']}) |")
    print("\nratio to the faster peer (goal for Cholesky methods <= 1.5) and to one eigh:")
    print("\n| method | " + " | ".join(f"d={d}" for d in dims) + " |")
    print("|---|" + "---|" * len(dims))
    for name in names:
        if name not in METHODS:
            continue
        cells = []
        for d in dims:
            r = at(name, d)
            peers = [at(p, d) for p in PEERS if at(p, d) is not None]
            cells.append("-" if r is None or not peers else
                         f"{r['s_per_update'] / min(p['s_per_update'] for p in peers):.2f}")
        print(f"| {name} / peer | " + " | ".join(cells) + " |")
    for name in EXPENSIVE:
        cells = []
        for d in dims:
            r, e = at(name, d), at(EIGH, d)
            cells.append("-" if r is None or e is None else
                         f"{r['s_per_update'] / e['s_per_update']:.2f}")
        print(f"| {name} / eigh | " + " | ".join(cells) + " |")
    counts = [at("stl-proj", d) for d in dims]
    if any(c is not None and "eigh_per_update" in c for c in counts):
        print("| stl-proj: eigh per update (of 2 projections) | " + " | ".join(
            "-" if c is None or "eigh_per_update" not in c else f"{c['eigh_per_update']:.2f}"
            for c in counts) + " |")
    return fits


def measure_all(args):
    """Run every (d, method) cell; rows of time per update and compiled peak memory."""
    b = args.batch_size
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    load_before = os.getloadavg()
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for d in args.dims:
            target = kappa_family(d, 100.0)
            n = _steps(d)
            runs = {m: inertia_run(target, m, b, n) for m in METHODS if m in args.methods
                    and (m not in EXPENSIVE or d <= args.max_d_expensive)}
            if PEERS[0] in args.methods:
                runs[PEERS[0]] = numpyro_run(target, b, n)
            if PEERS[1] in args.methods:
                runs[PEERS[1]] = blackjax_run(target, b, n)
            if EIGH in args.methods:
                runs[EIGH] = eigh_run(d, n)
            for name, (fn, fargs) in runs.items():
                t, peak = measure(fn, fargs, n, args.repeats, clock)
                rows.append({"d": d, "method": name, "family": family(name),
                             "steps": n, "s_per_update": t, "peak_bytes": peak})
                if name == "stl-proj":  # how many of the two projections decomposed per update
                    from vi_overhead import eigh_per_update

                    rows[-1]["eigh_per_update"] = eigh_per_update(
                        target, name, b, jax.random.split(jax.random.PRNGKey(0), n))
                print(f"d={d:5d} {name:28s} {1e3 * t:10.3f} ms/update  "
                      f"{(peak or 0) / 2**20:9.1f} MiB", flush=True)
    return rows, load_before


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[30, 100, 300, 1000])
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--methods", nargs="+", default=list(METHODS) + list(PEERS) + [EIGH],
                    help="subset of the inertia methods, peers and the eigh reference to run")
    ap.add_argument("--max-d-expensive", type=int, default=1000,
                    help=f"largest d for {', '.join(EXPENSIVE)} (minutes per update above it)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: process CPU seconds (all threads), steadier on a loaded machine")
    ap.add_argument("--json", default=None)
    ap.add_argument("--plot", default=None)
    ap.add_argument("--report", default=None, metavar="JSON",
                    help="redo the tables (and --plot) from a saved run instead of measuring")
    args = ap.parse_args(argv)
    if args.report:
        with open(args.report) as fh:
            saved = json.load(fh)
        rows, b, clock_name = saved["rows"], saved["batch_size"], saved.get("clock", "wall")
        load = saved.get("loadavg_before"), saved.get("loadavg_after")
        args.dims = sorted({r["d"] for r in rows})
        args.methods = sorted({r["method"] for r in rows})
    else:
        rows, load_before = measure_all(args)
        b, clock_name, load = args.batch_size, args.clock, (load_before, os.getloadavg())
    names = [m for m in list(METHODS) + list(PEERS) + [EIGH] if m in args.methods]
    fits = report(rows, names, args.dims)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "exponents": fits, "batch_size": b, "clock": clock_name,
                       "loadavg_before": load[0], "loadavg_after": load[1]}, fh, indent=1)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for name in names:
            rs = [r for r in rows if r["method"] == name]
            if not rs:
                continue
            ds = [r["d"] for r in rs]
            style = "--" if name in PEERS else (":" if name == EIGH else "-")
            axes[0].loglog(ds, [r["s_per_update"] for r in rs], style, marker="o",
                           label=f"{name} (slope {fits[name]:.2f})")
            axes[1].loglog(ds, [(r["peak_bytes"] or np.nan) / 2**20 for r in rs], style,
                           marker="o", label=name)
        axes[0].set(xlabel="d", ylabel=f"{'CPU ' if clock_name == 'cpu' else ''}seconds per update",
                    title=f"time per update (b = {b})")
        axes[1].set(xlabel="d", ylabel="MiB", title="compiled peak memory")
        axes[0].legend(fontsize=7)
        axes[1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()
