"""Chunked passes, out-of-core sources, sharding and run-to-ESS for calibrated SG(L)D."""
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import inertia  # noqa: F401
from inertia.data.sources import ArraySource, NpySource, open_source
from inertia.sgmcmc import calibrate, from_loss, make_model, offline
from inertia.sgmcmc.calibrate import NoEstimateError
from inertia.sgmcmc.large import large_model, offline_large

ROOT = Path(__file__).resolve().parents[2]


def _glm_data(kind, n=1500, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    eta = X @ np.linspace(-0.5, 0.5, d) + 0.2
    if kind == "logistic":
        y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    elif kind == "poisson":
        y = rng.poisson(np.exp(eta / 2)).astype(float)
    else:
        y = eta + rng.normal(size=n) * np.sqrt(1 + np.sum(X ** 2, axis=1))
    return X, y


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("kind,prior", [("logistic", None), ("poisson", 0.5), ("linear", None)])
def test_chunked_curvature_equals_dense(kind, prior):
    X, y = _glm_data(kind)
    dense = offline.offline(make_model(kind, X, y, intercept=True, prior_precision=prior))
    lm = large_model(kind, ArraySource(X, y), intercept=True, prior_precision=prior, chunk=256)
    chunked = offline_large(lm, chunk=256)  # 1500 rows: 6 blocks, the last one padded
    S = np.cov(np.random.default_rng(3).normal(size=(4, 40)))
    assert _rel(chunked.theta_hat, dense.theta_hat) < 1e-10
    for a, b in [(chunked.J, dense.J), (chunked.I, dense.I),
                 (chunked.quad_matrix(), dense.quad_matrix()), (chunked.quad(S), dense.quad(S)),
                 (chunked.noise_cov(S, 16), dense.noise_cov(S, 16)),
                 (chunked.sandwich, dense.sandwich)]:
        assert _rel(a, b) < 1e-12
    if kind == "linear":
        assert _rel(chunked.gram, dense.gram) < 1e-12
        assert abs(chunked.residual_var - dense.residual_var) < 1e-12 * dense.residual_var


def test_quadratic_term_from_a_row_subsample():
    X, y = _glm_data("logistic", n=4000)
    lm = large_model("logistic", ArraySource(X, y), intercept=True, chunk=512)
    full, sub = offline_large(lm, chunk=512), offline_large(lm, chunk=512, quad_rows=1000)
    assert _rel(sub.J, full.J) < 1e-12  # J, I always from all rows
    err = _rel(sub.quad_matrix(), full.quad_matrix())
    assert 1e-4 < err < 0.3  # 1000 of 4000 rows: a sampling error, not a bug-sized one


def test_generic_model_chunked_hessian_sums_equal_dense():
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.tanh(X @ np.ones(3)) + 0.3 * rng.normal(size=200)
    m = from_loss(lambda th, dt: 0.5 * (dt[1] - jnp.tanh(dt[0] @ th)) ** 2, (X, y), 3)
    th = offline.fit_map(m).theta
    dense, chunked = offline.curvature(m, th), offline.curvature(m, th, chunk=64)
    assert chunked.Jn is None and dense.Jn is not None
    S = np.cov(rng.normal(size=(3, 20)))
    for a, b in [(chunked.J, dense.J), (chunked.I, dense.I),
                 (chunked.quad_matrix(), dense.quad_matrix()),
                 (chunked.noise_cov(S, 8), dense.noise_cov(S, 8))]:
        assert _rel(a, b) < 1e-12


def _fixed(data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate("logistic", data, batch_size=32, num_steps=600, seed=1, num_chains=2,
                         intercept=True, **kw)


def test_memory_mapped_file_gives_the_array_answer(tmp_path):
    X, y = _glm_data("logistic")
    path = tmp_path / "rows.npy"
    np.save(path, np.column_stack([X, y]))
    a = _fixed((X, y), large=True)
    b = _fixed(str(path))
    assert a.settings["engine"] == b.settings["engine"] == "chunked"
    assert _rel(b.theta_hat, a.theta_hat) < 1e-12
    assert _rel(b.Lambda, a.Lambda) < 1e-12
    assert np.max(np.abs(b.draws - a.draws)) < 1e-12 * np.max(np.abs(a.draws))


def test_host_gathered_blocks_equal_the_in_program_gather(monkeypatch):
    import jax

    from inertia.sgmcmc import stream

    X, y = _glm_data("logistic")
    lm = large_model("logistic", ArraySource(X, y), intercept=True)
    monkeypatch.setattr(stream, "BLOCK_BYTES", 7 * 8 * 4 * 2 * 32)  # 7 steps a block
    kw = dict(Lambda=0.3 * np.eye(4) * 32 / 1500, batch_size=32, temperature=1500.0)
    host, dev = stream.SourceRunner(lm, **kw), stream.DeviceRunner(lm, **kw)
    assert host.block_steps(2) == 7
    states = stream.init_states(np.tile([0.2, -0.5, 0.0, 0.5], (2, 1)))
    sh, dh = host.advance(jax.random.key(3), states, 50, thin=3)  # 150 steps: 22 blocks
    sd, dd = dev.advance(jax.random.key(3), states, 50, thin=3)
    assert dh.shape == dd.shape == (2, 50, 4) and host.blocks == 22
    assert np.max(np.abs(dh - dd)) < 1e-12 * np.max(np.abs(dd))
    assert np.max(np.abs(np.asarray(sh.position) - np.asarray(sd.position))) < 1e-12


def test_gathered_rows_reach_the_cpu_device_without_a_copy():
    import jax

    from inertia.sgmcmc import stream

    if jax.default_backend() != "cpu":
        pytest.skip("zero-copy host buffers are a CPU-client property")
    X, y = _glm_data("logistic", n=300)
    src = ArraySource(X, y)
    idx = np.random.default_rng(0).integers(0, 300, size=(5, 2, 7))
    out = (stream.aligned((5, 2, 7, 3)), stream.aligned((5, 2, 7)))
    assert out[0].ctypes.data % 64 == 0 and out[1].ctypes.data % 64 == 0
    Xt, yt = src.take(idx, out=out)
    assert Xt.ctypes.data == out[0].ctypes.data and yt.ctypes.data == out[1].ctypes.data
    np.testing.assert_array_equal(Xt, X[idx])
    np.testing.assert_array_equal(yt, y[idx])
    assert jax.device_put(Xt).unsafe_buffer_pointer() == Xt.ctypes.data
    Xn, yn = src.take(np.array([-1, 2]), out=(stream.aligned((2, 3)), stream.aligned(2)))
    np.testing.assert_array_equal(Xn, X[[-1, 2]])  # negative indices as numpy reads them
    np.testing.assert_array_equal(yn, y[[-1, 2]])
    with pytest.raises(IndexError):
        src.take(np.array([300]), out=(stream.aligned((1, 3)), stream.aligned(1)))
    lm = large_model("logistic", src, intercept=True)
    Xd, yd = stream.SourceRunner(lm, Lambda=np.eye(4), batch_size=7)._gather(idx)
    np.testing.assert_array_equal(np.asarray(Xd), X[idx])
    np.testing.assert_array_equal(np.asarray(yd), y[idx])


@pytest.mark.parametrize("response", [-1, 1])
def test_memory_mapped_rows_written_into_buffers_equal_a_plain_read(tmp_path, response):
    from inertia.sgmcmc import stream

    A = np.random.default_rng(2).normal(size=(50, 4)).astype(np.float32)
    np.save(tmp_path / "a.npy", A)
    src = NpySource(tmp_path / "a.npy", response)
    idx = np.array([[3, 49, 3], [0, 7, 12]])
    Xo, yo = src.take(idx, out=(stream.aligned((2, 3, 3)), stream.aligned((2, 3))))
    X, y = src.take(idx)
    pred = [c for c in range(4) if c != response % 4]
    np.testing.assert_array_equal(X, A[idx][..., pred].astype(np.float64))
    np.testing.assert_array_equal(Xo, X)
    np.testing.assert_array_equal(yo, y)
    np.testing.assert_array_equal(y, A[idx][..., response])


def test_float32_rows_are_kept_and_read_as_float64():
    X, y = _glm_data("logistic")
    X32 = X.astype(np.float32)
    src = ArraySource(X32, y)
    assert src.X is X32 and src.nbytes == X32.nbytes + y.nbytes
    Xt, _ = src.take(np.array([[4, 0], [1499, 4]]))
    assert Xt.dtype == np.float64
    np.testing.assert_array_equal(Xt, X32.astype(np.float64)[[[4, 0], [1499, 4]]])
    a, b = _fixed((X32, y), large=True), _fixed((X32.astype(np.float64), y), large=True)
    np.testing.assert_array_equal(a.draws, b.draws)


def test_parquet_and_csv_sources_read_in_row_groups(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    X, y = _glm_data("poisson", n=700)
    table = pa.table({"a": X[:, 0], "resp": y, "b": X[:, 1], "c": X[:, 2]})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=128)
    pcsv.write_csv(table, tmp_path / "d.csv")
    for name in ("d.parquet", "d.csv"):
        src = open_source(tmp_path / name, "resp", cache_dir=tmp_path)
        assert isinstance(src, NpySource) and src.names == ["a", "b", "c"]
        Xs, ys = src.take(np.arange(700))
        np.testing.assert_array_equal(Xs, X)
        np.testing.assert_array_equal(ys, y)
    with pytest.raises(ValueError, match="no response column"):
        open_source(tmp_path / "d.parquet", "nope", cache_dir=tmp_path)


def test_separation_is_found_from_a_subsample():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 2))
    y = (X[:, 0] > 0).astype(float)
    with pytest.raises(NoEstimateError, match="separable"):
        _fixed((X, y), large=True)


