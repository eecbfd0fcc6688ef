"""Warnings attributed to the user's line: the first caller outside the inertia package (and
outside contextlib, whose context managers decorate the entry points)."""
from __future__ import annotations

import contextlib
import os
import sys
import warnings

_ROOT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_CONTEXTLIB = os.path.abspath(contextlib.__file__)


def _inside(path: str) -> bool:
    path = os.path.abspath(path)
    return path.startswith(_ROOT) or path == _CONTEXTLIB


def warn(message, category=UserWarning) -> None:
    """warnings.warn at the first frame outside inertia (drivers are wrapped; depths vary)."""
    frame, level = sys._getframe(1), 2  # level 1 is this function
    while frame is not None and _inside(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
