"""Command line: `inertia fit | sample | calibrate | reproduce`.

Parsing loads no JAX (`_parsers`); the command's module then runs, and what it raises becomes one line
and an exit status.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys

from .. import __version__
from . import reproduce
from ._args import Formatter
from ._parsers import add_calibrate, add_fit, add_sample
from ._process import EXIT_INTERRUPTED, INTERRUPT, float64, interrupt_line, own_process

COMMANDS = (add_fit, add_sample, add_calibrate, reproduce.add_parser)
EXIT_ERROR = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a process its closed pipe ended


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inertia", description=__doc__.splitlines()[0],
                                     formatter_class=Formatter)
    parser.add_argument("--version", action="version", version=f"inertia {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_parser in COMMANDS:
        add_parser(sub)
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


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    prefix = f"inertia {args.command}"
    try:
        if argv is None:  # a real command line, not a call from Python (tests)
            own_process(args, prefix)
        with float64(own_process=argv is None):
            rc = int(args.func(args) or 0)
        if argv is None:  # the process ends next
            sys.stdout.flush()  # a closed pipe is reported here, not at interpreter exit
            gc.freeze()  # the interpreter's exit then skips its full collections (0.4-0.9 s)
        return rc
    except BrokenPipeError:  # the reader closed the pipe (`| head`): stop quietly, as Unix tools do
        if argv is None:  # the exit's own flush must not fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        if not INTERRUPT["reported"]:
            INTERRUPT["reported"] = True
            print(f"\n{interrupt_line(args)}", file=sys.stderr)
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
