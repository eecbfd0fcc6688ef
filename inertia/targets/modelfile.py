"""`--model FILE.py:NAME`: a NumPyro model, a JAX log density (with `NAME_init`) or a PyMC model from a
user's file, as a Target (conventions: docs/guide.md).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from .base import Target, TargetError, from_logdensity
from ..data.named import check_arguments, model_data


USER_FILES: set = set()  # resolved paths of the model files loaded (errors raised there are theirs)

_TRACED = ("ConcretizationTypeError", "TracerIntegerConversionError", "TracerBoolConversionError",
           "TracerArrayConversionError", "NonConcreteBooleanIndexError")


def load_module(path: Path):
    """Import a Python file as a module (its directory first on sys.path while importing)."""
    spec = importlib.util.spec_from_file_location(f"inertia_user_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    USER_FILES.add(str(path.resolve()))
    try:
        spec.loader.exec_module(module)
    except SystemExit as err:
        raise TargetError(f"importing {path} called sys.exit({err.code!r}); a model file must "
                          "not exit (guard script code with `if __name__ == '__main__':`)") from None
    except Exception as err:
        raise TargetError(f"importing {path} failed: {type(err).__name__}: {err}") from err
    finally:
        sys.path.remove(str(path.parent))
    return module


def model_error(err: BaseException):
    """One-line message for an exception raised inside a loaded model file (file, line, code); else None."""
    import traceback

    where = None
    seen, e = set(), err
    while e is not None and id(e) not in seen:  # the error and the ones it was raised from
        seen.add(id(e))
        for fr in traceback.extract_tb(e.__traceback__):
            if fr.filename in USER_FILES or str(Path(fr.filename).resolve()) in USER_FILES:
                where = fr
        if where is not None:
            break
        e = e.__cause__ or e.__context__
    if where is None:
        return None
    name = type(err).__name__
    text = " ".join(str(err).split())
    if isinstance(err, SystemExit):
        return (f"the model {Path(where.filename).name} called sys.exit({err.code!r}) at line "
                f"{where.lineno}; a model must return a log density or record sites, not exit")
    if name in _TRACED:
        text = text.split(". ")[0]
        advice = (" inertia compiles the model once with its data and parameters as traced "
                  "arrays, so a Python number or shape cannot be computed from them (int(), "
                  "float(), bool(), if on a value); compute it outside the model, e.g. pass the "
                  "size as an argument with a default (def model(g, y, G=3)), or use jnp.where")
    else:
        advice = " (an error of the model, not of inertia)"
        text = text[:400]
    return (f"the model {Path(where.filename).name} raised {name} at line {where.lineno}"
            f"{f' ({where.line.strip()})' if where.line else ''}: {text}.{advice}")


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
    """NAME_init as a pytree of float64 arrays: the value itself, or what a zero-argument function returns."""
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
    """TargetError when NAME(**columns) cannot be called (no NAME_init, or arguments unlike the columns)."""
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


def _latent_shapes(fn, columns) -> dict:
    """{site: shape} of the model's unobserved sample sites, from one abstract trace ({} if it fails)."""
    import jax
    import jax.numpy as jnp
    from numpyro import handlers

    def latent(key):
        tr = handlers.trace(handlers.seed(fn, key)).get_trace(**columns)
        return {k: v["value"] for k, v in tr.items()
                if v["type"] == "sample" and not v["is_observed"]}

    try:
        out = jax.eval_shape(latent, jax.ShapeDtypeStruct((2,), jnp.uint32))
    except Exception:
        return {}
    return {k: tuple(v.shape) for k, v in out.items()}


def _check_unobserved(fn, name, columns, path) -> None:
    """TargetError when a missing CSV column makes the model sample a latent site of that name."""
    import inspect

    if not columns:
        return
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return
    if all(k in columns for k in params):
        return
    sites = _latent_shapes(fn, columns)
    lost = [k for k in params if k not in columns and k in sites]
    if lost:
        k = lost[0]
        size = int(np.prod(sites[k])) if sites[k] else 1
        raise TargetError(f"{path}: {name}'s argument {k!r} is not a column of the CSV (columns: "
                          f"{list(columns)}), so its site {k!r} is not observed and becomes "
                          f"{size} unknown value(s) to infer; add the column {k!r} to the CSV, or "
                          "rename the argument after the column that holds it")


def target_from_file(spec: str, data=None) -> Target:
    """Target for "FILE.py:NAME" with optional columns `data`; its name says which convention was found."""
    if ":" not in spec:
        raise TargetError(f"--model {spec!r}: a model file is given as FILE.py:NAME")
    file, name = spec.rsplit(":", 1)
    path = Path(file)
    if not path.is_file():
        raise TargetError(f"--model: no such file {path}")
    module = load_module(path)
    fn = getattr(module, name, None)
    from .pymc import from_pymc, pymc_model_from_file

    pm_model = pymc_model_from_file(module, name, fn, data, path)  # None unless PyMC
    if pm_model is not None:
        return from_pymc(pm_model, name=f"{path.name}:{name} [PyMC model]")
    if fn is None or not callable(fn):
        found = [k for k, v in vars(module).items() if callable(v) and not k.startswith("_")]
        raise TargetError(f"{path} defines no function {name!r}; callables there: {found}")
    columns = model_data(data)  # CSV columns float64; JSON / npz / Parquet as typed
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
    check_arguments(fn, name, data, path)  # a typed data file's names against NAME's
    _check_numpyro_call(fn, name, columns, path, module)
    from .numpyro import from_numpyro

    try:
        _check_unobserved(fn, name, columns, path)
        return from_numpyro(fn, name=f"{path.name}:{name} [NumPyro model]", model_kwargs=columns)
    except TargetError as err:
        if "no latent sample sites" in str(err):
            raise TargetError(f"{path}: {name} is neither a NumPyro model with latent sites (it "
                              "records no unobserved numpyro.sample site) nor a log density "
                              f"(the file defines no {name}_init)") from None
        raise


__all__ = ["target_from_file", "model_error", "USER_FILES"]
