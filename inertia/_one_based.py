"""`--one-based`: parameter names with 1-based indices (`beta[1]` for `beta[0]`), as Stan prints them,
where an index follows a name. Imports nothing heavy: the CLI adds the option before JAX loads.
"""
from __future__ import annotations

import contextlib
import json
import re
import sys
from pathlib import Path

_INDEX = re.compile(r"(?<=[A-Za-z0-9_)\]])\[(\d+(?:\s*,\s*\d+)*)\]")


def shift(text: str) -> str:
    """`text` with every index following a name raised by one."""
    return _INDEX.sub(lambda m: "[" + ",".join(str(int(i) + 1) for i in m.group(1).split(","))
                      + "]", text)


def relabel(obj):
    """`obj` (JSON-like) with `shift` applied to every string, keys included."""
    if isinstance(obj, str):
        return shift(obj)
    if isinstance(obj, dict):
        return {relabel(k) if isinstance(k, str) else k: relabel(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [relabel(v) for v in obj]
    return obj


class _Shifted:
    """A text stream that writes `shift(text)` to `stream`."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        return self._stream.write(shift(text))

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _output_shifted():
    """stdout and stderr through `shift` inside the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Shifted(saved[0]), _Shifted(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _rewrite_json(path) -> None:
    """The JSON file the run wrote, its names shifted (written next to it, then moved over)."""
    path = Path(path)
    if not path.is_file():
        return
    text = path.read_text()
    data = relabel(json.loads(text))
    tmp = path.with_name(path.name + ".one-based")
    tmp.write_text(json.dumps(data, indent=1 if "\n" in text.strip() else None))
    tmp.replace(path)


def add_option(parser) -> None:
    """Add --one-based to a subcommand whose `func` is set: its output and --json name parameters 1-based."""
    parser.add_argument("--one-based", action="store_true",
                        help="name parameters with 1-based indices (beta[1] for beta[0]), as "
                             "Stan does, in the printed tables and the --json file (--save "
                             "files keep ArviZ's 0-based coordinates)")
    func = parser.get_default("func")

    def run(args):
        if not getattr(args, "one_based", False):
            return func(args)
        with _output_shifted():
            rc = func(args)
        out = getattr(args, "json", None)
        if out is not None and str(out) != "-":
            _rewrite_json(out)
        return rc

    parser.set_defaults(func=run)


__all__ = ["shift", "relabel", "add_option"]
