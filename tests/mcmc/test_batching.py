"""The chains' batched (V, grad V): the rule that picks vmap or one call per chain, and each row's
value and gradient its own either way."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inertia.mcmc import batching, frames
from inertia.targets import from_potential

IDX = np.array([2, 0, 1, 1, 2])
MU = jnp.asarray([0.5, -1.0, 2.0])


def _indexed(name):
    """A Gaussian whose mean is indexed by data (a gather, and a scatter-add in its gradient)."""
    return from_potential(lambda x: 0.5 * jnp.sum((x - MU[IDX]) ** 2), 5, name=name)


def _shifted(name):
    """A Gaussian random walk written with slices (no gather or scatter)."""
    return from_potential(lambda x: 0.5 * jnp.sum((x[1:] - x[:-1]) ** 2) + 0.5 * x[0] ** 2, 5,
                          name=name)


def test_primitives_found_in_nested_programs():
    """A gather inside a jitted function inside a scan is found; a slice-only program has none."""

    def f(x):
        def body(c, _):
            return c + jax.jit(lambda y: y[jnp.asarray(IDX)])(x).sum(), None
        return jax.lax.scan(body, 0.0, None, length=2)[0]

    assert batching.indexes_by_data(f, 5)
    assert not batching.indexes_by_data(lambda x: jnp.sum((x[1:] - x[:-1]) ** 2), 5)


@pytest.mark.parametrize("chains,loop_min_dim", [(4, 10**9), (12, 10**9), (4, 0)])
@pytest.mark.parametrize("make,per_chain", [(_indexed, True), (_shifted, False)])
def test_batched_gradients_are_each_chains_own(make, per_chain, chains, loop_min_dim,
                                                monkeypatch):
    """With PER_CHAIN_MIN_DIM forced to 0, the data-indexed model's (V, grad V) under vmap runs one
    call per row on the CPU (written out for 4 rows, looped for 12 > MAX_UNROLL or from
    LOOP_MIN_DIM) and the slice-only one stays vectorised; both equal each row's own closed
    form, with an unbatched argument (a frame's scale) broadcast."""
    monkeypatch.setattr(batching, "PER_CHAIN_MIN_DIM", 0)
    monkeypatch.setattr(batching, "LOOP_MIN_DIM", loop_min_dim)
    t = make(f"{make.__name__}-{chains}-{loop_min_dim}")
    vg = frames.value_and_grad_of.__wrapped__(t)
    program = str(jax.make_jaxpr(jax.vmap(vg))(np.zeros((chains, 5))))
    per_row = per_chain and jax.default_backend() == "cpu"
    assert ("custom_vmap" in program) == per_row
    if per_row:
        looped = chains > batching.MAX_UNROLL or loop_min_dim == 0
        assert ("scan[" in program or "while[" in program) == looped
    X = np.random.default_rng(0).normal(size=(chains, 5))
    scale = jnp.asarray([1.0, 2.0, 0.5, 1.5, 1.0])
    v, g = jax.jit(jax.vmap(lambda x, s: vg(s * x), in_axes=(0, None)))(X, scale)
    y = np.asarray(scale) * X
    if per_chain:
        r = y - np.asarray(MU)[IDX]
        v_ref, g_ref = 0.5 * np.sum(r**2, axis=1), r
    else:
        dy = np.diff(y, axis=1)
        v_ref = 0.5 * np.sum(dy**2, axis=1) + 0.5 * y[:, 0] ** 2
        g_ref = np.zeros_like(y)
        g_ref[:, 1:] += dy
        g_ref[:, :-1] -= dy
        g_ref[:, 0] += y[:, 0]
    np.testing.assert_allclose(np.asarray(v), v_ref, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(g), g_ref, rtol=1e-13, atol=1e-14)


def test_below_the_threshold_vectorised():
    """At d = 5 < PER_CHAIN_MIN_DIM even a data-indexed model's gradient is plain vmap."""
    vg = frames.value_and_grad_of.__wrapped__(_indexed("indexed-small"))
    assert "custom_vmap" not in str(jax.make_jaxpr(jax.vmap(vg))(np.zeros((4, 5))))
