"""The draft's key cap (issues 34, 38): a drafted spec keeps only the categorical keys its records
support at the drafted k and l (:func:`sdc_dagster.spec.roles.key_cap`), drops l when no key in two
classes can meet it (:func:`~sdc_dagster.spec.roles.l_reachable`), and lists each decision for the
methodologist to confirm (``report.draft_decisions``, shown in the report's sign-off block).

Every expected value is computed by hand in the test's comments."""

import contextlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sdc_dagster.spec import load_spec
from sdc_dagster.spec.draft import draft_spec
from sdc_dagster.spec.guess import DraftedVariable
from sdc_dagster.spec.reading import read_with_metadata
from sdc_dagster.cli import main
from sdc_dagster.search.space import search_space
from sdc_dagster.spec import parse_spec
from sdc_dagster.spec.drafted_hierarchies import two_classes
from sdc_dagster.spec.hierarchies import read_hierarchy_file
from sdc_dagster.spec.roles import coarsest_classes, draft_scenario, key_cap


def _csv(tmp_path, frame: pd.DataFrame, name="survey.csv"):
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def test_coarsest_classes_split_an_ordinal_key_at_its_median_and_a_nominal_key_at_its_mode():
    # 1, 2, 3, 4: the median record (the 2nd of 4) is a 2 -> {1, 2} and {3, 4}; the missing value stays missing
    ordinal = coarsest_classes(pd.Series([1, 2, 3, 4, None]), "ordinal")
    assert ordinal.iloc[:4].tolist() == [0.0, 0.0, 1.0, 1.0] and np.isnan(ordinal.iloc[4])
    # 1, 1, 2, 3, 3, 3: the median record (3rd of 6) is a 2 -> {1, 2} and {3}
    assert coarsest_classes(pd.Series([3, 1, 2, 3, 1, 3]), "ordinal").tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    # two categories are two classes already; one category is one class
    assert coarsest_classes(pd.Series([0, 0, 0, 1]), "ordinal").tolist() == [0.0, 0.0, 0.0, 1.0]
    assert coarsest_classes(pd.Series([5, 5, 5]), "ordinal").tolist() == [0.0, 0.0, 0.0]
    # nominal: the most frequent category 'a' against the others ('b', 'c'); a missing code (9) is missing
    nominal = coarsest_classes(pd.Series(["a", "b", "a", "c", None]), "nominal")
    assert nominal.iloc[:4].tolist() == [0.0, 1.0, 0.0, 1.0] and np.isnan(nominal.iloc[4])
    coded = coarsest_classes(pd.Series([1, 2, 1, 9]), "nominal", missing=(9,))
    assert coded.iloc[:3].tolist() == [0.0, 1.0, 0.0] and np.isnan(coded.iloc[3])


def test_two_classes_of_groups_by_hand():
    # ordered counts 1, 1, 2, 4: 8 records, the median (4th) record in the 3rd group -> groups 0-2, then 3
    assert two_classes([1, 1, 2, 4], ordered=True) == ([0, 1, 2], [3])
    # the median record in the last group: the last group alone above
    assert two_classes([1, 1, 6], ordered=True) == ([0, 1], [2])
    # nominal: the most frequent group (the first of equals) against the others
    assert two_classes([2, 5, 5, 1], ordered=False) == ([1], [0, 2, 3])
    assert two_classes([3, 4], ordered=False) is None


