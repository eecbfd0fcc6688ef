"""`inertia sample`: exact (Metropolis-adjusted) HFHR by default, or the unadjusted HFHR / KLMC / ULA
schemes (fast, biased by O(h)), on a built-in model, tuned automatically, with diagnostics.

Exit status: 0 when every parameter has R-hat <= 1.01 and bulk ESS >= 100 and no draw has a
non-finite potential or gradient; 3 when not (unless --allow-unconverged); 2 on errors.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

MODELS = ("gaussian-kappa", "logistic", "probit", "graph-probit")
# the registry's names, listed here so that parsing needs no JAX (tests check they agree)
METHODS = ("hfhr-exact", "hfhr", "hfhr-split", "klmc", "ula", "hfhr-rm", "uld-rm")


def build_model(args):
    """(target, parameter names) for --model: gaussian-kappa (--dim --kappa --model-seed), a GLM on
    --data (built-in name or CSV with --response), graph-probit, or FILE.py:NAME (a user's model,
    CSV columns from --data). Names come from the target (`intercept` and columns, NumPyro sites)."""
    if args.model == "gaussian-kappa":
        if args.data is not None or args.response is not None:
            raise ValueError("--data and --response apply to logistic, probit, graph-probit and "
                             "model files; gaussian-kappa takes --dim and --kappa")
        from inertia.targets import kappa_family

        return kappa_family(args.dim, args.kappa, seed=args.model_seed), None
    if args.model in ("logistic", "probit") and not args.data:
        raise ValueError(f"--model {args.model} needs --data NAME or PATH.csv (e.g. wdbc, german)")
    from inertia.targets import make_target

    target = make_target(args.model, data=args.data, prior_scale=args.prior_scale,
                         response=args.response, drop_missing=args.drop_missing)
    return target, None


def _run(args) -> int:
    import warnings

    from inertia.mcmc.kernels import REGISTRY
    from inertia.mcmc.sample import sample

    from ._args import check_outputs

    check_outputs((("--json", args.json), ("--save", getattr(args, "save", None))))
    target, names = build_model(args)
    # the API's rules (inertia.mcmc.sample): --steps alone runs exactly that many steps
    steps, target_ess = args.steps, args.target_ess
    if target_ess == 0:
        steps, target_ess = steps or 1000, None
    if args.max_steps is not None and steps is not None and target_ess is None:
        raise ValueError("--max-steps caps the ESS rule; with --steps alone the run is exactly "
                         "--steps steps (add --target-ess to run on)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the verdict is printed below instead
        warnings.filterwarnings("default", message="the mode search met a saddle point",
                                category=RuntimeWarning)  # no verdict says it: a second mode
        res = sample(target, args.method, step_size=args.step_size, gamma=args.gamma,
                     alpha=args.alpha, num_leapfrog=args.num_leapfrog,
                     target_accept=args.target_accept, num_chains=args.chains, num_steps=steps,
                     seed=args.seed,
                     thinning=args.thinning, progress=not args.quiet, precondition=args.precondition,
                     bias_tol=args.bias_tol, target_ess=target_ess,
                     max_steps=args.max_steps, names=names,
                     reparam=False if args.no_reparam else "auto")
    burn = args.burn_in
    mean, cov = res.moments(burn)
    dg = res.diagnostics
    if burn is not None and burn != res.burn_in_default:
        from inertia.mcmc.sample import rediagnose

        dg = rediagnose(target, res, burn, args.target_accept)
    out = {"model": target.name, "method": res.method, "params": res.params,
           "chains": res.num_chains, "steps": res.num_steps, "thinning": res.thinning,
           "burn_in": res.burn_in_default, "grad_evals": res.grad_evals,
           "warmup_grad_evals": res.warmup_grad_evals,
           "total_grad_evals": res.total_grad_evals,
           "names": res.names, "mean": mean, "cov": cov, "tuning": res.tuning, "bias": res.bias,
           **res.verdict_dict(), "cost": res.cost,
            "diagnostics": dg.to_dict() if dg is not None else None,
            "summary": res.summary() if dg is not None else None,
            "reparam": res.reparam}
    if res.chains:  # exact kernel: per chain
        out.update({k: res.chains[k] for k in ("acceptance_rate", "flow_acceptance_rate",
                                               "divergences", "step_size")})
    if dg is not None:
        out["ess_min"] = dg.min_ess_bulk
        out["rhat_max"] = dg.worst_rhat
    info = getattr(target, "info", {}) or {}
    manual = res.tuning is None
    if manual and "precision" in info and REGISTRY[res.method].transition is not None:
        from inertia.mcmc.gaussian import GaussianDiagnostics

        diag = GaussianDiagnostics(target)
        out["w2"] = diag.w2_curve(res.method, num_steps=res.num_steps, **res.params)
        out["w2_note"] = ("exact W2 between the chain's law at step k = 0..steps (q0 ~ N(0, I), "
                          "p0 ~ N(0, I)) and the target")
        st = diag.stationary(res.method, **res.params)
        out["stationary_bias_w2"] = st.bias_w2
        out["contraction_rate"] = st.rate
    if "mean" in info:
        out["mean_error"] = float(np.linalg.norm(mean - np.asarray(info["mean"])))
    if args.json is not None:
        from inertia._json import to_jsonable as _to_jsonable

        text = json.dumps(_to_jsonable(out))
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as fh:
                fh.write(text)
            print(f"wrote {args.json}", file=sys.stderr)
    if getattr(args, "save", None):
        res.save(args.save)
        print(f"wrote {args.save}", file=sys.stderr)
    if args.json != "-":
        print(f"{out['model']}: " + res.report(max_rows=args.max_rows))
        if "w2" in out:
            print(f"exact W2 to target: start {out['w2'][0]:.4g}, end {out['w2'][-1]:.4g}, "
                  f"stationary bias {out['stationary_bias_w2']:.4g}, contraction rate "
                  f"{out['contraction_rate']:.6g}/step")
    return res.verdict.exit(args.allow_unconverged, "the chains have",
                            "Run longer (--target-ess, --max-steps), lower --bias-tol")


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


def add_parser(subparsers):
    """Add `inertia sample` to the top-level parser."""
    from ._args import add_allow_unconverged, add_chains, add_drop_missing, add_quiet, add_seed

    p = subparsers.add_parser(
        "sample", help="sample a model with exact HFHR, or unadjusted HFHR, KLMC or ULA (tuned "
                       "automatically, diagnosed)",
        description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="gaussian-kappa", metavar="MODEL",
                   help=f"one of {', '.join(MODELS)}, or FILE.py:NAME (a NumPyro model, a "
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
    p.add_argument("--method", choices=METHODS, default="hfhr-exact",
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
    p.set_defaults(func=_run)
    from inertia._one_based import add_option

    add_option(p)  # --one-based
    return p
