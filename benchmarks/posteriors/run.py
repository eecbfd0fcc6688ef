"""Posterior suite: inertia's default sampler beside NumPyro NUTS (dense and diagonal mass) and
BlackJAX MCLMC, against long-run or exact references.

Per posterior and sampler, in one process: the sampler's verdict, the largest standardised error
of a mean |mean - ref| / ref sd and of an sd |sd - ref sd| / ref sd over the named quantities,
each with its z-score against the combined Monte Carlo standard error sqrt(MCSE_run^2 +
MCSE_ref^2), the smallest bulk ESS, gradient evaluations per ESS (warm-up / tuning included) and
wall time (compilation included). A run is flagged "converged but biased" when its verdict is
converged and some quantity has error > 0.1 sd with z > 4.
Run: `OPENBLAS_NUM_THREADS=1 python benchmarks/posteriors/run.py [--quick] [names...]
[--json benchmarks/results/posteriors.json] [--doc docs/benchmarks_posteriors.md]`
(`--report` only rewrites the page from the JSON; `--resume` keeps finished rows of the JSON).
"""
from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from models import HARD, NAMES, NEAR, load  # noqa: E402
from samplers import (max_rhat, min_ess, run_inertia, run_mclmc, run_nuts,  # noqa: E402
                      run_nutpie, summarise)

REF = ROOT / "benchmarks" / "results" / "posteriors_reference.json"
OUT = ROOT / "benchmarks" / "results" / "posteriors.json"
DOC = ROOT / "docs" / "benchmarks_posteriors.md"
TARGET_ESS = 400.0
BIAS_SD, BIAS_Z = 0.1, 4.0
METHODS = ("inertia", "nuts-dense", "nuts-diag", "mclmc")
NUTPIE = ("nutpie", "nutpie-lowrank")  # run by default where nutpie is installed (peers extra)
SETTINGS = {"full": {"nuts": (1000, 1000, 16000), "mclmc": (2000, 128000)},
            "quick": {"nuts": (500, 500, 4000), "mclmc": (1000, 16000)}}
PEER_RULE = "R-hat <= 1.01, bulk ESS >= 400, no divergent transition after warm-up, finite draws"


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_method(post, method, cfg, seed):
    if method == "inertia":
        return run_inertia(post, seed=seed)
    if method in ("nuts-dense", "nuts-diag"):
        w, n, cap = cfg["nuts"]
        return run_nuts(post, dense=method == "nuts-dense", seed=seed, num_warmup=w,
                        num_samples=n, max_samples=cap, target_ess=TARGET_ESS)
    if method in ("nutpie", "nutpie-lowrank"):
        _, n, cap = cfg["nuts"]
        return run_nutpie(post, seed=seed, num_samples=n, max_samples=cap,
                          target_ess=TARGET_ESS, low_rank=method == "nutpie-lowrank")
    if method == "mclmc":
        n, cap = cfg["mclmc"]
        return run_mclmc(post, seed=seed, num_steps=n, max_steps=cap, target_ess=TARGET_ESS)
    raise ValueError(method)


def compare(summary, ref):
    """Per quantity in both: standardised mean and sd errors and their z-scores."""
    out = {}
    for k, r in ref["quantities"].items():
        if k not in summary or not r["sd"] > 1e-12:
            continue
        s = summary[k]
        dm, ds = s["mean"] - r["mean"], s["sd"] - r["sd"]
        se_m = np.hypot(s["mcse_mean"], r["mcse_mean"])
        se_s = np.hypot(s["mcse_sd"], r["mcse_sd"])
        out[k] = {"mean_err": abs(dm) / r["sd"], "sd_err": abs(ds) / r["sd"],
                  "mean_z": abs(dm) / se_m if se_m > 0 else np.inf,
                  "sd_z": abs(ds) / se_s if se_s > 0 else np.inf,
                  "ess_bulk": s["ess_bulk"], "rhat": s["rhat"]}
    return out


def _worst(cmp, key):
    vals = {k: v[key] for k, v in cmp.items()}
    vals = {k: (v if np.isfinite(v) else np.inf) for k, v in vals.items()}
    k = max(vals, key=vals.get)
    return k, float(vals[k]), float(cmp[k][key.replace("err", "z")])


