"""`sample` runs the warm-up scheme the kernel's registry entry names, and takes from it
everything that differs between kernels: the start, the burn-in, when to stop and warm up again,
the gradient count and the verdict's own reasons (~10 s)."""
import pytest

from inertia.mcmc import sample
from inertia.mcmc.adaptation import SCHEMES, Accounting, gaussian_tuning
from inertia.mcmc.kernels import REGISTRY
from inertia.targets import kappa_family


def _scheme(calls, seen):
    """The unadjusted schemes' warm-up at given parameters, with a burn-in of a quarter, one
    halt after the first block followed by a new warm-up at half the step, marked gradient
    counts and one problem of its own."""
    base = gaussian_tuning.SCHEME

    def run(target, method, keys, settings, bar):
        calls.append("run")
        state, params, report = base.run(target, method, keys, settings, bar)
        return state, params, report._replace(burn=0.25)

    def halted(infos):
        return "readapt" not in calls

    def readapt(method, report, state, key, params, infos, draws=None):
        calls.append("readapt")
        seen.append(None if draws is None else draws.shape)  # the halted attempt's draws
        return params._replace(step_size=params.step_size / 2), state, 7

    def account(method, report, info, discarded, num_steps, num_chains):
        calls.append(("discarded", discarded))
        return Accounting(None, 11, 13, 17)

    return base._replace(name="test-scheme", run=run, halted=halted, readapt=readapt,
                         account=account,
                         problems=lambda chains, accept, tuning, unconverged: ["its own"])


def test_sample_runs_the_scheme_its_registry_entry_names(monkeypatch):
    calls, seen = [], []
    monkeypatch.setitem(SCHEMES, "test-scheme", _scheme(calls, seen))
    method = REGISTRY["ula"]._replace(name="ula-test", warmup="test-scheme")
    t = kappa_family(2, 4.0)
    with pytest.warns(RuntimeWarning, match="its own"):
        res = sample(t, method, step_size=0.1, num_steps=200, seed=0)
    assert calls == ["run", "readapt", ("discarded", 7)]
    assert seen == [(4, 200, 2)]  # the halted attempt's draws, in the chains' frame
    assert res.params["step_size"] == 0.05  # the new warm-up's step
    assert res.burn_in_default == 0.25 and res.draws.shape == (4, 200, 2)
    assert (res.grad_evals, res.warmup_grad_evals, res.total_grad_evals) == (11, 13, 17)
    assert res.verdict.problems[-1] == "its own" and not res.converged


def test_target_accept_is_refused_where_the_scheme_does_not_read_it():
    t = kappa_family(2, 4.0)
    with pytest.raises(ValueError, match="applies to the exact kernel only"):
        sample(t, "hfhr", target_accept=0.9, num_steps=100)
    assert "target_accept" in SCHEMES[REGISTRY["hfhr-exact"].warmup].options
