"""WDBC logistic regression (d = 31): the reference optimum and the quick start's stochastic fit."""
import numpy as np
import pytest

from inertia.targets.zoo import make_target
from inertia.vi import fit, reference
from inertia.variational.objective import cholesky_grad_norm


@pytest.fixture(scope="module")
def wdbc():
    return make_target("logistic", data="wdbc")


def test_exact_apg_reaches_gradient_norm_1e_10(wdbc):
    res = fit(wdbc, "exact-apg", num_steps=3000, checkpoint_every=3000, seed=0, evaluate=False)
    gnorm = cholesky_grad_norm(wdbc, res.mean, res.cov)
    assert gnorm <= 1e-10, gnorm
    ref = reference(wdbc)
    assert ref.grad_norm <= 1e-10
    np.testing.assert_allclose(res.mean, ref.mean, atol=1e-9)
    np.testing.assert_allclose(res.cov, ref.cov, atol=1e-9)


def test_quick_start_fit_reaches_1e_2(wdbc):
    """The README quick start: accelerated Price-STL-proj, b = 64, 2000 updates, seed 0."""
    res = fit(wdbc, "price-stl-proj", batch_size=64, num_steps=2000, seed=0, checkpoint_every=500)
    assert res.final_gap <= 1e-2, res.final_gap
    assert res.history["gap"][0, 0] > 100  # starts far away: N(0, I) has a gap of ~1e3 nats
