"""`inertia reproduce`: rerun one of the papers' experiments (resumable).

The experiments are not part of the installed library: they live in the `reproductions/` folder
of a source checkout, beside `inertia/` and `benchmarks/`, and this command imports them from there.
"""
from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

from ._args import Formatter, check_output_dir, positive_int

FOLDER = Path(__file__).resolve().parents[2] / "reproductions"


def reproductions(name: str = ""):
    """The checkout's `reproductions` package (its submodule `name`), or a clear error naming the
    folder when this install has none."""
    if not (FOLDER / "__init__.py").is_file():
        raise ImportError(f"`inertia reproduce` runs the experiments of a source checkout's "
                          f"reproductions/ folder, and there is none at {FOLDER}: clone the "
                          "repository and install it with `pip install -e .` to run them")
    if str(FOLDER.parent) not in sys.path:
        sys.path.insert(0, str(FOLDER.parent))
    return importlib.import_module("reproductions" + (f".{name}" if name else ""))


def add_parser(sub):
    """Add `inertia reproduce` to the top-level parser."""
    try:
        names = ", ".join(sorted(reproductions("_catalog").CATALOG)) + " (details: --list)"
    except ImportError:
        names = f"none here (they need the reproductions/ folder of a source checkout: {FOLDER})"
    p = sub.add_parser(
        "reproduce", help="rerun one of the papers' experiments (resumable)", formatter_class=Formatter,
        description="Rerun one of the papers' experiments (the reproductions/ folder of a source "
                    "checkout). Every finished cell is saved under --out as it completes; rerunning "
                    "the same command resumes.\n\nexperiments: " + names)
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="experiment name (omit, or use --list, to list them)")
    p.add_argument("--quick", action="store_true", help="reduced size (what the tests run)")
    p.add_argument("--out", type=Path, default=None,
                   help="output folder (default: runs/NAME, or runs/NAME-quick with --quick)")
    p.add_argument("--list", action="store_true",
                   help="list the experiments with description, rough cost and data needs")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="where grid cells run (ray needs the optional ray extra)")
    p.add_argument("--address", default=None, help="Ray cluster address (with --backend ray)")
    p.add_argument("--reps", type=positive_int, default=None,
                   help="repetitions per cell group, where the experiment has them (default: "
                        "the paper's)")
    p.add_argument("--saved-only", action="store_true",
                   help="compute nothing: report on the cells already saved under --out (the VI "
                        "experiments; a partial run's tables count only the complete comparisons)")
    p.set_defaults(func=run, interrupted=interrupted)


def _out(args) -> Path:
    return args.out or Path("runs") / (args.name + ("-quick" if args.quick else ""))


def interrupted(args) -> str:
    out = _out(args)
    again = f"inertia reproduce {args.name}" + (" --quick" if args.quick else "")
    if args.out:
        again += f" --out {args.out}"
    return (f"interrupted; every finished cell is saved under {out}: run `{again}` again to "
            "resume where it stopped")


def run(args) -> int:
    catalog = reproductions("_catalog")
    if args.list or not args.name:
        print(catalog.describe(reproductions().uncatalogued()))
        return 0
    if args.name not in catalog.CATALOG and args.name not in reproductions().uncatalogued():
        raise ValueError(f"unknown experiment {args.name!r}; available: "
                         f"{', '.join(sorted(catalog.CATALOG))} (see --list)")
    if args.backend != "ray" and args.address:
        raise ValueError("--address applies to --backend ray only")
    out = _out(args)
    check_output_dir(out, "--out")
    experiments = reproductions()
    experiments.configure(args.backend, args.address)
    registry = experiments.registry()
    if args.reps is not None:
        takes = sorted(n for n, f in registry.items() if "reps" in inspect.signature(f).parameters)
        if args.name not in takes:
            raise ValueError(f"--reps applies to the experiments with repetitions "
                             f"({', '.join(takes)}); {args.name} has none")
    options = {"reps": args.reps} if args.reps is not None else {}
    if args.saved_only:
        options["saved_only"] = True
    registry[args.name](Path(out), args.quick, **options)
    print(f"results in {out}")
    return 0
