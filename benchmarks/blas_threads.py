"""The same CLI fit with and without OPENBLAS_NUM_THREADS=1, quiet and beside two busy processes.

Runs `inertia fit --model gaussian-kappa --dim 300 --method stl-proj --batch-size 8 --steps 50
--seed 0` as a fresh process (python -m inertia, the installed CLI's entry point) and reads the
"run" seconds (compiled updates, compile excluded) from its JSON. With the library's own limit
(the `inertia` command's own process sets its BLAS pools to one thread) the variable should make no
difference; `--also-unlimited` adds a call of the command's `main` from Python, which leaves the
pools alone, for contrast. Ratio = without variable / with variable.
Run: python benchmarks/blas_threads.py [--repeats 3] [--also-unlimited] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

FIT = ["fit", "--model", "gaussian-kappa", "--dim", "300", "--method", "stl-proj",
       "--batch-size", "8", "--steps", "50", "--seed", "0", "--checkpoint-every", "50", "--quiet"]
UNLIMITED = "import sys; from inertia.cli import main; sys.exit(main(sys.argv[1:]))"


def run_fit(variable: bool, limited: bool) -> float:
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if variable:
        env["OPENBLAS_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "fit.json")
        head = [sys.executable, "-m", "inertia"] if limited else [sys.executable, "-c", UNLIMITED]
        subprocess.run(head + FIT + ["--json", out], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as fh:
            return json.load(fh)["checkpoints"][-1]["seconds"]


def phase(name, repeats, also_unlimited):
    rows = []
    variants = [("limit", True)] + ([("no limit", False)] if also_unlimited else [])
    for label, limited in variants:
        with_var, without = [], []
        for _ in range(repeats):  # interleaved so that drifting background load hits both
            with_var.append(run_fit(True, limited))
            without.append(run_fit(False, limited))
        row = {"machine": name, "library limit": label, "loadavg": os.getloadavg()[0],
               "with_var_s": min(with_var), "without_var_s": min(without),
               "ratio": min(without) / min(with_var)}
        rows.append(row)
        print(f"{name:22s} {label:9s} load {row['loadavg']:.2f}  with var {row['with_var_s']:.2f}s"
              f"  without {row['without_var_s']:.2f}s  ratio {row['ratio']:.2f}", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--also-unlimited", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    run_fit(True, True)  # warm the persistent compilation cache and the page cache
    rows = phase("quiet", args.repeats, args.also_unlimited)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(2.0)
        rows += phase("beside 2 busy processes", args.repeats, args.also_unlimited)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
