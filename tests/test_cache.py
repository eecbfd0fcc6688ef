"""The `inertia` command's persistent compilation cache: inertia's folder unless switched off or the
user set JAX's own; `inertia.config.enable_compilation_cache` sets it on request; the folder is
pruned to half its cap, oldest entries first, when it outgrows the cap. (That importing inertia
sets no cache: tests/test_config.py.)"""
import os
import subprocess
import sys

from inertia import _cache

PROBE = ("from inertia import _cache; _cache.enable_for_command(); import jax; c = jax.config; "
         "print(c.jax_compilation_cache_dir or '', c.jax_persistent_cache_min_compile_time_secs)")


def _probe(tmp_path, **env):
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("JAX_") and k != "INERTIA_JAX_CACHE"}
    base.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "xdg"), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=base, capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.split()


def test_cache_folder_rules(tmp_path):
    path, least = _probe(tmp_path)
    assert path == str(tmp_path / "xdg" / "inertia" / "jax") and float(least) == 0.0
    assert _probe(tmp_path, INERTIA_JAX_CACHE=str(tmp_path / "c"))[0] == str(tmp_path / "c")
    assert len(_probe(tmp_path, INERTIA_JAX_CACHE="off")) == 1  # no folder printed
    mine = str(tmp_path / "mine")
    assert _probe(tmp_path, JAX_COMPILATION_CACHE_DIR=mine)[0] == mine


def test_prune_removes_oldest_down_to_half(tmp_path):
    for i in range(10):  # 10 entries of 100 bytes, entry i written at time i
        f = tmp_path / f"e{i}"
        f.write_bytes(b"x" * 100)
        os.utime(f, (1000 + i, 1000 + i))
    assert _cache.prune(tmp_path, max_bytes=1000) == 0  # at the cap: nothing to do
    assert _cache.prune(tmp_path, max_bytes=900) == 600  # over it: down to 450 bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e6", "e7", "e8", "e9"]


def test_enable_compilation_cache_sets_the_folder_and_prunes(tmp_path):
    import jax

    import inertia.config

    old = jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs
    for i in range(4):
        (tmp_path / f"e{i}").write_bytes(b"x" * 100)
    try:
        assert inertia.config.enable_compilation_cache(tmp_path, max_bytes=300) == str(tmp_path)
        assert jax.config.jax_compilation_cache_dir == str(tmp_path)
        assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0
        assert len(list(tmp_path.iterdir())) == 1  # 400 bytes over a cap of 300: down to 150
    finally:
        jax.config.update("jax_compilation_cache_dir", old[0])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", old[1])