def test_run_to_target_ess_meets_it(linear_problem):
    m, _ = linear_problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = calibrate(m, batch_size=32, target_ess=100, seed=0)
    dg = r.diagnostics
    assert dg.min_ess_bulk >= 100 and dg.worst_rhat <= 1.01
    assert r.settings["num_steps"] >= 100 * min(r.iat.per_coord) / 4  # ESS cannot beat the IAT


SHARDED = textwrap.dedent("""
    import json, numpy as np, jax
    import inertia.config
    inertia.config.enable_x64()  # building blocks called directly, outside the entry points
    from jax.sharding import Mesh
    from inertia.data.sources import ArraySource
    from inertia.sgmcmc import stream
    from inertia.sgmcmc.large import large_model, offline_large
    from inertia.sgmcmc.passes import ShardedPasses
    assert len(jax.devices()) == 4
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1003, 3))  # not a multiple of 4 devices x chunk: padded rows
    y = (rng.random(1003) < 1 / (1 + np.exp(-X @ np.array([0.5, -0.3, 0.2])))).astype(float)
    lm = large_model("logistic", ArraySource(X, y), intercept=True, prior_precision=0.1)
    sh = ShardedPasses((X, y), Mesh(np.array(jax.devices()), ("data",)), kind="logistic",
                       params=(), intercept=True, chunk=64)
    assert len(sh.X.sharding.device_set) == 4
    out = {}
    for key, ps in (("one", None), ("four", sh)):
        c = offline_large(lm, passes=ps, quad_rows=None, chunk=64)
        lam = 0.2 * c.J_inv * 32 / 1003
        kw = dict(Lambda=lam, batch_size=32, temperature=1003.0)
        run = stream.DeviceRunner(lm, ps, **kw) if ps is not None else stream.SourceRunner(lm, **kw)
        states = stream.init_states(np.tile(c.theta_hat, (2, 1)))
        _, draws = run.advance(jax.random.key(1), states, 50, thin=4)
        out[key] = dict(theta=c.theta_hat.tolist(), J=c.J.tolist(), I=c.I.tolist(),
                        K=c.quad_matrix().tolist(), draws=draws.tolist())
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_sharded_path_equals_one_device_on_four_host_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    one, four = res["one"], res["four"]
    for k in ("theta", "J", "I", "K"):
        assert _rel(four[k], np.array(one[k])) < 1e-12, k
    d1, d4 = np.array(one["draws"]), np.array(four["draws"])
    assert np.max(np.abs(d4 - d1)) < 1e-10 * np.max(np.abs(d1))


def test_cli_data_file_without_steps(tmp_path):
    import argparse

    from inertia.cli._parsers import add_calibrate

    X, y = _glm_data("logistic", n=1200, d=2)
    np.save(tmp_path / "d.npy", np.column_stack([X, y]))
    p = argparse.ArgumentParser(prog="inertia")
    add_calibrate(p.add_subparsers(dest="command"))
    out = tmp_path / "r.json"
    args = p.parse_args(["calibrate", "--data", str(tmp_path / "d.npy"), "--model", "logistic",
                         "--batch-size", "32", "--target-ess", "100", "--json", str(out)])
    assert args.func(args) == 0
    js = json.loads(out.read_text())
    assert js["parameters"] == ["(intercept)", "x0", "x1"]
    assert js["settings"]["engine"] == "chunked" and js["settings"]["target_ess"] == 100
    assert js["diagnostics"]["min_ess_bulk"] >= 100 and js["diagnostics"]["max_rhat"] <= 1.01
    with pytest.raises(ValueError, match="exactly one of --csv"):
        args = p.parse_args(["calibrate", "--model", "logistic", "--batch-size", "32"])
        args.func(args)


DISTRIBUTED = textwrap.dedent("""
    import json, sys, warnings, numpy as np, jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    port, pid, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if pid >= 0:
        jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=pid)
    import inertia
    from inertia.sgmcmc import calibrate
    warnings.simplefilter("ignore")
    r = calibrate("logistic", path, batch_size=32, num_steps=300, intercept=True, num_chains=2,
                  devices="all" if pid >= 0 else None)
    print(json.dumps(dict(devices=len(jax.devices()), theta=r.theta_hat.tolist(),
                          draws=r.draws.tolist())), flush=True)
    if pid >= 0:
        jax.distributed.shutdown()
