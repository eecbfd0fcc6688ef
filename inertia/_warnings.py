"""Warnings attributed to the user's line: the first caller outside the inertia package."""
from __future__ import annotations

import os
import sys
import warnings

_ROOT = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message, category=UserWarning) -> None:
    """warnings.warn at the first frame outside inertia (drivers are wrapped; depths vary)."""
    frame, level = sys._getframe(1), 2  # level 1 is this function
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_ROOT):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
