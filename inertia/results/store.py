"""Save a result as netCDF and load it back as a `LoadedResult` with the same summary and table."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..verdict import Verdict
from . import idata as _id
from .base import Result, save
from .predictive import draw
from ..factor_cov import FactorCovariance


def load(path) -> "LoadedResult":
    """A result written by `save`; anything else raises an error naming the file and what it is."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a saved result (give the .nc file "
                                "written by res.save or --save)")
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    _check_signature(path)
    az = _id.arviz()
    try:
        if _id._major(az) >= 1:
            from xarray import open_datatree

            obj = open_datatree(path).load()
        else:
            obj = az.from_netcdf(path)
            for g in obj.groups():  # read into memory: the file is closed and may be rewritten
                getattr(obj, g).load()
    except (OSError, ValueError, RuntimeError, KeyError) as err:
        raise ValueError(f"{path}: cannot be read as netCDF ({type(err).__name__}: {err}); the "
                         "file is damaged or truncated: save the result again") from None
    groups = list(obj.children) if hasattr(obj, "children") else list(obj.groups())
    if "posterior" not in groups:
        raise ValueError(f"{path} is a netCDF file but not a result saved by inertia (it has no "
                         "posterior group)")
    try:
        attrs = _id.read_attrs(obj)
    except ValueError as err:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"{path} was saved by inertia but its inertia attributes were edited and "
                         f"no longer read as JSON ({err}); save the result again") from None
    if "kind" not in attrs:
        raise ValueError(f"{path} was not written by inertia (no inertia attributes)")
    return LoadedResult(obj, attrs, path)


_SIGNATURES = ((b"\x89HDF\r\n\x1a\n", None), (b"CDF\x01", "netCDF-3"), (b"CDF\x02", "netCDF-3"),
               (b"\x1f\x8b", "gzip-compressed (decompress it first: gunzip)"),
               (b"PK\x03\x04", "a zip archive (unzip it first)"))


def _check_signature(path: Path) -> None:
    """ValueError naming `path` and what it is, unless it starts as a netCDF-4 (HDF5) file."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if not head:
        raise ValueError(f"{path} is empty (0 bytes), not a saved result; save the result again")
    for magic, what in _SIGNATURES:
        if head.startswith(magic):
            if what is None:
                return
            if what == "netCDF-3":
                raise ValueError(f"{path} is a netCDF-3 file, not a result saved by inertia "
                                 "(inertia saves netCDF-4)")
            raise ValueError(f"{path} is {what}, not a saved result")
    if head.lstrip()[:1] in (b"{", b"["):
        raise ValueError(f"{path} is a JSON file (e.g. the --json output), not a saved result; "
                         "inertia.load reads the .nc file of res.save or --save")
    raise ValueError(f"{path} is not a netCDF file (it starts {head!r}), so not a result saved by "
                     "inertia; inertia.load reads the .nc file of res.save or --save")


class LoadedResult(Result):
    """A saved fit, sample or calibration: summary, table, to_arviz, verdict, settings, mean, cov, names."""

    def __init__(self, idata, attrs: dict, path=None):
        self._idata, self._attrs, self.path = idata, attrs, path

    @property
    def kind(self) -> str:
        """"fit", "sample" or "calibration"."""
        return self._attrs["kind"]

    @property
    def settings(self) -> dict:
        return self._attrs.get("settings") or {}

    @property
    def verdict(self) -> Verdict:
        """The saved run's `inertia.verdict.Verdict`."""
        return Verdict.from_dict(self._attrs["verdict"])

    def _flat(self) -> dict:
        return self._attrs.get("gaussian") or self._attrs.get("unconstrained") or {}

    @property
    def mean(self) -> np.ndarray:
        """Mean of the run in its unconstrained coordinates (`names`)."""
        return np.asarray(self._flat().get("mean"))

    @property
    def cov(self) -> np.ndarray:
        """Covariance in the unconstrained coordinates (a `FactorCovariance` for the factor family)."""
        cov = self._flat().get("cov")
        if isinstance(cov, dict) and "B" in cov:
            return FactorCovariance.from_dict(cov)
        return np.asarray(cov)

    @property
    def names(self) -> list:
        """Labels of the unconstrained coordinates of `mean` and `cov`."""
        return list(self._flat().get("names") or [])

    @property
    def history(self) -> list:
        """A fit's checkpoints (step, objective estimate, gradients, seconds)."""
        return self._attrs.get("history") or []

    def summary(self) -> list:
        """The rows the run printed (constrained, named)."""
        return [dict(r) for r in self._attrs.get("summary") or []]

    def table(self, max_rows=None) -> str:
        """The table the run printed."""
        return self._attrs.get("table", "")

    def to_arviz(self):
        """The saved InferenceData (posterior, sample_stats, log_likelihood, observed_data)."""
        return self._idata

    def to_dict(self) -> dict:
        """JSON-ready: the summary rows, verdict, settings and unconstrained moments."""
        return {"kind": self.kind, "summary": self.summary(), "verdict": self.verdict.to_dict(),
                "settings": self.settings, **self._flat()}

    def predictive(self, rng_key, model, *model_args, num_samples=None, return_sites=None,
                   **model_kwargs) -> dict:
        """Posterior predictive draws by site of a NumPyro `model` at each saved posterior draw."""
        post = self._idata["posterior"] if _id._major(_id.arviz()) >= 1 else self._idata.posterior
        sites = {k: post[k].values for k in post.data_vars}
        return draw(model, sites, rng_key, model_args, model_kwargs, num_samples, return_sites)

    def _shape(self) -> str:
        post = self._idata["posterior"] if _id._major(_id.arviz()) >= 1 else self._idata.posterior
        return (f"{' '.join(filter(None, [self.kind, self.settings.get('method') or '']))}: "
                f"{len(list(post.data_vars))} variables, chain x draw "
                f"{post.sizes.get('chain', '?')} x {post.sizes.get('draw', '?')}"
                + ("" if self.path is None else f", {self.path}"))


__all__ = ["save", "load", "LoadedResult"]
