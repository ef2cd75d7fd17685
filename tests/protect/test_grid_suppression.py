"""Grid primary/secondary suppression (SPEC §11.2), checked on cells worked out by hand from the rules."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import grid_suppression

NA = pd.NA
CATS = ["sex_1", "sex_2", "age_1", "age_2", "age_3"]


def grid(rows, index=None):
    """rows: (sex_1, sex_2, age_1, age_2, age_3); total = sex_1 + sex_2."""
    frame = pd.DataFrame(rows, columns=CATS, index=index)
    frame.insert(0, "total", frame["sex_1"] + frame["sex_2"])
    return frame


def hidden(result):
    return result[CATS].isna().to_numpy()


# Cells and the suppression pattern the rules of SPEC §11.2 give with k = 3, tie_only reading.
# (sex_1, sex_2, age_1, age_2, age_3) -> hidden mask under strategy "fixed".
HAND_CELLS = {
    # nothing 1..2 anywhere; zeros are not primarily suppressed (homogeneous cell, OPEN item 4)
    "A": ((4, 6, 0, 10, 0), (0, 0, 0, 0, 0)),
    # sex 2 unsafe -> other sex hidden; age 1 unsafe, candidates 3 and 3 tie -> fixed: successor 2
    "B": ((2, 5, 1, 3, 3), (1, 1, 1, 1, 0)),
    # age 1 and 3 both unsafe: two hidden already, nothing more
    "C": ((4, 4, 2, 4, 2), (0, 0, 1, 0, 1)),
    # age 1 unsafe; candidates 2 (3) and 3 (4): the smaller, group 2, is hidden
    "D": ((4, 5, 2, 3, 4), (0, 0, 1, 1, 0)),
    # age 2 unsafe; candidates 3 (4) and 1 (3): the smaller, group 1 (fixed would say 3)
    "E": ((4, 5, 3, 2, 4), (0, 0, 1, 1, 0)),
    # one resident: sex (1, 0) -> the zero sex is hidden too; age (0, 0, 1): zero tie -> 3's successor 1
    "F": ((1, 0, 0, 0, 1), (1, 1, 1, 0, 1)),
    # two residents: both sexes unsafe; age (0, 2, 0): zero tie -> 2's successor 3
    "G": ((1, 1, 0, 2, 0), (1, 1, 0, 1, 1)),
    # age 3 unsafe with a zero next to it: candidates 1 (0) and 2 (5): the zero (smaller) is hidden
    "H": ((3, 4, 0, 5, 2), (0, 0, 1, 0, 1)),
}


def test_hand_checked_cells_fixed_strategy():
    counts = grid([c for c, _ in HAND_CELLS.values()], index=list(HAND_CELLS))
    result = grid_suppression(counts, k=3, strategy="fixed")
    expected = np.array([m for _, m in HAND_CELLS.values()], dtype=bool)
    np.testing.assert_array_equal(hidden(result), expected)
    # published values are the originals; totals are never suppressed
    for col in ["total", *CATS]:
        published = result[col].dropna().astype("int64")
        pd.testing.assert_series_equal(published, counts.loc[published.index, col], check_names=False)
    assert result["total"].notna().all()
    assert list(result.index) == list(HAND_CELLS)
    assert all(str(result[c].dtype) == "Int64" for c in ["total", *CATS])


def test_always_reading_lets_the_strategy_decide():
    # cell E: age 2 unsafe, candidates 3 (count 4) and 1 (count 3); "always" + fixed -> successor 3
    counts = grid([(4, 5, 3, 2, 4), (4, 5, 2, 3, 4)])
    result = grid_suppression(counts, strategy="fixed", tie_only=False)
    np.testing.assert_array_equal(hidden(result), [[0, 0, 0, 1, 1], [0, 0, 1, 1, 0]])
    tie_only = grid_suppression(counts, strategy="fixed", tie_only=True)
    np.testing.assert_array_equal(hidden(tie_only), [[0, 0, 1, 1, 0], [0, 0, 1, 1, 0]])


def test_fixed_strategy_cycle_for_each_unsafe_group():
    # eqs (1)-(3): 1 unsafe -> 2; 2 unsafe -> 3; 3 unsafe -> 1 (equal safe candidates)
    counts = grid([(5, 5, 2, 4, 4), (5, 5, 4, 2, 4), (5, 5, 4, 4, 2)])
    result = grid_suppression(counts, strategy="fixed")
    np.testing.assert_array_equal(
        hidden(result)[:, 2:], [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    )


def test_k_changes_the_primary_threshold():
    counts = grid([(4, 6, 3, 3, 4)])
    assert not hidden(grid_suppression(counts, k=3)).any()
    # k = 5: sex 4 -> both sexes; ages 3, 3, 4 all unsafe
    np.testing.assert_array_equal(hidden(grid_suppression(counts, k=5)), [[1, 1, 1, 1, 1]])
    assert not hidden(grid_suppression(counts, k=1)).any()


def test_distribution_strategy_with_degenerate_reference_is_deterministic():
    # age 1 unsafe, candidates 2 and 3 tie. P(hide 2) = N_3 / (N_2 + N_3).
    counts = grid([(5, 5, 2, 4, 4)] * 50)
    never_2 = grid_suppression(counts, strategy="distribution", reference_counts=[10, 100, 0], random_state=1)
    assert never_2["age_2"].notna().all() and never_2["age_3"].isna().all()
    always_2 = grid_suppression(
        counts, strategy="distribution", reference_counts={"age_1": 1, "age_2": 0, "age_3": 7}, random_state=1
    )
    assert always_2["age_2"].isna().all() and always_2["age_3"].notna().all()


def test_distribution_strategy_probabilities_match_eqs_7_to_9():
    n = 4000
    # age 2 unsafe; candidates 3 and 1 tie; N = (3, 1, 1): P(hide 3) = N_1 / (N_1 + N_3) = 3/4
    counts = grid([(5, 5, 4, 2, 4)] * n)
    result = grid_suppression(counts, strategy="distribution", reference_counts=[3, 1, 1], random_state=7)
    share = result["age_3"].isna().mean()
    assert abs(share - 0.75) < 4 * np.sqrt(0.75 * 0.25 / n)
    # exactly one of the two candidates is hidden in every cell
    assert (result["age_1"].isna() ^ result["age_3"].isna()).all()


def test_distribution_default_reference_is_the_column_sums():
    # column sums: age_2 = 3000*4 + 100, age_3 = 3000*4 + 0 -> P(hide 2 | 1 unsafe) = 12000/24100
    many = grid([(5, 5, 2, 4, 4)] * 3000 + [(200, 200, 300, 100, 0)])
    sums = many[["age_1", "age_2", "age_3"]].sum()
    result = grid_suppression(many, strategy="distribution", random_state=3)
    p_hide_2 = sums["age_3"] / (sums["age_2"] + sums["age_3"])
    share = result["age_2"].iloc[:3000].isna().mean()
    assert abs(share - p_hide_2) < 4 * np.sqrt(p_hide_2 * (1 - p_hide_2) / 3000)


def test_uniform_strategy_is_half_and_reproducible():
    n = 4000
    counts = grid([(5, 5, 4, 4, 2)] * n)
    a = grid_suppression(counts, strategy="uniform", random_state=11)
    b = grid_suppression(counts, strategy="uniform", random_state=np.random.default_rng(11))
    pd.testing.assert_frame_equal(a, b)
    share = a["age_1"].isna().mean()
    assert abs(share - 0.5) < 4 * np.sqrt(0.25 / n)


def test_extra_columns_index_and_input_untouched():
    counts = grid([(2, 5, 1, 3, 3), (4, 6, 0, 10, 0)], index=pd.Index([10, 20], name="cell"))
    counts["cell_id"] = ["1kmN3120E5012", "1kmN3121E5012"]
    before = counts.copy()
    result = grid_suppression(counts, strategy="fixed")
    pd.testing.assert_frame_equal(counts, before)
    assert list(result.columns) == list(counts.columns)
    assert result.index.equals(counts.index)
    assert list(result["cell_id"]) == ["1kmN3120E5012", "1kmN3121E5012"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0}, "k"),
        ({"strategy": "smart"}, "strategy"),
        ({"reference_counts": [1, 2]}, "reference_counts"),
        ({"reference_counts": {"age_1": 1}}, "age_2"),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(SDCInputError, match=message):
        grid_suppression(grid([(2, 5, 1, 3, 3)]), **kwargs)


def test_bad_counts_name_the_column():
    counts = grid([(2, 5, 1, 3, 3)])
    with pytest.raises(SDCInputError, match="age_3"):
        grid_suppression(counts.drop(columns="age_3"))
    negative = counts.assign(sex_2=-1)
    with pytest.raises(SDCInputError, match="sex_2"):
        grid_suppression(negative)
    fractional = counts.assign(age_1=1.5)
    with pytest.raises(SDCInputError, match="age_1"):
        grid_suppression(fractional)


@st.composite
def random_grid(draw):
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    totals = rng.choice([1, 2, 3, 4, 5, 6, 8, 12, 40], size=n)
    sex_1 = rng.binomial(totals, 0.5)
    ages = np.array([rng.multinomial(t, rng.dirichlet([0.5, 0.5, 0.5])) for t in totals])
    frame = pd.DataFrame(
        {"sex_1": sex_1, "sex_2": totals - sex_1, "age_1": ages[:, 0], "age_2": ages[:, 1], "age_3": ages[:, 2]}
    )
    frame.insert(0, "total", totals)
    return frame


@settings(max_examples=80, deadline=None)
@given(
    counts=random_grid(),
    k=st.integers(2, 5),
    strategy=st.sampled_from(["fixed", "uniform", "distribution"]),
    tie_only=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_suppression_invariants(counts, k, strategy, tie_only, seed):
    result = grid_suppression(counts, k=k, strategy=strategy, tie_only=tie_only, random_state=seed)
    assert (result["total"].astype("int64") == counts["total"]).all()
    for group in (["sex_1", "sex_2"], ["age_1", "age_2", "age_3"]):
        published = result[group]
        # no published category count in 1..k-1
        values = published.to_numpy(dtype="float64", na_value=np.nan)
        assert not ((values > 0) & (values < k)).any()
        # published values are the originals
        mask = ~np.isnan(values)
        assert (values[mask] == counts[group].to_numpy()[mask]).all()
        # a hidden count is never the only hidden one in its margin (not derivable from T)
        n_hidden = published.isna().sum(axis=1)
        assert set(n_hidden.unique()) <= {0, 2, 3} - ({3} if len(group) == 2 else set())
        # margins add up to the total where nothing is hidden
        full = n_hidden == 0
        assert (published[full].sum(axis=1).astype("int64") == counts.loc[full, "total"]).all()


# --- the further variables of the 2021 grid --------------------------------------------------------

FULL = ["sex_1", "sex_2", "age_1", "age_2", "age_3", "employed", "birth_1", "birth_2", "birth_3",
        "residence_1", "residence_2", "residence_3"]


def test_every_variable_group_is_suppressed_by_hand():
    # One cell of 10 residents, worked out from SPEC §11.2 with k = 3, tie_only, strategy "fixed":
    # sex (5, 5), age (2, 5, 3): age 1 unsafe; candidates 2 (5) and 3 (3): the smaller, 3, hidden;
    # employed 2: primary; not a complete margin, nothing else;
    # birth (8, 1, 1): two unsafe counts hidden, nothing more;
    # residence (9, 1, 0): residence 2 unsafe; candidates 3 (0) and 1 (9): the smaller, 3, hidden.
    counts = pd.DataFrame([[10, 5, 5, 2, 5, 3, 2, 8, 1, 1, 9, 1, 0]], columns=["total", *FULL])
    out = grid_suppression(counts, strategy="fixed")
    expected = {"age_1", "age_3", "employed", "birth_2", "birth_3", "residence_2", "residence_3"}
    assert {c for c in FULL if pd.isna(out.loc[0, c])} == expected
    assert out.loc[0, "total"] == 10


def test_reference_counts_per_variable_drive_the_distribution_strategy():
    # birth_1 unsafe; candidates 2 and 3 tie at 4. Reference N = (.., 0, 1000): P(hide 2) =
    # N_3 / (N_2 + N_3) = 1, so birth_2 is always hidden, whatever the seed.
    counts = pd.DataFrame([[10, 5, 5, 3, 4, 3, 5, 2, 4, 4, 10, 0, 0]], columns=["total", *FULL])
    for seed in range(5):
        out = grid_suppression(counts, strategy="distribution", random_state=seed,
                               reference_counts={"birth_1": 10, "birth_2": 0, "birth_3": 1000})
        assert out.loc[0, ["birth_1", "birth_2", "birth_3"]].isna().tolist() == [True, True, False]
    with pytest.raises(SDCInputError, match="birth_3"):
        grid_suppression(counts, reference_counts={"age_1": 1, "age_2": 1, "age_3": 1, "birth_1": 1, "birth_2": 1})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4), st.integers(0, 6)), min_size=1,
                max_size=30),
       st.integers(0, 2**32 - 1), st.sampled_from(["fixed", "uniform", "distribution"]))
def test_no_small_count_and_no_single_hidden_count_in_any_of_the_13_figures(cells, seed, strategy):
    rng = np.random.default_rng(seed)
    rows = []
    for a, b, c, extra in cells:
        total = a + b + c + extra
        sex_1 = int(rng.integers(0, total + 1))
        ages = rng.multinomial(total, [0.2, 0.5, 0.3])
        birth = rng.multinomial(total, [0.8, 0.1, 0.1])
        residence = rng.multinomial(total, [0.7, 0.2, 0.1])
        rows.append([total, sex_1, total - sex_1, *ages, int(rng.integers(0, total + 1)), *birth, *residence])
    counts = pd.DataFrame(rows, columns=["total", *FULL])
    out = grid_suppression(counts, strategy=strategy, random_state=seed)
    published = out[FULL].to_numpy(dtype="float64", na_value=np.nan)
    assert not ((published > 0) & (published < 3)).any()
    for cols in (["sex_1", "sex_2"], ["age_1", "age_2", "age_3"], ["birth_1", "birth_2", "birth_3"],
                 ["residence_1", "residence_2", "residence_3"]):
        assert not (out[cols].isna().sum(axis=1) == 1).any()
    # published values are the originals
    keep = ~np.isnan(published)
    assert (published[keep] == counts[FULL].to_numpy()[keep]).all()
