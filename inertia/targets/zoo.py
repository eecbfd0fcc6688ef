"""Named models for the command line: `make_target("logistic", data="wdbc")` and friends."""
from __future__ import annotations

from .base import Target, TargetError
from .._scope import in_float64
from .. import resources
from ..resources import estimate_fit_bytes, largest_dim

MODELS = ("gaussian-kappa", "logistic", "probit", "graph-probit")


def is_csv_path(data: str) -> bool:
    """True when --data names a file (a path, or a name ending .csv/.tsv/.txt), not a data set."""
    from pathlib import Path

    return (str(data).lower().endswith((".csv", ".tsv", ".txt")) or "/" in str(data)
            or Path(data).is_file())


@in_float64
def make_target(model: str, *, data: str | None = None, dim: int = 8, kappa: float = 300.0,
                prior_scale: float = 1.0, response: str | None = None,
                drop_missing: bool = False) -> Target:
    """Build a CLI model: the kappa-family Gaussian, a Bayesian GLM on a data set, graph-probit, or a user's
    model file ("FILE.py:NAME"); GLM options `data`, `response`, `drop_missing`, `prior_scale`.
    """
    if model.endswith(".py") or ".py:" in model:
        from ..data.named import read_named
        from .modelfile import target_from_file

        return target_from_file(model, read_named(data, drop_missing=drop_missing)
                                if data else None)
    if model == "gaussian-kappa" and (data is not None or response is not None):
        raise TargetError("--data and --response apply to logistic, probit, graph-probit and "
                          "model files; gaussian-kappa takes --dim and --kappa")
    if model == "gaussian-kappa":
        from .gaussian import kappa_family

        need, have = estimate_fit_bytes("sym", int(dim), 8), resources.available_bytes()
        if need > have:  # fail before the O(d^3) random rotation, not after minutes of it
            raise MemoryError(f"gaussian-kappa at d = {dim} needs about {need / 2**30:.1f} GiB "
                              f"for a fit and {have / 2**30:.1f} GiB is free; the largest d that "
                              f"fits is about {largest_dim('sym', 8, budget=have)}")

        return kappa_family(int(dim), float(kappa))
    if model in ("logistic", "probit"):
        from ..data import load_dataset
        from .glm import logistic_regression, probit_regression

        if data is not None and is_csv_path(data):
            from ..data.csv import load_csv

            ds = load_csv(data, response, drop_missing=drop_missing)
            _check_size(data, ds.X.shape)
        else:
            if response is not None:
                raise TargetError(f"--response applies to a CSV --data; the built-in data set "
                                  f"{data or 'wdbc'!r} has its own response")
            ds = load_dataset(data or "wdbc")
        build = logistic_regression if model == "logistic" else probit_regression
        return build(ds.X, ds.y, prior_scale=prior_scale, intercept=True,
                     name=f"{model}-{ds.name}", feature_names=ds.feature_names)
    if model == "graph-probit":
        from .graph_probit import graph_probit_dataset

        return graph_probit_dataset(data or "sonar")
    raise TargetError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")


LARGE_D = 2000  # above this many parameters a CSV's model is announced before the O(d^3) work


def _check_size(path, shape) -> None:
    """Before a GLM on a CSV of shape (n, p): MemoryError when a fit's d x d arrays exceed free memory."""
    import warnings

    n, p = shape
    d = p + 1
    need, have = estimate_fit_bytes("sym", d, 8), resources.available_bytes()
    if need > have:
        raise MemoryError(f"{path}: {p} predictor columns make d = {d} coefficients; a "
                          f"full-covariance fit or sampler needs about {need / 2**30:.1f} GiB "
                          f"(d x d matrices) and {have / 2**30:.1f} GiB is free; the largest d "
                          f"that fits is about {largest_dim('sym', 8, budget=have)}: select "
                          "fewer predictor columns")
    if d > LARGE_D:
        warnings.warn(f"{path}: {p} predictor columns make d = {d} coefficients ({n} rows); "
                      f"every d x d factorisation costs about d^3 = {float(d) ** 3:.1e} flops, "
                      "so building the target and each run take minutes; select fewer "
                      "predictor columns for a quick run", UserWarning, stacklevel=3)
