"""Information loss of protected variants through the survey layer (SPEC §9, §10): item non-response
in continuous keys, SSE/TSS for every perturbation, ordinal order from the spec, subsampled
variants compared on the records they retain, one distance pass per variant."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdc_dagster.pipeline import evaluation
from sdc_dagster.pipeline import protection
from sdc_dagster.loss import distance as distance_module
from sdc_dagster.spec import parse_spec

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
CONTINUOUS = ["expend", "income", "savings"]


def make_spec(variables, plans):
    raw = {"survey": "testdata", "title": "t", "source": {"path": "x.csv"}, "variables": variables, "plans": plans}
    return parse_spec(yaml.safe_load(yaml.safe_dump(raw)))


@pytest.fixture(scope="module")
def wave():
    """900 records of testdata with 10% item non-response in income (small, to stay quick)."""
    data = pd.read_csv(DATA / "testdata.csv").sample(900, random_state=3).sort_index()
    data.loc[np.random.default_rng(1).random(len(data)) < 0.1, "income"] = np.nan
    return data


@pytest.fixture(scope="module")
def spec():
    variables = {
        "urbrur": {"role": "categorical_key", "scale": "nominal"},
        "sex": {"role": "categorical_key", "scale": "nominal"},
        **{c: {"role": "continuous_key", "precision": 0.01} for c in CONTINUOUS},
        "ori_hid": {"role": "household_id"},
        "sampling_weight": {"role": "weight"},
    }
    plans = {
        "mdav": {"steps": [{"method": "microaggregation", "columns": CONTINUOUS, "k": 3}]},
        "noise": {"steps": [{"method": "noise", "columns": CONTINUOUS, "amount": 0.2}]},
        "swap": {"steps": [{"method": "rank_swap", "columns": CONTINUOUS, "p": 10}]},
        "rounded": {"steps": [{"method": "rounding", "columns": CONTINUOUS, "base": 1000}]},
        "sampled": {"steps": [{"method": "subsample", "fraction": 0.5}]},
    }
    return make_spec(variables, plans)


@pytest.fixture(scope="module")
def variants(wave, spec):
    return {p.name: protection.protect(wave, spec, p, wave="2024").data for p in spec.plans}


def test_every_continuous_plan_runs_with_item_non_response(wave, variants):
    for name in ("mdav", "noise", "swap", "rounded"):
        out = variants[name]
        # a missing value stays missing, an observed one stays observed
        assert np.array_equal(out[CONTINUOUS].isna().to_numpy(), wave[CONTINUOUS].isna().to_numpy()), name


def test_sse_tss_is_computed_from_the_data_for_every_perturbation(wave, spec, variants):
    summary = evaluation.information_loss(wave, {k: variants[k] for k in ("mdav", "noise", "swap", "rounded")}, spec).summary
    x = wave[CONTINUOUS].to_numpy(float)
    observed = ~np.isnan(x)
    for name in ("mdav", "noise", "swap", "rounded"):
        y = variants[name][CONTINUOUS].to_numpy(float)
        # S003 eq (10) with the released value as each record's group value, written out directly
        mean = np.nanmean(x, axis=0)
        sse = np.nansum((x - y) ** 2)
        tss = np.nansum((x - mean) ** 2)
        assert summary.loc[name, "sse_tss"] == pytest.approx(sse / tss, rel=1e-12), name
        assert summary.loc[name, "sse_tss"] > 0, name
        assert summary.loc[name, "continuous_values_compared"] == observed.sum()
    assert summary.loc["mdav", "sse_tss"] < 0.05  # microaggregation keeps most of the variance
    # values compared by the distance measure: all key values except the income holes
    assert (summary["values_compared"] == 900 * 5 - (~observed).sum()).all()


def test_subsampled_variant_is_compared_on_its_retained_records(wave, spec, variants):
    sampled = variants["sampled"]
    assert 0 < len(sampled) < len(wave)
    loss = evaluation.information_loss(wave, {"sampled": sampled}, spec)
    summary, per_record = loss.summary, loss.per_record
    row = summary.loc["sampled"]
    assert row["records_compared"] == len(sampled) and row["records_removed"] == len(wave) - len(sampled)
    # subsampling releases the retained records unchanged: no loss on them
    assert row["lambda_arctan"] == 0.0 and row["topsis_mean"] == 0.0
    assert per_record["sampled_topsis"].notna().sum() == len(sampled)
    assert per_record.loc[sampled.index, "sampled_topsis"].notna().all()
    headline = evaluation.headline_loss(wave, sampled, spec)
    assert headline["records_removed"] == len(wave) - len(sampled) and headline["lambda_arctan"] == 0.0


def test_ordinal_keys_use_the_spec_order():
    # education coded 1 = secondary, 2 = primary, 3 = tertiary: order primary < secondary < tertiary
    variables = {"edu": {"role": "categorical_key", "scale": "ordinal", "order": [2, 1, 3]},
                 "sex": {"role": "categorical_key", "scale": "nominal"}}
    spec = make_spec(variables, {"p": {"steps": [{"method": "recode", "variable": "edu", "mapping": {3: 2}}]}})
    original = pd.DataFrame({"edu": [1, 2, 3, 3], "sex": [1, 1, 2, 2]})
    released = pd.DataFrame({"edu": [1, 2, 2, 2], "sex": [1, 1, 2, 2]})
    summary = evaluation.information_loss(original, {"p": released}, spec).summary
    # tertiary -> primary is 2 positions of k - 1 = 2 in the spec order (code order would say 1/2):
    # edu distances 0, 0, 1, 1; sex 0: lambda = 2 / 8
    assert summary.loc["p", "lambda_arctan"] == pytest.approx(2 / 8)
    assert evaluation.headline_loss(original, released, spec)["lambda_arctan"] == pytest.approx(2 / 8)


def test_partial_distances_are_computed_once_per_variant(wave, spec, variants, monkeypatch):
    calls = []
    original = distance_module._substitute_hidden_continuous

    def counting(*args, **kwargs):
        calls.append(args[2])
        return original(*args, **kwargs)

    monkeypatch.setattr(distance_module, "_substitute_hidden_continuous", counting)
    evaluation.information_loss(wave, {"noise": variants["noise"]}, spec)
    assert sorted(calls) == sorted(CONTINUOUS)  # once per continuous key, not once per measure


def test_measures_undefined_on_a_wave_are_noted_and_the_rest_computed():
    # issue 21: a key with one observed category (country) and a constant continuous key (flag)
    # used to abort information_loss; now each undefined measure is noted and the others computed
    variables = {
        "region": {"role": "categorical_key", "scale": "nominal"},
        "sex": {"role": "categorical_key", "scale": "nominal"},
        "country": {"role": "categorical_key", "scale": "nominal"},
        "income": {"role": "continuous_key", "precision": 0.01},
        "flag": {"role": "continuous_key", "precision": 0.01},
    }
    spec = make_spec(variables, {"p": {"steps": [{"method": "recode", "variable": "region", "mapping": {3: 2}}]}})
    original = pd.DataFrame({"region": [1, 2, 3, 1, 2, 3, 1, 2], "sex": [1, 1, 2, 2, 1, 2, 2, 1],
                             "country": [7] * 8, "income": [10.0, 20, 30, 40, 50, 60, 70, 80], "flag": [1.0] * 8})
    released = original.assign(region=original["region"].replace({3: 2}), income=original["income"] + 1.0)
    loss = evaluation.information_loss(original, {"p": released}, spec)
    summary, notes = loss.summary, loss.notes
    noted = {n.measure: n for n in notes}
    assert set(noted) == {"cramers_v_change_mean", "moment measures and dUtility"}
    assert all(n.variant == "p" and n.status == "not applicable" for n in notes)
    assert noted["cramers_v_change_mean"].reason.endswith(": country")
    assert noted["moment measures and dUtility"].reason.endswith(": flag")
    # Cramér's V over the one pair left (region, sex): original table [[1, 2], [3, 0], [0, 2]] has
    # chi2 = 16/3, V^2 = 2/3; released (region 3 merged into 2) [[1, 2], [3, 2]] has chi2 = 8/15,
    # V^2 = 1/15: change = 100 (1 - sqrt(1/10))
    row = summary.loc["p"]
    assert row["cramers_v_change_mean"] == pytest.approx(100 * (1 - np.sqrt(0.1)))
    assert np.isfinite(row["lambda_arctan"]) and np.isfinite(row["sse_tss"])
    # the moments of income alone: every value + 1, so the mean moves by 1 and the variance not at all
    assert row["moment_mean_abs"] == pytest.approx(1.0) and row["moment_variance_abs"] == pytest.approx(0.0, abs=1e-9)
