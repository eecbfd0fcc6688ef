"""`inertia.load` on anything but a saved result names the file and what it is: a folder, an
empty, truncated, gzip, netCDF-3 or JSON file, a netCDF file inertia did not write, and a saved
file whose inertia attribute was edited."""
import gzip
import json

import numpy as np
import pytest

az = pytest.importorskip("arviz")
xr = pytest.importorskip("xarray")

import inertia  # noqa: E402
from inertia.results.store import save  # noqa: E402


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A file as `res.save` writes it (an InferenceData with one inertia attribute)."""
    from inertia.results import idata as _id

    path = tmp_path_factory.mktemp("saved") / "r.nc"
    obj = az.from_dict(posterior={"x": np.arange(10.0).reshape(2, 5)})
    obj.posterior.attrs[_id.ATTR_PREFIX + "kind"] = json.dumps("sample")
    save(obj, path)
    return path


def test_a_saved_file_loads(saved):
    assert inertia.load(saved).kind == "sample"


def _make(kind, tmp_path, saved):
    p = tmp_path / f"{kind}.nc"
    data = saved.read_bytes()
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "truncated":
        p.write_bytes(data[: len(data) // 3])
    elif kind == "gzip":
        p.write_bytes(gzip.compress(data))
    elif kind == "json":
        p.write_text(json.dumps({"mean": [0.1]}))
    elif kind == "netcdf3":
        xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(p, format="NETCDF3_64BIT",
                                                          engine="scipy")
    elif kind == "plain-netcdf4":
        xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(p, engine="h5netcdf")
    elif kind == "text":
        p.write_text("chain,draw,x\n0,0,1.0\n")
    elif kind == "folder":
        p.mkdir()
    return p


CASES = {"empty": "is empty", "truncated": "damaged or truncated", "gzip": "gzip-compressed",
         "json": "is a JSON file", "netcdf3": "netCDF-3", "text": "is not a netCDF file",
         "plain-netcdf4": "not a result saved by inertia", "folder": "is a folder"}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_load_names_the_file_and_what_it_is(kind, tmp_path, saved):
    if kind == "netcdf3":
        pytest.importorskip("scipy")
    p = _make(kind, tmp_path, saved)
    with pytest.raises((ValueError, OSError)) as err:
        inertia.load(p)
    assert str(p) in str(err.value) and CASES[kind] in str(err.value), str(err.value)


def test_load_an_edited_attribute(tmp_path, saved):
    from inertia.results import idata as _id

    obj = az.from_netcdf(saved)
    obj.posterior.attrs[_id.ATTR_PREFIX + "kind"] = '{"sample'  # an edit that breaks the JSON
    p = tmp_path / "edited.nc"
    obj.to_netcdf(str(p))
    with pytest.raises(ValueError, match="attributes were edited") as err:
        inertia.load(p)
    assert str(p) in str(err.value)
