"""ArviZ imported in the background: paired first runs of `inertia fit`, unpinned, with it off and on.

On a machine with two or more cores `inertia fit` imports ArviZ (for its PSIS check) in a
background thread while the fit compiles and runs (`inertia._prefetch`); on one core it does not.
This runs `inertia fit --model model.py:model --data data.csv` on the user models of `user_run.py`, each
in a fresh process with its own empty compilation cache, with INERTIA_PREFETCH=off and on in
alternation (off first in odd pairs, on first in even ones), not pinned, and reports per model the
median wall seconds of each and the median of the paired differences (on - off).
Run: python benchmarks/prefetch.py [--models a,b] [--pairs 3] [--json benchmarks/results/prefetch.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import user_run  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from inertia._prefetch import cores  # noqa: E402  (the working copy's, as the timed runs use)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None,
                    help=f"comma-separated subset of {','.join(user_run.MODELS)} (default: all)")
    ap.add_argument("--pairs", type=int, default=3, help="off/on pairs per model")
    ap.add_argument("--json", default=None, help="write the results to this file")
    args = ap.parse_args(argv)
    models = args.models.split(",") if args.models else list(user_run.MODELS)
    for m in models:
        if m not in user_run.MODELS:
            ap.error(f"unknown model {m!r}; models: {', '.join(user_run.MODELS)}")
    base = user_run.base_env()
    runs = {m: {"off": [], "on": []} for m in models}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="inertia-prefetch-") as root:
        probe = os.path.join(root, "probe.py")
        with open(probe, "w") as fh:
            fh.write(user_run.PROBE)
        folders = {m: user_run._write_model(root, m) for m in models}
        for r in range(args.pairs):
            for m in models:
                for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
                    env = dict(base, INERTIA_PREFETCH=mode,
                               INERTIA_JAX_CACHE=os.path.join(root, "cache", f"{m}.{mode}.{r}"))
                    log = os.path.join(root, "logs", f"{m}.{mode}.{r}")
                    os.makedirs(os.path.dirname(log), exist_ok=True)
                    rec = user_run._run_one(user_run._argv("cli_fit", folders[m], probe), env, log)
                    runs[m][mode].append(rec["wall_s"])
                    print(f"  [{r}] {m:14s} prefetch {mode:3s} {rec['wall_s']:6.2f} s  rc {rec['rc']}",
                          file=sys.stderr, flush=True)
    out = {"cores": cores(),
           "pairs": args.pairs, "loadavg": [load0, os.getloadavg()[0]], "models": {}}
    print("| model | prefetch off | prefetch on | paired difference (median, range) |")
    print("|---|---|---|---|")
    for m in models:
        off, on = runs[m]["off"], runs[m]["on"]
        diff = [b - a for a, b in zip(off, on)]
        out["models"][m] = {"off_s": off, "on_s": on, "median_off_s": statistics.median(off),
                            "median_on_s": statistics.median(on),
                            "median_difference_s": statistics.median(diff)}
        print(f"| {m} | {statistics.median(off):.2f} | {statistics.median(on):.2f} | "
              f"{statistics.median(diff):+.2f} ({min(diff):+.2f} to {max(diff):+.2f}) |")
    med = statistics.median(v["median_difference_s"] for v in out["models"].values())
    out["median_difference_s"] = med
    print(f"median over models of the paired difference: {med:+.2f} s ({out['cores']} cores)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
