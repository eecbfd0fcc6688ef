"""Wall time and peak memory of `sgmcmc.calibrate` against N (python benchmarks/sgmcmc_scale.py).

1. Logistic regression (intercept + D - 1 Gaussian predictors), B = 256, 20,000 steps x 4
   chains, N = 1e5 .. 1e7 at D = 10 and D = 50: wall time, time per SGLD step, peak RSS over the
   data's own bytes, each case in a fresh process; fitted exponents time ~ N^a, memory ~ N^b.
2. A memory-mapped .npy of `--big` rows (float32, 10 columns; written once): time of the
   validation pass and of one Newton pass over all rows (an epoch of the offline step), then
   calibrate with the offline step on a 1e5-row subsample (read by index) for the time per SGLD
   step (minibatch rows gathered from the file), peak RSS.
3. Run to a target ESS (target_ess=400, the converged verdict) at N = 1e6, B = 1024.
4. Time per SGLD step against N in one process (interleaved repeats, best of 3), B = 256: the
   chunked path (rows gathered on the host per block of steps), rows kept on the device and
   gathered inside the compiled scan, and the in-memory sampler (`kernels.make_sampler`).
5. One step's parts at N = 1e5 and 1e7, D = 50: index generation, host row gather, compiled
   steps on gathered rows, whole step on the host-gather and device-gather paths.
Results: benchmarks/results/sgmcmc_scale.json and .png. Run the cases one at a time (2 cores).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results"


def _data(N, D, seed=0, dtype="float64"):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = np.empty((N, D - 1), dtype)
    for s in range(0, N, 1 << 20):  # in blocks: no N x D float64 temporaries
        X[s:s + (1 << 20)] = rng.standard_normal((min(1 << 20, N - s), D - 1))
    theta = rng.normal(size=D - 1) / np.sqrt(D)
    y = np.empty(N)
    for s in range(0, N, 1 << 20):
        e = min(s + (1 << 20), N)
        y[s:e] = rng.random(e - s) < 1 / (1 + np.exp(-(X[s:e] @ theta + 0.3)))
    return X, y


def case(N, D, B, steps, target_ess=None):
    """One calibrate run in this process; prints a JSON row."""
    import warnings

    import numpy as np

    import inertia  # noqa: F401
    from inertia.sgmcmc import calibrate

    X, y = _data(N, D)
    data_bytes = X.nbytes + y.nbytes
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = calibrate("logistic", (X, y), batch_size=B, num_steps=steps, target_ess=target_ess,
                      intercept=True, seed=0)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    dg = r.diagnostics
    print(json.dumps(dict(N=N, D=D, B=B, steps=r.settings["num_steps"], wall_s=wall,
                          seconds=r.seconds, data_bytes=data_bytes, peak_rss=rss,
                          rss_after_data=rss0, rss_over_data=rss / data_bytes,
                          step_us=1e6 * r.seconds["sampling"] / r.settings["num_steps"],
                          iat_worst=r.iat.worst, converged=bool(dg.converged),
                          min_ess_bulk=float(dg.min_ess_bulk), max_rhat=float(dg.worst_rhat),
                          max_z=r.max_z, engine=r.settings["engine"])))


def big(N, path, steps):
    """The memory-mapped run: passes per second over `path` and SGLD step time."""
    import warnings

    import numpy as np

    import inertia  # noqa: F401
    from inertia.data.sources import NpySource
    from inertia.sgmcmc import calibrate

    path = Path(path)
    D = 10
    if not path.exists() or np.load(path, mmap_mode="r").shape != (N, D):
        A = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(N, D))
        rng = np.random.default_rng(0)
        theta = rng.normal(size=D - 1) / np.sqrt(D)
        for s in range(0, N, 1 << 21):
            e = min(s + (1 << 21), N)
            Xb = rng.standard_normal((e - s, D - 1), dtype=np.float32)
            A[s:e, :-1] = Xb
            A[s:e, -1] = rng.random(e - s) < 1 / (1 + np.exp(-(Xb @ theta + 0.3)))
        A.flush()
        del A
    src = NpySource(path, -1)
    from inertia.sgmcmc.large import large_model

    t0 = time.perf_counter()
    lm = large_model("logistic", src, intercept=True)
    t_validate = time.perf_counter() - t0
    ps = lm.passes()
    t0 = time.perf_counter()
    ps(np.zeros(D), ("value", "grad", "hess", "g2"))
    t_pass = time.perf_counter() - t0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = calibrate(lm, batch_size=256, num_steps=steps, seed=0, subsample=100_000)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(dict(N=N, D=D, file_bytes=src.nbytes, dtype="float32",
                          validate_pass_s=t_validate, newton_pass_s=t_pass, calibrate_s=wall,
                          seconds=r.seconds, steps=r.settings["num_steps"],
                          step_us=1e6 * r.seconds["sampling"] / r.settings["num_steps"],
                          sgld_epoch_s=r.seconds["sampling"] / r.settings["num_steps"] * N / 256,
                          peak_rss=rss, rss_over_file=rss / src.nbytes)))


def steps(ns, B=256, D=10, n_steps=4000, repeats=3):
    """Step time at each N of the chunked path (rows gathered on the host), of rows kept on the
    device and gathered inside the compiled scan, and of the in-memory sampler
    (`kernels.make_sampler`); interleaved so the machine's load hits all alike."""
    import jax
    import numpy as np

    import inertia  # noqa: F401
    from inertia.data.sources import ArraySource
    from inertia.sgmcmc import kernels, make_model, stream
    from inertia.sgmcmc.large import large_model

    runs = {}
    for N in ns:
        X, y = _data(N, D)
        lm = large_model("logistic", ArraySource(X, y), intercept=True, validate=False)
        lam = np.eye(D) * 2.0 * B / N
        host = stream.SourceRunner(lm, Lambda=lam, batch_size=B)
        dev = stream.DeviceRunner(lm, Lambda=lam, batch_size=B)
        st = stream.init_states(np.zeros((4, D)))
        m = make_model("logistic", X, y, intercept=True)
        old = kernels.make_sampler(m, batch_size=B, num_draws=n_steps)
        runs[N] = (lambda k, h=host, s=st: h.advance(k, s, n_steps)[1],
                   lambda k, d=dev, s=st: d.advance(k, s, n_steps)[1],
                   lambda k, o=old, L=lam: np.asarray(o(k, L, np.zeros((4, D)))))
        for f in runs[N]:
            f(jax.random.key(0))  # compile
    best = {N: [np.inf] * 3 for N in ns}
    for r in range(repeats):
        for N in ns:
            for j, f in enumerate(runs[N]):
                t0 = time.perf_counter()
                f(jax.random.key(r + 1))
                best[N][j] = min(best[N][j], (time.perf_counter() - t0) / n_steps * 1e6)
    rows = [dict(N=N, D=D, chunked_step_us=b[0], device_gather_step_us=b[1],
                 in_memory_step_us=b[2], ratio=b[0] / b[2]) for N, b in best.items()]
    print(json.dumps(rows))


