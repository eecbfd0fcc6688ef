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


def test_a_spike_is_no_head_start():
    """`adapt._spike`: the centred eight schools' MAP search runs into the spike tau -> 0 (the
    theta's curvature 1 / tau^2 grows without bound): its largest curvature there is orders of
    magnitude beyond DEGENERATE_RATIO x the start point's, so the warm-up starts mode-free. A
    Gaussian's mode (kappa 1e3, curvature the same everywhere: ratio 1) keeps its frame. Either
    side of the threshold is far from it (what the frame at the spike would cost: scales off
    by the square root of that ratio)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    from inertia.targets import from_numpyro
    from inertia.targets.curvature import DEGENERATE_RATIO

    def schools(sigma, y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        with numpyro.plate("J", len(y)):
            theta = numpyro.sample("theta", dist.Normal(mu, tau))
            numpyro.sample("y", dist.Normal(theta, sigma), obs=y)

    t = from_numpyro(schools, jnp.array([15.0, 10, 16, 11, 9, 11, 10, 18]),
                     jnp.array([28.0, 8, -3, 7, -1, 1, 18, 12]))
    x0 = np.zeros(t.dim)
    mode, _, none = adapt._mode_or_none(t, x0)
    assert none is None
    fr, why, probed = adapt._spike(t, mode, x0, 0)
    assert why is not None and probed == 2
    ratio = float(why.split(", ")[-1].split(" x")[0])
    assert ratio > 1e3 * DEGENERATE_RATIO, why
    g = kappa_family(20, 1e3)
    fr, why, _ = adapt._spike(g, np.zeros(20) + 0.5, np.zeros(20), 0)
    assert why is None
    assert np.max(1 / fr.scale ** 2) <= 2.0 * 1e3  # the probes read the Gaussian's curvature
