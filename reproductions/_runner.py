"""Shared machinery for `inertia reproduce`: resumable cells, progress with ETA, outputs."""
from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from inertia._json import dump_json  # noqa: F401  (the experiments' JSON writer)
from inertia._json import to_jsonable as _to_jsonable


def cell_key(**fields) -> str:
    """A readable, filesystem-safe key for one cell (dataset x method x batch x seed ...)."""
    parts = [f"{k}={fields[k]}" for k in sorted(fields)]
    raw = "__".join(parts)
    safe = "".join(ch if ch.isalnum() or ch in "=._-" else "-" for ch in raw)
    if len(safe) > 150:
        safe = safe[:120] + "-" + hashlib.sha1(raw.encode()).hexdigest()[:12]
    return safe


def cell_checksum(key: str, value) -> str:
    """sha256 of a cell's key (its settings) and its JSON value (its numbers)."""
    text = json.dumps({"cell": key, "value": _to_jsonable(value)}, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class CellStore:
    """One JSON file per finished cell under `root`; a resumed run skips cells already saved."""

    def __init__(self, root):
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"output folder {self.root} is a file; give a folder name")
        self.root.mkdir(parents=True, exist_ok=True)
        self.computed = 0
        self.reused = 0

    def path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def has(self, key: str) -> bool:
        return self.path(key).exists()

    def load(self, key: str):
        """The saved cell's value; a truncated, corrupt or edited file (its checksum of the cell's
        key and numbers does not match) raises ValueError naming it."""
        path = self.path(key)
        try:
            saved = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"saved cell {path} is unreadable (truncated or corrupt: {err}); "
                             "delete it and rerun to recompute that cell") from None
        if not (isinstance(saved, dict) and set(saved) == {"cell", "value", "sha256"}):
            raise ValueError(f"saved cell {path} carries no checksum (not written by this "
                             "version of inertia, or edited); delete it to recompute that cell")
        if saved["cell"] != key or saved["sha256"] != cell_checksum(key, saved["value"]):
            raise ValueError(f"saved cell {path} does not match its checksum: its numbers or "
                             "settings were changed after it was saved; delete it to recompute "
                             "that cell")
        return saved["value"]

    def save(self, key: str, value) -> None:
        value = _to_jsonable(value)
        dump_json({"cell": key, "value": value, "sha256": cell_checksum(key, value)},
                  self.path(key))

    def get_or_compute(self, key: str, fn: Callable[[], Any]):
        """Load the cell if saved, otherwise compute, save (atomically) and return it."""
        if self.has(key):
            self.reused += 1
            return self.load(key)
        value = _to_jsonable(fn())
        self.save(key, value)
        self.computed += 1
        return value


class Progress:
    """Progress lines with an ETA on stderr: `[name] 3/12 cells, 25%, elapsed 4s, ETA 12s`."""

    def __init__(self, total: int, name: str = "", stream=None, quiet: bool = False):
        self.total, self.name, self.done = max(int(total), 1), name, 0
        self.t0 = time.perf_counter()
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.timed = 0  # cells that cost time (reused cells do not inform the ETA)
        self.timed_seconds = 0.0

    def update(self, label: str = "", reused: bool = False, seconds: float | None = None):
        self.done += 1
        if not reused and seconds is not None:
            self.timed += 1
            self.timed_seconds += seconds
        elapsed = time.perf_counter() - self.t0
        rate = self.timed_seconds / self.timed if self.timed else 0.0
        eta = rate * (self.total - self.done)
        if not self.quiet:
            tag = " (saved)" if reused else ""
            print(f"[{self.name}] {self.done}/{self.total} {100 * self.done / self.total:.0f}% "
                  f"elapsed {elapsed:.0f}s ETA {eta:.0f}s {label}{tag}", file=self.stream,
                  flush=True)


_BACKEND = {"backend": "local", "address": None}


def configure(backend: str = "local", address: str | None = None) -> None:
    """Choose where `run_cells` computes missing cells ("local" process or "ray")."""
    if backend not in ("local", "ray"):
        raise ValueError(f"unknown backend {backend!r}; choose 'local' or 'ray'")
    _BACKEND.update(backend=backend, address=address)


def run_cells(store: CellStore, cells: Iterable[tuple[str, Callable[[], Any]]], name: str = "",
              quiet: bool = False) -> dict:
    """Compute (or load) each (key, fn) cell with progress; return {key: value}.

    With `configure("ray", address)` the missing cells run as Ray tasks (see `_ray.py`); each is
    saved as soon as it finishes, and the returned values are those the local backend returns.
    """
    cells = list(cells)
    prog = Progress(len(cells), name, quiet=quiet)
    out = {}
    if _BACKEND["backend"] == "ray":
        from ._ray import run_remote

        missing = []
        for key, fn in cells:
            if store.has(key):
                store.reused += 1
                out[key] = store.load(key)
                prog.update(key, reused=True)
            else:
                missing.append((key, fn))

        def done(key, value, seconds):
            store.save(key, value)
            store.computed += 1
            out[key] = value
            prog.update(key, seconds=seconds)

        run_remote(missing, done, address=_BACKEND["address"])
        return {key: out[key] for key, _ in cells}
    for key, fn in cells:
        reused = store.has(key)
        t0 = time.perf_counter()
        out[key] = store.get_or_compute(key, fn)
        prog.update(key, reused=reused, seconds=time.perf_counter() - t0)
    return out


def markdown_table(header: list[str], rows: list[list[Any]], floatfmt: str = ".3g") -> str:
    """A GitHub-flavoured Markdown table."""
    def fmt(v):
        if v is None:
            return "—"
        if isinstance(v, float):
            return format(v, floatfmt)
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_text(path, text: str) -> Path:
    """Write text atomically; a failed write raises OSError."""
    from inertia._io import write_text_atomic

    return write_text_atomic(path, text)


def start(out) -> tuple[Path, float, CellStore]:
    """An experiment's output folder (as a Path), its start time and its cell store (out/cells)."""
    out = Path(out)
    return out, time.perf_counter(), CellStore(out / "cells")


def save_plot(fig, path, dpi: int = 110, **layout) -> None:
    """Lay out (`fig.tight_layout(**layout)`), write and close a matplotlib figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout(**layout)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def finish(out, name: str, store: CellStore, summary: dict, table: str, t0: float) -> dict:
    """Write an experiment's results.json and results.md (with cell and time counts)."""
    summary.update(experiment=name, cells_computed=store.computed, cells_reused=store.reused,
                   seconds=time.perf_counter() - t0)
    dump_json(summary, Path(out) / "results.json")
    write_text(Path(out) / "results.md", f"# {name}\n\n{table}")
    return summary
