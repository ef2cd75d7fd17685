"""Issue 37: every new sdcMicro method is a plan step of a spec, checked before any data is read,
applied by the pipeline with the spec's scales, recorded with its seed in the release manifest, and
named (with its sources) in the report.

Methods: sdcMicro's microaggregation methods (``kind``), measures and weights, Gower
microaggregation (``microaggregation_gower``, sdcMicro ``microaggrGower``) and multivariate top
coding (``mv_top_coding``, sdcMicro ``mvTopCoding``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.pipeline.protection import protect
from sdc_dagster.protect.plan import plan_problems
from sdc_dagster.report.content import step_sentence, step_sources
from sdc_dagster.spec import SpecError, parse_spec

# --- the spec refuses a step's bad options, naming the step and the option --------------------

BAD_STEPS = [
    ({"method": "microaggregation", "columns": ["x"], "k": 0}, "k: must be an integer >= 1, got 0"),
    ({"method": "microaggregation", "columns": ["x"], "kind": "rmd", "nc": 0},
     "nc (the number of clusters): must be an integer >= 1, got 0"),
    ({"method": "microaggregation", "columns": ["x"], "measure": "trim", "trim": 0.7},
     "trim (the share cut at each end): must be a number in [0, 0.5], got 0.7"),
    ({"method": "microaggregation", "columns": ["x"], "measure": "onestep", "weight": "w"},
     "weight: sdcMicro weights the measures mean and median only, not 'onestep'"),
    ({"method": "microaggregation", "columns": ["x"], "kind": "pca", "clusters": "g"},
     "clusters: only the clustering methods (clustpca, clustmcdpca, clustpppca, influence) use clusters, "
     "not method 'pca'"),
    ({"method": "mv_top_coding", "columns": ["x", "y"], "alpha": 1.5}, "alpha: must be a number in (0, 1), got 1.5"),
    ({"method": "mv_top_coding", "columns": ["x", "y"], "alpha": 0}, "alpha: must be a number in (0, 1), got 0"),
    ({"method": "mv_top_coding", "columns": ["x", "y"], "center": [1.0, 2.0]},
     "center, covariance: give both (sdcMicro's center and cov) or neither"),
    ({"method": "mv_top_coding", "columns": ["x", "y"], "center": [1.0], "covariance": [[1.0]]},
     "center: must be 2 finite numbers, one per column, got [1.0]"),
    ({"method": "mv_top_coding", "columns": ["x", "y"], "center": [0.0, 0.0], "covariance": [[1.0, 2.0], [0.0, 1.0]]},
     "covariance: must be a finite symmetric 2 x 2 matrix"),
    ({"method": "microaggregation_gower", "columns": ["x", "g"], "k": 0}, "k: must be an integer >= 1, got 0"),
    ({"method": "microaggregation_gower", "columns": ["x", "g"], "weights": [1.0]},
     "weights: must be one non-negative number per distance column (2), not all 0; got [1.0]"),
    ({"method": "microaggregation_gower", "columns": ["x"], "distance_columns": ["x", "g"], "weights": [0, 0]},
     "weights: must be one non-negative number per distance column (2), not all 0; got [0, 0]"),
    ({"method": "microaggregation_gower", "columns": ["x", "g"], "scales": {"g": "interval"}},
     "scales['g']: must be one of 'continuous', 'nominal', 'ordinal', got 'interval'"),
    ({"method": "microaggregation_gower", "columns": ["x", "g"], "mixed": {"x": "zero"}},
     "mixed['x'] (the semi-continuous variable's constant): must be a number, got 'zero'"),
]


def survey(plans: dict, **variables) -> dict:
    return {"survey": "t",
            "variables": {"g": {"role": "categorical_key"}, "x": {"role": "continuous_key", "precision": 0.1},
                          "y": {"role": "continuous_key", "precision": 0.1}, "w": {"role": "weight"}, **variables},
            "plans": plans}


@pytest.mark.parametrize(("step", "message"), BAD_STEPS)
def test_spec_refuses_a_bad_option_of_a_new_step_before_any_data_is_read(step, message):
    with pytest.raises(SpecError) as error:
        parse_spec(survey({"p": [step]}))
    assert f"plans.p.steps: step 0 ({step['method']}): {message}" in str(error.value)
    # the engine's own check without a spec: the same words
    assert [message in text for _, text in plan_problems([step], columns=["x", "y", "g", "w"])] == [True]


@pytest.mark.parametrize("step", [
    {"method": "microaggregation", "columns": ["x", "y"], "kind": kind, "k": 2}
    for kind in ("mdav", "rmd", "pca", "clustpca", "clustmcdpca", "clustpppca", "pppca", "mcdpca", "influence",
                 "onedims", "individual_ranking", "single", "simple")
] + [
    {"method": "microaggregation", "columns": ["x"], "measure": "trim", "trim": 0.5},
    {"method": "microaggregation", "columns": ["x"], "measure": "median", "weight": "w"},
    {"method": "microaggregation", "columns": ["x", "y"], "kind": "clustpca", "clusters": "g"},
    {"method": "mv_top_coding", "columns": ["x", "y"], "alpha": 0.01, "estimator": "classical"},
    {"method": "mv_top_coding", "columns": ["x", "y"], "center": [0, 0], "covariance": [[2, 1], [1, 2]]},
    {"method": "microaggregation_gower", "columns": ["x"], "distance_columns": ["x", "g"], "weights": [1, 0.5],
     "scales": {"g": "ordinal"}, "mixed": {"x": 0}, "categorical": "mode"},
])
def test_spec_accepts_every_method_and_option(step):
    assert parse_spec(survey({"p": [step]})).plans[0].steps == (step,)


# --- the pipeline: Gower microaggregation takes the spec's scales ------------------------------

def test_gower_step_treats_a_numerically_coded_categorical_key_as_a_category():
    # x = 0.5, 0.5, 9.5, 9.5 (range 9), g = 1, 3, 1, 3; k = 2: each record and its nearest other record.
    # Gower distance (x / 9 and g, each weight 1, averaged): record 1 (x 0.5, g 3) is 0.5 from record 0
    # (same x, other g) and 0.5 from record 3 (x 9 apart, same g): the tie goes to the earlier record
    # 0. Record 2: 0.5 from 0 and from 3, record 0. Record 3: record 1. Record 0: record 1 (0.5) before
    # record 2 (0.5). x: means 0.5, 0.5, 5.0, 5.0. g as the spec's categorical key (nominal): a
    # neighbour's category, 1 or 3; averaged as a number (the step's own scales say continuous, with
    # range 2 the distances are the same) records 0 and 1 would get the mean 2, a category no record has.
    spec = parse_spec({
        "survey": "t", "variables": {"g": {"role": "categorical_key"}, "x": {"role": "continuous_key", "precision": 0.1}},
        "plans": {"spec_scales": [{"method": "microaggregation_gower", "columns": ["x", "g"], "k": 2}],
                  "own_scales": [{"method": "microaggregation_gower", "columns": ["x", "g"], "k": 2,
                                  "scales": {"g": "continuous"}}]}})
    data = pd.DataFrame({"x": [0.5, 0.5, 9.5, 9.5], "g": [1, 3, 1, 3]})
    by_spec = protect(data, spec, spec.plan("spec_scales"), wave="1")
    assert by_spec.data["x"].tolist() == [0.5, 0.5, 5.0, 5.0]
    assert set(by_spec.data["g"].iloc[:2]) <= {1, 3} and by_spec.data["g"].iloc[2:].tolist() == [1, 3]
    assert by_spec.steps[0]["parameters"]["scales"] == {"g": "nominal", "x": "continuous"}
    by_step = protect(data, spec, spec.plan("own_scales"), wave="1")
    assert by_step.data["g"].tolist() == [2, 2, 1, 3]
    assert by_step.steps[0]["parameters"]["scales"] == {"g": "continuous", "x": "continuous"}


# --- the report names each method and its sources ----------------------------------------------

def test_report_sentence_and_sources_of_multivariate_top_coding():
    robust = {"method": "mv_top_coding", "parameters": {"columns": ["x", "y"], "alpha": 0.05, "estimator": "robust",
                                                        "center": None, "covariance": None},
              "random_state": 17, "reported": {"mv_top_coded_records": 3}, "values_changed": {"x": 3, "y": 3}}
    assert step_sentence(robust) == (
        "Multivariate top coding (outliers pulled onto the chi-square ellipsoid of the Mahalanobis distance) with "
        "columns x, y; alpha = 0.05; estimator robust (seed 17) (3 records pulled onto the ellipsoid): changed 6 "
        "values (x 3, y 3).")
    assert step_sources(robust) == (("sdcMicro reference manual", "mvTopCoding"), ("Rousseeuw & Van Driessen 1999", ""))
    classical = {"method": "mv_top_coding", "columns": ["x", "y"], "estimator": "classical"}
    assert step_sources(classical) == (("sdcMicro reference manual", "mvTopCoding"),)


# --- sdc run: each step through the whole chain, its seed in the manifest -----------------------

PLANS = {
    "rmd": ({"method": "microaggregation", "columns": ["income", "expend"], "k": 3, "kind": "rmd"},
            True, "Microaggregation around robust Mahalanobis outliers (sdcMicro rmd)"),
    "pca_median": ({"method": "microaggregation", "columns": ["income", "expend"], "k": 3, "kind": "pca",
                    "measure": "median"},
                   False, "Microaggregation along the first principal component (sdcMicro pca)"),
    "clustmcdpca": ({"method": "microaggregation", "columns": ["income", "expend"], "k": 3, "kind": "clustmcdpca",
                     "nc": 2},
                    True, "Microaggregation within clusters, along each cluster&#x27;s robust (MCD) first principal "
                          "component (sdcMicro clustmcdpca)"),
    "ranking_weighted": ({"method": "microaggregation", "columns": ["income", "expend"], "k": 3,
                          "kind": "individual_ranking", "weight": "w"},
                         False, "Individual ranking microaggregation (sdcMicro onedims)"),
    "mvtop": ({"method": "mv_top_coding", "columns": ["income", "expend"], "alpha": 0.05},
              True, "Multivariate top coding (outliers pulled onto the chi-square ellipsoid"),
    "mvtop_classical": ({"method": "mv_top_coding", "columns": ["income", "expend"], "estimator": "classical"},
                        False, "Multivariate top coding"),
    "gower": ({"method": "microaggregation_gower", "columns": ["income", "expend", "region"], "k": 3},
              True, "Gower-distance microaggregation of mixed variables (sdcMicro microaggrGower)"),
}


@pytest.mark.slow
def test_sdc_run_applies_records_and_reports_every_new_step(tmp_path, home, capsys):
    from sdc_dagster.cli import main

    rng = np.random.default_rng(3)
    n = 60
    data = pd.DataFrame({"sex": rng.integers(1, 3, n), "region": rng.integers(1, 4, n),
                         "income": np.round(rng.lognormal(8, 0.6, n), 2),
                         "expend": np.round(rng.lognormal(7.5, 0.5, n), 2), "w": np.full(n, 50.0)})
    data.loc[:2, "income"] *= 20  # three outliers for multivariate top coding
    source = tmp_path / "sm.csv"
    data.to_csv(source, index=False)
    (home / "specs").mkdir(parents=True)
    spec = {"survey": "sm",
            "variables": {"sex": {"role": "categorical_key", "scale": "nominal"},
                          "region": {"role": "categorical_key", "scale": "nominal"},
                          "income": {"role": "continuous_key", "precision": 0.01},
                          "expend": {"role": "continuous_key", "precision": 0.01}, "w": {"role": "weight"}},
            "risk": {"k": 2, "max_global_risk": 0.5, "max_linkage_risk": 1.0},
            "limits": {"max_mean_change": 1, "max_variance_change": 1, "max_correlation_change": 1},
            "plans": {name: [step] for name, (step, _, _) in PLANS.items()}}
    (home / "specs" / "sm.yaml").write_text(json.dumps(spec))  # JSON is YAML
    assert main(["run", "sm", "2024", "--file", str(source)]) == 0, capsys.readouterr().out
    report = (home / "reports" / "sm" / "2024.html").read_text()
    for name, (step, randomised, label) in PLANS.items():
        folder, = (home / "releases" / "sm" / "2024" / name).iterdir()
        manifest = json.loads((folder / "manifest.json").read_text())
        recorded, = manifest["steps"]
        assert recorded["method"] == step["method"]
        assert {key: recorded["parameters"][key] for key in step if key != "method"} == \
            {key: value for key, value in step.items() if key != "method"}
        # the seed of every random part (MCD subsets, k-means starts, categorical draws) is recorded,
        # none where nothing is drawn
        assert isinstance(recorded["random_state"], int) if randomised else recorded["random_state"] is None, name
        assert recorded["values_changed"], name
        assert label in report, name
    assert "Rousseeuw, P. J. &amp; Van Driessen, K. (1999)" in report  # the references list the MCD's source
    # what the manifest records reproduces the released files byte for byte
    for name in ("rmd", "clustmcdpca", "mvtop", "gower"):
        folder, = (home / "releases" / "sm" / "2024" / name).iterdir()
        assert main(["audit", "2024", "--survey", "sm", "--plan", name, "--run", folder.name]) == 0, name


# --- the plan search's ladder: multivariate top coding before microaggregation (opt-in) -----------

def _grid(outlier: bool) -> pd.DataFrame:
    """15 x 15 points evenly on the unit square (light tails: every squared robust Mahalanobis
    distance below the chi-square 99 % quantile, the corners at about 6 against 9.21), one of them
    moved far out when ``outlier``."""
    g = np.linspace(0.0, 1.0, 15)
    x, y = np.meshgrid(g, g)
    frame = pd.DataFrame({"x": x.ravel(), "y": y.ravel(), "g": np.tile([1, 2, 3], 75)})
    if outlier:
        frame.loc[0, ["x", "y"]] = [5.0, -4.0]
    return frame


def _ladder_spec(methods=None):
    search = {"enabled": True, **({"methods": methods} if methods else {})}
    return parse_spec({"survey": "t", "search": search,
                       "variables": {"x": {"role": "continuous_key", "precision": 0.01},
                                     "y": {"role": "continuous_key", "precision": 0.01},
                                     "g": {"role": "categorical_key"}}})


def test_ladder_offers_multivariate_top_coding_when_named_and_the_keys_have_outliers():
    from sdc_dagster.protect.plan import apply_plan
    from sdc_dagster.search.space import MV_TOP_CODING_RECORDS, continuous_steps
    from sdc_dagster.spec import DEFAULT_SEARCH_METHODS

    named = _ladder_spec(["microaggregation", "mv_top_coding", "noise"])
    rungs = [r for r in continuous_steps(_grid(True), named) if r.method == "mv_top_coding"]
    assert [r.steps[0]["alpha"] for r in rungs] == [0.01, 0.025, 0.05, 0.1]
    assert all(r.steps[1] == {"method": "microaggregation", "columns": ["x", "y"], "k": 3} for r in rungs)
    methods = list(dict.fromkeys(r.method for r in continuous_steps(_grid(True), named)))
    assert methods == ["microaggregation", "microaggregation_all", "mv_top_coding", "noise"]
    # not without outliers, not by default, not on large files
    assert not [r for r in continuous_steps(_grid(False), named) if r.method == "mv_top_coding"]
    assert "mv_top_coding" not in DEFAULT_SEARCH_METHODS
    assert not [r for r in continuous_steps(_grid(True), _ladder_spec()) if r.method == "mv_top_coding"]
    large = pd.concat([_grid(True)] * (MV_TOP_CODING_RECORDS // 225 + 1), ignore_index=True)
    assert not [r for r in continuous_steps(large, named) if r.method == "mv_top_coding"]
    # the weakest rung as the release applies it: the outlier (5, -4) pulled in onto the ellipsoid
    # (its direction from the centre kept), then every released point shared by a group of at least 3
    released = apply_plan(_grid(True), rungs[0].steps, keys=["g"], random_state=1).data
    assert released.groupby(["x", "y"]).size().min() >= 3
    assert 0.5 < released.loc[0, "x"] < 5.0 and -4.0 < released.loc[0, "y"] < 0.5


def test_report_sentence_of_microaggregation_leaves_out_the_options_its_method_does_not_use():
    pca = {"method": "microaggregation", "parameters": {"columns": ["x", "y"], "k": 3, "kind": "pca",
                                                        "measure": "median", "trim": 0.0, "nc": 8, "weight": None},
           "random_state": None}
    assert step_sentence(pca) == ("Microaggregation along the first principal component (sdcMicro pca) with "
                                  "columns x, y; k = 3; kind pca; measure median.")
    clustered = {"method": "microaggregation", "parameters": {"columns": ["x"], "k": 3, "kind": "clustpca",
                                                              "measure": "trim", "trim": 0.1, "nc": 4},
                 "random_state": 7}
    assert step_sentence(clustered).endswith("with columns x; k = 3; kind clustpca; measure trim; trim = 0.1; "
                                             "nc = 4 (seed 7).")
