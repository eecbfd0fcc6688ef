"""Dataset loaders: cache files with checksums, offline errors, download path, standardisation."""
import gzip
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from inertia.data import (DATASETS, DatasetError, available, cache_dir, content_checksum,
                          default_cache_dir, load_dataset, packaged_file, standardize_predictors,
                          to_pm1)
from inertia.data import _cache, datasets

CACHE = cache_dir()  # $INERTIA_DATA_DIR (or the user cache), read before any test patches it
CC_BY = ("sonar", "ionosphere", "banknote", "german")


def raw_bytes(name):
    """The data set's file bytes: from the cache folder, else the packaged copy, else skip."""
    spec = DATASETS[name]
    if (CACHE / spec.filename).is_file():
        return (CACHE / spec.filename).read_bytes()
    if packaged_file(name) is not None:
        return gzip.decompress(packaged_file(name).read_bytes())
    pytest.skip(f"{spec.filename} is not in the cache folder {CACHE}: set INERTIA_DATA_DIR to a "
                "folder holding it (docs/data.md) to run this test")

# name -> (n, p after standardisation's zero-variance drop, label counts or None)
EXPECTED = {
    "sonar": (208, 60, 111), "ionosphere": (351, 33, 225), "wdbc": (569, 30, 357),
    "pima": (768, 8, 268), "banknote": (1372, 4, 610), "german": (1000, 20, 700),
    "boston": (506, 12, None), "diabetes": (442, 10, None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_all_datasets_load_with_shapes(require_data, name):
    require_data(name)
    n, p, ones = EXPECTED[name]
    ds = load_dataset(name)
    assert ds.name == name and ds.X.shape == (n, p) and ds.X.dtype == np.float64
    assert ds.y.shape == (n,) and len(ds.feature_names) == p
    if ones is not None:
        assert set(np.unique(ds.y)) == {0, 1} and int(ds.y.sum()) == ones
    spec = DATASETS[name]
    if spec.filename:
        assert hashlib.sha256(raw_bytes(name)).hexdigest() == spec.sha256


def test_cc_by_sets_ship_compressed_and_load_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("INERTIA_DATA_DIR", str(tmp_path))  # an empty cache
    monkeypatch.setenv("INERTIA_OFFLINE", "1")
    for name in CC_BY:
        spec = DATASETS[name]
        assert spec.packaged and "CC BY 4.0" in spec.origin and "doi:" in spec.citation
        res = packaged_file(name)
        assert res.name == spec.filename + ".gz"
        data = gzip.decompress(res.read_bytes())
        assert hashlib.sha256(data).hexdigest() == spec.sha256
        assert len(res.read_bytes()) < 0.5 * len(data)
        assert available(name) and load_dataset(name).X.shape[0] == spec.n
    assert not list(tmp_path.iterdir())
    for name in ("pima", "boston"):  # no clear licence: never shipped
        assert not DATASETS[name].packaged and packaged_file(name) is None
    shipped = {p.name for p in (Path(datasets.__file__).parent / "files").iterdir()}
    assert {f for f in shipped if f.endswith(".gz")} == {DATASETS[n].filename + ".gz"
                                                         for n in CC_BY}


def test_cache_file_takes_precedence_and_is_verified(tmp_path):
    bad = raw_bytes("sonar").replace(b"0.0200", b"0.0201", 1)
    (tmp_path / "sonar.csv").write_bytes(bad)
    with pytest.raises(DatasetError, match="checksum mismatch"):
        load_dataset("sonar", cache_dir=tmp_path)


def test_label_orientation_and_columns():
    first = raw_bytes("sonar").decode().splitlines()[0].rsplit(",", 1)[1]
    assert load_dataset("sonar").y[0] == (1 if first == "M" else 0)
    iono = load_dataset("ionosphere")
    assert "a02" not in iono.feature_names  # constant-zero column dropped
    assert load_dataset("ionosphere", standardize=False).X.shape == (351, 34)
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("mnist")


@pytest.mark.needs_data("boston")
def test_boston_columns():
    boston = load_dataset("boston")
    assert "B" not in boston.feature_names and "CHAS" in boston.feature_names
    assert load_dataset("boston", drop=("CHAS",)).X.shape == (506, 11)
    assert load_dataset("boston", include_b=True, drop=("CHAS",)).X.shape == (506, 12)
    raw = load_dataset("boston", standardize=False, include_b=True)
    assert raw.X[0, 0] == 0.00632 and raw.y[0] == 24.0
    with pytest.raises(DatasetError, match="cannot drop"):
        load_dataset("boston", drop=("NOPE",))


def test_standardisation_properties():
    raw = load_dataset("banknote", standardize=False)
    Z = load_dataset("banknote").X
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0, ddof=0), 1.0, rtol=1e-12)
    # Affine per column: Z = (X - mean) / std_pop, exactly.
    np.testing.assert_allclose(Z, (raw.X - raw.X.mean(0)) / raw.X.std(0), rtol=0, atol=1e-12)
    X = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, 2.0], [5.0, 5.0, 8.0]])
    S, names = standardize_predictors(X, ["a", "b", "c"])
    assert names == ["a", "c"]
    np.testing.assert_allclose(S[:, 0], [-np.sqrt(1.5), 0.0, np.sqrt(1.5)], atol=1e-15)
    np.testing.assert_allclose(S[:, 1], [-1 / np.sqrt(2), -1 / np.sqrt(2), np.sqrt(2)], atol=1e-15)


