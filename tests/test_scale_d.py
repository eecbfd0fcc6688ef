"""The scale benchmark's bookkeeping (benchmarks/scale_d.py): each family has the number of
parameters its rows report, NUTS's constrained draws map back to the unconstrained coordinates of
inertia's target in the target's order (the errors compare the same coordinates), and the error
check flags a mean off by many Monte Carlo errors. A few seconds."""
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from inertia.targets import from_numpyro

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import scale_d  # noqa: E402


@pytest.mark.parametrize("family,d", [("hier", 13), ("glmm", 13), ("field", 16), ("field", 20),
                                      ("irt", 54), ("irt-nc", 54), ("slopes", 25), ("slopes", 26),
                                      ("horseshoe", 43), ("horseshoe", 44)])
def test_family_has_the_reported_dimension(family, d):
    model, args = scale_d.model_and_data(family, d)
    assert from_numpyro(model, *args).dim == scale_d.dim_of(family, d)


@pytest.mark.parametrize("family", ["hier", "glmm", "irt", "slopes", "horseshoe"])
def test_nuts_draws_return_to_the_targets_coordinates(family):
    # u in the target's unconstrained coordinates -> constrained sites (the target's own map) ->
    # the benchmark's map for NUTS's draws: u again, exactly (a bijection). A site order or a
    # missing log / logit transform (sigma > 0 taken as unconstrained) breaks it.
    model, args = scale_d.model_and_data(family, 54 if family == "irt" else 25)
    t = from_numpyro(model, *args)
    u = np.random.default_rng(0).normal(size=(2, 3, t.dim))
    cons = t.info["constrain"](u.reshape(-1, t.dim))
    latent = {k: np.asarray(cons[k]).reshape((2, 3) + np.shape(cons[k])[1:])
              for k in t.info["sites"]}
    with jax.enable_x64(True):
        back = scale_d._unconstrained(model, args, latent, 2)
    np.testing.assert_allclose(back, u, rtol=1e-9, atol=1e-9)


def _save(folder, method, mean, sd, mcse):
    np.savez(folder / f"hier_103_{method}.npz", mean=mean, sd=sd, mcse=mcse,
             ess=np.full_like(mean, 500.0))


def test_errors_flag_a_mean_many_mcse_off(tmp_path):
    d = 100
    ref_mean, ref_sd, mcse = np.zeros(d), np.full(d, 2.0), np.full(d, 0.05)
    _save(tmp_path, "nuts-diag", ref_mean, ref_sd, mcse)
    # every mean one MCSE off: z = 1 / sqrt(2) everywhere, under the Bonferroni bound (3.9 at d = 100)
    _save(tmp_path, "sample", ref_mean + mcse, 1.1 * ref_sd, mcse)
    e = scale_d.errors({"family": "hier", "d": 103, "method": "sample"}, tmp_path)
    assert e["ref"] == "nuts-diag"  # no reference run: the diagonal NUTS run stands in
    assert e["mean_err_sd"] == pytest.approx(0.05 / 2.0)
    assert e["sd_rel_err"] == pytest.approx(0.1)
    assert e["max_z"] == pytest.approx(2 ** -0.5) and e["consistent"]
    assert e["z_bound"] == pytest.approx(3.89, abs=0.01)  # norm.isf(0.01 / 2 / 100)
    # one coordinate ten MCSEs off: z = 10 / sqrt(2) = 7.1, over the bound
    bad = ref_mean.copy()
    bad[17] = 10 * mcse[17]
    _save(tmp_path, "sample", bad, ref_sd, mcse)
    e = scale_d.errors({"family": "hier", "d": 103, "method": "sample"}, tmp_path)
    assert e["max_z"] == pytest.approx(10 / 2 ** 0.5) and not e["consistent"]
    # a long reference run, where there is one, is preferred over diagonal NUTS
    _save(tmp_path, "reference", bad, ref_sd, mcse)
    e = scale_d.errors({"family": "hier", "d": 103, "method": "sample"}, tmp_path)
    assert e["ref"] == "reference" and e["max_z"] == 0.0
