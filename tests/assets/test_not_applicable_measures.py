"""Issue 21: a wave on which some measure is undefined reaches a release decision. An SPSS wave with
a constant indicator key and a key observing one category of its two runs end to end through
``sdc run``; the measures left out are listed, with the reason, in the report (HTML and JSON) and
the information_loss metadata, and only the blocking checks decide the release."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml

from sdc_dagster.cli import EXIT_OK, EXIT_WITHHELD, main

pytestmark = pytest.mark.slow


def test_spss_wave_with_a_constant_indicator_key_reaches_a_decision(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("SDC_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    monkeypatch.delenv("SDC_SPECS", raising=False)
    rng = np.random.default_rng(21)
    n = 400
    wave = pd.DataFrame({
        "region": rng.integers(1, 4, n).astype(float), "sex": rng.integers(1, 3, n).astype(float),
        "country": np.ones(n),  # this wave observes one of the two countries
        "employed": np.ones(n),  # an indicator that is constant in the file
        "income": rng.lognormal(10, 1, n).round(2), "weight": rng.uniform(50, 150, n).round(1),
    })
    source = tmp_path / "wave2024.sav"
    pyreadstat.write_sav(wave, str(source), variable_value_labels={
        "sex": {1: "male", 2: "female"}, "country": {1: "A", 2: "B"}, "employed": {0: "no", 1: "yes"}})
    key = {"role": "categorical_key", "scale": "nominal"}
    spec = {
        "survey": "indicator", "title": "indicator", "source": {"path": str(source), "format": "spss"},
        "variables": {"region": key, "sex": key, "country": {**key, "categories": [1, 2]},
                      "employed": {**key, "categories": [0, 1]},
                      "income": {"role": "continuous_key", "scale": "continuous", "precision": 0.01},
                      "weight": {"role": "weight"}},
        "risk": {"k": 3, "max_global_risk": 0.05},
        "plans": {"suppress_k3": {"k": 3, "steps": [{"method": "local_suppression", "k": 3}]}},
    }
    (home / "specs").mkdir(parents=True)
    (home / "specs" / "indicator.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))

    status = main(["--home", str(home), "run", "indicator", "2024", "--file", str(source)])
    printed = capsys.readouterr()
    assert status in (EXIT_OK, EXIT_WITHHELD), printed.out + printed.err
    assert "Traceback" not in printed.out + printed.err

    report = json.loads((home / "reports" / "indicator" / "2024.json").read_text())
    notes = {(n["measure"], n["variant"]): n for n in report["measure_notes"]}
    association = notes["cramers_v_change_mean", "suppress_k3"]
    assert association["status"] == "not applicable"
    assert association["reason"].endswith(": country, employed")
    assert notes["l_diversity", "original"]["reason"] == "the spec names no sensitive variable present in the wave"
    assert np.isfinite(report["plans"]["suppress_k3"]["loss"]["cramers_v_change_mean"])  # region x sex
    html = (home / "reports" / "indicator" / "2024.html").read_text()
    assert 'id="not-applicable"' in html and "no association): country, employed" in html
    stored = home / "storage" / "indicator" / "information_loss" / "2024" / "measure_notes.parquet"
    assert pd.read_parquet(stored)["measure"].tolist() == ["cramers_v_change_mean"]
    assert report["plans"]["suppress_k3"]["releasable"] == (status == EXIT_OK)
