"""Importing inertia changes nothing outside it; the entry points compute in float64 with JAX's x64
off and leave it off; `inertia.config` switches things on only when asked; two threads calling
`fit` at once get the numbers they get one after the other."""
import gc
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np

import inertia.config
from inertia.targets import gaussian
from inertia.vi import fit

# a fresh process: nothing of inertia's test setup (conftest turns x64 and the cache on)
IMPORT_PROBE = textwrap.dedent("""
    import gc, importlib, os, sys, threading, warnings
    PACKAGES = ("inertia", "inertia.vi", "inertia.mcmc", "inertia.sgmcmc", "inertia.targets",
                "inertia.config", "inertia.results", "inertia.diagnostics", "inertia.cli")
    if sys.argv[1] == "deps-first":  # the libraries inertia loads set filters of their own
        for name in sys.argv[2:]:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - modules that are not importable by name
                pass
    env = dict(os.environ)
    filters, fmt, thresholds = list(warnings.filters), warnings.formatwarning, gc.get_threshold()
    threads = threading.active_count()
    for name in PACKAGES:
        importlib.import_module(name)
    assert dict(os.environ) == env, sorted(set(os.environ.items()) ^ set(env.items()))
    if sys.argv[1] == "deps-first":
        assert warnings.filters == filters, [f for f in warnings.filters if f not in filters]
    assert warnings.formatwarning is fmt
    assert gc.get_threshold() == thresholds and not gc.get_freeze_count()
    assert threading.active_count() == threads
    import jax
    assert jax.config.jax_enable_x64 is False
    assert not jax.config.jax_compilation_cache_dir
    assert os.path.getsize(os.path.join(os.environ["INERTIA_JAX_CACHE"], "old")) == 3 << 30
    print(" ".join(m for m in sys.modules if m.partition(".")[0] not in ("inertia", "__main__")))
""")

# float64 results with x64 off, the flag still off after each call, and the same numbers as a run
# with x64 on for the whole process
FLOAT64_PROBE = textwrap.dedent("""
    import numpy as np
    import jax, jax.numpy as jnp
    import inertia.config
    from inertia.mcmc import sample
    from inertia.sgmcmc import calibrate
    from inertia.targets import from_logdensity, logistic_regression
    from inertia.vi import fit

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X @ np.array([1.0, -1.0]) + rng.normal(size=60) > 0).astype(float)

    def runs():
        out = {}
        t = from_logdensity(lambda p: -0.5 * jnp.sum((p["a"] - 1.0) ** 2 / jnp.array([1.0, 3.0])),
                            {"a": jnp.zeros(2)})  # float32 when x64 is off
        r = fit(t, num_steps=200, seed=0)
        assert not jax.config.jax_enable_x64 or ON
        out["fit"] = (r.mean, r.cov, r.sample(jax.random.PRNGKey(1), 3))
        out["glm"] = (fit(logistic_regression(X, y), "stl-proj", num_steps=50, batch_size=4).mean,)
        s = sample(t, num_chains=2, num_steps=300, seed=0)
        assert not jax.config.jax_enable_x64 or ON
        out["sample"] = (s.draws,)
        c = calibrate("logistic", (X, y), batch_size=10, num_steps=300, num_chains=2, seed=0)
        assert not jax.config.jax_enable_x64 or ON
        out["calibrate"] = (c.draws, c.Lambda)
        return out

    inertia.config.enable_compilation_cache()  # the suite's folder ($INERTIA_JAX_CACHE)
    ON = False
    off = runs()
    assert jnp.zeros(1).dtype == jnp.float32
    ON = True
    inertia.config.enable_x64()
    on = runs()
    for name in off:
        for a, b in zip(off[name], on[name]):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == np.float64, (name, a.dtype)
            assert np.array_equal(a, b), (name, np.max(np.abs(a - b)))
    print("ok")
""")


def _clean_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), INERTIA_PREFETCH="on", **extra)
    return env


