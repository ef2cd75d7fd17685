"""``protect.microaggregation`` against sdcMicro 5.8.1's ``microaggregation`` (every method and measure,
weighted group values, the single-variable ``mafast`` path).

Expected values: ``tests/data/sdcmicro/golden_more/m2_*`` written by sdcMicro 5.8.1 under R 4.2.2 (calls
in ``calls.R``, each call's text in ``m2_microaggregation_calls.json``). Inputs: sdcMicro's
CASCrefmicrodata and Tarragona (``tests/data/sdcmicro/``) and the weights of
``tests/data/sdcmicro/more/in_m2_weights_*.csv``. A column ``<name>__<variable>`` holds the values
the call ``<name>`` released for that variable, rows in input order.

The randomised methods are compared given the same random part: the CLARA clustering sdcMicro found
(``clusters=``) and the MCD estimates MASS ``cov.mcd`` drew (``m2_casc_mcd_estimates.json``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.protect import microaggregation
from sdc_dagster.protect.microaggregation import projection
from sdc_dagster.protect.microaggregation.projection import pca_order, pppca_order
from sdc_dagster.protect.microaggregation.ranking import single_order

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden_more"
CALLS = json.loads((GOLDEN / "m2_microaggregation_calls.json").read_text())
MCD = json.loads((GOLDEN / "m2_casc_mcd_estimates.json").read_text())


def _inputs() -> dict[str, pd.DataFrame]:
    casc = pd.read_csv(DATA / "CASCrefmicrodata.csv")
    tarr = pd.read_csv(DATA / "Tarragona.csv")
    casc["w"] = pd.read_csv(DATA / "more" / "in_m2_weights_casc.csv")["weight"].to_numpy()
    tarr["w"] = pd.read_csv(DATA / "more" / "in_m2_weights_tarr.csv")["weight"].to_numpy()
    return {"casc": casc, "tarr": tarr}


INPUTS = _inputs()
_FILES: dict[str, pd.DataFrame] = {}


def _golden(file: str) -> pd.DataFrame:
    if file not in _FILES:
        _FILES[file] = pd.read_csv(GOLDEN / file)
    return _FILES[file]


def _case(file: str, name: str) -> tuple[pd.DataFrame, list[str], dict, np.ndarray]:
    """The input, variables, keyword arguments of the project's call and sdcMicro's released values."""
    call = CALLS[file][name]
    golden = _golden(file)
    variables = [c.split("__", 1)[1] for c in golden.columns if c.startswith(name + "__")]
    kwargs = {"method": re.search(r'method="(\w+)"', call).group(1), "k": int(re.search(r"aggr=(\d+)", call).group(1))}
    measure = re.search(r'measure="(\w+)"', call)
    kwargs["measure"] = measure.group(1) if measure else "mean"
    trim = re.search(r"trim=([\d.]+)", call)
    if trim:
        kwargs["trim"] = float(trim.group(1))
    if "weights=w" in call:
        kwargs["weight"] = "w"
    data = INPUTS["casc" if file.startswith("m2_casc") else "tarr"]
    expected = golden[[f"{name}__{v}" for v in variables]].to_numpy()
    return data, variables, kwargs, expected


def _assert_close(got: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


DETERMINISTIC = [(f, n) for f in ("m2_casc_deterministic.csv", "m2_tarr_deterministic.csv", "m2_casc_mafast.csv")
                 for n in CALLS[f]]


@pytest.mark.parametrize(("file", "name"), DETERMINISTIC)
def test_deterministic_methods_and_measures_agree_with_sdcmicro(file, name):
    data, variables, kwargs, expected = _case(file, name)
    out = microaggregation(data, variables, **kwargs)
    _assert_close(out[variables].to_numpy(), expected)


def test_the_deterministic_calls_cover_every_sorting_method_and_measure():
    names = set(CALLS["m2_casc_deterministic.csv"])
    for method in ("simple", "single", "onedims", "pca", "pppca"):
        assert {f"{method}_mean", f"{method}_median", f"{method}_onestep", f"{method}_trim_k5"} <= names
    assert "mdav_mean" in names


@pytest.mark.parametrize("file", ["m2_casc_weighted.csv", "m2_tarr_weighted.csv"])
@pytest.mark.parametrize("measure", ["wmean", "wmedian"])
def test_weighted_group_values_in_data_order_agree_with_sdcmicro(file, measure):
    """Method "simple" groups records in data order: the weighted mean / median of each group of 3."""
    data, variables, kwargs, expected = _case(file, f"simple_{measure}")
    out = microaggregation(data, variables, **kwargs)
    _assert_close(out[variables].to_numpy(), expected)


SORTED_ORDER = {"single": lambda x: single_order(x), "pca": pca_order, "pppca": pppca_order}


@pytest.mark.parametrize("file", ["m2_casc_weighted.csv", "m2_tarr_weighted.csv"])
@pytest.mark.parametrize("measure", ["wmean", "wmedian"])
@pytest.mark.parametrize("method", ["single", "pca", "pppca"])
def test_sdcmicro_weights_sorted_records_by_position(file, measure, method):
    """sdcMicro 5.8.1 sorts the records but not the weights: a group made of the sorted records at
    positions i..i+k-1 is weighted with ``weights[i..i+k-1]``, the weights of the records at those
    positions of the *input* (``means()`` in R/microaggregation.R indexes ``weights`` with the group's
    positions). The project weights each record with its own weight; given the weights sdcMicro
    attaches (the i-th weight moved to the i-th record in sorted order), the two agree exactly, and
    with the records' own weights they differ."""
    data, variables, kwargs, expected = _case(file, f"{method}_{measure}")
    order = SORTED_ORDER[method](data[variables].to_numpy(dtype=float))
    shifted = data.copy()
    shifted.loc[shifted.index[order], "w"] = data["w"].to_numpy()
    _assert_close(microaggregation(shifted, variables, **kwargs)[variables].to_numpy(), expected)
    own = microaggregation(data, variables, **kwargs)[variables].to_numpy()
    assert not np.allclose(own, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("file", ["m2_casc_weighted.csv", "m2_tarr_weighted.csv"])
@pytest.mark.parametrize("measure", ["wmean", "wmedian"])
def test_sdcmicro_onedims_weights_each_sorted_column_by_position(file, measure):
    """Individual ranking sorts every variable on its own; sdcMicro weights the i-th smallest value of
    each variable with the i-th input weight (as above, one variable at a time)."""
    data, variables, kwargs, expected = _case(file, f"onedims_{measure}")
    for j, variable in enumerate(variables):
        order = np.argsort(data[variable].to_numpy(), kind="stable")
        shifted = data.copy()
        shifted.loc[shifted.index[order], "w"] = data["w"].to_numpy()
        got = microaggregation(shifted, [variable], **{**kwargs, "method": "onedims"})[variable].to_numpy()
        _assert_close(got, expected[:, j])


RANDOMISED = "m2_casc_randomised.csv"


def test_rmd_agrees_with_sdcmicro():
    """"rmd": sdcMicro's robust distances come from robustbase ``covMcd`` of the standardised data (its
    random subsets converge to the same MCD subset here); the grouping around them is deterministic."""
    data, variables, kwargs, expected = _case(RANDOMISED, "rmd_mean")
    out = microaggregation(data, variables, random_state=2026, **kwargs)
    _assert_close(out[variables].to_numpy(), expected)


@pytest.mark.parametrize("name", ["clustpca_mean", "clustpca_median", "clustpppca_mean", "influence_mean"])
def test_clustering_methods_agree_given_sdcmicros_clusters(name):
    data, variables, kwargs, expected = _case(RANDOMISED, name)
    data = data.assign(cluster=_golden(RANDOMISED)["clara_cluster"].to_numpy())
    out = microaggregation(data, variables, clusters="cluster", **kwargs)
    _assert_close(out[variables].to_numpy(), expected)


def _mcd_from_sdcmicro(monkeypatch, estimates: list[dict]) -> None:
    """MASS ``cov.mcd``'s estimates stand in for the project's MCD (matched by the number of records)."""
    by_size = {e["n"]: e for e in estimates}
    assert len(by_size) == len(estimates)

    def estimate(x, *, random_state):
        e = by_size[len(x)]
        p = x.shape[1]
        return np.asarray(e["center"], dtype=float), np.asarray(e["cov"], dtype=float).reshape(p, p, order="F")

    monkeypatch.setattr(projection, "cov_mcd", estimate)


def test_mcdpca_agrees_given_sdcmicros_mcd_estimate(monkeypatch):
    _mcd_from_sdcmicro(monkeypatch, [MCD["mcdpca"]])
    data, variables, kwargs, expected = _case(RANDOMISED, "mcdpca_mean")
    out = microaggregation(data, variables, **kwargs)
    _assert_close(out[variables].to_numpy(), expected)


def test_clustmcdpca_agrees_given_sdcmicros_clusters_and_mcd_estimates(monkeypatch):
    _mcd_from_sdcmicro(monkeypatch, MCD["clustmcdpca"])
    data, variables, kwargs, expected = _case(RANDOMISED, "clustmcdpca_mean")
    data = data.assign(cluster=_golden(RANDOMISED)["clara_cluster"].to_numpy())
    out = microaggregation(data, variables, clusters="cluster", **kwargs)
    _assert_close(out[variables].to_numpy(), expected)
