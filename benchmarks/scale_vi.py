"""fit(target) and sample(target) against d on the models of benchmarks/scale_d.py: which Gaussian
family the automatic mode took (or the one forced by --family), gradients, first-run wall time,
compile seconds, steady-state seconds per gradient, the largest compiled program, peak RSS, the
verdict (and the PSIS k-hat of the fit), the final F_hat, and the fit's errors against a reference:
the largest and median |mean - ref mean| / ref sd and |sd / ref sd - 1| over the coordinates, where
the reference is scale_d.py's NumPyro NUTS (diagonal mass) moments of the same family and d
(benchmarks/results/scale_d/<family>_<d>_nuts-diag.npz) when present. Each run in a fresh process;
each fit's mean and sd are saved under --moments.

    python benchmarks/scale_vi.py --dims 1003 3003 10003 --methods fit sample \
        --out benchmarks/results/scale_vi.jsonl
    # the family threshold: both families at d = 300 and 1000 against the NUTS reference
    python benchmarks/scale_vi.py --families hier field --dims 300 600 1000 --methods fit \
        --family factor --out benchmarks/results/scale_vi_threshold.jsonl
    # spread over seeds; a fixed number of updates (no stopping rule) with --num-steps N --tol none
    python benchmarks/scale_vi.py --dims 1003 3003 --seeds 0 1 2 --methods fit
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REFS = os.path.join(HERE, "results", "scale_d")
MOMENTS = os.path.join(HERE, "results", "scale_vi")


def errors(mean, sd, ref_path) -> dict:
    """Largest and median |mean - ref| / ref sd and |sd / ref sd - 1| against a saved reference."""
    import numpy as np

    z = np.load(ref_path)
    rm, rs = np.asarray(z["mean"]), np.asarray(z["sd"])
    if rm.shape != np.shape(mean):
        return {"reference": os.path.basename(ref_path), "error": "shape mismatch"}
    em = np.abs(np.asarray(mean) - rm) / rs
    es = np.abs(np.asarray(sd) / rs - 1.0)
    out = {"reference": os.path.basename(ref_path), "mean_err_max": float(em.max()),
           "mean_err_median": float(np.median(em)), "sd_err_max": float(es.max()),
           "sd_err_median": float(np.median(es))}
    if "ess" in z:  # the reference's own resolution: its sd's relative error ~ 1 / sqrt(2 ESS)
        out["ref_min_ess"] = float(np.min(z["ess"]))
    return out


def one(family: str, d: int, method: str, vi_family=None, seed=0, num_steps=None, tol="default",
        rank=None, moments=MOMENTS, window=None, dtype="float64") -> dict:
    """One run in this process: the result's cost, gradients, verdict and errors."""
    import numpy as np

    sys.path.insert(0, HERE)
    from scale_d import model_and_data

    t0 = time.perf_counter()
    from inertia.targets import from_numpyro

    model, args = model_and_data(family, d)
    t = from_numpyro(model, *args)
    row = {"family": family, "d": t.dim, "asked_d": d, "method": method, "seed": seed,
           "window": window, "tol": tol, "forced_family": vi_family, "dtype": dtype}
    if method == "fit":
        from inertia.vi import fit

        kw = {} if tol == "default" else {"tol": tol}
        if num_steps is not None:
            kw["num_steps"] = num_steps
        if rank is not None:
            kw["rank"] = rank
        if window is not None:
            kw["window"] = window
        r = fit(t, seed=seed, family=vi_family, dtype=dtype, **kw)
        fam = getattr(r, "family", None) or {}
        h = r.history
        row.update(gaussian_family=fam.get("name", "full-rank"), rank=fam.get("rank"),
                   vi_method=r.method,
                   gradients=int(h["grad_evals"][-1]), hvps=int(h["hvp_evals"][-1]),
                   updates=int(r.num_steps), plateau_step=r.verdict.numbers.get("step"),
                   F_hat=float(np.ravel(h["objective_estimate"][-1])[0]),
                   F_hat_stderr=float(np.ravel(h["objective_stderr"][-1])[0]),
                   khat=(r.quality or {}).get("khat"), verdict=r.verdict.line(),
                   converged=bool(r.converged), events=[e.get("event") for e in r.events],
                   trace=[[int(st), float(np.ravel(f)[0]), float(np.ravel(e)[0])] for st, f, e in
                          zip(h["step"], h["objective_estimate"], h["objective_stderr"])])
        mean = np.asarray(r.mean, np.float64)
        cov = r.cov
        sd = np.sqrt(cov.diagonal() if hasattr(cov, "diagonal") and not isinstance(
            cov, np.ndarray) else np.diag(np.asarray(cov, np.float64)))
        ref = os.path.join(REFS, f"{family}_{d}_nuts-diag.npz")
        if os.path.exists(ref):
            row["errors"] = errors(mean, sd, ref)
        if moments:
            os.makedirs(moments, exist_ok=True)
            tag = row["gaussian_family"] + (f"_r{rank}" if rank else "") + (
                f"_w{window}" if window else "") + ("_f32" if dtype == "float32" else "") + (
                f"_n{num_steps}" if tol is None else "")
            np.savez(os.path.join(moments, f"{family}_{d}_{tag}_s{seed}.npz"), mean=mean, sd=sd)
    else:
        from inertia.mcmc import sample

        r = sample(t, seed=seed)
        dg = r.diagnostics
        row.update(gradients=int(r.total_grad_evals), min_ess=float(dg.min_ess_bulk),
                   max_rhat=float(dg.worst_rhat), verdict=r.verdict.line(),
                   converged=bool(r.converged),
                   grads_per_ess=float(r.total_grad_evals / dg.min_ess_bulk))
    row["wall_seconds"] = time.perf_counter() - t0
    row["cost"] = r.cost
    return row


