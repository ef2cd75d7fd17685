"""sdcMicro 5.8.1's ``dUtility``, ``IL_correl``, ``IL_variables`` and ``infoLoss`` against
``loss.d_utility``, ``loss.il_correl``, ``loss.il_variables`` and ``loss.swap_information_loss``.

Expected values: ``tests/data/sdcmicro/golden_more/m7_*`` (sdcMicro 5.8.1, R 4.2.2; calls in that
folder's ``calls.R`` and README). Inputs: ``tests/data/sdcmicro/more/in_m7_*`` and the pairs of m5
(CASCrefmicrodata / Tarragona with noise-added or microaggregated copies). The Mlodak measures are
also checked on small hand computations.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss import d_utility, il_correl, il_variables, swap_information_loss

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden_more"
UTILITY = json.loads((GOLDEN / "m7_dUtility_IL.json").read_text())
INFO = json.loads((GOLDEN / "m7_infoLoss.json").read_text())
VC = ["AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]
PAIRS = ("casc_noise50", "tarr_noise150", "casc_mdav3", "casc_pca3")


def _pair(name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    casc = pd.read_csv(DATA / "CASCrefmicrodata.csv")
    if name == "casc_noise50":
        protected = pd.read_csv(DATA / "more" / "in_m7_casc_1to5_addnoise50.csv").drop(columns="row")
        return casc[protected.columns], protected
    if name == "tarr_noise150":
        protected = pd.read_csv(DATA / "more" / "in_m7_tarragona_5to7_addnoise150.csv").drop(columns="row")
        return pd.read_csv(DATA / "Tarragona.csv")[protected.columns], protected
    method = name.removeprefix("casc_").removesuffix("3")
    released = pd.read_csv(GOLDEN / "m2_casc_deterministic.csv")
    return casc[VC], released[[f"{method}_mean__{v}" for v in VC]].set_axis(VC, axis=1)


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("method", ["IL1", "IL1s", "eigen"])
def test_d_utility_agrees_with_sdcmicro(pair, method):
    original, protected = _pair(pair)
    value = d_utility(original, protected, list(protected.columns), method=method)
    assert value == pytest.approx(UTILITY[pair][method], rel=1e-9)


@pytest.mark.parametrize("pair", PAIRS)
def test_il_correl_and_il_variables_agree_with_sdcmicro(pair):
    """All variables are continuous here (sdcMicro's call converts them to double)."""
    original, protected = _pair(pair)
    columns = list(protected.columns)
    assert il_correl(original, protected, columns) == pytest.approx(UTILITY[pair]["IL_correl"], rel=1e-9)
    assert il_variables(original, protected, columns).value == pytest.approx(UTILITY[pair]["IL_variables"], rel=1e-12)


@pytest.mark.parametrize(("name", "water"), [("mixed_water_nominal", "nominal"), ("mixed_water_ordered", "ordinal")])
def test_il_variables_on_mixed_scales_agrees_with_sdcmicro(name, water):
    """urbrur and roof factors (nominal), water a factor or an ordered factor, age and income doubles."""
    x = pd.read_csv(DATA / "more" / "in_m7_ilvariables_mixed_x.csv")
    xm = pd.read_csv(DATA / "more" / "in_m7_ilvariables_mixed_xm.csv")
    scales = {"urbrur": "nominal", "roof": "nominal", "water": water, "age": "continuous", "income": "continuous"}
    result = il_variables(x, xm, scales=scales)
    expected = UTILITY[name]
    assert result.value == pytest.approx(expected["IL_variables"], rel=1e-12)
    for column, loss in expected["indiv_distances"].items():
        assert result.by_variable[column] == pytest.approx(loss, rel=1e-12)


def test_il_variables_by_hand():
    """3 records. Continuous a: gaps 0, 1, missing in one file (M = max(|1 - 3|, |4 - 0|) = 4):
    (2/pi)(atan 0 + atan 1 + atan 4). Ordinal o (L = 3 categories lo < mid < hi): steps 2, 0, both
    missing: (2/2 + 0 + 0). Nominal c: equal, different, one missing: 0 + 1 + 1."""
    x = pd.DataFrame({"a": [0.0, 3.0, np.nan],
                      "o": pd.Categorical(["lo", "mid", None], categories=["lo", "mid", "hi"], ordered=True),
                      "c": ["u", "v", "w"]})
    xm = pd.DataFrame({"a": [0.0, 4.0, 1.0],
                       "o": pd.Categorical(["hi", "mid", None], categories=["lo", "mid", "hi"], ordered=True),
                       "c": ["u", "w", None]})
    result = il_variables(x, xm)
    a = 2 / math.pi * (math.atan(1.0) + math.atan(4.0)) / 3
    assert result.scales == {"a": "continuous", "o": "ordinal", "c": "nominal"}
    assert result.by_variable.to_dict() == pytest.approx({"a": a, "o": 1 / 3, "c": 2 / 3})
    assert result.value == pytest.approx((a + 1 / 3 + 2 / 3) / 3)


def test_il_correl_by_hand():
    """Two variables with correlation r have inverse-correlation diagonal (1/(1-r^2), 1/(1-r^2)):
    normalised, both files give (1, 1)/sqrt(2), so the loss is 0 whatever r; a third variable makes
    it move. Identical files give 0."""
    rng = np.random.default_rng(5)
    x = pd.DataFrame(rng.normal(size=(50, 2)), columns=["p", "q"])
    y = x.assign(q=x["q"] + rng.normal(size=50))
    assert il_correl(x, y) == pytest.approx(0.0, abs=1e-12)
    z = x.assign(r=rng.normal(size=50))
    assert il_correl(z, z) == 0.0
    assert il_correl(z, z.assign(q=z["p"] + 0.1 * z["q"])) > 0.1


def test_il_variables_rejects_unknown_scales_and_values():
    x = pd.DataFrame({"o": ["a", "b"]})
    with pytest.raises(SDCInputError, match="scales"):
        il_variables(x, x, scales={"zz": "nominal"})
    with pytest.raises(SDCInputError, match="scales"):
        il_variables(x, x, scales={"o": "interval"})
    ordered = pd.DataFrame({"o": pd.Categorical(["a", "b"], categories=["a", "b"], ordered=True)})
    with pytest.raises(SDCInputError, match="not among the ordered categories"):
        il_variables(ordered, pd.DataFrame({"o": ["a", "c"]}))


def _info_args(call: str) -> tuple[list[str], dict]:
    tables = [t.strip().strip('"') for t in re.search(r"table_vars=c\(([^)]*)\)", call).group(1).split(",")]
    kwargs = {}
    if "hid=" in call:
        kwargs["hid"] = "ori_hid"
    if "exclude_zeros=TRUE" in call:
        kwargs["exclude_zeros"] = True
    if "probs=" in call:
        kwargs["probs"] = [float(v) for v in re.search(r"probs=c\(([^)]*)\)", call).group(1).split(",")]
        kwargs["quantvals"] = [float(v.replace("Inf", "inf")) for v in re.search(r"quantvals=c\(([^)]*)\)", call).group(1).split(",")]
    return tables, kwargs


@pytest.fixture(scope="module")
def swapped_files() -> tuple[pd.DataFrame, pd.DataFrame]:
    return (pd.read_csv(DATA / "more" / "in_m7_infoloss_data.csv"),
            pd.read_csv(DATA / "more" / "in_m7_infoloss_data_swapped.csv"))


@pytest.mark.parametrize("name", [n for n in sorted(INFO) if "only_inner_cells" not in INFO[n]["call"]])
def test_swap_information_loss_agrees_with_sdcmicro(name, swapped_files):
    original, swapped = swapped_files
    entry = INFO[name]
    tables, kwargs = _info_args(entry["call"])
    result = swap_information_loss(original, swapped, tables, **kwargs)
    assert len(result.cells) == entry["n_cells"]
    assert (result.false_zero, result.false_nonzero) == (entry["false_zero"], entry["false_nonzero"])
    assert list(result.measures.index) == entry["measures_what"]
    for metric, values in entry["measures"].items():
        np.testing.assert_allclose(result.measures[metric].to_numpy(dtype=float), values, rtol=1e-12)
    np.testing.assert_array_equal(result.overview["noise"].to_numpy(dtype=float), entry["overview"]["noise"])
    np.testing.assert_array_equal(result.overview["cnt"].to_numpy(dtype=float), entry["overview"]["cnt"])
    for name_cd, table in entry["cumdistr"].items():
        got = result.cumdistr[name_cd.removeprefix("cumdistr")]
        assert list(got["cat"]) == table["cat"]
        np.testing.assert_allclose(got["pct"].to_numpy(dtype=float), table["pct"], rtol=1e-12)


def test_sdcmicros_only_inner_cells_gives_the_one_way_margins(swapped_files):
    """sdcMicro 5.8.1's ``only_inner_cells = TRUE`` sets ``comb_vars <- table_vars`` and counts each
    variable on its own: it returns the one-way margins (5 + 3 + 8 + 2 = 18 cells here), not the
    inner cells its documentation describes. The project returns the inner cells; its one-way
    margins (the first subsets of the full result) are sdcMicro's cells."""
    original, swapped = swapped_files
    entry = INFO["four_inner_nozeros"]
    tables, _ = _info_args(entry["call"])
    full = swap_information_loss(original, swapped, tables)
    one_way = full.cells[full.cells["subset"] < len(tables)]
    one_way = one_way[one_way["count_s"] != 0]  # exclude_zeros
    assert len(one_way) == entry["n_cells"] == 18
    assert int(((one_way["count_o"] != 0) & (one_way["count_s"] == 0)).sum()) == entry["false_zero"]
    noise = (one_way["count_o"] - one_way["count_s"]).value_counts().sort_index()
    np.testing.assert_array_equal(noise.index.to_numpy(dtype=float), entry["overview"]["noise"])
    np.testing.assert_array_equal(noise.to_numpy(dtype=float), entry["overview"]["cnt"])
    inner = swap_information_loss(original, swapped, tables, only_inner_cells=True, exclude_zeros=True)
    assert len(inner.cells) != entry["n_cells"]
