"""Data files of named arrays (Stan data-JSON, .npz, Parquet) for model files: kinds kept, names
matched, errors that say where. About 3 s (one NumPyro model traced, no fit)."""
import json

import numpy as np
import pytest
from scipy import stats

from inertia.data import DatasetError
from inertia.data.named import read_json, read_named, read_npz

MODEL = """\
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def model(N, K, J, g, X, y, scale):
    b = numpyro.sample("b", dist.Normal(0.0, scale).expand([K]).to_event(1))
    a = numpyro.sample("a", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    offset = jnp.zeros(K).at[K - 1].set(1.0)  # K used as a shape
    numpyro.sample("y", dist.Normal(X @ (b + offset) + a[g], 1.0), obs=y)
"""


def _data(rng, n=12, k=3, j=4):
    return {"N": n, "K": k, "J": j, "g": rng.integers(0, j, n).tolist(),
            "X": rng.normal(size=(n, k)).tolist(), "y": rng.normal(size=n).tolist(),
            "scale": 2.5}


def test_json_kinds_follow_stan_convention(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('{"K": 5, "s": 2.0, "g": [1, 2, 3], "X": [[1, 2.5], [3, 4]], "e": [],'
                    ' "v": ["NaN", "-Inf", 1], "nest": {"m": [[1, 2], [3, 4]]}}')
    d = read_json(path)
    assert type(d["K"]) is int and d["K"] == 5
    assert type(d["s"]) is float and d["s"] == 2.0
    assert d["g"].dtype == np.int64 and d["g"].tolist() == [1, 2, 3]
    assert d["X"].dtype == np.float64 and d["X"].shape == (2, 2) and d["X"][0, 1] == 2.5
    assert d["e"].shape == (0,)
    assert np.isnan(d["v"][0]) and d["v"][1] == -np.inf and d["v"].dtype == np.float64
    assert d["nest"]["m"].dtype == np.int64 and d["nest"]["m"].shape == (2, 2)


def test_json_data_round_trips_into_a_numpyro_model_file(tmp_path):
    pytest.importorskip("numpyro")
    from inertia.targets.zoo import make_target

    rng = np.random.default_rng(3)
    data = _data(rng)
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "d.json").write_text(json.dumps(data))
    t = make_target(f"{tmp_path / 'm.py'}:model", data=str(tmp_path / "d.json"))
    assert t.dim == data["K"] + data["J"]
    x = rng.normal(size=t.dim)  # sites ravelled in sorted order: a (J), then b (K)
    a, b = x[:data["J"]], x[data["J"]:]
    X, y, g = np.asarray(data["X"]), np.asarray(data["y"]), np.asarray(data["g"])
    mean = X @ (b + np.eye(data["K"])[-1]) + a[g]
    logp = (stats.norm.logpdf(b, 0, data["scale"]).sum() + stats.norm.logpdf(a).sum()
            + stats.norm.logpdf(y, mean, 1.0).sum())
    assert float(t.potential(x)) == pytest.approx(-logp, rel=1e-12)


def test_npz_keeps_dtypes_and_scalars(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, K=np.int64(4), s=np.float32(0.5), g=np.arange(3, dtype=np.int32),
             X=np.ones((2, 3), dtype=np.float32), b=np.array([True, False]))
    d = read_named(path)
    assert type(d["K"]) is int and d["K"] == 4 and type(d["s"]) is float
    assert d["g"].dtype == np.int32 and d["X"].dtype == np.float64 and d["X"].shape == (2, 3)
    assert d["b"].dtype == bool
    np.savez(tmp_path / "o.npz", o=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DatasetError, match="o.npz.*pickled"):
        read_npz(tmp_path / "o.npz")


def test_parquet_columns_keep_integers(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"g": [1, 2, 3], "y": [0.5, 1.5, 2.5]}), tmp_path / "d.parquet")
    d = read_named(tmp_path / "d.parquet")
    assert d["g"].dtype == np.int64 and d["y"].dtype == np.float64 and d.kind == "parquet"


def test_csv_columns_stay_float(tmp_path):
    (tmp_path / "d.csv").write_text("g,y\n1,0.5\n2,1.5\n")
    d = read_named(tmp_path / "d.csv")
    assert d.kind == "csv" and d["g"].dtype == np.float64


@pytest.mark.parametrize("text, match", [
    ('{"N": 3,\n "y": [1, 2,, 3]}', r"bad\.json: not valid JSON at line 2, column 13"),
    ('[1, 2]', r"bad\.json: the file holds a JSON list"),
    ('{"X": [[1, 2], [3]]}', r"'X' is not rectangular: X\[1\] has 1 entries"),
    ('{"X": [1, [2, 3]]}', r"'X' is not rectangular"),
    ('{"f": [true, 1]}', r"f\[0\] is true; Stan data has no booleans"),
    ('{"y": [1, null]}', r"y\[1\] is null"),
    ('{"y": "abc"}', r"'y' is \"abc\", not a number"),
])
def test_malformed_json_says_where(tmp_path, text, match):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(DatasetError, match=match):
        read_json(path)


def test_missing_and_extra_names_are_named(tmp_path):
    pytest.importorskip("numpyro")
    from inertia.targets.zoo import make_target

    data = _data(np.random.default_rng(0))
    (tmp_path / "m.py").write_text(MODEL)
    lacking = {k: v for k, v in data.items() if k not in ("K", "scale")}
    lacking["scal"] = 1.0
    (tmp_path / "d.json").write_text(json.dumps(lacking))
    with pytest.raises(ValueError) as err:
        make_target(f"{tmp_path / 'm.py'}:model", data=str(tmp_path / "d.json"))
    msg = str(err.value)
    assert "model needs 'K', 'scale' (did you mean 'scal'?), which d.json lacks" in msg
    assert "d.json holds 'scal', which model does not take" in msg
    (tmp_path / "d.json").write_text(json.dumps({**data, "T": 7}))
    with pytest.raises(ValueError, match="d.json holds 'T', which model does not take"):
        make_target(f"{tmp_path / 'm.py'}:model", data=str(tmp_path / "d.json"))