def parts(ns, B=256, D=50, repeats=5):
    """One SGLD step's parts at each N (us per step of 4 chains, best of `repeats`, fresh
    indices each time): index generation, host row gather, compiled steps on gathered rows,
    the chunked path's whole step, and the whole step with the rows gathered on the device."""
    import jax
    import numpy as np

    import inertia  # noqa: F401
    from inertia.data.sources import ArraySource
    from inertia.sgmcmc import stream
    from inertia.sgmcmc.large import large_model

    C, out = 4, []
    for N in ns:
        X, y = _data(N, D)
        lm = large_model("logistic", ArraySource(X, y), intercept=True, validate=False)
        kw = dict(Lambda=np.eye(D) * 2.0 * B / N, batch_size=B, temperature=float(N))
        host, dev = stream.SourceRunner(lm, **kw), stream.DeviceRunner(lm, **kw)
        st = stream.init_states(np.zeros((C, D)))
        K = host.block_steps(C)
        ikw = dict(steps=K, num_chains=C, num_obs=N, batch_size=B, replacement=True)
        on = np.ones(K, bool)
        blocks = [stream._block_indices(jax.random.key(i), **ikw) for i in range(repeats + 2)]
        ih = [np.asarray(b[0]) for b in blocks]

        def compute(i, rows=host._gather(ih[0])):
            return stream._block_run(st, host.Lam, host.root, blocks[i][1], on, *rows,
                                     host.params, host.gamma_n, kind="logistic",
                                     intercept=True, kappa=0.0, noisy=True)

        fs = dict(indices=lambda i: stream._block_indices(jax.random.key(100 + i), **ikw),
                  host_gather=lambda i: host._gather(ih[i + 1]), compiled_steps=compute,
                  chunked_step=lambda i: host.advance(jax.random.key(i), st, 8 * K)[1],
                  device_gather_step=lambda i: dev.advance(jax.random.key(i), st, 8 * K)[1])
        per = dict(indices=K, host_gather=K, compiled_steps=K, chunked_step=8 * K,
                   device_gather_step=8 * K)
        for f in fs.values():
            jax.block_until_ready(f(repeats))  # compile
        row = dict(N=N, D=D, block_steps=K)
        for name, f in fs.items():
            ts = []
            for i in range(repeats):
                t0 = time.perf_counter()
                jax.block_until_ready(f(i))
                ts.append(time.perf_counter() - t0)
            row[name + "_us"] = min(ts) / per[name] * 1e6
        out.append(row)
    print(json.dumps(out))


def _child(args):
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, __file__] + args, capture_output=True, text=True,
                         env=env, timeout=1200)
    if out.returncode:
        print(out.stderr[-3000:], file=sys.stderr)
        return None
    row = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(row), flush=True)
    return row


def _memory_fit(rows):
    """peak RSS = c0 + c1 x data bytes over the chunked runs, per D."""
    import numpy as np

    out = {}
    for D in sorted({r["D"] for r in rows}):
        rs = [r for r in rows if r["D"] == D and r["engine"] == "chunked"]
        if len(rs) >= 2:
            c1, c0 = np.polyfit([r["data_bytes"] for r in rs], [r["peak_rss"] for r in rs], 1)
            out[f"D{D}"] = dict(per_data_byte=float(c1), constant_GB=float(c0) / 1e9)
    return out


