"""Kernel registry: method name -> `Method`, each naming its warm-up scheme (docs/howto/extend.md)."""
from __future__ import annotations

from . import adjusted_hfhr as _adjusted
from . import hfhr as _hfhr
from . import klmc as _klmc
from . import rmm as _rmm
from . import ula as _ula
from .base import (Info, KineticState, LangevinState, Method, OUCoefficients, Params,
                   SamplingAlgorithm, ou_coefficients)
from .adjusted_hfhr import ExactInfo, ExactState, hfhr_exact
from .hfhr import hfhr
from .klmc import klmc
from .rmm import hfhr_rm, uld_rm
from .ula import ula

REGISTRY: dict[str, Method] = {
    "hfhr-exact": _adjusted.METHOD,
    "ula": _ula.METHOD,
    "klmc": _klmc.METHOD,
    "hfhr": _hfhr.METHOD_EXPONENTIAL,
    "hfhr-split": _hfhr.METHOD_SPLIT,
    "hfhr-rm": _rmm.METHOD_HFHR,
    "uld-rm": _rmm.METHOD_ULD,
}


def get_method(name: str) -> Method:
    """The registry entry for `name`, with a clear error listing the choices."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown sampling method {name!r}; available: {', '.join(REGISTRY)}") from None


__all__ = ["REGISTRY", "get_method", "Method", "Params", "Info", "KineticState", "LangevinState",
           "SamplingAlgorithm", "OUCoefficients", "ou_coefficients", "hfhr", "klmc", "ula", "hfhr_rm",
           "uld_rm", "hfhr_exact", "ExactState", "ExactInfo"]
