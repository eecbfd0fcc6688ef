"""The posterior benchmark's comparison of inertia with nutpie (benchmarks/posteriors/run.py):
ratios are inertia's over nutpie's, ahead means below 1, gradients per ESS are compared only
where both converged. Under 1 s."""
import sys
from pathlib import Path

import pytest

pytest.importorskip("numpyro")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "posteriors"))
from run import _against_nutpie, nutpie_table  # noqa: E402


def _row(post, method, gpe, wall, rerun, converged=True, err=0.02):
    return {"posterior": post, "method": method, "grads_per_ess": gpe, "wall_s": wall,
            "converged": converged, "max_mean_err": err, "max_sd_err": err,
            "detail": {"wall_rerun_s": rerun}}


def test_inertia_against_nutpie_lines():
    rows = [_row("a", "inertia", 10.0, 8.0, 0.5), _row("a", "nutpie", 40.0, 2.0, 2.0, err=0.05),
            _row("b", "inertia", 30.0, 3.0, 3.0, err=0.04), _row("b", "nutpie", 10.0, 6.0, 1.0),
            _row("c", "inertia", 5.0, 1.0, 1.0), _row("c", "nutpie", 50.0, 1.0, 1.0,
                                                       converged=False)]
    (line,) = _against_nutpie(rows)
    assert "on 3 posteriors" in line
    assert "both converged on 2, only inertia on 1 (c), only nutpie on 0" in line
    # gradients per ESS: a 10/40 ahead, b 30/10 behind, c left out (nutpie did not converge)
    assert "Gradients per ESS (inertia / nutpie, where both converged): inertia ahead on a 0.25; "\
           "behind on b 3.00." in line
    assert "Wall time of the first run: inertia ahead on b 0.50; behind on a 4.00, c 1.00." in line
    assert "Of a re-run: ahead on a 0.25; behind on b 3.00, c 1.00." in line
    assert "no larger than nutpie's on 2 of 3" in line
    table = nutpie_table(rows)
    assert "| a | nutpie | converged / converged | 0.25 | 4.00 | 0.25 | 0.020 / 0.050 |" in table[4]
