"""`inertia calibrate`: Algorithm 1 on a CSV or a large data file (intercept added, no prior).

Exit status: 0 when the chains mixed (R-hat <= 1.01, bulk ESS >= 100) and the covariance check
passed; 3 when not (unless --allow-unconverged); 2 on errors.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

from ._args import number_type


# argparse types of --temperature (beta in (0, inf]), --momentum ([0, 1)), --beta-div (> 1)
_inv_temp = number_type(float, lambda v: v > 0, "a number > 0 or 'inf'",
                    "the inverse temperature beta must be > 0 (inf: SGD; N: posterior-scale SGLD); "
                    "got {text}", "inverse_temperature")
_momentum = number_type(float, lambda v: 0 <= v < 1, "a number in [0, 1)",
                    "must be in [0, 1) (1 removes all friction: the iterates never settle); "
                    "got {text}", "momentum")
_beta_div = number_type(float, lambda v: 1 < v < math.inf, "a number > 1",
                    "must be a finite number > 1 (-> 1 is the log loss); got {text}", "beta_div")


def run(args) -> int:
    if args.json is not None:
        from ._args import check_output_file

        check_output_file(args.json, "--json")
    if (args.csv is None) == (args.data is None):
        raise ValueError("give exactly one of --csv (a small CSV, read into memory) and --data "
                         "(.npy, .parquet or .csv read in row groups)")
    if args.data is not None:
        return run_large(args)
    if args.response is None:
        raise ValueError("--csv needs --response (the response column's name)")
    from inertia.data.csv import binary_response, read_csv

    X, y, names = read_csv(args.csv, response=args.response, drop_missing=args.drop_missing)
    if args.model == "logistic" and len(set(y.tolist())) < 2:
        binary_response(y, args.response, args.csv)
    n, d = X.shape[0], X.shape[1] + 1
    if n <= d:
        raise ValueError(f"{args.csv}: {n} data row(s) for {d} parameters (intercept + "
                         f"{d - 1} predictors); calibrate needs more rows than parameters")
    if args.batch_size > X.shape[0]:
        raise ValueError(f"--batch-size {args.batch_size} exceeds the {X.shape[0]} data rows of "
                         f"{args.csv}")
    from inertia.sgmcmc.calibrate import NoEstimateError, calibrate
    from inertia.sgmcmc.models import make_model
    from inertia.progress import announce_rows

    announce_rows("inertia calibrate", n, d, "estimating theta_hat, J and I, then the chains")

    kw = _model_kwargs(args)
    params = ["(intercept)"] + names
    try:
        from inertia.sgmcmc.calibrate import check_estimate_exists

        model = make_model(args.model, X, y, **kw)
        check_estimate_exists(model)
    except NoEstimateError as err:
        which = f" (most: column {params[err.parameter]!r})" if err.parameter is not None else ""
        raise ValueError(f"{args.csv}: {err}{which}") from None
    res = calibrate(model, batch_size=args.batch_size, tuning=args.tuning,
                    num_steps=args.steps, seed=args.seed, temperature=args.temperature,
                    momentum=args.momentum, subsample=args.subsample,
                    replacement=not args.without_replacement, num_chains=args.chains,
                    names=params, target_ess=args.target_ess)
    return report(args, res, model, params)


def _model_kwargs(args) -> dict:
    """make_model / large_model options from the CLI: an intercept; linear's loss."""
    if args.model == "linear":
        return {"intercept": True, "loss": args.loss, "beta_div": args.beta_div}
    if args.loss != "log":
        raise ValueError("--loss beta applies to --model linear only")
    return {"intercept": True}


def run_large(args) -> int:
    """`--data FILE`: chunked passes over a memory-mapped or row-group-read file."""
    from inertia.data.sources import open_source

    from inertia.sgmcmc.calibrate import NoEstimateError, calibrate
    from inertia.sgmcmc.large import large_model

    response = args.response
    if str(args.data).lower().endswith(".npy"):
        response = -1 if response in (None, "last") else response
    src = open_source(args.data, response)
    if args.batch_size > src.num_rows:
        raise ValueError(f"--batch-size {args.batch_size} exceeds the {src.num_rows} data rows "
                         f"of {args.data}")
    kw = _model_kwargs(args)
    params = ["(intercept)"] + list(src.names)
    from inertia.progress import announce_rows

    announce_rows("inertia calibrate", src.num_rows, len(params),
                  "estimating theta_hat, J and I, then the chains")
    model = large_model(args.model, src, **kw)
    try:
        res = calibrate(model, batch_size=args.batch_size, tuning=args.tuning,
                        num_steps=args.steps, seed=args.seed, temperature=args.temperature,
                        momentum=args.momentum, subsample=args.subsample,
                        replacement=not args.without_replacement, num_chains=args.chains,
                        names=params, target_ess=args.target_ess,
                        devices="all" if args.devices else None)
    except NoEstimateError as err:
        which = f" (most: column {params[err.parameter]!r})" if err.parameter is not None else ""
        raise ValueError(f"{args.data}: {err}{which}") from None
    return report(args, res, model, params)


