"""A new model's first `fit` and `sample` compile a bounded number of XLA programs.

Almost all of a small model's first-run wait is compilation; each eager jnp call, key split or
random draw outside the compiled blocks is one more program. The bounds leave a margin of a few
programs over today's counts in a fresh process (8 for fit and 9 for sample on this model, the
model's own initialisation not counted), so a regression that puts eager
device work back into the drivers fails here.
"""
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

numpyro = pytest.importorskip("numpyro")
import numpyro.distributions as dist  # noqa: E402

from inertia.mcmc import sample  # noqa: E402
from inertia.targets import from_numpyro  # noqa: E402
from inertia.vi import fit  # noqa: E402

FIT_MAX, SAMPLE_MAX = 10, 11


def _model(x, y=None):
    a = numpyro.sample("a", dist.Normal(0, 5))
    b = numpyro.sample("b", dist.Normal(0, 5))
    s = numpyro.sample("s", dist.HalfNormal(2.0))
    numpyro.sample("y", dist.Normal(a + b * x, s), obs=y)


class _Count(logging.Handler):
    def __init__(self):
        super().__init__()
        self.names = []

    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith("Finished XLA compilation of "):
            self.names.append(msg.split(" of ")[1].split(" in ")[0])


def _compilations(run):
    """Programs compiled by `run()` (JAX's compile log; the persistent cache does not hide them)."""
    handler = _Count()
    old = jax.config.jax_log_compiles
    jax.config.update("jax_log_compiles", True)
    logging.getLogger("jax").addHandler(handler)
    try:
        run()
    finally:
        logging.getLogger("jax").removeHandler(handler)
        jax.config.update("jax_log_compiles", old)
    return handler.names


def _target(n):
    # a data size of its own, so that no program of another test is reused
    rng = np.random.default_rng(5)
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + 0.5 * rng.normal(size=n)
    return from_numpyro(_model, jnp.asarray(x), y=jnp.asarray(y))


def test_first_fit_compiles_few_programs():
    t = _target(173)
    names = _compilations(lambda: fit(t))
    assert 3 <= len(names) <= FIT_MAX, names


def test_first_sample_compiles_few_programs():
    t = _target(179)
    names = _compilations(lambda: sample(t, num_steps=200))
    assert 3 <= len(names) <= SAMPLE_MAX, names
