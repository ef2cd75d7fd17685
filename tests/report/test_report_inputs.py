"""What survey.report_inputs gathers for the report: suppressions per key, distributions before and
after, provenance from a release record, and the report files a CLI exports (numbers by hand)."""

import pandas as pd
import pytest

from sdc_dagster.pipeline import report_inputs
from sdc_dagster.releases.manifest import release_provenance
from sdc_dagster.errors import SDCInputError
from sdc_dagster.report import export_report, write_report
from sdc_dagster.spec import parse_spec

SPEC = {
    "survey": "tiny",
    "title": "tiny",
    "source": {"path": "tiny.csv", "format": "csv"},
    "variables": {
        "sex": {"role": "categorical_key", "scale": "nominal"},
        "region": {"role": "categorical_key", "scale": "nominal"},
        "income": {"role": "continuous_key", "precision": 0.1},
        "weight": {"role": "weight"},
    },
    "risk": {"k": 2, "l": 2, "max_global_risk": 0.5, "individual_risk_threshold": 0.5},
    "plans": {"b_plan": {"k": 2, "steps": [{"method": "local_suppression", "k": 2}]},
              "a_plan": {"k": 2, "steps": [{"method": "local_suppression", "k": 2}]}},
}


@pytest.fixture
def spec():
    return parse_spec(SPEC)


@pytest.fixture
def original():
    return pd.DataFrame({"sex": ["f", "f", "m", None, "m"], "region": ["a", "b", "a", "a", "b"],
                         "income": [10.0, 20.0, 30.0, 40.0, 50.0], "weight": [1.0] * 5})


def test_suppressions_by_key_counts_values_observed_before_and_missing_after(original):
    suppressed = original.assign(sex=["f", None, None, None, "m"], region=["a", "b", None, "a", "b"])
    subsample = original.loc[[0, 3]].assign(region=[None, None])  # keeps two records
    table = report_inputs.suppressions_by_key(original, {"s": suppressed, "sub": subsample}, ["sex", "region"])
    # sex: records 1 and 2 lost their value (record 3 was already missing); region: record 2
    assert table.to_dict() == {"s": {"sex": 2, "region": 1}, "sub": {"sex": 0, "region": 2}}
    assert list(table.index) == ["sex", "region"] and (table.dtypes == "int64").all()


def test_distributions_keep_the_variables_a_plan_moved_in_spec_order(spec, original):
    unchanged = original.copy()
    moved = original.assign(region=["a", "a", "a", "a", "b"], income=[15.0, 15.0, 35.0, 35.0, 50.0])
    distributions, continuous = report_inputs.protected_distributions(original, {"same": unchanged, "moved": moved}, spec)
    assert list(distributions) == ["region", "income"] and continuous == ["income"]
    assert list(distributions["income"]) == ["original", "same", "moved"]
    assert distributions["income"]["moved"].tolist() == [15.0, 15.0, 35.0, 35.0, 50.0]
    # a suppression alone (value -> missing) also counts as moved
    suppressed = original.assign(sex=[None, "f", "m", None, "m"])
    assert list(report_inputs.protected_distributions(original, {"s": suppressed}, spec)[0]) == ["sex"]


def test_release_provenance_of_a_released_and_a_withheld_record(tmp_path):
    manifest = {"survey": "tiny", "wave": "2024", "plan": "a_plan", "run_id": "r1",
                "spec": {"sha256": "s" * 64, "plan": {"random_state": 7}}, "input": {"sha256": "i" * 64},
                "output": {"sha256": "o" * 64}, "packages": {"pandas": "2.3.3"}}
    released = release_provenance(tmp_path, manifest)
    assert released == {"seed": 7, "run_id": "r1", "spec_sha256": "s" * 64, "input_sha256": "i" * 64,
                        "output_sha256": "o" * 64, "packages": {"pandas": "2.3.3"},
                        "record": str(tmp_path / "manifest.json"),
                        "audit_command": "sdc audit 2024 --survey tiny --plan a_plan --run r1"}
    withheld = release_provenance(tmp_path, {**manifest, "output": None, "withheld": {"k": "x"}})
    assert withheld["output_sha256"] is None and withheld["audit_command"] is None
    assert withheld["record"] == str(tmp_path / "withheld.json")


def test_export_report_names_a_missing_wave_and_writes_the_pdf(full_report_inputs, tmp_path):
    with pytest.raises(SDCInputError, match="'nowave'.*nowave.html"):
        export_report(tmp_path, "nowave")
    write_report(full_report_inputs, tmp_path)
    paths = export_report(tmp_path, "2024Q1")
    assert set(paths) == {"html", "json", "index"} and paths["index"].is_file()


@pytest.mark.slow
@pytest.mark.ui
def test_export_report_pdf(full_report_inputs, tmp_path):
    write_report(full_report_inputs, tmp_path)
    pdf = export_report(tmp_path, "2024Q1", pdf=True)["pdf"]
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 10_000


def test_sdc_report_command_lists_the_files_and_names_a_missing_wave(full_report_inputs, tmp_path, monkeypatch, capsys):
    from sdc_dagster.cli import main

    monkeypatch.setenv("SDC_HOME", str(tmp_path))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    write_report(full_report_inputs, tmp_path / "reports" / "s")
    assert main(["--home", str(tmp_path), "report", "s", "2024Q1"]) == 0
    assert f"index: {tmp_path / 'reports' / 's' / 'index.html'}" in capsys.readouterr().out
    assert main(["--home", str(tmp_path), "report", "s", "1999"]) == 2
    assert "sdc report: report of wave '1999'" in capsys.readouterr().out  # sdc's messages go to stdout
