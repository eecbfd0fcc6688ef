"""Command line: `inertia fit | sample | calibrate | reproduce`.

Each subcommand lives with its subpackage (`inertia.<pkg>.cli.add_parser(subparsers)` sets a
`func(args) -> int`); this module only assembles them. Parsing imports no JAX: the subcommand
modules are loaded without their packages' `__init__` and take their choices from
`inertia._names`, so `--help`, `--version` and argument errors answer at once.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from ._cliargs import (Formatter, check_output_dir, check_output_file, nonneg_int,  # noqa: F401
                       number_type, positive_float, positive_int)

SUBCOMMAND_MODULES = ("inertia.vi.cli", "inertia.mcmc.cli", "inertia.sgmcmc.cli")
EXIT_ERROR, EXIT_INTERRUPTED = 2, 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a process its closed pipe ended


def _load_cli(modname: str):
    """Import a subcommand module without running its package's __init__ (which imports JAX)."""
    if modname in sys.modules:
        return sys.modules[modname]
    parent = modname.rpartition(".")[0]
    if parent in sys.modules:
        return importlib.import_module(modname)
    path = Path(__file__).resolve().parent.joinpath(*modname.split(".")[1:]).with_suffix(".py")
    if not path.is_file():
        raise ModuleNotFoundError(modname, name=modname)
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = parent
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[modname]
        raise
    return module


def _add_reproduce(sub):
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
    p.set_defaults(func=_run_reproduce, interrupted=_reproduce_interrupted)


def _reproduce_out(args) -> Path:
    return args.out or Path("runs") / (args.name + ("-quick" if args.quick else ""))


def _reproduce_interrupted(args) -> str:
    out = _reproduce_out(args)
    again = f"inertia reproduce {args.name}" + (" --quick" if args.quick else "")
    if args.out:
        again += f" --out {args.out}"
    return (f"interrupted; every finished cell is saved under {out}: run `{again}` again to "
            "resume where it stopped")


def _run_reproduce(args) -> int:
    from inertia.experiments import CATALOG, describe, uncatalogued

    if args.list or not args.name:
        print(describe(uncatalogued()))
        return 0
    if args.name not in CATALOG and args.name not in uncatalogued():
        raise ValueError(f"unknown experiment {args.name!r}; available: "
                         f"{', '.join(sorted(CATALOG))} (see --list)")
    if args.backend != "ray" and args.address:
        raise ValueError("--address applies to --backend ray only")
    out = _reproduce_out(args)
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


def build_parser() -> argparse.ArgumentParser:
    from inertia import __version__

    parser = argparse.ArgumentParser(prog="inertia", description=__doc__.splitlines()[0],
                                     formatter_class=Formatter)
    parser.add_argument("--version", action="version", version=f"inertia {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for modname in SUBCOMMAND_MODULES:
        try:
            module = _load_cli(modname)
        except ModuleNotFoundError as err:
            if err.name != modname:
                raise
            continue
        module.add_parser(sub)
    _add_reproduce(sub)
    return parser


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, KeyError):
        text = f"unknown key {text}"
    elif isinstance(err, OSError) and err.filename is not None and err.strerror:
        text = f"{err.strerror}: {err.filename}"
    elif isinstance(err, OSError) and err.strerror:  # no "[Errno 28]" in front of the words
        text = err.strerror
    return text


def _model_error(err: BaseException):
    """The message for an error raised inside a `--model FILE.py:NAME` file, or None."""
    mod = sys.modules.get("inertia.targets.modelfile")
    return mod.model_error(err) if mod is not None else None


def _backend_error(err: BaseException):
    """The message for JAX failing to start its platform (JAX_PLATFORMS naming a missing one)."""
    import traceback

    frames = traceback.extract_tb(err.__traceback__)
    if not any(f.filename.endswith("xla_bridge.py") for f in frames[-3:]):
        return None
    asked = os.environ.get("JAX_PLATFORMS") or os.environ.get("JAX_PLATFORM_NAME")
    detail = " ".join(str(err).split())
    what = f"the platform JAX_PLATFORMS={asked} asks for" if asked else "its platform"
    return (f"JAX could not start {what}{' (' + detail[:200] + ')' if detail else ''}; on a "
            "machine without that "
            "accelerator unset JAX_PLATFORMS (or set JAX_PLATFORMS=cpu), otherwise install the "
            "matching jax plugin (e.g. pip install 'jax[cuda12]')")


_INTERRUPT = {"reported": False, "raised": False}


def _interrupt_line(args) -> str:
    note = getattr(args, "interrupted", None)
    msg = note(args) if callable(note) else ("interrupted; nothing was written (outputs are "
                                             "written when the run finishes)")
    return f"inertia {args.command}: {msg}"


