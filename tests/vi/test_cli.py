"""`inertia fit` command-line contract (option and JSON field names)."""
import json

import pytest

from inertia.cli import main


def test_fit_cli_json_and_plot(tmp_path, capsys):
    out, png = tmp_path / "fit.json", tmp_path / "gap.png"
    rc = main(["fit", "--model", "gaussian-kappa", "--dim", "4", "--kappa", "20", "--method",
               "stl-proj", "--batch-size", "16", "--steps", "300", "--seed", "1",
               "--checkpoint-every", "100", "--json", str(out), "--plot", str(png), "--quiet"])
    assert rc == 0
    d = json.loads(out.read_text())
    for key in ("method", "accelerated", "batch_size", "num_steps", "dim", "mean", "cov",
                "checkpoints", "final_gap"):
        assert key in d
    assert d["method"] == "stl-proj" and d["accelerated"] is True and d["dim"] == 4
    assert [c["step"] for c in d["checkpoints"]] == [0, 100, 200, 300]
    assert d["checkpoints"][-1]["grad_evals"] == 300 * 16
    assert d["checkpoints"][-1]["hvp_evals"] == 0
    assert 0 <= d["final_gap"] < d["checkpoints"][0]["gap"]
    assert len(d["cov"]) == 4 and len(d["cov"][0]) == 4
    assert png.stat().st_size > 1000
    assert "final gap" in capsys.readouterr().out


def test_fit_cli_no_accel_and_errors(tmp_path, capsys):
    out = tmp_path / "fit.json"
    assert main(["fit", "--model", "gaussian-kappa", "--dim", "3", "--kappa", "5", "--method",
                 "fd-prox", "--no-accel", "--batch-size", "2", "--steps", "10", "--seed", "0",
                 "--json", str(out), "--quiet", "--allow-unconverged"]) == 0
    assert json.loads(out.read_text())["accelerated"] is False
    with pytest.raises(SystemExit):
        main(["fit", "--model", "gaussian-kappa", "--method", "bogus", "--batch-size", "1",
              "--steps", "1", "--seed", "0"])
    assert main(["fit", "--model", "logistic", "--data", "no-such-data", "--method", "stl-proj",
                 "--batch-size", "1", "--steps", "1", "--seed", "0", "--quiet"]) == 2
    assert "no-such-data" in capsys.readouterr().err
