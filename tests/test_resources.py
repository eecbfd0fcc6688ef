"""Memory estimates for failing fast: closed-form counts, the inverse, and the machine's budget."""
import pytest

from inertia.resources import (DXD_ARRAYS, XLA_FACTOR, available_bytes, estimate_fit_bytes,
                               largest_dim)


def test_estimate_counts_dxd_and_hessian_batches():
    d, b, s = 100, 8, 3
    base = XLA_FACTOR * 8 * s * (DXD_ARRAYS["sym"] * d * d + 4 * b * d)
    assert estimate_fit_bytes("sym", d, b, s) == int(base)
    hvp = estimate_fit_bytes("chol", d, b, s, needs_hvp=True)
    assert hvp == int(XLA_FACTOR * 8 * s * ((DXD_ARRAYS["chol"] + b) * d * d + 4 * b * d))
    # the run: d = 20000, stl-proj (symmetric root), b = 8: tens of GB
    assert estimate_fit_bytes("sym", 20000, 8) > 40e9
    with pytest.raises(ValueError, match="coordinates"):
        estimate_fit_bytes("polar", 10, 1)


@pytest.mark.parametrize("coords, hvp", [("chol", False), ("sym", False), ("chol", True)])
def test_largest_dim_is_the_boundary(coords, hvp):
    budget = 2 * 1024 ** 3
    d = largest_dim(coords, 16, 2, needs_hvp=hvp, budget=budget)
    assert estimate_fit_bytes(coords, d, 16, 2, needs_hvp=hvp) <= budget
    assert estimate_fit_bytes(coords, d + 1, 16, 2, needs_hvp=hvp) > budget


def test_available_bytes_is_positive_and_below_physical():
    import os

    avail = available_bytes()
    assert 0 < avail <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
