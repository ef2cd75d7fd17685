"""The whole survey chain, every plan, on a wave that looks like a real delivery.

The bundled demo waves are clean; real deliveries are not. The wave made here from sdcMicro's
testdata has item non-response in five key variables (as empty cells and as the spec's missing code
-999) and in the continuous keys, a category absent from the wave that a plan recodes, a new code
that the spec does not list, a few records with every key missing, whole households and weights that
vary within the design. The same wave delivered with its columns in another order must give
byte-identical releases (each protected asset writes its plan's release decision, so the twin runs
the raw wave and the protected variants only, not the evaluation and the report a second time).
"""

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from dagster import AssetKey, instance_for_test

from sdc_dagster.releases.files import PROTECTED
from sdc_dagster.releases.manifest import list_decisions, read_manifest
from sdc_dagster.definitions import build_definitions
from sdc_dagster.risk import k_anonymity_violations

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[2]
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
WITH_NONRESPONSE = ["roof", "walls", "water", "electcon", "relat"]
CONTINUOUS = ["expend", "income", "savings"]

# Every protection method a plan can hold, on the messy wave.
EXTRA_PLANS = {
    "noise_swap_round": {
        "description": "additive noise on expenditure, rank swapping of income, rounding of savings",
        "random_state": 11,
        "steps": [
            {"method": "noise", "columns": ["expend"], "amount": 50, "kind": "additive"},
            {"method": "rank_swap", "columns": ["income"], "p": 5},
            {"method": "rounding", "columns": ["savings"], "base": 100, "kind": "deterministic"},
            {"method": "local_suppression", "k": 3},
        ],
    },
    "ranked_suppression": {
        "description": "local suppression with an importance order and a subsample of households",
        "random_state": 5,
        "steps": [
            {"method": "subsample", "fraction": 0.8},
            {"method": "local_suppression", "k": 3, "importance": ["sex", "urbrur", "relat", "water", "walls", "roof", "electcon"]},
        ],
    },
}


def messy_wave(clean: pd.DataFrame, seed: int = 2026) -> pd.DataFrame:
    """A delivery of ``clean`` as a real survey wave arrives (see the module docstring)."""
    rng = np.random.default_rng(seed)
    wave = clean.copy()
    n = len(wave)
    # a category that a plan recodes (roof 9 -> 4) is absent from this wave
    wave = wave[wave["roof"] != 9].reset_index(drop=True)
    n = len(wave)
    for column in WITH_NONRESPONSE:
        hit = rng.random(n) < 0.05
        wave[column] = wave[column].astype("float64")
        # half as empty cells, half as the survey's missing-value code
        wave.loc[hit & (rng.random(n) < 0.5), column] = np.nan
        wave.loc[hit & wave[column].notna(), column] = -999
    for column in CONTINUOUS:
        wave[column] = wave[column].astype("float64")
        wave.loc[rng.random(n) < 0.05, column] = np.nan
    every_key_missing = rng.choice(n, size=3, replace=False)
    wave.loc[every_key_missing, WITH_NONRESPONSE] = np.nan
    # a water source code no earlier wave had (the spec lists no categories for water)
    wave.loc[rng.choice(n, size=4, replace=False), "water"] = 10
    # weights vary by household around the design weight
    households = wave["ori_hid"].to_numpy()
    factor = pd.Series(rng.uniform(0.8, 1.25, size=households.max() + 1))
    wave["sampling_weight"] = (wave["sampling_weight"] * factor[households].to_numpy()).round(3)
    return wave


