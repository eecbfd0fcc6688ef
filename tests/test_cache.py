"""The persistent compilation cache: inertia's folder unless switched off or the user set JAX's own."""
import os
import subprocess
import sys

PROBE = ("import inertia, jax; c = jax.config; print(c.jax_compilation_cache_dir or '', "
         "c.jax_persistent_cache_min_compile_time_secs, c.jax_compilation_cache_max_size)")


def _probe(tmp_path, **env):
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("JAX_") and k != "INERTIA_JAX_CACHE"}
    base.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "xdg"), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=base, capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.split()


def test_cache_folder_rules(tmp_path):
    path, least, cap = _probe(tmp_path)
    assert path == str(tmp_path / "xdg" / "inertia" / "jax-lru")
    assert float(least) == 0.05 and int(cap) == 1 << 30
    assert _probe(tmp_path, INERTIA_JAX_CACHE=str(tmp_path / "c"))[0] == str(tmp_path / "c")
    assert len(_probe(tmp_path, INERTIA_JAX_CACHE="off")) == 2  # no folder printed
    mine = str(tmp_path / "mine")
    assert _probe(tmp_path, JAX_COMPILATION_CACHE_DIR=mine)[0] == mine
