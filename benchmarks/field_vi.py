"""The accelerated methods against the field's Gaussian VI (NGVI, square-root NGVI, BaM).

Per target (kappa-family d = 8 / kappa = 100 and d = 30 / kappa = 1000, WDBC logistic), every
method runs with its default step rule from N(0, I), 2 vmapped seeds; reported: first checkpoint
where the seed-mean exact gap F(q) - F* is <= 1e-3 nats, the updates, gradient + HVP queries and
run seconds (compile and gap evaluation excluded) spent to get there, and the final gap.
Writes benchmarks/results/field_vi.json and the section "Field Gaussian VI methods" of
benchmarks/results/benchmarks_log.md (replacing that section only).
Run: python benchmarks/field_vi.py [--quick] [--report]
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

import inertia  # noqa: F401
from inertia.targets import kappa_family
from inertia.targets.zoo import make_target
from inertia.vi import fit, hitting_step

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "field_vi.json"
DOC = ROOT / "benchmarks" / "results" / "benchmarks_log.md"
SECTION = "## Field Gaussian VI methods"
THRESHOLD = 1e-3
SEEDS = [0, 1]

ACCELERATED = ["price-stl-proj", "paired-proj", "stl-proj", "exact-apg"]
# (label, method, options): the field's methods at their defaults, plus the plain (control-free)
# NGVI estimator of AdvancedVI.jl and, on WDBC, NGVI with the decaying step
FIELD = [("ngvi", "ngvi", {}), ("ngvi (plain estimator)", "ngvi", {"control": False}),
         ("ngvi-reparam", "ngvi-reparam", {}), ("sqrt-ngvi", "sqrt-ngvi", {}), ("bam", "bam", {})]
FIELD_WDBC = [("ngvi (decaying step)", "ngvi", {"schedule": "decay", "decay_steps": 20.0})]

# target -> (constructor, batch, accelerated budget, field budget, checkpoint every (acc, field))
TARGETS = {
    "gaussian d=8 kappa=100": (lambda: kappa_family(8, 100.0), 64, 600, 100, (5, 1)),
    "gaussian d=30 kappa=1000": (lambda: kappa_family(30, 1000.0), 64, 3000, 200, (20, 2)),
    "WDBC logistic d=31": (lambda: make_target("logistic", data="wdbc"), 256, 3000, 600,
                           (30, 10)),
}


def run_one(target, label, method, options, batch, steps, every):
    """One fit; the hitting row of the table."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = fit(target, method, batch_size=batch, num_steps=steps, seed=SEEDS,
                  checkpoint_every=every, **options)
    h = res.history
    hit = hitting_step(res, THRESHOLD)
    row = {"label": label, "method": method, "options": options, "batch": batch,
           "steps": int(h["step"][-1]), "final_gap": res.final_gap,
           "compile_seconds": res.compile_seconds, "run_seconds": float(h["seconds"][-1]),
           "hit": hit, "diverged": bool(res.diverged), "exact": method == "exact-apg"}
    if hit is not None:
        i = int(np.nonzero(h["step"] == hit)[0][0])
        row.update(queries=int(h["grad_evals"][i] + h["hvp_evals"][i]),
                   grads=int(h["grad_evals"][i]), hvps=int(h["hvp_evals"][i]),
                   seconds=float(h["seconds"][i]))
    return row


