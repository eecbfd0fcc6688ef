"""Workflows that compose the drivers: the public VI fit with the centredness rewrite
(`reparam="auto"`) and the exact sampler where the Gaussian falls short (`ensure=...`, `escalate`).
"""
from .escalate import escalate, falls_short
from .fit import fit

__all__ = ["fit", "escalate", "falls_short"]
