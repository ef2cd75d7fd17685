"""The survey asset chain materialised in-process on the demo data, and its behaviour on bad input."""

import shutil
from collections import Counter

import pandas as pd
import pytest
from dagster import AssetKey

import sdc_dagster.risk.contribution
import sdc_dagster.pipeline.protection
import sdc_dagster.pipeline.risk
import sdc_dagster.risk
import sdc_dagster.risk.combined
from sdc_dagster.releases.manifest import list_decisions, list_releases, read_matrices
from sdc_dagster.definitions import build_definitions
from sdc_dagster.loss import ebil
from sdc_dagster.spec import load_spec

pytestmark = pytest.mark.slow

TESTDATA_ASSETS = [
    "raw_microdata",
    "variable_classification",
    "key_frequencies",
    "risk_scores",
    "risk_contributions",
    "protected_suppress_k3",
    "protected_recode_suppress",
    "protected_perturb",
    "plan_search",
    "protected_searched",
    "residual_risk",
    "residual_contributions",
    "information_loss",
    "release",
    "sdc_report",
]


def spec_keys(specs):
    return load_spec(specs / "testdata.yaml").categorical_keys


def land(home, survey, wave, source):
    folder = home / "landing" / survey
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, folder / f"{wave}.csv")


def fingerprint(frame: pd.DataFrame) -> tuple:
    """Shape and content hash of a frame: which wave or variant an engine function was called on."""
    return frame.shape, int(pd.util.hash_pandas_object(frame, index=True).sum())


@pytest.fixture
def engine_calls(monkeypatch) -> dict[str, Counter]:
    """Counters of engine calls during a test, by the fingerprint of the data each call received
    (the plan name for the release checks): the risk table, the unsafe combinations and the combined
    measure's set-up (every module that binds it), and the release checks the protected assets run
    (the plan search runs its own through its own binding, not counted here)."""
    calls = {name: Counter() for name in ("risk_table", "unsafe_combinations", "prepare_combined", "release_checks")}

    def counted(name, function, key=lambda data, *args, **kwargs: fingerprint(data)):
        def wrapper(*args, **kwargs):
            calls[name][key(*args, **kwargs)] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(sdc_dagster.risk, "risk_table", counted("risk_table", sdc_dagster.risk.risk_table))
    monkeypatch.setattr(sdc_dagster.risk, "unsafe_combinations",
                        counted("unsafe_combinations", sdc_dagster.risk.unsafe_combinations))
    for module in (sdc_dagster.pipeline.risk, sdc_dagster.risk.contribution, sdc_dagster.risk.combined):
        monkeypatch.setattr(module, "prepare_combined", counted("prepare_combined", module.prepare_combined))
    checks = sdc_dagster.pipeline.protection.release_checks
    monkeypatch.setattr(sdc_dagster.pipeline.protection, "release_checks",
                        counted("release_checks", checks, key=lambda data, spec, plan, **kwargs: plan.name))
    return calls


