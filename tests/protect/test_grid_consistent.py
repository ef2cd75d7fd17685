"""Consistent suppression of two grid tables of the same cells (SPEC §11.2 rules, §11.4 differencing).

Hand-made cells check each rule: (a) one hidden pattern per cell, (b) categories whose difference is
1..k-1 hidden in both tables, (c) the secondary rule re-applied to the joint pattern; a property test
checks the guarantees on random pairs of grids.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.tables import differencing_disclosure, disclosing_differences
from sdc_dagster.protect import consistent_grid_suppression, grid_suppression

CATS = ["sex_1", "sex_2", "age_1", "age_2", "age_3"]


def grid(rows, cells=None, index=None):
    """rows: (sex_1, sex_2, age_1, age_2, age_3); total = sex_1 + sex_2; optional cell_id column."""
    frame = pd.DataFrame(rows, columns=CATS, index=index)
    frame.insert(0, "total", frame["sex_1"] + frame["sex_2"])
    if cells is not None:
        frame.insert(0, "cell_id", cells)
    return frame


def hidden(result):
    return result[CATS].isna().to_numpy()


# (first cell, second cell, joint hidden mask) with k = 3, strategy "fixed", tie_only reading.
HAND_PAIRS = {
    # (a) only: differences are 0 or >= 3. First alone hides both sexes and ages 1 (unsafe) + 2
    # (smaller candidate); second alone hides nothing; jointly both tables hide what first hides.
    "a": ((2, 6, 1, 3, 4), (5, 6, 4, 3, 4), (1, 1, 1, 1, 0)),
    # (b) then (c): nothing is small in either table, but sex_1 and age_2 differ by 1. Both are
    # hidden; sex then needs sex_2; age needs one of groups 3 and 1: joint counts 4+4 = 8 and
    # 3+3 = 6, the smaller (group 1) is hidden.
    "b": ((5, 5, 3, 3, 4), (6, 5, 3, 4, 4), (1, 1, 1, 1, 0)),
    # (b) then (c) with a tie in the joint counts (5+5 and 5+5): "fixed" hides the successor of the
    # disclosing group 1, i.e. group 2. Sex differs by (-4, +3): nothing small, both published.
    "c": ((3, 11, 4, 5, 5), (7, 8, 5, 5, 5), (0, 0, 1, 1, 0)),
    # (a) over two different secondary choices: first hides ages {1, 2}, second {1, 3}; jointly all
    # three (differences 0, -4, +4 are safe).
    "f": ((5, 6, 1, 3, 7), (5, 6, 1, 7, 3), (0, 0, 1, 1, 1)),
    # nothing small, no small difference: nothing hidden
    "g": ((4, 6, 3, 3, 4), (4, 6, 3, 3, 4), (0, 0, 0, 0, 0)),
    # the same small count in both tables (difference 0): the ordinary rules, identical in both
    "h": ((2, 7, 3, 3, 3), (2, 7, 3, 3, 3), (1, 1, 0, 0, 0)),
}


def hand_tables():
    cells = list(HAND_PAIRS)
    first = grid([f for f, _, _ in HAND_PAIRS.values()], cells=cells)
    second = grid([s for _, s, _ in HAND_PAIRS.values()], cells=cells)
    expected = np.array([m for _, _, m in HAND_PAIRS.values()], dtype=bool)
    return first, second, expected


def test_hand_made_cells_for_each_rule():
    first, second, expected = hand_tables()
    a, b = consistent_grid_suppression(first, second, strategy="fixed")
    np.testing.assert_array_equal(hidden(a), expected)
    np.testing.assert_array_equal(hidden(b), expected)
    # what each table alone would hide is still hidden (consistency only adds suppressions)
    for table, out in ((first, a), (second, b)):
        alone = hidden(grid_suppression(table, strategy="fixed"))
        assert not (alone & ~hidden(out)).any()
        # published values are the originals, totals never hidden, frame shape kept
        assert out["total"].notna().all()
        for col in ["total", *CATS]:
            published = out[col].dropna().astype("int64")
            pd.testing.assert_series_equal(published, table.loc[published.index, col], check_names=False)
        assert list(out.columns) == list(table.columns)
        assert out.index.equals(table.index)
        assert all(str(out[c].dtype) == "Int64" for c in ["total", *CATS])


def test_always_reading_lets_the_strategy_pick_the_joint_secondary():
    # cell b: age 2 hidden by a difference of 1; "always" + fixed -> successor of 2, group 3
    first = grid([(5, 5, 3, 3, 4)])
    second = grid([(6, 5, 3, 4, 4)])
    a, b = consistent_grid_suppression(first, second, strategy="fixed", tie_only=False)
    np.testing.assert_array_equal(hidden(a), [[1, 1, 0, 1, 1]])
    np.testing.assert_array_equal(hidden(b), hidden(a))


def test_difference_rule_follows_k():
    # difference 3 in age_2 (and sex_1): discloses with k = 4, not with k = 3
    first = grid([(9, 9, 6, 6, 6)])
    second = grid([(12, 9, 6, 9, 6)])
    a3, _ = consistent_grid_suppression(first, second, k=3, strategy="fixed")
    assert not hidden(a3).any()
    a4, b4 = consistent_grid_suppression(first, second, k=4, strategy="fixed")
    # sex_1 and age_2 disclose; sex_2 and (tie 12 vs 12 -> successor of 2) age_3 are secondary
    np.testing.assert_array_equal(hidden(a4), [[1, 1, 0, 1, 1]])
    np.testing.assert_array_equal(hidden(b4), hidden(a4))


def test_difference_rule_is_the_one_of_differencing_disclosure():
    first, second, _ = hand_tables()
    flags = differencing_disclosure(first, second)
    mask = disclosing_differences(first[CATS].to_numpy(), second[CATS].to_numpy())
    assert flags["discloses"].loc[first["cell_id"]].tolist() == mask.any(axis=1).tolist()
    assert flags["discloses"].loc[["b", "c"]].all() and not flags["discloses"].loc[["a", "f", "g", "h"]].any()


def test_cells_matched_by_cell_id_in_any_order_and_cells_in_one_table_only():
    first = grid([(5, 5, 3, 3, 4), (1, 1, 0, 2, 0), (4, 6, 3, 3, 4)], cells=["b", "only_first", "g"])
    # second in another order, without "only_first", with a cell of its own
    second = grid([(4, 6, 3, 3, 4), (3, 3, 2, 2, 2), (6, 5, 3, 4, 4)], cells=["g", "only_second", "b"])
    a, b = consistent_grid_suppression(first, second, strategy="fixed")
    a, b = a.set_index("cell_id"), b.set_index("cell_id")
    np.testing.assert_array_equal(hidden(a.loc[["b"]]), [[1, 1, 1, 1, 0]])
    np.testing.assert_array_equal(hidden(b.loc[["b"]]), [[1, 1, 1, 1, 0]])
    assert not hidden(a.loc[["g"]]).any() and not hidden(b.loc[["g"]]).any()
    # a cell in one table only gets exactly the single-table pattern (the other publishes nothing)
    np.testing.assert_array_equal(hidden(a.loc[["only_first"]]), [[1, 1, 0, 1, 1]])
    np.testing.assert_array_equal(hidden(b.loc[["only_second"]]), [[0, 0, 1, 1, 1]])
    assert list(a.index) == ["b", "only_first", "g"] and list(b.index) == ["g", "only_second", "b"]


def test_cells_matched_by_index_without_cell_id():
    first = grid([(5, 5, 3, 3, 4), (4, 6, 3, 3, 4)], index=pd.Index([10, 20], name="cell"))
    second = grid([(4, 6, 3, 3, 4), (6, 5, 3, 4, 4)], index=pd.Index([20, 10], name="cell"))
    a, b = consistent_grid_suppression(first, second, strategy="fixed")
    np.testing.assert_array_equal(hidden(a.loc[[10]]), [[1, 1, 1, 1, 0]])
    np.testing.assert_array_equal(hidden(b.loc[[10]]), [[1, 1, 1, 1, 0]])
    assert not hidden(a.loc[[20]]).any() and not hidden(b.loc[[20]]).any()


def test_inputs_untouched_and_reproducible():
    first, second, _ = hand_tables()
    before = (first.copy(), second.copy())
    one = consistent_grid_suppression(first, second, strategy="uniform", random_state=5)
    two = consistent_grid_suppression(first, second, strategy="uniform", random_state=np.random.default_rng(5))
    pd.testing.assert_frame_equal(first, before[0])
    pd.testing.assert_frame_equal(second, before[1])
    for x, y in zip(one, two, strict=True):
        pd.testing.assert_frame_equal(x, y)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f, s: (f, s.drop(columns="cell_id")), "cell_id"),
        (lambda f, s: (f, s.assign(cell_id=["a"] * len(s))), "uniquely"),
        (lambda f, s: (f.drop(columns="age_2"), s), "age_2"),
        (lambda f, s: (f, s.assign(sex_1=-1)), "sex_1"),
    ],
)
def test_bad_inputs(change, message):
    first, second, _ = hand_tables()
    with pytest.raises(SDCInputError, match=message):
        consistent_grid_suppression(*change(first, second))


@pytest.mark.parametrize("kwargs, message", [({"k": 0}, "k"), ({"strategy": "smart"}, "strategy"),
                                             ({"reference_counts": [1, 2]}, "reference_counts")])
def test_bad_parameters(kwargs, message):
    first, second, _ = hand_tables()
    with pytest.raises(SDCInputError, match=message):
        consistent_grid_suppression(first, second, **kwargs)


def _counts(persons_sex, persons_age, cell_of, n_cells):
    rows = []
    for sex in (1, 2):
        rows.append(np.bincount(cell_of[persons_sex == sex], minlength=n_cells))
    for age in (1, 2, 3):
        rows.append(np.bincount(cell_of[persons_age == age], minlength=n_cells))
    counts = np.column_stack(rows)
    return np.column_stack([counts[:, :2].sum(axis=1), counts])


@st.composite
def random_pair(draw):
    """Two grids of overlapping cells built from persons: the second adds/removes a few persons."""
    n = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sizes = rng.choice([1, 2, 3, 4, 5, 6, 8, 12, 30], size=n)
    cell_of = np.repeat(np.arange(n), sizes)
    sex = rng.integers(1, 3, size=cell_of.size)
    age = rng.choice([1, 2, 3], size=cell_of.size, p=rng.dirichlet([0.7, 0.7, 0.7]))
    first = _counts(sex, age, cell_of, n)
    # second definition: drop each person with a small probability, add a few persons per cell,
    # and a few cells of its own
    keep = rng.random(cell_of.size) > rng.choice([0.0, 0.05, 0.2])
    n_extra = rng.integers(0, 3)
    added = np.repeat(np.arange(n + n_extra), rng.poisson(0.7, size=n + n_extra))
    cell2 = np.concatenate([cell_of[keep], added])
    sex2 = np.concatenate([sex[keep], rng.integers(1, 3, size=added.size)])
    age2 = np.concatenate([age[keep], rng.integers(1, 4, size=added.size)])
    second = _counts(sex2, age2, cell2, n + n_extra)
    ids = np.array([f"1kmN{i}E0" for i in range(n + n_extra)])
    a = pd.DataFrame(first, columns=["total", *CATS]).assign(cell_id=ids[:n])
    inhabited = second[:, 0] > 0  # uninhabited cells are not published
    b = pd.DataFrame(second[inhabited], columns=["total", *CATS]).assign(cell_id=ids[inhabited])
    b = b.sample(frac=1.0, random_state=int(rng.integers(1000))).reset_index(drop=True)
    return a, b


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(
    pair=random_pair(),
    k=st.integers(2, 4),
    strategy=st.sampled_from(["fixed", "uniform", "distribution"]),
    tie_only=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_consistent_suppression_invariants(pair, k, strategy, tie_only, seed):
    first, second = pair
    a, b = consistent_grid_suppression(first, second, k=k, strategy=strategy, tie_only=tie_only, random_state=seed)
    for table, out in ((first, a), (second, b)):
        assert out["total"].notna().all()
        assert (out["total"].astype("int64") == table["total"]).all()
        values = out[CATS].to_numpy(dtype="float64", na_value=np.nan)
        published = ~np.isnan(values)
        # published values are the originals; none in 1..k-1
        assert (values[published] == table[CATS].to_numpy()[published]).all()
        assert not ((values > 0) & (values < k)).any()
        # no margin with exactly one hidden count
        for group in (["sex_1", "sex_2"], ["age_1", "age_2", "age_3"]):
            assert not (out[group].isna().sum(axis=1) == 1).any()
        if strategy == "fixed":  # deterministic: the single-table pattern is kept
            alone = hidden(grid_suppression(table, k=k, strategy="fixed", tie_only=tie_only))
            assert not (alone & ~hidden(out)).any()
    # identical patterns on common cells; no published category with a difference in 1..k-1
    ha = a.set_index("cell_id")
    hb = b.set_index("cell_id")
    common = ha.index.intersection(hb.index)
    np.testing.assert_array_equal(hidden(ha.loc[common]), hidden(hb.loc[common]))
    diff_small = disclosing_differences(
        first.set_index("cell_id").loc[common, CATS].to_numpy(),
        second.set_index("cell_id").loc[common, CATS].to_numpy(),
        k=k,
    )
    assert not (diff_small & ~hidden(ha.loc[common])).any()


FULL = ["sex_1", "sex_2", "age_1", "age_2", "age_3", "employed", "birth_1", "birth_2", "birth_3",
        "residence_1", "residence_2", "residence_3"]
MARGINS = [["sex_1", "sex_2"], ["age_1", "age_2", "age_3"], ["birth_1", "birth_2", "birth_3"],
           ["residence_1", "residence_2", "residence_3"]]


def _full_table(rng, n):
    rows = []
    for _ in range(n):
        total = int(rng.integers(0, 12))
        sex_1 = int(rng.integers(0, total + 1))
        rows.append([total, sex_1, total - sex_1, *rng.multinomial(total, [0.2, 0.5, 0.3]),
                     int(rng.integers(0, total + 1)), *rng.multinomial(total, [0.8, 0.1, 0.1]),
                     *rng.multinomial(total, [0.7, 0.2, 0.1])])
    return pd.DataFrame(rows, columns=["total", *FULL])


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.sampled_from(["fixed", "uniform", "distribution"]))
def test_consistent_suppression_of_all_13_figures(n, seed, strategy):
    rng = np.random.default_rng(seed)
    first = _full_table(rng, n)
    # the second population differs by a few persons in some cells
    second = first.copy()
    bump = rng.random(n) < 0.3
    for col in ("total", "sex_1", "age_2", "birth_1", "residence_1"):
        second.loc[bump, col] += 1
    a, b = consistent_grid_suppression(first, second, strategy=strategy, random_state=seed)
    assert a[FULL].isna().equals(b[FULL].isna())  # one hidden pattern per cell
    for out, source in ((a, first), (b, second)):
        published = out[FULL].to_numpy(dtype="float64", na_value=np.nan)
        assert not ((published > 0) & (published < 3)).any()
        for cols in MARGINS:
            assert not (out[cols].isna().sum(axis=1) == 1).any()
        keep = ~np.isnan(published)
        assert (published[keep] == source[FULL].to_numpy()[keep]).all()
    # no published category whose two counts differ by 1 or 2
    diff = np.abs(first[FULL].to_numpy() - second[FULL].to_numpy())
    shown = a[FULL].notna().to_numpy()
    assert not (shown & (diff > 0) & (diff < 3)).any()
