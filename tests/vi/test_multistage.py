"""fit_multistage: growing batches keep lowering the gap where a constant batch stalls."""
import numpy as np
import pytest

from inertia import vi
from inertia.targets import logistic_regression
from inertia.variational.multistage import fit_multistage


@pytest.fixture(scope="module")
def target():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (rng.random(60) < 1 / (1 + np.exp(-X @ np.array([1.5, -1.0, 0.5])))).astype(float)
    return logistic_regression(X, y, intercept=False)


def test_multistage_beats_constant_floor(target):
    const = vi.fit(target, "paired-proj", batch_size=1, num_steps=600, seed=0, checkpoint_every=30)
    floor = np.mean(const.history["gap"][10:, 0])  # constant-step noise floor (second half)
    ms = fit_multistage(target, "paired-proj", batch_sizes=[1, 4, 16, 64], stage_steps=150,
                        seed=0, target_gap=1e-12)
    assert [s["batch_size"] for s in ms.stages] == [1, 4, 16, 64] and ms.reached is False
    h = ms.history
    assert np.all(np.diff(h["step"]) > 0) and h["step"][-1] == 600 == ms.num_steps
    # gradient queries accumulate with each stage's batch (paired estimator: 2 b per update)
    g_per = const.cost_per_update[0]
    assert h["grad_evals"][-1] == 150 * g_per * (1 + 4 + 16 + 64)
    # the batch grows 64x: the final gap sits well below the constant-batch floor
    assert ms.final_gap < floor / 8
    gaps_at_ends = [s["gap"] for s in ms.stages]
    assert gaps_at_ends[-1] < gaps_at_ends[0]


def test_stops_at_target_gap_and_budget(target):
    ms = fit_multistage(target, "paired-proj", batch_sizes=[1, 4, 16, 64], stage_steps=150,
                        seed=0, target_gap=1.0)
    assert ms.reached and len(ms.stages) == 1 and ms.final_gap <= 1.0
    cut = fit_multistage(target, "paired-proj", batch_sizes=[1, 4, 16, 64], stage_steps=150,
                         seed=0, max_grad_evals=150 * 2 * 5)
    assert len(cut.stages) == 2
    with pytest.raises(ValueError, match="one seed"):
        fit_multistage(target, "paired-proj", seed=[0, 1])
