"""`inertia calibrate`: Algorithm 1 on a CSV or a large data file (intercept added, no prior).

Exit status: 0 when the chains mixed (R-hat <= 1.01, bulk ESS >= 100) and the covariance check
passed; 3 when not (unless --allow-unconverged); 2 on errors.
"""
from __future__ import annotations

import numpy as np

from .._json import dump_json
from ..data.csv import binary_response, read_csv
from ..data.sources import open_source
from ..progress import announce_rows
from ..sgmcmc.calibrate import NoEstimateError, calibrate, check_estimate_exists
from ..sgmcmc.large import large_model
from ..sgmcmc.models import make_model
from ._args import check_output_file


def run(args) -> int:
    if args.json is not None:
        check_output_file(args.json, "--json")
    if (args.csv is None) == (args.data is None):
        raise ValueError("give exactly one of --csv (a small CSV, read into memory) and --data "
                         "(.npy, .parquet or .csv read in row groups)")
    if args.data is not None:
        return run_large(args)
    if args.response is None:
        raise ValueError("--csv needs --response (the response column's name)")
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
    announce_rows("inertia calibrate", n, d, "estimating theta_hat, J and I, then the chains")

    kw = _model_kwargs(args)
    params = ["(intercept)"] + names
    try:
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
    response = args.response
    if str(args.data).lower().endswith(".npy"):
        response = -1 if response in (None, "last") else response
    src = open_source(args.data, response)
    if args.batch_size > src.num_rows:
        raise ValueError(f"--batch-size {args.batch_size} exceeds the {src.num_rows} data rows "
                         f"of {args.data}")
    kw = _model_kwargs(args)
    params = ["(intercept)"] + list(src.names)
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
        js["parameters"] = params
        dump_json(js, args.json)
        print(f"wrote {args.json}")
    return res.verdict.exit(getattr(args, "allow_unconverged", False), "the calibration has",
                            "Run longer (--steps, --target-ess), or check the model")
