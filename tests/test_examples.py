"""The runnable documentation runs: every script in examples/ and the guide's python blocks."""
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
NEEDS = {"numpyro_model.py": ("numpyro", "arviz"), "hfhr_sample.py": ("arviz",),
         "ray_grid.py": ("ray",)}


def python_blocks(path):
    """The ```python fenced blocks of a Markdown file, in order."""
    return re.findall(r"^```python\n(.*?)^```", Path(path).read_text(), flags=re.S | re.M)


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script, capsys):
    for mod in NEEDS.get(script.name, ()):
        pytest.importorskip(mod)
    runpy.run_path(str(script), run_name="__main__")  # examples assert their own numbers
    assert capsys.readouterr().out.strip()


def test_guide_blocks_run(capsys):
    pytest.importorskip("numpyro")
    pytest.importorskip("arviz")
    blocks = python_blocks(ROOT / "docs" / "guide.md")
    assert len(blocks) >= 5
    namespace = {"__name__": "__guide__"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/guide.md[block {i}]", "exec"), namespace)
    assert namespace["ms"].stages and namespace["res"].draws.shape[:2] == (4, 500)
    assert capsys.readouterr().out.strip()
