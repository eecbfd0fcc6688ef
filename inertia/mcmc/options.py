"""`SampleOptions`: the switches of `inertia.mcmc.sample` beyond its named arguments, and their defaults."""
from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class SampleOptions:
    """How `sample` runs its chains (None: chosen by the warm-up).

    Kernel: `step_size`, `gamma`, `alpha`, `num_leapfrog`. Warm-up: `precondition` ("auto", "laplace",
    "vi", "none"), `frame` ("auto", "dense", "low-rank", "diagonal"), `bias_tol`, `target_accept`
    (None: 0.8), `reparam` ("auto" or False). Run: `thinning`, `target_ess`, `max_steps` (default
    100 x num_steps), `on_divergence` ("raise" or "stop"), `diagnostics`. Details: docs/hfhr.md.
    """

    step_size: Optional[float] = None
    gamma: Optional[float] = None
    alpha: Optional[float] = None
    num_leapfrog: Optional[int] = None
    thinning: int = 1
    on_divergence: str = "raise"
    precondition: str = "auto"
    bias_tol: float = 0.03
    target_ess: Optional[float] = None
    max_steps: Optional[int] = None
    diagnostics: bool = True
    target_accept: Optional[float] = None
    frame: str = "auto"
    reparam: object = "auto"

    @classmethod
    def of(cls, options: Optional["SampleOptions"], keywords: dict) -> "SampleOptions":
        """`options` (default SampleOptions()) with keyword overrides; an unknown keyword raises TypeError."""
        if options is not None and not isinstance(options, SampleOptions):
            raise TypeError(f"options must be a SampleOptions, got {type(options).__name__}")
        unknown = sorted(set(keywords) - set(FIELDS))
        if unknown:
            raise TypeError(f"sample() got unknown option(s) {unknown}; SampleOptions fields: "
                            f"{', '.join(FIELDS)}")
        return (options or cls()).replace(**keywords)

    @property
    def manual(self) -> bool:
        """Whether a kernel parameter is given (no automatic warm-up)."""
        return any(v is not None for v in (self.step_size, self.gamma, self.alpha,
                                           self.num_leapfrog))

    def replace(self, **changes) -> "SampleOptions":
        return dataclasses.replace(self, **changes)


FIELDS = tuple(f.name for f in dataclasses.fields(SampleOptions))

__all__ = ["SampleOptions", "FIELDS"]
