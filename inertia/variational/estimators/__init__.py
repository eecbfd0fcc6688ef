"""Gradient estimators of the Gaussian VI objective; add one = one file + one entry."""
from .base import Estimator
from .exact import EXACT, EXACT_SYM
from .fd import FD
from .paired import PAIRED
from .price import PRICE
from .price_stl import PRICE_STL
from .reparam import REPARAM, REPARAM_SYM
from .stl import STL

ESTIMATORS = {e.name: e for e in (FD, PAIRED, STL, PRICE_STL, REPARAM, REPARAM_SYM, PRICE, EXACT,
                                  EXACT_SYM)}

__all__ = ["Estimator", "ESTIMATORS"] + [k for k in ("FD", "PAIRED", "STL", "PRICE_STL", "REPARAM",
                                                     "REPARAM_SYM", "PRICE", "EXACT", "EXACT_SYM")]
