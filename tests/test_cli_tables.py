"""`sdc table check` and `sdc table run` (headless, with progress) on the demo business table spec, and
the report of a table set with its suppressed cells marked and their audit intervals."""

import io
import shutil
from pathlib import Path

import pandas as pd
import pytest

from sdc_dagster.cli import EXIT_BAD_DATA, EXIT_BAD_SPEC, EXIT_USAGE, main
from sdc_dagster.cli.tables import run_table, run_table_check
from sdc_dagster.report.tables import render_table_report

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tables"


def _copy(tmp_path) -> Path:
    folder = tmp_path / "tables"
    (folder / "data").mkdir(parents=True)
    shutil.copy(EXAMPLES / "business_tables.yaml", folder)
    shutil.copy(EXAMPLES / "data" / "business.csv", folder / "data")
    return folder / "business_tables.yaml"


def test_check_describes_a_valid_spec_and_tabulates_its_file(tmp_path):
    out = io.StringIO()
    assert run_table_check(str(_copy(tmp_path)), out=out) == 0
    text = out.getvalue()
    assert "table spec 'business_tables' is valid (1 tables" in text
    assert "turnover: sector4 x geo; value value; holding company; rules nk n=1 k=85, p p=10 (ties strict)" in text
    assert "data: turnover 42 cells" in text


def test_check_names_each_bad_key_with_its_line(tmp_path):
    spec = _copy(tmp_path)
    spec.write_text(spec.read_text().replace("method: optimal", "method: quickest").replace("{rule: p, p: 10}",
                                                                                           "{rule: q, p: 10}"))
    out = io.StringIO()
    assert run_table_check(str(spec), out=out) == EXIT_BAD_SPEC
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("sdc table check: business_tables.yaml:17: published.turnover.rules[1]['rule']: must be "
                               "one of 'freq', 'zero', 'nk', 'p', 'pq', 'request', got 'q'")
    assert lines[1] == "   17 |     rules: [{rule: nk, n: 1, k: 85}, {rule: q, p: 10}]"
    assert lines[2].startswith("sdc table check: business_tables.yaml:19: protection.method: must be one of")
    assert lines[3] == "   19 | protection: {method: quickest, cost: value, time_limit: 60}"
    assert lines[4].startswith("hint: fix those 2 keys")


def test_check_reports_bad_data_by_column(tmp_path):
    spec = _copy(tmp_path)
    data = spec.parent / "data" / "business.csv"
    data.write_text(data.read_text().replace("75.9", "n/a"))
    out = io.StringIO()
    assert run_table_check(str(spec), out=out) == EXIT_BAD_DATA
    assert "sdc table check: bad data:" in out.getvalue() and "'value'" in out.getvalue()


def test_run_materialises_the_chain_with_progress_and_audit_replays_it(tmp_path, home):
    spec = _copy(tmp_path)
    out = io.StringIO()
    assert run_table(str(spec), home=str(home), out=out) == 0
    text = out.getvalue()
    for step in ("business_tables/table_input", "business_tables/protected_tables", "check audit_passed: passed",
                 "business_tables/table_release"):
        assert step in text
    assert "turnover: 30 distinct cells (42 published" in text and "released: " in text
    assert main(["--home", str(home), "audit", "tables", "--survey", "business_tables"]) == 0
    assert main(["--home", str(home), "audit", "tables", "--survey", "nothing"]) == EXIT_USAGE
    # a file set has no waves
    assert run_table(str(spec), wave="2024", home=str(home), out=io.StringIO()) == EXIT_USAGE


