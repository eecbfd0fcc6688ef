"""Drivers' warnings point at the caller's line, through every wrapper around fit and sample."""
import warnings

import numpy as np

from inertia.mcmc import sample
from inertia.targets import gaussian
from inertia.vi import fit


def test_fit_and_sample_warnings_name_the_callers_line():
    g = gaussian(np.zeros(3), np.eye(3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(g, "fd-prox", batch_size=4, num_steps=400, seed=0, step_size=5.0)  # bounds bind
        sample(g, num_steps=50, num_chains=2)  # too short to converge
    assert len(caught) >= 2
    assert {w.filename for w in caught} == {__file__}


def test_calibrate_warnings_name_the_callers_line(monkeypatch):
    import sys

    from inertia.sgmcmc import CalibrationWarning, calibrate

    # Monte Carlo standard errors of ~0: any difference from the prediction warns
    module = sys.modules["inertia.sgmcmc.calibrate"]
    monkeypatch.setattr(module, "covariance_standard_errors",
                        lambda st, n: np.full(st.cov.shape, 1e-30))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = X @ np.array([0.5, -1.0]) + rng.normal(size=200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calibrate("linear", (X, y), batch_size=10, num_steps=60, num_chains=2, seed=0)  # too short
    kinds = {w.category for w in caught}
    assert CalibrationWarning in kinds and RuntimeWarning in kinds, kinds
    assert {w.filename for w in caught} == {__file__}
