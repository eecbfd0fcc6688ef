"""ArviZ InferenceData of inertia results: posterior by site (constrained), sample_stats,
log_likelihood and observed_data for NumPyro models, the run's settings in the attributes."""
from __future__ import annotations

import json
import re
from typing import Mapping, Optional

import numpy as np
from ..convergence import _arviz

_INDEXED = re.compile(r"^([A-Za-z_][\w.]*)\[(\d+(?:,\s*\d+)*)\]$")
ATTR_PREFIX = "inertia_"


def arviz():
    """ArviZ, imported once under inertia's lock with its refactor notice silenced (convergence)."""
    return _arviz()


def sites_of(draws, info: Optional[Mapping] = None, names=None) -> dict:
    """{variable: (chain, draw, ...)} from flat draws: constrained sites, else variables by parameter name."""
    draws = np.asarray(draws, dtype=np.float64)
    info = info or {}
    if info.get("constrain") is not None:
        try:
            out = info["constrain"](draws)
        except Exception:  # as the printed table (mcmc.sample.summary_draws): unconstrained
            out = None
        if out is not None:
            return {k: np.asarray(out[k], dtype=np.float64) for k in sorted(out)
                    if np.shape(out[k])[:2] == draws.shape[:2]}
    d = draws.shape[2]
    names = list(names) if names is not None and len(names) == d else [f"x[{i}]" for i in range(d)]
    groups: dict = {}
    for i, n in enumerate(names):
        m = _INDEXED.match(str(n))
        base, idx = (m.group(1), tuple(int(j) for j in m.group(2).split(","))) if m else (str(n), ())
        groups.setdefault(base, []).append((idx, i))
    out = {}
    for base, items in groups.items():
        idxs = [ix for ix, _ in items]
        if idxs == [()]:
            out[base] = draws[:, :, items[0][1]]
            continue
        shape = tuple(max(ix[k] for ix in idxs) + 1 for k in range(len(idxs[0])))
        full = (len(set(map(len, idxs))) == 1 and len(set(idxs)) == len(idxs)
                and int(np.prod(shape)) == len(idxs) and list(np.ndindex(*shape)) == idxs)
        if full:
            out[base] = draws[:, :, [i for _, i in items]].reshape(draws.shape[:2] + shape)
        else:  # not a C-ordered grid: each coordinate its own variable
            for ix, i in items:
                out[str(names[i])] = draws[:, :, i]
    return {k.replace("/", "_"): v for k, v in out.items()}  # netCDF names cannot hold "/"


def flat_rows(sites: Mapping[str, np.ndarray]):
    """(labels, (chain, draw, k) array) of the sites' scalar entries, in the order ArviZ lists them."""
    labels, cols = [], []
    for k, v in sites.items():
        v = np.asarray(v, dtype=np.float64)
        shape = v.shape[2:]
        cols.append(v.reshape(v.shape[0], v.shape[1], -1))
        labels += [k] if not shape else [f"{k}[{','.join(map(str, i))}]" for i in np.ndindex(*shape)]
    return labels, np.concatenate(cols, axis=2)


def numpyro_model(info: Optional[Mapping]):
    """(model, args, kwargs) of a NumPyro target (`from_numpyro` keeps them), else None."""
    spec = (info or {}).get("numpyro")
    if not spec:
        return None
    return spec["model"], tuple(spec["args"]), dict(spec["kwargs"])


def latent_only(sites: Mapping, info: Mapping) -> dict:
    """The sites of `sites` that are latent sample sites of the model (deterministic ones dropped)."""
    latent = set((info or {}).get("sites", {}))
    return {k: v for k, v in sites.items() if k in latent}