def test_whole_chain_on_testdata(sdc_home, testdata_only_specs, instance, engine_calls):
    land(sdc_home, "testdata", "2024", testdata_only_specs / "data" / "testdata.csv")
    defs = build_definitions(testdata_only_specs)
    instance.add_dynamic_partitions("testdata_waves", ["2024"])
    result = defs.resolve_job_def("testdata_wave_job").execute_in_process(partition_key="2024", instance=instance)
    assert result.success
    materialized = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
    assert materialized == set(TESTDATA_ASSETS)

    # Issue 23, nothing computed twice: on the original wave one risk table, one unsafe-combinations
    # table and one combined set-up (risk_scores builds them; residual_risk, the report and the
    # contributions receive them); the release checks of the searched plan are the search's own.
    store = sdc_home / "storage" / "testdata"
    wave = fingerprint(pd.read_parquet(store / "raw_microdata" / "2024.parquet"))
    assert engine_calls["risk_table"][wave] == 1
    assert engine_calls["unsafe_combinations"] == Counter({wave: 1})
    assert engine_calls["prepare_combined"][wave] == 1
    assert engine_calls["release_checks"] == Counter({"suppress_k3": 1, "recode_suppress": 1, "perturb": 1})
    risk = pd.read_parquet(store / "risk_scores" / "2024.parquet")
    golden = pd.read_csv("tests/data/sdcmicro/golden/a_testdata_risk_per_record.csv")
    assert risk["fk"].tolist() == golden["fk"].tolist()
    assert risk["risk"].to_numpy() == pytest.approx(golden["risk"].to_numpy(), rel=1e-8)
    assert risk["household_risk"].to_numpy() == pytest.approx(golden["hier_risk"].to_numpy(), rel=1e-8)
    suda = pd.read_csv("tests/data/sdcmicro/golden/b_testdata_suda2_per_record.csv")
    assert risk["suda_score"].to_numpy() == pytest.approx(suda["score"].to_numpy(), rel=1e-8)
    ldiv = pd.read_csv("tests/data/sdcmicro/golden/b_testdata_ldiversity_hhcivil.csv")
    assert risk["ldiversity_hhcivil_distinct"].tolist() == ldiv["hhcivil_Distinct_Ldiversity"].tolist()

    # Raw risk metadata carries sdcMicro's global figures.
    mat = instance.get_latest_materialization_event(AssetKey(["testdata", "risk_scores"])).asset_materialization
    assert mat.metadata["risk"].value == pytest.approx(0.00235334037526961, rel=1e-8)

    # The plan outputs are k-anonymous. The amounts are continuous keys: the two plans that
    # microaggregate them within the released key combinations pass the record-linkage check;
    # perturb (MDAV over the whole file) leaves them pointing to one record among those sharing a
    # released key and is withheld by it (Gower linkage on keys and amounts, about 93 %).
    residual = pd.read_parquet(store / "residual_risk" / "2024.parquet")
    for plan in ("suppress_k3", "recode_suppress", "perturb"):
        checks = {  # the plan's release checks, checks of the release stage named <plan>__<check>
            e.check_name.removeprefix(f"{plan}__"): e
            for e in result.get_asset_check_evaluations()
            if e.asset_key == AssetKey(["testdata", "release"]) and e.check_name.startswith(f"{plan}__")
        }
        assert checks["k_anonymity"].passed and checks["no_direct_identifier"].passed
        linkage = checks["linkage_risk"]
        assert linkage.passed == (plan != "perturb")
        assert linkage.metadata["value"].value == pytest.approx(residual.loc[plan, "linkage_risk"])
    assert residual.loc["perturb", "linkage_risk"] == residual.loc["perturb", "record_linkage_gower_risk"] > 0.9
    assert list_releases(sdc_home / "releases", "testdata", "2024", "perturb") == []
    assert residual.loc["suppress_k3", "k3_violations"] == 0
    assert residual.loc["original", "k3_violations"] == 281
    assert residual.loc["perturb", "record_linkage_risk"] < 1  # microaggregated continuous keys
    assert residual.loc["perturb", "interval_risk"] >= 0
    # Contributions after each plan (SPEC §6.6). Before: the wave's own global contributions.
    moved = pd.read_parquet(store / "residual_contributions" / "2024.parquet")
    before = pd.read_parquet(store / "risk_contributions" / "2024" / "global.parquet")
    for plan in ("suppress_k3", "recode_suppress", "perturb"):
        table = moved.xs(plan, level="variant")
        for value in ("shapley", "solidarity"):
            assert table[f"{value}_before"].to_numpy() == pytest.approx(before[value].to_numpy(), abs=0)
            # efficiency: the global contributions sum to 1 while some record is unsafe, else 0
            assert table[f"{value}_after"].sum() == pytest.approx(1.0) or table[f"{value}_after"].sum() == 0
    # After local suppression to 3-anonymity every categorical sub-combination has frequency >= 3
    # (a record's key is compatible with at least 3 records, and so is any part of it): the
    # categorical keys are null players of every risk game. Shapley gives them 0 (null-player
    # axiom); solidarity need not (it has the A-null-player axiom instead) but treats these
    # symmetric players equally (SPEC §6.3, §6.4).
    after = moved.xs("suppress_k3", level="variant").loc[spec_keys(testdata_only_specs)]
    assert (after["shapley_after"] == 0).all() and (after["shapley_before"] > 0).any()
    assert after["solidarity_after"].to_numpy() == pytest.approx(after["solidarity_after"].iloc[0], rel=1e-12)
    loss = pd.read_parquet(store / "information_loss" / "2024" / "summary.parquet")
    assert 0 < loss.loc["perturb", "sse_tss"] < 1 and loss.loc["perturb", "ebil_water"] > 0
    # EBIL uses the PRAM matrix the plan recorded with its release decision (SPEC §9.8).
    release = list_decisions(sdc_home / "releases", "testdata", "2024", "perturb")[-1]
    matrix = read_matrices(release)["water"]
    assert matrix.to_numpy().sum(axis=1) == pytest.approx(1.0)
    original = pd.read_parquet(store / "raw_microdata" / "2024.parquet")
    protected = pd.read_parquet(store / "protected_perturb" / "2024.parquet")
    assert loss.loc["perturb", "ebil_water"] == pytest.approx(ebil(original, protected, "water", matrix=matrix))
    assert loss.loc["suppress_k3", "lambda_arctan"] > 0
    assert (sdc_home / "reports" / "testdata" / "2024.html").is_file()
    report = instance.get_latest_materialization_event(AssetKey(["testdata", "sdc_report"])).asset_materialization
    assert {"headline", "risk_utility_map", "shapley_boxplot", "topsis_histograms"} <= set(report.metadata)
    assert "data:image/svg+xml;base64," in report.metadata["risk_utility_map"].value


def test_bad_wave_leaves_no_output_and_keeps_earlier_waves(sdc_home, testdata_only_specs, instance, tmp_path):
    good = testdata_only_specs / "data" / "testdata.csv"
    land(sdc_home, "testdata", "2024", good)
    defs = build_definitions(testdata_only_specs)
    instance.add_dynamic_partitions("testdata_waves", ["2024", "2025"])
    job = defs.resolve_job_def("testdata_wave_job")
    assert job.execute_in_process(partition_key="2024", instance=instance).success
    stored = sdc_home / "storage" / "testdata" / "raw_microdata" / "2024.parquet"
    before = stored.read_bytes()

    bad = pd.read_csv(good)
    bad.loc[10, "sampling_weight"] = -5
    bad_path = tmp_path / "bad.csv"
    bad.to_csv(bad_path, index=False)
    land(sdc_home, "testdata", "2025", bad_path)
    result = job.execute_in_process(partition_key="2025", instance=instance, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = str(failure.event_specific_data.error)
    assert "sampling_weight" in message and "weights must be > 0" in message and "11" in message
    assert not list((sdc_home / "storage").rglob("2025*"))
    assert stored.read_bytes() == before