def test_report_marks_primary_and_secondary_cells_with_their_intervals():
    cells = pd.DataFrame({
        "geo": ["Total", "A", "B"], "freq": [5.0, 2.0, 3.0], "value": [50.0, 20.0, 30.0],
        "primary": [False, True, False], "lower": [0.0, 4.0, 0.0], "upper": [0.0, 4.0, 0.0],
        "suppressed": [False, True, True], "status": ["safe", "primary", "secondary"],
        "lo": [float("nan"), 0.0, 10.0], "up": [float("nan"), 40.0, float("inf")], "protected": [True] * 3,
        "duplicate_of": [""] * 3})
    checks = {"audit_passed": {"passed": True, "value": 0, "rule": "no primary disclosed", "figures": {"t": 0.0}}}
    page = render_table_report("Tables x", {"t": cells}, {"t": ["geo"]}, checks, {"run": "r1"})
    assert '<span class="primary">1 primary</span> and <span class="secondary">1 secondary</span>' in page
    assert '<span class="primary">primary</span>' in page and '<span class="secondary">secondary</span>' in page
    assert "[0, 40]" in page and "[10, &infin;]" in page and "4, 4" in page
    assert '<span class="pass">passed</span>' in page


def test_report_shows_each_figure_as_the_release_publishes_it():
    """The report gave every figure three significant digits: the business file's cell 199.6 (one
    decimal, as its CSV publishes it) read 200, its audit interval [0, 199.6] read [0, 200], and EIA's
    protection level 418,311.76 read 4.18 × 10⁵. Values now at the decimals of the table's values,
    bounds and levels with two more (the Handbook's 22.94), thousands separated, trailing zeros dropped."""
    cells = pd.DataFrame({
        "geo": ["Total", "A", "B"], "freq": [5.0, 2.0, 3.0], "value": [462.3, 199.6, 262.7],
        "primary": [False, True, False], "lower": [0.0, 418311.7647, 0.0], "upper": [0.0, 22.941176, 0.0],
        "suppressed": [False, True, True], "status": ["safe", "primary", "secondary"],
        "lo": [float("nan"), 0.0, 62.7], "up": [float("nan"), 199.6, 1262.7], "protected": [True] * 3,
        "duplicate_of": [""] * 3})
    page = render_table_report("Tables x", {"t": cells}, {"t": ["geo"]}, {}, {"run": "r1"})
    assert "<td>199.6</td>" in page and "<td>462.3</td>" in page
    assert "[0, 199.6]" in page and "[62.7, 1,262.7]" in page
    assert "418,311.765, 22.941" in page and "× 10" not in page


def test_report_counts_a_duplicate_cell_once_and_names_the_cell_it_repeats():
    # nonEU has the single child Iceland: the rows nonEU and Iceland are one (primary) cell
    cells = pd.DataFrame({
        "geo": ["Total", "nonEU", "Iceland", "EU"], "freq": [9.0, 2.0, 2.0, 7.0],
        "primary": [False, True, True, False], "lower": [0.0, 1.0, 1.0, 0.0], "upper": [0.0, 1.0, 1.0, 0.0],
        "suppressed": [False, True, True, True], "status": ["safe", "primary", "primary", "secondary"],
        "lo": [float("nan"), 0.0, 0.0, 7.0], "up": [float("nan"), 9.0, 9.0, 9.0], "protected": [True] * 4,
        "duplicate_of": ["", "", "geo nonEU", ""]})
    page = render_table_report("Tables x", {"t": cells}, {"t": ["geo"]}, {}, {})
    assert "3 distinct cells (4 published: 1 is a duplicate of another code" in page
    assert '<span class="primary">1 primary</span> and <span class="secondary">1 secondary</span>' in page
    assert "<th>duplicate of</th>" in page and '<td class="text">geo nonEU</td>' in page


def test_the_demo_runs_a_table_spec_and_prints_its_summary(tmp_path, home):
    from dagster import instance_for_test

    from sdc_dagster.cli.demo import run_table_demo
    from sdc_dagster.definitions import build_definitions
    from sdc_dagster.spec.tables import load_table_spec

    spec = load_table_spec(_copy(tmp_path))
    defs = build_definitions(specs=[], grid=False, tables=[spec])
    out = io.StringIO()
    with instance_for_test() as instance:
        assert run_table_demo(defs, instance, [spec], {}, out) == 0
    text = out.getvalue()
    assert "== tables business_tables: materialising business_tables_tables_job" in text
    # 42 published cells, 12 of them a duplicate (a parent with a single child): 30 distinct cells,
    # of which 14 primary and 6 secondary (19 and 7 rows)
    assert ("turnover: 30 distinct cells (42 published, 12 duplicates of another code's cell), 14 primary and 6 "
            "secondary suppressions") in text and "released: " in text


