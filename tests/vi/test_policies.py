"""The fit policies are pure functions of the run state (`policy(state) -> (state, events)`): each
returns a new state and its events and leaves its input as it was; the runner applies the result,
and the step an event reports is the rebuilt kernel's, bit for bit (~5 s)."""
import jax.numpy as jnp
import numpy as np
import pytest

from inertia.targets import kappa_family
from inertia.variational import averaging, recovery, widen
from inertia.variational.options import FitOptions
from inertia.variational.runner import Runner
from inertia.variational.runstate import RunState


def _state(**kw):
    base = dict(step=40, checkpoints=4, num_steps=100, every=10, last_A=[np.eye(2)],
                final=None, covariance=None, queue=((40, 1, 10), (50, 1, 10), (60, 1, 10)),
                rule=None, averaging_from=None, target=None, set_bounds=(1.0, 10.0),
                eta_scale=1.0, base_step=0.3)
    base.update(kw)
    return RunState(**base)


def test_recovery_quarters_the_step_and_requeues_from_the_last_checkpoint():
    recover = recovery.recovery(True, 2, "m")
    s = _state()
    fail = recovery.Failure(45, "non-finite", False, [0])
    new, events = recover(s, fail)
    assert s.eta_scale == 1.0 and s.recoveries == 0 and not s.restart  # the input is unchanged
    assert new.eta_scale == 0.25 and new.recoveries == 1 and new.restart
    assert new.queue == tuple((i, 1, 10) for i in range(40, 100, 10))
    assert [e["event"] for e in events] == ["recovery"]
    assert events[0]["step_size"] == 0.3 * 0.25 and events[0]["restart_from"] == 40
    twice, _ = recover(new._replace(restart=False), fail)
    assert twice.eta_scale == 1 / 16 and twice.recoveries == 2
    assert recover(twice, fail) == (twice, [])  # at most max_recoveries
    assert recover(s, fail._replace(hopeless=True)) == (s, [])  # a smaller step cannot help
    assert recovery.recovery(False, 2, "m")(s, fail) == (s, [])


def test_widening_counts_checkpoints_on_a_side_then_widens_it(monkeypatch):
    monkeypatch.setattr(widen, "boundary", lambda feasible, A, a, b: (True, False))  # lower side
    policy = widen.widening(True, "cholesky", "m")
    s = _state()
    for k in range(1, widen.WIDEN_AFTER):
        s, events = policy(s)
        assert events == [] and s.widen_low == k and s.set_bounds == (1.0, 10.0)
    s, events = policy(s)
    assert s.set_bounds == (1.0, 10.0 * widen.WIDEN_FACTOR) and s.restart
    assert s.widen_low == 0 and [e["event"] for e in events] == ["widened"]
    assert events[0]["side"] == "lower" and "warning" in events[0]
    assert widen.widening(False, "cholesky", "m")(s) == (s, [])


class _Falling:
    decrease, stderr = -1e-3, 1e-4

    def falling(self, z):
        return True


def test_averaging_starts_once_and_extends_while_the_objective_falls():
    start = averaging.averaging(True, 1e-4, 10)
    s = _state(step=15, queue=tuple((i, 1, 10) for i in range(20, 100, 10)))
    new, events = start(s, {"step": 15})
    assert new.averaging_from == 15 and new.start_average and new.eta_scale == 0.25
    # the queue is cut at (1 + AVERAGING_FACTOR) x the plateau's step, within the budget
    assert new.queue == ((20, 1, 10), (30, 1, 10), (40, 1, 10), (50, 1, 10), (60, 1, 10),
                         (70, 1, 10))
    assert new.rule is not None and events[0]["event"] == "averaging"
    assert start(new, {"step": 50}) == (new, [])  # already averaging
    assert averaging.averaging(False, 1e-4, 10)(s, {}) == (s, [])
    extend = averaging.extension(True, 1e-4, 10)
    s = _state(averaging_from=20, rule=_Falling(), final=("m", "A"), eta_scale=0.25, queue=())
    new, events = extend(s)
    assert new.extensions == 1 and new.earlier == (("m", "A"),) and new.eta_scale == 0.125
    assert new.queue == ((40, 1, 10), (50, 1, 10), (60, 1, 10), (70, 1, 10))  # to twice the step
    assert events[0]["step_size"] == 0.3 * 0.125
    s = s._replace(extensions=averaging.MAX_EXTENSIONS)
    assert extend(s) == (s, [])


def test_the_runner_applies_a_policy_and_reports_the_kernels_own_step():
    """The step a recovery reports is the rebuilt kernel's (base step x scale, bit for bit), the
    loop restarts from the last checkpoint with new keys, and the runner's event has no warning
    field left in it."""
    t = kappa_family(3, 10.0)
    opts = FitOptions(accelerated=True, restart=False, recover=True, widen=False, monitor=False,
                      average=False, window=5, checkpoint_every=10)
    runner = Runner(t, "stl-proj", opts, 4, None, {}, 1)
    loop = runner._start(jnp.zeros(3), jnp.eye(3), [0], 100, 10)
    runner._advance(loop)
    keys = loop.keys.rows(0, 100)
    eta0 = runner.rule.eta
    fail = recovery.Failure(15, "non-finite or exploding iterate", False, [0])
    for k in (1, 2):
        with pytest.warns(RuntimeWarning, match="restarting from step 10"):
            assert runner.apply(loop, lambda s: recovery.recovery(True, 4, "m")(s, fail))
        assert runner.eta_scale == 0.25 ** k
        assert runner.events[-1]["step_size"] == runner.rule.eta == eta0 * 0.25 ** k
        assert "warning" not in runner.events[-1]
    assert loop.counters["recoveries"] == 2 and not np.array_equal(loop.keys.rows(0, 100), keys)
    assert loop.queue == [(i, 1, 10) for i in range(10, 100, 10)]
    assert not runner.apply(loop, widen.unchanged)  # no event: nothing to do


def test_reestimation_counts_its_hessian_products_and_rebuilds_only_when_beta_moved(monkeypatch):
    import inertia.targets.curvature as curvature

    t = kappa_family(2, 4.0)
    measured = {"b": 1.5 * t.beta}
    monkeypatch.setattr(curvature, "bounds_under",
                        lambda target, m, L, seed: (0.25, measured["b"], 6))
    policy = widen.reestimation(curvature=object())
    s = _state(checkpoints=widen.REESTIMATE_EVERY, target=t, set_bounds=(t.alpha, t.beta),
               final=(np.zeros((1, 2)), np.eye(2)[None]),
               covariance=lambda ms, As: np.stack([np.eye(2)] * len(ms)))
    new, events = policy(s)  # beta within REBUILD_RATIO: the same kernel, the products counted
    assert events == [] and new.hvps == 6 and new.target is t and not new.restart
    measured["b"] = 10 * t.beta
    new, events = policy(s)
    assert new.hvps == 6 and new.restart and new.target.beta == 10 * t.beta
    assert new.target.alpha == 0.25
    assert new.set_bounds == (0.25, 10 * t.beta)  # the union of the old and new bounds
    assert events[0]["event"] == "bounds re-estimated"
    assert events[0]["previous"] == [t.alpha, t.beta]
    assert policy(s._replace(checkpoints=widen.REESTIMATE_EVERY + 1)) == (s._replace(
        checkpoints=widen.REESTIMATE_EVERY + 1), [])  # only every REESTIMATE_EVERY checkpoints
    assert policy(s._replace(averaging_from=10))[1] == []  # never while averaging
    assert widen.reestimation(None)(s) == (s, [])  # given bounds
