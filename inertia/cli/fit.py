"""`inertia fit`: fit a Gaussian with any registered VI method (exit statuses: docs/reference/cli.md)."""
from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

from ..plots import plot_fit
from ..targets.zoo import make_target
from ..workflows.fit import fit
from ..variational.registry import METHODS
from ..variational.result import report_text
from ._args import check_outputs


def run(args) -> int:
    check_outputs((("--json", args.json), ("--plot", args.plot),
                   ("--save", getattr(args, "save", None))))
    target = make_target(args.model, data=args.data, dim=args.dim, kappa=args.kappa,
                         prior_scale=args.prior_scale, response=args.response,
                         drop_missing=args.drop_missing)
    accelerated = None
    if args.method is not None:
        accelerated = False if args.no_accel else METHODS[args.method].accelerable
    if not args.quiet:
        kappa = f", kappa = {target.kappa:.4g}" if target.alpha and target.beta else ""
        print(f"inertia fit: {target.name} (d = {target.dim}{kappa}), "
              f"{args.method or 'automatic'}{' plain' if args.no_accel else ''}", file=sys.stderr)
    t0 = time.perf_counter()
    res = fit(target, args.method, accelerated=accelerated, batch_size=args.batch_size,
              num_steps=args.steps, seed=args.seed, checkpoint_every=args.checkpoint_every,
              step_size=args.step_size, tol=args.tol, progress=not args.quiet, dtype=args.dtype,
              family=args.family, rank=args.rank, reparam="auto" if args.reparam else False)
    total = time.perf_counter() - t0
    out = res.to_dict()
    out["wall_seconds"] = total
    with warnings.catch_warnings():  # the printout says NOT CONVERGED itself
        warnings.simplefilter("ignore", RuntimeWarning)
        out["summary"] = res.summary()

    print(report_text(res, out, total))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    if getattr(args, "save", None):
        res.save(args.save)
        print(f"wrote {args.save}")
    if args.plot:
        plot_fit(res, args.plot)
        print(f"wrote {args.plot}")
    advice = ("The target is improper: give every parameter a proper prior (or check the data "
              "for separation)" if "improper" in res.verdict.numbers else
              "Raise --steps, check the model")
    return res.verdict.exit(getattr(args, "allow_unconverged", False), "the fit has", advice,
                            getattr(args, "allow_unreliable", False))
