"""Argument types and output checks shared by the commands (no JAX)."""
from __future__ import annotations

import argparse
from pathlib import Path

from .. import _prefetch
from .._io import check_name_length, output_path, same_file


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, unless its help states it or there is none to show."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or action.required or action.default is None
                or action.default is False or action.default is argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


def number_type(convert, ok, expected: str, invalid: str, name: str):
    """argparse type: `convert(text)`, "expected {expected}, got 'text'", `invalid` when `ok(v)` fails."""
    def parse(text: str):
        try:
            v = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(invalid.format(v=v, text=text))
        return v

    parse.__name__ = name
    return parse


positive_int = number_type(int, lambda v: v >= 1, "a whole number >= 1", "must be >= 1, got {v}",
                           "positive_int")
nonneg_int = number_type(int, lambda v: v >= 0, "a whole number >= 0", "must be >= 0, got {v}",
                         "nonneg_int")
positive_float = number_type(float, lambda v: 0 < v < float("inf"), "a number > 0",
                             "must be a finite number > 0, got {text}", "positive_float")


def add_drop_missing(p, rows: str = "CSV rows") -> None:
    """--drop-missing: drop `rows` with a missing or non-finite cell instead of stopping there."""
    p.add_argument("--drop-missing", action="store_true",
                   help=f"drop {rows} with missing or non-finite cells (says how many); without "
                        "it such a cell is an error naming its line and column")


def add_seed(p, text: str = "random seed") -> None:
    """--seed (default 0), its help `text`."""
    p.add_argument("--seed", type=int, default=0, help=text)


def add_chains(p, parse=positive_int) -> None:
    """--chains (default 4), parsed by `parse`."""
    p.add_argument("--chains", type=parse, default=4, help="number of chains")


def add_allow_unconverged(p, when: str) -> None:
    """--allow-unconverged: exit 0 even `when` (the command's NOT CONVERGED reasons)."""
    p.add_argument("--allow-unconverged", action="store_true", help=f"exit 0 even when {when}")


def add_quiet(p) -> None:
    """--quiet: no progress bar or lines."""
    p.add_argument("--quiet", action="store_true",
                   help="no progress (a bar on a terminal, otherwise a line every 5 s at most)")


def check_output_file(path, option: str, regular: bool = False) -> None:
    """Before a run: `path` can be written (parents made; a link counts as its target); else ValueError."""
    check_name_length(path, option)
    path = output_path(path, option, regular=regular)
    _check_folder(path.parent, option, f"the folder of {path}")


def check_outputs(pairs) -> None:
    """Before a run: every output path can be written and no two options name one file; else ValueError."""
    given = [(o, p) for o, p in pairs if p is not None and str(p) != "-"]
    for option, path in given:
        check_output_file(path, option, regular=option == "--save")
    if any(option == "--save" for option, _ in given):
        _prefetch.module("arviz")
    for i, (o1, p1) in enumerate(given):
        for o2, p2 in given[i + 1:]:
            if same_file(p1, p2):
                raise ValueError(f"{o1} {p1} and {o2} {p2} are the same file; the second would "
                                 "overwrite the first: give them different names")


def check_output_dir(path, option: str) -> None:
    """Before a run: `path` is (or can be created as) a writable folder; else ValueError."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{option} {path} is a file, not a folder; give a folder name")
    _check_folder(path, option, str(path))


def _check_folder(folder: Path, option: str, what: str) -> None:
    import tempfile

    folder = folder if str(folder) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except FileExistsError:
        raise ValueError(f"{option}: cannot create {what}: a file is in the way") from None
    except NotADirectoryError:
        raise ValueError(f"{option}: cannot create {what}: part of the path is a file") from None
    except OSError as err:
        raise ValueError(f"{option}: cannot write into {what} ({err.strerror or err})") from None


__all__ = ["Formatter", "number_type", "positive_int", "nonneg_int", "positive_float",
           "add_drop_missing", "add_seed", "add_chains", "add_allow_unconverged", "add_quiet",
           "check_output_file", "check_output_dir"]
