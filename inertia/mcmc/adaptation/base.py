"""What a warm-up scheme is: `Settings`, `Report`, `Accounting` and `Scheme` (docs/howto/extend.md)."""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ... import _compile


class Settings(NamedTuple):
    """`sample`'s warm-up keywords: the kernel's parameters (all None: tune them), schemes' options."""

    num_chains: int
    step_size: Optional[float] = None
    gamma: Optional[float] = None
    alpha: Optional[float] = None
    num_leapfrog: Optional[float] = None
    target_accept: Optional[float] = None
    precondition: str = "auto"
    bias_tol: float = 0.03
    init: object = None
    seed: int = 0
    frame: str = "auto"

    @property
    def tuned(self) -> bool:
        """No kernel parameter given: the warm-up chooses them all."""
        return (self.step_size is None and self.gamma is None and self.alpha is None
                and self.num_leapfrog is None)


class Report(NamedTuple):
    """Warm-up output besides states and parameters: run function, preconditioner, tuning, gradients."""

    run_fn: object
    pre: Optional[tuple]
    tuning: Optional[dict]
    bias: Optional[dict]
    block: int
    warm_grads: int
    total_warm: int
    burn: float
    target_accept: Optional[float]
    target: object
    checked: int = 0
    source: object = None  # the target the frame maps to (a tuned exact run's readapt refits it)


class Accounting(NamedTuple):
    """A run's gradients, each counted once: per-chain summary, per sampling chain, warm-up, in all."""

    chains: Optional[dict]
    grad_evals: int
    warmup_grad_evals: int
    total_grad_evals: int


class Scheme(NamedTuple):
    """A warm-up scheme, named by a kernel's registry entry (`Method.warmup`; docs/howto/extend.md)."""

    name: str
    run: Callable
    options: tuple
    rule: dict
    halted: Callable
    readapt: Callable
    account: Callable
    summarise: Callable
    problems: Callable


def initial_positions(target, init, keys):
    """Chains' start positions: N(0, I) draws from `keys`, or `init` (dim,) or (chains, dim)."""
    d = target.dim
    n = keys.shape[0]
    if init is None:
        return jax.vmap(lambda k: jax.random.normal(k, (d,), dtype=jnp.float64))(keys)
    x = np.asarray(init, dtype=np.float64)
    if x.shape == (d,):
        return _compile.device(np.broadcast_to(x, (n, d)))
    if x.shape == (n, d):
        return x
    raise ValueError(f"init must have shape ({d},) or (num_chains, {d}) = ({n}, {d}); got {x.shape}")


def never(infos) -> bool:
    """`Scheme.halted` of a scheme that never warms up again."""
    return False


def no_readapt(method, report, state, key, params, infos, draws=None):
    """`Scheme.readapt` of a scheme that never warms up again."""
    return None


def no_summary(info, burn):
    """`Scheme.summarise` of a kernel without per-chain acceptance."""
    return None


def no_problems(chains, target_accept, tuning, unconverged) -> list:
    """`Scheme.problems` of a kernel judged by R-hat, ESS and finiteness alone."""
    return []