def report(path, plot=None):
    """The fits of a JSONL file as a markdown table (and a plot of gradients to convergence, time
    per gradient and the median sd error against d, per model family and Gaussian family)."""

    rows = [json.loads(ln) for ln in open(path) if ln.strip()]
    rows = [r for r in rows if r.get("method") == "fit" and "error" not in r]
    def f(v, spec):
        return "-" if v is None else format(v, spec)

    print("| model | d | Gaussian family | rank | dtype | window | seed | updates (plateau) "
          "| gradients (+ HVPs) | verdict | k-hat | F_hat | mean err max / median (ref sd) "
          "| sd err max / median | ms per gradient | compile s | wall s | peak RSS MB | note |")
    print("|" + "---|" * 19)
    for r in sorted(rows, key=lambda r: (r["family"], r["d"], r.get("gaussian_family", ""),
                                         r.get("window") or 10, r.get("seed", 0))):
        e = r.get("errors") or {}
        err = (f"{e['mean_err_max']:.3f} / {e['mean_err_median']:.3f} | "
               f"{e['sd_err_max']:.3f} / {e['sd_err_median']:.3f}") if "mean_err_max" in e \
            else "- | -"
        c = r.get("cost") or {}
        spg, rss = c.get("seconds_per_gradient"), c.get("peak_rss_bytes")
        upd = "-" if r.get("updates") is None else \
            f"{r['updates']:,} ({f(r.get('plateau_step'), 'd')})"
        print(f"| {r['family']} | {r['d']} | {r.get('gaussian_family')} | {r.get('rank') or '-'} "
              f"| {r.get('dtype', 'float64')} | "
              f"{(r.get('window') or 10) if r.get('gaussian_family') == 'factor' else '-'} | "
              f"{r.get('seed', 0)} | "
              f"{upd} | {r['gradients']:,} (+ {r.get('hvps') or 0:,}) | "
              f"{'converged' if r['converged'] else 'NOT CONVERGED'} | "
              f"{f(r.get('khat'), '.2f')} | {f(r.get('F_hat'), '.1f')} | {err} | "
              f"{f(None if spg is None else 1e3 * spg, '.2f')} | "
              f"{f(c.get('compile_seconds'), '.0f')} | {f(r.get('wall_seconds'), '.0f')} | "
              f"{f(None if rss is None else rss / 2**20, '.0f')} | {r.get('note', '')} |")
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
        marks = {"hier": "o", "field": "s", "glmm": "^"}
        colours = {"factor": "C0", "full-rank": "C3"}
        for r in rows:
            if (r.get("window") or 10) != 10 or r.get("note", "").startswith("averaging fixed") \
                    or r.get("dtype", "float64") != "float64":
                continue  # the default settings only
            kw = dict(marker=marks.get(r["family"], "x"), color=colours.get(
                r.get("gaussian_family"), "k"), alpha=0.8, linestyle="none")
            if r["converged"]:
                axes[0].plot(r["d"], r["gradients"], **kw)
            spg = (r.get("cost") or {}).get("seconds_per_gradient")
            if spg:
                axes[1].plot(r["d"], 1e3 * spg, **kw)
            e = r.get("errors") or {}
            if "sd_err_median" in e:
                axes[2].plot(r["d"], e["sd_err_median"], **kw)
        for ax, lab in zip(axes, ["gradients to convergence",
                                  "ms per gradient (2 shared cores, loaded)",
                                  "median |sd / NUTS sd - 1|"]):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("d")
            ax.set_title(lab, fontsize=10)
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color=c, marker="o", linestyle="none", label=f)
                   for f, c in colours.items()]
        handles += [Line2D([], [], color="grey", marker=m, linestyle="none", label=f)
                    for f, m in marks.items() if any(r["family"] == f for r in rows)]
        axes[0].legend(handles=handles, fontsize=8)
        fig.tight_layout()
        fig.savefig(plot, dpi=110)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--families", nargs="+", default=["hier"], choices=["hier", "glmm", "field"])
    p.add_argument("--dims", type=int, nargs="+", default=[1003, 3003, 10003])
    p.add_argument("--methods", nargs="+", default=["fit", "sample"], choices=["fit", "sample"])
    p.add_argument("--family", dest="vi_family", choices=["factor", "full-rank"], default=None,
                   help="the fit's Gaussian family (default: the automatic choice)")
    p.add_argument("--rank", type=int, default=None)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--num-steps", type=int, default=None)
    p.add_argument("--tol", default="default", help="the stopping tolerance; 'none': no rule")
    p.add_argument("--window", type=int, default=None,
                   help="the stopping rule's window of checkpoints (default: the fit's)")
    p.add_argument("--out", default=os.path.join(HERE, "results", "scale_vi.jsonl"))
    p.add_argument("--moments", default=MOMENTS)
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                   help="the fit's update dtype")
    p.add_argument("--report", metavar="JSONL", help="print a saved run's table (no runs)")
    p.add_argument("--plot", help="with --report: save the plot here")
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    tol = a.tol if a.tol == "default" else (None if a.tol == "none" else float(a.tol))
    if a.report:
        report(a.report, a.plot)
        return 0
    if a.one:
        row = one(a.families[0], a.dims[0], a.methods[0], a.vi_family, a.seeds[0], a.num_steps,
                  tol, a.rank, a.moments, a.window, a.dtype)
        print(json.dumps(row, default=str))
        return 0
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    for fam in a.families:
        for d in a.dims:
            for m in a.methods:
                for seed in a.seeds:
                    env = dict(os.environ, INERTIA_JAX_CACHE="off", JAX_COMPILATION_CACHE_DIR="")
                    cmd = [sys.executable, __file__, "--one", "--families", fam, "--dims", str(d),
                           "--methods", m, "--seeds", str(seed), "--tol", a.tol,
                           "--moments", a.moments, "--dtype", a.dtype]
                    for flag, val in (("--family", a.vi_family), ("--rank", a.rank),
                                      ("--num-steps", a.num_steps), ("--window", a.window)):
                        if val is not None:
                            cmd += [flag, str(val)]
                    try:
                        cp = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                            timeout=a.timeout)
                        lines = [ln for ln in cp.stdout.splitlines() if ln.startswith("{")]
                        row = json.loads(lines[-1]) if lines else {
                            "family": fam, "d": d, "method": m, "seed": seed,
                            "error": cp.stderr[-2000:]}
                    except subprocess.TimeoutExpired:
                        row = {"family": fam, "d": d, "method": m, "seed": seed,
                               "error": f"timeout after {a.timeout:g} s"}
                    with open(a.out, "a") as fh:
                        fh.write(json.dumps(row, default=str) + "\n")
                    print(json.dumps(row, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
