"""`fit`'s switches: a `FitOptions`, or the same fields by keyword; anything else is refused by name."""
import dataclasses
import inspect

import numpy as np
import pytest

from inertia.targets import kappa_family
from inertia.vi import METHODS, FitOptions, fit
from inertia.variational.estimators import ESTIMATORS


def test_fit_has_at_most_ten_named_parameters():
    """The switches live in FitOptions; fit's own signature stays short."""
    params = inspect.signature(fit).parameters.values()
    named = [p.name for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    assert len(named) <= 10, named
    assert "options" in named


@pytest.mark.parametrize("method, typo, valid", [("stl-proj", "tool", "tol"),
                                                 ("ngvi", "contrl", "control")])
def test_misspelled_option_raises_with_the_valid_names(method, typo, valid):
    t = kappa_family(3, 10.0)
    with pytest.raises(TypeError) as err:
        fit(t, method, num_steps=5, **{typo: 1})
    text = str(err.value)
    assert repr(typo) in text and valid in text
    assert all(name in text for name in ("restart", "max_recoveries", "checkpoint_every"))
    with pytest.raises(TypeError, match="FitOptions"):
        fit(t, method, num_steps=5, options={"tol": 1e-4})
    with pytest.raises(ValueError, match="checkpoint_every must be a positive integer"):
        FitOptions(checkpoint_every=0)


def test_keywords_equal_options_and_override_them():
    """fit(t, tol=..., accelerated=...) is fit(t, options=FitOptions(...)), to the bit; a keyword
    replaces the field of a given `options`."""
    t = kappa_family(4, 30.0)
    kw = dict(accelerated=False, checkpoint_every=7, keep_iterates=True)
    a = fit(t, "fd-prox", batch_size=2, num_steps=40, seed=1, **kw)
    b = fit(t, "fd-prox", batch_size=2, num_steps=40, seed=1, options=FitOptions(**kw))
    c = fit(t, "fd-prox", batch_size=2, num_steps=40, seed=1,
            options=FitOptions(accelerated=True, checkpoint_every=7, keep_iterates=True),
            accelerated=False)
    for r in (b, c):
        assert not r.accelerated and list(r.history["step"]) == list(a.history["step"])
        np.testing.assert_array_equal(r.mean, a.mean)
        np.testing.assert_array_equal(r.history["factor"], a.history["factor"])
    d = fit(t, "fd-prox", batch_size=2, num_steps=40, seed=1, checkpoint_every=7)
    assert d.accelerated and not np.array_equal(d.mean, a.mean)
    with pytest.raises(dataclasses.FrozenInstanceError):
        FitOptions().tol = 1.0


@pytest.mark.parametrize("name", sorted(METHODS))
def test_declared_method_options_are_the_estimators_keywords(name):
    """Methods that pass their options to the gradient estimator declare exactly its keywords
    (so that `fit` can refuse the others by name before compiling)."""
    m = METHODS[name]
    if not m.build.__qualname__.startswith(("_build_apg", "_build_sym")):
        pytest.skip("the builder itself takes the options")
    params = list(inspect.signature(ESTIMATORS[m.estimator].estimate).parameters)
    assert set(params[5:]) == set(m.options)


def test_reparam_is_a_documented_switch():
    """`reparam` is a FitOptions field (as in SampleOptions), so the public signature and the API
    page show it; the wrapper no longer hides it."""
    from inertia.vi import FitOptions

    assert FitOptions().reparam is False and FitOptions(reparam="auto").reparam == "auto"
    assert "`reparam`" in FitOptions.__doc__
