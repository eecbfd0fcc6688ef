"""Reproductions of the papers' experiments (`inertia reproduce NAME`).

Each module in this package may define ``EXPERIMENTS = {"name": run}`` with
``run(out: pathlib.Path, quick: bool, **options) -> dict``; the registry below discovers them,
so adding an experiment is one new file. A subpackage (``sgmcmc``, ``vi_experiments``, ``hfhr``:
one module per paper section) merges its modules' ``EXPERIMENTS`` in its ``__init__``.
"""
from __future__ import annotations

import importlib
import pkgutil

from ._catalog import CATALOG, describe  # noqa: F401  (`inertia reproduce --list`)
from ._runner import configure  # noqa: F401  (the backend grid cells run on: local or Ray)


def registry() -> dict:
    """Map experiment name -> run function, discovered from this package's modules; each runs in
    float64 (JAX's thread-local x64: its building blocks as well as its fits)."""
    from inertia._scope import in_float64

    found = {}
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{mod.name}")
        for name, fn in getattr(module, "EXPERIMENTS", {}).items():
            if name in found:
                raise RuntimeError(f"experiment {name!r} defined twice")
            found[name] = in_float64(fn)
    return found


def uncatalogued() -> dict:
    """Registered experiments missing from CATALOG (new ones): name -> docstring's first line.
    Imports every experiment module (and JAX)."""
    return {name: ((fn.__doc__ or "").strip().splitlines() or ["(no description)"])[0]
            for name, fn in registry().items() if name not in CATALOG}


def run(name: str, out, quick: bool = False, **options) -> dict:
    reg = registry()
    if name not in reg:
        raise KeyError(f"unknown experiment {name!r}; available: {', '.join(sorted(reg))}")
    return reg[name](out, quick, **options)
