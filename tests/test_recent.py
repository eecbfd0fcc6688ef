"""The per-target caches bounded by recency (`inertia._recent`): a loop over new targets keeps at
most `kept` of them alive (a weakly keyed cache kept every one: its compiled values call their
own key)."""
import gc
import weakref

import jax.numpy as jnp
import pytest

from inertia import _recent


def test_recent_keeps_the_most_recently_used_keys():
    c = _recent.Recent(kept=2)
    assert c.setdefault("a", 1) == 1 and c.setdefault("b", 2) == 2
    assert c.setdefault("a", 9) == 1  # present: its value, and now the most recent
    c.setdefault("c", 3)  # drops "b", the least recently used
    assert "a" in c and "c" in c and "b" not in c and len(c) == 2
    assert c.get("b") is None and c.get("a") == 1
    c.clear()
    assert len(c) == 0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_loop_of_fits_on_new_targets_frees_all_but_the_kept(monkeypatch):
    """Six `fit` calls on new 2-parameter targets with caches of 2 keys: at most 2 of the six
    potentials (with their compiled programs) outlive the loop; before, all six did."""
    import importlib

    from inertia.targets import base, from_potential
    from inertia.vi import fit

    objective = importlib.import_module("inertia.variational.objective")

    for cache in (base._JIT_CACHE, base._BATCHED, base._CAST_CACHE, objective._cache):
        monkeypatch.setattr(cache, "kept", 2)
        cache.clear()
    refs = []
    for i in range(6):
        f = (lambda s: lambda x: 0.5 * jnp.sum((x / s) ** 2))(1.0 + 0.1 * i)
        fit(from_potential(f, 2, name=f"g{i}"), seed=0, num_steps=50)
        refs.append(weakref.ref(f))
        del f
    gc.collect()
    alive = [r() is not None for r in refs]
    assert sum(alive) <= 2 and not any(alive[:4]), alive
