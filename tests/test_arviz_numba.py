"""inertia's diagnostics with Numba installed (PyMC brings it): ArviZ's Numba path of
mcse(method="sd") fails under NumPy >= 2.4, so inertia takes its NumPy path. Under 1 s; skipped
without Numba."""
import numpy as np
import pytest


def test_arviz_stats_with_numba_installed():
    pytest.importorskip("numba", reason="the failure needs Numba installed (e.g. with pymc)")
    import arviz as az

    from inertia.diagnostics import arviz_stats

    x = np.random.default_rng(0).normal(size=(4, 200, 2))
    flag = az.Numba.numba_flag
    st = arviz_stats(x)
    assert az.Numba.numba_flag == flag
    sd = x.reshape(-1, 2).std(axis=0)
    # mcse of the sd of n iid normal draws is about sd / sqrt(2 n); ArviZ's estimate over that
    # read 1.00 +- 0.067 (200 data seeds x 2 coordinates): rtol 0.3 is 4.5 sds
    assert np.allclose(st["mcse_sd"], sd / np.sqrt(2 * 800), rtol=0.3)
