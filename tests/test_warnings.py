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
