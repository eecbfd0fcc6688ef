"""The nutpie peer of the posterior suite (benchmarks/posteriors/samplers.run_nutpie) on the
exact Gaussian `scaled-linear`: its draws have the exact means (within 4 MCSE) and its gradient
count is nutpie's leapfrog steps. About 10 s; skipped without nutpie (the peers extra)."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nutpie", reason="the nutpie peer needs the optional peers extra "
                                     "(pip install 'inertia[peers]')")

import inertia  # noqa: E402,F401

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "posteriors"))
from models import load  # noqa: E402
from samplers import run_nutpie, summarise  # noqa: E402


def test_nutpie_peer_on_an_exact_gaussian():
    post = load("scaled-linear")
    res = run_nutpie(post, seed=0, num_samples=500, max_samples=2000)
    s = summarise(post, res["draws"])
    for k, m in post.exact["mean"].items():
        assert abs(s[k]["mean"] - m) < 4 * s[k]["mcse_mean"], (k, s[k], m)
        assert abs(s[k]["sd"] / post.exact["sd"][k] - 1) < 0.15, (k, s[k])
    d = res["detail"]
    assert res["grads"] >= d["warmup_grads"] + d["sampling_grads"] > 4 * d["num_samples"]
    assert res["draws"].dtype == np.float64
