"""benchmarks/wave.py's sdcMicro column (issue 38's "10x sdcMicro" target): without R it says that
it needs R; with a result it prints the ratio against the 10x target; the R script's input is the
spec's roles and each variant's steps as the run's manifest records them. No test runs R."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wave():
    spec = importlib.util.spec_from_file_location("wave_benchmark", CHECKOUT / "benchmarks" / "wave.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_rscript_the_column_says_it_needs_r(wave, monkeypatch, tmp_path):
    loader = tmp_path / "load_wave.R"
    loader.write_text("# a loader\n")
    monkeypatch.setenv("SDCMICRO_LOADER", str(loader))
    monkeypatch.setenv("PATH", str(tmp_path))  # no Rscript on the path
    assert wave.sdcmicro_loader() is None
    lines = wave.sdcmicro_lines(None, 10.0, 20.0)
    assert len(lines) == 1 and "not run, it needs R with sdcMicro" in lines[0]
    assert wave.agreement_lines(None, {}, {}) == []
    assert wave.sdcmicro_lines("skipped", 10.0, 20.0) == [
        "  sdcMicro doing the same plans (issue 38's 10x column): not run (--no-sdcmicro)"]
    assert wave.agreement_lines("skipped", {}, {}) == []


def test_without_the_loader_the_column_says_it_needs_r(wave, monkeypatch, tmp_path):
    (tmp_path / "Rscript").write_text("#!/bin/sh\n")
    (tmp_path / "Rscript").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("SDCMICRO_LOADER", str(tmp_path / "absent.R"))
    assert wave.sdcmicro_loader() is None
    loader = tmp_path / "load_wave.R"
    loader.write_text("# a loader\n")
    monkeypatch.setenv("SDCMICRO_LOADER", str(loader))
    assert wave.sdcmicro_loader() == loader


def test_the_ratio_is_sdcmicro_cpu_over_ours_against_10x(wave):
    result = {"total_cpu": 92.0, "total_elapsed": 95.0, "process_cpu": 97.0, "process_wall": 100.0,
              "timings": [{"plan": "suppress_k3", "step": "step 0: local_suppression", "elapsed": 30.0, "cpu": 29.0},
                          {"plan": "perturb", "step": "step 0: pram", "elapsed": 1.0, "cpu": 1.0}]}
    lines = wave.sdcmicro_lines(result, 15.0, 19.0)
    # 92 / 15 = 6.13..., 95 / 19 = 5.0
    assert "sdcMicro / ours = 6.1x CPU, 5.0x wall (target >= 10x: NOT met)" in lines[0]
    assert "local_suppression" in lines[1] and "pram" in lines[2]  # slowest step first
    side_by_side = wave.sdcmicro_lines(result, 15.0, 19.0, {"demo__protected_suppress_k3": 1.5, "demo__release": 2.0})
    assert side_by_side[1] == "    suppress_k3: its steps 1.50 s ours (protected_suppress_k3) | 30.00 s sdcMicro (wall)"
    assert "local_suppression" in side_by_side[2]  # no seconds of ours for perturb: no side-by-side line
    assert "(target >= 10x: met)" in wave.sdcmicro_lines(result, 9.2, 9.5)[0]


def _manifest(steps, risk):
    return {"steps": steps, "risk": risk}


def test_the_r_input_holds_the_roles_and_each_variants_recorded_steps(wave, tmp_path):
    wave_folder = tmp_path / "releases" / "demo" / "2024"
    suppression = {"method": "local_suppression", "parameters": {"k": 3, "importance": None},
                   "random_state": None, "values_suppressed": {"relat": 4, "water": 1}}
    pram = {"method": "pram", "parameters": {"variable": "water", "retention": 0.9},
            "random_state": 4207457573, "values_suppressed": {}}
    (wave_folder / "searched" / "run1").mkdir(parents=True)
    (wave_folder / "searched" / "run1" / "manifest.json").write_text(json.dumps(_manifest(
        [suppression], {"global_risk": 0.0005, "k_violations": 0, "linkage_risk": 0.17})))
    (wave_folder / "perturb" / "run1").mkdir(parents=True)
    (wave_folder / "perturb" / "run1" / "withheld.json").write_text(json.dumps(_manifest(
        [pram, suppression], {"global_risk": 0.0006, "k_violations": 0, "linkage_risk": 0.93})))
    (wave_folder / "release.json").write_text("{}")

    plans = wave.variant_steps(tmp_path, "demo", "2024")
    assert plans == {"perturb": [{"method": "pram", "variable": "water", "retention": 0.9, "random_state": 4207457573,
                                  "values_suppressed": {}},
                                 {"method": "local_suppression", "k": 3, "importance": None, "random_state": None,
                                  "values_suppressed": {"relat": 4, "water": 1}}],
                     "searched": [{"method": "local_suppression", "k": 3, "importance": None, "random_state": None,
                                   "values_suppressed": {"relat": 4, "water": 1}}]}
    assert wave.variant_figures(tmp_path, "demo", "2024")["perturb"]["linkage_risk"] == 0.93

    spec = {"variables": {"a": {"role": "categorical_key"}, "b": {"role": "categorical_key"},
                          "x": {"role": "continuous_key"}, "w": {"role": "weight"}, "h": {"role": "household_id"},
                          "o": {"role": "other"}},
            "risk": {"k": 3, "max_global_risk": 0.01}}
    config = wave.sdcmicro_config(spec, plans, our_variants={"searched": "ours_searched.csv"})
    assert (config["keys"], config["numeric"], config["weight"], config["household"]) == (["a", "b"], ["x"], "w", "h")
    assert (config["k"], config["max_global_risk"], config["linkage_max_records"]) == (3, 0.01, 0)
    assert config["our_variants"] == {"searched": "ours_searched.csv"}
    # R's set.seed takes a 32-bit integer: 4207457573 mod (2^31 - 1) = 2059973926
    assert config["seeds"] == {"perturb": 2059973926, "searched": None}

    lines = wave.agreement_lines({"figures": {"searched": {"suppressions": {"relat": 5, "water": 0}, "global_risk": 0.0005,
                                                           "k_violations": 0, "dRisk": 0.01}}},
                                 {"searched": plans["searched"]}, wave.variant_figures(tmp_path, "demo", "2024"))
    assert "searched: values suppressed 5 {'relat': 4, 'water': 1} | 5 {'relat': 5}" in lines[1]
    assert "global risk 0.000500 | 0.000500; records below k 0 | 0" in lines[1]
    on_ours = {"global_risk": 0.0005, "household_risk": 0.002, "k_violations": 0, "dRisk": 0.02, "same_keys": 7,
               "numeric_difference": 0.00004}
    lines = wave.agreement_lines({"figures": {"searched": {"suppressions": {}, "on_ours": on_ours}}},
                                 {"searched": plans["searched"]}, wave.variant_figures(tmp_path, "demo", "2024"))
    assert lines[2] == ("      sdcMicro's measure_risk on our searched variant: global risk 0.000500 | 0.000500; "
                        "records below k 0 | 0; sdcMicro's variant against ours: 7 of the categorical keys identical, "
                        "continuous keys within 4.0e-05 (relative)")
