"""Scale: the Ray backend equals the local one on a small grid; the device-sharded seed batch
equals the single-device run."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from reproductions import _runner

FIT = textwrap.dedent("""
    import json, sys
    import jax, numpy as np
    import inertia
    from inertia import vi
    from inertia.targets import kappa_family
    res = vi.fit(kappa_family(4, 50.0), "paired-proj", batch_size=2, num_steps=120, seed=[0, 1, 2, 3],
                 checkpoint_every=40)
    json.dump({"devices": jax.device_count(), "mean": np.asarray(res.mean).tolist(),
               "cov": np.asarray(res.cov).tolist(), "gap": np.asarray(res.history["gap"]).tolist()},
              sys.stdout)
""")


def _cell(kappa, seeds):
    def run():
        from inertia import vi
        from inertia.targets import kappa_family

        res = vi.fit(kappa_family(3, kappa), "paired-proj", batch_size=2, num_steps=60,
                     seed=seeds, checkpoint_every=20)
        return {"gap": res.history["gap"], "mean": res.mean, "f_star": res.f_star}

    return run


def _grid():
    return [(_runner.cell_key(kappa=k, seeds=f"{s[0]}-{s[-1]}"), _cell(k, s))
            for k, s in ((10.0, [0, 1]), (10.0, [2, 3]), (100.0, [0, 1]))]


def test_ray_backend_equals_local(tmp_path):
    ray = pytest.importorskip("ray")
    local = _runner.run_cells(_runner.CellStore(tmp_path / "local"), _grid(), "local", quiet=True)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        _runner.configure("ray")
        store = _runner.CellStore(tmp_path / "ray")
        remote = _runner.run_cells(store, _grid(), "ray", quiet=True)
        assert store.computed == 3 and remote == local  # bit-identical floats, same keys
        for key in local:  # every cell was saved as it finished, with the same content
            assert json.loads((tmp_path / "ray" / f"{key}.json").read_text()) == \
                json.loads((tmp_path / "local" / f"{key}.json").read_text())
        again = _runner.run_cells(store, _grid(), "ray", quiet=True)  # resumes: nothing recomputed
        assert again == local and store.reused == 3 and store.computed == 3
    finally:
        _runner.configure("local")
        ray.shutdown()


def _run_fit(env_extra):
    env = dict(os.environ, **env_extra)
    out = subprocess.run([sys.executable, "-c", FIT], env=env, capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(out.stdout)


def test_sharded_equals_unsharded():
    flags = os.environ.get("XLA_FLAGS", "")
    two = _run_fit({"XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count=2".strip()})
    import jax

    from inertia import vi
    from inertia.targets import kappa_family

    assert two["devices"] == 2
    res = vi.fit(kappa_family(4, 50.0), "paired-proj", batch_size=2, num_steps=120,
                 seed=[0, 1, 2, 3], checkpoint_every=40)
    if jax.device_count() == 1:  # the usual case: compare sharded (subprocess) with unsharded
        np.testing.assert_allclose(two["mean"], res.mean, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(two["cov"], res.cov, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(two["gap"], res.history["gap"], rtol=1e-9, atol=1e-13)
    gaps = np.asarray(two["gap"])
    assert gaps.shape == (4, 4) and np.all(gaps[-1] < gaps[0])
