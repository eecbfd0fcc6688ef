"""Command line: `inertia fit | sample | calibrate | reproduce`.

Each subcommand lives with its subpackage (`inertia.<pkg>.cli.add_parser(subparsers)` sets a
`func(args) -> int`); this module only assembles them.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

SUBCOMMAND_MODULES = ("inertia.vi.cli", "inertia.mcmc.cli", "inertia.sgmcmc.cli")


def _add_reproduce(sub):
    p = sub.add_parser("reproduce", help="rerun one of the papers' experiments (resumable)")
    p.add_argument("name", nargs="?", help="experiment name (omit or use --list to list them)")
    p.add_argument("--quick", action="store_true", help="reduced size (what CI runs)")
    p.add_argument("--out", type=Path, default=None, help="output folder (default runs/NAME[-quick])")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="where grid cells run (ray needs the optional ray extra)")
    p.add_argument("--address", default=None, help="Ray cluster address (with --backend ray)")
    p.add_argument("--reps", type=int, default=None,
                   help="repetitions per cell group, where the experiment has them (default: "
                        "the paper's)")

    def run(args):
        from inertia import experiments

        reg = experiments.registry()
        if args.list or not args.name:
            for name in sorted(reg):
                print(name)
            return 0
        if args.name not in reg:
            print(f"inertia reproduce: unknown experiment {args.name!r}; available: "
                  f"{', '.join(sorted(reg))}", file=sys.stderr)
            return 2
        from inertia.experiments import _runner

        out = args.out or Path("runs") / (args.name + ("-quick" if args.quick else ""))
        _runner.configure(args.backend, args.address)
        reg[args.name](Path(out), args.quick,
                       **({"reps": args.reps} if args.reps is not None else {}))
        print(f"results in {out}")
        return 0

    p.set_defaults(func=run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inertia", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for modname in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as err:
            if err.name != modname:
                raise
            continue
        module.add_parser(sub)
    _add_reproduce(sub)
    return parser


def _enable_compilation_cache():
    """Reuse XLA compilations across CLI runs (JAX's persistent cache, under the user cache dir)."""
    import os

    import jax

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.environ.get("INERTIA_JAX_CACHE", os.path.join(base, "inertia", "jax"))
    if path and path.lower() != "off":
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    _enable_compilation_cache()
    from ._threads import single_blas_thread

    try:
        with single_blas_thread():
            return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError, FloatingPointError) as err:
        print(f"inertia {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