def run(quick=False):
    results = {}
    for name, (make, batch, acc_steps, field_steps, (e_acc, e_field)) in TARGETS.items():
        target = make()
        rows = []
        field = FIELD + (FIELD_WDBC if "WDBC" in name else [])
        jobs = [(m, m, {}, acc_steps, e_acc) for m in ACCELERATED] + \
               [(lab, m, o, field_steps, e_field) for lab, m, o in field]
        for label, method, options, steps, every in jobs:
            if quick:
                steps, every = max(steps // 10, 10), max(every // 5, 1)
            t = time.perf_counter()
            rows.append(run_one(target, label, method, options, batch, steps, every))
            print(f"{name:28s} {label:26s} hit {rows[-1]['hit']}  final gap "
                  f"{rows[-1]['final_gap']}  ({time.perf_counter() - t:.0f}s)", flush=True)
        results[name] = {"batch": batch, "rows": rows}
    return results


READING = """**Where each wins (the run recorded in `benchmarks/results/field_vi.json`).**

- **Gaussian targets: batch-and-match, then NGVI.** With b = 64 > d and lambda_0 = b d, BaM's first
  update is nearly exact Gaussian score matching: 1e-3 after 2 updates (128 gradients) at both
  kappa. NGVI and square-root NGVI (with our score control, which makes their estimates exact at
  q = pi) need 13-22 updates, independent of kappa (affine invariance), against 95-165 (kappa = 100)
  and 360-620 (kappa = 1000) for the accelerated stochastic methods, whose count grows like
  sqrt(kappa). The gradient-only `ngvi-reparam` needs 24 / 198 updates but the fewest queries after
  BaM. `exact-apg` has the least wall time at d = 8 (no sampling), but it needs exact expectations.
- **The field's plain NGVI estimator** (AdvancedVI.jl's, `control=False`) stalls at its exact
  Gaussian floor rho d / (2 b (2 - rho)) = 0.021 (d = 8) and 0.078 (d = 30) nats and never reaches
  1e-3 at the default constant step; there every accelerated method wins.
- **WDBC logistic (non-Gaussian, kappa ~ 1890, b = 256): NGVI with a decaying step.** rho_k =
  0.5/(1 + k/20) reaches 1e-3 in 110 updates (0.9 M queries), 6.5x fewer updates and queries than
  `paired-proj` (720), 11x fewer than `price-stl-proj` (1230). At the constant default step NGVI,
  square-root NGVI and `stl-proj` stall at 1.5-1.6e-3. `exact-apg` takes 300 updates but uses
  quadrature expectations a generic model does not have. BaM ends at 5.7e-2: its fixed point is
  the score-based optimum, not the KL optimum (and lambda_k = b d/(k + 1) is still ~13 at k = 600).
- The decay constant tau = 20 is ours, chosen for this comparison; the accelerated methods ran at
  their default constant steps. Claim that this benchmark does not support: "the accelerated
  methods are faster than the field" on these targets; they are faster than the field's plain
  natural-gradient estimator at a constant step only.
"""


def _fmt(v, spec="{:.3g}"):
    return "—" if v is None else spec.format(v)


def report(results) -> str:
    lines = [SECTION, "",
             "Script: `benchmarks/field_vi.py` (run once, not a test): each method at its default "
             "step rule from N(0, I), 2 vmapped seeds; the first checkpoint where the seed-mean "
             "exact gap is <= 1e-3 nats, with the updates, gradient + HVP queries and run seconds "
             "spent to get there (compile time and gap evaluation excluded; the 2-core machine was "
             "shared with other jobs, so seconds are noisy: compare within a target). "
             "`exact-apg` uses exact Gaussian expectations (quadrature for WDBC) and makes no "
             "oracle queries. — = never at or below 1e-3 within the budget (final gap shown).", ""]
    for name, r in results.items():
        lines += [f"### {name} (b = {r['batch']})", "",
                  "| method | updates to 1e-3 | grads + HVPs | seconds | final gap | budget |",
                  "|---|---|---|---|---|---|"]
        for row in r["rows"]:
            q = "n/a (exact)" if row["exact"] and row["hit"] is not None else \
                _fmt(row.get("queries"), "{:,}")
            if q != "—" and not row["exact"]:
                q += f" ({row['grads']:,} + {row['hvps']:,})"
            lines.append(f"| {row['label']} | {_fmt(row['hit'], '{}')} | {q} | "
                         f"{_fmt(row.get('seconds'), '{:.2f}')} | {_fmt(row['final_gap'], '{:.2e}')}"
                         f" | {row['steps']} |")
        lines += ["", _winners(r["rows"]), ""]
    return "\n".join(lines) + "\n" + READING


def _winners(rows) -> str:
    hit = [r for r in rows if r["hit"] is not None]
    if not hit:
        return "Nobody reaches 1e-3 within the budget."
    parts = []
    for key, what in (("hit", "fewest updates"), ("seconds", "least run time")):
        best = min(hit, key=lambda r: r[key])
        parts.append(f"{what}: **{best['label']}** ({_fmt(best[key], '{:.3g}')})")
    sampled = [r for r in hit if not r["exact"]]
    if sampled:
        best = min(sampled, key=lambda r: r["queries"])
        parts.append(f"fewest queries (sampled methods): **{best['label']}** "
                     f"({best['queries']:,})")
    return "Winners to 1e-3 — " + "; ".join(parts) + "."


def write_section(text):
    doc = DOC.read_text()
    if SECTION in doc:
        head, rest = doc.split(SECTION, 1)
        nxt = rest.find("\n## ")
        tail = rest[nxt + 1:] if nxt >= 0 else ""
        doc = head + text + ("\n" + tail if tail else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    DOC.write_text(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run (1/10 of the budgets)")
    ap.add_argument("--report", action="store_true", help="only redo the docs section from JSON")
    args = ap.parse_args()
    if args.report:
        results = json.loads(OUT.read_text())
    else:
        results = run(quick=args.quick)
        if args.quick:
            print(report(results))
            return
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(results, indent=1))
    write_section(report(results))
    print(f"wrote {DOC.relative_to(ROOT)} section {SECTION!r}")


if __name__ == "__main__":
    main()