def test_the_search_space_with_the_tops_has_each_key_in_two_classes_before_its_top():
    # 13 records, a nominal key of 10 categories: 1 x3, 2 x2, 3..10 once each. Below 10 % of the
    # records (1.3): 3..10 into Other; then the most frequent group, Other (8 records), against 1 and 2
    values = [1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    data = pd.DataFrame({"one": values, "two": values})
    spec = parse_spec({"survey": "tiny", "risk": {"k": 3},
                       "variables": {"one": {"role": "categorical_key", "scale": "nominal"},
                                     "two": {"role": "categorical_key", "scale": "ordinal",
                                             "order": list(range(1, 11))}}})
    space = search_space(data, spec, withhold=True)
    nominal = space["one"].levels
    assert nominal[-2].groups == ((3, 4, 5, 6, 7, 8, 9, 10), (1, 2)) and len(nominal[-1].groups) == 1
    # ordinal: neighbours merged to 10 % (1, 2, 3 to 4, ..., 9 to 10), then split after the median
    # (7th) record, a 4: 1 to 4 (8 records) and 5 to 10
    ordinal = space["two"].levels
    assert ordinal[-2].groups == ((1, 2, 3, 4), (5, 6, 7, 8, 9, 10))
    assert ordinal[-2].names == ("1 – 4 (4 categories)", "5 – 10 (6 categories)")  # members_name, SPEC §8.2
    # every level coarsens the one before (the lattice's levels nest)
    for levels in (nominal, ordinal):
        for finer, coarser in zip(levels, levels[1:]):
            assert all(any(set(g) <= set(c) for c in coarser.groups) for g in finer.groups)
    # the keys' own lattice (without the tops) is as before
    assert [len(h.levels) for h in search_space(data, spec).values()] == [len(nominal) - 2, len(ordinal) - 2]


def test_twelve_records_at_k_3_support_two_keys(tmp_path):
    # n / k = 12 / 3 = 4 groups of 3 records: 2 keys of two classes make 4 combinations, 3 keys 8
    # (floor(log2(4)) = 2). Sex and region cross evenly: 4 combinations of 3 records, none below k.
    frame = pd.DataFrame({"sex": ["m", "f"] * 6, "region": ["north", "north", "south", "south"] * 3,
                          "marital": ["single", "married", "married"] * 4})
    scenario = draft_scenario(read_with_metadata(_csv(tmp_path, frame)))
    roles = {v.name: v.role for v in scenario.variables}
    assert roles == {"sex": "categorical_key", "region": "categorical_key", "marital": "other"}
    assert (scenario.cap.cap, scenario.cap.by_records, scenario.cap.shares[:2]) == (2, 2, (0.0, 0.0))
    (decision,) = scenario.decisions
    assert decision.startswith("marital: candidate key beyond the cap of 2 for 12 records at k = 3: 3 keys of two "
                               "classes each make 2^3 = 8 combinations, more than the 12 / 3 = 4 groups")
    # the spec says so, and the decision is listed for the sign-off; the spec checks
    text = draft_spec(_csv(tmp_path, frame), "small")
    assert "# The 12 records support 2 categorical keys at k = 3" in text
    spec_file = tmp_path / "small.yaml"
    spec_file.write_text(text)
    spec = load_spec(spec_file)
    assert spec.categorical_keys == ["sex", "region"]
    assert spec.report.draft_decisions == (decision,)
    # sdc init says so too
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        assert main(["--home", str(tmp_path / "home"), "init", "small", "--from", str(tmp_path / "survey.csv"),
                     "--spec", str(tmp_path / "init.yaml")]) == 0
    assert f"1 draft decision(s) to confirm (listed under report.draft_decisions and in the report's sign-off):\n" \
           f"  - {decision}\n" in console.getvalue()


def test_the_records_below_k_with_every_key_in_two_classes_bound_the_keys(tmp_path):
    # 48 records: floor(log2(48 / 3)) = 4 keys by the records. sex alternates m, f; region is
    # 'south' on records 0-3 (2 m, 2 f), 'north' on the others; marital is 'single' on records
    # 4-7 (2 m, 2 f, all north), 'married' on the others.
    # sex + region: (m, south) = 2 and (f, south) = 2 records below k = 3: 4 / 48 = 8.3 % <= 10 %.
    # + marital: (m, south, married) = 2, (f, south, married) = 2, (m, north, single) = 2,
    #   (f, north, single) = 2: 8 / 48 = 16.7 % > 10 %: marital is beyond the cap of 2.
    n = 48
    frame = pd.DataFrame({"sex": ["m", "f"] * (n // 2),
                          "region": ["south"] * 4 + ["north"] * (n - 4),
                          "marital": ["married"] * 4 + ["single"] * 4 + ["married"] * (n - 8)})
    scenario = draft_scenario(read_with_metadata(_csv(tmp_path, frame)))
    assert scenario.cap.by_records == 4
    assert scenario.cap.shares == pytest.approx((0.0, 4 / 48, 8 / 48))
    assert scenario.cap.cap == 2
    assert {v.name: v.role for v in scenario.variables}["marital"] == "other"
    (decision,) = scenario.decisions
    assert "with it and the keys ranked before it, 16.7% of the records fall in key combinations of fewer than 3 " \
           "records" in decision
    assert "against the 10% suppression limit" in decision


def test_a_missing_key_value_matches_every_category_in_the_cap_as_in_k_anonymity():
    # sex m, m, m, f, f, missing at k = 3 (sdcMicro's freqCalc, SPEC §2.4): m counts 3 + 1, f 2 + 1,
    # the missing record all 6: no record below 3. Grouped exactly, f (2) and missing (1) would be.
    data = pd.DataFrame({"sex": ["m", "m", "m", "f", "f", None]})
    cap = key_cap(data, [DraftedVariable("sex", "categorical_key", "", "nominal")], [], k=3, l=None)
    assert cap.shares == (0.0,)


def test_l_is_not_drafted_when_no_key_in_two_classes_can_meet_it(tmp_path):
    # 40 records: health is 'good' for every man and alternates for the women; with sex alone (two
    # classes) the 20 men are a group of one health value: 20 / 40 = 50 % below l = 2 > 10 %.
    frame = pd.DataFrame({"sex": ["m", "f"] * 20,
                          "health": [h for i in range(20) for h in ("good", "good" if i % 2 else "poor")]})
    path = _csv(tmp_path, frame)
    scenario = draft_scenario(read_with_metadata(path))
    assert {v.name: v.role for v in scenario.variables} == {"sex": "categorical_key", "health": "sensitive"}
    assert scenario.l is None
    assert scenario.l_reason.startswith("l = 2 not drafted: with only the first key (sex) in two classes, 50.0% of "
                                        "the records are in key groups with fewer than 2 values of health")
    assert scenario.decisions == (scenario.l_reason,)
    raw = yaml.safe_load(draft_spec(path, "health"))
    assert "l" not in raw["risk"] and raw["report"]["draft_decisions"] == [scenario.l_reason]
    # with the women and men both mixed, l = 2 is drafted and no decision is left to confirm
    frame["health"] = ["good", "good", "poor", "poor"] * 10
    mixed = draft_scenario(read_with_metadata(_csv(tmp_path, frame, "mixed.csv")))
    assert (mixed.l, mixed.decisions) == (2, ())
    assert yaml.safe_load(draft_spec(tmp_path / "mixed.csv", "mixed"))["risk"]["l"] == 2


def test_draft_decisions_must_be_a_list_of_texts(tmp_path):
    frame = pd.DataFrame({"sex": ["m", "f"] * 6, "region": ["north", "north", "south", "south"] * 3})
    raw = yaml.safe_load(draft_spec(_csv(tmp_path, frame), "small"))
    raw["report"] = {"draft_decisions": "region: beyond the cap"}
    spec_file = tmp_path / "bad.yaml"
    spec_file.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(Exception, match=r"report.draft_decisions: expected a list of texts"):
        load_spec(spec_file)


def test_without_weights_the_global_risk_target_bounds_the_keys(tmp_path):
    # 60 records, no weight: a record's risk is 1/f_k, and summed over a combination it is 1, so the
    # global risk is (combinations) / 60, at most the drafted 0.05 with at most 3 combinations.
    # sex alone: 2 combinations of 30, risk 2 / 60 = 0.033: nothing to suppress. sex and region: 4
    # combinations of 15, risk 4 / 60 = 0.067: the excess (0.067 - 0.05) * 60 = 1 takes 1 / (1/15) = 15
    # records of risk 1/15 suppressed, 25 % > 10 %: region is beyond the cap of 1.
    frame = pd.DataFrame({"sex": ["m", "f"] * 30, "region": ["north"] * 30 + ["south"] * 30})
    scenario = draft_scenario(read_with_metadata(_csv(tmp_path, frame)))
    assert scenario.cap.max_risk == 0.05 and scenario.cap.shares == pytest.approx((0.0, 0.25))
    assert {v.name: v.role for v in scenario.variables} == {"sex": "categorical_key", "region": "other"}
    (decision,) = scenario.decisions
    assert "25.0% of the records fall in key combinations of fewer than 3 records, or of the highest risk above " \
           "the global-risk target 0.05" in decision
    # with a sampling weight the risk is estimated from the weights: the target is not applied here
    frame["weight"] = 50.0
    weighted = draft_scenario(read_with_metadata(_csv(tmp_path, frame, "weighted.csv")))
    assert weighted.cap.max_risk is None and weighted.cap.cap == 2


def test_a_given_hierarchy_puts_a_key_at_its_own_coarsest_level(tmp_path):
    # ARX layout: a, b -> ab; c, d -> cd; e alone; then the top '*'. The coarsest level below the top
    # has three groups: {a, b}, {c, d}, {e}; the missing value stays missing.
    path = tmp_path / "letters.csv"
    path.write_text("a;ab;*\nb;ab;*\nc;cd;*\nd;cd;*\ne;e;*\n")
    classes = coarsest_classes(pd.Series(["a", "c", "e", "b", None, "d"]), "nominal", hierarchy=read_hierarchy_file(path))
    assert np.isnan(classes.iloc[4])
    known = classes.drop(4)
    assert known[0] == known[3] and known[1] == known[5]  # a with b, c with d
    assert len({known[0], known[1], known[2]}) == 3
    # a hierarchy of only the top leaves every value in a class of its own
    (tmp_path / "top.csv").write_text("a;*\nb;*\nc;*\n")
    alone = coarsest_classes(pd.Series(["a", "b", "c", "a"]), "nominal", hierarchy=read_hierarchy_file(tmp_path / "top.csv"))
    assert alone[0] == alone[3] and len(set(alone)) == 3


def test_the_key_cap_measures_a_key_with_an_arx_hierarchy_beside_the_data_at_that_hierarchy(tmp_path):
    # 48 records with a sampling weight (no global-risk target in the cap); sex alternates m, f;
    # region r1..r8 on 6 consecutive records each; marital 'single' on records 6-9 (r2) and 12-15 (r3).
    # In two classes region is r1 (the first of the equally frequent) against the rest: the singles are
    # (m, rest) = records 6, 8, 12, 14 and (f, rest) = 7, 9, 13, 15, 4 each: nothing below k = 3, and
    # marital is a key. The hierarchy beside the data stops at A = r1, r2; B = r3, r4; C; D below its
    # top: (m, A, single) = 6, 8; (f, A, single) = 7, 9; (m, B, single) = 12, 14; (f, B, single) = 13,
    # 15: 8 records below k, 8 / 48 = 16.7 % > 10 %: marital is beyond the cap of 2.
    n = 48
    frame = pd.DataFrame({"sex": ["m", "f"] * (n // 2), "region": [f"r{i // 6 + 1}" for i in range(n)],
                          "marital": ["single" if i in (6, 7, 8, 9, 12, 13, 14, 15) else "married" for i in range(n)],
                          "weight": 10.0})
    path = _csv(tmp_path, frame)
    plain = yaml.safe_load(draft_spec(path, "survey"))
    assert plain["variables"]["marital"]["role"] == "categorical_key"
    (tmp_path / "survey_hierarchy_region.csv").write_text("".join(f"r{i};{'ABCD'[(i - 1) // 2]};*\n" for i in range(1, 9)))
    text = draft_spec(path, "survey")
    raw = yaml.safe_load(text)
    assert raw["variables"]["marital"]["role"] == "other"
    (decision,) = raw["report"]["draft_decisions"]
    assert decision.startswith("marital: candidate key beyond the cap of 2 for 48 records at k = 3: with it and the keys "
                               "ranked before it, 16.7% of the records fall in key combinations of fewer than 3 records "
                               "even with every key at its coarsest level (its given hierarchy's, else two classes)")
    assert "# first m ranked keys at its coarsest level (its given hierarchy's, else two classes)" in text


@pytest.mark.slow
def test_arx_adult_drafted_with_its_own_hierarchies_is_released(tmp_path):
    # ARX's census-income example with its eight hierarchy files beside it: measured in two classes,
    # the cap kept all 8 keys and l = 2 on the salary class, and no plan of the 192 the hierarchies
    # allow passed l = 2 within the limits: nothing was released. At the hierarchies' own coarsest
    # levels (age in 20-year bands, countries by continent, ...) workclass and occupation are beyond
    # the cap, and the run releases.
    arx = Path(__file__).resolve().parent / "data" / "arx_adult"
    for file in arx.glob("*.csv"):
        (tmp_path / file.name).write_bytes(file.read_bytes())
    home = tmp_path / "home"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--home", str(home), "init", "adult", "--from", str(tmp_path / "adult.csv")]) == 0
    raw = yaml.safe_load((home / "specs" / "adult.yaml").read_text())
    keys = [name for name, v in raw["variables"].items() if v["role"] == "categorical_key"]
    assert keys == ["sex", "age", "race", "marital-status", "education", "native-country"]
    assert raw["risk"]["l"] == 2
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--home", str(home), "run", "adult", "2026", "--file", str(tmp_path / "adult.csv")]) == 0
    (release,) = (home / "releases" / "adult" / "2026").glob("*/*/protected.csv")
    safe = pd.read_csv(release, sep=";")
    original = pd.read_csv(tmp_path / "adult.csv", sep=";")
    assert len(safe) == len(original)
    for key in keys:  # within the 10 % suppression limit, never more categories than the original
        assert safe[key].isna().mean() <= 0.10
        assert safe[key].nunique() <= original[key].nunique()
    # every record's key group holds both salary classes, a suppressed value matching any value (SPEC
    # §2.4, sdcMicro's ldiversity): brute force over the distinct key rows and salary classes
    rows = safe[keys + ["salary-class"]].drop_duplicates()
    codes = np.column_stack([pd.factorize(rows[key])[0] for key in keys])  # -1: suppressed
    a, b = codes[:, None, :], codes[None, :, :]
    compatible = ((a == b) | (a < 0) | (b < 0)).all(axis=2)
    high = (rows["salary-class"] == ">50K").to_numpy()
    assert (compatible & high[None, :]).any(axis=1).all() and (compatible & ~high[None, :]).any(axis=1).all()
