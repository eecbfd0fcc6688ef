"""Data that cannot be right, named by entry before a model is compiled: duplicate JSON keys, bare
NaN tokens, numbers beyond float64 or int64, non-finite or out-of-support observed values (NumPyro
and PyMC), keys spelt in another Unicode normal form. About 10 s (small models traced, no fit)."""
import json
import unicodedata

import numpy as np
import pytest

from inertia.data import DatasetError
from inertia.data.checks import bad_entries, int64_notes
from inertia.data.named import read_json
from inertia.targets import TargetError
from inertia.targets.zoo import make_target

Y = [-1.2, 0.3, 2.1, -0.5, 1.7, 0.2, -2.0, 0.9, 1.1, -0.4]
NORMAL = """\
import numpyro, numpyro.distributions as dist
def model(N, y):
    mu = numpyro.sample('mu', dist.Normal(0, 10))
    numpyro.sample('y', dist.Normal(mu, 1.0), obs=y)
"""
POISSON = """\
import jax.numpy as jnp, numpyro, numpyro.distributions as dist
def model(N, y):
    mu = numpyro.sample('mu', dist.Normal(0, 10))
    numpyro.sample('y', dist.Poisson(jnp.exp(mu)), obs=y)
"""


def _y_file(tmp_path, entry7, name="d.json"):
    cells = [json.dumps(v) for v in Y]
    cells[7] = entry7
    path = tmp_path / name
    path.write_text('{"N": 10, "y": [%s]}' % ", ".join(cells))
    return path


def _model(tmp_path, text, name="m.py"):
    (tmp_path / name).write_text(text)
    return f"{tmp_path / name}:model"


def test_bad_entries_names_each_entry():
    assert bad_entries("y", np.array([1.0, np.nan, 2.0])) == "y[1] = nan"
    a = np.zeros((2, 3))
    a[1, 2] = np.inf
    assert bad_entries("X", a) == "X[1, 2] = inf"
    assert bad_entries("y", np.arange(6), np.arange(6) < 1) == ("y[1] = 1, y[2] = 2, y[3] = 3 "
                                                                  "(and 2 more)")
    assert bad_entries("y", np.ones(3)) == ""
    assert "K = 1e+20" in int64_notes({"K": 1e20, "s": 1e20 + 0.5e5, "x": 3.0})
    assert int64_notes({"x": np.ones(3), "s": 2.5e300 * 0 + 1.5}) == ""