def _slope(rows, key):
    import numpy as np

    n = np.log([r["N"] for r in rows])
    v = np.log([r[key] for r in rows])
    return float(np.polyfit(n, v, 1)[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", nargs=4, type=float, metavar=("N", "D", "B", "STEPS"))
    ap.add_argument("--target-ess", type=float, default=None)
    ap.add_argument("--big-case", nargs=2, metavar=("N", "PATH"))
    ap.add_argument("--big", type=float, default=1e8, help="rows of the memory-mapped run")
    ap.add_argument("--big-path", default="/work/tmp_sgmcmc_big.npy")
    ap.add_argument("--ns", default="1e5,3e5,1e6,3e6,1e7")
    ap.add_argument("--ns50", default="1e5,3e5,1e6,3e6,1e7")
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--big-steps", type=int, default=4_000)
    ap.add_argument("--skip", default="",
                    help="comma list of parts to skip: scale,big,ess,steps,parts")
    ap.add_argument("--steps-case", action="store_true")
    ap.add_argument("--parts-case", action="store_true")
    a = ap.parse_args()
    if a.case:
        N, D, B, S = (int(v) for v in a.case)
        return case(N, D, B, S or None, a.target_ess)
    if a.big_case:
        return big(int(float(a.big_case[0])), a.big_case[1], a.steps)
    if a.steps_case:
        return steps([10 ** 5, 10 ** 6, 10 ** 7])
    if a.parts_case:
        return parts([10 ** 5, 10 ** 7])
    skip = set(a.skip.split(","))
    OUT.mkdir(exist_ok=True)
    res_path = OUT / "sgmcmc_scale.json"
    res = json.loads(res_path.read_text()) if res_path.exists() else {}
    if "scale" not in skip:
        rows = []
        for D, ns in ((10, a.ns), (50, a.ns50)):
            for N in (int(float(v)) for v in ns.split(",")):
                r = _child(["--case", str(N), str(D), "256", str(a.steps)])
                if r:
                    rows.append(r)
        res["scale"] = rows
        fits = {}
        for D in (10, 50):
            rs = [r for r in rows if r["D"] == D]
            if len(rs) >= 2:
                fits[f"D{D}"] = dict(time=_slope(rs, "wall_s"), memory=_slope(rs, "peak_rss"),
                                     step=_slope(rs, "step_us"))
        res["exponents"] = fits
        res["memory_vs_data"] = _memory_fit(rows)
        res_path.write_text(json.dumps(res, indent=1))
    if "ess" not in skip:
        res["run_to_ess"] = _child(["--case", str(10 ** 6), "10", "1024", "0",
                                    "--target-ess", "400"])
        res_path.write_text(json.dumps(res, indent=1))
    if "steps" not in skip:
        res["step_time"] = _child(["--steps-case"])
        res_path.write_text(json.dumps(res, indent=1))
    if "parts" not in skip:
        res["step_parts"] = _child(["--parts-case"])
        res_path.write_text(json.dumps(res, indent=1))
    if "big" not in skip:
        res["memmap"] = _child(["--big-case", str(int(a.big)), a.big_path,
                                "--steps", str(a.big_steps)])
        res_path.write_text(json.dumps(res, indent=1))
    if "memory_vs_data" not in res and res.get("scale"):
        res["memory_vs_data"] = _memory_fit(res["scale"])
        res_path.write_text(json.dumps(res, indent=1))
    _plot(res)
    print(json.dumps({k: res.get(k) for k in ("exponents", "memory_vs_data", "step_time",
                                              "step_parts")},
                     indent=1))


def _plot(res):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = res.get("scale", [])
    if not rows:
        return
    fig, ax = plt.subplots(1, 3, figsize=(13, 4))
    for D, mk in ((10, "o-"), (50, "s--")):
        rs = sorted((r for r in rows if r["D"] == D), key=lambda r: r["N"])
        if not rs:
            continue
        n = [r["N"] for r in rs]
        ax[0].loglog(n, [r["wall_s"] for r in rs], mk, label=f"D={D}")
        ax[1].loglog(n, [r["peak_rss"] / 2 ** 30 for r in rs], mk, label=f"peak RSS, D={D}")
        ax[1].loglog(n, [r["data_bytes"] / 2 ** 30 for r in rs], ":", label=f"data, D={D}")
        ax[2].semilogx(n, [r["step_us"] for r in rs], mk, label=f"D={D}")
    ax[0].set(xlabel="N", ylabel="calibrate wall time (s)")
    ax[1].set(xlabel="N", ylabel="GiB")
    ax[2].set(xlabel="N", ylabel="time per SGLD step, 4 chains (us)", ylim=(0, None))
    for a in ax:
        a.legend(fontsize=7)
    fig.suptitle("calibrate('logistic', B=256, 20,000 steps x 4 chains), 2-core machine")
    fig.tight_layout()
    fig.savefig(OUT / "sgmcmc_scale.png", dpi=110)


if __name__ == "__main__":
    main()
