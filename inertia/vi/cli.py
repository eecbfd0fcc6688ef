"""`inertia fit`: fit a full-covariance Gaussian with any registered VI method."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def add_parser(sub):
    from ..targets.zoo import MODELS
    from .registry import METHODS

    p = sub.add_parser("fit", help="fit a Gaussian approximation (accelerated Gaussian VI)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--data", default=None, help="data set for logistic / probit / graph-probit")
    p.add_argument("--dim", type=int, default=8, help="dimension (gaussian-kappa)")
    p.add_argument("--kappa", type=float, default=300.0, help="condition number (gaussian-kappa)")
    p.add_argument("--prior-scale", type=float, default=1.0, help="prior sd s0 (logistic/probit)")
    p.add_argument("--method", required=True, choices=sorted(METHODS))
    p.add_argument("--no-accel", action="store_true", help="run the non-accelerated twin")
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--checkpoint-every", type=int, default=None)
    p.add_argument("--step-size", type=float, default=None, help="override the default step")
    p.add_argument("--json", type=Path, default=None, help="write the result as JSON")
    p.add_argument("--plot", type=Path, default=None, help="write a PNG of the gap curve")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ..targets.zoo import make_target
    from .fit import fit
    from .registry import METHODS

    target = make_target(args.model, data=args.data, dim=args.dim, kappa=args.kappa,
                         prior_scale=args.prior_scale)
    accelerated = False if args.no_accel else METHODS[args.method].accelerable
    if not args.quiet:
        print(f"inertia fit: {target.name} (d = {target.dim}, kappa = {target.kappa:.4g}), "
              f"{args.method} {'accelerated' if accelerated else 'plain'}, b = {args.batch_size}, "
              f"{args.steps} steps", file=sys.stderr)
    t0 = time.perf_counter()
    res = fit(target, args.method, accelerated=accelerated, batch_size=args.batch_size,
              num_steps=args.steps, seed=args.seed, checkpoint_every=args.checkpoint_every,
              step_size=args.step_size, progress=not args.quiet)
    total = time.perf_counter() - t0
    out = res.to_dict()
    out["wall_seconds"] = total
    last = out["checkpoints"][-1]
    gap = out["final_gap"]
    print(f"final gap {gap:.3e} nats" if gap is not None else "final gap: n/a", end="")
    print(f" | {last['grad_evals']} gradient + {last['hvp_evals']} HVP queries"
          f" | run {last['seconds']:.2f}s (compile {res.compile_seconds:.2f}s, total {total:.2f}s)")
    if res.diverged:
        print(f"warning: diverged at step {res.diverged['step']}; result is the last finite state",
              file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    if args.plot:
        from ..plots import plot_fit

        plot_fit(res, args.plot)
        print(f"wrote {args.plot}")
    return 0 if not res.diverged else 1