def report(args, res, model, params) -> int:
    """Print the per-parameter table and verdict; write --json."""
    import numpy as np

    sd_t = np.sqrt(np.diag(res.target_cov))
    sd_p = np.sqrt(np.diag(res.predicted_cov))
    sd_e = np.sqrt(np.diag(res.empirical_cov))
    mean = res.draws.reshape(-1, model.dim).mean(0)
    print(f"{args.model} ({model.name}), N={model.num_obs}, D={model.dim}, B={args.batch_size}, "
          f"tuning={args.tuning}, beta={args.temperature:g}, momentum={args.momentum:g}")
    print(f"{'parameter':>24} {'theta_hat':>11} {'mean':>11} {'sd target':>10} "
          f"{'sd pred':>10} {'sd emp':>10} {'IAT':>8} {'r_hat':>7} {'ess_bulk':>9}")
    dg = res.diagnostics
    rhat = dg.rhat if dg is not None else np.full(model.dim, np.nan)
    ess = dg.ess_bulk if dg is not None else np.full(model.dim, np.nan)
    for i, p in enumerate(params):
        print(f"{p[:24]:>24} {res.theta_hat[i]:11.4g} {mean[i]:11.4g} {sd_t[i]:10.4g} "
              f"{sd_p[i]:10.4g} {sd_e[i]:10.4g} {res.iat.per_coord[i]:8.1f} {rhat[i]:7.3f} "
              f"{ess[i]:9.0f}")
    js = res.to_json()
    print(f"forward check |Sigma(Lambda) - Sigma*| = {res.tuning.forward_error:.2e}; "
          f"worst IAT {res.iat.worst:.1f} iterations; ||emp - target||_F/||target||_F = "
          f"{js['cov_error_vs_target']:.3f}")
    print(dg.line(res.verdict) if dg is not None else res.verdict.line())
    if args.json:
        from inertia._json import dump_json

        js["parameters"] = params
        dump_json(js, args.json)
        print(f"wrote {args.json}")
    return res.verdict.exit(getattr(args, "allow_unconverged", False), "the calibration has",
                            "Run longer (--steps, --target-ess), or check the model")


def add_parser(subparsers):
    """Add `inertia calibrate` (the issue's CLI contract)."""
    from inertia._names import SGMCMC_TUNINGS
    from ._args import (Formatter, add_allow_unconverged, add_chains, add_drop_missing, add_seed,
                        positive_int)

    p = subparsers.add_parser(
        "calibrate", help="SGD/SGLD tuned so its stationary covariance is the sandwich covariance",
        formatter_class=Formatter,
        description="Algorithm 1 (Wang, Huggins et al.): MAP, sandwich covariance, tuned "
                    "preconditioner Lambda, SG(L)D draws and predicted vs empirical covariance. "
                    "An intercept column is added; no prior. Tuning rules (docs/sgmcmc.md): "
                    "dq-exact (the paper's rule, eq. 15 solved exactly), and the baselines ct "
                    "(eq. 7, SGD only), dq-const (eq. 9 with C = J/B) and lr-ws (eq. 9-10).")
    p.add_argument("--csv", type=Path, default=None,
                   help="CSV file with a header row; every cell numeric (read into memory)")
    p.add_argument("--data", type=Path, default=None, metavar="FILE",
                   help="large data: .npy (memory-mapped; response column by index, default "
                        "last), .parquet or .csv (read in row groups); chunked passes")
    p.add_argument("--response", default=None,
                   help="name of the response column (required with --csv, .parquet, .csv)")
    add_drop_missing(p, "rows")
    p.add_argument("--model", required=True, choices=["linear", "poisson", "logistic"],
                   help="GLM: linear (Gaussian or beta loss), poisson (log link), logistic "
                        "(response 0/1)")
    p.add_argument("--loss", choices=["log", "beta"], default="log",
                   help="linear model loss: Gaussian log loss or beta-divergence")
    p.add_argument("--beta-div", type=_beta_div, default=1.5,
                   help="beta-divergence power (> 1; with --loss beta)")
    p.add_argument("--batch-size", required=True, type=positive_int,
                   help="minibatch size B (1..number of rows)")
    p.add_argument("--tuning", choices=SGMCMC_TUNINGS, default="dq-exact",
                   help="rule that sets the preconditioner Lambda (see above)")
    p.add_argument("--steps", type=positive_int, default=None,
                   help="SG(L)D steps per chain (default: run until R-hat <= 1.01 and bulk ESS "
                        ">= --target-ess, the first block from the predicted IAT, ~N/B)")
    p.add_argument("--target-ess", type=number_type(float, lambda v: v > 0, "a number > 0",
                                                    "must be > 0; got {text}", "target_ess"),
                   default=None, metavar="ESS",
                   help="keep running until every bulk ESS reaches ESS (default 400 without "
                        "--steps)")
    p.add_argument("--devices", action="store_true",
                   help="shard the rows over all JAX devices (with --data)")
    add_seed(p)
    p.add_argument("--temperature", type=_inv_temp, default=math.inf, metavar="INV_TEMP",
                   help="inverse temperature beta (default inf: SGD; N: posterior-scale SGLD)")
    p.add_argument("--momentum", type=_momentum, default=0.0, metavar="K",
                   help="momentum in [0, 1)")
    p.add_argument("--json", type=Path, default=None, metavar="PATH",
                   help="write results as JSON (default: none)")
    p.add_argument("--subsample", type=positive_int, default=None, metavar="M",
                   help="offline subsample size for theta_hat, J and I (default: all rows)")
    p.add_argument("--without-replacement", action="store_true",
                   help="draw minibatches without replacement")
    add_chains(p)
    add_allow_unconverged(p, "the chains have not mixed (R-hat > 1.01, bulk ESS < 100) or the "
                             "covariance check failed (default: exit status 3)")
    p.set_defaults(func=run)
    return p
