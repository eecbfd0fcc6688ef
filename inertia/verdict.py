"""`Verdict`: whether a run is to be trusted, every reason it is not, and the numbers behind them.

Every result carries one (`FitResult.verdict`, `SampleResult.verdict`, `CalibrationResult.verdict`,
`LoadedResult.verdict`); tables, JSON, `to_arviz()` attributes and the command line's exit status
read it. A verdict is immutable: `with_problem` and `merge` return new ones, so a further check
adds its reason and numbers without touching the code that made the first.
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
    """converged: no problem was found; problems: each reason in plain language; numbers: the
    figures the checks compared with their thresholds (R-hat, ESS, divergences, ...)."""

    converged: bool
    problems: tuple = ()
    numbers: Mapping[str, Any] = dataclasses.field(default_factory=dict)

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
        return Verdict(False, self.problems + (problem,), {**self.numbers, **numbers})

    def with_numbers(self, **numbers) -> "Verdict":
        """This verdict with more numbers and no new problem."""
        return Verdict(self.converged, self.problems, {**self.numbers, **numbers})

    def merge(self, *others: "Verdict") -> "Verdict":
        """One verdict of several checks: converged when all are, every problem, all numbers."""
        out = self
        for o in others:
            if o is not None:
                out = Verdict(out.converged and o.converged, out.problems + o.problems,
                              {**out.numbers, **o.numbers})
        return out

    def line(self) -> str:
        """"converged", or "NOT CONVERGED: " and every problem."""
        if self.converged:
            return "converged"
        return "NOT CONVERGED: " + ("; ".join(self.problems) or "no verdict")

    def exit_status(self, allow_unconverged: bool = False) -> int:
        """The command line's exit status: 0, or 3 when not converged (0 if allowed)."""
        return EXIT_OK if self.converged or allow_unconverged else EXIT_UNCONVERGED

    def exit(self, allow_unconverged: bool, what: str, advice: str) -> int:
        """The command line's ending: say on stderr that `what` ("the fit has") not converged and
        what to do (`advice`); return `exit_status(allow_unconverged)`."""
        if not self.converged:
            if allow_unconverged:
                print(f"warning: {what} not converged (see above); exit status 0 because of "
                      "--allow-unconverged", file=sys.stderr)
            else:
                print(f"error: {what} not converged (see above): the numbers are not to be "
                      f"trusted. {advice}, or pass --allow-unconverged to exit with status 0",
                      file=sys.stderr)
        return self.exit_status(allow_unconverged)

    def to_dict(self) -> dict:
        """JSON-ready: {"converged", "problems", "numbers"}."""
        return {"converged": self.converged, "problems": list(self.problems),
                "numbers": _plain(self.numbers)}

    @classmethod
    def from_dict(cls, d: Optional[Mapping]) -> "Verdict":
        """The verdict `to_dict` wrote (also older files: a `converged` flag with `problems`,
        `reason`, `stopped` or `warning`)."""
        d = dict(d or {})
        problems = list(d.get("problems") or [])
        stopped = d.get("stopped") if isinstance(d.get("stopped"), Mapping) else None
        if not problems and stopped is not None and not stopped.get("converged"):
            problems.append(str(stopped.get("reason") or "not converged"))
        if d.get("warning") and d["warning"] not in problems:
            problems.append(str(d["warning"]))
        conv = d.get("converged")
        if conv is None and not problems:
            problems.append("no verdict was recorded")
        elif conv is False and not problems:
            problems.append("not converged")
        numbers = dict(d.get("numbers") or {})
        for k in ("max_z", "z_threshold", "max_rhat", "min_ess_bulk", "min_ess_tail"):
            if k in d and k not in numbers:
                numbers[k] = d[k]
        return cls(bool(conv) and not problems, tuple(problems), numbers)

    # read-only mapping access, for code that read the older dict verdicts ("verdict": the line)
    def __getitem__(self, key):
        return {**self.to_dict(), "verdict": self.line()}[key]

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default


__all__ = ["Verdict", "EXIT_OK", "EXIT_UNCONVERGED", "EXIT_UNRELIABLE"]