def test_a_large_table_lists_its_suppressed_cells_only():
    from sdc_dagster.report.tables import FULL_TABLE_CELLS

    n = FULL_TABLE_CELLS + 1
    suppressed = [i in (3, 7) for i in range(n)]
    cells = pd.DataFrame({
        "geo": [f"g{i}" for i in range(n)], "freq": [5.0] * n, "primary": [i == 3 for i in range(n)],
        "lower": [0.0] * n, "upper": [0.0] * n, "suppressed": suppressed,
        "status": ["primary" if i == 3 else "secondary" if i == 7 else "safe" for i in range(n)],
        "lo": [0.0 if s else float("nan") for s in suppressed], "up": [9.0 if s else float("nan") for s in suppressed],
        "duplicate_of": [""] * n})
    page = render_table_report("Tables x", {"t": cells}, {"t": ["geo"]}, {}, {})
    assert f"{n} cells over geo" in page and "the 2 suppressed cells" in page
    assert ">g3<" in page and ">g7<" in page and ">g4<" not in page


def test_a_survey_table_spec_is_checked_against_the_survey_specs(home):
    out = io.StringIO()
    assert run_table_check(str(EXAMPLES / "testdata_tables.yaml"), home=str(home), out=out) == 0
    assert "table spec 'testdata_tables' is valid (2 tables from survey 'testdata'" in out.getvalue()
    # a frequency rule has no tie to break: no tie convention named (it read "(ties strict)")
    assert "water_by_area: water x urbrur; counts; weight sampling_weight; rules freq n=10; " \
           "linked with relat_by_area" in out.getvalue()
    out = io.StringIO()  # a survey's wave must be named
    assert run_table(str(EXAMPLES / "testdata_tables.yaml"), home=str(home), out=out) == EXIT_USAGE
    assert "reads survey 'testdata': name its wave with --wave" in out.getvalue()


def test_run_reads_the_business_file_given_on_the_command_line(tmp_path, home):
    import json

    from sdc_dagster.releases.tables import FILE_WAVE, list_table_releases
    from sdc_dagster.spec.sources import file_sha256

    spec = _copy(tmp_path)
    other = tmp_path / "business_2025.csv"  # company A's agriculture in Portugal: 75.9 -> 175.9
    other.write_text((spec.parent / "data" / "business.csv").read_text().replace("75.9", "175.9"))
    out = io.StringIO()
    assert main(["--home", str(home), "table", "run", str(spec), "--file", str(other)]) == 0
    folder = list_table_releases(home / "releases", "business_tables", FILE_WAVE)[-1]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["inputs"]["data"]["sha256"] == file_sha256(other)
    # the optimal method says that it proved its pattern optimal, in the manifest and the report
    assert manifest["published"]["turnover"]["optimality"].startswith("proven optimal, cost ")
    report = (home / "reports" / "tables" / "business_tables" / f"{FILE_WAVE}.html").read_text()
    assert "optimal, cost by value; proven optimal, cost " in report
    released = pd.read_csv(folder / "turnover.csv").set_index(["sector4", "geo"])
    # the grand total of business.csv's 20 rows is 462.3 (hand sum); the given file's is 100 more
    assert released.loc[("Total", "Total"), "value"] == pytest.approx(562.3)
    assert main(["--home", str(home), "audit", "tables", "--survey", "business_tables"]) == 0
    # a missing file is bad data; a file set takes no wave
    assert run_table(str(spec), data_file=str(tmp_path / "none.csv"), home=str(home), out=out) == EXIT_BAD_DATA
    assert "none.csv: no such file" in out.getvalue()


