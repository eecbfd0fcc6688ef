"""The noise-free HFHR step reproduces NAG-SC iterates under the (s, m) -> (h, gamma, alpha) maps."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.mcmc import REGISTRY, hfhr_euler_step, nag_sc, nag_to_hfhr
from inertia.mcmc.kernels import Params
from inertia.targets import kappa_family


@pytest.mark.parametrize("scheme,method", [("euler", None), ("split", "hfhr-split"),
                                           ("exponential", "hfhr")])
def test_noise_free_hfhr_step_is_nag_sc(scheme, method):
    t = kappa_family(6, 50.0, seed=2)
    s, m = 0.7 / t.beta, t.alpha
    x0 = jnp.linspace(-2.0, 3.0, 6)
    ys = np.asarray(nag_sc(t.grad, x0, s=s, m=m, num_steps=60))
    mp = nag_to_hfhr(s, m, scheme)
    q, p = x0, jnp.zeros(6)  # x_0 = y_0 means p_0 = 0
    qs = [q]
    if method is None:
        for _ in range(60):
            q, p = hfhr_euler_step(q, p, t.grad(q), step_size=mp["step_size"], gamma=mp["gamma"],
                                   alpha=mp["alpha"])
            qs.append(q)
    else:
        M = REGISTRY[method]
        coeffs = M.prepare(Params(mp["step_size"], mp["gamma"], mp["alpha"]))
        zero = jax.tree_util.tree_map(jnp.zeros_like, M.draw_noise(jax.random.PRNGKey(0), 6))
        step = jax.jit(lambda q, p: M.transition(coeffs, (q, p), t.grad(q), zero))
        for _ in range(60):
            q, p = step(q, p)
            qs.append(q)
    np.testing.assert_allclose(np.asarray(qs), ys, atol=1e-12, rtol=1e-12)
    assert np.abs(ys[-1] - ys[0]).max() > 0.5  # the iterates move


def test_scheme_maps_agree_with_spec_map_to_first_order():
    m = 1.0
    for scheme in ("split", "exponential"):
        prev = None
        for s in (1e-2, 1e-4, 1e-6):
            a, b = nag_to_hfhr(s, m, scheme), nag_to_hfhr(s, m, "euler")
            rel = abs(a["step_size"] / b["step_size"] - 1) + abs(a["gamma"] / b["gamma"] - 1)
            if prev is not None:
                assert rel < 0.15 * prev  # shrinks like sqrt(s)
            prev = rel
    with pytest.raises(ValueError, match="m s < 1"):
        nag_to_hfhr(2.0, 1.0)
