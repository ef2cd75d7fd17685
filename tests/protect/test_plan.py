"""Protection plans (SPEC §8): validation messages, reproducibility, recorded seeds and counts."""

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdc_dagster.errors import SDCInputError
from sdc_dagster.protect import PLAN_METHODS, apply_plan, local_suppression, validate_plan

DATA = Path(__file__).parents[1] / "data" / "sdcmicro"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
PLAN = [
    {"method": "recode", "variable": "water", "mapping": {7: 5, 8: 5, 9: 5}},
    {"method": "local_suppression", "k": 3},
    {"method": "pram", "variable": "hhcivil", "retention": 0.8},
    {"method": "microaggregation", "columns": ["expend", "income", "savings"], "k": 3},
    {"method": "noise", "columns": ["age"], "amount": 0.1},
    {"method": "rank_swap", "columns": ["household_weights"], "p": 5},
    {"method": "rounding", "columns": ["age"], "base": 5},
    {"method": "top_coding", "variable": "age", "value": 80, "replacement": 80},
    {"method": "remove_variables", "variables": ["ori_hid"]},
    {"method": "subsample", "fraction": 0.5},
]


@pytest.fixture(scope="module")
def testdata():
    return pd.read_csv(DATA / "testdata.csv")


def test_registry_names():
    assert set(PLAN_METHODS) == {
        "recode", "interval_recode", "top_coding", "bottom_coding", "local_suppression", "risk_suppression",
        "diversity_suppression",
        "pram", "microaggregation", "microaggregation_gower", "mv_top_coding", "noise", "rank_swap", "rounding",
        "subsample", "remove_variables",
    }


def test_plan_is_reproducible_byte_for_byte_and_records_steps(testdata):
    before = testdata.copy()
    a = apply_plan(testdata, PLAN, keys=KEYS, random_state=2024)
    b = apply_plan(testdata, PLAN, keys=KEYS, random_state=2024)
    pd.testing.assert_frame_equal(testdata, before)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert a.steps == b.steps
    assert not a.data.equals(apply_plan(testdata, PLAN, keys=KEYS, random_state=2025).data)
    seeds = [s["random_state"] for s in a.steps]
    random_steps = {"pram", "noise", "rank_swap", "subsample"}
    assert all((seed is not None) == (s["method"] in random_steps) for seed, s in zip(seeds, a.steps))
    assert len({s for s in seeds if s is not None}) == len(random_steps)
    # every parameter recorded, defaults included; the variant of a method is called "kind"
    micro = a.steps[3]
    assert micro["parameters"] == {"columns": ["expend", "income", "savings"], "k": 3, "kind": "mdav", "strata": None,
                                   "measure": "mean", "trim": 0.0, "weight": None, "nc": 8, "clusters": None}
    assert a.steps[1]["parameters"]["keys"] == KEYS
    # counts: the suppression step equals running local suppression alone on the recoded data
    recoded = testdata.assign(water=testdata["water"].replace({7: 5, 8: 5, 9: 5}))
    alone = local_suppression(recoded, KEYS, k=3)
    expected = {k: int(alone[k].isna().sum()) for k in KEYS if alone[k].isna().any()}
    assert a.steps[1]["values_suppressed"] == expected == a.steps[1]["values_changed"]
    assert a.steps[0]["values_changed"] == {"water": int(testdata["water"].isin([7, 8, 9]).sum())}
    assert a.steps[-2]["columns_removed"] == ["ori_hid"] and "ori_hid" not in a.data.columns
    assert a.steps[-1]["records_before"] == 4580 and a.steps[-1]["records_after"] == len(a.data) == 2290
    matrix = a.artifacts["pram:hhcivil"]
    assert np.allclose(matrix.sum(axis=1), 1.0) and np.allclose(np.diag(matrix), 0.8)


