"""Test-wide setup: float64 and the compilation cache on (inertia.config), no network, data-set skips.

Data sets that ship inside the package (Sonar, Ionosphere, Banknote, German credit) and with
scikit-learn (WDBC, diabetes) always load. Pima and Boston are read from the cache folder
($INERTIA_DATA_DIR, else the user cache dir); tests that need one skip, naming the variable, when
the file is absent. The suite sets no INERTIA_* variable: network access is blocked by the
`_no_network` fixture instead, so error messages describe the user's real environment.
"""
import os
import tempfile

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads: BLAS spin slows XLA
# the tests' XLA persistent cache stays out of the user's home (also read by the `inertia` commands
# the tests start)
os.environ.setdefault("INERTIA_JAX_CACHE", os.path.join(tempfile.gettempdir(), "inertia-test-jax"))

import inertia.config  # noqa: E402

# the suite opts in to what importing inertia does not do: float64 for the tests' own JAX arrays
# (inertia's entry points compute in float64 either way; tests/test_config.py checks them with it
# off) and the persistent compilation cache
inertia.config.enable_x64()
inertia.config.enable_compilation_cache()

os.environ.setdefault("MPLBACKEND", "Agg")


def missing_data(*names):
    """The skip reason when some named data set is neither shipped nor in the cache, else None."""
    from inertia.data import DATASETS, available, cache_dir

    absent = [n for n in names if not available(n)]
    if not absent:
        return None
    files = ", ".join(DATASETS[n].filename for n in absent)
    return (f"needs data set(s) {', '.join(absent)} ({files}), not shipped with inertia and not in "
            f"the cache folder {cache_dir()}: set INERTIA_DATA_DIR to a folder holding them "
            "(docs/data.md) to run this test")


@pytest.fixture
def require_data():
    """`require_data("pima", ...)` skips the calling test unless those data sets load offline."""
    def require(*names):
        reason = missing_data(*names)
        if reason:
            pytest.skip(reason)

    return require


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_data(*names): skip unless the data sets load offline")


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs_data"):
        reason = missing_data(*mark.args)
        if reason:
            pytest.skip(reason)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """JAX's caches let go of each test module's compiled programs at its end.

    The suite compiles thousands of distinct programs in one process, and their machine code
    stays mapped while a cache holds them (54,753 memory mappings 200 s into the suite before
    this). Linux allows a process 65,530 mappings (vm.max_map_count): past it XLA cannot load the
    next program, and the C++ exception that reports it crashes the process (SIGSEGV in the
    unwinder). Cleared per module, no module ends above about 11,000 mappings.
    """
    yield
    import jax

    jax.clear_caches()


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """Dataset downloads fail at once (tests never touch the network); tests may re-patch."""
    from inertia.data import _cache

    def blocked(url, timeout=None):
        raise OSError(f"network access is disabled in the test suite (wanted {url})")

    monkeypatch.setattr(_cache, "fetch", blocked)
