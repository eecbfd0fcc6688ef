"""A start that does not depend on a mode: where the mode search did not converge and the run from
the Laplace fit at the search's start point did not converge either, `fit` runs again from a
short factor-covariance fit (`variational.factor`) begun at that point, when its objective estimate is
lower than the Laplace start's.

The Laplace start N(x0, hess V(x0)^-1) at a point x0 that is not a mode can be far from the
posterior: at a uniform(-2, 2) start of a latent Gaussian process V was 10^8 nats above its value at
the posterior mean, its Hessian 10^9 there, and the run whitened by that start moved the mean by
0.03 in 136 updates before its draws reached a region where grad V is not finite. Adam's steps do
not scale with the gradient's size: from N(x0, PREFIT_SCALE^2 I) (NumPyro's AutoGuide start scale)
it brings q to the posterior's region at any starting height. The full-rank run then starts from,
and is whitened by, that q: the pre-fit is a head start, its q is not the answer.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .factor import fit_factor
from .monitor import ObjectiveMonitor

PREFIT_SCALE = 0.1  # the pre-fit's start N(x0, PREFIT_SCALE^2 I) on the unconstrained space
PREFIT_BATCH = 16  # draws per Adam update (the factor family's default)
COMPARE_DRAWS = 256  # common random numbers of the comparison with the Laplace start


def needs_prefit(curvature, init_given: bool) -> bool:
    """True where the Laplace start is not to be trusted as it is: the bounds were estimated
    (`curvature` a CurvatureEstimate), the mode search did not converge, and no start was given
    (`fit` then runs again from `mode_free_start` where its run from that start did not converge)."""
    return (curvature is not None and not init_given
            and not getattr(curvature, "search_converged", True))


def mode_free_start(target, init, *, num_steps: int, tol: Optional[float], window: int,
                    seed: int = 0, dtype: str = "float64"):
    """(start (mean, Cholesky factor), event, gradients spent): the factor-covariance fit from
    N(x0, PREFIT_SCALE^2 I), x0 = init's mean, at most `num_steps` Adam updates under the stopping
    rule (`tol`, `window`), when its F_hat is below the Laplace start `init`'s on the same common
    random numbers; else `init` itself. The event says both estimates."""
    m0, A0 = (np.asarray(a, np.float64) for a in init)
    d = target.dim
    out = fit_factor(target, m0, np.full(d, PREFIT_SCALE), num_steps=max(int(num_steps), 1),
                     batch_size=PREFIT_BATCH, tol=tol, window=window, seed=seed, dtype=dtype,
                     average=False)  # a head start: its first plateau is enough
    steps = int(out["steps"][-1])
    grads = steps * PREFIT_BATCH
    S = out["cov"].dense()
    try:
        A = np.linalg.cholesky(0.5 * (S + S.T))
    except np.linalg.LinAlgError:
        A = None
    mon = ObjectiveMonitor(target, "chol", num_draws=COMPARE_DRAWS, seed=seed)
    pairs = [(m0, A0)] + ([] if A is None else [(np.asarray(out["mean"]), A)])
    est = mon(np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])).value
    f = np.where(np.isfinite(est), est, np.inf)
    laplace = float(est[0])
    prefit = float(est[1]) if A is not None else float("nan")
    used = A is not None and f[1] < f[0]
    event = {"event": "mode-free start", "step": 0, "prefit_steps": steps, "gradients": grads,
             "laplace_F_hat": laplace, "prefit_F_hat": prefit, "used": bool(used),
             "reason": ("the mode search did not converge: the start is a factor-covariance fit "
                        f"from N(x0, {PREFIT_SCALE:g}^2 I) ({steps} Adam updates, F_hat "
                        f"{prefit:.6g}) in place of the Laplace fit at x0 (F_hat {laplace:.6g})"
                        if used else
                        "the mode search did not converge; a factor-covariance fit from N(x0, "
                        f"{PREFIT_SCALE:g}^2 I) ({steps} Adam updates, F_hat {prefit:.6g}) was no "
                        f"better than the Laplace fit at x0 (F_hat {laplace:.6g}), kept as the start")}
    return (pairs[1] if used else (m0, A0)), event, grads


__all__ = ["PREFIT_SCALE", "needs_prefit", "mode_free_start"]
