"""Targeted record swapping (SPEC §8.10, sdcMicro recordSwap semantics)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.synthetic.census import generate_census
from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import targeted_record_swap

ARGS = dict(
    hid="household_id",
    hierarchy=["region", "cell_id"],
    similar=[["household_size"]],
    risk_variables=["sex", "age_group"],
)


def small_population():
    """Region R1 (cell c1): five 65+-less singles and one single aged 65+; region R2 (cell c2): five singles."""
    rows = [("R1", "c1", 2)] * 5 + [("R1", "c1", 3)] + [("R2", "c2", 2)] * 5
    frame = pd.DataFrame(rows, columns=["region", "cell_id", "age_group"])
    frame["household_id"] = np.arange(len(frame)) + 100
    frame["household_size"] = 1
    frame["sex"] = 1
    return frame


def test_hand_example_risky_household_is_swapped_across_regions():
    data = small_population()
    before = data.copy()
    result = targeted_record_swap(data, **ARGS, swaprate=0.0, k_anonymity=3, random_state=1)
    pd.testing.assert_frame_equal(data, before)
    # the 65+ single is unique in its region (count 1 < 3): at risk at the top level, and the only
    # risky household; with swap rate 0 it is the only one sampled; its donor is a single in R2.
    assert result.n_risky_households == 1
    assert result.n_swapped_households == 2
    assert result.n_unmatched_households == 0
    out = result.data
    old = out[data["age_group"] == 3]
    assert old["region"].tolist() == ["R2"] and old["cell_id"].tolist() == ["c2"]
    donor = result.swapped_with.loc[105]
    assert 106 <= donor <= 110
    assert out.loc[data["household_id"] == donor, "region"].tolist() == ["R1"]
    assert result.swapped_with.loc[donor] == 105
    # persons per area are unchanged (equal-size households exchanged)
    assert out.groupby("region").size().to_dict() == {"R1": 6, "R2": 5}


def test_two_risky_households_of_different_regions_are_swapped_with_each_other():
    """Issue 37: sdcMicro's sampleDonor (recordSwap.cpp) takes any household not yet used and outside the
    sampled household's area as donor, a risky household of another area included. Two singles, each
    the only person of its age group in its region (count 1 < 3), have no other single to swap with:
    they are swapped with each other (before, both were left unswapped)."""
    data = pd.DataFrame({"region": ["R1", "R1", "R1", "R2", "R2", "R2"], "cell_id": ["c1", "c1", "c1", "c2", "c2", "c2"],
                         "household_id": [100, 101, 101, 102, 103, 103], "age_group": [3, 2, 2, 4, 2, 2], "sex": 1})
    data["household_size"] = data.groupby("household_id")["household_id"].transform("size")
    # region counts of (sex, age_group): R1 age 3: 1, age 2: 2; R2 age 4: 1, age 2: 2 -- every household at
    # risk at the top level. Same sizes across regions: 100 <-> 102 (singles), 101 <-> 103 (couples).
    result = targeted_record_swap(data, **ARGS, swaprate=0.0, k_anonymity=3, random_state=4)
    assert result.n_risky_households == 4
    assert result.swapped_with.to_dict() == {100: 102, 101: 103, 102: 100, 103: 101}
    assert result.n_swapped_households == 4 and result.n_unmatched_households == 0
    assert result.data["region"].tolist() == ["R2", "R2", "R2", "R1", "R1", "R1"]


def test_household_without_donor_at_the_top_level_can_be_a_donor_below():
    """sdcMicro keeps a household that found no donor (IDnotUsed) out of later samples, but not out of the
    donor pool (IDused stays 0): here couple 200 is at risk in region R1 (its age group 5 counts 2 < 3)
    and no other region has a couple; at the cell level couple 201 (age group 2: 4 in R1, 2 in its cell
    c2) must leave c2, and its only donor of its size is 200 in c1. Singles 202 and 203 (age group 2,
    2 in cell c1) find singles of R2 (age group 2, 3 in R2: not at risk)."""
    rows = [("R1", "c1", 200, 5), ("R1", "c1", 200, 5), ("R1", "c2", 201, 2), ("R1", "c2", 201, 2),
            ("R1", "c1", 202, 2), ("R1", "c1", 203, 2),
            ("R2", "c3", 210, 2), ("R2", "c3", 211, 2), ("R2", "c3", 212, 2)]
    data = pd.DataFrame(rows, columns=["region", "cell_id", "household_id", "age_group"]).assign(sex=1)
    data["household_size"] = data.groupby("household_id")["household_id"].transform("size")
    result = targeted_record_swap(data, **ARGS, swaprate=0.0, k_anonymity=3, random_state=2)
    swapped = result.swapped_with
    assert result.n_risky_households == 4  # 200 (region level), 201, 202, 203 (cell level)
    assert swapped.loc[201] == 200 and swapped.loc[200] == 201
    assert {swapped.loc[202], swapped.loc[203]} <= {210, 211, 212} and swapped.loc[202] != swapped.loc[203]
    assert result.n_swapped_households == 6 and result.n_unmatched_households == 0
    assert result.data.loc[data["household_id"] == 200, "cell_id"].tolist() == ["c2", "c2"]


def test_household_whose_rank_partners_fall_in_its_own_area_still_finds_the_donor_outside():
    """Issue 37: the rank pairing's rounds can keep giving a household donors of its own area (here, with one
    round, the first donor in order is in R1 like the household); sdcMicro's sampleDonor takes the donor of
    highest priority outside the area. Household 100 (R1) is the only one at risk (user risk 0.9 at the top
    level); R1 has 49 other singles, R2 one: 100 must be swapped with the single of R2 (150)."""
    data = pd.DataFrame({"region": ["R1"] * 50 + ["R2"], "cell_id": ["c1"] * 50 + ["c2"],
                         "household_id": np.arange(100, 151), "household_size": 1})
    risk = np.zeros((51, 2))
    risk[0, 0] = 0.9
    result = targeted_record_swap(data, **USER_RISK_ARGS, risk=risk, risk_threshold=0.5, swaprate=0.0,
                                  matching_rounds=1, random_state=0)
    assert result.swapped_with.loc[100] == 150 and result.swapped_with.loc[150] == 100
    assert result.n_swapped_households == 2 and result.n_unmatched_households == 0


def test_every_household_at_risk_is_swapped_as_sdcmicro_tests(census):
    """sdcMicro's test_recordSwap_outputs.R ("test risk parameter - number of hd swaps"): with swap rate 0 and a
    risk of 99 (threshold 0.9) in 5 % of the (record, level) cells, every household at risk is swapped. Before
    issue 37 a few stayed unswapped here (their rank partners fell in their own region)."""
    n_households = census["household_id"].nunique()
    for seed in range(3):
        rng = np.random.default_rng(seed)
        risk = np.full((len(census), 2), 0.0001)
        risk.flat[rng.choice(risk.size, size=int(0.05 * n_households), replace=False)] = 99
        result = targeted_record_swap(census, hid="household_id", hierarchy=["region", "cell_id"],
                                      similar=[["household_size"]], risk=risk, risk_threshold=0.9, swaprate=0.0,
                                      random_state=seed)
        at_risk = pd.Series(risk.max(axis=1) > 0.9).groupby(census["household_id"].to_numpy()).any()
        swapped = result.swapped_with != result.swapped_with.index
        assert result.n_unmatched_households == 0
        assert swapped[at_risk[at_risk].index].all()


def test_k_anonymity_zero_and_swaprate_only():
    data = generate_census(20_000, random_state=3, region_km=5)
    data = data[data["resident"]].reset_index(drop=True)
    n_households = data["household_id"].nunique()
    result = targeted_record_swap(data, **ARGS, swaprate=0.1, k_anonymity=0, random_state=2)
    assert result.n_risky_households == 0
    n_swaps = n_households * 0.1 / 2
    assert result.n_swapped_households in {2 * int(np.floor(n_swaps)), 2 * int(np.ceil(n_swaps))}


@pytest.fixture(scope="module")
def census():
    data = generate_census(40_000, random_state=11, region_km=5)
    return data[data["resident"]].reset_index(drop=True)


def check_swap_invariants(original, result):
    out = result.data
    assert out.index.equals(original.index)
    # only the geography changed
    others = [c for c in original.columns if c not in ("region", "cell_id")]
    pd.testing.assert_frame_equal(out[others], original[others])
    # whole households move: still one cell per household
    assert (out.groupby("household_id", observed=True)["cell_id"].nunique() == 1).all()
    # persons and households per area at every level are kept (donors match household size)
    for level in (["region"], ["region", "cell_id"]):
        for what in ("size", "nunique"):
            a = original.groupby(level, observed=True)["household_id"].agg(what)
            b = out.groupby(level, observed=True)["household_id"].agg(what)
            pd.testing.assert_series_equal(a, b.reindex(a.index))
    # pairs are symmetric and never within the same cell
    partner = result.swapped_with
    moved = partner[partner.index != partner.to_numpy()]
    assert (partner.loc[moved.to_numpy()].to_numpy() == moved.index.to_numpy()).all()
    first = original.groupby("household_id", observed=True)[["region", "cell_id"]].first()
    first = first.astype(str)
    assert (first.loc[moved.index, "cell_id"].to_numpy() != first.loc[moved.to_numpy(), "cell_id"].to_numpy()).all()
    assert len(moved) == result.n_swapped_households


def test_census_swap_invariants_and_reproducibility(census):
    result = targeted_record_swap(census, **ARGS, swaprate=0.05, k_anonymity=3, random_state=5)
    check_swap_invariants(census, result)
    assert result.n_risky_households > 0
    assert result.n_swapped_households >= 0.05 * census["household_id"].nunique() - 2
    again = targeted_record_swap(census, **ARGS, swaprate=0.05, k_anonymity=3, random_state=5)
    pd.testing.assert_frame_equal(result.data, again.data)


def test_households_at_risk_in_a_region_leave_the_region(census):
    risk = ["sex", "age_group", "household_size"]
    result = targeted_record_swap(
        census, **{**ARGS, "risk_variables": risk}, swaprate=0.0, k_anonymity=3, random_state=8
    )
    counts = census.groupby(["region", *risk], observed=True)["person_id"].transform("size")
    risky_in_region = census.loc[counts < 3, "household_id"].unique()
    partner = result.swapped_with.loc[risky_in_region]
    swapped = partner[partner.index != partner.to_numpy()]
    assert len(swapped) > 0
    region = census.groupby("household_id", observed=True)["region"].first().astype(str)
    assert (region.loc[swapped.index].to_numpy() != region.loc[swapped.to_numpy()].to_numpy()).all()


def test_bad_input_names_the_column(census):
    broken = census.copy()
    broken.loc[broken.index[:2], "household_id"] = broken["household_id"].iloc[5000]
    with pytest.raises(SDCInputError, match="region|cell_id"):
        targeted_record_swap(broken, **ARGS)
    with pytest.raises(SDCInputError, match="swaprate"):
        targeted_record_swap(census, **ARGS, swaprate=1.5)
    with pytest.raises(SDCInputError, match="nuts9"):
        targeted_record_swap(census, **{**ARGS, "hierarchy": ["nuts9"]})


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), rate=st.floats(0.0, 0.3), k=st.integers(0, 4))
def test_swap_invariants_property(census, seed, rate, k):
    sample = census[census["region"].isin(census["region"].cat.categories[:4])].reset_index(drop=True)
    before = sample.copy()
    result = targeted_record_swap(sample, **ARGS, swaprate=rate, k_anonymity=k, random_state=seed)
    check_swap_invariants(sample, result)
    # The input is not modified, though the output shares its columns other than the geography.
    pd.testing.assert_frame_equal(sample, before)
    others = [c for c in sample.columns if c not in ARGS["hierarchy"]]
    pd.testing.assert_frame_equal(result.data[others], before[others])


# --- a risk supplied by the user (sdcMicro recordSwap risk / risk_threshold) ---------------------------

USER_RISK_ARGS = {key: value for key, value in ARGS.items() if key != "risk_variables"}


def test_user_risk_hand_example_replaces_the_k_anonymity_rule():
    data = small_population()
    # the k-anonymity rule would treat the 65+ single (row 5); the user's risk names row 1 instead,
    # at the top level (0.9 > 0.5), so it must leave region R1
    risk = pd.DataFrame({"region_risk": 0.0, "cell_risk": 0.0}, index=data.index)
    risk.loc[1, "region_risk"] = 0.9
    before = data.copy()
    result = targeted_record_swap(data, **USER_RISK_ARGS, risk=risk, risk_threshold=0.5, swaprate=0.0, random_state=1)
    pd.testing.assert_frame_equal(data, before)
    assert result.n_risky_households == 1 and result.n_swapped_households == 2
    assert result.swapped_with.loc[101] != 101 and result.swapped_with.loc[105] == 105
    assert result.data.loc[1, "region"] == "R2"
    # the same risk as columns of the data, and as an array
    with_columns = data.assign(region_risk=risk["region_risk"], cell_risk=risk["cell_risk"])
    by_name = targeted_record_swap(
        with_columns, **USER_RISK_ARGS, risk=["region_risk", "cell_risk"], risk_threshold=0.5, swaprate=0.0, random_state=1
    )
    pd.testing.assert_frame_equal(by_name.data.drop(columns=["region_risk", "cell_risk"]), result.data)
    by_array = targeted_record_swap(data, **USER_RISK_ARGS, risk=risk.to_numpy(), risk_threshold=0.5, swaprate=0.0, random_state=1)
    pd.testing.assert_frame_equal(by_array.data, result.data)


def test_user_risk_threshold_is_strict_and_defaults_to_one_over_k():
    data = small_population()
    risk = np.zeros((len(data), 2))
    risk[1, 1] = 0.5
    # 0.5 is not above 0.5: nobody at risk, nothing swapped with swap rate 0
    assert targeted_record_swap(data, **USER_RISK_ARGS, risk=risk, risk_threshold=0.5, swaprate=0.0, random_state=1).n_swapped_households == 0
    # default threshold 1/k: 0.5 > 1/3 at the lowest level, so household 101 leaves its cell
    result = targeted_record_swap(data, **USER_RISK_ARGS, risk=risk, k_anonymity=3, swaprate=0.0, random_state=1)
    assert result.n_risky_households == 1 and result.swapped_with.loc[101] != 101
    # k_anonymity 0 and no threshold: nobody at risk
    assert targeted_record_swap(data, **USER_RISK_ARGS, risk=risk, k_anonymity=0, swaprate=0.0, random_state=1).n_risky_households == 0


def test_user_risk_is_the_household_maximum():
    data = small_population()
    data.loc[[0, 1], "household_id"] = 100  # a household of two persons in R1
    data.loc[[6, 7], "household_id"] = 106  # and one in R2, its only possible donor
    data["household_size"] = data.groupby("household_id")["household_id"].transform("size")
    risk = np.zeros((len(data), 2))
    risk[1, 0] = 0.9  # only the second member carries the risk
    result = targeted_record_swap(data, **USER_RISK_ARGS, risk=risk, risk_threshold=0.5, swaprate=0.0, random_state=3)
    assert result.swapped_with.loc[100] == 106
    assert result.data.loc[[0, 1], "region"].tolist() == ["R2", "R2"]


def test_user_risk_equal_to_the_k_anonymity_risk_gives_the_same_swaps(census):
    """sdcMicro setRisk: 1/count of the persons sharing the risk variables within the area at each
    level (counted here with pandas); with threshold 1/k it is the k-anonymity rule count < k."""
    sample = census[census["region"].isin(census["region"].cat.categories[:6])].reset_index(drop=True)
    levels = (["region"], ["region", "cell_id"])
    risk = np.column_stack([
        1.0 / sample.groupby([*ARGS["risk_variables"], *level], observed=True)["person_id"].transform("size").to_numpy()
        for level in levels
    ])
    by_rule = targeted_record_swap(sample, **ARGS, swaprate=0.05, k_anonymity=3, random_state=21)
    by_risk = targeted_record_swap(sample, **USER_RISK_ARGS, risk=risk, swaprate=0.05, k_anonymity=3, random_state=21)
    assert by_risk.n_risky_households == by_rule.n_risky_households > 0
    pd.testing.assert_frame_equal(by_risk.data, by_rule.data)
    check_swap_invariants(sample, by_risk)


def test_user_risk_households_at_risk_leave_their_region_and_reruns_are_identical(census):
    sample = census[census["region"].isin(census["region"].cat.categories[:6])].reset_index(drop=True)
    rng = np.random.default_rng(4)
    household_risk = pd.Series(rng.random(sample["household_id"].nunique()), index=sample["household_id"].unique())
    risk = np.column_stack([sample["household_id"].map(household_risk).to_numpy(), np.zeros(len(sample))])
    result = targeted_record_swap(sample, **USER_RISK_ARGS, risk=risk, risk_threshold=0.98, swaprate=0.02, random_state=9)
    check_swap_invariants(sample, result)
    risky = household_risk.index[household_risk > 0.98]
    assert result.n_risky_households == len(risky) > 0
    partner = result.swapped_with.loc[risky]
    swapped = partner[partner.index != partner.to_numpy()]
    assert len(swapped) >= 0.9 * len(risky)
    region = sample.groupby("household_id", observed=True)["region"].first().astype(str)
    assert (region.loc[swapped.index].to_numpy() != region.loc[swapped.to_numpy()].to_numpy()).all()
    again = targeted_record_swap(sample, **USER_RISK_ARGS, risk=risk, risk_threshold=0.98, swaprate=0.02, random_state=9)
    pd.testing.assert_frame_equal(result.data, again.data)
    pd.testing.assert_series_equal(result.swapped_with, again.swapped_with)


def test_user_risk_bad_input():
    data = small_population()
    with pytest.raises(SDCInputError, match="risk_variables: name the variables"):
        targeted_record_swap(data, **USER_RISK_ARGS)
    with pytest.raises(SDCInputError, match=r"risk: needs one column per hierarchy level \(2\), got 1"):
        targeted_record_swap(data, **USER_RISK_ARGS, risk=np.zeros(len(data)))
    with pytest.raises(SDCInputError, match=r"risk: needs one row per record \(11\), got 3 rows"):
        targeted_record_swap(data, **USER_RISK_ARGS, risk=np.zeros((3, 2)))
    with pytest.raises(SDCInputError, match="risk 'b': must hold finite values >= 0"):
        targeted_record_swap(data, **USER_RISK_ARGS, risk=pd.DataFrame({"a": 0.0, "b": -1.0}, index=data.index))
    with pytest.raises(SDCInputError, match="risk column 'nope'"):
        targeted_record_swap(data, **USER_RISK_ARGS, risk=["nope", "sex"])
    with pytest.raises(SDCInputError, match="risk_threshold: applies to a given risk only"):
        targeted_record_swap(data, **ARGS, risk_threshold=0.5)
