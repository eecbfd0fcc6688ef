"""Ray execution of experiment cells (`inertia reproduce NAME --backend ray [--address ADDR]`).

Ray is optional (`pip install 'inertia[ray]'`). Each missing cell becomes one Ray task; a cell is
whatever the experiment made it (typically one vmapped batch of seeds), so the numbers a task
computes are the ones the local backend computes for the same seeds. Cells are shipped as
cloudpickled closures and unpickled only after the worker has switched float64 on
(`inertia.config.enable_x64()`), so workers run in float64 like the driver. Workers need `inertia` importable (installed on every node of a remote
cluster, or shipped with `runtime_env={"py_modules": [...]}` when you call `ray.init` yourself).
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterable

_FORWARD_ENV = ("INERTIA_DATA_DIR", "INERTIA_OFFLINE")  # passed to workers so data loads alike


def _ray():
    try:
        import ray
    except ImportError as err:
        raise ImportError("--backend ray needs Ray: pip install 'inertia[ray]'") from err
    return ray


def ensure_ray(address: str | None = None):
    """The `ray` module, initialised: reuse a running session, else connect to `address` or start
    a local one (`address=None`)."""
    ray = _ray()
    if not ray.is_initialized():
        env = {k: os.environ[k] for k in _FORWARD_ENV if k in os.environ}
        ray.init(address=address, runtime_env={"env_vars": env} if env else None,
                 include_dashboard=False, log_to_driver=False)
    return ray


def _execute(payload: bytes):
    """Worker side: enable float64 (a worker is inertia's own process), unpickle the cell, run it,
    JSON-ready output."""
    import cloudpickle

    import inertia.config

    inertia.config.enable_x64()  # float64 before any array is rebuilt
    from inertia._json import to_jsonable as _to_jsonable

    fn = cloudpickle.loads(payload)
    t0 = time.perf_counter()
    value = _to_jsonable(fn())
    return value, time.perf_counter() - t0


def run_remote(cells: Iterable[tuple[str, Callable[[], Any]]], on_done: Callable,
               address: str | None = None, num_cpus: float = 1) -> None:
    """Submit every (key, fn) as a Ray task; call on_done(key, value, seconds) as each finishes."""
    import cloudpickle

    ray = ensure_ray(address)
    remote = ray.remote(num_cpus=num_cpus, max_retries=0)(_execute)
    pending = {remote.remote(cloudpickle.dumps(fn)): key for key, fn in cells}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            key = pending.pop(ref)
            try:
                value, seconds = ray.get(ref)
            except Exception as err:
                for other in pending:
                    ray.cancel(other)
                raise RuntimeError(f"cell {key!r} failed on Ray: {err}") from err
            on_done(key, value, seconds)
