"""`sdc demo` (the README's first command, after installation) runs every demo wave and region;
`sdc check` reports every error of a spec, or of the data, in one run."""

import io

import pytest

from sdc_dagster.cli import EXIT_BAD_DATA, EXIT_BAD_SPEC, run_check, run_demo


@pytest.mark.slow
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
    # Each plan's release decision is printed next to its figures: one plan per wave is released (the
    # report's recommendation), the others are eligible alternatives or withheld. testdata's perturb is
    # withheld by the record-linkage check: MDAV over the whole file leaves its amounts (continuous
    # keys) pointing to one record among those sharing a released key.
    blocks = text.split("\n== ")[1:]
    for block in blocks[:3]:
        survey_wave = block.split(":")[0]
        rows = [line for line in block.splitlines()[1:]
                if line.split() and line.split()[0] in ("suppress_k3", "recode_suppress", "perturb", "searched")]
        decisions = {line.split()[0]: line.rstrip().split("  ")[-1].strip() for line in rows}
        assert list(decisions.values()).count("released") == 1, (survey_wave, decisions)
        assert set(decisions.values()) <= {"released", "eligible", "withheld: linkage_risk"}, decisions
        if survey_wave.startswith("testdata"):
            assert decisions["perturb"] == "withheld: linkage_risk"
    assert "category counts suppressed" in text and "households swapped" in text
    # the demo table specs: the survey's linked frequency tables, its counts rounded to base 3, the
    # business file's turnover perturbed by the cell key method and its magnitude table (30 distinct cells: 12 of the 42 rows are duplicates)
    assert "== tables testdata_tables wave 2024" in text and "== tables business_tables" in text
    assert "== tables testdata_rounded wave 2024" in text and "changed by rounding to base 3" in text
    assert "== tables business_cellkey" in text and "changed by the cell key method (seed 2026" in text
    assert ("turnover: 30 distinct cells (42 published, 12 duplicates of another code's cell), 14 primary and 6 "
            "secondary suppressions") in text
    assert (home / "reports" / "tables" / "business_tables" / "file.html").is_file()
    assert (home / "reports" / "tables" / "testdata_tables" / "2024.html").is_file()


# --- sdc check: every error in one run ---------------------------------------------------------------

SPEC_WITH_THREE_ERRORS = """\
survey: s
variables:
  a: {role: categorical_key, categories: [1, 2], colour: 1}
  x:
    role: continuous_key
    precision: 7
plans:
  p:
    - {method: local_suppression, k: 3}
    - {method: recode, variable: a, mapping: {"7": 1}}
"""


def check(tmp_path, text: str, data: str | None = None) -> tuple[int, list[str]]:
    """``sdc check s.yaml [--data d.csv]`` on these texts: the exit status and the lines printed."""
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(text)
    data_file = None
    if data is not None:
        data_file = tmp_path / "d.csv"
        data_file.write_text(data)
    out = io.StringIO()
    status = run_check(str(spec_file), data_file=str(data_file) if data_file else None, out=out)
    return status, out.getvalue().splitlines()


def test_check_reports_three_independent_spec_errors_in_line_order(tmp_path):
    status, lines = check(tmp_path, SPEC_WITH_THREE_ERRORS)
    assert status == EXIT_BAD_SPEC == 4
    assert lines == [
        "sdc check: s.yaml:3: variables.a.colour: unknown key; expected one of "
        "['categories', 'hierarchy', 'label', 'missing', 'order', 'precision', 'role', 'scale']",
        "   3 |   a: {role: categorical_key, categories: [1, 2], colour: 1}",
        "sdc check: s.yaml:6: variables.x.precision: expected a number in (0, 1)",
        "   6 |     precision: 7",
        "sdc check: s.yaml:10: plans.p.steps[1].mapping: expected categories of 'a' ([1, 2]), got '7'",
        '   10 |     - {method: recode, variable: a, mapping: {"7": 1}}',
        "hint: fix those 3 keys (each message says what is expected there) and run sdc check again; "
        "`sdc init NAME --from FILE` drafts a valid spec to compare with",
    ]


def test_check_reports_a_yaml_syntax_error_alone(tmp_path):
    status, lines = check(tmp_path, SPEC_WITH_THREE_ERRORS.replace("precision: 7", "precision: [7"))
    assert status == EXIT_BAD_SPEC
    errors = [line for line in lines if line.startswith("sdc check:")]
    assert len(errors) == 1 and errors[0].startswith(f"sdc check: {tmp_path / 's.yaml'}: not valid YAML (")
    assert lines[-1].startswith("hint: fix that key (the message says what is expected there)")


def test_check_reports_every_column_problem_of_the_data(tmp_path):
    spec = """\
survey: s
variables:
  a: {role: categorical_key, categories: [1, 2]}
  b: {role: categorical_key}
  c: {role: categorical_key}
  x: {role: continuous_key, precision: 0.05}
  w: {role: weight}
"""
    # c is missing, a has category 3 (row 2), x has text (row 2), w is 0 (row 3), b is entirely missing.
    status, lines = check(tmp_path, spec, "a,b,x,w\n1,,1.5,1\n3,,abc,2\n2,,2,0\n")
    assert status == EXIT_BAD_DATA == 5
    source = "sdc check: s (d.csv, csv): "
    assert lines[0].endswith("spec of survey 's' is valid (5 variables, 3 categorical keys, 1 continuous keys, plans: )")
    assert sorted(lines[1:]) == sorted([
        source + "column 'c' named in the spec is missing from the data",
        source + "column 'a' breaks rule 'categories must be one of [1, 2]'; first offending rows (1-based): 2; "
                 "values: 3",
        source + "column 'x' breaks rule 'values must be numeric'; first offending rows (1-based): 2; values: 'abc'",
        source + "column 'w' breaks rule 'weights must be > 0'; first offending rows (1-based): 3; values: 0",
        source + "column 'b' breaks rule 'not entirely missing'",
    ])


@pytest.mark.slow
def test_two_sdc_processes_starting_on_a_new_home_both_get_the_instance(tmp_path):
    """Two waves run side by side on a new home: both processes create the Dagster instance at
    once. Without the lock in cli.home.dagster_instance one failed with "table runs already exists"
    (seen with two `sdc run` at once); every process must get a working instance."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster")}
    (tmp_path / "dagster").mkdir()
    code = ("from sdc_dagster.cli.home import dagster_instance\n"
            "with dagster_instance() as instance:\n"
            "    print(len(instance.get_runs()))\n")
    processes = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, [err[-500:] for _, err in results]
    assert [out.strip() for out, _ in results] == ["0"] * 4


def test_the_sdc_process_ends_with_mains_status_after_the_exit_handlers(tmp_path):
    """``sdc`` (``cli.command``) runs the exit handlers (the shared DuckDB database is closed there)
    and ends with main's status without interpreter finalisation, where C++ worker threads aborted
    a finished run under load ("terminate called without an active exception", exit -6)."""
    import os
    import subprocess
    import sys

    script = ("import atexit, sys\n"
              "atexit.register(lambda: print('exit handler ran', flush=True))\n"
              "sys.argv = ['sdc', 'run', 'nosuch', '2024']\n"
              "from sdc_dagster.cli import command\n"
              "command()\n"
              "print('not reached')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SDC_HOME": str(tmp_path / "home")})
    assert done.returncode == 2  # EXIT_USAGE: no survey 'nosuch'
    assert "no survey 'nosuch'" in done.stdout and "exit handler ran" in done.stdout
    assert "not reached" not in done.stdout
