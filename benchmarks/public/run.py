"""The public suite as a no-regression table: inertia (`inertia.mcmc.sample`, `inertia.vi.fit`)
and float64 NumPyro NUTS (dense and diagonal mass) on every posterior of catalogue.py, each
scored against its reference (posteriordb's reference draws, the Inference Gym's ground truth, or
a long NUTS run of reference.py).

Per posterior and method, one fresh process (so that no run inherits another's compilations):
- converged: R-hat <= 1.01, bulk ESS >= 400 for every named quantity and no divergent
  transition after warm-up; for inertia's sampler also its own verdict (which counts the exact
  kernel's divergences); for `fit`, the fit's own verdict (the stopping rule; a divergence is not
  converged) and its Pareto k-hat.
- right: no named quantity whose mean or sd is off by more than 0.15 reference sd while that
  error is significant against the Monte Carlo error of both runs (|z| above the two-sided
  Bonferroni bound at level 0.01 over the quantities). `within_0.15` is the plain check (every
  mean and sd within 0.15 reference sd); `max_mean_z` the largest z of a mean.
- gradients per ESS: every gradient of the run (warm-up, fits and discarded attempts included)
  over the smallest bulk ESS of the named quantities; wall time (compilation included).
- confidently wrong: converged and not right.
NUTS runs 4 chains, starts uniform(-2, 2) on the unconstrained space, 1 000 warm-up + 1 000
draws extended by 1 000-draw blocks while the smallest bulk ESS is below 400 or an R-hat above
1.01 (at most 16 000 a chain; benchmarks/posteriors/samplers.py). Seed 0 everywhere.
Run: `OPENBLAS_NUM_THREADS=1 python benchmarks/public/run.py [--quick] [--methods a,b,...]
[--resume] [names...]` (rows appended to benchmarks/results/public_suite.jsonl as they finish;
the table benchmarks/results/public_suite.json and docs/benchmarks/public_suite.md are rewritten
from the rows at the end; `--report` rewrites only them).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

ROWS = ROOT / "benchmarks" / "results" / "public_suite.jsonl"
TABLE = ROOT / "benchmarks" / "results" / "public_suite.json"
DOC = ROOT / "docs" / "benchmarks" / "public_suite.md"
METHODS = ("inertia-sample", "inertia-fit", "nuts-dense", "nuts-diag")
TARGET_ESS, MAX_RHAT, ERR_SD, LEVEL = 400.0, 1.01, 0.15, 0.01
SEED = 0
NUTS_SETTINGS = {"full": (1000, 1000, 16000), "quick": (500, 500, 4000)}
FIT_DRAWS = 4000
CHILD_LIMIT_S = 3600  # the harness's own guard on one child process (not a verdict)
COMMAND = "OPENBLAS_NUM_THREADS=1 python benchmarks/public/run.py"


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- scoring ---------------------------------------------------------------------------------

def compare(summary, ref):
    """Per reference quantity: standardised errors of mean and sd and their z-scores."""
    out = {}
    for j, k in enumerate(ref["names"]):
        r_sd = float(ref["sd"][j])
        if k not in summary or not r_sd > 1e-12:
            continue
        s = summary[k]
        dm, ds = s["mean"] - float(ref["mean"][j]), s["sd"] - r_sd
        se_m = float(np.hypot(s["mcse_mean"], ref["mcse_mean"][j]))
        se_s = float(np.hypot(s["mcse_sd"], ref["mcse_sd"][j]))
        out[k] = {"mean_err": abs(dm) / r_sd, "sd_err": abs(ds) / r_sd,
                  "mean_z": abs(dm) / se_m if se_m > 0 else np.inf,
                  "sd_z": abs(ds) / se_s if se_s > 0 else np.inf,
                  "ess_bulk": s.get("ess_bulk", np.nan), "rhat": s.get("rhat", np.nan)}
    return out


def _fin(v, bad):
    return float(v) if np.isfinite(v) else bad


def accuracy(cmp_):
    """Worst errors, the plain 0.15-sd check and the significance-gated `right`."""
    k = len(cmp_)
    zb = float(stats.norm.isf(LEVEL / (2 * max(k, 1))))
    me = {q: _fin(v["mean_err"], np.inf) for q, v in cmp_.items()}
    se = {q: _fin(v["sd_err"], np.inf) for q, v in cmp_.items()}
    mz = {q: _fin(v["mean_z"], np.inf) for q, v in cmp_.items()}
    wrong = sorted(q for q, v in cmp_.items()
                   if (me[q] > ERR_SD and _fin(v["mean_z"], np.inf) > zb)
                   or (se[q] > ERR_SD and _fin(v["sd_z"], np.inf) > zb))
    qm, qs = max(me, key=me.get), max(se, key=se.get)
    return {"max_mean_err": me[qm], "max_mean_err_at": qm, "max_sd_err": se[qs],
            "max_sd_err_at": qs, "max_mean_z": max(mz.values()), "z_bound": zb,
            "within_0.15": bool(me[qm] <= ERR_SD and se[qs] <= ERR_SD),
            "right": not wrong, "wrong_quantities": wrong[:10], "n_quantities": k}


def _json_safe(x):
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x) if np.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


# --- one (posterior, method), in the child process ---------------------------------------------

def run_one(name, method, quick=False):
    import catalogue
    from samplers import max_rhat, min_ess, run_nuts, summarise

    post = catalogue.load(name)
    ref = catalogue.reference(name)
    row = {"posterior": name, "method": method, "d": post.dim, "seed": SEED,
           "source": catalogue.BY_NAME[name].source, "reference": ref["how"]}
    if method.startswith("nuts"):
        row["settings"] = "quick" if quick else "full"
    if method == "inertia-fit":
        import jax
        from inertia.vi import fit

        t0 = time.perf_counter()
        res = fit(post.target, seed=SEED)
        wall = time.perf_counter() - t0
        q = np.asarray(res.sample(jax.random.PRNGKey(SEED + 1), FIT_DRAWS), dtype=np.float64)
        named = post.named(q)
        summ = {}
        for k, v in named.items():
            v = np.asarray(v, dtype=np.float64)
            sd = float(np.std(v, ddof=1))
            summ[k] = {"mean": float(np.mean(v)), "sd": sd, "mcse_mean": sd / np.sqrt(v.size),
                       "mcse_sd": sd / np.sqrt(2.0 * v.size)}
        acc = accuracy(compare(summ, ref))
        v = res.verdict
        qual = res.quality or {}
        grads = int(np.asarray(res.history["grad_evals"])[-1])
        row.update(converged=bool(v.converged), verdict=str(v), grads=grads, wall_s=wall,
                   final_objective=res.final_objective, diverged=bool(res.diverged),
                   k_hat=qual.get("khat"), quality=qual.get("verdict"), **acc)
        return _json_safe(row)
    t0 = time.perf_counter()
    if method == "inertia-sample":
        from inertia.mcmc import sample

        res = sample(post.target, seed=SEED)
        wall = time.perf_counter() - t0
        draws = np.asarray(res._kept(None))
        grads = int(res.total_grad_evals or (res.warmup_grad_evals
                                             + res.grad_evals * res.num_chains))
        v = res.verdict
        div = int(np.sum(res.chains["divergences"])) if res.chains else 0
        extra = {"verdict": str(v), "verdict_converged": bool(v.converged),
                 "method_detail": res.method, "tuning": _json_safe(
                     {k: val for k, val in (res.tuning or {}).items()
                      if isinstance(val, (str, int, float, bool))})}
    else:
        w, n, cap = NUTS_SETTINGS["quick" if quick else "full"]
        out = run_nuts(post, dense=method == "nuts-dense", seed=SEED, num_warmup=w,
                       num_samples=n, max_samples=cap, target_ess=TARGET_ESS)
        draws, grads, wall = out["draws"], out["grads"], out["wall_s"]
        div = int(out["detail"]["divergences"])
        extra = {"detail": _json_safe(out["detail"])}
    summ = summarise(post, draws)
    cmp_ = compare(summ, ref)
    ess = min(_fin(c["ess_bulk"], 0.0) for c in cmp_.values())
    rhat = max(_fin(c["rhat"], np.inf) for c in cmp_.values())
    finite = bool(np.all(np.isfinite(draws)))
    converged = bool(rhat <= MAX_RHAT and ess >= TARGET_ESS and div == 0 and finite)
    if method == "inertia-sample":
        converged = converged and extra["verdict_converged"]
    row.update(converged=converged, min_ess_bulk=ess, max_rhat=rhat, divergences=div,
               finite=finite, grads=grads, grads_per_ess=grads / ess if ess > 0 else None,
               wall_s=wall, **accuracy(cmp_), **extra)
    row["confidently_wrong"] = bool(converged and not row["right"])
    return _json_safe(row)


# --- the table -------------------------------------------------------------------------------

def read_rows(path=ROWS):
    rows = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[(r["posterior"], r["method"])] = r  # the last row of a pair wins
    return rows


def summary(rows, names):
    """The issue's summary numbers over the posteriors where float64 NUTS converges."""
    out = {"posteriors": len(names), "nuts_converges": [], "inertia_ok": [],
           "inertia_not_ok": [], "ratio": {}, "missing": []}
    for n in names:
        nd, ng, s = (rows.get((n, m)) for m in ("nuts-dense", "nuts-diag", "inertia-sample"))
        if s is None or (nd is None and ng is None):
            out["missing"].append(n)
            continue
        conv = [r for r in (nd, ng) if r and r.get("converged") and r.get("grads_per_ess")]
        if not conv:
            continue
        out["nuts_converges"].append(n)
        ok = bool(s.get("converged") and s.get("right"))
        (out["inertia_ok"] if ok else out["inertia_not_ok"]).append(n)
        best = min(r["grads_per_ess"] for r in conv)
        if ok and s.get("grads_per_ess"):
            out["ratio"][n] = s["grads_per_ess"] / best
    r = list(out["ratio"].values())
    out["at_most_half"] = sum(x <= 0.5 for x in r)
    out["above_one"] = sorted(k for k, x in out["ratio"].items() if x > 1.0)
    out["confidently_wrong"] = sorted(
        f"{k[0]} ({k[1]})" for k, v in rows.items() if v.get("confidently_wrong"))
    out["sample_failures"] = {
        n: ("error" if "error" in rows[(n, "inertia-sample")] else
            ("not converged" if not rows[(n, "inertia-sample")]["converged"] else "")
            + ("" if rows[(n, "inertia-sample")].get("right", True) else
               (", " if not rows[(n, "inertia-sample")]["converged"] else "") + "not right"))
        for n in names if (n, "inertia-sample") in rows
        and not (rows[(n, "inertia-sample")].get("converged")
                 and rows[(n, "inertia-sample")].get("right"))}
    fits = [rows[(n, "inertia-fit")] for n in names if (n, "inertia-fit") in rows
            and "error" not in rows[(n, "inertia-fit")]]
    out["fit_rows"] = len(fits)
    out["fit_right"] = sum(bool(r["right"]) for r in fits)
    # a fit that says it converged and that q is adequate, and is wrong
    out["fit_adequate_but_wrong"] = sorted(r["posterior"] for r in fits if r["converged"]
                                           and r.get("quality") == "adequate" and not r["right"])
    return out


