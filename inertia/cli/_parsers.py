"""The parsers of `inertia fit`, `sample` and `calibrate`: argparse and names only, no JAX, so
that `--help` and argument errors answer at once. Each sets `func` to `run`, which loads the
command's own module (`inertia.cli.fit`, ...) when the command runs.
"""
from __future__ import annotations

import argparse
import importlib
import math
from pathlib import Path

from .._names import DATASETS, MCMC_METHODS, SGMCMC_TUNINGS, VI_METHODS, VI_MODELS
from .._one_based import add_option
from ._args import (Formatter, add_allow_unconverged, add_chains, add_drop_missing, add_quiet,
                    add_seed, number_type, positive_float, positive_int)

SAMPLE = """`inertia sample`: exact (Metropolis-adjusted) HFHR by default, or the unadjusted HFHR / KLMC / ULA
schemes (fast, biased by O(h)), on a built-in model, tuned automatically, with diagnostics.

Exit status: 0 when every parameter has R-hat <= 1.01 and bulk ESS >= 100 and no draw has a
non-finite potential or gradient; 3 when not (unless --allow-unconverged); 2 on errors.
"""


def run(args) -> int:
    """Run the parsed command: its module, `inertia.cli.<command>`, is imported here."""
    return importlib.import_module(f"{__package__}.{args.command}").run(args)


def add_fit(sub):
    """Add `inertia fit` to the top-level parser."""
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
    add_option(p)  # --one-based
    return p


def _positive_int(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return v


def _fraction(text):
    v = float(text)
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return v


def add_sample(subparsers):
    """Add `inertia sample` to the top-level parser."""
    p = subparsers.add_parser(
        "sample", help="sample a model with exact HFHR, or unadjusted HFHR, KLMC or ULA (tuned "
                       "automatically, diagnosed)",
        description=SAMPLE, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="gaussian-kappa", metavar="MODEL",
                   help=f"one of {', '.join(VI_MODELS)}, or FILE.py:NAME (a NumPyro model, a "
                        "pm.Model, or a log density NAME(params, data) with NAME_init)")
    p.add_argument("--dim", type=_positive_int, default=10, help="gaussian-kappa: dimension")
    p.add_argument("--kappa", type=float, default=100.0, help="gaussian-kappa: condition number")
    p.add_argument("--model-seed", type=int, default=0, help="gaussian-kappa: rotation seed")
    p.add_argument("--data", default=None,
                   help="built-in data set name (e.g. wdbc), a CSV path (GLM predictors), or for a "
                        "model file a data file of named arrays (.json in Stan's convention, "
                        ".npz, .parquet, .csv)")
    p.add_argument("--response", default=None, help="response column of a CSV --data (GLMs)")
    add_drop_missing(p)
    p.add_argument("--prior-scale", type=float, default=1.0, help="logistic/probit: prior sd")
    p.add_argument("--method", choices=MCMC_METHODS, default="hfhr-exact",
                   help="sampler: hfhr-exact (Metropolis-adjusted, exact) or an unadjusted scheme "
                        "(fast, biased by O(h))")
    p.add_argument("--step-size", type=float, default=None,
                   help="step h; when h, gamma and alpha are all omitted a warm-up chooses them "
                        "(hfhr-exact: dual averaging to --target-accept and gradients per ESS; the "
                        "unadjusted schemes: exact-Gaussian tuning, h vs h/2 bias check; see "
                        "docs/hfhr.md)")
    p.add_argument("--gamma", type=float, default=None, help="friction (kinetic methods)")
    p.add_argument("--alpha", type=float, default=None, help="HFHR coefficient alpha >= 0")
    p.add_argument("--num-leapfrog", type=float, default=None,
                   help="hfhr-exact: mean leapfrog steps per trajectory (with --step-size)")
    p.add_argument("--target-accept", type=float, default=None,
                   help="hfhr-exact warm-up: acceptance rate the step size is tuned to (0.8)")
    p.add_argument("--precondition", choices=("auto", "laplace", "vi", "none"), default="auto",
                   help="warm-up preconditioner x = m + L z: auto (Laplace; VI where the Laplace "
                        "fit is unusable), laplace, vi (inertia.vi.fit, costlier), none")
    p.add_argument("--no-reparam", action="store_true",
                   help="NumPyro models: run the model as written (by default location-scale "
                        "sites whose loc or scale depends on other latent sites run partially "
                        "non-centred, the centredness chosen by a Gaussian fit; draws and tables "
                        "stay those of the original sites)")
    p.add_argument("--bias-tol", type=float, default=0.03,
                   help="warm-up: largest relative stationary sd error allowed on the tuning Gaussian")
    add_chains(p, _positive_int)
    p.add_argument("--steps", type=_positive_int, default=None,
                   help="steps per chain after warm-up: exactly this many, or the first block "
                        "with --target-ess (default: a first block of 1000 steps, run on until "
                        "bulk ESS >= 400 and R-hat <= 1.01)")
    p.add_argument("--target-ess", type=float, default=None,
                   help="run until every parameter has bulk ESS >= this and R-hat <= 1.01 "
                        "(default 400 without --steps, none with it; 0: exactly --steps steps)")
    p.add_argument("--max-steps", type=_positive_int, default=None,
                   help="budget: most steps per chain under the ESS rule (default 10 x the "
                        "first block: 10000)")
    p.add_argument("--thinning", type=_positive_int, default=1, help="keep every k-th state")
    p.add_argument("--burn-in", type=_fraction, default=None,
                   help="fraction of draws discarded (default: 0 after a warm-up, else 0.5)")
    add_seed(p)
    add_allow_unconverged(p, "R-hat > 1.01, bulk ESS < 100 or non-finite draws")
    p.add_argument("--max-rows", type=_positive_int, default=40,
                   help="rows of the summary table (the least converged parameters are kept)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="write JSON (mean, cov, diagnostics, tuning, bias, ...) to PATH or stdout")
    p.add_argument("--save", default=None, metavar="PATH.nc",
                   help="save the result as netCDF (ArviZ InferenceData: draws by site, "
                        "sample_stats, log_likelihood; settings and verdict; inertia.load reads it)")
    add_quiet(p)
    p.set_defaults(func=run)
    add_option(p)  # --one-based
    return p


# argparse types of --temperature (beta in (0, inf]), --momentum ([0, 1)), --beta-div (> 1)
_inv_temp = number_type(float, lambda v: v > 0, "a number > 0 or 'inf'",
                    "the inverse temperature beta must be > 0 (inf: SGD; N: posterior-scale SGLD); "
                    "got {text}", "inverse_temperature")
_momentum = number_type(float, lambda v: 0 <= v < 1, "a number in [0, 1)",
                    "must be in [0, 1) (1 removes all friction: the iterates never settle); "
                    "got {text}", "momentum")
_beta_div = number_type(float, lambda v: 1 < v < math.inf, "a number > 1",
                    "must be a finite number > 1 (-> 1 is the log loss); got {text}", "beta_div")


def add_calibrate(subparsers):
    """Add `inertia calibrate` to the top-level parser."""
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


__all__ = ["add_fit", "add_sample", "add_calibrate", "run", "SAMPLE"]
