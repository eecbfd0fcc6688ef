"""`inertia fit`: fit a full-covariance Gaussian with any registered VI method.

Exit status: 0 when the fit converged and q is usable (Pareto k-hat <= 0.7); 3 when it ends NOT
CONVERGED (unless --allow-unconverged); 4 when it converged but q is an unreliable approximation
(k-hat > 0.7; unless --allow-unreliable); 2 on errors.
"""
from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path


def add_parser(sub):
    from inertia._names import DATASETS, VI_METHODS, VI_MODELS
    from ._args import (Formatter, add_allow_unconverged, add_drop_missing, add_quiet, add_seed,
                        positive_float, positive_int)

    p = sub.add_parser(
        "fit", help="fit a Gaussian approximation (accelerated Gaussian VI)",
        formatter_class=Formatter,
        description="Fit a full-covariance Gaussian q = N(m, CC^T) to a model by accelerated "
                    "Gaussian VI (Park, Jang & Chen 2026). Methods (README 'Methods'): "
                    "exact-apg uses exact expectations (no minibatch); fd-*/paired-* are "
                    "Cholesky-coordinate proximal (-prox) or projected (-proj) methods with the "
                    "finite-difference or paired Hessian estimators; stl-proj / price-stl-proj "
                    "use the symmetric root and the STL / Price-STL estimators; dgg-prox, dgg-stl, "
                    "price-spgd, fb-gvi, svrgvi are the baselines.")
    p.add_argument("--model", required=True, metavar="MODEL",
                   help=f"one of {', '.join(VI_MODELS)} (gaussian-kappa: Gaussian with condition "
                        "number --kappa in --dim dimensions; logistic / probit: Bayesian GLM on "
                        "--data; graph-probit: kNN-graph probit posterior on --data), or "
                        "FILE.py:NAME (a NumPyro model, a pm.Model or a function returning one, or a "
                        "log density NAME(params, data) with NAME_init in the file)")
    p.add_argument("--data", default=None,
                   help=f"built-in data set name ({', '.join(DATASETS)}; default wdbc, sonar "
                        "for graph-probit; pima and boston need $INERTIA_DATA_DIR or a "
                        "download, docs/data.md), a CSV path, or for a model file a data file of named "
                        "arrays (.json in Stan's convention, .npz, .parquet, .csv)")
    p.add_argument("--response", default=None,
                   help="response column of a CSV --data (binary; no default)")
    add_drop_missing(p)
    p.add_argument("--dim", type=positive_int, default=8, help="dimension (gaussian-kappa)")
    p.add_argument("--kappa", type=positive_float, default=300.0,
                   help="condition number (gaussian-kappa)")
    p.add_argument("--prior-scale", type=positive_float, default=1.0,
                   help="prior sd s0 (logistic/probit)")
    p.add_argument("--method", default=None, choices=sorted(VI_METHODS),
                   help="VI method; default: automatic (stl-proj with estimated bounds, restart, "
                        "stopping rule and averaging)")
    p.add_argument("--family", default=None, choices=("full-rank", "factor"),
                   help="Gaussian family; default: full rank up to d = 1000 where it fits in "
                        "memory, else factor covariance B B^T + diag(D^2) (docs/vi.md 'Which "
                        "Gaussian family')")
    p.add_argument("--rank", type=positive_int, default=None,
                   help="rank r of the factor family (default 16)")
    p.add_argument("--reparam", action="store_true",
                   help="partially non-centre a NumPyro model's location-scale sites with latent "
                        "parents before fitting, as `inertia sample` does by default (the summary "
                        "reads the model's own sites; default: the model as written)")
    p.add_argument("--no-accel", action="store_true",
                   help="run the non-accelerated twin (same estimator and step, no momentum)")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="draws per update; default min(64, max(8, d/2)) (1 for exact-apg)")
    p.add_argument("--steps", type=positive_int, default=None,
                   help="updates; default 1000 with a method, at most 20000 in automatic mode "
                        "(the stopping rule ends it earlier)")
    add_seed(p, "random seed (same seed, same numbers)")
    p.add_argument("--tol", type=positive_float, default=None,
                   help="stopping rule tolerance in nats (default 1e-4 in automatic mode)")
    p.add_argument("--checkpoint-every", type=positive_int, default=None,
                   help="record a checkpoint every this many updates (default: automatic)")
    p.add_argument("--step-size", type=positive_float, default=None,
                   help="override the method's default step size (README 'Methods')")
    p.add_argument("--dtype", default="float64", choices=("float64", "float32"),
                   help="float type of the updates (float32: half the memory, 1.4-3.5x faster "
                        "updates on CPU, iterates to ~1e-6; docs/benchmarks/speed.md 'float32 and the "
                        "GPU path'); bounds, gaps and results stay float64")
    p.add_argument("--json", type=Path, default=None,
                   help="write the result as JSON to this file (default: none)")
    p.add_argument("--plot", type=Path, default=None,
                   help="write a PNG of the convergence trace to this file (needs matplotlib; "
                        "default: none)")
    p.add_argument("--save", type=Path, default=None, metavar="PATH.nc",
                   help="save the result as netCDF (ArviZ InferenceData with the run's settings "
                        "and verdict; inertia.load reads it back; default: none)")
    add_quiet(p)
    add_allow_unconverged(p, "the fit ends NOT CONVERGED (default: exit status 3)")
    p.add_argument("--allow-unreliable", action="store_true",
                   help="exit 0 even when the approximation quality is unreliable (Pareto k-hat > "
                        "0.7; default: exit status 4)")
    p.set_defaults(func=run)
    from inertia._one_based import add_option

    add_option(p)  # --one-based
    return p


def run(args) -> int:
    from ._args import check_outputs

    check_outputs((("--json", args.json), ("--plot", args.plot),
                   ("--save", getattr(args, "save", None))))
    from inertia.targets.zoo import make_target
    from inertia.vi.ensure import fit
    from inertia.vi.registry import METHODS

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
    from inertia.vi.result import report_text

    print(report_text(res, out, total))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    if getattr(args, "save", None):
        res.save(args.save)
        print(f"wrote {args.save}")
    if args.plot:
        from inertia.plots import plot_fit

        plot_fit(res, args.plot)
        print(f"wrote {args.plot}")
    advice = ("The target is improper: give every parameter a proper prior (or check the data "
              "for separation)" if "improper" in res.verdict.numbers else
              "Raise --steps, check the model")
    return res.verdict.exit(getattr(args, "allow_unconverged", False), "the fit has", advice,
                            getattr(args, "allow_unreliable", False))