def spec_folder(tmp_path, checkout):
    folder = tmp_path / "specs"
    (folder / "data").mkdir(parents=True)
    spec = yaml.safe_load((checkout / "examples" / "testdata.yaml").read_text())
    spec["plans"].update(EXTRA_PLANS)
    (folder / "testdata.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    shutil.copy(checkout / "examples" / "data" / "testdata.csv", folder / "data" / "testdata.csv")
    return folder


def run_wave(home, specs, instance, wave_file, monkeypatch, assets=None):
    """The wave job on ``wave_file`` as wave 2031 in the data home ``home``: every asset, or the
    assets named in ``assets``."""
    monkeypatch.setenv("SDC_HOME", str(home))
    landing = home / "landing" / "testdata"
    landing.mkdir(parents=True)
    shutil.copy(wave_file, landing / "2031.csv")
    defs = build_definitions(specs)
    instance.add_dynamic_partitions("testdata_waves", ["2031"])
    selection = None if assets is None else [AssetKey(["testdata", name]) for name in assets]
    result = defs.resolve_job_def("testdata_wave_job").execute_in_process(
        partition_key="2031", instance=instance, raise_on_error=False, asset_selection=selection
    )
    failures = [str(e.event_specific_data.error) for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert result.success, failures
    return result


def release_hashes(home, plans):
    """The released file's hash of each plan; for a plan withheld by a blocking check (plans that
    leave the continuous keys linkable, SPEC §4.1), the checks it failed and a hash of its stored
    protected variant (columns sorted)."""
    out = {}
    for plan in plans:
        decision = list_decisions(home / "releases", "testdata", "2031", plan)[-1]
        manifest = read_manifest(decision)
        if "withheld" in manifest:
            frame = pd.read_parquet(home / "storage" / "testdata" / f"protected_{plan}" / "2031.parquet")
            digest = hashlib.sha256(pd.util.hash_pandas_object(frame.sort_index(axis=1)).to_numpy().tobytes())
            out[plan] = (sorted(manifest["withheld"]), digest.hexdigest())
        else:
            out[plan] = hashlib.sha256((decision / PROTECTED).read_bytes()).hexdigest()
    return out


def test_every_plan_on_a_messy_wave_and_its_reordered_twin(tmp_path, instance, monkeypatch):
    specs = spec_folder(tmp_path, CHECKOUT)
    clean = pd.read_csv(CHECKOUT / "examples" / "data" / "testdata.csv")
    wave = messy_wave(clean)
    wave_file = tmp_path / "messy.csv"
    wave.to_csv(wave_file, index=False)
    plans = ["suppress_k3", "recode_suppress", "perturb", *EXTRA_PLANS]

    home = tmp_path / "home"
    run_wave(home, specs, instance, wave_file, monkeypatch)
    store = home / "storage" / "testdata"
    raw = pd.read_parquet(store / "raw_microdata" / "2031.parquet")
    assert raw[WITH_NONRESPONSE].isna().any().all()  # -999 became missing, nothing was dropped
    assert len(raw) == len(wave)

    contributions = pd.read_parquet(store / "risk_contributions" / "2031" / "per_record.parquet")
    assert len(contributions) == len(wave) and np.isfinite(contributions.select_dtypes("number").to_numpy()).all()
    shares = pd.read_parquet(store / "risk_contributions" / "2031" / "global.parquet")
    assert shares.select_dtypes("number").sum().to_numpy() == pytest.approx(1.0)  # efficiency (SPEC §6.6)
    residual_shares = pd.read_parquet(store / "residual_contributions" / "2031.parquet")
    assert set(plans) <= set(residual_shares.index.get_level_values(0))
    for plan in plans:
        protected = pd.read_parquet(store / f"protected_{plan}" / "2031.parquet")
        assert k_anonymity_violations(protected, KEYS, 3) == 0, plan
        # item non-response stays missing in every continuous key
        if len(protected) == len(raw):
            for column in CONTINUOUS:
                assert protected[column].isna().sum() >= raw[column].isna().sum(), (plan, column)
    loss = pd.read_parquet(store / "information_loss" / "2031" / "summary.parquet")
    assert set(plans) <= set(loss.index)
    assert loss.loc["noise_swap_round", "sse_tss"] > 0  # values moved: never a false 0
    residual = pd.read_parquet(store / "residual_risk" / "2031.parquet")
    assert (residual.loc[plans, "k3_violations"] == 0).all()
    first = release_hashes(home, plans)

    reordered_file = tmp_path / "reordered.csv"
    columns = list(wave.columns)
    wave[columns[::-1]].to_csv(reordered_file, index=False)
    with_other_order = tmp_path / "home_reordered"
    with instance_for_test() as second:
        run_wave(with_other_order, specs, second, reordered_file, monkeypatch)  # the release stage writes them
    assert release_hashes(with_other_order, plans) == first
