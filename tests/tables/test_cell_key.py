"""The cell key method for magnitude tables: the Handbook's worked example, and by hand.

The Handbook on SDC (Hundepool et al., current edition, "Cell Key Method for Magnitude Tables" and,
for its p-table, "Cell Perturbation - the Cell Key Method") works a cell x = 300 with x_max = 200 at
the cell key 0.8 through its fictional p-table: delta = 0.5 gives 400, delta = 0.6 gives 360.

The other tests' noise table's last row puts 1/4 on -1, 1/2 on 0 and 1/4 on +1: a key u < 0.25 gives -1,
0.25 <= u < 0.75 gives 0, u >= 0.75 gives +1 (inverse CDF). Record keys are integers 1..16, so a
cell key is (sum of its records' keys mod 16) / 16 and the second key (10 s mod 16) / 16.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdc_dagster.tables as tables
from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect.ptable import PerturbationTable

NOISE = PerturbationTable(max_deviation=1, variance=0.5, probabilities=np.array([[0, 1, 0], [0.25, 0.5, 0.25]]))
COUNTS = PerturbationTable(max_deviation=1, variance=0.5,
                           probabilities=np.array([[0, 1, 0], [0, 0.5, 0.5], [0.25, 0.5, 0.25]]))
DATA = pd.DataFrame({"a": ["x", "x", "x", "y", "y"], "v": [100.0, 50.0, 10.0, 40.0, 30.0], "k": [3, 4, 6, 1, 2]})


def perturb(data=DATA, **kwargs):
    options = {"value": "v", "ptable": NOISE, "delta": 0.1, "record_key": "k", "n_key": 16} | kwargs
    return tables.cell_key_magnitude(data, {"a": None}, **options).set_index("a")


# the Handbook's fictional p-table (noise -1, 0, +1): 0 -> 0; 1 -> -1 or +1 (1/2 each);
# 2 -> 0 (0.8) or +1 (0.2); 3 and above -> -1 (0.3), 0 (0.4), +1 (0.3)
HANDBOOK = PerturbationTable(max_deviation=1, variance=0.6, probabilities=np.array(
    [[0, 1, 0], [0.5, 0, 0.5], [0, 0.8, 0.2], [0.3, 0.4, 0.3]]))


@pytest.mark.parametrize("delta, expected", [(0.5, 400.0), (0.6, 360.0)])
def test_handbook_worked_example(delta, expected):
    """x = 300 = 200 + 100. delta 0.5: row 300 / (0.5 * 200) = 3, the key in the last row's +1 band:
    300 + 100 = 400. delta 0.6: row 2.5 = half row 2 (noise 0) and half row 3 (+1):
    300 + 0.6 * 200 * 0.5 = 360. The Handbook's key 0.8 lies exactly on row 2's bound, where its
    convention (lower < u <= upper) and the lookup's (lower <= u < upper) differ; the record keys
    0.45 and 0.3 give the key 0.75, inside both bands."""
    data = pd.DataFrame({"a": ["c", "c"], "v": [200.0, 100.0], "k": [0.45, 0.3]})
    out = tables.cell_key_magnitude(data, {"a": None}, value="v", ptable=HANDBOOK, delta=delta, record_key="k",
                                    count_ptable=HANDBOOK).set_index("a")
    assert out.loc["c", "cell_key"] == pytest.approx(0.75)
    assert out.loc["c", "perturbed_value"] == pytest.approx(expected)
    assert out.loc["c", "perturbed_freq"] == 2  # the count 2 at 0.75: noise 0


def test_handbook_count_example_through_the_same_keys():
    """The Handbook's count example: three records with keys 0.9, 0.3 and 0.6 make the cell key 0.8;
    the count 3 gets +1: 4 (a magnitude cell of the same records gets the same key)."""
    data = pd.DataFrame({"a": ["m"] * 3, "v": [1.0, 1.0, 1.0], "k": [0.9, 0.3, 0.6]})
    out = tables.cell_key_magnitude(data, {"a": None}, value="v", ptable=HANDBOOK, delta=0.5, record_key="k",
                                    count_ptable=HANDBOOK).set_index("a")
    assert out.loc["m", "cell_key"] == pytest.approx(0.8)
    assert out.loc["m", "perturbed_freq"] == 4


def test_top_two_contributions_by_hand():
    out = perturb(top_k=2, epsilon=[1, 0.5], count_ptable=COUNTS)
    # x: keys 3 + 4 + 6 = 13 -> 0.8125 -> +1: 160 + 0.1 * 100 = 170; second key 130 mod 16 = 2 -> 0.125
    #    -> -1: 170 - 0.1 * 0.5 * 50 = 167.5
    # y: keys 1 + 2 = 3 -> 0.1875 -> -1: 70 - 4 = 66; second key 30 mod 16 = 14 -> 0.875 -> +1: 66 + 1.5
    # Total: keys 16 mod 16 = 0 -> -1: 230 - 10 = 220; second key 0 -> -1: 220 - 2.5
    assert out["cell_key"].to_dict() == {"Total": 0.0, "x": 0.8125, "y": 0.1875}
    assert out["perturbed_value"].to_dict() == {"Total": 217.5, "x": 167.5, "y": 67.5}
    assert out["perturbation"].to_dict() == {"Total": -12.5, "x": 7.5, "y": -2.5}
    # counts by the count method at the same keys: 5 (last row, key 0) -> 4, 3 (key 0.8125) -> 4, 2 -> 1
    assert out["perturbed_freq"].to_dict() == {"Total": 4, "x": 4, "y": 1}
    assert out.attrs["parameters"]["seed"] is None and out.attrs["parameters"]["epsilon"] == [1.0, 0.5]


def test_top_one_contribution_by_hand():
    out = perturb()
    assert out["perturbed_value"].to_dict() == {"Total": 220.0, "x": 170.0, "y": 66.0}
    assert "perturbed_freq" not in out


def test_noise_never_crosses_zero():
    # one cell 10 - 5 = 5 (largest |contribution| 10); delta = 1: row 5 / 10 = 0.5, between row 0
    # (noise 0) and row 1 (key 1 + 2 = 3 -> 0.1875: -1): v = -0.5, the cell stops at 5 - 5 = 0
    data = pd.DataFrame({"a": ["x", "x"], "v": [10.0, -5.0], "k": [1, 2]})
    out = perturb(data, delta=1.0)
    assert out.loc["x", "perturbed_value"] == 0.0


def test_holding_contributions_count_as_one():
    # x: units 60 and 50 of holding h1 and 100 of h2; keys 5 + 4 + 4 = 13 -> 0.8125 -> +1;
    # by unit x1 = 100: 210 + 10; by holding x1 = 110: 210 + 11
    data = pd.DataFrame({"a": ["x"] * 3, "v": [60.0, 50.0, 100.0], "h": ["h1", "h1", "h2"], "k": [5, 4, 4]})
    assert perturb(data).loc["x", "perturbed_value"] == 220.0
    assert perturb(data, holding="h").loc["x", "perturbed_value"] == 221.0


def test_seeded_keys_are_recorded_and_reproducible():
    first = perturb(record_key=None, seed=7, n_key=None)
    again = perturb(record_key=None, seed=7, n_key=None)
    pd.testing.assert_frame_equal(first, again)
    assert first.attrs["parameters"]["seed"] == 7
    assert first.attrs["parameters"]["record_keys"] == "uniform [0, 1)"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"seed": 3}, "either record_key"),
        ({"top_k": 7}, "top_k"),
        ({"top_k": 2, "epsilon": [1]}, "one weight per top contribution"),
        ({"top_k": 2, "epsilon": [0.5, 0.2]}, "must start at 1"),
        ({"delta": 0}, "delta"),
        ({"ptable": "table"}, "PerturbationTables"),
        ({"n_key": 4}, "integer record keys must lie in 1..4"),
        ({"n_key": 2**33}, "n_key: at most 2"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(SDCInputError, match=message):
        perturb(**kwargs)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("xyz"), st.sampled_from("uv"), st.floats(-50, 500), st.integers(1, 99)),
                min_size=1, max_size=25))
def test_a_cell_gets_the_same_noise_in_every_table(rows):
    """A cell of the same records has the same key and contributions, hence the same published value,
    whichever table it is published in (the consistency of the cell key method)."""
    data = pd.DataFrame(rows, columns=["a", "b", "v", "k"])
    options = {"value": "v", "ptable": NOISE, "delta": 0.2, "top_k": 2, "epsilon": [1, 0.3], "record_key": "k", "n_key": 99}
    one = tables.cell_key_magnitude(data, {"a": None}, **options).set_index("a")
    two = tables.cell_key_magnitude(data, {"a": None, "b": None}, **options)
    margin = two[two["b"] == "Total"].set_index("a")
    pd.testing.assert_series_equal(one["perturbed_value"], margin["perturbed_value"])
    # row i of the p-table holds no noise below -i: a cell never changes sign
    kept = (np.sign(one["perturbed_value"]) == np.sign(one["value"])) | np.isclose(one["perturbed_value"], 0, atol=1e-9)
    assert kept.all()
    # the noise is bounded by the top contributions: |perturbation| <= p (x1 + 0.3 x2) (|v| <= D = 1)
    top = data.assign(v=data["v"].abs()).groupby("a")["v"].apply(lambda v: v.nlargest(2).tolist() + [0.0])
    bound = top.map(lambda x: 0.2 * (x[0] + 0.3 * x[1]))
    assert (one["perturbation"].abs().loc[bound.index] <= bound + 1e-9).all()


def test_counts_are_the_count_methods():
    """The counts of a magnitude table get the noise the count method gives the same cells from the
    same record keys (one count method: protect.cellkey.cell_key_perturb on the inner cells)."""
    from sdc_dagster.protect import assign_record_keys, cell_key_perturb, perturbation_table

    rng = np.random.default_rng(4)
    data = pd.DataFrame({"a": rng.choice(["p", "q", "r"], 300), "b": rng.choice(["s", "t"], 300),
                         "v": rng.uniform(1, 100, 300)})
    data["k"] = assign_record_keys(data, random_state=9)
    counts = perturbation_table(2, 1.5, threshold=1)
    out = tables.cell_key_magnitude(data, {"a": None, "b": None}, value="v", ptable=NOISE, delta=0.1,
                                    record_key="k", count_ptable=counts)
    inner = out[(out["a"] != "Total") & (out["b"] != "Total")].set_index(["a", "b"])
    reference = cell_key_perturb(data, ["a", "b"], record_key_col="k", ptable=counts).set_index(["a", "b"])
    assert (inner.loc[reference.index, "perturbed_freq"].to_numpy() == reference["perturbed"].to_numpy()).all()
    np.testing.assert_allclose(inner.loc[reference.index, "cell_key"], reference["cell_key"])
