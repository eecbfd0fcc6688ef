"""The sampler's value/gradient check: a gradient that disagrees with the log density (an index
out of range, a stop_gradient, a wrong custom JVP) is refused by name before the chains run; the
check is silent on correct models (the posterior suite and the built-in targets)."""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inertia.mcmc import sample
from inertia.mcmc.gradcheck import check_gradient, directional_errors
from inertia.targets import TargetError, from_logdensity

ROOT = Path(__file__).resolve().parents[2]
Y = jnp.array([0.5, 1.0, -0.3, 0.2, 0.9, -0.1])
G = jnp.array([1, 2, 3, 1, 2, 3])  # 1-based labels for a length-3 vector: 3 is out of range


@jax.custom_jvp
def _square(x):
    return x ** 2


@_square.defjvp
def _square_jvp(primals, tangents):  # a wrong rule: d/dx x^2 is 2x, not x
    (x,), (t,) = primals, tangents
    return x ** 2, x * t


WRONG = {
    "out-of-range index": lambda p: -0.5 * jnp.sum(p ** 2) - 0.5 * jnp.sum((Y - p[G]) ** 2),
    "stop_gradient": lambda p: -0.5 * jnp.sum(p ** 2) - 0.5 * jax.lax.stop_gradient(p[0]) ** 2,
    "custom_jvp": lambda p: -0.5 * jnp.sum(_square(p)),
}


@pytest.mark.parametrize("bug", sorted(WRONG))
def test_a_wrong_gradient_is_caught(bug):
    t = from_logdensity(WRONG[bug], jnp.zeros(3))
    x = np.random.default_rng(1).normal(size=(4, 3))
    with pytest.raises(TargetError, match="gradient disagrees with its log density"):
        check_gradient(t, x)


def test_sample_refuses_an_out_of_range_index_before_the_chains():
    t = from_logdensity(WRONG["out-of-range index"], jnp.zeros(3))
    with pytest.raises(TargetError, match="index out of range"):
        sample(t, num_steps=10)  # the automatic path: checked after its warm-up, before chains


def test_the_richardson_difference_is_exact_to_its_tolerance():
    """On V = sum(x^4)/4 + x0 x1 the difference matches grad V . u far inside the tolerance."""
    t = from_logdensity(lambda p: -(jnp.sum(p ** 4) / 4 + p[0] * p[1]), jnp.zeros(3))
    rows = directional_errors(t, np.random.default_rng(2).normal(size=(4, 3)))
    assert len(rows) == 4
    for dd, fd, tol in rows:
        assert abs(dd - fd) < 1e-6 * max(1.0, abs(dd)) < tol


def _correct_targets():
    """The posterior suite's models and the built-in targets (about 20), with a start each."""
    pytest.importorskip("numpyro")
    sys.path.insert(0, str(ROOT / "benchmarks" / "posteriors"))
    from models import BUILDERS, load

    from inertia.targets import kappa_family
    from reproductions.hard import hard_family
    from inertia.targets.zoo import make_target

    out = {n: load(n).target for n in BUILDERS if n != "hier-linear-8-noncentred"}
    out["gaussian-kappa"] = kappa_family(8, 300.0)
    out["hard-family"] = hard_family(100.0, dim=6)
    for model in ("logistic", "probit", "graph-probit"):
        out[f"{model}-sonar"] = make_target(model, data="sonar")
    return out


def test_silent_on_correct_models():
    targets = _correct_targets()
    assert len(targets) >= 18
    rng = np.random.default_rng(0)
    for name, t in targets.items():
        x0 = np.asarray((t.info or {}).get("init", np.zeros(t.dim)), dtype=np.float64)
        pts = x0 + 0.3 * rng.normal(size=(4, t.dim))
        check_gradient(t, pts)  # raises on a disagreement
        rows = directional_errors(t, pts)
        assert len(rows) >= 2, name  # the check did compare (V finite near the start)


def test_a_float32_model_returned_as_float64_is_judged_at_float32_round_off():
    """V = 17,000 + |x|^2 / 2 evaluated in float32 and cast to float64 (as the Inference Gym's models
    are): its differences carry float32 round-off (~0.7 on a directional derivative of ~1), which a
    float64 bound called a wrong gradient at every point; judged at float32's, the check is silent.
    A stop_gradient that drops a gradient of ~100 (V's round-off bound is ~14) is still caught."""
    def v32(p, stop=False):
        x = p.astype(jnp.float32)
        first = jax.lax.stop_gradient(x[0]) if stop else x[0]
        c = 200.0 if stop else 0.5
        return jnp.asarray(-(17000.0 + c * first ** 2 + 0.5 * jnp.sum(x[1:] ** 2)), jnp.float64)

    pts = np.random.default_rng(3).normal(size=(4, 10))
    check_gradient(from_logdensity(v32, jnp.zeros(10)), pts)
    rows = directional_errors(from_logdensity(v32, jnp.zeros(10)), pts)
    assert max(abs(dd - fd) for dd, fd, _ in rows) > 0.05  # the round-off is really there
    with pytest.raises(TargetError, match="disagrees"):
        check_gradient(from_logdensity(lambda p: v32(p, stop=True), jnp.zeros(10)), pts)
