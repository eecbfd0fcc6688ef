"""Named posterior summaries shared by `vi`, `mcmc` and the CLI: parameter names for the flat
coordinates of a target, constrained draws by site, and a table of mean, sd and quantiles."""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import numpy as np

QUANTILES = (0.05, 0.95)


def flat_names(dim: int, names: Optional[Sequence[str]] = None) -> list:
    """Names of the flat coordinates: the target's own (`info["names"]`) or x[0], x[1], ..."""
    if names is not None and len(names) == dim:
        return [str(n) for n in names]
    return [f"x[{i}]" for i in range(dim)]


def check_unique_names(sites: Mapping[str, tuple], what: str = "model") -> None:
    """ValueError when two sites' flat display names coincide (a scalar site named "b[0]" beside
    a vector site `b`): the tables and files would show one row for two quantities."""
    seen = {}
    for site in sorted(sites):
        shape = tuple(sites[site])
        flat = [site] if shape == () else [f"{site}[{','.join(map(str, i))}]"
                                            for i in np.ndindex(*shape)]
        for name in flat:
            if name in seen and seen[name] != site:
                other = seen[name]
                raise ValueError(
                    f"the {what}'s sites {other!r} and {site!r} both give a coordinate named "
                    f"{name!r} (a site's elements are named site[i]); rename one of them, e.g. "
                    f"{(other if '[' in other else site).replace('[', '_').replace(']', '')!r}")
            seen[name] = site


def site_names(sites: Mapping[str, tuple]) -> list:
    """Flat names of pytree sites in `jax.flatten_util.ravel_pytree` order (sorted keys, C order)."""
    check_unique_names(sites)
    out = []
    for site in sorted(sites):
        shape = tuple(sites[site])
        if shape == ():
            out.append(site)
            continue
        for idx in np.ndindex(*shape):
            out.append(f"{site}[{','.join(str(i) for i in idx)}]")
    return out


def named_draws(draws: np.ndarray, names: Optional[Sequence[str]] = None,
                constrain: Optional[Callable] = None) -> dict:
    """{name: (n,) draws} of scalar quantities; through `constrain` (NumPyro sites) when given."""
    draws = np.asarray(draws)
    if constrain is None:
        labels = flat_names(draws.shape[-1], names)
        return {lab: draws[..., i] for i, lab in enumerate(labels)}
    out = {}
    for site, val in constrain(draws).items():
        val = np.asarray(val)
        shape = val.shape[draws.ndim - 1:]
        if shape == ():
            out[site] = val
            continue
        for idx in np.ndindex(*shape):
            out[f"{site}[{','.join(str(i) for i in idx)}]"] = val[(Ellipsis,) + idx]
    return out


def summarize(named: Mapping[str, np.ndarray], quantiles=QUANTILES) -> list:
    """Rows {name, mean, sd, q5, q95} of marginal summaries over all leading axes."""
    rows = []
    for name, v in named.items():
        v = np.asarray(v, dtype=float).ravel()
        q = np.quantile(v, quantiles)
        rows.append({"name": name, "mean": float(v.mean()), "sd": float(v.std(ddof=1)),
                     **{f"q{int(round(100 * p))}": float(x) for p, x in zip(quantiles, q)}})
    return rows


def format_table(rows: Sequence[Mapping], columns: Optional[Sequence[str]] = None,
                 max_rows: int = 60) -> str:
    """Aligned text table; columns default to all numeric fields of the first row."""
    if not rows:
        return "(no parameters)"
    columns = list(columns or [k for k in rows[0] if k != "name"])
    header = {"q5": "5%", "q95": "95%"}
    shown = list(rows[:max_rows])
    width = max(9, max(len(str(r["name"])) for r in shown))
    lines = [f"{'':<{width}} " + " ".join(f"{header.get(c, c):>10}" for c in columns)]
    for r in shown:
        cells = []
        for c in columns:
            v = r.get(c)
            cells.append(f"{'n/a':>10}" if v is None or (isinstance(v, float) and not
                                                         np.isfinite(v)) else f"{v:>10.4g}")
        lines.append(f"{str(r['name']):<{width}} " + " ".join(cells))
    if len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more (all in the JSON output)")
    return "\n".join(lines)


__all__ = ["flat_names", "check_unique_names", "site_names", "named_draws", "summarize", "format_table"]