def test_run_lands_a_survey_wave_given_on_the_command_line(home):
    from sdc_dagster.resources.storage import landing_dir

    out = io.StringIO()
    code = run_table(str(EXAMPLES / "testdata_tables.yaml"), wave="w9", data_file=str(EXAMPLES.parent / "data" / "testdata.csv"),
                     home=str(home), out=out)
    assert code == 0, out.getvalue()
    assert (landing_dir() / "testdata" / "w9.csv").is_file()
    assert "testdata_tables/table_release" in out.getvalue() and "released: " in out.getvalue()


def test_a_survey_magnitude_table_without_holding_is_told_of_the_households(tmp_path, home):
    """Found with testdata's income by water source and area: the cell (water 5, rural) is 6 persons of
    one household (ori_hid 332), each a contributor of its own, so no rule flagged it; with
    holding: ori_hid it is one contributor and a primary. The check names the survey's household id."""
    spec = tmp_path / "income.yaml"
    text = ("tables: td_income\nsource: {survey: testdata}\ndimensions: {urbrur: {}, water: {}}\npublished:\n"
            "  income: {dimensions: [water, urbrur], value: income, rules: [{rule: nk, n: 2, k: 80}]}\n")
    spec.write_text(text)
    out = io.StringIO()
    assert run_table_check(str(spec), home=str(home), out=out) == 0
    assert ("note: income: each person of a household (ori_hid) is a contributor of its own; holding: ori_hid "
            "counts a household as one") in out.getvalue()
    spec.write_text(text.replace("value: income,", "value: income, holding: ori_hid,"))
    out = io.StringIO()
    assert run_table_check(str(spec), home=str(home), out=out) == 0
    assert "note:" not in out.getvalue()


def test_tau_argus_input_takes_no_file(tmp_path, home):
    import sdc_dagster.tables as tables

    data = pd.DataFrame({"geo": ["A", "A", "B"], "value": [1.0, 2.0, 3.0]})
    tables.write_tau_argus(tables.tabulate(data, {"geo": None}, value="value"), tmp_path, "t")
    spec = tmp_path / "t.yaml"
    spec.write_text("tables: from_argus\nsource: {tau_argus: t.rda}\ndimensions: {geo: {}}\n"
                    "published:\n  t: {dimensions: [geo], value: value, freq: freq, rules: [{rule: nk, n: 1, k: 85}]}\n")
    out = io.StringIO()
    assert run_table(str(spec), data_file=str(tmp_path / "t.tab"), home=str(home), out=out) == EXIT_USAGE
    assert "its .rda names the .tab (no --file; edit source.tau_argus)" in out.getvalue()
    out = io.StringIO()  # the summary names the count a magnitude table of tabular input reads
    assert run_table_check(str(spec), home=str(home), out=out) == 0
    assert "t: geo; value value, count freq; rules nk n=1 k=85 (ties strict)" in out.getvalue()


def test_a_rounded_table_set_runs_releases_its_rounded_counts_and_replays(home):
    """The demo's rounded table (testdata's persons by water source x relation to the head, base 3):
    hand counts from testdata.csv: 120 cells (water: Total, 3 groups, 8 sources; relat: Total, 9
    codes), 4580 persons; the cells with 1 or 2 persons (15, all unsafe under freq n = 3) are gone."""
    import json

    from sdc_dagster.releases.tables import list_table_releases

    out = io.StringIO()
    spec = EXAMPLES / "testdata_rounded.yaml"
    code = run_table(str(spec), wave="w9", data_file=str(EXAMPLES.parent / "data" / "testdata.csv"),
                     home=str(home), out=out)
    assert code == 0, out.getvalue()
    text = out.getvalue()
    assert "check additive: passed" in text and "check no_small_counts: passed" in text
    assert "water_by_relat: 120 cells," in text and "changed by rounding to base 3 (15 unsafe under the rules)" in text
    folder, = list_table_releases(home / "releases", "testdata_rounded", "w9")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["method"] == "rounding" and "cost" not in manifest
    assert manifest["rounding"] == {"round_base": 3, "max_round": None, "zero_candidates": False,
                                    "identify_new": True, "seed": 2024}
    released = pd.read_csv(folder / "water_by_relat.csv", dtype={"water": str, "relat": str})
    counts = released.set_index(["water", "relat"])["value"]
    assert not counts.between(1, 2).any() and (counts % 1 == 0).all()
    # additive: each source's total is the sum over relat, each group the sum of its sources
    leaves = released[(released["water"] != "Total") & (released["relat"] != "Total")]
    by_water = leaves.groupby("water")["value"].sum()
    assert (counts.xs("Total", level="relat").loc[by_water.index] == by_water).all()
    assert counts[("well", "Total")] == counts[("3", "Total")] + counts[("4", "Total")]
    # every unrounded cell keeps its count: 2 persons drink from source 5 and are related 5
    assert counts[("1", "3")] == 309 and counts[("5", "5")] in (0, 3)
    assert (released["status"].isin(["S", "Z"])).all()
    page = (home / "reports" / "tables" / "testdata_rounded" / "w9.html").read_text()
    assert "Cells of water_by_relat: original and published" in page and '<span class="rounded">' in page
    # a code that looks like a number (water 1) is a text cell, aligned as Total and piped are
    assert '<td class="text"><span class="code">1</span></td>' in page
    assert main(["--home", str(home), "audit", "tables", "--survey", "testdata_rounded"]) == 0