def test_plan_continued_from_its_first_steps_is_the_whole_plan(testdata):
    """``applied`` (the plan search confirms plans that differ in their last step): the steps it
    holds are not run again, and data, step records (seeds, counts, what local suppression reported)
    and artifacts are those of the whole plan; the prefix result is left as it was."""
    plan = PLAN[:6]  # recode, local suppression, PRAM (an artifact), microaggregation, noise, rank swap
    whole = apply_plan(testdata, plan, keys=KEYS, random_state=2024, seed_labels=("t", "2024", "p"))
    for cut in (2, 3, 5):
        prefix = apply_plan(testdata, plan[:cut], keys=KEYS, random_state=2024, seed_labels=("t", "2024", "p"))
        kept = prefix.data.copy()
        continued = apply_plan(testdata, plan, keys=KEYS, random_state=2024, seed_labels=("t", "2024", "p"),
                               applied=prefix)
        pd.testing.assert_frame_equal(continued.data, whole.data, check_exact=True)
        assert continued.steps == whole.steps
        assert continued.steps[1]["reported"] == {"local_suppression_method": "greedy"}
        assert set(continued.artifacts) == set(whole.artifacts) == {"pram:hhcivil"}
        assert np.array_equal(continued.artifacts["pram:hhcivil"], whole.artifacts["pram:hhcivil"])
        assert continued.data.attrs == {}
        pd.testing.assert_frame_equal(prefix.data, kept)
        assert len(prefix.steps) == cut


def test_step_seed_derived_from_plan_seed_and_step_identity(testdata):
    steps = [{"method": "recode", "variable": "water", "mapping": {9: 5}}, {"method": "noise", "columns": ["age"]}]
    result = apply_plan(testdata, steps, keys=KEYS, random_state=7, seed_labels=("testdata", "2024", "perturb"))
    # the documented derivation, written out: SHA-256 of "testdata␟2024␟perturb␟1␟noise" as 8 uint32 words
    digest = hashlib.sha256("testdata\x1f2024\x1fperturb\x1f1\x1fnoise".encode()).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 32, 4)]
    seed = int(np.random.SeedSequence([7, *words]).generate_state(1, dtype=np.uint32)[0])
    assert result.steps[0]["random_state"] is None and result.steps[1]["random_state"] == seed
    other_wave = apply_plan(testdata, steps, keys=KEYS, random_state=7, seed_labels=("testdata", "2025", "perturb"))
    assert other_wave.steps[1]["random_state"] != seed
    from sdc_dagster.protect import add_noise

    recoded = testdata.assign(water=testdata["water"].replace({9: 5}))
    noisy = add_noise(recoded, ["age"], random_state=seed)
    # age is in whole years: the noisy ages are released rounded to whole years (issue 34)
    pd.testing.assert_frame_equal(result.data, noisy.assign(age=noisy["age"].round().astype("int64")))
    assert result.steps[1]["rounded_to_whole_numbers"] == ["age"]


@pytest.mark.parametrize(
    "steps, message",
    [
        ([{"method": "shuffle"}], r"step 0: unknown method 'shuffle'"),
        ([{"variable": "water"}], r"step 0: unknown method None"),
        ([{"method": "recode", "variable": "water", "mapping": {1: 2}, "colour": 1}], r"step 0 \(recode\): unknown parameter 'colour'"),
        ([{"method": "local_suppression"}, {"method": "top_coding", "variable": "age", "value": 80}],
         r"step 1 \(top_coding\): missing parameter 'replacement'"),
        ([{"method": "local_suppression", "k": "3"}], r"step 0 \(local_suppression\): parameter 'k' must be an integer"),
        ([{"method": "noise", "columns": ["age"], "kind": "uniform"}], r"parameter 'kind' must be one of"),
        ([{"method": "pram", "variable": "nope", "retention": 0.8}], r"names column 'nope'"),
        ([{"method": "remove_variables", "variables": "age"}, {"method": "noise", "columns": ["age"]}],
         r"step 1 \(noise\): parameter 'columns' names column 'age'"),
        ([{"method": "recode", "variable": "water", "mapping": [1, 2]}], r"parameter 'mapping' must be a mapping"),
        ("local_suppression", r"plan: must be a list"),
        ([{"method": "local_suppression", "kind": "argus"}], r"parameter 'kind' must be one of 'auto', 'greedy', 'sdcmicro'"),
        ([{"method": "local_suppression", "importance": {"roof": "high"}}], r"parameter 'importance' must be a list of key"),
        ([{"method": "local_suppression", "importance": {"nope": 1}}], r"parameter 'importance' names column 'nope'"),
    ],
)
def test_validation_names_step_key_and_expectation(testdata, steps, message):
    with pytest.raises(SDCInputError, match=message):
        validate_plan(steps, columns=list(testdata.columns))