def _f(x, fmt):
    return "-" if x is None else format(x, fmt)


def write_report(names):
    import catalogue

    rows = read_rows()
    s = summary(rows, names)
    TABLE.write_text(json.dumps(_json_safe({"summary": s, "rows": [
        rows[k] for k in sorted(rows) if k[0] in set(names)]}), indent=1) + "\n")
    nc = len(s["nuts_converges"])
    L = ["# Public suite: a no-regression table", "",
         f"{len(names)} posteriors, none written for this project: posteriordb's reference "
         "posteriors (every one whose Stan model NumPyro expresses, translated model by model; "
         "the translations pass a score test on posteriordb's reference draws), posteriordb "
         "models without published draws and three models at d = 50-403 on simulated data "
         "(references by long float64 NUTS runs), and Inference Gym targets with published "
         "ground truth. inertia's `sample` and `fit` with their defaults, and float64 NumPyro "
         "NUTS with a dense and a diagonal mass matrix, each in a fresh process, seed 0.", "",
         "Regenerate every row (resumable; `--resume` keeps finished rows, `--quick` shortens "
         "NUTS):", "", "```", f"{COMMAND} --resume", "```", "",
         "Rules. *converged*: R-hat <= 1.01, bulk ESS >= 400 on every named quantity, no "
         "divergent transition after warm-up (and, for `sample`, its own verdict). *right*: no "
         "mean or sd off by more than 0.15 reference sd while significant against both runs' "
         "Monte Carlo errors (two-sided Bonferroni bound at level 0.01 over the quantities). "
         "*grad/ESS*: every gradient of the run, warm-up and discarded attempts included, over "
         "the smallest bulk ESS. *confidently wrong*: converged and not right. Wall times "
         "were measured on a shared 2-core machine under load from other jobs; compare "
         "gradients, which do not depend on load.", "",
         "## Summary", ""]
    ratio = s["ratio"]
    L += [f"- Float64 NUTS (dense or diagonal) converges on {nc} of the "
          f"{len(names) - len(s['missing'])} posteriors with rows; inertia's `sample` converges "
          f"and is right on {len(s['inertia_ok'])} of them"
          + (f"; not on: {', '.join(s['inertia_not_ok'])}." if s["inertia_not_ok"] else "."),
          f"- Of those it gets right, at <= 0.5x the better NUTS's gradients per ESS: "
          f"{s['at_most_half']} of {len(ratio)}"
          + (f" ({100 * s['at_most_half'] / len(ratio):.0f} %)" if ratio else "")
          + f"; above 1x: {', '.join(s['above_one']) or 'none'}.",
          f"- inertia's `sample` not converged or not right, whatever NUTS did: "
          + (", ".join(f"{k} ({v})" for k, v in s["sample_failures"].items()) or "none") + ".",
          f"- Confidently wrong (converged and not right), any method: "
          f"{', '.join(s['confidently_wrong']) or 'none'}."]
    L.append(f"- `fit`: right (the Gaussian's means and sds within the same rule) on "
             f"{s['fit_rows'] and s['fit_right']} of {s['fit_rows']} posteriors; converged with "
             f"q judged adequate and yet wrong: {', '.join(s['fit_adequate_but_wrong']) or 'none'}.")
    if s["missing"]:
        L.append(f"- Posteriors without a `sample` row or without any NUTS row (not run yet): {', '.join(s['missing'])}.")
    L += ["", "## Posteriors and references", "",
          "| posterior | d | source | reference |", "|---|---:|---|---|"]
    for n in names:
        e = catalogue.BY_NAME[n]
        r = next((rows[(n, m)] for m in METHODS if (n, m) in rows and "d" in rows[(n, m)]), None)
        how = {"posteriordb draws": "posteriordb reference draws (10 x 1 000)",
               "posteriordb summary statistics": "posteriordb reference means and sds",
               "NUTS": (r or {}).get("reference", "long float64 NUTS run (reference.py)"),
               "Gym": "Inference Gym ground truth"}[e.reference]
        if e.shares:
            how += f" of {e.shares} (the same posterior)"
        L.append(f"| {n} | {r['d'] if r else '-'} | {e.source} | {how} |")
    L += ["", "## Sampling", "",
          "| posterior | method | converged | right | max mean err | max sd err | R-hat | "
          "ESS | divergences | grad/ESS | ratio to best NUTS | wall s |",
          "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in names:
        conv = [rows[(n, m)] for m in ("nuts-dense", "nuts-diag") if (n, m) in rows
                and rows[(n, m)].get("converged") and rows[(n, m)].get("grads_per_ess")]
        best = min((r["grads_per_ess"] for r in conv), default=None)
        for m in ("inertia-sample", "nuts-dense", "nuts-diag"):
            r = rows.get((n, m))
            if r is None:
                continue
            if "error" in r:
                L.append(f"| {n} | {m} | error: {r['error'][:80]} | | | | | | | | | |")
                continue
            gpe = r.get("grads_per_ess")
            L.append(f"| {n} | {m} | {'yes' if r['converged'] else '**no**'} | "
                     f"{'yes' if r['right'] else '**no**'} | {_f(r['max_mean_err'], '.3f')} | "
                     f"{_f(r['max_sd_err'], '.3f')} | {_f(r['max_rhat'], '.3f')} | "
                     f"{_f(r['min_ess_bulk'], '.0f')} | {r['divergences']} | {_f(gpe, '.1f')} | "
                     f"{_f(gpe / best if gpe and best else None, '.2f')} | "
                     f"{_f(r['wall_s'], '.0f')} |")
    L += ["", "## Gaussian VI (`fit`)", "",
          "Errors of the fitted Gaussian's means and sds (4 000 draws of q mapped to the named "
          "quantities) against the reference; a Gaussian on the unconstrained space is not "
          "expected to be right on a skewed posterior: the verdict and the Pareto k-hat say "
          "whether it is usable.", "",
          "| posterior | converged | stopping rule | k-hat | quality | max mean err | max sd err | "
          "gradients | wall s |", "|---|---|---|---:|---|---:|---:|---:|---:|"]
    for n in names:
        r = rows.get((n, "inertia-fit"))
        if r is None:
            continue
        if "error" in r:
            L.append(f"| {n} | error: {r['error'][:80]} | | | | | | | |")
            continue
        k = r.get("k_hat")
        if k is None:  # rows written before k-hat had its own field: the verdict's number
            m_ = re.search(r"'pareto_khat': ([0-9.eE+-]+)", str(r.get("verdict", "")))
            k = float(m_.group(1)) if m_ else None
        stop = re.search(r"'step': (\d+)", str(r.get("verdict", "")))
        L.append(f"| {n} | {'yes' if r['converged'] else '**no**'} | "
                 f"{'stopped at update ' + stop.group(1) if stop else '-'} | {_f(k, '.2f')} | "
                 f"{r.get('quality') or '-'} | {_f(r['max_mean_err'], '.3f')} | "
                 f"{_f(r['max_sd_err'], '.3f')} | {r['grads']} | {_f(r['wall_s'], '.0f')} |")
    L.append("")
    DOC.write_text("\n".join(L))
    return s


# --- driver ----------------------------------------------------------------------------------

def main(argv=None):
    import catalogue

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--resume", action="store_true", help="skip (posterior, method) rows stored")
    ap.add_argument("--report", action="store_true", help="only rewrite the table and page")
    ap.add_argument("--child", nargs=2, metavar=("NAME", "METHOD"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        name, method = a.child
        try:
            row = run_one(name, method, a.quick)
        except Exception as exc:  # recorded as the row: the table says what broke
            row = {"posterior": name, "method": method, "error": repr(exc)[:500],
                   "traceback": traceback.format_exc()[-2000:]}
        print("ROW " + json.dumps(row), flush=True)
        return
    names = a.names or list(catalogue.NAMES)
    if not a.report:
        methods = a.methods.split(",")
        env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
        for name in names:
            for m in methods:
                done = read_rows() if a.resume else {}  # re-read: runners may share the rows
                if (name, m) in done and "error" not in done[(name, m)]:
                    continue
                t0 = time.perf_counter()
                cmd = [sys.executable, __file__, "--child", name, m] + (["--quick"] * a.quick)
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                       timeout=CHILD_LIMIT_S)
                    line = [x for x in p.stdout.splitlines() if x.startswith("ROW ")]
                    row = (json.loads(line[-1][4:]) if line else
                           {"posterior": name, "method": m,
                            "error": f"child exited {p.returncode}: {p.stderr[-400:]}"})
                except subprocess.TimeoutExpired:
                    row = {"posterior": name, "method": m,
                           "error": f"not finished in the harness's {CHILD_LIMIT_S} s"}
                with ROWS.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                _log(f"{name:50s} {m:15s} {time.perf_counter() - t0:6.0f} s  "
                     + (row.get("error", "")[:100] or
                        f"converged {row.get('converged')} right {row.get('right')} "
                        f"grad/ESS {row.get('grads_per_ess')}"))
    write_report(names)


if __name__ == "__main__":
    main()
