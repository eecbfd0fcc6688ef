"""Results a user can keep: ArviZ InferenceData for every result (`build`), save / load as netCDF
(`store`), posterior predictive draws (`predictive`), honest labels of unconstrained coordinates
(`labels`). Imports nothing heavy until used."""
from __future__ import annotations

from .store import load as _load


def load(path):
    """A result saved by `res.save(path)` or `inertia fit|sample --save PATH.nc`."""
    return _load(path)


__all__ = ["load"]
