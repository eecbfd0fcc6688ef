"""`inertia fit`: fit a full-covariance Gaussian with any registered VI method."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def add_parser(sub):
    from .._names import CLASSIFICATION, VI_METHODS, VI_MODELS
    from ..cli import Formatter, positive_float, positive_int

    p = sub.add_parser(
        "fit", help="fit a Gaussian approximation (accelerated Gaussian VI)",
        formatter_class=Formatter,
        description="Fit a full-covariance Gaussian q = N(m, CC^T) to a model by accelerated "
                    "Gaussian VI (Park, Jang & Chen 2026).\n\nmethods (README 'Methods'): "
                    "exact-apg uses exact expectations (no minibatch); fd-*/paired-* are "
                    "Cholesky-coordinate proximal (-prox) or projected (-proj) methods with the "
                    "finite-difference or paired Hessian estimators; stl-proj / price-stl-proj "
                    "use the symmetric root and the STL / Price-STL estimators; dgg-prox, dgg-stl, "
                    "price-spgd, fb-gvi, svrgvi are the baselines.")
    p.add_argument("--model", required=True, choices=VI_MODELS,
                   help="gaussian-kappa: Gaussian with condition number --kappa in --dim "
                        "dimensions; logistic / probit: Bayesian GLM on --data; graph-probit: "
                        "the kNN-graph probit posterior on --data")
    p.add_argument("--data", default=None, choices=CLASSIFICATION,
                   help="data set for logistic / probit (default wdbc) and graph-probit "
                        "(default sonar); pima needs $INERTIA_DATA_DIR or a download "
                        "(docs/data.md)")
    p.add_argument("--dim", type=positive_int, default=8, help="dimension (gaussian-kappa)")
    p.add_argument("--kappa", type=positive_float, default=300.0,
                   help="condition number (gaussian-kappa)")
    p.add_argument("--prior-scale", type=positive_float, default=1.0,
                   help="prior sd s0 (logistic/probit)")
    p.add_argument("--method", required=True, choices=sorted(VI_METHODS),
                   help="VI method (see the description above and README)")
    p.add_argument("--no-accel", action="store_true",
                   help="run the non-accelerated twin (same estimator and step, no momentum)")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="Monte Carlo draws per update b (default: automatic, chosen from the "
                        "method and dimension by vi.fit; exact-apg draws none)")
    p.add_argument("--steps", type=positive_int, default=None,
                   help="number of updates (default: vi.fit's, 1000 with the paper's bounds; "
                        "automatic mode stops by its rule, at most 20000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same numbers)")
    p.add_argument("--checkpoint-every", type=positive_int, default=None,
                   help="record the gap every this many updates (default: steps / 100)")
    p.add_argument("--step-size", type=positive_float, default=None,
                   help="override the method's default step size (README 'Methods')")
    p.add_argument("--json", type=Path, default=None, help="write the result as JSON to this file (default: none)")
    p.add_argument("--plot", type=Path, default=None,
                   help="write a PNG of the gap curve to this file (needs matplotlib; "
                        "default: none)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ..cli import check_output_file

    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path is not None:
            check_output_file(path, option)
    from ..targets.zoo import make_target
    from .fit import fit
    from .registry import METHODS

    target = make_target(args.model, data=args.data, dim=args.dim, kappa=args.kappa,
                         prior_scale=args.prior_scale)
    accelerated = False if args.no_accel else METHODS[args.method].accelerable
    if not args.quiet:
        print(f"inertia fit: {target.name} (d = {target.dim}, kappa = {target.kappa:.4g}), "
              f"{args.method} {'accelerated' if accelerated else 'plain'}, b = {args.batch_size or 'auto'}, "
              f"{args.steps or 'default'} steps", file=sys.stderr)
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
