"""What a warm-up scheme is: `Settings` (the warm-up keywords of `sample`), `Report` (what a warm-up
hands the sampling run besides the states and parameters), `Accounting` (a run's gradients), and
`Scheme` (the warm-up and the few rules the sampling run takes from it)."""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ... import _compile


class Settings(NamedTuple):
    """`sample`'s warm-up keywords: the kernel's parameters (all None: tune them), and the
    schemes' options."""

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
    """What a warm-up hands the sampling run besides states and parameters: the kernel's function
    of the target the chains run on, the preconditioner (mean, factor) or None, the tuning report,
    the bias estimate, the compiled block length, warm-up gradients (per chain; all chains), the
    burn-in fraction, the exact kernel's target acceptance, the target the chains run on
    (whitened or not) and the gradients of the gradient check."""

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
    """A run's gradients, each counted once: per-chain summary (exact kernels) or None, gradients
    per sampling chain, warm-up gradients per chain, and every gradient of the run."""

    chains: Optional[dict]
    grad_evals: int
    warmup_grad_evals: int
    total_grad_evals: int


class Scheme(NamedTuple):
    """A warm-up scheme, named by a kernel's registry entry (`Method.warmup`).

    `run(target, method, keys, settings, bar) -> (state, parameters, report)`: the chains' states
    and `Params` after warm-up (or at the given parameters), and a `Report`; keys (chains, 3, 2):
    per chain, start position, start state, sampling run. `options`: the `sample` keywords it reads
    beyond the kernel's parameters. `rule`: the sampling run's `convergence.StopRule` options.
    `halted(infos)`: the per-step info of the sampling run so far says stop and warm up again.
    `readapt(method, report, state, key, params, infos, draws)`: (Params, state, gradients the
    halted attempt spent, from its per-step `infos`[, the `Report` to continue with]) of a new
    warm-up from the chains' states and the halted attempt's draws (chain, draw, d, in the chains'
    frame), or None. `account(method, report, info, discarded, num_steps, num_chains)`: the
    `Accounting`. `summarise(info, burn)`: per-chain summary of the draws after a burn-in fraction
    (None where the kernel has none). `problems(chains, target_accept, tuning, unconverged)`: the
    verdict's reasons beyond R-hat and ESS."""

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
