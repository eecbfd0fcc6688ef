"""The `inertia` command's own process: float64 and the compilation cache process-wide, the interrupt
watcher, warnings as one line; float64 scoped to the call when `main` is called from Python.
"""
from __future__ import annotations

import os
import sys
import warnings

from .. import _cache, _prefetch

EXIT_INTERRUPTED = 130

INTERRUPT = {"reported": False, "raised": False}


def interrupt_line(args) -> str:
    note = getattr(args, "interrupted", None)
    msg = note(args) if callable(note) else ("interrupted; nothing was written (outputs are "
                                             "written when the run finishes)")
    return f"inertia {args.command}: {msg}"


def watch_interrupts(args, grace: float = 2.0) -> None:
    """End the process with status 130 on SIGINT even during a long compiled call (docs/howto/speed.md)."""
    import signal
    import socket
    import threading
    import time

    if threading.current_thread() is not threading.main_thread():
        return
    def first_only(signum, frame):  # a second Ctrl-C while the first unwinds: no traceback
        if not INTERRUPT["raised"]:
            INTERRUPT["raised"] = True
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, first_only)
    r, w = socket.socketpair()
    w.setblocking(False)
    INTERRUPT["sockets"] = (r, w)  # keep the fds open for the process's life
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
                if not INTERRUPT["reported"]:
                    INTERRUPT["reported"] = True
                    sys.stdout.flush()
                    print(f"\n{interrupt_line(args)}", file=sys.stderr, flush=True)
                    os._exit(EXIT_INTERRUPTED)

    threading.Thread(target=watch, name="inertia-sigint", daemon=True).start()


def quiet_arviz_notice() -> None:
    """Ignore ArviZ 0.2x's import-time FutureWarning, process-wide (the command's own process only)."""
    warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor",
                            category=FutureWarning, module="arviz")


def own_process(args, prefix: str) -> None:
    """Process-wide settings of the `inertia` command's own process (never of `main` called from Python)."""
    import scipy.linalg.cython_lapack  # noqa: F401  (loads the OpenBLAS XLA's CPU LAPACK calls)
    from threadpoolctl import threadpool_limits

    if "jax" in sys.modules:
        sys.modules["jax"].config.update("jax_enable_x64", True)
    else:
        os.environ["JAX_ENABLE_X64"] = "1"
    no_cache = _cache.command_caches()
    _prefetch.allow()  # what the end needs imported in the background, where a core is free
    quiet_arviz_notice()
    watch_interrupts(args)
    threadpool_limits(limits=1, user_api="blas")
    warnings.formatwarning = (lambda message, category, *_a, **_k:
                              f"{prefix}: warning: {message}\n")
    if no_cache:
        print(f"{prefix}: warning: {no_cache}", file=sys.stderr)


def float64(own_process: bool):
    """Float64 for a command: process-wide in its own process, else JAX's thread-local x64."""
    import contextlib

    if own_process:
        return contextlib.nullcontext()
    import jax

    return jax.enable_x64(True)
