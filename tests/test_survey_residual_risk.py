"""pipeline.evaluation.residual_risk: the record-linkage variants of SPEC §4.1 (one column each) and the
interval measures of SPEC §4.2 next to the existing measures, on testdata with the example spec;
missing continuous values accepted."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.protect import microaggregation
from sdc_dagster.risk import rank_interval_disclosure, record_linkage_risk
from sdc_dagster.spec import load_spec
from sdc_dagster.pipeline.evaluation import information_loss, residual_contributions, residual_risk
from sdc_dagster.pipeline.variant import same_release

ROOT = Path(__file__).resolve().parents[1]
CONTINUOUS = ["expend", "income", "savings"]
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
LINKAGE_COLUMNS = [
    "record_linkage_risk",
    "record_linkage_expected_risk",
    "record_linkage_mahalanobis_risk",
    "record_linkage_mahalanobis_expected_risk",
    "record_linkage_gower_risk",
    "record_linkage_gower_expected_risk",
    "record_linkage_one_to_one_risk",
    "record_linkage_one_to_one_expected_risk",
]
# the shares the linkage_risk check takes the largest of: every linkage with ties at random
CHECKED = ["record_linkage_expected_risk", "record_linkage_mahalanobis_expected_risk",
           "record_linkage_gower_expected_risk", "record_linkage_one_to_one_expected_risk"]


@pytest.fixture(scope="module")
def wave():
    data = pd.read_csv(ROOT / "tests" / "data" / "sdcmicro" / "testdata.csv").iloc[:600].copy()
    return data, load_spec(ROOT / "examples" / "testdata.yaml")


def test_residual_risk_reports_every_linkage_variant(wave):
    data, spec = wave
    assert set(CONTINUOUS) <= set(spec.continuous_keys)
    mdav = microaggregation(data, CONTINUOUS, k=3)
    noisy = data.assign(income=data["income"] * (1 + 0.01 * np.sin(np.arange(len(data)))))
    table = residual_risk(data, {"mdav": mdav, "noisy": noisy}, spec)
    # existing columns kept
    assert {"global_risk", "k3_violations", "interval_risk", "suppressed_values"} <= set(table.columns)
    # nothing changed in the original row: no linkage figure, and the check's linkage risk is 1
    assert table.loc["original", LINKAGE_COLUMNS].isna().all()
    assert table.loc["original", "linkage_risk"] == 1
    # Linkage uses every continuous key a variant releases, changed or not: "noisy" changed income
    # only, and the intruder links on expend and savings as released too.
    for name, frame, changed in (("mdav", mdav, CONTINUOUS), ("noisy", noisy, CONTINUOUS)):
        linkages = {
            "record_linkage": record_linkage_risk(data, frame, changed),
            "record_linkage_mahalanobis": record_linkage_risk(data, frame, changed, distance="mahalanobis"),
            # Gower links on the changed continuous keys and the (nominal) categorical keys
            "record_linkage_gower": record_linkage_risk(
                data, frame, changed + KEYS, distance="gower", scales=dict.fromkeys(KEYS, "nominal")
            ),
            "record_linkage_one_to_one": record_linkage_risk(data, frame, changed, assignment="one_to_one"),
        }
        expected = {}
        for prefix, result in linkages.items():
            expected[f"{prefix}_risk"] = result.risk
            expected[f"{prefix}_expected_risk"] = result.expected_risk
        assert table.loc[name, LINKAGE_COLUMNS].to_dict() == pytest.approx(expected)
        assert ((table.loc[name, LINKAGE_COLUMNS] >= 0) & (table.loc[name, LINKAGE_COLUMNS] <= 1)).all()
        for prefix in linkages:  # ties at random never credit the intruder with more than ties in his favour
            assert table.loc[name, f"{prefix}_expected_risk"] <= table.loc[name, f"{prefix}_risk"]
    # groups of 3 identical records: at random about one record in three is linked one-to-one
    assert table.loc["mdav", "record_linkage_one_to_one_expected_risk"] <= 0.4
    assert table.loc["mdav", "record_linkage_one_to_one_risk"] > 0.8


def test_residual_risk_accepts_missing_continuous_values(wave):
    data, spec = wave
    holed = data.copy()
    holed.loc[holed.index[::7], "income"] = np.nan
    mdav = microaggregation(holed, CONTINUOUS, k=3)
    table = residual_risk(holed, {"mdav": mdav}, spec)
    compared = holed[CONTINUOUS].notna().all(axis=1).mean()
    for column in LINKAGE_COLUMNS:
        if column.startswith("record_linkage_gower"):
            # Gower skips missing values pairwise: a record without income still links on the rest
            assert compared < table.loc["mdav", column] <= 1
        else:
            assert 0 < table.loc["mdav", column] <= compared
    assert 0 < table.loc["mdav", "rank_interval_disclosure"] <= 1


def test_residual_risk_reports_rank_interval_disclosure(wave):
    data, spec = wave
    mdav = microaggregation(data, CONTINUOUS, k=3)
    noisy = data.assign(income=data["income"] * (1 + 0.01 * np.sin(np.arange(len(data)))))
    table = residual_risk(data, {"mdav": mdav, "noisy": noisy}, spec)
    assert np.isnan(table.loc["original", "rank_interval_disclosure"])  # nothing perturbed
    for name, frame, changed in (("mdav", mdav, CONTINUOUS), ("noisy", noisy, ["income"])):
        value = table.loc[name, "rank_interval_disclosure"]
        assert value == pytest.approx(rank_interval_disclosure(data, frame, changed).value)
        assert 0 <= value <= 1
    # 1 % multiplicative noise keeps most incomes within a few ranks of their own
    assert table.loc["noisy", "rank_interval_disclosure"] > 0.5


def test_every_residual_risk_column_is_described_in_the_report(wave):
    """The report explains each residual-risk column (meaning, direction, range, SPEC section);
    none falls back to "not described"."""
    from sdc_dagster.report.measures import measure_info

    data, spec = wave
    table = residual_risk(data, {"mdav": microaggregation(data, CONTINUOUS, k=3)}, spec)
    undescribed = [c for c in table.columns if measure_info(c).meaning == "not described"]
    assert undescribed == []


def test_residual_risk_reuses_the_linkage_figures_of_the_release_checks(wave):
    """The figures release_checks computed for linkage_risk (stored with the check, NaN as None)
    are taken as they are, not computed again; linkage_risk is the largest of the four shares an
    intruder can achieve, ties broken at random (not the counts that give ties to the intruder)."""
    data, spec = wave
    mdav = microaggregation(data, CONTINUOUS, k=3)
    computed = residual_risk(data, {"mdav": mdav}, spec)
    figures = {c: 0.5 for c in LINKAGE_COLUMNS} | {"record_linkage_mahalanobis_risk": None, "linkage_risk": 0.5}
    reused = residual_risk(data, {"mdav": mdav}, spec, linkage={"mdav": figures})
    assert reused.loc["mdav", "record_linkage_risk"] == 0.5 and np.isnan(reused.loc["mdav", "record_linkage_mahalanobis_risk"])
    row = computed.loc["mdav"]
    assert row["linkage_risk"] == row[CHECKED].max()


def test_linkage_check_breaks_ties_between_identical_originals_at_random():
    """Integer ages 30, 30, 30, 41, 50, 50 released as 30, 30, 30, 40, 50, 50. Every nearest linkage
    links every record in the worst case (1.0, reported as the upper bound). At random the three
    30s count 1/3 each, the 40 counts 1 and the two 50s 1/2 each: 3/6; one-to-one at random the
    same (three 30s to three 30s: 3 / (3 x 3) each). The check takes 0.5 and passes a 0.6 target."""
    from sdc_dagster.pipeline import protection
    from sdc_dagster.spec import parse_spec

    spec = parse_spec({"survey": "ages", "variables": {"age": {"role": "continuous_key", "precision": 0.1}},
                       "risk": {"max_linkage_risk": 0.6},
                       "plans": {"p": [{"method": "microaggregation", "columns": ["age"], "k": 2}]}})
    original = pd.DataFrame({"age": [30.0, 30, 30, 41, 50, 50]})
    released = pd.DataFrame({"age": [30.0, 30, 30, 40, 50, 50]})
    check = protection.release_checks(released, spec, spec.plans[0], original=original)["linkage_risk"]
    for measure in LINKAGE_COLUMNS:
        assert check.figures[measure] == pytest.approx(0.5 if measure in CHECKED else 1.0), measure
    assert check.value == pytest.approx(0.5) and check.passed
    assert check.measure == "Euclidean, nearest original, ties at random"


def test_a_variant_released_as_an_earlier_one_gets_the_same_figures(wave):
    """The searched plan is often a spec plan under another name: its figures are computed once."""
    data, spec = wave
    data = data.iloc[:300]
    suppressed = data.assign(roof=data["roof"].mask(np.arange(len(data)) % 11 == 0))
    mdav = microaggregation(suppressed, CONTINUOUS, k=3)
    twin = mdav.copy()
    other = microaggregation(data, CONTINUOUS, k=4)
    variants = {"mdav": mdav, "other": other, "twin": twin}
    alone = {"mdav": {"mdav": mdav}, "twin": {"twin": twin}}
    risk = residual_risk(data, variants, spec)
    loss = information_loss(data, variants, spec)
    summary, per_record, notes = loss.summary, loss.per_record, loss.notes
    for name in ("mdav", "twin"):
        pd.testing.assert_series_equal(risk.loc[name], residual_risk(data, alone[name], spec).loc[name],
                                       check_exact=True)
        one = information_loss(data, alone[name], spec)
        one_summary, one_per_record = one.summary, one.per_record
        pd.testing.assert_series_equal(summary.loc[name], one_summary.loc[name], check_exact=True)
        pd.testing.assert_frame_equal(per_record.filter(like=name), one_per_record, check_exact=True)
    def noted(found, name):
        return [(n.measure, n.reason, n.status) for n in found if n.variant == name]

    alone_notes = information_loss(data, {"twin": twin}, spec).notes
    assert noted(notes, "twin") == noted(notes, "mdav") == noted(alone_notes, "twin") != []
    before = pd.DataFrame({"shapley": 1 / 7, "solidarity": 1 / 7}, index=KEYS)
    moved = residual_contributions(before, variants, spec)
    pd.testing.assert_frame_equal(moved.xs("twin", level="variant"), moved.xs("mdav", level="variant"))
    pd.testing.assert_frame_equal(moved.xs("twin", level="variant"),
                                  residual_contributions(before, {"twin": twin}, spec).xs("twin", level="variant"))


def test_same_release_compares_records_columns_types_and_values(wave):
    data, _ = wave
    frame = data.assign(roof=data["roof"].astype(float).mask(np.arange(len(data)) % 5 == 0))
    assert same_release(frame, frame.copy())  # missing values in the same places are equal
    assert not same_release(frame, frame.assign(roof=frame["roof"].fillna(0)))
    assert not same_release(frame, frame.astype({"sex": "float64"}))  # same numbers, another type
    assert not same_release(frame, frame.iloc[:-1])
    assert not same_release(frame, frame[frame.columns[::-1]])


def test_residual_risk_reports_sdcmicro_model_risk(wave):
    """With a weight, gr1 and gr2 of sdcMicro's modRisk (main effects of the released keys) for the
    original and each variant; a variant that suppresses key values is fitted on its complete records."""
    from sdc_dagster.risk import model_risk

    data, spec = wave
    suppressed = data.assign(water=data["water"].mask(data.index % 7 == 0))
    table = residual_risk(data, {"suppressed": suppressed}, spec)
    for name, frame in (("original", data), ("suppressed", suppressed)):
        expected = model_risk(frame, KEYS, weight="sampling_weight")
        assert table.loc[name, "model_risk_gr1"] == pytest.approx(expected["gr1"])
        assert table.loc[name, "model_risk_gr2"] == pytest.approx(expected["gr2"])
        assert 0 < table.loc[name, "model_risk_gr1"] <= table.loc[name, "model_risk_gr2"] <= 1
