"""PyMC models as targets, through PyMC's JAX backend (`pymc.sampling.jax.get_jaxified_graph`).

PyMC is optional (`pip install 'inertia[pymc]'`). The potential is minus `model.logp()` on PyMC's own
unconstrained value variables (sorted-name order); results carry coords, dims, pointwise log likelihood
and observed data, as `pm.sample` with `idata_kwargs={"log_likelihood": True}` does.
"""
from __future__ import annotations

import contextlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compile
from ..data.checks import bad_entries
from .base import Target, TargetError, from_logdensity, jitted
from .numpyro import _valid_start
from ..posterior import site_names
from ..data.named import check_arguments, model_data


def _pymc():
    try:
        import pymc as pm
    except ImportError as err:
        raise ImportError("from_pymc needs PyMC: pip install 'inertia[pymc]'") from err
    return pm


def is_pymc_model(obj) -> bool:
    """True when obj is a `pymc.Model` (without importing PyMC when it is not loaded)."""
    import sys

    pm = sys.modules.get("pymc")
    return pm is not None and isinstance(obj, pm.Model)


@contextlib.contextmanager
def _quiet_pytensor():
    """PyTensor's note that its C backend found no BLAS, silenced for inertia's own calls."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*PyTensor could not link to a BLAS",
                                category=UserWarning)
        yield


def _jaxify(inputs, outputs):
    from pymc.sampling.jax import get_jaxified_graph

    with _quiet_pytensor():
        return get_jaxified_graph(inputs=list(inputs), outputs=list(outputs))


class PyMCModel:
    """Pointwise log likelihood at constrained draws, observed data, coords and dims of a PyMC model."""

    def __init__(self, model):
        from pymc.backends.arviz import coords_and_dims_for_inferencedata, find_observations

        self.model = model
        self.coords, self.dims = coords_and_dims_for_inferencedata(model)
        self.coords = {k: np.asarray(v) for k, v in self.coords.items()}
        self.observed = {k: np.asarray(v) for k, v in find_observations(model).items()}
        self._loglik = None

    def _loglik_fn(self):
        """(free variable names, jitted vmapped pointwise log likelihood on the variables' supports)."""
        if self._loglik is None:
            from pymc.model.transform.conditioning import remove_value_transforms

            with _quiet_pytensor():
                plain = remove_value_transforms(self.model)
            obs = plain.observed_RVs
            fn = _jaxify(plain.value_vars, plain.logp(obs, sum=False))
            names = [v.name for v in plain.value_vars]
            self._loglik = (names, [v.name for v in obs],
                            _compile.jit(jax.vmap(lambda *a: tuple(fn(*a)))))
        return self._loglik

    def log_likelihood(self, sites) -> dict | None:
        """{observed variable: log likelihood (chain, draw, *shape)} at constrained draws."""
        if not self.model.observed_RVs:
            return None
        names, obs, fn = self._loglik_fn()
        missing = [n for n in names if n not in sites]
        if missing:
            return None
        lead = np.shape(sites[names[0]])[:2]
        args = [np.reshape(np.asarray(sites[n], dtype=np.float64), (-1,) + np.shape(sites[n])[2:])
                for n in names]
        out = fn(*args)
        return {k: np.reshape(np.asarray(v, dtype=np.float64), lead + np.shape(v)[1:])
                for k, v in zip(obs, out)}

    def observed_data(self) -> dict | None:
        """{observed variable: its data}."""
        return dict(self.observed) or None

    def arviz_kwargs(self, groups) -> dict:
        """coords and dims for `az.from_dict`: the model's, for the variables the groups hold."""
        present = {k for g in groups.values() if g for k in g}
        dims = {k: list(v) for k, v in self.dims.items() if k in present}
        used = {d for v in dims.values() for d in v}
        return {"coords": {k: v for k, v in self.coords.items() if k in used}, "dims": dims}


def _check_continuous(model):
    discrete = [rv.name for rv in model.free_RVs if not str(rv.dtype).startswith("float")]
    if discrete:
        raise TargetError("inertia needs continuous free variables; marginalise the discrete ones "
                          f"({', '.join(discrete)}) out of the PyMC model (e.g. pm.Mixture for a "
                          "mixture's assignment, or pymc_extras' marginalize)")


def from_pymc(model, *, alpha=None, beta=None, name=None, seed=0) -> Target:
    """Target V(u) = -model.logp() (Jacobians included) at PyMC's unconstrained value variables u.

    `alpha`, `beta`: curvature bounds of V, if known. The start is `model.initial_point()` where V is finite.
    `info`: "constrain", "names", "init", "pymc" (what `to_arviz()` needs).
    """
    pm = _pymc()
    if not isinstance(model, pm.Model):
        raise TargetError(f"from_pymc takes a pymc.Model; got {type(model).__name__}")
    if not model.free_RVs:
        raise TargetError("the PyMC model has no free variables (everything is observed)")
    _check_continuous(model)
    from pymc.util import get_default_varnames

    value_vars = list(model.value_vars)
    keys = [v.name for v in value_vars]
    with _quiet_pytensor():
        point = model.initial_point(random_seed=seed)
    example = {k: np.asarray(point[k], dtype=np.float64) for k in keys}
    logp_graph = _jaxify(value_vars, [model.logp()])

    # jitted once here: PyTensor's graph is traced once per input shape; every transform and
    # enclosing jit of the fit reuses that jaxpr
    logdensity = _compile.jit(lambda params: logp_graph(*[params[k] for k in keys])[0])

    outputs = list(get_default_varnames(model.unobserved_value_vars, include_transformed=False))
    out_names = [v.name for v in outputs]
    values_graph = _jaxify(value_vars, outputs)
    label = name or f"pymc:{model.name or 'model'}"
    extra = {"names": site_names({k: v.shape for k, v in example.items()}), "init": None,
             "pymc": PyMCModel(model)}
    target = from_logdensity(logdensity, example, alpha=alpha, beta=beta, name=label,
                             info=extra, recast=_float64_only)
    unravel = target.unravel
    d = target.dim
    constrain_flat = _compile.jit(jax.vmap(
        lambda v: dict(zip(out_names, values_graph(*[unravel(v)[k] for k in keys])))))

    def constrain(x):
        """PyMC's free variables (constrained) and deterministics for unconstrained x (..., d)."""
        traced = isinstance(x, jax.core.Tracer)
        x = jnp.asarray(x, dtype=jnp.float64) if traced else np.asarray(x, dtype=np.float64)
        if x.shape[-1:] != (d,):
            raise ValueError(f"expected unconstrained vectors with last axis {d}; got shape "
                             f"{x.shape}")
        lead = x.shape[:-1]
        out = constrain_flat(x.reshape((-1, d)))
        if traced:
            return {k: jnp.reshape(v, lead + v.shape[1:]) for k, v in out.items()}
        return {k: np.reshape(np.asarray(v), lead + v.shape[1:]) for k, v in out.items()}

    extra["constrain"] = constrain
    flat0 = np.concatenate([np.ravel(example[k]) for k in sorted(example)])
    with _compile.tier_for(target):
        v, g = jitted(target, "value_and_grad")(_compile.device(flat0))
        if np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(g))):
            extra["init"] = _compile.device(flat0)
        else:
            _check_observed(model, point)
            extra["init"] = _valid_start(target, seed, "PyMC")
    return target


