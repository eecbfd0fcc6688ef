"""The translation check of a posteriordb model: on the reference draws, mapped to the NumPyro
model's unconstrained space, the gradient of the log density has mean zero.

Under the posterior, E[grad log p(u)] = 0 in any smooth unconstrained coordinates (integration by
parts; the Jacobian of the map is part of log p). A wrong prior, likelihood, transform or data
handling moves the reference draws off the NumPyro model's posterior and its mean gradient off
zero. Per coordinate, z = mean / (sd / sqrt(n)) over the n stored draws (every 50th of
posteriordb's 10 000, close to independent); the check fails when some |z| exceeds the
two-sided Bonferroni bound at family-wise level 0.001 over the d coordinates.
"""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from scipy import stats

import catalogue

LEVEL = 0.001


def _grouped(names, draws):
    """{site: (n, *shape)} from Stan-named columns (`beta[1]`, `a[2,3]`) of draws (n, k)."""
    cols = {}
    for j, lab in enumerate(names):
        m = re.fullmatch(r"([^\[]+)(?:\[([0-9,]+)\])?", lab)
        site, idx = m.group(1), m.group(2)
        cols.setdefault(site, []).append((tuple(int(i) - 1 for i in idx.split(",")) if idx
                                          else (), j))
    out = {}
    for site, items in cols.items():
        shape = tuple(max(ix[a] for ix, _ in items) + 1 for a in range(len(items[0][0])))
        arr = np.empty((draws.shape[0],) + shape)
        for ix, j in items:
            arr[(slice(None),) + ix] = draws[:, j]
        out[site] = arr
    return out


def unconstrained_draws(post, sites):
    """The flat unconstrained points (n, d) of the target of `post` at latent site values."""
    info = post.target.info["numpyro"]
    first = {k: jnp.asarray(v[0]) for k, v in sites.items()}  # no draw from an improper prior
    tr = handlers.trace(handlers.substitute(handlers.seed(info["model"], 0), data=first)
                        ).get_trace(*info["args"], **info["kwargs"])
    latent = [k for k, s in tr.items() if s["type"] == "sample" and not s["is_observed"]]
    cols = []
    for k in sorted(latent):  # ravel_pytree's order of the latent dict
        t = biject_to(tr[k]["fn"].support)
        u = np.asarray(t.inv(jnp.asarray(sites[k])), dtype=np.float64)
        cols.append(u.reshape(u.shape[0], -1))
    return np.concatenate(cols, axis=1)


def score_z(name, reference_of=None):
    """(z-scores of the mean gradient per unconstrained coordinate, Bonferroni bound, n, d,
    largest round-trip error of the constrained values). `reference_of`: score the model of `name`
    on another posterior's draws (a negative control)."""
    e = catalogue.BY_NAME[name]
    post = e.build()
    ref = catalogue.reference(reference_of or name)
    draws = np.asarray(ref["draws"], dtype=np.float64)
    data = catalogue.load_data(e.data) if e.data else None
    q = _grouped(ref["names"], draws)
    sites = e.sites(data, q) if e.sites else q
    u = unconstrained_draws(post, sites)
    # the stored draws must come back through the target's own constrain map
    back = post.named(u)
    err = max(float(np.max(np.abs(back[k] - draws[:, j])) / (ref["sd"][j] + 1e-300))
              for j, k in enumerate(ref["names"]) if k in back)
    g = np.asarray(jax.vmap(jax.grad(post.target.potential))(jnp.asarray(u)))
    n, d = g.shape
    with np.errstate(all="ignore"):
        z = g.mean(axis=0) / (g.std(axis=0, ddof=1) / np.sqrt(n))
    bound = float(stats.norm.isf(LEVEL / (2 * d)))
    return z, bound, n, d, err
