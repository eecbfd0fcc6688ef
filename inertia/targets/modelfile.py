"""`--model FILE.py:NAME`: a NumPyro model or a JAX log density from a user's file, as a Target.

Conventions (docs/guide.md): NAME is
- a NumPyro model, called as `NAME(**columns)` with the CSV's columns as float arrays (keyword
  arguments named after the columns; `NAME()` without data); or
- a log density `NAME(params, data)` when the file also defines `NAME_init`, an example point
  (array or pytree), or a function of no arguments returning one, that fixes the parameters'
  shapes; `data` is the dict of columns (or None).
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


def _as_arrays(obj):
    """Numbers and (nested) lists of numbers as float64 arrays, inside dicts, lists and tuples."""
    if isinstance(obj, dict):
        return {k: _as_arrays(v) for k, v in obj.items()}
    try:
        return np.asarray(obj, dtype=np.float64)
    except (TypeError, ValueError):
        if isinstance(obj, (list, tuple)):
            return type(obj)(_as_arrays(v) for v in obj)
        raise


def _example_point(module, name: str, path: Path):
    """NAME_init as a pytree of float64 arrays: the value itself, or what a zero-argument
    function returns."""
    import jax
    import jax.numpy as jnp

    init = getattr(module, f"{name}_init")
    if callable(init):
        try:
            init = init()
        except TypeError as err:
            raise TargetError(f"{path}: {name}_init is a function, called with no arguments, and "
                              f"that failed ({err}); make it take none, or set {name}_init to an "
                              "example point") from err
    try:
        example = jax.tree_util.tree_map(lambda v: jnp.asarray(v, dtype=jnp.float64),
                                         _as_arrays(init))
    except (TypeError, ValueError) as err:
        raise TargetError(f"{path}: {name}_init must be an example point (a number, array, list "
                          f"or dict of arrays), or a function of no arguments returning one; got "
                          f"{type(init).__name__} ({err})") from None
    if not jax.tree_util.tree_leaves(example):
        raise TargetError(f"{path}: {name}_init is empty; give an example point of the parameters")
    return example


def _check_logdensity(fn, name, example, columns, path):
    """TargetError unless fn(example, data) traces to a real scalar."""
    import jax

    try:
        out = jax.eval_shape(lambda p: fn(p, columns or None), example)
    except Exception as err:
        raise TargetError(f"{path}: calling {name}({name}_init, data) failed: "
                          f"{type(err).__name__}: {err}") from None
    if getattr(out, "shape", None) != ():
        raise TargetError(f"{path}: {name}(params, data) must return a scalar log density; it "
                          f"returns {getattr(out, 'shape', type(out).__name__)}")


def _check_numpyro_call(fn, name, columns, path, module):
    """TargetError when NAME(**columns) cannot be called: a log density without NAME_init, or a
    model whose arguments and the CSV's columns differ."""
    import inspect

    try:
        sig = inspect.signature(fn)
        sig.bind(**columns)
        return
    except ValueError:
        return
    except TypeError:
        pass
    params = [k for k, v in sig.parameters.items() if v.kind not in (v.VAR_POSITIONAL,
                                                                      v.VAR_KEYWORD)]
    required = [k for k in params if sig.parameters[k].default is inspect.Parameter.empty]
    uses_numpyro = any(getattr(v, "__name__", "").startswith("numpyro")
                       for v in vars(module).values())
    if not uses_numpyro and len(params) == 2 and not columns.keys() & set(params):
        raise TargetError(
            f"{path}: {name}({', '.join(params)}) looks like a log density, but the file defines "
            f"no {name}_init; add {name}_init = an example point of the parameters (or a "
            "function of no arguments returning one)")
    head = (f"{path}: {name} is called as a NumPyro model, {name}(**columns), with the CSV's "
            "columns as keyword arguments")
    missing = [k for k in required if k not in columns]
    if missing and not columns:
        raise TargetError(f"{head}; it needs arguments {missing}: pass --data FILE.csv with "
                          "columns of those names")
    if missing:
        raise TargetError(f"{head}; its arguments {missing} are not columns of the CSV (columns: "
                          f"{list(columns)})")
    extra = [k for k in columns if k not in params]
    raise TargetError(f"{head}; the CSV's columns {extra} are not arguments of {name} (arguments:"
                      f" {params}); every column is passed, so the model must accept each")


def target_from_file(spec: str, data=None) -> Target:
    """Target for "FILE.py:NAME" with optional CSV columns `data` ({name: array}); the target's
    name says which convention was found ("[log density]" or "[NumPyro model]")."""
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
    if hasattr(module, f"{name}_init"):
        from .base import cast_floats

        example = _example_point(module, name, path)
        _check_logdensity(fn, name, example, columns, path)
        how = "function" if callable(getattr(module, f"{name}_init")) else "value"

        def recast(dtype):
            cols = cast_floats(columns, dtype)
            return from_logdensity(lambda p: fn(p, cols or None), cast_floats(example, dtype))

        return from_logdensity(lambda p: fn(p, columns or None), example,
                               name=f"{path.name}:{name} [log density, {name}_init a {how}]",
                               recast=recast)
    _check_numpyro_call(fn, name, columns, path, module)
    from .numpyro import from_numpyro

    try:
        return from_numpyro(fn, name=f"{path.name}:{name} [NumPyro model]", model_kwargs=columns)
    except TargetError as err:
        if "no latent sample sites" in str(err):
            raise TargetError(f"{path}: {name} is neither a NumPyro model with latent sites (it "
                              "records no unobserved numpyro.sample site) nor a log density "
                              f"(the file defines no {name}_init)") from None
        raise


__all__ = ["target_from_file"]