def test_duplicate_json_key_refused_by_name(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text('{"N": 10, "y": %s, "y": %s}' % (json.dumps(Y), json.dumps([v + 30 for v in Y])))
    with pytest.raises(DatasetError, match="the key 'y' appears twice"):
        read_json(path)
    path.write_text('{"a": {"b": 1, "b": 2}}')  # inside a nested object too
    with pytest.raises(DatasetError, match="the key 'b' appears twice"):
        read_json(path)


def test_bare_nan_token_refused(tmp_path):
    with pytest.raises(DatasetError, match='a bare NaN is not JSON.*"NaN"'):
        read_json(_y_file(tmp_path, "NaN"))
    with pytest.raises(DatasetError, match="a bare -Infinity is not JSON"):
        read_json(_y_file(tmp_path, "-Infinity"))


def test_number_beyond_float64_named(tmp_path):
    with pytest.raises(DatasetError, match=r"y\[7\] is a number beyond float64's range"):
        read_json(_y_file(tmp_path, "1e400"))


def test_integer_beyond_int64_named(tmp_path):
    path = tmp_path / "idx.json"
    path.write_text('{"g": [0, 1, 2, %d], "K": 3}' % 2 ** 63)
    with pytest.raises(DatasetError, match=r"g\[3\] = 9223372036854775808 is an integer beyond "
                                           "int64's range"):
        read_json(path)
    path.write_text('{"g": [0, 1, 2, %d]}' % (2 ** 63 - 1))  # the largest int64 stays an int64
    assert read_json(path)["g"].dtype == np.int64


def test_float_shape_beyond_int64_named(tmp_path):
    spec = _model(tmp_path, "import numpyro, numpyro.distributions as dist\n"
                            "def model(K, y):\n"
                            "    mu = numpyro.sample('mu', dist.Normal(0, 1).expand([K]))\n"
                            "    numpyro.sample('y', dist.Normal(mu[0], 1.0), obs=y)\n")
    (tmp_path / "k.json").write_text('{"K": 1e20, "y": 0.5}')
    with pytest.raises(TargetError, match=r"K = 1e\+20: beyond int64's range"):
        make_target(spec, data=str(tmp_path / "k.json"))


@pytest.mark.parametrize("entry", ['"NaN"', '"-Inf"'])
def test_non_finite_observed_entry_named_before_tracing(tmp_path, entry):
    spec = _model(tmp_path, NORMAL)
    with pytest.raises(TargetError, match=r"observed site 'y' are not finite: y\[7\] = "):
        make_target(spec, data=str(_y_file(tmp_path, entry)))


def test_out_of_support_observed_entry_named(tmp_path):
    spec = _model(tmp_path, POISSON)
    path = tmp_path / "c.json"
    counts = [3, 1, 0, 2, 5, 1, 0, -1, 1, 4]
    path.write_text(json.dumps({"N": 10, "y": counts}))
    with pytest.raises(TargetError, match=r"outside the support of its Poisson.*y\[7\] = -1"):
        make_target(spec, data=str(path))
    counts[7] = 2  # the same model on valid counts builds
    path.write_text(json.dumps({"N": 10, "y": counts}))
    assert make_target(spec, data=str(path)).dim == 1


def test_nfd_key_matches_nfc_argument(tmp_path):
    nfc = unicodedata.normalize("NFC", "é")
    nfd = unicodedata.normalize("NFD", "é")
    assert nfc != nfd
    spec = _model(tmp_path, NORMAL.replace("(N, y)", f"({nfc})").replace("obs=y", f"obs={nfc}"))
    path = tmp_path / "nfd.json"
    path.write_text(json.dumps({nfd: Y}, ensure_ascii=False), encoding="utf-8")
    t = make_target(spec, data=str(path))
    assert t.dim == 1
    path.write_text(json.dumps({nfd: Y, nfc: Y}, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DatasetError, match="same argument once Unicode-normalised"):
        read_json(path)


# --- PyMC ------------------------------------------------------------------------------------

PYMC_FROM = """\
from pymc import Model, Normal
def model(y):
    with Model() as m:
        mu = Normal('mu', 0, 1)
        Normal('y', mu, 1, observed=y)
    return m
"""
PYMC_AND_NUMPYRO = """\
import pymc as pm
import numpyro
def model(y):
    with pm.Model() as m:
        mu = pm.Normal('mu', 0, 1)
        pm.Normal('y', mu, 1, observed=y)
    return m
"""
PYMC_POISSON = """\
import pymc as pm
def model(y):
    with pm.Model() as m:
        mu = pm.Normal('mu', 0, 1)
        pm.Poisson('y', pm.math.exp(mu), observed=y)
    return m
"""
PYMC_RAISES = """\
import pymc as pm
def model(y):
    with pm.Model() as m:
        mu = pm.Normal('mu', 0, 1)
        pm.Normal('mu', mu, 1, observed=y)
    return m
"""


@pytest.fixture
def y_json(tmp_path):
    path = tmp_path / "y.json"
    path.write_text(json.dumps({"y": Y}))
    return str(path)


@pytest.mark.parametrize("text", [PYMC_FROM, PYMC_AND_NUMPYRO], ids=["from-import", "also-numpyro"])
def test_pymc_file_recognised_by_what_it_returns(tmp_path, y_json, text):
    pytest.importorskip("pymc")
    t = make_target(_model(tmp_path, text), data=y_json)
    assert "PyMC model" in t.name and t.dim == 1


def test_pymc_error_reported_as_pymcs(tmp_path, y_json):
    pytest.importorskip("pymc")
    with pytest.raises(TargetError, match="building the PyMC model model.*PyMC's error"):
        make_target(_model(tmp_path, PYMC_RAISES), data=y_json)


def test_pymc_data_outside_support_named_as_pymcs(tmp_path):
    pytest.importorskip("pymc")
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"y": [3, 1, 0, 2, 5, 1, 0, -1, 1, 4]}))
    with pytest.raises(TargetError, match=r"^PyMC: the log likelihood of observed 'y'.*y\[7\] = -1"):
        make_target(_model(tmp_path, PYMC_POISSON), data=str(path))


def test_pymc_float32_refused_in_command_terms(tmp_path, y_json):
    pytest.importorskip("pymc")
    t = make_target(_model(tmp_path, PYMC_FROM), data=y_json)
    with pytest.raises(TargetError, match="PyMC model runs in float64 only.*--dtype float32"):
        t.astype("float32")
