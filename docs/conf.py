"""Sphinx configuration: `python3 -m sphinx -W --keep-going -b html docs docs/_build/html`."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Executed pages run in their own kernels: they import this checkout and draw no windows.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
# matplotlib's inline backend (Agg underneath) so that figures appear on the pages, even where
# the environment says MPLBACKEND=Agg (.ci/run does).
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import inertia  # noqa: E402

project = "inertia"
author = "inertia developers"
copyright = "2026, inertia developers"
release = version = inertia.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinxarg.ext",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
]

# MyST
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_ref_domains = ["std", "py", "math"]

# Pages generated or edited on other branches (reliability.md from scripts/bad_inputs.py;
# hfhr.md, sgmcmc.md, guide.md, vi.md) link to files outside docs/ (scripts, tests, benchmarks):
# those links are fine on GitHub and are not documents of the site.
suppress_warnings = []

# Executed pages: a cell that fails breaks the build.
nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "docs" / "_build" / ".jupyter_cache")
nb_execution_timeout = 240
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = False
nb_output_stderr = "remove"  # progress-bar and import notices; a failing cell still fails the build

# API reference
autosummary_generate = True
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = True

smartquotes = False  # option names (--kappa) and quotes stay as typed
html_theme = "furo"
html_title = f"inertia {release}"

# The package's docstrings are plain text with `code` spans (markdown-like), not reST: show
# `x` as code, and escape what reST would read as markup (|x| substitutions, * emphasis,
# trailing-underscore references) outside code spans; a change of indentation between two
# lines (a list, a continued formula) gets a blank line so that reST does not complain.
default_role = "code"

import re  # noqa: E402

_CODE = re.compile(r"(``.*?``|`[^`]*`)")
_MARKUP = re.compile(r"([|*\\])|(?<=\w)_(?=\W|$)")


def _escape(line: str) -> str:
    parts = _CODE.split(line)
    for i in range(0, len(parts), 2):
        parts[i] = _MARKUP.sub(lambda m: "\\" + m.group(0), parts[i])
    return "".join(parts)


def _plain_docstring(app, what, name, obj, options, lines):
    out, prev = [], None
    for line in lines:
        if line.strip():
            indent = len(line) - len(line.lstrip())
            if prev is not None and indent != prev and out and out[-1].strip():
                out.append("")
            prev = indent
        out.append(_escape(line))
    lines[:] = out


def setup(app):
    app.connect("autodoc-process-docstring", _plain_docstring, priority=400)  # before napoleon
