"""`inertia sample`: build the model, run the sampler, print and write the result (the options and
the exit statuses: `_parsers.SAMPLE`, `_parsers.add_sample`).
"""
from __future__ import annotations

import json
import sys
import warnings

import numpy as np

from .._json import to_jsonable
from ..mcmc.gaussian import GaussianDiagnostics
from ..mcmc.kernels import REGISTRY
from ..mcmc.sample import rediagnose, sample
from ..targets import kappa_family, make_target
from ._args import check_outputs


def build_model(args):
    """(target, parameter names) for --model: gaussian-kappa (--dim --kappa --model-seed), a GLM on
    --data (built-in name or CSV with --response), graph-probit, or FILE.py:NAME (a user's model,
    CSV columns from --data). Names come from the target (`intercept` and columns, NumPyro sites)."""
    if args.model == "gaussian-kappa":
        if args.data is not None or args.response is not None:
            raise ValueError("--data and --response apply to logistic, probit, graph-probit and "
                             "model files; gaussian-kappa takes --dim and --kappa")
        return kappa_family(args.dim, args.kappa, seed=args.model_seed), None
    if args.model in ("logistic", "probit") and not args.data:
        raise ValueError(f"--model {args.model} needs --data NAME or PATH.csv (e.g. wdbc, german)")
    target = make_target(args.model, data=args.data, prior_scale=args.prior_scale,
                         response=args.response, drop_missing=args.drop_missing)
    return target, None


def run(args) -> int:
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
        text = json.dumps(to_jsonable(out))
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
