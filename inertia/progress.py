"""Progress of a run: a tqdm bar with phases, ETA and live figures on a terminal; otherwise at most
one plain line every `LINE_EVERY` seconds. ETAs are measured after a phase's first (compiling) update.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Callable, Optional

LINE_EVERY = 5.0  # seconds between plain lines off a terminal


class Progress:
    """A run's progress: `phase(name, total)`, `update(n, **figures)`, `note(message)`, `close()`."""

    def __init__(self, label: str, enabled: bool = True, file=None, tty: Optional[bool] = None,
                 clock: Callable[[], float] = time.monotonic, every: float = LINE_EVERY):
        self.label, self.enabled, self.clock, self.every = label, bool(enabled), clock, every
        self.file = sys.stderr if file is None else file
        if tty is None:
            isatty = getattr(self.file, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty = tty and self.enabled
        self.bar, self.name, self.total, self.done = None, "", None, 0
        self.figures: dict = {}
        self.t_phase = self.last_line = self.first = None
        self.lines = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def phase(self, name: str, total: Optional[int] = None):
        """Start phase `name` of `total` units (None: no known length)."""
        if not self.enabled:
            return self
        self.name, self.total, self.done, self.figures = name, total, 0, {}
        self.t_phase = self.clock()
        self.first = None  # (time, units) at the first update: the ETA's rate starts there
        if self.tty:
            from tqdm.auto import tqdm

            if self.bar is not None:
                self.bar.close()
            sized = _has_width(self.file)  # a terminal of unknown width: a bar of 100 columns
            self.bar = tqdm(total=total, desc=f"{self.label} {name}", file=self.file,
                            leave=False, dynamic_ncols=sized, ncols=None if sized else 100,
                            smoothing=0.1, bar_format=None if total else "{desc}: {elapsed}")
            self._tick()
        else:
            self._line()
        return self

    def update(self, n: int = 0, **figures):
        """Advance by n units; `figures` (name=value) are shown beside the bar."""
        if not self.enabled:
            return
        self.done += n
        self.figures.update({k: v for k, v in figures.items() if v is not None})
        first = self.first is None and n > 0
        if first:  # the first block carries the compilation: rates are measured after it
            self.first = (self.clock(), self.done)
        if self.bar is not None:
            if self.figures:
                self.bar.set_postfix({k: _fmt(v) for k, v in self.figures.items()}, refresh=False)
            if first:  # tqdm's rate and ETA restart here, from measured step times only
                self.bar.reset(total=self.total)
                self.bar.n = self.done
                self.bar.refresh()
            else:
                self.bar.update(n)
        elif not self.tty:
            self._line()

    def extend(self, total: int):
        """The phase now runs to `total` units (a run that decided to go on)."""
        if not self.enabled:
            return
        self.total = total
        if self.bar is not None:
            self.bar.total = total
            self.bar.refresh()

    def note(self, message: str):
        """One line always shown (why a run extends, re-adapts or stops), not subject to LINE_EVERY."""
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(f"{self.label}: {message}", file=self.file)
        else:
            print(f"{self.label}: {message}", file=self.file, flush=True)
            self.lines += 1

    def _line(self):
        now = self.clock()
        if self.last_line is not None and now - self.last_line < self.every:
            return
        self.last_line = now
        parts = [f"{self.label}: {self.name}"]
        if self.total:
            parts.append(f"{self.done}/{self.total} ({100 * self.done / self.total:.0f}%)")
        elapsed = now - (self.t_phase if self.t_phase is not None else now)
        parts.append(f"{elapsed:.0f}s")
        if self.total and self.first is not None and self.done > self.first[1]:
            rate = (now - self.first[0]) / (self.done - self.first[1])  # after the compilation
            parts.append(f"ETA {rate * max(self.total - self.done, 0):.0f}s")
        parts += [f"{k} {_fmt(v)}" for k, v in self.figures.items()]
        print("  ".join(parts), file=self.file, flush=True)
        self.lines += 1

    def _tick(self):
        """Redraw the bar every second from a daemon thread, so a phase without updates shows its time."""
        if getattr(self, "_ticker", None) is not None:
            return
        import threading

        self._stop = threading.Event()

        def loop():
            while not self._stop.wait(1.0):
                bar = self.bar
                if bar is not None:
                    bar.refresh()

        self._ticker = threading.Thread(target=loop, name="inertia-progress", daemon=True)
        self._ticker.start()

    def close(self):
        if getattr(self, "_ticker", None) is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _has_width(file) -> bool:
    try:
        return os.get_terminal_size(file.fileno()).columns > 0
    except (OSError, AttributeError, ValueError):
        return False


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


LARGE_ROWS = 100_000  # data rows above which a command announces its passes over the data


def announce_rows(label: str, rows: int, params: int, what: str) -> None:
    """One stderr line before work that passes over more than LARGE_ROWS rows."""
    if rows > LARGE_ROWS:
        print(f"{label}: {rows:,} rows, {params} parameters: {what} (passes over every row; "
              "minutes at millions of rows)", file=sys.stderr, flush=True)


LONG_RUN = 10 ** 8  # steps above which a run is announced before it starts
FASTEST_STEP = 1e-6  # seconds: a lower bound on one compiled update or sampling step


def warn_long_run(num_steps, what: str = "num_steps") -> None:
    """A RuntimeWarning before a run of more than LONG_RUN steps, with its least time (FASTEST_STEP each)."""
    import warnings

    if num_steps is None or num_steps <= LONG_RUN:
        return
    hours = num_steps * FASTEST_STEP / 3600
    span = f"{hours / 24:,.0f} days" if hours > 48 else f"{hours:,.1f} hours"
    warnings.warn(f"{what} = {num_steps:,} steps takes at least {span} (at one microsecond a "
                  "step, faster than any model runs); the progress line gives the ETA measured "
                  "after the first block. Stop it with Ctrl-C, or ask for fewer steps",
                  RuntimeWarning, stacklevel=3)


def progress(label: str, enabled) -> Progress:
    """A `Progress`, or a disabled one for enabled False/None; an existing Progress passes through."""
    if isinstance(enabled, Progress):
        return enabled
    return Progress(label, enabled=bool(enabled))


__all__ = ["Progress", "progress", "warn_long_run", "LINE_EVERY", "LONG_RUN"]