def _watch_interrupts(args, grace: float = 2.0) -> None:
    """End the process on SIGINT even while the main thread sits in a long compiled computation.

    Python runs its SIGINT handler (KeyboardInterrupt) only between bytecodes, so a Ctrl-C during
    an XLA call would wait for the whole call. The C-level handler also writes the signal number to
    the wakeup fd at once; this thread reads it and, if the main thread has not reported the
    interrupt within `grace` seconds, prints the one line and exits with status 130. Every output
    is written atomically or at the end, so nothing is left half-written.
    """
    import signal
    import socket
    import threading
    import time

    if threading.current_thread() is not threading.main_thread():
        return
    def first_only(signum, frame):  # a second Ctrl-C while the first unwinds: no traceback
        if not _INTERRUPT["raised"]:
            _INTERRUPT["raised"] = True
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, first_only)
    r, w = socket.socketpair()
    w.setblocking(False)
    _INTERRUPT["sockets"] = (r, w)  # keep the fds open for the process's life
    try:
        signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
    except ValueError:
        return

    def watch():
        while True:
            data = r.recv(64)
            if not data:
                return
            if signal.SIGINT in data:
                time.sleep(grace)
                if not _INTERRUPT["reported"]:
                    _INTERRUPT["reported"] = True
                    sys.stdout.flush()
                    print(f"\n{_interrupt_line(args)}", file=sys.stderr, flush=True)
                    os._exit(EXIT_INTERRUPTED)

    threading.Thread(target=watch, name="inertia-sigint", daemon=True).start()


def _own_process(args, prefix: str) -> None:
    """Process-wide settings of the `inertia` command, its own process (never of a call of `main`
    from Python): float64 and JAX's compilation cache (through JAX's environment variables while
    JAX is not imported, so that argument errors answer without it), the interrupt watcher, and
    warnings printed as one line each."""
    import warnings

    from . import _cache

    if "jax" in sys.modules:
        sys.modules["jax"].config.update("jax_enable_x64", True)
    else:
        os.environ["JAX_ENABLE_X64"] = "1"
    _cache.enable_for_command()
    from . import _prefetch
    from .diagnostics import quiet_arviz_notice

    _prefetch.allow()  # ArviZ imported in the background while the chains run, where a core is free
    quiet_arviz_notice()
    _watch_interrupts(args)
    warnings.formatwarning = (lambda message, category, *_a, **_k:
                              f"{prefix}: warning: {message}\n")


def _float64(own_process: bool):
    """Float64 for a command: already process-wide in the command's own process; JAX's
    thread-local x64 for a call of `main` from Python, restored on return."""
    import contextlib

    if own_process:
        return contextlib.nullcontext()
    import jax

    return jax.enable_x64(True)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    prefix = f"inertia {args.command}"
    try:
        if argv is None:  # a real command line, not a call from Python (tests)
            _own_process(args, prefix)
        from ._gc import fewer_collections, skip_teardown_collections
        from ._threads import single_blas_thread

        with single_blas_thread(), fewer_collections(), _float64(own_process=argv is None):
            rc = int(args.func(args) or 0)
        if argv is None:  # the process ends next
            sys.stdout.flush()  # a closed pipe is reported here, not at interpreter exit
            skip_teardown_collections()
        return rc
    except BrokenPipeError:  # the reader closed the pipe (`| head`): stop quietly, as Unix tools do
        if argv is None:  # the exit's own flush must not fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        if not _INTERRUPT["reported"]:
            _INTERRUPT["reported"] = True
            print(f"\n{_interrupt_line(args)}", file=sys.stderr)
        if argv is None:
            # an interrupted XLA computation may still run on other threads, and interpreter
            # teardown under it can crash: leave at once (outputs are atomic or not yet written)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    except SystemExit as err:  # sys.exit() in a model file: not inertia's exit statuses
        if not _model_error(err):
            raise
        print(f"{prefix}: error: {_model_error(err)}", file=sys.stderr)
        return EXIT_ERROR
    except (ValueError, OSError, KeyError, FloatingPointError, ImportError, MemoryError) as err:
        print(f"{prefix}: error: {_one_line(err)}", file=sys.stderr)
        if os.environ.get("INERTIA_DEBUG"):
            raise
        return EXIT_ERROR
    except Exception as err:  # a bug or a backend failure: one line, the trace on request
        if os.environ.get("INERTIA_DEBUG"):
            raise
        known = _model_error(err) or _backend_error(err)  # the model's error; JAX's platform
        if known:
            print(f"{prefix}: error: {known}", file=sys.stderr)
            return EXIT_ERROR
        print(f"{prefix}: internal error: {type(err).__name__}: {_one_line(err)} (set "
              "INERTIA_DEBUG=1 to see the traceback, and please report it)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