def log_likelihood(sites: Mapping, info: Mapping) -> Optional[dict]:
    """{observed site: pointwise log likelihood (chain, draw, ...)} of a NumPyro model, or None."""
    if (info or {}).get("pymc") is not None:  # a PyMC model's own (inertia.targets.pymc)
        return info["pymc"].log_likelihood(sites)
    spec = numpyro_model(info)
    if spec is None:
        return None
    from numpyro.infer.util import log_likelihood as numpyro_loglik

    model, args, kwargs = spec
    ll = numpyro_loglik(model, latent_only(sites, info), *args, batch_ndims=2, **kwargs)
    return {k: np.asarray(v, dtype=np.float64) for k, v in ll.items()} or None


def observed_data(sites: Mapping, info: Mapping) -> Optional[dict]:
    """{observed site: its value}: one trace of the model at the first draw."""
    if (info or {}).get("pymc") is not None:
        return info["pymc"].observed_data()
    spec = numpyro_model(info)
    if spec is None:
        return None
    from numpyro import handlers

    model, args, kwargs = spec
    first = {k: np.asarray(v)[0, 0] for k, v in latent_only(sites, info).items()}
    tr = handlers.trace(handlers.seed(handlers.substitute(model, data=first), 0)).get_trace(
        *args, **kwargs)
    return {k: np.asarray(s["value"]) for k, s in tr.items()
            if s["type"] == "sample" and s.get("is_observed")} or None


def from_groups(groups: Mapping[str, Optional[Mapping]], attrs: Optional[Mapping] = None,
                info: Optional[Mapping] = None):
    """An ArviZ object (InferenceData or DataTree) from {group: {var: array}}, with inertia's attributes."""
    az = arviz()
    groups = {g: {str(k): np.asarray(v) for k, v in d.items()} for g, d in groups.items() if d}
    named = (info or {}).get("pymc")
    dims = named.arviz_kwargs(groups) if named is not None else {}
    if _major(az) >= 1:
        obj = az.from_dict(groups, **dims)
        post = obj["posterior"]
    else:
        warm = any(g.startswith("warmup_") for g in groups)
        obj = az.from_dict(**groups, save_warmup=warm or None, **dims)
        post = obj.posterior
    if attrs:
        post.attrs.update({ATTR_PREFIX + k: json.dumps(v, default=_jsonable)
                           for k, v in attrs.items()})
    return obj


def read_attrs(obj) -> dict:
    """The inertia attributes of an ArviZ object written by `from_groups`."""
    post = obj["posterior"] if _major(arviz()) >= 1 else obj.posterior
    return {k[len(ATTR_PREFIX):]: json.loads(v) for k, v in post.attrs.items()
            if k.startswith(ATTR_PREFIX)}


def _major(module) -> int:
    try:
        return int(str(module.__version__).split(".")[0])
    except ValueError:  # pragma: no cover - unusual version strings
        return 0


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    if hasattr(v, "tolist"):
        return np.asarray(v).tolist()
    if hasattr(v, "_asdict"):
        return v._asdict()
    return str(v)


def per_draw_stats(info: Mapping, num_chains: int, num_draws: int, thinning: int,
                   params: Optional[Mapping] = None) -> dict:
    """sample_stats (chain, draw) from per-step info: ArviZ's names, any/mean over each draw's steps."""
    out = {}
    for k, v in info.items():
        v = np.asarray(v)
        if v.ndim < 2 or v.shape[0] != num_chains or v.shape[1] != num_draws * thinning:
            continue
        w = v.reshape((num_chains, num_draws, thinning) + v.shape[2:])
        if v.dtype == bool:
            out[k] = w.any(axis=2)
        elif k == "step_size":
            out[k] = w[:, :, -1]
        else:
            out[k] = w.mean(axis=2)
    if "diverging" not in out and "is_finite" in out:
        fin = np.asarray(info["is_finite"]).reshape(num_chains, num_draws, thinning)
        out["diverging"] = ~fin.all(axis=2)
    if "step_size" not in out and params and "step_size" in params:
        out["step_size"] = np.full((num_chains, num_draws), float(params["step_size"]))
    return out


__all__ = ["sites_of", "flat_rows", "log_likelihood", "observed_data", "from_groups",
           "read_attrs", "per_draw_stats", "numpyro_model", "arviz"]