def _float64_only(dtype):
    raise TargetError(f"a PyMC model runs in float64 only (PyMC's JAX graph keeps PyTensor's float64 "
                      f"constants), not {jnp.dtype(dtype).name}: leave out --dtype float32 on the "
                      "command line (dtype='float64' in Python), or write the model in NumPyro")


def _check_observed(model, point) -> None:
    """TargetError naming observed entries whose log likelihood is not finite at PyMC's initial point."""
    obs = list(model.observed_RVs)
    if not obs:
        return
    try:
        with _quiet_pytensor():
            pointwise = model.compile_logp(vars=obs, sum=False, jacobian=False)(point)
    except Exception:  # PyMC cannot evaluate it: the start search reports the model
        return
    data = PyMCModel(model).observed
    for rv, lp in zip(obs, pointwise):
        value = data.get(rv.name)
        if value is None or np.shape(lp) != np.shape(value):
            continue
        bad = bad_entries(rv.name, value, np.isfinite(lp))
        if bad:
            raise TargetError(f"PyMC: the log likelihood of observed {rv.name!r} "
                              f"({type(rv.owner.op).__name__}) is not finite at the model's initial "
                              f"point at {bad}; those data lie outside the likelihood's support "
                              "(or are not finite): fix the data or the likelihood")


def pymc_model_from_file(module, name, obj, data, path):
    """The PyMC model a model file names (a `pm.Model` or a function returning one), or None."""
    if is_pymc_model(obj):
        if data:
            _set_data(obj, data, name, path)
        return obj
    if not callable(obj) or hasattr(module, f"{name}_init") or not _refers_to(module, "pymc"):
        return None
    check_arguments(obj, name, data, path)
    columns = model_data(data)
    uses_numpyro = _refers_to(module, "numpyro")
    try:
        if uses_numpyro:  # a NumPyro model called as a function needs a seed to sample
            from numpyro import handlers

            out = handlers.seed(obj, rng_seed=0)(**columns)
        else:
            out = obj(**columns)
    except TypeError as err:
        if uses_numpyro:
            return None
        raise TargetError(f"{path}: calling {name}(**data) failed: {err}") from None
    except Exception as err:  # the model's own error (PyMC's, when it builds a pm.Model)
        if uses_numpyro:
            return None
        raise TargetError(f"{path}: building the PyMC model {name}(**data) failed, PyMC's error: "
                          f"{type(err).__name__}: {' '.join(str(err).split())[:400]}") from err
    if is_pymc_model(out):
        return out
    if uses_numpyro:  # a NumPyro model in a file that also imports PyMC
        return None
    raise TargetError(f"{path}: {name} uses PyMC but returns {type(out).__name__}, not a "
                      "pm.Model; end it with `return model` (the `with pm.Model() as model:` "
                      "block's model)")


def _refers_to(module, package: str) -> bool:
    """True when a name of `module` is `package`, one of its modules, or something defined there."""
    for v in vars(module).values():
        for attr in ("__name__", "__module__"):
            text = getattr(v, attr, None)
            if isinstance(text, str) and text.split(".")[0] == package:
                return True
    return False


def _set_data(model, data, name, path):
    """--data entries into the model's pm.Data containers, by name."""
    pm = _pymc()
    held = sorted(model.named_vars)
    containers = sorted(v.name for v in getattr(model, "data_vars", []))
    extra = [k for k in data if k not in containers]
    if extra:
        raise TargetError(f"{path}: {name} is a pm.Model; --data sets its pm.Data containers by "
                          f"name, and {extra} are none of them (containers: {containers}; "
                          f"variables: {held})")
    from ..data.named import model_data

    with model:
        pm.set_data(model_data(data))


__all__ = ["from_pymc", "is_pymc_model", "PyMCModel"]
