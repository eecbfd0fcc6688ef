"""BLAS threads around compiled work, without environment variables.

XLA's CPU LAPACK custom calls (eigh, Cholesky, LU, triangular solves) run in the LAPACK/BLAS that
jaxlib takes from `scipy.linalg.cython_lapack`, i.e. scipy's bundled OpenBLAS; numpy carries a
second OpenBLAS. Their worker threads spin-wait, and when the cores are shared (XLA's own intra-op
threads, other processes) that contention makes an update 2-36x slower. The entry points
(`vi.fit`, `mcmc.sample`, `sgmcmc.calibrate`, the CLI) run under `single_blas_thread()`, which
sets every loaded BLAS pool to `blas_threads` threads (default 1) with threadpoolctl and restores
the previous setting when the last entry point running in the process returns (the pools are
process-wide: a count under a lock, so that threads calling entry points at once restore them
once, after the last). `inertia.config.set_blas_threads(None)` turns the limit off.
"""
from __future__ import annotations

import contextlib
import functools

from threadpoolctl import threadpool_limits

from ._held import Held

_BLAS_THREADS: int | None = 1
# entry points running in any thread hold the limit (~0.08 s to set: it lists the libraries)
_HELD = Held(lambda: threadpool_limits(limits=_BLAS_THREADS, user_api="blas"),
             lambda limits: limits.restore_original_limits())


def set_blas_threads(n: int | None) -> None:
    """Threads the entry points give each BLAS pool (None: leave the pools as they are)."""
    global _BLAS_THREADS
    if n is not None and (isinstance(n, bool) or int(n) < 1):
        raise ValueError(f"blas threads must be a positive integer or None, got {n!r}")
    _BLAS_THREADS = None if n is None else int(n)


@contextlib.contextmanager
def single_blas_thread():
    """Limit numpy's and scipy's (hence XLA CPU LAPACK's) BLAS pools for the duration; the first
    entry point to start sets the limit, the last to finish restores the pools."""
    if _BLAS_THREADS is None:
        yield
        return
    # jaxlib loads scipy's OpenBLAS lazily at the first linalg lowering; threadpoolctl only sees
    # libraries already loaded, so load it first.
    import scipy.linalg.cython_lapack  # noqa: F401

    with _HELD():
        yield


def blas_limited(fn):
    """Decorator: run `fn` under `single_blas_thread()`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with single_blas_thread():
            return fn(*args, **kwargs)

    return wrapper