def test_to_pm1():
    np.testing.assert_array_equal(to_pm1(np.array([0, 1, 1])), [-1.0, 1.0, 1.0])
    np.testing.assert_array_equal(to_pm1(np.array([-1, 1])), [-1.0, 1.0])
    with pytest.raises(DatasetError, match="labels"):
        to_pm1(np.array([0, 2]))


def test_offline_empty_cache_gives_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("INERTIA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("INERTIA_OFFLINE", "1")
    monkeypatch.setattr(_cache, "fetch", lambda *a, **k: pytest.fail("must not touch the network"))
    with pytest.raises(DatasetError) as err:
        load_dataset("pima")
    msg = str(err.value)
    assert "pima-indians-diabetes.csv" in msg and "INERTIA_DATA_DIR" in msg
    assert str(tmp_path) in msg and "export INERTIA_DATA_DIR=" in msg
    assert "INERTIA_OFFLINE=1 is set" in msg


def test_missing_file_message_blames_only_what_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv("INERTIA_DATA_DIR", raising=False)
    monkeypatch.delenv("INERTIA_OFFLINE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(DatasetError) as err:
        load_dataset("pima")  # download allowed; the suite's no-network fixture makes it fail
    msg = str(err.value)
    assert "download failed" in msg and "INERTIA_OFFLINE" not in msg
    assert "$INERTIA_DATA_DIR is not set" in msg
    with pytest.raises(DatasetError) as err:
        load_dataset("pima", download=False)
    assert "download=False" in str(err.value) and "INERTIA_OFFLINE" not in str(err.value)


def test_no_network_fails_fast_with_clear_error(tmp_path, monkeypatch):
    def no_network(url, timeout=None):
        raise _cache.urllib.error.URLError(OSError(-2, "Name or service not known"))

    monkeypatch.setenv("INERTIA_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("INERTIA_OFFLINE", raising=False)
    monkeypatch.setattr(_cache, "fetch", no_network)
    with pytest.raises(DatasetError) as err:
        load_dataset("boston")
    msg = str(err.value)
    assert "boston.csv" in msg and "INERTIA_DATA_DIR" in msg and "download failed" in msg
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_default_cache_dir_honours_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "inertia"
    monkeypatch.delenv("INERTIA_DATA_DIR", raising=False)
    assert _cache.cache_dir() == tmp_path / "inertia"


def test_checksum_mismatch_is_reported(tmp_path):
    bad = raw_bytes("banknote").decode().replace("3.6216", "3.6217", 1)
    (tmp_path / "banknote_authentication.csv").write_text(bad)
    with pytest.raises(DatasetError, match="checksum mismatch"):
        load_dataset("banknote", cache_dir=tmp_path, download=False)


def _uci_german(text):
    """Rebuild UCI's symbolic german.data from the integer-coded cache file (for the converter)."""
    lines = text.splitlines()[1:]
    numeric = {2, 5, 8, 11, 13, 16, 18}
    out = []
    for ln in lines:
        v = ln.split(";")
        toks = [v[k] if k in numeric else f"A{k}{v[k]}" for k in range(1, 21)]
        out.append(" ".join(toks + ["1" if v[0] == "1" else "2"]))
    return ("\n".join(out[::-1]) + "\n").encode()  # reversed: row order must not matter


@pytest.mark.parametrize("name", ["sonar", "german", "boston"])
def test_download_path_converts_verifies_and_stores(tmp_path, monkeypatch, name):
    spec = DATASETS[name]
    cached = raw_bytes(name).decode()
    ref = load_dataset(name, cache_dir=CACHE, standardize=False, download=False)
    if name == "sonar":  # UCI file: same content, other line endings and number formatting
        upstream = "\r\n".join(",".join(f"{float(t):g}" if t not in "MR" else t
                                        for t in ln.split(","))
                               for ln in cached.splitlines()).encode()
    elif name == "german":
        upstream = _uci_german(cached)
    else:  # UCI housing.data: whitespace separated, no header
        upstream = "\n".join("  ".join(ln.split(",")) for ln in
                             cached.splitlines()[1:]).encode()
    urls = []
    monkeypatch.setattr(_cache, "fetch", lambda url, timeout=None: urls.append(url) or upstream)
    monkeypatch.delenv("INERTIA_OFFLINE", raising=False)
    # (the CC BY sets ship with the package, so call the download path directly)
    datasets._download(spec, tmp_path, "test")
    ds = load_dataset(name, cache_dir=tmp_path, standardize=False)
    assert urls == [spec.sources[0][0]] and (tmp_path / spec.filename).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [spec.filename]
    assert content_checksum(ds.X, ds.y) == content_checksum(ref.X, ref.y)
    if name != "german":
        np.testing.assert_array_equal(ds.X, ref.X)
    # Second load is from the cache: no further request.
    load_dataset(name, cache_dir=tmp_path)
    assert len(urls) == 1


def test_download_with_wrong_content_is_rejected(tmp_path, monkeypatch):
    monkeypatch.setattr(_cache, "fetch", lambda url, timeout=None: b"1,2,3,4,0\n5,6,7,8,1\n")
    with pytest.raises(DatasetError, match="checksum mismatch"):
        datasets._download(DATASETS["banknote"], tmp_path, "test")
    assert not list(tmp_path.iterdir())


def test_registry_is_complete():
    assert set(DATASETS) == set(EXPECTED)
    for spec in DATASETS.values():
        assert (spec.filename is None) == (spec.package_loader is not None)
        if spec.filename:
            assert len(spec.sha256) == 64 and len(spec.content_sha256) == 64 and spec.sources
        assert spec.packaged == (spec.name in CC_BY)
    assert datasets.Dataset._fields == ("name", "X", "y", "feature_names", "target_name")