def score(post, res, ref, method):
    """The table row of one run."""
    cmp_ = compare(summarise(post, res["draws"]), ref)
    ess = min(v["ess_bulk"] if np.isfinite(v["ess_bulk"]) else 0.0 for v in cmp_.values())
    rhat = max(v["rhat"] if np.isfinite(v["rhat"]) else np.inf for v in cmp_.values())
    finite = bool(np.all(np.isfinite(res["draws"])))
    if method == "inertia":
        converged, verdict = res["converged"], res["verdict"]
    else:
        div = res["detail"].get("divergences", 0)
        converged = bool(rhat <= 1.01 and ess >= TARGET_ESS and div == 0 and finite)
        verdict = (f"R-hat {rhat:.3f}, ESS {ess:.0f}"
                   + (f", divergences {div}" if method != "mclmc" else "")
                   + ("" if finite else ", non-finite draws"))
    mk, me, mz = _worst(cmp_, "mean_err")
    sk, se, sz = _worst(cmp_, "sd_err")
    biased = sorted(k for k, v in cmp_.items()
                    if (v["mean_err"] > BIAS_SD and v["mean_z"] > BIAS_Z)
                    or (v["sd_err"] > BIAS_SD and v["sd_z"] > BIAS_Z))
    return {"posterior": post.name, "method": method, "converged": bool(converged),
            "verdict": verdict, "max_mean_err": me, "max_mean_err_at": mk, "max_mean_err_z": mz,
            "max_sd_err": se, "max_sd_err_at": sk, "max_sd_err_z": sz, "min_ess_bulk": ess,
            "max_rhat": rhat, "grads": int(res["grads"]),
            "grads_per_ess": res["grads"] / ess if ess > 0 else None, "wall_s": res["wall_s"],
            "biased": biased, "converged_but_biased": bool(converged and biased),
            "detail": res.get("detail", {})}


def _version(module):
    try:
        return __import__(module).__version__
    except ImportError:
        return None


def _fmt(v, f="{:.3f}"):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "inf" if isinstance(v, float) else "—"
    return f.format(v)


