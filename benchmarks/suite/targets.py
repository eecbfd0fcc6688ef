"""External suite: Inference Gym posteriors with published ground-truth moments, as inertia Targets.

Each entry is a Target on the unconstrained space, V(z) = -log p(b(z)) - log|det b'(z)| with b the
model's `default_event_space_bijector`, a `constrain` map z -> the model's "identity" sample
transformation, and the Gym's ground-truth mean and sd in that space.

Precision: the Gym's JAX models hold float32 constants and evaluate in float32 even when given
float64 input (their log density is returned as float64 here); LGCP is float64 throughout. Eight
schools is our own float64 non-centred rewrite (the Gym's is centred) with the Gym's data and
ground truth. German credit is left out: its data comes through tensorflow_datasets (not
installed; no network at run time) and /work/shared/data/german.csv is the 20-column coding, not
the 24-column numeric file the Gym's ground truth belongs to.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import inertia.config

inertia.config.enable_x64()  # this script's own JAX arrays (and peers') in float64

import inertia  # noqa: F401  (float64)
from inertia.targets import Target, from_potential

EIGHT_SCHOOLS_Y = np.array([28, 8, -3, 7, -1, 1, 18, 12], dtype=np.float64)
EIGHT_SCHOOLS_SIGMA = np.array([15, 10, 16, 11, 9, 11, 10, 18], dtype=np.float64)


@dataclasses.dataclass(frozen=True, eq=False)
class SuiteEntry:
    """One suite posterior: unconstrained target, constrain map, ground truth and flags."""

    name: str
    target: Target
    constrain: Callable  # z (d,) -> identity-space vector (d,)
    truth_mean: np.ndarray
    truth_sd: np.ndarray
    log_concave: bool
    dim: int
    note: str = ""
    gym_logdensity: Optional[Callable] = None  # x (identity space) -> the Gym's unnormalised log p
    gym_bijector: object = None
    has_mode: bool = True  # False where the density is unbounded (Neal's funnel: v -> -inf, x = 0)


def _gym():
    from inference_gym import using_jax as gym

    return gym


def _from_gym(name, model, log_concave, note="", has_mode=True):
    gym = _gym()
    m = gym.targets.VectorModel(model, flatten_sample_transformations=True)
    b = m.default_event_space_bijector
    ident = m.sample_transformations["identity"]
    d = int(m.event_shape[0])

    def logp(x):
        return jnp.asarray(m.unnormalized_log_prob(x), jnp.float64)

    def potential(z):
        lj = b.forward_log_det_jacobian(z, event_ndims=1)
        return -(logp(b.forward(z)) + jnp.asarray(lj, jnp.float64))

    def constrain(z):
        return jnp.asarray(ident(b.forward(z)), jnp.float64)

    target = from_potential(potential, d, name=name)
    return SuiteEntry(name, target, constrain, np.asarray(ident.ground_truth_mean, np.float64),
                      np.asarray(ident.ground_truth_standard_deviation, np.float64), log_concave, d,
                      note, gym_logdensity=logp, gym_bijector=b, has_mode=has_mode)


def eight_schools_noncentred() -> SuiteEntry:
    """Non-centred eight schools (our float64 rewrite of the Gym's centred model, same data/prior).

    z = (avg_effect, log_stddev, eta_1..8), school_effects = avg_effect + exp(log_stddev) eta;
    identity space (avg_effect, log_stddev, school_effects), the Gym's ground truth.
    """
    gym = _gym()
    g = gym.targets.VectorModel(gym.targets.EightSchools(), flatten_sample_transformations=True)
    ident = g.sample_transformations["identity"]
    y, s = jnp.asarray(EIGHT_SCHOOLS_Y), jnp.asarray(EIGHT_SCHOOLS_SIGMA)

    def potential(z):
        mu, ls, eta = z[0], z[1], z[2:]
        theta = mu + jnp.exp(ls) * eta
        return (0.5 * (mu / 10.0) ** 2 + 0.5 * (ls - 5.0) ** 2 + 0.5 * jnp.sum(eta ** 2)
                + 0.5 * jnp.sum(((y - theta) / s) ** 2))

    def constrain(z):
        return jnp.concatenate([z[:2], z[0] + jnp.exp(z[1]) * z[2:]])

    def logp(x):
        return jnp.asarray(g.unnormalized_log_prob(x), jnp.float64)

    target = from_potential(potential, 10, name="eight-schools-nc")
    return SuiteEntry("eight-schools-nc", target, constrain,
                      np.asarray(ident.ground_truth_mean, np.float64),
                      np.asarray(ident.ground_truth_standard_deviation, np.float64), False, 10,
                      "non-centred rewrite (float64) of the Gym's centred model; Gym data and "
                      "ground truth", gym_logdensity=logp)


def _builders():
    T = _gym().targets
    return {
        "ill-cond-gaussian": lambda: _from_gym("ill-cond-gaussian", T.IllConditionedGaussian(), True),
        "brownian-missing": lambda: _from_gym(
            "brownian-missing", T.BrownianMotionMissingMiddleObservations(), True,
            "Gaussian state-space posterior (known scales)"),
        "stoch-vol-small": lambda: _from_gym(
            "stoch-vol-small", T.VectorizedStochasticVolatilitySP500Small(), False,
            "SP500, last 100 days"),
        "item-response": lambda: _from_gym("item-response", T.SyntheticItemResponseTheory(), True),
        "eight-schools-nc": eight_schools_noncentred,
        "banana": lambda: _from_gym("banana", T.Banana(), False),
        "neals-funnel": lambda: _from_gym("neals-funnel", T.NealsFunnel(), False,
                                          "unbounded density: no mode", has_mode=False),
        "log-gaussian-cox": lambda: _from_gym(
            "log-gaussian-cox", T.SyntheticLogGaussianCoxProcess(), False,
            "GP hyperparameters unknown; float64 in the Gym"),
    }


NAMES = ("ill-cond-gaussian", "brownian-missing", "stoch-vol-small", "item-response",
         "eight-schools-nc", "banana", "neals-funnel", "log-gaussian-cox")


def load_suite(names=None) -> list[SuiteEntry]:
    """The suite's entries (all of NAMES by default), loaded through the Gym's JAX substrate."""
    builders = _builders()
    names = NAMES if names is None else list(names)
    unknown = [n for n in names if n not in builders]
    if unknown:
        raise KeyError(f"unknown suite targets {unknown}; available: {', '.join(NAMES)}")
    return [builders[n]() for n in names]


def curvature_from_hessian(target: Target, x0=None, maxiter: int = 500, has_mode: bool = True):
    """(alpha, beta, mode, note): extreme Hessian eigenvalues at an L-BFGS mode (at x0 if none).

    Planner-style bounds for the inertia entries until `fit` estimates its own. alpha is floored
    at 1e-6 beta (non-log-concave targets can have non-positive eigenvalues at the mode).
    """
    import optax

    d = target.dim
    x = jnp.zeros(d) if x0 is None else jnp.asarray(x0, jnp.float64)
    opt = optax.lbfgs()
    vg = optax.value_and_grad_from_state(target.potential)

    @jax.jit
    def run(x):
        def body(carry, _):
            x, st = carry
            v, g = vg(x, state=st)
            u, st = opt.update(g, st, x, value=v, grad=g, value_fn=target.potential)
            return (optax.apply_updates(x, u), st), None

        (x, _), _ = jax.lax.scan(body, (x, opt.init(x)), None, length=maxiter)
        return x

    if not has_mode:
        lam = np.linalg.eigvalsh(np.asarray(jax.jit(target.hessian)(x)))
        return float(max(lam[0], 1e-6 * lam[-1])), float(lam[-1]), np.asarray(x), \
            "no mode (unbounded density): Hessian at the start"
    mode = run(x)
    g = target.grad(mode)
    note = "mode"
    if not (bool(jnp.all(jnp.isfinite(mode))) and float(jnp.max(jnp.abs(mode))) < 50
            and float(jnp.linalg.norm(g)) < 1e-3 * max(1.0, float(jnp.linalg.norm(target.grad(x))))):
        mode, note = x, "no mode found (L-BFGS diverged or stalled): Hessian at the start"
    lam = np.linalg.eigvalsh(np.asarray(jax.jit(target.hessian)(mode)))
    beta = float(lam[-1])
    alpha = float(max(lam[0], 1e-6 * beta))
    return alpha, beta, np.asarray(mode), note
