"""`inertia reproduce`: rerun one of the papers' experiments (resumable)."""
from __future__ import annotations

from pathlib import Path

from ._args import Formatter, check_output_dir, positive_int


def add_parser(sub):
    """Add `inertia reproduce` to the top-level parser."""
    from inertia.experiments import CATALOG

    p = sub.add_parser(
        "reproduce", help="rerun one of the papers' experiments (resumable)", formatter_class=Formatter,
        description="Rerun one of the papers' experiments. Every finished cell is saved under "
                    "--out as it completes; rerunning the same command resumes.\n\n"
                    "experiments: " + ", ".join(sorted(CATALOG)) + " (details: --list)")
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
    from inertia.experiments import CATALOG, describe, uncatalogued

    if args.list or not args.name:
        print(describe(uncatalogued()))
        return 0
    if args.name not in CATALOG and args.name not in uncatalogued():
        raise ValueError(f"unknown experiment {args.name!r}; available: "
                         f"{', '.join(sorted(CATALOG))} (see --list)")
    if args.backend != "ray" and args.address:
        raise ValueError("--address applies to --backend ray only")
    out = _out(args)
    check_output_dir(out, "--out")
    from inertia import experiments

    experiments.configure(args.backend, args.address)
    run = experiments.registry()[args.name]
    if args.reps is not None:
        import inspect

        takes = sorted(n for n, f in experiments.registry().items()
                       if "reps" in inspect.signature(f).parameters)
        if args.name not in takes:
            raise ValueError(f"--reps applies to the experiments with repetitions "
                             f"({', '.join(takes)}); {args.name} has none")
    options = {"reps": args.reps} if args.reps is not None else {}
    if args.saved_only:
        options["saved_only"] = True
    run(Path(out), args.quick, **options)
    print(f"results in {out}")
    return 0
