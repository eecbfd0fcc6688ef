"""Progress: a tqdm bar with phases and live figures on a terminal, at most one line every 5 s
off a terminal, nothing when switched off."""
import io

import numpy as np

from inertia.progress import LINE_EVERY, Progress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_off_a_terminal_at_most_one_line_per_five_seconds():
    clock, out = Clock(), io.StringIO()
    bar = Progress("sample hfhr", file=out, tty=False, clock=clock)
    bar.phase("warm-up")
    clock.t = 3.0
    bar.phase("sampling", total=1000)
    for i in range(1, 801):  # 800 updates over 12.5 s (steps of 1/64 s: exact in binary)
        clock.t = 3.0 + i / 64
        bar.update(1, max_rhat=1.002)
    bar.close()
    lines = out.getvalue().splitlines()
    # lines at t = 0, 5, 10, 15: the phase change at t = 3 waits for its turn
    assert len(lines) == 1 + int(clock.t // LINE_EVERY) == 4
    assert lines[0].startswith("sample hfhr: warm-up")
    assert "sampling" in lines[1] and "ETA" in lines[1] and "max_rhat 1.002" in lines[1]


def test_disabled_is_silent_and_a_terminal_gets_one_bar():
    out = io.StringIO()
    bar = Progress("fit", enabled=False, file=out, tty=False)
    bar.phase("fitting", total=10)
    bar.update(10, F_hat=1.0)
    bar.close()
    assert out.getvalue() == ""
    out = io.StringIO()
    bar = Progress("fit", file=out, tty=True)
    bar.phase("fitting", total=100)
    for _ in range(100):
        bar.update(1, F_hat=12.5)
    bar.extend(200)
    bar.close()
    text = out.getvalue()
    assert "fit fitting" in text and "F_hat=12.5" in text and "/200" in text
    assert text.count("\n") <= 1  # one bar redrawn in place (carriage returns), not lines


def test_sample_and_fit_off_a_terminal(capsys):
    import time

    from inertia import vi
    from inertia.mcmc import sample
    from inertia.targets import gaussian

    g = gaussian(np.zeros(3), np.eye(3))
    t0 = time.monotonic()
    sample(g, "hfhr", step_size=0.2, gamma=2.0, alpha=0.1, num_steps=3000, num_chains=2,
           progress=True, diagnostics=False)
    elapsed = time.monotonic() - t0
    err = capsys.readouterr().err.splitlines()
    assert 1 <= len(err) <= 1 + elapsed // LINE_EVERY
    vi.fit(g, "exact-apg", num_steps=200, progress=True)
    assert 1 <= len(capsys.readouterr().err.splitlines()) <= 2 + (time.monotonic() - t0) // 5
    sample(g, "hfhr", step_size=0.2, gamma=2.0, alpha=0.1, num_steps=100, progress=False,
           diagnostics=False)
    vi.fit(g, "exact-apg", num_steps=20)
    assert capsys.readouterr().err == ""


def test_fit_progress_shows_f_hat_in_the_targets_coordinates():
    import jax.numpy as jnp

    from inertia import vi
    from inertia.targets import from_logdensity

    # no exact expectations: automatic mode runs in coordinates whitened by the Laplace start
    t = from_logdensity(lambda p: -0.5 * jnp.sum((p["a"] - 1.0) ** 2 / jnp.array([4.0, 9.0])),
                        {"a": jnp.zeros(2)})
    out = io.StringIO()
    bar = Progress("fit", file=out, tty=False, every=0.0)
    res = vi.fit(t, seed=0, num_steps=400, progress=bar)
    wh = next(e for e in res.events if e["event"] == "whitened")
    assert abs(wh["log_det"] - np.log(6.0)) < 1e-3  # log |det W|, W = diag(2, 3): F_hat moves
    assert "F_hat" in out.getvalue()
    shown = [float(ln.split("F_hat ")[1].split()[0]) for ln in out.getvalue().splitlines()
             if "F_hat" in ln]
    want = np.asarray(res.history["objective_estimate"]).mean(axis=-1)
    # every figure shown is a checkpoint's F_hat as the result reports it (printed to 6 digits)
    assert all(np.min(np.abs(want - f)) <= 1e-5 * abs(f) for f in shown)


def test_eta_from_measured_steps_not_the_compilation():
    """A first block that took 60 s (compiling) and then 100 units per 0.25 s: the ETA is the
    remaining units at 0.0025 s each, not at the 0.6 s per unit the compilation suggests."""
    clock, out = Clock(), io.StringIO()
    bar = Progress("fit", file=out, tty=False, clock=clock)
    bar.phase("fitting", total=20000)
    clock.t = 60.0
    bar.update(100)  # compile + first block
    for i in range(1, 41):  # 10 s of measured steps
        clock.t = 60.0 + 0.25 * i
        bar.update(100)
    bar.close()
    last = out.getvalue().splitlines()[-1]
    eta = float(last.split("ETA ")[1].split("s")[0])
    assert abs(eta - (20000 - 4100) * 0.0025) < 1.0, last  # 39.75 s; the old rule: 231 s


def test_long_runs_are_announced_and_oversized_draws_refused():
    import warnings

    import pytest

    from inertia.progress import LONG_RUN, warn_long_run
    from inertia.resources import check_draws

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_long_run(LONG_RUN)  # silent at the limit
        check_draws(4, 10 ** 6, 1, 3)  # 4 x 10^6 draws of 3 numbers: 288 MB, fits
    with pytest.warns(RuntimeWarning, match="takes at least 12 days"):
        warn_long_run(10 ** 12)
    with pytest.raises(MemoryError, match=r"keeps 4,000,000,000,000 draws of 3 numbers"):
        check_draws(4, 10 ** 12, 1, 3)
