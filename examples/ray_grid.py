"""Run a small experiment grid as Ray tasks (a local cluster here) and check it equals local runs."""
import tempfile
from pathlib import Path

from reproductions import _runner


def cell(kappa, seeds):
    def run():
        from inertia import vi
        from inertia.targets import kappa_family

        res = vi.fit(kappa_family(3, kappa), "paired-proj", batch_size=2, num_steps=60, seed=seeds,
                     checkpoint_every=30)
        return {"final_gap": res.history["gap"][-1]}

    return run


grid = [(_runner.cell_key(kappa=k, seeds="0-1"), cell(k, [0, 1])) for k in (10.0, 100.0)]

try:
    import ray
except ImportError:
    print("ray is not installed (pip install 'inertia[ray]'); skipping")
    raise SystemExit(0)

with tempfile.TemporaryDirectory() as tmp:
    local = _runner.run_cells(_runner.CellStore(Path(tmp) / "local"), grid, "local")
    ray.init(num_cpus=2, include_dashboard=False)  # or ray.init(address="ray://head:10001")
    _runner.configure("ray")                        # what `--backend ray` does
    remote = _runner.run_cells(_runner.CellStore(Path(tmp) / "ray"), grid, "ray")
    _runner.configure("local")
    ray.shutdown()
print(remote)
assert remote == local