def _rel(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _z(v):
    return "inf" if not np.isfinite(v) else f"{v:.1f}"


INTRO = """# Posterior suite: inertia's default sampler, {peers}

{n_post} posteriors, {n_hard} of them non-Gaussian or hierarchical and {n_near} near-Gaussian, each
run by the samplers {methods} on the same unconstrained target (in one process unless the line
under the command says otherwise):

- **inertia**: `inertia.mcmc.sample(target, seed=0)`, the library's default (no method or
  parameters passed). Gradients: warm-up + 4 chains x sampling (`total_grad_evals` when the
  result has it).
- **nuts-dense / nuts-diag**: NumPyro NUTS on the target's potential with a dense or a diagonal
  mass matrix, 4 chains started uniform(-2, 2), {nuts_w} warm-up + {nuts_n} draws, extended by
  blocks of {nuts_n} draws while the smallest bulk ESS is below 400 or an R-hat above 1.01
  (at most {nuts_cap} a chain).
  Gradients: leapfrog steps of warm-up and sampling.
- **mclmc**: BlackJAX `mclmc_find_L_and_step_size` (its defaults: diagonal preconditioning,
  num_steps = {mclmc_n}) per chain, then MCLMC, extended while the bulk ESS is below 400 or an
  R-hat above 1.01 (at most {mclmc_cap} steps a chain). Gradients: 2 a step, tuning included.
- **nutpie / nutpie-lowrank** (where present; the optional peers extra): nutpie's NUTS (Rust;
  mass matrix adapted from gradients and draws) with its default warm-up, without and with its
  low-rank mass-matrix corrections, on the same log density through its Python-function
  interface (one jitted float64 JAX value-and-gradient, the route of its own PyMC JAX backend),
  4 chains on one core started uniform(-2, 2), {nuts_n} draws, the run repeated with twice the
  draws while the smallest bulk ESS is below 400 or an R-hat above 1.01 (at most {nuts_cap} a
  chain). Gradients: nutpie's leapfrog steps of warm-up and sampling, every attempt counted.
  Wall time includes each attempt; the JSON also holds the last attempt run again, compiled
  (`wall_rerun_s`).
- **inertia-unadjusted-hfhr** (where present): the same call with `method="hfhr"`'s automatic
  warm-up, the unadjusted HFHR scheme (fast, biased by its step size), kept for comparison.

Columns: the sampler's verdict (inertia: `res.converged`; the peers: {peer_rule}); the
largest standardised error of a mean, |mean - ref| / ref sd, and of an sd, |sd - ref sd| / ref
sd, over the named quantities (NumPyro models: constrained and deterministic sites), each with
the quantity and its z-score; the smallest bulk ESS (ArviZ); gradient evaluations per effective
sample with warm-up and tuning counted, and that ratio over dense-mass NUTS's; wall time
(compilation included).

**Monte Carlo noise and bias.** An error is compared with the standard error of the difference,
sqrt(MCSE_run^2 + MCSE_ref^2) (ArviZ's MCSE of the mean and of the sd; 0 for exact references).
A run is flagged **converged but biased** when its verdict is converged and some quantity has an
error above 0.1 sd *and* a z-score above 4: an error that large is not Monte Carlo noise at the
run's ESS. An error above 0.1 sd with z <= 4 is reported but not flagged (the run's ESS is too
small to tell). At ESS 400 a mean's MCSE is about 0.05 sd, so pure noise gives z ~ N(0, 1) per
quantity (a false alarm in about 1 run in 160 with 100 quantities) and the flag catches a bias of
about 0.2 sd at ESS 400 and of 0.1 sd from ESS of about 1 600 on.

**References** (`benchmarks/posteriors/reference.py`, stored in
`benchmarks/results/posteriors_reference.json`): exact moments for the banana, the funnel and the
mixture (closed forms, checked in the tests against 10^6 exact draws) and for the two Gaussian
posteriors (scaled-linear, gp-gaussian: linear algebra); otherwise one NumPyro NUTS run with a
dense mass matrix and target_accept_prob 0.95, 4 chains x (2 000 warm-up + 20 000 draws), R-hat
<= 1.01; the centred models (eight schools, hier-linear-8, multilevel-40, schools-t) take the
references of their non-centred twins (the same posteriors); the NumPyro funnel has the funnel's
closed form.
The reference's own MCSE enters every z-score; its smallest bulk ESS, R-hat and divergent
transitions are listed below (where a reference run had divergent transitions, a small fraction
of its 80 000 draws, it is less certain than its MCSE says).

Regenerate (about {minutes} minutes on one core):

```
OPENBLAS_NUM_THREADS=1 python benchmarks/posteriors/reference.py   # once; resumable
OPENBLAS_NUM_THREADS=1 python benchmarks/posteriors/run.py{quick}
```
"""


def report(data, doc, json_path=None):
    rows, meta = data["rows"], data["meta"]
    cfg = SETTINGS["quick" if meta.get("quick") else "full"]
    minutes = max(1, round(sum(r.get("wall_s") or 0 for r in rows) / 60))
    posts = {r["posterior"]: r.get("group") for r in rows}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    peers = "NUTS, MCLMC and nutpie" if set(methods) & set(NUTPIE) else "NUTS and MCLMC"
    lines = [INTRO.format(peers=peers, n_post=len(posts), n_hard=sum(g == HARD for g in posts.values()),
                          n_near=sum(g == NEAR for g in posts.values()),
                          methods=", ".join(methods),
                          nuts_w=cfg["nuts"][0], nuts_n=cfg["nuts"][1], nuts_cap=cfg["nuts"][2],
                          mclmc_n=cfg["mclmc"][0], mclmc_cap=cfg["mclmc"][1],
                          peer_rule=PEER_RULE, minutes=minutes,
                          quick=(" --quick" if meta.get("quick") else "")
                          + ("" if json_path is None or Path(json_path).resolve() == OUT.resolve()
                             else f" --json {_rel(json_path)} --doc {_rel(doc)}"))]
    lines.append(f"Measured on {meta.get('machine', '?')}, inertia {meta.get('inertia')} (default "
                 f"sampler: {meta.get('inertia_default', '?')}), jax {meta.get('jax')}, "
                 f"numpyro {meta.get('numpyro')}, blackjax {meta.get('blackjax')}, "
                 + (f"nutpie {meta['nutpie']}, " if meta.get("nutpie") else "") +
                 f"{meta.get('date')}"
                 + (", --quick settings" if meta.get("quick") else "")
                 + (f", in {meta['sessions']} processes (--resume)" if meta.get("sessions", 1) > 1
                    else ", in one process") + "."
                 + (f" {meta['note']}" if meta.get("note") else "") + "\n")
    missing = [n for n in NAMES if n not in posts]
    if missing:
        lines.append(f"Not run here (the suite's other posteriors): {', '.join(missing)}.\n")
    dense = {r["posterior"]: r for r in rows if r["method"] == "nuts-dense" and "error" not in r}
    for group in (HARD, NEAR):
        lines += [f"## {group}\n",
                  "| posterior | sampler | verdict | max mean err (z) | max sd err (z) | min ESS "
                  "| grads / ESS | vs NUTS dense | wall s | re-run s | flag |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            if r.get("group") != group:
                continue
            if "error" in r:
                lines.append(f"| {r['posterior']} | {r['method']} | failed: "
                             f"{r['error'][:80]} | | | | | | | | |")
                continue
            d = dense.get(r["posterior"])
            ratio = (r["grads_per_ess"] / d["grads_per_ess"]
                     if d and r["grads_per_ess"] and d["grads_per_ess"] else None)
            flag = "**converged but biased**" if r["converged_but_biased"] else (
                "error > 0.1, z <= 4" if not r["biased"] and max(r["max_mean_err"],
                                                                  r["max_sd_err"]) > BIAS_SD
                else ("biased, not converged" if r["biased"] else ""))
            lines.append(
                f"| {r['posterior']} | {r['method']} | "
                f"{'converged' if r['converged'] else 'not converged'} | "
                f"{r['max_mean_err']:.3f} ({r['max_mean_err_at']}, {_z(r['max_mean_err_z'])}) | "
                f"{r['max_sd_err']:.3f} ({r['max_sd_err_at']}, {_z(r['max_sd_err_z'])}) | "
                f"{r['min_ess_bulk']:.0f} | {_fmt(r['grads_per_ess'], '{:.0f}')} | "
                f"{_fmt(ratio, '{:.2f}')} | {r['wall_s']:.1f} | "
                f"{_fmt(r.get('detail', {}).get('wall_rerun_s'), '{:.1f}')} | {flag} |")
        lines.append("")
    lines += nutpie_table([r for r in rows if "error" not in r])
    lines += ["## Against the goals\n"]
    lines += goals(rows)
    lines += ["", "## References\n", "| posterior | d | description | reference | min ESS | "
              "max R-hat | divergences |", "|---|---|---|---|---|---|---|"]
    for name, r in data["references"].items():
        lines.append(f"| {name} | {r['dim']} | {r['description']} | {r['how']} | "
                     f"{_fmt(r.get('min_ess_bulk'), '{:.0f}')} | "
                     f"{_fmt(r.get('max_rhat'), '{:.4f}')} | {_fmt(r.get('divergences'), '{}')} |")
    Path(doc).write_text("\n".join(lines) + "\n")


def goals(rows):
    """Lines on the three goals: no converged-but-biased run; inertia's gradients per ESS at most
    dense NUTS's where NUTS converges; at most 0.5 x on the near-Gaussian ones."""
    ok = [r for r in rows if "error" not in r]
    bad = [r for r in ok if r["converged_but_biased"]]
    out = [f"- Runs flagged converged but biased: {len(bad)} of {len(ok)}"
           + (" (" + ", ".join(f"{r['posterior']} / {r['method']}: {', '.join(r['biased'][:3])}"
                               for r in bad) + ")" if bad else "") + "."]
    dense = {r["posterior"]: r for r in ok if r["method"] == "nuts-dense"}
    for group, limit in ((HARD, 1.0), (NEAR, 0.5)):
        counted, other = [], []
        for r in ok:
            d = dense.get(r["posterior"])
            if r["method"] != "inertia" or r.get("group") != group or not d:
                continue
            v = (r["grads_per_ess"] / d["grads_per_ess"]
                 if r["grads_per_ess"] and d["grads_per_ess"] else float("inf"))
            (counted if d["converged"] else other).append((r["posterior"], v))
        met = [p for p, v in counted if v <= limit]
        out.append(f"- {group}: inertia's gradients per ESS / dense NUTS's <= {limit:g} on "
                   f"{len(met)} of the {len(counted)} posteriors where dense NUTS converges ("
                   + ", ".join(f"{p} {v:.2f}" for p, v in counted) + ")"
                   + ("; where it does not: " + ", ".join(f"{p} {v:.2f}" for p, v in other)
                      if other else "") + ".")
    out += _against_nutpie(ok)
    return out


def _ratio(a, b):
    return a / b if a and b else None


def _nutpie_pairs(ok, method):
    """Per posterior where inertia and `method` both ran: (posterior, inertia row, nutpie row,
    gradients per ESS ratio, first-run wall ratio, re-run wall ratio), inertia over nutpie."""
    inert = {r["posterior"]: r for r in ok if r["method"] == "inertia"}
    pie = {r["posterior"]: r for r in ok if r["method"] == method}
    out = []
    for name, a in inert.items():
        b = pie.get(name)
        if b is None:
            continue
        out.append((name, a, b, _ratio(a["grads_per_ess"], b["grads_per_ess"]),
                    _ratio(a["wall_s"], b["wall_s"]),
                    _ratio(a.get("detail", {}).get("wall_rerun_s"),
                           b.get("detail", {}).get("wall_rerun_s"))))
    return out


def nutpie_table(ok):
    """Rows of inertia against each nutpie variant: verdicts, ratios, largest mean errors."""
    lines = []
    for method in NUTPIE:
        for name, a, b, g, w, rr in _nutpie_pairs(ok, method):
            conv = lambda r: "converged" if r["converged"] else "not converged"  # noqa: E731
            lines.append(f"| {name} | {method} | {conv(a)} / {conv(b)} | {_fmt(g, '{:.2f}')} | "
                         f"{_fmt(w, '{:.2f}')} | {_fmt(rr, '{:.2f}')} | "
                         f"{a['max_mean_err']:.3f} / {b['max_mean_err']:.3f} | "
                         f"{a['max_sd_err']:.3f} / {b['max_sd_err']:.3f} |")
    if not lines:
        return []
    return ["## inertia against nutpie\n",
            "Ratios are inertia's over nutpie's (below 1: inertia ahead); errors in reference sds.\n",
            "| posterior | nutpie variant | verdicts (inertia / nutpie) | grads / ESS ratio | "
            "wall ratio, first run | wall ratio, re-run | max mean err | max sd err |",
            "|---|---|---|---|---|---|---|---|"] + lines + [""]


def _against_nutpie(ok):
    """A line per nutpie variant: where inertia's default is ahead and where behind, in gradients
    per ESS (where both converge), wall time of the first run and of a re-run, verdicts and
    largest errors."""
    out = []
    for method in NUTPIE:
        pairs = _nutpie_pairs(ok, method)
        if not pairs:
            continue
        both = [(n, g) for n, a, b, g, _, _ in pairs if a["converged"] and b["converged"]]
        only_i = [n for n, a, b, *_ in pairs if a["converged"] and not b["converged"]]
        only_p = [n for n, a, b, *_ in pairs if b["converged"] and not a["converged"]]

        def split(vals):
            ahead = [f"{n} {v:.2f}" for n, v in vals if v is not None and v < 1]
            behind = [f"{n} {v:.2f}" for n, v in vals if v is None or v >= 1]
            return ", ".join(ahead) or "none", ", ".join(behind) or "none"

        ga, gb = split(both)
        wa, wb = split([(n, w) for n, _, _, _, w, _ in pairs])
        ra, rb = split([(n, r) for n, _, _, _, _, r in pairs if r is not None])
        err = sum(a["max_mean_err"] <= b["max_mean_err"] for _, a, b, *_ in pairs)
        out.append(
            f"- inertia against {method} on {len(pairs)} posteriors. Verdicts: both converged "
            f"on {len(both)}, only inertia on {len(only_i)}"
            + (f" ({', '.join(only_i)})" if only_i else "")
            + f", only {method} on {len(only_p)}" + (f" ({', '.join(only_p)})" if only_p else "")
            + f". Gradients per ESS (inertia / {method}, where both converged): inertia ahead "
            f"on {ga}; behind on {gb}. Wall time of the first run: inertia ahead on {wa}; "
            f"behind on {wb}. Of a re-run: ahead on {ra}; behind on {rb}. Largest mean error "
            f"no larger than {method}'s on {err} of {len(pairs)}.")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(NAMES))
    ap.add_argument("--quick", action="store_true", help="shorter peer runs (same ESS goal)")
    import importlib.util

    default = METHODS + (NUTPIE if importlib.util.find_spec("nutpie") else ())
    ap.add_argument("--methods", default=",".join(default))
    ap.add_argument("--json", default=str(OUT))
    ap.add_argument("--doc", default=str(DOC))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", action="store_true", help="only rewrite the page from the JSON")
    ap.add_argument("--resume", action="store_true", help="keep finished rows of the JSON")
    ap.add_argument("--note", default=None,
                    help="with --report: a sentence on the run (e.g. the machine's load) for the "
                         "page, kept in the JSON")
    a = ap.parse_args(argv)
    out = Path(a.json)
    if a.report:
        data = json.loads(out.read_text())
        if a.note is not None:
            data["meta"]["note"] = a.note
            out.write_text(json.dumps(data, indent=1, default=float))
        report(data, a.doc, out)
        return 0
    refs = json.loads(REF.read_text())
    cfg = SETTINGS["quick" if a.quick else "full"]
    import blackjax
    import numpyro
    import platform

    data = {"meta": {"quick": a.quick, "seed": a.seed, "inertia": _version("inertia"), "jax": jax.__version__,
                     "numpyro": numpyro.__version__, "blackjax": blackjax.__version__,
                     "machine": f"{platform.machine()} CPU ({jax.devices()[0].platform})",
                     "date": time.strftime("%Y-%m-%d"), "target_ess": TARGET_ESS,
                     "nutpie": _version("nutpie")},
            "rows": [], "references": {}}
    if a.resume and out.exists():
        old = json.loads(out.read_text())
        data["rows"], data["references"] = old["rows"], old["references"]
        data["meta"].update({k: v for k, v in old["meta"].items() if k == "inertia_default"})
        data["meta"]["sessions"] = old["meta"].get("sessions", 1) + 1
    done = {(r["posterior"], r["method"]) for r in data["rows"]}
    for name in a.names:
        post = load(name)
        ref = refs.get(name)
        if ref is None:
            _log(f"{name}: no reference in {REF}; run reference.py first")
            continue
        data["references"][name] = {"dim": post.dim, "description": post.description,
                                    "how": ref["how"], "min_ess_bulk": ref.get("min_ess_bulk"),
                                    "max_rhat": ref.get("max_rhat"),
                                    "divergences": ref.get("divergences")}
        for method in a.methods.split(","):
            if (name, method) in done:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = run_method(post, method, cfg, a.seed)
                row = score(post, res, ref, method)
                if method == "inertia":
                    data["meta"]["inertia_default"] = res["detail"]["method"]
            except Exception as err:  # a crash is a finding: record it and go on
                traceback.print_exc(limit=3)
                row = {"posterior": name, "method": method, "error": f"{type(err).__name__}: {err}"}
            row["group"] = post.group
            data["rows"].append(row)
            if "error" in row:
                _log(f"{name:26s} {method:10s} FAILED {row['error'][:150]}")
            else:
                _log(f"{name:26s} {method:10s} {'conv' if row['converged'] else 'NOT '} mean "
                     f"{row['max_mean_err']:.3f} (z {row['max_mean_err_z']:.1f}) sd "
                     f"{row['max_sd_err']:.3f} (z {row['max_sd_err_z']:.1f}) ESS "
                     f"{row['min_ess_bulk']:.0f} grads/ESS {_fmt(row['grads_per_ess'], '{:.0f}')}"
                     f" {row['wall_s']:.1f}s" + (" BIASED" if row["converged_but_biased"] else ""))
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(data, indent=1, default=float))
        del post
        jax.clear_caches()  # each posterior compiles its own functions: free the last one's
        gc.collect()
    report(data, a.doc, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
