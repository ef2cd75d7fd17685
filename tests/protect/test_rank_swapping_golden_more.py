"""``protect.rank_swap`` against sdcMicro 5.8.1's ``rankSwap``: with ``p=0`` (``P = 0``) no value is
swapped and only the top and bottom coding act, with sdcMicro's single-precision record counts; with
P > 0 (or R0, K0) the window agrees with the P sdcMicro computed, and given the partners sdcMicro drew
(its random part, ``m10_rankSwap_pairs.csv``) the released values are sdcMicro's.

Expected values: ``tests/data/sdcmicro/golden_more/m8_*`` (sdcMicro 5.8.1, R 4.2.2; calls in that
folder's ``calls.R``, README and ``m8_rankSwap_calls.json``). Input: CASCrefmicrodata's AGI, EMCONTRB,
FEDTAX, PTOTVAL, STATETAX, and the same with missing values (AGI in every 7th record, FEDTAX in every
11th from the 3rd). P > 0: ``m10_*``, sdcMicro's own generator seeded as in each call; sdcMicro's P is a
fraction in its C++ (sdcMicro issue 366), the project's ``p`` a percentage: ``P = 0.05`` is ``p=5``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.protect import rank_swap, rank_swapping
from sdc_dagster.protect.rank_swapping import rank_swap_window

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro"
GOLDEN = DATA / "golden_more"
CALLS = json.loads((GOLDEN / "m8_rankSwap_calls.json").read_text())["calls"]
VC = ["AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]


def _input(name: str) -> pd.DataFrame:
    data = pd.read_csv(DATA / "CASCrefmicrodata.csv")[VC].astype(float)
    if name.startswith("cascna"):
        data.loc[np.arange(6, len(data), 7), "AGI"] = np.nan
        data.loc[np.arange(2, len(data), 11), "FEDTAX"] = np.nan
    return data


@pytest.mark.parametrize("name", sorted(CALLS))
def test_rank_swap_with_p_zero_agrees_with_sdcmicro(name):
    top = float(name.split("_t")[1].split("_")[0])
    bottom = float(name.split("_b")[1])
    expected = pd.read_csv(GOLDEN / "m8_rankSwap_P0.csv")[[f"{name}__{v}" for v in VC]].to_numpy()
    out = rank_swap(_input(name), VC, p=0, top_percent=top, bottom_percent=bottom, random_state=1)
    np.testing.assert_allclose(out[VC].to_numpy(), expected, rtol=1e-12, atol=0)


def test_five_percent_of_1080_codes_53_records_as_sdcmicro():
    """5 * 0.01f * 1080 = 53.99999... in single precision: 53 records are top coded, not 54."""
    expected = pd.read_csv(GOLDEN / "m8_rankSwap_P0.csv")["casc_t5_b5__AGI"].to_numpy()
    original = _input("casc")["AGI"].to_numpy()
    top_value = expected.max()
    assert int((expected == top_value).sum()) == 53
    assert top_value == pytest.approx(np.sort(original)[-53:].mean(), rel=1e-12)


SWAP_CALLS = json.loads((GOLDEN / "m10_rankSwap_calls.json").read_text())["calls"]
SWAPPED = pd.read_csv(GOLDEN / "m10_rankSwap.csv")
PAIRS = pd.read_csv(GOLDEN / "m10_rankSwap_pairs.csv")


def _swap_arguments(name: str) -> dict:
    """The project's arguments for the m10 call ``name`` (sdcMicro's P fraction as a percentage)."""
    call = SWAP_CALLS[name]["call"]
    kwargs = {"top_percent": float(call.split("TopPercent=")[1].split(",")[0]),
              "bottom_percent": float(call.split("BottomPercent=")[1].split(",")[0])}
    for ours, theirs, scale in (("p", "P", 100.0), ("r0", "R0", 1.0), ("k0", "K0", 1.0)):
        if f" {theirs}=" in call:
            kwargs[ours] = float(call.split(f" {theirs}=")[1].split(",")[0]) * scale
    if not any(key in kwargs for key in ("p", "r0", "k0")):
        kwargs["r0"] = 0.95  # sdcMicro's default
    return kwargs


def _ranked(values: np.ndarray, n_kept: int) -> np.ndarray:
    """Records (0-based) of the values neither missing nor coded, ascending, ties in record order;
    as many coded at each end (every m10 call codes the same share at the top and at the bottom)."""
    present = np.flatnonzero(~np.isnan(values))
    order = present[np.argsort(values[present], kind="stable")]
    coded = len(order) - n_kept
    assert coded % 2 == 0
    return order[coded // 2 : len(order) - coded // 2]


@pytest.mark.parametrize("name", sorted(SWAP_CALLS))
def test_rank_swap_window_agrees_with_the_p_sdcmicro_computed(name):
    """w = floor(N' · P) for the N' values not coded, P as sdcMicro computed it (given, or from R0:
    sqrt(2 var (1 - R0)) / delta, K0: sqrt(8/3) K0 |mean| / delta, in single precision). sdcMicro's
    candidates for rank j are j + 1 .. (int)(j + N' P) - 1, so its partners lie at most w - 1 ranks
    apart (the project's window allows w: one rank more, a documented difference); every pair it drew
    is one the project's window allows."""
    kwargs = _swap_arguments(name)
    data = _input(name)
    for j, column in enumerate(VC):
        n_kept = SWAP_CALLS[name]["NbNotSwapped"][j]
        ranked = _ranked(data[column].to_numpy(), n_kept)
        values = data[column].to_numpy()
        observed = np.sort(values[~np.isnan(values)])
        coded = (len(observed) - n_kept) // 2
        # delta's ends: the largest bottom-coded and the smallest top-coded value (none without coding)
        low_high = {"low": observed[coded - 1], "high": observed[-coded]} if coded else {}
        window = rank_swap_window(values[ranked], p=kwargs.get("p"), r0=kwargs.get("r0"), k0=kwargs.get("k0"),
                                  **low_high)
        sdcmicro_p = np.float32(SWAP_CALLS[name]["P"][j])
        assert window == int(np.floor(np.float32(n_kept) * sdcmicro_p)), column
        position = np.empty(len(values), dtype=int)
        position[ranked] = np.arange(n_kept)
        partner = PAIRS[f"{name}__partner_{column}"].to_numpy()
        swapped = ranked[~np.isnan(partner[ranked])]
        distance = np.abs(position[swapped] - position[partner[swapped].astype(int) - 1])
        assert distance.max() <= window - 1, column


@pytest.mark.parametrize("name", sorted(SWAP_CALLS))
def test_rank_swap_agrees_with_sdcmicro_given_its_partners(name, monkeypatch):
    """sdcMicro's drawn partners, placed on the project's ranks (ascending, ties in record order, the
    coded records left out), stand in for the project's pairing: the values released are sdcMicro's,
    coded means and missing values included."""
    data = _input(name)
    columns = iter(enumerate(VC))

    def sdcmicros_partners(n, window, rng):
        j, column = next(columns)
        ranked = _ranked(data[column].to_numpy(), SWAP_CALLS[name]["NbNotSwapped"][j])
        assert n == len(ranked)
        position = {record: i for i, record in enumerate(ranked)}
        partner = PAIRS[f"{name}__partner_{column}"].to_numpy()[ranked]
        return np.array([i if np.isnan(k) else position[int(k) - 1] for i, k in enumerate(partner)])

    monkeypatch.setattr(rank_swapping, "rank_swap_permutation", sdcmicros_partners)
    out = rank_swap(data, VC, random_state=1, **_swap_arguments(name))
    expected = SWAPPED[[f"{name}__{v}" for v in VC]].to_numpy()
    np.testing.assert_array_equal(np.isnan(out[VC].to_numpy()), np.isnan(expected))
    np.testing.assert_allclose(out[VC].to_numpy(), expected, rtol=1e-12, atol=0)
