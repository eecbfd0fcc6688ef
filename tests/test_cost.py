"""`result.cost` (inertia._cost): compile seconds from JAX's compile events, XLA's program memory,
seconds per gradient of the compiled updates, in fit and sample results and their reports."""
import jax
import jax.numpy as jnp
import numpy as np

from inertia import _cost
from inertia.targets import kappa_family


def test_meter_counts_compilation_on_its_thread_only_while_open():
    """A new program compiled inside the meter adds its compile time; one compiled after `stop`
    adds nothing; a cached call compiles nothing."""
    f = jax.jit(lambda x: jnp.sin(x) * 3.0 + jnp.cos(x) ** 2)
    meter = _cost.Meter().start()
    f(jnp.ones(17)).block_until_ready()
    meter.stop()
    first = meter.compile_seconds
    assert first > 0 and meter.wall >= first
    jax.jit(lambda x: x * 7.0 + 1.0)(jnp.ones(19)).block_until_ready()  # after stop
    assert meter.compile_seconds == first
    again = _cost.Meter().start()
    f(jnp.ones(17)).block_until_ready()  # cached
    assert again.stop().compile_seconds == 0.0


def test_program_bytes_of_a_known_program():
    """x + 1 on 1000 float64: a 8000-byte argument and a 8000-byte output, little else."""
    c = jax.jit(lambda x: x + 1.0).lower(jnp.zeros(1000, jnp.float64)).compile()
    n = _cost.program_bytes(c)
    if n is None:  # a backend without memory analysis
        return
    assert 16000 <= n < 32000


def test_fit_and_sample_report_cost_per_gradient():
    """fit: the gradients are the history's updates x (grad + 2 HVP) per update; sample: those the
    sampling chains counted (their per-step num_grads); seconds per gradient = run seconds over
    them; each in the report and the JSON."""
    from inertia.mcmc import sample
    from inertia.vi import fit

    t = kappa_family(4, 10.0)
    r = fit(t.replace(alpha=None, beta=None), quality=False)
    g, h = r.cost_per_update
    assert r.cost["gradients"] == r.history["step"][-1] * (g + 2 * h)
    assert abs(r.cost["seconds_per_gradient"] * r.cost["gradients"] - r.cost["run_seconds"]) \
        <= 1e-12 * r.cost["run_seconds"]
    assert r.cost["wall_seconds"] >= r.cost["run_seconds"]
    assert "ms per gradient" in r.report() and r.to_dict()["cost"] == r.cost
    s = sample(t, seed=0, num_steps=400)
    assert s.cost["gradients"] == int(np.sum(s.info["num_grads"]))
    assert "ms per gradient" in s.report()
