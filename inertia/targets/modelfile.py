"""`--model FILE.py:NAME`: a NumPyro model or a JAX log density from a user's file, as a Target.

Conventions (docs/guide.md): NAME is
- a NumPyro model, called as `NAME(**columns)` with the CSV's columns as float arrays (keyword
  arguments named after the columns; `NAME()` without data); or
- a log density `NAME(params, data)` when the file also defines `NAME_init`, an example point
  (array or pytree) that fixes the parameters' shapes; `data` is the dict of columns (or None).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from .base import Target, TargetError, from_logdensity


def load_module(path: Path):
    """Import a Python file as a module (its directory first on sys.path while importing)."""
    spec = importlib.util.spec_from_file_location(f"inertia_user_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise TargetError(f"importing {path} failed: {type(err).__name__}: {err}") from err
    finally:
        sys.path.remove(str(path.parent))
    return module


def target_from_file(spec: str, data=None) -> Target:
    """Target for "FILE.py:NAME" with optional CSV columns `data` ({name: array})."""
    if ":" not in spec:
        raise TargetError(f"--model {spec!r}: a model file is given as FILE.py:NAME")
    file, name = spec.rsplit(":", 1)
    path = Path(file)
    if not path.is_file():
        raise TargetError(f"--model: no such file {path}")
    module = load_module(path)
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        found = [k for k, v in vars(module).items() if callable(v) and not k.startswith("_")]
        raise TargetError(f"{path} defines no function {name!r}; callables there: {found}")
    columns = {k: np.asarray(v, dtype=np.float64) for k, v in (data or {}).items()}
    init = getattr(module, f"{name}_init", None)
    if init is not None:
        import jax.numpy as jnp

        from .base import cast_floats

        example = jnp.asarray(init) if isinstance(init, (list, tuple, np.ndarray)) else init

        def recast(dtype):
            cols = cast_floats(columns, dtype)
            return from_logdensity(lambda p: fn(p, cols or None), cast_floats(example, dtype))

        return from_logdensity(lambda p: fn(p, columns or None), example,
                               name=f"{path.name}:{name}", recast=recast)
    from . import from_numpyro

    return from_numpyro(fn, name=f"{path.name}:{name}", model_kwargs=columns)


__all__ = ["target_from_file"]
