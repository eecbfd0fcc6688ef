"""`Result`: what every result shares, written once (converged, summary, table, `to_arviz`, `save`,
`predictive`, the verdict's JSON entries, repr); a result class sets `kind` and gives `verdict`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from .._io import output_path, replace_with
from .._scope import float64_methods
from . import build, predictive


def save(res, path, **kw) -> Path:
    """Write `res.to_arviz(**kw)` (or an InferenceData) to `path` as netCDF, atomically; returns the path."""
    output_path(path, "save:", regular=True)
    obj = res if type(res).__name__ in ("InferenceData", "DataTree") else res.to_arviz(**kw)
    replace_with(path, obj.to_netcdf, suffix=".nc")
    return Path(path)


@float64_methods  # draws, predictive checks, tables in float64 (inertia._scope)
class Result:
    """Attributes for values (mean, cov, names, verdict, converged); methods for what takes options."""

    kind = ""

    @property
    def converged(self) -> bool:
        """`verdict.converged`."""
        return self.verdict.converged

    def verdict_dict(self) -> dict:
        """The verdict's JSON entries: converged, problems, numbers, quality and its line."""
        return {**self.verdict.to_dict(), "verdict": self.verdict.line()}

    def summary(self, **kw) -> list:
        """Rows {name, mean, sd, q5, q95, ...} of the printed table."""
        return build.SUMMARY[self.kind](self, **kw)

    def verdict_lines(self) -> list:
        """The table's head: NOT CONVERGED and every problem, when the run did not converge."""
        return [] if self.converged else [self.verdict.line()]

    def table(self, max_rows: Optional[int] = 40) -> str:
        """The summary as aligned text (the least converged `max_rows` parameters), headed by its verdict."""
        dg = getattr(self, "diagnostics", None)
        return "\n".join([*self.verdict_lines(), "" if dg is None else dg.table(max_rows)])

    def to_arviz(self, **kw):
        """InferenceData: the posterior by site or name, with settings, verdict and summary as attributes."""
        return build.TO_ARVIZ[self.kind](self, **kw)

    def save(self, path, **kw):
        """Write `to_arviz(**kw)` with the settings and verdict as netCDF (`inertia.load`)."""
        return save(self, path, **kw)

    def predictive(self, rng_key, *model_args, **kwargs) -> dict:
        """Posterior predictive draws by site (NumPyro's Predictive; `results.predictive`)."""
        return predictive.predictive(self, rng_key, *model_args, **kwargs)

    def _shape(self) -> str:
        c, n, d = self.draws.shape
        method = getattr(self, "method", None)
        return (f"{method}: " if method else "") + f"{c} chains x {n} draws, d = {d}"

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self._shape()}, "
                f"{'converged' if self.converged else 'NOT CONVERGED'}>")


__all__ = ["Result"]
