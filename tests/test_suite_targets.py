"""External-suite harness (benchmarks/suite): Gym targets match the Gym, and F's error bar is honest."""
import os
import sys
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("INERTIA_REQUIRE_SUITE"):  # .ci/run installs the suite extra: run, never skip
    import inference_gym  # noqa: F401
    import tensorflow_probability  # noqa: F401
else:
    pytest.importorskip("inference_gym")
    pytest.importorskip("tensorflow_probability")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import inertia  # noqa: E402,F401

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "suite"))
from objective import common_draws, make_objective  # noqa: E402
from targets import load_suite  # noqa: E402


def test_potential_is_gym_log_density_plus_log_jacobian():
    """V(z) = -(log p_gym(b(z)) + log|det b'(z)|) on a constrained-support Gym model (SV, d = 103)."""
    (e,) = load_suite(["stoch-vol-small"])
    z = 0.3 * jax.random.normal(jax.random.PRNGKey(3), (e.dim,))
    b = e.gym_bijector
    x = b.forward(z)
    ldj = float(b.forward_log_det_jacobian(z, event_ndims=1))
    assert abs(ldj) > 1.0  # the bijector is not the identity here, so the Jacobian is tested
    want = -(float(e.gym_logdensity(x)) + ldj)
    assert float(e.target.potential(z)) == pytest.approx(want, rel=1e-6)
    assert e.truth_mean.shape == e.truth_sd.shape == (e.dim,)


def test_noncentred_eight_schools_is_the_gym_posterior():
    """Our non-centred V differs from the Gym's centred log density (plus the Jacobian of
    theta = mu + tau eta, 8 log tau) by one constant at every point."""
    (e,) = load_suite(["eight-schools-nc"])
    zs = jax.random.normal(jax.random.PRNGKey(4), (5, 10)) * jnp.array([5.0, 0.5] + [1.0] * 8)
    diffs = [float(e.target.potential(z)) + float(e.gym_logdensity(e.constrain(z))) + 8 * float(z[1])
             for z in zs]
    assert np.ptp(diffs) < 1e-4 * max(1.0, abs(diffs[0]))


def test_objective_standard_error_is_honest_on_a_gaussian():
    """F(q) = E_q V - log|det L| in closed form for V = x'Ax/2: tr(A S)/2 + m'Am/2 - log|det L|.
    Over 40 independent draw sets the z-scores (F_hat - F)/se have mean ~0 and sd ~1."""
    d = 5
    A = jnp.diag(jnp.array([0.5, 1.0, 2.0, 4.0, 8.0]))
    m = jnp.array([0.3, -0.2, 0.1, 0.0, 0.5])
    L = jnp.linalg.cholesky(jnp.eye(d) * 0.7 + 0.1)
    S = L @ L.T
    exact = 0.5 * jnp.trace(A @ S) + 0.5 * m @ A @ m - jnp.sum(jnp.log(jnp.diag(L)))
    z = []
    for seed in range(40):
        f = make_objective(lambda x: 0.5 * x @ A @ x, common_draws(d, 1024, seed=seed), chunk=256)
        F, se, bad = f(m, L)
        assert int(bad) == 0
        z.append((float(F) - float(exact)) / float(se))
    z = np.asarray(z)
    assert abs(z.mean()) < 3 / np.sqrt(len(z))  # 3-sigma band of the mean of 40 N(0, 1)
    assert 0.6 < z.std(ddof=1) < 1.4
