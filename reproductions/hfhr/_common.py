"""What the HFHR experiments share: labels, the mode and curvature of a target, and windowed
estimates over a run's draws."""
from __future__ import annotations

import numpy as np

LOGI_METHODS = ("ula", "klmc", "hfhr")


def _label(method, alpha_level=None):
    """A variant's label: the method, with its alpha level where it has one."""
    return method if alpha_level is None else f"{method}(a={alpha_level:g})"


def _mode_and_curvature(target, x0, dense_hessian: bool, maxiter: int = 2000):
    """MAP by L-BFGS (scipy) and the curvature there: (mode, m, L) with L by HVP power iteration."""
    import jax
    import jax.numpy as jnp
    import scipy.optimize

    vg = jax.jit(jax.value_and_grad(target.potential))
    sol = scipy.optimize.minimize(lambda x: tuple(np.asarray(v, dtype=np.float64) for v in vg(x)),
                                  np.asarray(x0, dtype=np.float64), jac=True, method="L-BFGS-B",
                                  options={"maxiter": maxiter})
    mode = jnp.asarray(sol.x)
    if dense_hessian:
        ev = np.linalg.eigvalsh(np.asarray(target.hessian(mode)))
        return np.asarray(mode), float(ev[0]), float(ev[-1])
    hvp = jax.jit(lambda v: target.hvp(mode, v))
    v = jax.random.normal(jax.random.PRNGKey(0), (target.dim,))
    lam = 0.0
    for _ in range(50):
        w = hvp(v / jnp.linalg.norm(v))
        lam, v = float(jnp.linalg.norm(w)), w
    return np.asarray(mode), None, lam


def _window_estimates(draws, thinning, budgets):
    """For each budget B (steps), the draws of all chains with step in (B/2, B]."""
    steps = (np.arange(draws.shape[1]) + 1) * thinning
    for B in budgets:
        sel = (steps > B / 2) & (steps <= B)
        yield B, draws[:, sel].reshape(-1, draws.shape[2])


def _budgets(num_steps, thinning, n):
    """About n step budgets, geometric from 4 thinning intervals to num_steps, on the thinning grid."""
    b = np.unique((np.geomspace(thinning * 4, num_steps, n) // thinning).astype(int) * thinning)
    return [int(x) for x in b]