""")


@pytest.mark.skipif(not os.environ.get("INERTIA_TEST_DISTRIBUTED"),
                    reason="minutes of CPU (gloo polls); set INERTIA_TEST_DISTRIBUTED=1")
def test_two_jax_distributed_processes_equal_one(tmp_path):
    """Two processes x 2 host devices under jax.distributed (gloo) give the one-process draws."""
    import socket

    X, y = _glm_data("logistic", n=1001)
    path = tmp_path / "d.npy"
    np.save(path, np.column_stack([X, y]))
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-c", DISTRIBUTED, str(port)]
    procs = [subprocess.Popen(cmd + [str(i), str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
             for i in (0, 1)]
    single = subprocess.run(cmd + ["-1", str(path)], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=300)
    outs = [p.communicate(timeout=300) for p in procs]
    if any(p.returncode for p in procs) and any("gloo" in e.lower() and "not" in e.lower()
                                               for _, e in outs):
        pytest.skip("this jaxlib has no gloo CPU collectives")
    assert all(p.returncode == 0 for p in procs), outs[0][1][-2000:]
    assert single.returncode == 0, single.stderr[-2000:]
    one = json.loads(single.stdout.strip().splitlines()[-1])
    for out, _ in outs:
        res = json.loads(out.strip().splitlines()[-1])
        assert res["devices"] == 4
        assert _rel(res["theta"], np.array(one["theta"])) < 1e-12
        d = np.array(one["draws"])
        assert np.max(np.abs(np.array(res["draws"]) - d)) < 1e-10 * np.max(np.abs(d))
