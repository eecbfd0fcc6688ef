"""Posterior suite, VI: `fit(target)` defaults per posterior, its approximation-quality verdict
(Pareto k-hat, PSIS ESS) and the errors of the Gaussian's and the PSIS-corrected means and sds
against the long-run or exact references, with the check's cost as a fraction of the fit's wall
time and of its CPU time.

Errors are standardised by the reference sd over the named (constrained) quantities: err_mean = max
|mean - ref| / ref sd, err_sd = max |sd - ref sd| / ref sd; "off" = either above 0.2. The corrected
columns exist where k-hat <= 0.7; the answer a user is told to read is the corrected one where the
verdict is "usable with correction" and the Gaussian's otherwise, and the verdict is right when it
says "unreliable" exactly where that answer is off. The check's cost: its seconds over the fit's
wall time (the fit's compilation included, the check's own seconds too), and its potential
evaluations over the fit's gradient and Hessian-vector evaluations; on a machine shared with
other work, also its CPU seconds over the fit's (this process's, `time.process_time`), which a
pause of the machine does not inflate. ArviZ is imported before the
first fit (its import, ~1.3 s once per process, is not the check's).
The check runs again on five more seeds of q's draws (`--check-seeds`, the same fit): how often
its verdict is right when k-hat lies near a threshold.
Run: `OPENBLAS_NUM_THREADS=1 python benchmarks/posteriors/vi_quality.py [names...]
[--check-seeds 6] [--json benchmarks/results/posteriors_vi_quality.json]` (prints a markdown
table).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from models import NAMES, SHARED_REFERENCE, load  # noqa: E402

REF = ROOT / "benchmarks" / "results" / "posteriors_reference.json"
OUT = ROOT / "benchmarks" / "results" / "posteriors_vi_quality.json"
OFF = 0.2  # sds: a mean or sd this far off is a poor Gaussian


def reference(post, refs):
    """{quantity: (mean, sd)} exact or from the long run."""
    if post.exact:
        return {k: (post.exact["mean"][k], post.exact["sd"][k]) for k in post.exact["mean"]}
    ref = refs[SHARED_REFERENCE.get(post.name, post.name)]["quantities"]
    return {k: (v["mean"], v["sd"]) for k, v in ref.items()}


def errors(rows, ref, suffix=""):
    """(max standardised mean error, max standardised sd error) over the reference's quantities
    that the fit's table has (a centred model's reference is its non-centred twin's run, whose
    auxiliary sites it lacks); None without corrected columns."""
    by = {r["name"]: r for r in rows}
    pairs = [(by[k], m, s) for k, (m, s) in ref.items() if k in by]
    if not pairs or pairs[0][0].get("mean" + suffix) is None:
        return None
    return (max(abs(r["mean" + suffix] - m) / s for r, m, s in pairs),
            max(abs(r["sd" + suffix] - s) / s for r, m, s in pairs))


def judged(res, rows, ref):
    """(errors of the Gaussian, of the PSIS-corrected answer or None, the answer the verdict
    points to off by more than OFF, the verdict right: "unreliable" exactly where it is off)."""
    g, c = errors(rows, ref), errors(rows, ref, "_psis")
    usable = res.quality["verdict"] == "usable with correction"  # the answer: the corrected one
    off = max(c if usable else g) > OFF
    return g, c, off, off == (res.quality["verdict"] == "unreliable")


def one(name, refs, check_seeds=1):
    import dataclasses

    import inertia.variational.quality as quality
    from inertia.vi import fit

    post = load(name)
    cpu, walls = [], []  # the check's CPU and wall seconds: `fit` calls quality.assess, timed here

    def assess(*args, **kw):
        c, w = time.process_time(), time.perf_counter()
        out = real(*args, **kw)
        cpu.append(time.process_time() - c)
        walls.append(time.perf_counter() - w)
        return out

    real, quality.assess = quality.assess, assess
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fit(post.target, seed=0)
    finally:
        wall, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
        quality.assess = real
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = res.summary()
    ref = reference(post, refs)
    q = res.quality
    g, c, off, right = judged(res, rows, ref)
    h = res.history
    evals = int(h["grad_evals"][-1]) + int(h["hvp_evals"][-1])
    seeds = []  # the check again on other draws of q (the same fit): how stable the verdict is
    for s in range(1, check_seeds):
        other = dataclasses.replace(res)
        other.quality, other.quality_weights = assess(post.target, res, seed=s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            seeds.append((other.quality, judged(other, other.summary(), ref)))
    return {"name": name, "group": post.group, "dim": post.dim, "converged": bool(res.converged),
            "method": res.method, "khat": q["khat"], "ess": q["ess"], "draws": q["num_draws"],
            "verdict": q["verdict"], "err_mean": g[0], "err_sd": g[1],
            "err_mean_psis": c[0] if c else None, "err_sd_psis": c[1] if c else None,
            "fit_seconds": wall, "check_seconds": walls[0],
            "check_fraction": walls[0] / wall, "fit_cpu_seconds": fit_cpu,
            "check_cpu_seconds": cpu[0], "check_cpu_fraction": cpu[0] / fit_cpu,
            "fit_evals": evals, "looks": q.get("looks"),
            "third_look_capped": bool(q.get("third_look_capped")),
            "check_evals": q["num_draws"] * len(q["khat_per_seed"]), "answer_off": off,
            "verdict_right": right,
            "check_seeds": [{"khat": o["khat"], "draws": o["num_draws"], "verdict": o["verdict"],
                             "err_psis": j[1], "right": j[3], "seconds": walls[i + 1],
                             "cpu_seconds": cpu[i + 1],
                             "third_look_capped": bool(o.get("third_look_capped"))}
                            for i, (o, j) in enumerate(seeds)]}


def seeds(r):
    """'k of n (k-hat lo-hi)' over the other check seeds, or '–'."""
    other = r.get("check_seeds") or []
    if not other:
        return "–"
    ks = [o["khat"] for o in other if o["khat"] is not None]
    span = f" (k-hat {min(ks):.2f} to {max(ks):.2f})" if ks else ""
    return f"{sum(o['right'] for o in other)} of {len(other)}{span}"


def other_cost(r, key="seconds", fit="fit_seconds"):
    """The largest check fraction over the other check seeds (their seconds over the fit's wall
    time; CPU seconds over the fit's with key="cpu_seconds", fit="fit_cpu_seconds"), or '–'."""
    other = [o[key] for o in r.get("check_seeds") or [] if o.get(key) is not None]
    return f"{100 * max(other) / r[fit]:.0f} %" if other and r.get(fit) else "–"


def cpu_cost(r):
    """'this % / others' max %' of the check's CPU seconds over the fit's, or '–'."""
    if r.get("check_cpu_fraction") is None:
        return "–"
    return (f"{100 * r['check_cpu_fraction']:.0f} % / "
            f"{other_cost(r, 'cpu_seconds', 'fit_cpu_seconds')}")


def table(rows):
    f = (lambda v: "–" if v is None else f"{v:.2f}")
    out = ["| posterior | d | optimiser | k-hat (draws) | quality | Gaussian: err mean / sd | "
           "PSIS: err mean / sd | answer off > 0.2 sd | verdict right | fit s | check s (%) | "
           "check / fit evaluations | right on other check seeds | their check % (max) | "
           "check CPU % (this / others' max) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['name']} | {r['dim']} | {'converged' if r['converged'] else 'NOT CONV.'}"
                   f" | {f(r['khat'])} ({r['draws']}) | {r['verdict']} | {f(r['err_mean'])} / "
                   f"{f(r['err_sd'])} | {f(r['err_mean_psis'])} / {f(r['err_sd_psis'])} | "
                   f"{'yes' if r['answer_off'] else 'no'} | "
                   f"{'yes' if r['verdict_right'] else 'NO'} | "
                   f"{r['fit_seconds']:.1f} | {r['check_seconds']:.2f} "
                   f"({100 * r['check_fraction']:.0f} %) | {r['check_evals']} / {r['fit_evals']} | "
                   f"{seeds(r)} | {other_cost(r)} | {cpu_cost(r)} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--json", type=Path, default=OUT)
    ap.add_argument("--check-seeds", type=int, default=6,
                    help="run the check on this many seeds of q's draws (the first is the fit's)")
    args = ap.parse_args(argv)
    from inertia.results.idata import arviz

    arviz()
    refs = json.loads(REF.read_text())
    rows = []
    for name in args.names or NAMES:
        try:
            rows.append(one(name, refs, args.check_seeds))
        except Exception as err:  # noqa: BLE001 - one posterior's failure is reported
            print(f"{name}: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        args.json.write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
