"""`Verdict`: whether a run is to be trusted, every reason it is not, and the numbers behind them.

Every result carries one; it is the only outcome of a run (a fit's stop, the Gaussian's quality, the
chains' diagnostics, a calibration's check, an escalation). Immutable: `with_problem` and `merge`
return new ones.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any, Mapping, Optional

EXIT_OK, EXIT_UNCONVERGED = 0, 3  # the command line's exit statuses for a finished run
EXIT_UNRELIABLE = 4  # `inertia fit` converged, but q is a poor approximation (k-hat > 0.7)


def _plain(v):
    """v with NumPy scalars and arrays as Python numbers and lists (JSON-ready)."""
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "tolist"):
        return v.tolist()
    return v


@dataclasses.dataclass(frozen=True)
class Verdict:
    """converged (no problem found), problems (plain-language reasons), numbers (the figures compared) and
    quality (a fitted Gaussian's word, `variational.quality`; None where not judged).
    """

    converged: bool
    problems: tuple = ()
    numbers: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    quality: Optional[str] = None

    def __post_init__(self):
        object.__setattr__(self, "problems", tuple(str(p) for p in self.problems))
        object.__setattr__(self, "numbers", dict(self.numbers))
        object.__setattr__(self, "converged", bool(self.converged) and not self.problems)

    @classmethod
    def of(cls, problems=(), **numbers) -> "Verdict":
        """Converged exactly when there is no problem."""
        return cls(not problems, tuple(problems), numbers)

    def with_problem(self, problem: str, **numbers) -> "Verdict":
        """This verdict with one more reason not to trust the run (and its numbers)."""
        return dataclasses.replace(self, converged=False, problems=self.problems + (problem,),
                                   numbers={**self.numbers, **numbers})

    def with_numbers(self, **numbers) -> "Verdict":
        """This verdict with more numbers and no new problem."""
        return dataclasses.replace(self, numbers={**self.numbers, **numbers})

    def merge(self, *others: "Verdict") -> "Verdict":
        """One verdict of several checks: converged when all are, every problem, all numbers."""
        out = self
        for o in others:
            if o is not None:
                out = Verdict(out.converged and o.converged, out.problems + o.problems,
                              {**out.numbers, **o.numbers}, out.quality or o.quality)
        return out

    def line(self) -> str:
        """"converged", or "NOT CONVERGED: " and every problem."""
        if self.converged:
            return "converged"
        return "NOT CONVERGED: " + ("; ".join(self.problems) or "no verdict")

    def exit_status(self, allow_unconverged: bool = False, allow_unreliable: bool = False) -> int:
        """The command line's exit status: 0; 3 when not converged, 4 for an unreliable Gaussian."""
        if not self.converged:
            return EXIT_OK if allow_unconverged else EXIT_UNCONVERGED
        return EXIT_UNRELIABLE if self.quality == "unreliable" and not allow_unreliable else EXIT_OK

    def exit(self, allow_unconverged: bool, what: str, advice: str,
             allow_unreliable: bool = False) -> int:
        """Say on stderr why the run is not to be trusted and what to do; return `exit_status(...)`."""
        if not self.converged:
            if allow_unconverged:
                print(f"warning: {what} not converged (see above); exit status 0 because of "
                      "--allow-unconverged", file=sys.stderr)
            else:
                print(f"error: {what} not converged (see above): the numbers are not to be "
                      f"trusted. {advice}, or pass --allow-unconverged to exit with status 0",
                      file=sys.stderr)
        elif self.quality == "unreliable":
            if allow_unreliable:
                print("warning: the Gaussian is an unreliable approximation (see above); exit "
                      "status 0 because of --allow-unreliable", file=sys.stderr)
            else:
                print("error: the fit converged but the Gaussian is an unreliable approximation "
                      "of this posterior (Pareto k-hat > 0.7, see above): run `inertia sample`, "
                      "or pass --allow-unreliable to exit with status 0", file=sys.stderr)
        return self.exit_status(allow_unconverged, allow_unreliable)

    def to_dict(self) -> dict:
        """JSON-ready: {"converged", "problems", "numbers"} and "quality" where judged."""
        return {"converged": self.converged, "problems": list(self.problems),
                "numbers": _plain(self.numbers), **({"quality": self.quality} if self.quality else {})}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Verdict":
        """The verdict `to_dict` wrote."""
        return cls(d["converged"], tuple(d["problems"]), d["numbers"], d.get("quality"))


__all__ = ["Verdict", "EXIT_OK", "EXIT_UNCONVERGED", "EXIT_UNRELIABLE"]
