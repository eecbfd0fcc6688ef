"""Background imports (inertia._prefetch): only in the `inertia` command's process, started only with a
second core, once per module, and a failed one leaves the error to the caller's own import; the
sampler starts ArviZ's in its warm-up."""
import importlib
import os
import sys
import threading

import numpy as np
import pytest

from inertia import _prefetch


def _write(tmp_path, monkeypatch, name, body="VALUE = 42\n", allowed=True):
    monkeypatch.setattr(_prefetch, "_ALLOWED", [allowed])  # as the `inertia` command allows it
    monkeypatch.delenv("INERTIA_PREFETCH", raising=False)
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def _join(name):
    for th in threading.enumerate():
        if th.name == f"inertia-import-{name}":
            th.join(timeout=60)


def test_one_core_starts_nothing(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, "inertia_prefetch_probe_a")
    monkeypatch.setattr(_prefetch, "cores", lambda: 1)
    assert not _prefetch.module("inertia_prefetch_probe_a")
    assert "inertia_prefetch_probe_a" not in sys.modules


def test_two_cores_import_once_in_a_daemon_thread(tmp_path, monkeypatch):
    name = "inertia_prefetch_probe_b"
    _write(tmp_path, monkeypatch, name, "import threading\n"
                                       "IMPORTED_BY = threading.current_thread().name\n")
    monkeypatch.setattr(_prefetch, "cores", lambda: 2)
    assert _prefetch.module(name)
    assert not _prefetch.module(name)  # once per process
    _join(name)
    assert sys.modules[name].IMPORTED_BY == f"inertia-import-{name}"


def test_an_imported_module_is_not_started_again(monkeypatch):
    monkeypatch.setattr(_prefetch, "cores", lambda: 2)
    assert not _prefetch.module("numpy")


def test_a_failed_background_import_raises_in_the_callers_import(tmp_path, monkeypatch):
    name = "inertia_prefetch_probe_c"
    _write(tmp_path, monkeypatch, name, "raise RuntimeError('broken module')\n")
    monkeypatch.setattr(_prefetch, "cores", lambda: 2)
    assert _prefetch.module(name)
    _join(name)
    assert name not in sys.modules
    with pytest.raises(RuntimeError, match="broken module"):
        importlib.import_module(name)


def test_cores_counts_this_process_cpus():
    n = _prefetch.cores()
    assert isinstance(n, int) and 1 <= n <= (os.cpu_count() or n)


_IMPORT_WATCH = r"""
import importlib.abc, sys, threading


class Watch(importlib.abc.MetaPathFinder):
    seen = set()

    def find_spec(self, name, path=None, target=None):
        if name == "arviz" and name not in Watch.seen:
            Watch.seen.add(name)
            print(name, "imported by", threading.current_thread().name, flush=True)
        return None


sys.meta_path.insert(0, Watch())
from inertia.cli import main
sys.argv[0] = "inertia"
sys.exit(main())  # as the `inertia` command: its own process (background imports allowed)
"""


@pytest.mark.skipif(_prefetch.cores() < 2, reason="background imports need a second core")
def test_the_sample_command_imports_arviz_only_to_save_and_in_the_background(tmp_path):
    """Observed from outside: the `inertia sample` process never imports ArviZ (the diagnostics do
    not need it); with --save, ArviZ (which writes the netCDF) is imported by the background
    thread, so the run never waits for it on its main thread."""
    import subprocess
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "INERTIA_PREFETCH"}
    seen = []
    for extra in ([], ["--save", str(tmp_path / "run.nc")]):
        out = subprocess.run(
            [sys.executable, "-c", _IMPORT_WATCH, "sample", "--model", "gaussian-kappa", "--dim",
             "2", "--kappa", "10", "--steps", "200", "--chains", "2", "--seed", "0",
             "--target-ess", "0", "--allow-unconverged", "--quiet", *extra],
            cwd=Path(__file__).resolve().parents[1], env=env, capture_output=True, text=True,
            timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        seen.append(sorted(ln for ln in out.stdout.splitlines() if " imported by " in ln))
    assert seen == [[], ["arviz imported by inertia-import-arviz"]], seen


def test_the_arviz_refactor_notice_is_ignored_and_nothing_else():
    import warnings

    from inertia.cli._process import quiet_arviz_notice

    notice = ("\nArviZ is undergoing a major refactor to improve flexibility and extensibility "
              "while maintaining a user-friendly interface.")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_arviz_notice()
        warnings.warn_explicit(notice, FutureWarning, "arviz/__init__.py", 50, module="arviz")
        warnings.warn_explicit("another notice", FutureWarning, "arviz/__init__.py", 51,
                               module="arviz")
        warnings.warn_explicit(notice, FutureWarning, "mine.py", 1, module="mine")
    assert [str(w.message) for w in seen] == ["another notice", notice]


def test_inertia_prefetch_off_starts_nothing(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, "inertia_prefetch_probe_d")
    monkeypatch.setattr(_prefetch, "cores", lambda: 4)
    monkeypatch.setenv("INERTIA_PREFETCH", "off")
    assert not _prefetch.module("inertia_prefetch_probe_d")
    assert "inertia_prefetch_probe_d" not in sys.modules


def test_a_python_users_process_starts_nothing(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, "inertia_prefetch_probe_e", allowed=False)
    monkeypatch.setattr(_prefetch, "cores", lambda: 4)
    assert not _prefetch.module("inertia_prefetch_probe_e")
    assert "inertia_prefetch_probe_e" not in sys.modules
