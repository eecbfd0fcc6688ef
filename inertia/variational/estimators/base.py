"""Estimator interface: a batch gradient estimate of E (energy) or F (full) at (m, A)."""
from __future__ import annotations

from typing import Callable, NamedTuple


class Estimator(NamedTuple):
    """A gradient estimator of the VI objective.

    `estimate(target, key, m, A, batch_size, **options) -> (g_m, g_A)`; `full` says whether it
    estimates grad F (entropy included) or grad E only; `cost(d, b) -> (gradients, hvps)` per update
   ; `coords` is "chol" or "sym"; `needs_hvp` flags Hessian-vector products.
    """

    name: str
    coords: str
    full: bool
    needs_hvp: bool
    cost: Callable[[int, int], tuple[int, int]]
    estimate: Callable
    exact: bool = False  # uses exact expectations (no query model)