def test_a_cell_key_table_set_runs_releases_its_perturbed_values_and_replays(tmp_path, home):
    """The demo's business turnover by the cell key method (p-table D 2, V 1.05, js 1; delta 0.1,
    top_k 1; record keys drawn with seed 2026): released perturbed, nothing suppressed, the manifest
    recording the parameters and seed, the report original beside published, and `sdc audit tables`
    recomputing the release byte for byte from the recorded seed."""
    import json

    from sdc_dagster.releases.tables import list_table_releases

    folder = tmp_path / "tables"
    (folder / "data").mkdir(parents=True)
    shutil.copy(EXAMPLES / "business_cellkey.yaml", folder)
    shutil.copy(EXAMPLES / "data" / "business.csv", folder / "data")
    out = io.StringIO()
    assert run_table(str(folder / "business_cellkey.yaml"), home=str(home), out=out) == 0, out.getvalue()
    text = out.getvalue()
    assert "check cells_valid: passed" in text and "check perturbed_as_ptable: passed" in text
    assert "changed by the cell key method (seed 2026; 14 unsafe under the rules)" in text
    release, = list_table_releases(home / "releases", "business_cellkey", "file")
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["method"] == "cell_key" and "cost" not in manifest
    assert manifest["cell_key"] == {"max_deviation": 2, "variance": 1.05, "threshold": 1, "seed": 2026,
                                    "delta": 0.1, "top_k": 1, "epsilon": [1.0]}
    released = pd.read_csv(release / "turnover.csv").set_index(["sector4", "geo"])
    # nothing suppressed: safe, or Z for an empty cell (no company of that sector in that country), kept 0
    assert len(released) == 42 and released["status"].isin(["S", "Z"]).all() and released["value"].notna().all()
    assert (released.loc[released["status"] == "Z", "value"] == 0).all()
    # the grand total of the file (462.3) moves by at most D x delta x its largest company's turnover
    business = pd.read_csv(EXAMPLES / "data" / "business.csv")
    largest = business.groupby("company")["value"].sum().max()
    assert round(business["value"].sum(), 1) == 462.3
    assert abs(released.loc[("Total", "Total"), "value"] - 462.3) <= 2 * 0.1 * largest + 0.05
    # published at the input's precision (one decimal)
    assert (released["value"] * 10 % 1 == 0).all()
    page = (home / "reports" / "tables" / "business_cellkey" / "file.html").read_text()
    assert "published perturbed (cell key method)" in page and '<span class="perturbed">' in page
    assert "cell key method, p-table D = 2, V = 1.05, js = 1, delta = 0.1, top_k = 1, record keys drawn with seed 2026" in page
    assert main(["--home", str(home), "audit", "tables", "--survey", "business_cellkey"]) == 0