def test_import_leaves_the_process_as_it_was(tmp_path):
    """Environment, JAX's x64 flag and cache, warning filters and format, GC, threads, and a cache
    folder over its cap: as they were, importing inertia first and after its dependencies (~5 s)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    with open(cache / "old", "wb") as f:  # over the cache's cap: pruning would delete it (sparse)
        f.truncate(3 << 30)
    env = _clean_env(tmp_path, INERTIA_JAX_CACHE=str(cache))
    first = subprocess.run([sys.executable, "-c", IMPORT_PROBE, "inertia-first"], env=env,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    deps = first.stdout.split()
    second = subprocess.run([sys.executable, "-c", IMPORT_PROBE, "deps-first", *deps], env=env,
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]


def test_entry_points_compute_in_float64_with_x64_off(tmp_path):
    """fit, sample, calibrate, a float32 example and a GLM built with x64 off: float64 results equal
    bit for bit to a process with x64 on, and the flag off after every call (~25 s)."""
    out = subprocess.run([sys.executable, "-c", FLOAT64_PROBE], capture_output=True, text=True,
                         timeout=600, env=_clean_env(tmp_path))
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_two_threads_fit_at_once_as_one_after_the_other():
    targets = [gaussian(np.array([1.0, -2.0, 0.5]), np.diag([1.0, 4.0, 9.0])),
               gaussian(np.zeros(2), np.array([[2.0, 0.5], [0.5, 1.0]]))]
    kw = dict(num_steps=300, seed=3)
    one_by_one = [fit(t, **kw) for t in targets]
    thresholds = gc.get_threshold()
    together, errors = [None, None], []
    barrier = threading.Barrier(2)

    def run(i):
        try:
            barrier.wait()
            together[i] = fit(targets[i], **kw)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not errors, errors
    for a, b in zip(one_by_one, together):
        assert np.array_equal(a.mean, b.mean) and np.array_equal(a.cov, b.cov)
        assert a.num_steps == b.num_steps
    assert gc.get_threshold() == thresholds  # restored once, after both


def test_config_switches_x64_on_and_off():
    import jax

    before = jax.config.jax_enable_x64
    try:
        inertia.config.enable_x64(False)
        assert jax.numpy.zeros(1).dtype == np.float32
        inertia.config.enable_x64()
        assert jax.numpy.zeros(1).dtype == np.float64
    finally:
        inertia.config.enable_x64(before)


def test_no_listener_or_thread_outlives_a_call():
    """After fit, sample and calibrate return (or a fit raises after it began), JAX's monitoring
    listeners and the process's threads are those of before."""
    from jax._src import monitoring  # the listeners' only view: JAX's private registry

    from inertia.mcmc import sample
    from inertia.sgmcmc import calibrate

    def listeners():
        return (list(monitoring._event_listeners), list(monitoring._event_duration_secs_listeners))

    t = gaussian(np.array([1.0, -2.0]), np.diag([1.0, 4.0]))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = X @ np.array([1.0, -1.0]) + rng.normal(size=40)
    before, threads = listeners(), set(threading.enumerate())
    fit(t, "stl-proj", num_steps=50, batch_size=4, seed=0)
    sample(t, num_chains=2, num_steps=100, seed=0)
    calibrate("linear", (X, y), batch_size=10, num_steps=100, num_chains=2, seed=0)
    try:
        fit(t, "stl-proj", num_steps=0)  # refused after the call's cost meter started
    except ValueError:
        pass
    assert listeners() == before
    assert set(threading.enumerate()) <= threads


SPEED_PROBE = textwrap.dedent("""
    import sys
    import numpy as np
    from inertia.mcmc import sample
    from inertia.sgmcmc import calibrate
    from inertia.targets import logistic_regression
    from inertia.vi import fit

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X @ np.array([1.0, -1.0]) + rng.normal(size=60) > 0).astype(float)
    t = logistic_regression(X, y)
    r = fit(t, seed=0)
    s = sample(t, num_chains=2, num_steps=200, seed=0)
    c = calibrate("logistic", (X, y), batch_size=10, num_steps=200, num_chains=2, seed=0)
    np.savez(sys.argv[1], mean=r.mean, cov=r.cov, draws=np.asarray(s.draws),
             calibrate=np.asarray(c.draws), khat=r.quality["khat"])
""")


def test_one_switch_turns_the_speed_machinery_off(tmp_path):
    """INERTIA_SPEED=off: fit, sample and calibrate give the numbers of XLA's default tier bit for
    bit, and agree with a default run to rounding (the tiers differ in the last bits of
    transcendental functions only) (~30 s)."""
    runs = {}
    for name, extra in {"default": {}, "off": {"INERTIA_SPEED": "off"},
                        "optimized": {"INERTIA_COMPILE": "optimized"}}.items():
        out = subprocess.run([sys.executable, "-c", SPEED_PROBE, str(tmp_path / name) + ".npz"],
                             capture_output=True, text=True, timeout=600,
                             env=_clean_env(tmp_path, INERTIA_JAX_CACHE="off", **extra))
        assert out.returncode == 0, out.stderr[-3000:]
        runs[name] = dict(np.load(tmp_path / f"{name}.npz"))
    for key, value in runs["off"].items():
        np.testing.assert_array_equal(value, runs["optimized"][key])
        np.testing.assert_allclose(value, runs["default"][key], rtol=1e-12, atol=1e-13)
