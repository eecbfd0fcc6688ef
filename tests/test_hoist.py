"""A program keeps at most SIGNATURES_KEPT compiled versions (inertia._hoist), through each of its
paths (the plain jit, with and without static arguments, and the traced program whose closed-over
arrays are arguments), and gives the same numbers after it has forgotten them."""
import jax.numpy as jnp
import numpy as np
import pytest
from jax.tree_util import Partial

from inertia import _compile, _hoist


def _scale(c):
    return lambda x: c * x


@pytest.mark.parametrize("hoisted,static", [(False, False), (True, False), (False, True)])
def test_a_program_forgets_its_compiled_versions_past_the_bound(hoisted, static, monkeypatch):
    monkeypatch.setattr(_hoist, "SIGNATURES_KEPT", 3)
    big = np.arange(1.0, 101.0)  # closed over: an argument of the compiled program (>= 64 elements)

    def run(fn, x):
        return fn(x) + (jnp.sum(big) if hoisted else 0.0)

    prog = _compile.jit(run, static_argnums=0) if static else _compile.jit(run)
    x = np.linspace(-1.0, 1.0, 7)
    for c in range(1, 11):  # each new function is a new pytree structure: a new signature
        fn = _scale(float(c)) if static else Partial(_scale(float(c)))
        out = np.asarray(prog(fn, x))
        np.testing.assert_allclose(out, c * x + (5050.0 if hoisted else 0.0), rtol=1e-15)
        (h,) = prog._jits.values()
        # with static arguments the jit counts a new signature once it has compiled it: one more
        assert len(h._entries) <= 3 and h._plain._cache_size() <= 3 + static, (c, h._entries)
    # the path taken: a traced program only where an array was hoisted (None: the plain jit)
    assert any(e is not None for e in h._entries.values()) is hoisted
