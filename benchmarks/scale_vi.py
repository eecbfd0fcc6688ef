"""fit(target) and sample(target) against d on the non-centred hierarchical logistic of
benchmarks/scale_d.py: which Gaussian family the automatic mode took, gradients, first-run wall
time, compile seconds, steady-state seconds per gradient, the largest compiled program, peak RSS,
the verdict (and the PSIS k-hat of the fit). Each run in a fresh process.

    python benchmarks/scale_vi.py --dims 1003 3003 10003 --methods fit sample \
        --out benchmarks/results/scale_vi.jsonl
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def one(d: int, method: str) -> dict:
    """One run in this process: the result's cost, gradients and verdict."""
    sys.path.insert(0, HERE)
    from scale_d import model_and_data

    t0 = time.perf_counter()
    from inertia.targets import from_numpyro

    model, args = model_and_data("hier", d)
    t = from_numpyro(model, *args)
    row = {"family": "hier", "d": t.dim, "method": method}
    if method == "fit":
        from inertia.vi import fit

        r = fit(t)
        row.update(gaussian_family=(r.family or {}).get("name", "full-rank")
                   if hasattr(r, "family") else "full-rank",
                   gradients=int(r.history["grad_evals"][-1]),
                   hvps=int(r.history["hvp_evals"][-1]), updates=int(r.num_steps),
                   khat=(r.quality or {}).get("khat"), verdict=r.verdict.line(),
                   converged=bool(r.converged), events=[e.get("event") for e in r.events])
    else:
        from inertia.mcmc import sample

        r = sample(t)
        dg = r.diagnostics
        row.update(gradients=int(r.total_grad_evals), min_ess=float(dg.min_ess_bulk),
                   max_rhat=float(dg.worst_rhat), verdict=r.verdict.line(),
                   converged=bool(r.converged),
                   grads_per_ess=float(r.total_grad_evals / dg.min_ess_bulk))
    row["wall_seconds"] = time.perf_counter() - t0
    row["cost"] = r.cost
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, nargs="+", default=[1003, 3003, 10003])
    p.add_argument("--methods", nargs="+", default=["fit", "sample"], choices=["fit", "sample"])
    p.add_argument("--out", default=os.path.join(HERE, "results", "scale_vi.jsonl"))
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--one", nargs=2, metavar=("D", "METHOD"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one:
        print(json.dumps(one(int(a.one[0]), a.one[1]), default=str))
        return 0
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    for d in a.dims:
        for m in a.methods:
            env = dict(os.environ, INERTIA_JAX_CACHE="off", JAX_COMPILATION_CACHE_DIR="")
            try:
                cp = subprocess.run([sys.executable, __file__, "--one", str(d), m], env=env,
                                    capture_output=True, text=True, timeout=a.timeout)
                lines = [ln for ln in cp.stdout.splitlines() if ln.startswith("{")]
                row = json.loads(lines[-1]) if lines else {
                    "d": d, "method": m, "error": cp.stderr[-2000:]}
            except subprocess.TimeoutExpired:
                row = {"d": d, "method": m, "error": f"timeout after {a.timeout:g} s"}
            with open(a.out, "a") as fh:
                fh.write(json.dumps(row, default=str) + "\n")
            print(json.dumps(row, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
