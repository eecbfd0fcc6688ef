"""Averaging cut short: the plateau at the last update leaves the averaging phase no checkpoint."""
import numpy as np

from inertia.targets import kappa_family
from inertia.vi import fit


def test_plateau_at_the_last_update_finishes_with_a_verdict():
    """The stopping rule fires at update 40 = num_steps (window 2, 5 checkpoints): the averaging
    phase starts with nothing left to run, and `finish` compares the best plain iterate with the
    last one on the same draws (it compared 256 draws of the plain monitor with 1024 of the
    averaging monitor and raised a broadcast error)."""
    t = kappa_family(6, 50.0)
    r = fit(t, "stl-proj", batch_size=8, num_steps=40, tol=1e3, window=2, checkpoint_every=10,
            quality=False)
    assert r.averaged == {"from_step": 40, "checkpoints": 0}
    assert not r.converged and "averaging phase early" in r.verdict.line()
    assert r.num_steps == 40 and np.all(np.isfinite(r.mean))
