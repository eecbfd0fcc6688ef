"""The warm-up goes on from draws: without a mode, the frame from the draws and their gradients,
and after divergences the frame refitted to the halted run's draws (~15 s)."""
import warnings

import numpy as np
import pytest

from inertia.mcmc import adapt, sample
from inertia.targets import kappa_family


def test_frame_moved_reads_nutpies_scale_change():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((4, 400, 6))
    # N(0, I) draws with their own gradients (g = z) sit in their frame
    assert adapt.frame_moved(z, z)["settled"]
    # draws 3 times wider than the frame: sqrt(sd z / sd g) = sqrt(3 / (1/3)) = 3
    moved = adapt.frame_moved(3 * z, z / 3)
    assert not moved["settled"] and moved["scale_change"] == pytest.approx(3.0, rel=0.02)
    # a frame whose mean is off by 2 sd
    assert adapt.frame_moved(z + 2.0, z)["shift"] == pytest.approx(2.0, abs=0.1)
    assert not adapt.frame_moved(z, z, late_divergences=1)["settled"]


def test_refit_frame_whitens_the_draws_of_a_dense_frame():
    rng = np.random.default_rng(1)
    A = np.array([[2.0, 0.0, 0.0], [1.5, 0.5, 0.0], [0.0, 0.3, 1.0]])
    z = rng.standard_normal((4, 2000, 3)) @ A.T + np.array([1.0, -1.0, 0.5])
    t = kappa_family(3, 4.0)
    (mean, factor), vg, to_new, grads = adapt.refit_frame(t, (np.zeros(3), np.eye(3)), z)
    assert grads == 0  # the dense frame needs the draws' covariance only
    w = to_new(z.reshape(-1, 3))
    # 1,000 draws kept (READAPT_DRAWS per chain): a variance to sqrt(2 / 1000) = 4.5 %, 3 se
    np.testing.assert_allclose(np.cov(w, rowvar=False), np.eye(3), atol=0.15)
    np.testing.assert_allclose(w.mean(0), 0.0, atol=0.1)
    np.testing.assert_allclose(factor @ factor.T, A @ A.T, rtol=0.15, atol=0.15)


def test_failed_mode_search_warms_up_from_dispersed_draws(monkeypatch):
    def fails(target, x0, *a, **k):
        raise ArithmeticError("no mode")

    monkeypatch.setattr(adapt, "map_estimate", fails)
    t = kappa_family(10, 30.0)  # N(1, P^-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sample(t, frame="diagonal", seed=3)
    why = r.tuning["fit"]["why"]
    assert "the mode search failed" in why and "uniform(-2, 2)" in why
    assert "improper" not in str(r.tuning)
    assert r.converged
    sd = np.sqrt(np.diag(np.linalg.inv(np.asarray(t.info["precision"]))))
    # bulk ESS >= 400: each mean within 0.05 sd (1 se); 5 se over 10 coordinates
    assert np.max(np.abs(r.mean - 1.0) / sd) < 0.25
    assert np.max(np.abs(r.draws.std(axis=(0, 1)) / sd - 1.0)) < 0.2


def test_frame_moved_allows_for_the_noise_of_short_autocorrelated_windows():
    # a window of 4 x 75 AR(1) draws (rho = 0.9) of N(0, I) at d = 1,000: effective draws about
    # 300 x 0.1 / 1.9 = 16, so the largest of 1,000 means sits near 3.3 / 4 = 0.8 sd, past the
    # fixed 0.5 (FRAME_SHIFT); the rule allows for that noise (at most 1.62 sd here) and keeps
    # the frame, while a frame 3 sd off is still moved
    rng = np.random.default_rng(2)
    d, n, rho = 1000, 75, 0.9
    z = np.empty((4, n, d))
    z[:, 0] = rng.standard_normal((4, d))
    for t in range(1, n):
        z[:, t] = rho * z[:, t - 1] + np.sqrt(1 - rho ** 2) * rng.standard_normal((4, d))
    moved = adapt.frame_moved(z, z)
    assert moved["shift"] > adapt.FRAME_SHIFT and moved["settled"]
    assert not adapt.frame_moved(z + 3.0, z)["settled"]
