"""The CSV reader shared by fit, sample and calibrate: formats spreadsheets write, and every bad cell
refused by line and column (or dropped, counted, with drop_missing)."""
import numpy as np
import pytest

from inertia.data import DatasetError
from inertia.data.csv import load_csv, read_columns, read_csv, read_table

X = np.array([[0.5, -1.25], [1.5, 2.0], [-0.75, 0.25], [2.25, -0.5], [-1.0, 1.0]])
Y = np.array([1, 0, 1, 0, 1])


def _write(tmp_path, name, header, rows, sep=",", encoding="utf-8", newline="\n", prefix=""):
    text = prefix + newline.join([sep.join(header)] + [sep.join(map(str, r)) for r in rows])
    path = tmp_path / name
    path.write_bytes((text + newline).encode(encoding))
    return path


def _rows():
    return [[a, b, c] for (a, b), c in zip(X, Y)]


@pytest.mark.parametrize("kw", [
    dict(), dict(prefix="\ufeff"), dict(sep=";"), dict(sep="\t"), dict(newline="\r\n"),
    dict(encoding="utf-16"),
])
def test_formats_give_the_same_table(tmp_path, kw):
    path = _write(tmp_path, "d.csv", ["x1", "x2", "y"], _rows(), **kw)
    Xr, yr, names = read_csv(path, response="y")
    assert names == ["x1", "x2"]
    np.testing.assert_array_equal(Xr, X)
    np.testing.assert_array_equal(yr, Y)


def test_bom_header_names_the_response(tmp_path):
    path = _write(tmp_path, "bom.csv", ["y", "x1", "x2"], [[c, a, b] for a, b, c in _rows()],
                  prefix="\ufeff")
    assert read_table(path).names == ["y", "x1", "x2"]
    assert read_csv(path, response="y")[2] == ["x1", "x2"]


def test_quotes_decimal_commas_and_blank_lines(tmp_path):
    rows = [[f'"{a}"', f'"{b}"', c] for a, b, c in _rows()]
    path = _write(tmp_path, "q.csv", ['"x,1"', "x2", "y"], rows[:2] + [["", "", ""]] + rows[2:])
    assert read_csv(path, response="y")[2] == ["x,1", "x2"]
    comma = [[str(a).replace(".", ","), str(b).replace(".", ","), c] for a, b, c in _rows()]
    path = _write(tmp_path, "eu.csv", ["x1", "x2", "y"], comma, sep=";")
    np.testing.assert_array_equal(read_csv(path, response="y")[0], X)


@pytest.mark.parametrize("cell, words", [
    ("nan", "line 3, column 'x1': 'nan' (a missing value)"),
    ("", "line 3, column 'x1': an empty cell"),
    ("NA", "line 3, column 'x1': 'NA'"),
    ("inf", "line 3, column 'x1': 'inf' (not finite)"),
    ("abc", "line 3, column 'x1': 'abc' is not a number"),
])
def test_bad_cells_named_by_line_and_column(tmp_path, cell, words):
    rows = _rows()
    rows[1][0] = cell
    path = _write(tmp_path, "bad.csv", ["x1", "x2", "y"], rows)
    with pytest.raises(DatasetError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_csv(path, response="y")


def test_drop_missing_says_how_many_rows_went(tmp_path):
    rows = _rows()
    rows[1][0], rows[3][1] = "nan", ""
    path = _write(tmp_path, "m.csv", ["x1", "x2", "y"], rows)
    with pytest.warns(UserWarning, match="dropped 2 of 5 data rows .*lines 3, 5.*3 rows remain"):
        Xr, yr, names = read_csv(path, response="y", drop_missing=True)
    np.testing.assert_array_equal(Xr, X[[0, 2, 4]])
    assert names == ["x1", "x2"]  # the column with the NaN is kept, its row dropped
    rows[0][0] = "abc"
    path = _write(tmp_path, "t.csv", ["x1", "x2", "y"], rows)
    with pytest.raises(DatasetError, match="'abc' is not a number"):  # never 'missing'
        read_csv(path, response="y", drop_missing=True)


@pytest.mark.parametrize("header, rows, words", [
    (["x1", "x1", "y"], None, "column name 'x1' appears twice"),
    (["x1", "", "y"], None, "column 2 of the header .* has no name"),
    (["0.5", "-1.25", "1"], None, "holds numbers, not column names"),
    (["x1", "x2", "y"], [], "no data rows after the header"),
])
def test_header_problems(tmp_path, header, rows, words):
    path = _write(tmp_path, "h.csv", header, _rows() if rows is None else rows)
    with pytest.raises(DatasetError, match=words):
        read_table(path)


def test_ragged_row_and_encoding(tmp_path):
    rows = _rows()
    rows[2] = rows[2][:2]
    with pytest.raises(DatasetError, match="line 4 has 2 cells, the header 3"):
        read_table(_write(tmp_path, "r.csv", ["x1", "x2", "y"], rows))
    with pytest.raises(DatasetError, match="not UTF-8 text"):
        read_table(_write(tmp_path, "l.csv", ["größe", "x2", "y"], _rows(), encoding="latin-1"))
    with pytest.raises(DatasetError, match="the file is empty"):
        (tmp_path / "e.csv").write_text("\n\n")
        read_table(tmp_path / "e.csv")


def test_scale_constant_and_response_checks(tmp_path):
    big = [[a * 1e300, b, c] for a, b, c in _rows()]
    with pytest.raises(DatasetError, match="column 'x1' has values as large as .*overflow"):
        load_csv(_write(tmp_path, "big.csv", ["x1", "x2", "y"], big), "y")
    tiny = [[a * 1e-200, b, c] for a, b, c in _rows()]
    with pytest.raises(DatasetError, match="column 'x1' varies only .*underflow"):
        load_csv(_write(tmp_path, "tiny.csv", ["x1", "x2", "y"], tiny), "y")
    const = [[a, 3.0, c] for a, b, c in _rows()]
    with pytest.raises(DatasetError, match="predictor column 'x2' is constant"):
        load_csv(_write(tmp_path, "c.csv", ["x1", "x2", "y"], const), "y")
    one = [[a, b, 1] for a, b, c in _rows()]
    with pytest.raises(DatasetError, match="response 'y' is 1 in every row"):
        load_csv(_write(tmp_path, "o.csv", ["x1", "x2", "y"], one), "y")
    good = _write(tmp_path, "g.csv", ["x1", "x2", "y"], _rows())
    with pytest.raises(DatasetError, match="no column 'Y' \\(did you mean 'y'\\?\\)"):
        load_csv(good, "Y")
    ds = load_csv(good, "y")  # standardised predictors, 0/1 response
    np.testing.assert_allclose(ds.X.mean(0), 0.0, atol=1e-15)
    np.testing.assert_allclose(ds.X.std(0), 1.0)
    np.testing.assert_array_equal(ds.y, Y)


def test_read_columns_keeps_every_column(tmp_path):
    cols = read_columns(_write(tmp_path, "c.csv", ["x1", "x2", "y"], _rows(), sep="\t"))
    assert list(cols) == ["x1", "x2", "y"]
    np.testing.assert_array_equal(cols["x2"], X[:, 1])


def test_standardize_predictors_refuses_nan_columns():
    from inertia.data import standardize_predictors

    X2 = X.copy()
    X2[1, 0] = np.nan
    with pytest.raises(DatasetError, match=r"non-finite values .* columns \['a'\]"):
        standardize_predictors(X2, ["a", "b"])
