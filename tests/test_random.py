"""Host-side random helpers (inertia._random): keys built without a program, seed checks."""
import jax
import numpy as np
import pytest

from inertia import _random


@pytest.mark.parametrize("seed", [0, 1, 12345, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 5,
                                  2 ** 63 - 1])
def test_key_of_is_prngkey_bit_for_bit(seed):
    key = _random.key_of(seed)
    assert key.dtype == np.uint32 and key.shape == (2,)
    np.testing.assert_array_equal(np.asarray(key), np.asarray(jax.random.PRNGKey(seed)))
    # and the draws of either key are the same numbers
    np.testing.assert_array_equal(np.asarray(_random.host_normal(key, (3, 2))),
                                  np.asarray(_random.host_normal(jax.random.PRNGKey(seed), (3, 2))))


@pytest.mark.parametrize("bad", [-1, 2 ** 63, 1.5, True])
def test_key_of_rejects_what_check_seed_rejects(bad):
    with pytest.raises(ValueError, match="seed"):
        _random.key_of(bad)
