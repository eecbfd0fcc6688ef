"""No data and no large array is a compile-time constant of a program that fit, sample or calibrate
compiles: every program XLA compiles during a run is scanned for HLO constants of more than
MAX_ELEMENTS elements (closed-over data, whitening factors, starts), which XLA would embed in the
program and fold at compile time (a d x d product at d = 1,000 takes its constant folder ~40 s).
Cost: ~35 s on one core (a fit and two samples at d = 33 with 400 rows, a 2,000-step
calibration).
"""
import re

import numpy as np
from jax._src import compiler

MAX_ELEMENTS = 1000
_CONSTANT = re.compile(r"stablehlo\.constant dense(?:_resource)?<[^>]*> : tensor<([0-9x]+)x\w+>")


def large_constants(run):
    """(program, shape) of each HLO constant of more than MAX_ELEMENTS elements in the programs
    compiled by `run()` (persistent-cache hits included: every compilation passes here)."""
    found = []
    original = compiler.compile_or_get_cached

    def scan(backend, module, *args, **kwargs):
        text = module.operation.get_asm(large_elements_limit=4)
        name = str(module.operation.attributes["sym_name"])
        for shape in _CONSTANT.findall(text):
            if np.prod([int(s) for s in shape.split("x")]) > MAX_ELEMENTS:
                found.append((name, shape))
        return original(backend, module, *args, **kwargs)

    compiler.compile_or_get_cached = scan
    try:
        run()
    finally:
        compiler.compile_or_get_cached = original
    return found


def _logistic(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ rng.normal(size=d)))).astype(float)
    return X, y


def test_the_scan_finds_a_closed_over_array():
    """The detector itself: a jitted closure over a 40 x 40 array is flagged, the same program
    with the array as an argument is not."""
    import jax
    import jax.numpy as jnp

    A = np.random.default_rng(0).normal(size=(40, 40))
    closed = large_constants(lambda: jax.jit(lambda x: x @ A)(jnp.ones(40)).block_until_ready())
    passed = large_constants(lambda: jax.jit(lambda x, a: x @ a)(jnp.ones(40), A))
    assert [s for _, s in closed] == ["40x40"] and passed == []


def _glm(n, d, seed):
    from inertia.targets.glm import glm_target

    X, y = _logistic(n, d, seed)
    return glm_target(X, y, link="logistic")


def test_fit_has_no_large_constants():
    from inertia.vi import fit

    target = _glm(400, 33, 1)  # data 13,200 elements; start and whitening factor 33 x 33
    assert large_constants(lambda: fit(target, num_steps=300)) == []


def test_sample_has_no_large_constants():
    from inertia.mcmc import sample

    target = _glm(410, 33, 2)
    assert large_constants(lambda: sample(target, num_steps=200)) == []


def test_sample_in_a_scaled_frame_has_no_large_constants():
    """The large-d warm-up (Hessian probes, start, chains in the diagonal and the low-rank frame,
    data 410 x 33): every array an argument."""
    from inertia.mcmc import sample

    target = _glm(410, 33, 4)
    assert large_constants(lambda: sample(target, num_steps=200, frame="low-rank")) == []


def test_calibrate_has_no_large_constants():
    import warnings

    from inertia import sgmcmc

    X, y = _logistic(1230, 5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = large_constants(lambda: sgmcmc.calibrate("logistic", (X, y), batch_size=32,
                                                         num_steps=2000, seed=0))
    assert found == []


def test_factor_family_fit_has_no_large_constants():
    """The factor family's programs (its updates' scan, the objective's draws) take the data, the
    start and the scales as arguments as well."""
    from inertia.vi import fit

    target = _glm(400, 33, 4)
    assert large_constants(lambda: fit(target, family="factor", rank=4, num_steps=300,
                                       quality=False)) == []
