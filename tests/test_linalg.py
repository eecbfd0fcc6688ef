"""inertia.linalg: the blocked lower-triangular product and the targets' low(hess L) built on it."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inertia.linalg import tril_blocks, tril_product
from inertia.targets import gaussian, glm_target
from inertia.vi import ESTIMATORS


def _tril_factor(d, seed):
    rng = np.random.default_rng(seed)
    return jnp.asarray(np.tril(rng.normal(size=(d, d))) + 3.0 * np.eye(d))


@pytest.mark.parametrize("blocks", [1, 2, 3, 7])
def test_tril_product_equals_lower_part_of_the_full_product(blocks):
    d = 37  # uneven block edges
    A = jnp.asarray(np.random.default_rng(0).normal(size=(d, d)))
    L = _tril_factor(d, 1)
    got = tril_product(lambda s, e: A[s:, s:] @ L[s:, s:e], d, A.dtype, blocks)
    np.testing.assert_allclose(got, np.tril(np.asarray(A) @ np.asarray(L)), rtol=0, atol=1e-12)
    assert np.all(np.triu(np.asarray(got), 1) == 0)


def test_block_counts():
    assert [tril_blocks(d) for d in (30, 255, 256, 2047, 2048, 5000)] == [1, 1, 4, 4, 8, 8]


D_BLOCKED = 300  # above the threshold: the targets take the blocked path


def _glm_cases(d):
    rng = np.random.default_rng(2)
    B = rng.normal(size=(d, d)) / np.sqrt(d)
    Q = B @ B.T + np.eye(d)
    X = rng.normal(size=(d + 40, d)) / np.sqrt(d)
    y = (rng.uniform(size=d + 40) < 0.5).astype(float)
    return {"gaussian": gaussian(np.ones(d), Q),
            "glm dense prior": glm_target(X, y[: d + 40], prior_precision=Q),
            "glm scalar prior": glm_target(X, y, prior_precision=2.0),
            "graph (identity design, dense prior)": glm_target(None, y[:d], link="probit",
                                                               prior_precision=Q),
            "identity design, scalar prior": glm_target(None, y[:d], prior_precision=2.0)}


def test_targets_low_hessian_product_matches_full_product():
    d = D_BLOCKED
    L = _tril_factor(d, 3)
    xs = jnp.asarray(np.random.default_rng(4).normal(size=(3, d)))
    for name, t in _glm_cases(d).items():
        full = np.tril(np.asarray(t.mean_hess_matmul(xs, L)))
        got = np.asarray(jax.jit(t.mean_hess_matmul_low)(xs, L))
        np.testing.assert_allclose(got, full, rtol=0, atol=1e-12 * np.abs(full).max(),
                                   err_msg=name)


@pytest.mark.parametrize("name", ["fd", "paired"])
def test_cholesky_estimators_exact_on_a_quadratic_in_the_blocked_regime(name):
    """Above the block threshold FD and Paired still give grad E exactly on a quadratic:
    (P (m - mu), low(P L)); FD up to its finite differences' rounding."""
    d = D_BLOCKED
    rng = np.random.default_rng(5)
    B = rng.normal(size=(d, d)) / np.sqrt(d)
    P = B @ B.T + np.eye(d)
    t = gaussian(np.ones(d), P)
    m = jnp.asarray(rng.normal(size=d))
    L = _tril_factor(d, 6) / 3.0
    gm, gL = jax.jit(lambda k: ESTIMATORS[name].estimate(t, k, m, L, 4))(jax.random.PRNGKey(0))
    want_L = np.tril(P @ np.asarray(L))
    np.testing.assert_allclose(gm, P @ (np.asarray(m) - 1.0), rtol=0, atol=1e-8)
    np.testing.assert_allclose(gL, want_L, rtol=0, atol=1e-8 * np.abs(want_L).max())