def test_errors_inside_a_step_name_the_step(testdata):
    # (Recoding a category absent from the data is a recorded no-op, tested in test_recode.py.)
    with pytest.raises(SDCInputError, match=r"step 0 \(interval_recode\): .*outside the breaks"):
        apply_plan(testdata, [{"method": "interval_recode", "variable": "income", "breaks": [0, 1]}], keys=KEYS)
    with pytest.raises(SDCInputError, match="random_state"):
        apply_plan(testdata, PLAN[:1], keys=KEYS, random_state="x")


def test_sdcmicro_local_suppression_step_is_sdcmicros_output(testdata):
    """A spec step {method: local_suppression, kind: sdcmicro, importance: {key: number}} gives
    sdcMicro 5.8.1's file (golden_parity c_testdata_ls_importance_reverse_k3.csv)."""
    steps = [{"method": "local_suppression", "k": 3, "kind": "sdcmicro", "importance": dict(zip(KEYS, range(7, 0, -1)))}]
    validate_plan(steps, columns=list(testdata.columns))
    result = apply_plan(testdata, steps, keys=KEYS, random_state=1)
    golden = pd.read_csv(DATA / "golden_parity" / "c_testdata_ls_importance_reverse_k3.csv")
    assert result.data[KEYS].isna().equals(golden[KEYS].isna())
    assert result.steps[0]["parameters"]["kind"] == "sdcmicro"
    assert sum(result.steps[0]["values_suppressed"].values()) == 298


def test_step_records_what_the_method_chose_and_the_data_carries_no_report(testdata):
    """Local suppression on seven keys reports the greedy algorithm (issue 23: the choice is made by
    the data's shape, up to eight keys greedy); the step record keeps it, the sentence of the
    report names it, and the released frame carries no attribute into its Parquet file."""
    from sdc_dagster.report.content import step_sentence

    result = apply_plan(testdata, [{"method": "local_suppression", "k": 3}], keys=KEYS)
    step = result.steps[0]
    assert step["reported"] == {"local_suppression_method": "greedy"}
    assert "(algorithm: greedy)" in step_sentence(step)
    assert result.data.attrs == {}
    wide = pd.DataFrame(np.random.default_rng(0).integers(0, 3, (12_000, 2)), columns=["x", "y"]).astype(float)
    romm = apply_plan(wide, [{"method": "noise", "columns": ["x", "y"], "kind": "ROMM", "p": 0.1}],
                      keys=[], random_state=1)
    assert romm.steps[0]["reported"] == {"romm_blocks": 48}  # 12,000 records in blocks of at most 250
    assert "48 random blocks" in step_sentence(romm.steps[0])


def test_microaggregated_values_keep_the_original_decimals():
    """A variable published with 2 decimals is released with 2 decimals, not as group means of 3+
    decimals (7.772) or float noise (9.940000000000001): mu-Argus's <DECIMALS> (found on carData's
    Prestige, education in years with 2 decimals). Hand computation: MDAV with k = 3 on one variable
    groups {1.01, 1.02, 1.04} (mean 1.02333 -> 1.02) and {5.00, 5.01, 5.03} (mean 5.01333 -> 5.01).
    A variable with 6 decimals is not left as computed (issue 34: it was released at full precision):
    groups {0.123456, 0.234567, 0.345678} and {3.123456, 3.234567, 3.345678} have means 0.234567 and
    3.234567; the changes are +-0.111111 (4 of the 6 values), u = 0.111111, whose second significant
    digit is the second decimal (GUM 7.2.6): 0.23 and 3.23."""
    data = pd.DataFrame({"x": [1.01, 1.02, 1.04, 5.00, 5.01, 5.03],
                         "y": [0.123456, 0.234567, 0.345678, 3.123456, 3.234567, 3.345678]})
    result = apply_plan(data, [{"method": "microaggregation", "columns": ["x"], "k": 3},
                               {"method": "microaggregation", "columns": ["y"], "k": 3}], keys=[])
    assert sorted(result.data["x"].tolist()) == [1.02, 1.02, 1.02, 5.01, 5.01, 5.01]
    assert result.steps[0]["rounded_to_decimals"] == {"x": 2}
    assert "rounded_to_whole_numbers" not in result.steps[0]
    assert sorted(result.data["y"].tolist()) == [0.23] * 3 + [3.23] * 3
    assert result.steps[1]["rounded_to_decimals"] == {"y": 2}
