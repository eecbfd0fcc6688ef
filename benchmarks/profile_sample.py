"""Where `sample(target)` spends its gradients and wall time, by phase, on one model of
benchmarks/scale_d.py: the progress lines timestamped (seconds since start), then the result's
report fields (gradients of the rewrite's choice, warm-up, sampling, discarded attempts; the
warm-up's frame, step size and trajectory; the run loop's decisions) as one JSON line.

    python benchmarks/profile_sample.py irt 244        # IRT 2PL centred, J = 200
    python benchmarks/profile_sample.py slopes 805 --fit
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class Stamped(io.TextIOBase):
    """stderr with each line prefixed by the seconds since the start."""

    def __init__(self, inner, t0):
        self.inner, self.t0, self.start = inner, t0, True

    def write(self, s):
        out = []
        for part in s.splitlines(keepends=True):
            if self.start:
                out.append(f"[{time.perf_counter() - self.t0:8.1f}s] ")
            out.append(part)
            self.start = part.endswith("\n")
        self.inner.write("".join(out))
        self.inner.flush()
        return len(s)

    def isatty(self):
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("family")
    ap.add_argument("d", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fit", action="store_true", help="run vi.fit(target) instead of sample")
    ap.add_argument("--stacks", type=float, default=0.0,
                    help="dump every thread's stack to stderr every this many seconds (0: never)")
    a = ap.parse_args(argv)
    if a.stacks:
        import faulthandler

        faulthandler.dump_traceback_later(a.stacks, repeat=True)
    t0 = time.perf_counter()
    sys.stderr = Stamped(sys.stderr, t0)
    import numpy as np

    from scale_d import _summary, model_and_data
    from inertia.targets import from_numpyro

    model, args = model_and_data(a.family, a.d)
    t = from_numpyro(model, *args)
    if a.fit:
        from inertia.vi import fit

        r = fit(t, seed=a.seed, progress=True)
        h = r.history
        print(json.dumps({"wall_s": round(time.perf_counter() - t0, 1), "converged": bool(r.converged),
                          "grads": int(np.asarray(h["grad_evals"])[-1]), "method": r.method,
                          "verdict": str(getattr(r, "verdict", ""))[:2000]}, default=str))
        return
    from inertia.mcmc import sample

    r = sample(t, seed=a.seed, progress=True)
    ess, rhat, _ = _summary(r.draws)
    tun = r.tuning or {}
    out = {"wall_s": round(time.perf_counter() - t0, 1), "converged": bool(r.converged),
           "total": int(r.total_grad_evals), "warmup": int(r.warmup_grad_evals),
           "draws": int(r.draws.shape[1]), "ess": ess, "rhat": rhat,
           "grads_per_ess": round(int(r.total_grad_evals) / max(ess, 1e-9), 1),
           "reparam": getattr(r, "reparam", None), "stopped": getattr(r, "stopped", None),
           "tuning": {k: v for k, v in tun.items() if k not in ("stages",)},
           "stages": tun.get("stages")}
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
