"""A budget of 10^12 updates under the stopping rule: no key table or checkpoint list of that length is
built up front (the keys of a block are computed when it runs, the same keys as the table's), so the run
stops where the rule says. About 15 s."""
import jax
import jax.numpy as jnp
import numpy as np

from inertia.targets import from_logdensity
from inertia.vi import fit
from inertia.variational.runner import KeyRows, step_keys
from inertia.variational.runstate import QUEUE_WINDOW, checkpoint_blocks


def test_key_rows_equal_the_table():
    table = step_keys([0, 5], 300, 0)
    rows = KeyRows([0, 5], 300)
    assert np.array_equal(rows.rows(0, 300), table)
    assert np.array_equal(rows.rows(170, 30), table[:, 170:200])
    folded = step_keys([3], 64, 2)  # a recovery's attempt folded in
    assert np.array_equal(KeyRows([3], 64, 2).rows(10, 20), folded[:, 10:30])
    # rows beyond 2^32: threefry's counter carries into its high word, as split does
    big = KeyRows([1], 2 ** 40).rows(2 ** 32 - 1, 2)
    key = jax.random.PRNGKey(1)
    bits = jax.extend.random.threefry_2x32((key[0], key[1]), jnp.asarray([0, 1, 2 ** 32 - 1, 0],
                                                                         jnp.uint32))
    assert np.array_equal(big[0], np.asarray([[bits[0], bits[2]], [bits[1], bits[3]]]))


def test_checkpoint_queue_listed_a_window_at_a_time():
    q = checkpoint_blocks(0, 10 ** 12, 10)
    assert len(q) == QUEUE_WINDOW + 1 and q[-1] == (QUEUE_WINDOW * 10, 0, 10 ** 12)
    assert q[:3] == ((0, 1, 10), (10, 1, 10), (20, 1, 10))
    assert checkpoint_blocks(0, 25, 10) == ((0, 1, 10), (10, 1, 10), (20, 1, 5))


def test_fit_with_a_budget_of_10_to_the_12_stops_by_its_rule():
    t = from_logdensity(lambda x: -0.5 * jnp.sum(x ** 2 * jnp.arange(1.0, 4.0)), jnp.zeros(3))
    r = fit(t, "stl-proj", num_steps=10 ** 12)
    assert r.converged and "stop" in r.verdict.numbers and r.num_steps < 10 ** 5
    np.testing.assert_allclose(np.asarray(r.mean).reshape(-1)[:3], 0.0, atol=0.05)


def test_a_fixed_run_whose_blocks_cannot_fit_is_refused_before_it_starts(monkeypatch):
    """Without a stopping rule, 10^12 updates run in 50 blocks of 2 x 10^10 updates, each update
    with its key and two flags (10 bytes): 186 GiB a seed. With 64 GiB free the run is refused at
    once, naming the largest budget that fits; at that budget it is accepted."""
    from inertia import resources
    from inertia.variational import checks

    monkeypatch.setattr(resources, "available_bytes", lambda: 64 * 2 ** 30)
    from inertia.targets import kappa_family

    try:  # curvature bounds given: the paper's fixed-length run
        fit(kappa_family(2, 10.0), "stl-proj", num_steps=10 ** 12)
    except MemoryError as e:
        assert "186.3 GiB" in str(e) and "64.0 GiB is free" in str(e) and "tol=None" in str(e)
    else:
        raise AssertionError("a 186 GiB block was not refused")
    fits = 10 ** 12 * (64 * 2 ** 30) // (2 * 10 ** 10 * 10)
    checks.check_fixed_run(fits - fits % 100, (fits - fits % 100) // 100, 1)  # fits: no error
    try:
        checks.check_fixed_run(fits + 200, (fits + 200) // 100, 1)
    except MemoryError:
        pass
    else:
        raise AssertionError("a block beyond free memory was accepted")
