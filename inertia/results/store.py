"""Save a result as netCDF (its InferenceData, with the run's settings, verdict and summary in the
attributes) and load it back as a `LoadedResult` with the same summary, table and to_arviz()."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from . import idata as _id


def save(res, path, **kw) -> Path:
    """Write `res.to_arviz(**kw)` (or an InferenceData) to `path` as netCDF; returns the path.
    Written to a temporary file in the same folder and moved into place (no half-written file)."""
    from .build import to_arviz

    obj = res if _is_arviz(res) else (res.to_arviz() if isinstance(res, LoadedResult)
                                      else to_arviz(res, **kw))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".nc", dir=path.parent)
    os.close(fd)
    try:
        obj.to_netcdf(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load(path) -> "LoadedResult":
    """A result written by `save` (`res.save(path)`, `inertia fit|sample --save PATH.nc`)."""
    az = _id.arviz()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if _id._major(az) >= 1:
        from xarray import open_datatree

        obj = open_datatree(path).load()
    else:
        obj = az.from_netcdf(path)
        for g in obj.groups():  # read into memory: the file is closed and may be rewritten
            getattr(obj, g).load()
    attrs = _id.read_attrs(obj)
    if "kind" not in attrs:
        raise ValueError(f"{path} was not written by inertia (no inertia attributes)")
    return LoadedResult(obj, attrs, path)


def _is_arviz(obj) -> bool:
    return type(obj).__name__ in ("InferenceData", "DataTree")


class LoadedResult:
    """A saved fit, sample or calibration: `summary()`, `table()`, `to_arviz()`, `verdict`,
    `converged`, `settings`, and the unconstrained `mean`, `cov` and `names` of the run."""

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
    def verdict(self):
        """The saved run's `inertia.verdict.Verdict`."""
        from ..verdict import Verdict

        return Verdict.from_dict(self._attrs.get("verdict"))

    @property
    def converged(self) -> bool:
        """`verdict.converged`."""
        return self.verdict.converged

    def _flat(self) -> dict:
        return self._attrs.get("gaussian") or self._attrs.get("unconstrained") or {}

    @property
    def mean(self) -> np.ndarray:
        """Mean of the run in its unconstrained coordinates (`names`)."""
        return np.asarray(self._flat().get("mean"))

    @property
    def cov(self) -> np.ndarray:
        return np.asarray(self._flat().get("cov"))

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

    def table(self) -> str:
        """The table the run printed."""
        return self._attrs.get("table", "")

    def to_arviz(self):
        """The saved InferenceData (posterior, sample_stats, log_likelihood, observed_data)."""
        return self._idata

    def to_dict(self) -> dict:
        """JSON-ready: the summary rows, verdict, settings and unconstrained moments."""
        return {"kind": self.kind, "summary": self.summary(), "verdict": self.verdict.to_dict(),
                "settings": self.settings, **self._flat()}

    def save(self, path) -> Path:
        return save(self, path)

    def predictive(self, rng_key, model, *model_args, num_samples=None, return_sites=None,
                   **model_kwargs) -> dict:
        """Posterior predictive draws by site of a NumPyro `model` (the file keeps the draws, not
        the model) called with `model_args` at each saved posterior draw (NumPyro's Predictive)."""
        from .predictive import draw

        post = self._idata["posterior"] if _id._major(_id.arviz()) >= 1 else self._idata.posterior
        sites = {k: post[k].values for k in post.data_vars}
        return draw(model, sites, rng_key, model_args, model_kwargs, num_samples, return_sites)

    def __repr__(self) -> str:
        post = self._idata["posterior"] if _id._major(_id.arviz()) >= 1 else self._idata.posterior
        shape = f"{post.sizes.get('chain', '?')} x {post.sizes.get('draw', '?')}"
        method = self.settings.get("method") or ""
        conv = "converged" if self.converged else "NOT CONVERGED"
        return (f"<LoadedResult {' '.join(filter(None, [self.kind, method]))}: "
                f"{len(list(post.data_vars))} variables, "
                f"chain x draw {shape}, {conv}{'' if self.path is None else ', ' + str(self.path)}>")


__all__ = ["save", "load", "LoadedResult"]
