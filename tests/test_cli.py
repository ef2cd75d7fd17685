"""`sdc demo` (the README's first command, after installation) runs every demo wave and region."""

import io

from sdc_dagster.cli import run_demo


def test_demo_materialises_every_wave_and_prints_the_summary(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("SDC_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    out = io.StringIO()
    assert run_demo(str(home), out=out) == 0
    text = out.getvalue()
    for survey, wave in (("testdata", "2024"), ("simulation", "w1"), ("simulation", "w2")):
        assert f"== {survey} wave {wave}" in text
        assert (home / "reports" / survey / f"{wave}.html").is_file()
    assert "suppress_k3" in text and "k3_violations" in text and "topsis_mean" in text
    # Each plan's release decision is printed next to its figures (every demo plan passes its checks).
    plan_rows = [line for line in text.splitlines() if line.startswith(("suppress_k3", "recode_suppress", "perturb"))]
    assert len(plan_rows) == 5 and all(line.rstrip().endswith(" released") for line in plan_rows)
    assert "category counts suppressed" in text and "households swapped" in text
