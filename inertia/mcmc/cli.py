"""`inertia sample`: run HFHR / KLMC / ULA chains on a built-in model; JSON with moments and exact W2."""
from __future__ import annotations

import json
import sys


MODELS = ("gaussian-kappa", "logistic")


def build_model(args):
    """The target named by --model (gaussian-kappa: --dim --kappa; logistic: --data NAME)."""
    import numpy as np

    if args.model == "gaussian-kappa":
        from inertia.targets import kappa_family

        return kappa_family(args.dim, args.kappa, seed=args.model_seed)
    if args.model == "logistic":
        if not args.data:
            raise ValueError("--model logistic needs --data NAME (e.g. wdbc, german, sonar)")
        from inertia.data import load_dataset
        from inertia.targets import logistic_regression

        ds = load_dataset(args.data, standardize=True)
        if set(np.unique(ds.y).tolist()) - {0.0, 1.0, -1.0}:
            raise ValueError(f"data set {args.data!r} is not a binary classification set")
        return logistic_regression(ds.X, ds.y, prior_scale=args.prior_scale,
                                   name=f"logistic-{args.data}")
    raise ValueError(f"unknown model {args.model!r}; choose from {', '.join(MODELS)}")


def _run(args) -> int:
    import numpy as np

    from .gaussian import GaussianDiagnostics
    from .kernels import REGISTRY
    from .sample import sample

    if args.json not in (None, "-"):
        from inertia.cli import check_output_file

        check_output_file(args.json, "--json")
    if not 0 <= args.burn_in < 1:
        raise ValueError(f"--burn-in is a fraction of the draws in [0, 1), got {args.burn_in}")
    target = build_model(args)
    res = sample(target, args.method, step_size=args.step_size, gamma=args.gamma, alpha=args.alpha,
                 num_chains=args.chains, num_steps=args.steps, seed=args.seed,
                 thinning=args.thinning, progress=not args.quiet)
    mean, cov = res.mean(args.burn_in), res.cov(args.burn_in)
    out = {"model": target.name, "method": res.method, "params": res.params,
           "chains": res.num_chains, "steps": res.num_steps, "thinning": res.thinning,
           "burn_in": args.burn_in, "grad_evals": res.grad_evals,
           "grad_evals_total": res.grad_evals * res.num_chains, "mean": mean, "cov": cov}
    try:
        out["ess_min"] = float(np.min(res.ess(args.burn_in)))
    except ImportError:
        pass
    info = getattr(target, "info", {}) or {}
    if "precision" in info and REGISTRY[res.method].transition is not None:
        diag = GaussianDiagnostics(target)
        curve = diag.w2_curve(res.method, num_steps=res.num_steps, **res.params)
        st = diag.stationary(res.method, **res.params)
        out["w2"] = curve
        out["w2_note"] = ("exact W2 between the chain's law at step k = 0..steps (q0 ~ N(0, I), "
                          "p0 ~ N(0, I)) and the target")
        out["stationary_bias_w2"] = st.bias_w2
        out["contraction_rate"] = st.rate
        out["mean_error"] = float(np.linalg.norm(mean - info["mean"]))
    if args.json is not None:
        from inertia.experiments._runner import _to_jsonable

        text = json.dumps(_to_jsonable(out))
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as fh:
                fh.write(text)
            print(f"wrote {args.json}", file=sys.stderr)
    if args.json != "-":
        print(f"{out['model']}: {res.method} {res.params}, {res.num_chains} chains x {res.num_steps} "
              f"steps, {res.grad_evals} gradient evaluations per chain")
        k = min(target.dim, 5)
        print("posterior mean (first %d): %s" % (k, np.array2string(mean[:k], precision=4)))
        print("posterior sd   (first %d): %s" % (k, np.array2string(np.sqrt(np.diag(cov))[:k],
                                                                     precision=4)))
        if "ess_min" in out:
            print(f"min ESS: {out['ess_min']:.0f}")
        if "w2" in out:
            print(f"exact W2 to target: start {out['w2'][0]:.4g}, end {out['w2'][-1]:.4g}, "
                  f"stationary bias {out['stationary_bias_w2']:.4g}, contraction rate "
                  f"{out['contraction_rate']:.6g}/step")
    return 0


def add_parser(subparsers):
    """Add `inertia sample` to the top-level parser."""
    from inertia._names import CLASSIFICATION, MCMC_METHODS
    from inertia.cli import Formatter, nonneg_int, positive_float, positive_int

    p = subparsers.add_parser(
        "sample", help="sample a model with HFHR, KLMC or ULA", formatter_class=Formatter,
        description="Run HFHR (Li, Zha & Tao 2022), kinetic Langevin (KLMC) or ULA chains; prints "
                    "moments, ESS and, for Gaussian models, the exact W2 to the target. "
                    "Methods (docs/hfhr.md): hfhr (exponential scheme), hfhr-split, hfhr-rm "
                    "(randomised midpoint, two gradients a step), klmc and uld-rm (kinetic "
                    "Langevin), ula (overdamped Langevin).")
    p.add_argument("--model", choices=MODELS, default="gaussian-kappa",
                   help="gaussian-kappa: Gaussian with condition number --kappa in --dim "
                        "dimensions; logistic: Bayesian logistic regression on --data")
    p.add_argument("--dim", type=positive_int, default=10, help="gaussian-kappa: dimension")
    p.add_argument("--kappa", type=positive_float, default=100.0,
                   help="gaussian-kappa: condition number")
    p.add_argument("--model-seed", type=int, default=0, help="gaussian-kappa: rotation seed")
    p.add_argument("--data", default=None, choices=CLASSIFICATION,
                   help="logistic: data set name (no default; docs/data.md)")
    p.add_argument("--prior-scale", type=positive_float, default=1.0, help="logistic: prior sd")
    p.add_argument("--method", choices=sorted(MCMC_METHODS), default="hfhr", help="sampler")
    p.add_argument("--step-size", type=positive_float, default=None,
                   help="step h (default from the curvature bounds, see docs/hfhr.md)")
    p.add_argument("--gamma", type=positive_float, default=None,
                   help="friction (kinetic methods; default from the curvature bounds)")
    p.add_argument("--alpha", type=float, default=None,
                   help="HFHR coefficient alpha >= 0 (default from the curvature bounds)")
    p.add_argument("--chains", type=positive_int, default=4, help="number of chains")
    p.add_argument("--steps", type=positive_int, default=1000, help="steps per chain")
    p.add_argument("--thinning", type=positive_int, default=1, help="keep every k-th draw")
    p.add_argument("--burn-in", type=float, default=0.5, help="fraction of draws discarded")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="write JSON (mean, cov, grad_evals, exact w2 curve ...) to PATH, or to "
                        "stdout without PATH")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=_run)
    return p
