"""Operational facts the docs state (exit statuses, the verdict's thresholds, the automatic VI
switch) equal the code's constants. Each page is read as text; a number stated in one of these
phrasings that differs from the constant fails (~0.1 s)."""
import re
from pathlib import Path

from inertia import cli, diagnostics
from inertia import verdict

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def _number(text: str) -> float:
    """'500', '1e4', '10⁴', '10^4', '10,000' as a float."""
    text = text.replace(",", "").rstrip(".")
    m = re.fullmatch(r"10(?:\^|)([⁰¹²³⁴⁵⁶⁷⁸⁹]+|\^\d+)", text)
    if m:
        return 10.0 ** int(m.group(1).translate(SUPERSCRIPT).lstrip("^"))
    return float(text)


def _pages():
    for page in PAGES:
        yield page.relative_to(ROOT), " ".join(page.read_text().split())  # lines joined


def _found(pattern):
    return [(name, m) for name, text in _pages() for m in re.finditer(pattern, text)]


def test_the_unconverged_exit_status_is_the_codes():
    code = verdict.EXIT_UNCONVERGED
    hits = _found(r"exits? (?:with status |)(\d+) (?:when (?:the (?:chains|fit|run)[^.]{0,40}"
                  r"not converged|it fails)|unless `--allow-unconverged`)")
    hits += _found(r"(\d+) when the run has not converged")
    hits += _found(r"status (\d+) when it fails")
    assert len(hits) >= 5, "the docs' phrasings changed: update this test's patterns"
    wrong = [(str(n), m.group(0)) for n, m in hits if int(m.group(1)) != code]
    assert not wrong, wrong


def test_the_cli_reference_states_every_exit_status():
    text = " ".join((ROOT / "docs" / "reference" / "cli.md").read_text().split())
    for pattern, value in ((r"(\d+) on success", 0),
                           (r"(\d+) when the run has not converged", verdict.EXIT_UNCONVERGED),
                           (r"(\d+) when `inertia fit` converged but its Gaussian is an "
                            r"unreliable", verdict.EXIT_UNRELIABLE),
                           (r"(\d+) on bad input", cli.EXIT_ERROR),
                           (r"(\d+) when interrupted", cli.EXIT_INTERRUPTED),
                           (r"(\d+) when the reader of its output closes the pipe",
                            cli.EXIT_BROKEN_PIPE)):
        m = re.search(pattern, text)
        assert m and int(m.group(1)) == value, (pattern, m and m.group(0))


def test_the_verdicts_thresholds_are_the_codes():
    hits = _found(r"R-hat (?:≤|<=) ([\d.]+) and bulk ESS (?:≥|>=) (\d+)")
    assert len(hits) >= 3
    wrong = [(str(n), m.group(0)) for n, m in hits
             if (float(m.group(1)), float(m.group(2))) != (diagnostics.RHAT_MAX,
                                                           diagnostics.ESS_MIN)]
    assert not wrong, wrong


def test_the_automatic_switch_thresholds_are_the_codes():
    from inertia.mcmc import warmup
    from inertia.variational import auto

    hits = _found(r"(κ̂|kappa_hat|estimated kappa) (?:≥|>=) ([0-9][0-9e^.,⁰¹²³⁴⁵⁶⁷⁸⁹]*)")
    assert len(hits) >= 4
    wrong = []
    for name, m in hits:
        value = _number(m.group(2))
        text = dict(_pages())[name]
        before = text[max(0, m.start() - 300):m.start()]
        around = text[max(0, m.start() - 300):m.end() + 120]
        is_sampler = ("warm-up" in before or "300-update" in around
                      or "mcmc.warmup.SWITCH_KAPPA" in around)
        expected = warmup.SWITCH_KAPPA if is_sampler else auto.SWITCH_KAPPA
        if value != expected:
            wrong.append((str(name), m.group(0), expected))
    assert not wrong, wrong


def test_no_reference_to_files_outside_the_repository():
    """Docs and package code cite papers, not the specification files the package was built from."""
    pattern = re.compile(r"shared/|spec §|\bspec (?:section|GVI|HFHR|SGMCMC|FIELD)|"
                         r"\b(?:GVI|HFHR|SGMCMC|FIELD-VI)\.md")
    files = [*PAGES, *sorted((ROOT / "inertia").rglob("*.py"))]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in files if p.name != "reliability.md"
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_the_kept_frame_calibration_band_is_the_codes():
    """docs/hfhr.md's band of the energy-error factor that keeps the fit's frame."""
    from inertia.mcmc import adapt

    hits = _found(r"kept only when the factor is within \[([\d.½]+), ([\d.]+)\]")
    assert len(hits) == 1, "the docs' phrasing changed: update this test's pattern"
    lo, hi = (float(g.replace("½", "0.5")) for g in hits[0][1].groups())
    assert (lo, hi) == adapt.CALIBRATION
