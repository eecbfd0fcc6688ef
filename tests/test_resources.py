"""Memory estimates for failing fast: closed-form counts, the inverse, and the machine's budget."""
import pytest

from inertia.resources import available_bytes, estimate_fit_bytes, largest_dim


def test_estimate_counts_dxd_and_hessian_batches():
    """Counts by hand (float64, XLA keeping inputs and outputs of a scan step: 2x): the symmetric
    root keeps 8 d x d arrays per seed (A, previous A, momentum point, gradient, workspace,
    eigenvectors, reconstruction), Cholesky 6, plus 4 b d for the batch; HVPs add b d^2."""
    d, b, s = 100, 8, 3
    # 2 x 8 B x 3 seeds x (8 x 100^2 + 4 x 8 x 100) = 48 x 83 200
    assert estimate_fit_bytes("sym", d, b, s) == 3_993_600
    # 48 x ((6 + 8) x 100^2 + 3 200)
    assert estimate_fit_bytes("chol", d, b, s, needs_hvp=True) == 6_873_600
    assert estimate_fit_bytes("bw", d, b, s) == estimate_fit_bytes("chol", d, b, s) == 3_033_600
    # a d = 20000 stl-proj (symmetric root) run, b = 8: 16 x (8 x 20000^2 + 640 000) B = 51 GB
    assert estimate_fit_bytes("sym", 20000, 8) == 51_210_240_000
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
