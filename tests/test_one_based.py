"""--one-based: 1-based parameter names in what `inertia sample` / `fit` print and write as JSON,
numbers untouched. About 10 s (two short gaussian-kappa runs)."""
import json

import pytest

from inertia._one_based import relabel, shift


@pytest.mark.parametrize("text, want", [
    ("beta[0]", "beta[1]"), ("Sigma[0,1]", "Sigma[1,2]"), ("Sigma[0, 9]", "Sigma[1,10]"),
    ("log(sigma)[2]", "log(sigma)[3]"), ("stick_breaking_inv(w)[0]", "stick_breaking_inv(w)[1]"),
    ("w_simplex__[1] and x[0]: R-hat", "w_simplex__[2] and x[1]: R-hat"),
    ("whitened spectrum from warm-up draws [1, 1]", "whitened spectrum from warm-up draws [1, 1]"),
    ('"mean": [0, 1], "cov": [[1, 0], [0, 1]]', '"mean": [0, 1], "cov": [[1, 0], [0, 1]]'),
    ("theta[g0]", "theta[g0]"), ("x[0.5]", "x[0.5]"),
])
def test_shift(text, want):
    assert shift(text) == want


def test_relabel_keys_and_values():
    assert relabel({"x[0]": ["b[1]", 3, [0, 1]], "n": "a[0,0]"}) == {
        "x[1]": ["b[2]", 3, [0, 1]], "n": "a[1,1]"}


def test_cli_sample_one_based(tmp_path, capsys):
    from inertia.cli import main

    base = ["sample", "--dim", "3", "--steps", "300", "--quiet", "--seed", "1"]
    assert main(base + ["--json", str(tmp_path / "a.json")]) == 0
    zero = capsys.readouterr().out
    assert main(base + ["--json", str(tmp_path / "b.json"), "--one-based"]) == 0
    one = capsys.readouterr().out
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    assert a["names"] == ["x[0]", "x[1]", "x[2]"] and b["names"] == ["x[1]", "x[2]", "x[3]"]
    assert [r["name"] for r in b["summary"]] == ["x[1]", "x[2]", "x[3]"]
    assert b["mean"] == a["mean"] and b["cov"] == a["cov"]  # the numbers are the same run's
    assert "x[3]" in one and "x[0]" not in one and "x[0]" in zero
    def timeless(text):  # the report's cost line holds this run's own timings
        return [ln for ln in text.splitlines() if not ln.lstrip().startswith("cost:")]

    assert timeless(one.replace("x[1]", "x[0]").replace("x[2]", "x[1]")
                    .replace("x[3]", "x[2]")) == timeless(zero)
