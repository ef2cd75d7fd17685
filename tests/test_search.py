"""The plan search of a wave (issue 22; sdc_dagster.search.wave, search_space, spec ``search:``).

Expected values come from the chain's own release checks and loss (protection.release_checks,
evaluation.headline_loss) run on the plans as the release runs them, or are written out by hand."""

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdc_dagster.pipeline import evaluation
from sdc_dagster.pipeline import protection
from sdc_dagster.protect.plan import apply_plan
from sdc_dagster.search.space import key_hierarchy, search_space
from sdc_dagster.keys import key_digits
from sdc_dagster.risk.categorical import k_anonymity_violations, risk_table
from sdc_dagster.search.coded import CodedLattice
from sdc_dagster.search.wave import SEARCHED_PLAN, progress_line, search_wave
from sdc_dagster.spec import SEARCH_METHODS, Plan, SearchOptions, SpecError, Variable, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "sdcmicro" / "testdata.csv"
EXAMPLE_SPEC = ROOT / "examples" / "testdata.yaml"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


@pytest.fixture(scope="module")
def testdata():
    return pd.read_csv(DATA)


def categorical_spec(keys, *, k=3, max_global_risk=0.01, weight="sampling_weight", search=None, extra=None):
    variables = {key: {"role": "categorical_key", "scale": "nominal"} for key in keys}
    if weight:
        variables[weight] = {"role": "weight"}
    variables.update(extra or {})
    return parse_spec({"survey": "t", "variables": variables, "risk": {"k": k, "max_global_risk": max_global_risk},
                       "search": {"enabled": True, "budget_seconds": 60, **(search or {})}})


def front_points(result):
    return [(c.levels, round(c.global_risk, 12), round(c.loss, 12)) for c in result.front]


# --- the spec's search: section ---------------------------------------------------------------

def test_search_section_defaults_and_values():
    assert load_spec(EXAMPLE_SPEC).search == SearchOptions(enabled=True)  # the demo spec searches
    assert SearchOptions().enabled is False and SearchOptions().budget_seconds == 120.0
    spec = categorical_spec(KEYS, search={"keep": ["sex"], "max_level": 2, "methods": ["recode", "local_suppression"],
                                          "budget_seconds": 30, "loss": "topsis"})
    assert spec.search == SearchOptions(enabled=True, keep=("sex",), max_level=2,
                                        methods=("recode", "local_suppression"), budget_seconds=30.0, loss="topsis")
    assert categorical_spec(KEYS, search={"enabled": False}).search.enabled is False
    # every method but the opt-in ones (mv_top_coding, issue 37) by default
    assert set(SearchOptions().methods) == set(SEARCH_METHODS) - {"mv_top_coding"}
    assert categorical_spec(KEYS, search={"enabled": True}).search.methods == SearchOptions().methods


@pytest.mark.parametrize(("search", "message"), [
    ({"keep": ["age"]}, r"search.keep names 'age', which is not a variable of the spec \(the variables: "),
    ({"keep": ["sampling_weight"]}, r"search.keep: expected categorical keys of the spec .* got \['sampling_weight'\]"),
    ({"max_level": -1}, r"search.max_level \(0: no recoding\): must be an integer >= 0, got -1"),
    ({"methods": ["pram"]}, "search.methods: expected a non-empty list of methods"),
    ({"budget_seconds": 0}, "search.budget_seconds: must be a number > 0, got 0"),
    ({"loss": "sse"}, "search.loss: must be one of 'lambda_arctan', 'topsis', got 'sse'"),
    ({"enabled": "yes"}, "search.enabled: must be true or false, got 'yes'"),
    ({"depth": 2}, "search.depth: unknown key"),
])
def test_bad_search_section_is_a_spec_error(search, message):
    with pytest.raises(SpecError, match=message):
        categorical_spec(KEYS, search=search)


# --- the search space --------------------------------------------------------------------------

def test_age_bands_are_nested_round_and_named_as_globalRecode_names_them():
    ages = pd.Series(np.r_[np.arange(0, 96), np.full(200, 30)], name="age")
    levels = key_hierarchy(ages, Variable("age", "categorical_key", "nominal")).levels
    assert levels[0].groups == tuple((a,) for a in ages.value_counts().index)
    words = [level.words for level in levels]
    assert words[1].startswith("tails coded") and words[2].startswith("bands cut at multiples of 5:")
    assert "(20,25]" in words[2]
    assert words[3].startswith("bands cut at multiples of 10:") and words[4].startswith("bands cut at multiples of 20:")
    assert "(20,40]" in words[4]
    band_10 = {group for group in levels[3].groups}
    assert (21, 22, 23, 24, 25, 26, 27, 28, 29, 30) in band_10
    for finer, coarser in zip(levels[1:], levels[2:]):  # each level coarsens the one before
        where = {c: i for i, g in enumerate(coarser.groups) for c in g}
        assert all(len({where[c] for c in g}) == 1 for g in finer.groups)
    assert levels[3].step("age")["method"] == "recode"


def test_rare_nominal_categories_merge_into_one_named_other_group():
    # 1,000 records: b, c, e are under 0.5 % (5 records), f under 10 % (100 records)
    counts = {"a": 500, "b": 2, "c": 3, "d": 400, "e": 4, "f": 91}
    values = pd.Series(np.repeat(list(counts), list(counts.values())), name="occupation")
    levels = key_hierarchy(values, Variable("occupation", "categorical_key", "nominal")).levels
    assert [level.step("occupation") for level in levels[1:]] == [
        {"method": "recode", "variable": "occupation", "groups": [["b", "c", "e"]], "names": ["Other (b, c, e)"]},
        {"method": "recode", "variable": "occupation", "groups": [["b", "c", "e", "f"]], "names": ["Other (4 categories)"]},
    ]
    assert "merged into 'Other (b, c, e)'" in levels[1].words


def test_keep_and_max_level_restrict_the_space(testdata):
    spec = categorical_spec(KEYS, search={"keep": ["relat"], "max_level": 1})
    space = search_space(testdata, spec)
    assert len(space["relat"].levels) == 1
    assert all(len(h.levels) <= 2 for h in space.values())
    assert len(search_space(testdata, categorical_spec(KEYS, search={"methods": ["local_suppression"]}))["roof"].levels) == 1


# --- the search ----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize(("k", "max_global_risk"), [(3, 0.01), (3, 0.0008), (5, 0.0005), (2, 0.0015)])
def test_pruned_front_equals_the_exhaustive_front_on_testdata(testdata, k, max_global_risk):
    spec = categorical_spec(KEYS, k=k, max_global_risk=max_global_risk)
    pruned = search_wave(testdata, spec)
    full = search_wave(testdata, spec, exhaustive=True)
    assert full.nodes_evaluated == full.nodes_total == 36 and full.exhaustive
    assert pruned.nodes_evaluated <= full.nodes_evaluated
    assert front_points(pruned) == front_points(full)
    assert pruned.recommended.plan == full.recommended.plan


def check_recommended(data, spec, result):
    """The recommended plan as the release runs it: k-anonymous, every blocking check passed, the
    loss the chain measures, risks in [0, 1]."""
    plan = result.recommended.plan
    assert plan.name == SEARCHED_PLAN
    protected = protection.protect(data, spec, plan, wave="w").data
    checks = protection.release_checks(protected, spec, plan, original=data)
    assert protection.blocking_failures(checks) == {}
    if spec.categorical_keys:
        assert k_anonymity_violations(protected, spec.categorical_keys, spec.risk.k) == 0
    assert result.recommended.loss == pytest.approx(evaluation.headline_loss(data, protected, spec)["lambda_arctan"], abs=1e-12)
    for candidate in result.candidates:
        assert 0 <= candidate.global_risk <= 1 and 0 <= candidate.loss <= 1
    for candidate in result.front:
        assert candidate.reaches_target and candidate.k_violations == 0


def test_recommended_plan_passes_the_release_checks_and_the_front_is_explained(testdata):
    spec = categorical_spec(KEYS, max_global_risk=0.0008)
    result = search_wave(testdata, spec)
    check_recommended(testdata, spec, result)
    frame = result.front_frame()
    assert list(frame.columns) == ["plan", "steps", "global_risk", "k_violations", "linkage_risk", "loss",
                                   "suppressed", "recommended"]
    assert frame["recommended"].sum() == 1 and frame["loss"].is_monotonic_increasing
    assert result.runner_up is None or result.runner_up.loss >= result.recommended.loss
    assert result.stricter is None or result.stricter["target"] == 0.0004
    assert set(result.space) == set(KEYS) and result.space["water"][0] == "original (8 categories)"
    assert result.bound and result.seconds > 0
    # the report's words: a node named by the keys it recodes, never its internal id (a new user read
    # "proven node 0_4_0_2_3_2_2_1" and "rolled-up classes" in the report)
    # 458: a tenth (max_suppressed_share) of testdata's 4,580 records; the original levels need least loss
    assert ("classes smaller than k hold at most 458 records (max_suppressed_share of the records), the plan "
            "recoding no key, evaluated first") in result.bound
    assert not re.search(r"node \d+_", result.bound) and "rolled-up" not in result.bound


def test_progress_counts_the_walk_up_to_every_node_with_the_best_so_far(testdata):
    """The plain progress callback of the lattice walk: (nodes settled, nodes in all, note), the
    counts increasing at most a tenth of the lattice apart and ending at the total; the note names
    the best candidate so far, whose loss never rises."""
    spec = categorical_spec(KEYS, k=1, max_global_risk=1.0)
    calls = []
    result = search_wave(testdata, spec, exhaustive=True, progress=lambda *call: calls.append(call))
    total = result.nodes_total
    assert total > 10 and all(t == total for _, t, _ in calls)
    walk = [done for done, _, note in calls if "best so far" in note]
    assert walk[-1] == total and all(b > a for a, b in zip(walk, walk[1:]))
    assert all(b - a <= np.ceil(0.1 * total) for a, b in zip([0, *walk], walk))  # every 10 % at least
    assert [done for done, _, _ in calls] == sorted(done for done, _, _ in calls)  # never backwards
    losses = [float(note.split("lambda_arctan ")[1].split(",")[0]) for _, _, note in calls if "best so far" in note]
    assert losses and losses == sorted(losses, reverse=True)
    assert losses[-1] == pytest.approx(min(c.loss for c in result.candidates if c.reaches_target), rel=1e-3)
    assert calls[-1][2].startswith(f"done: {result.nodes_evaluated} of {total} nodes evaluated")
    assert progress_line(120, 1200, "best so far: x") == "plan search: 120 of 1,200 nodes (10 %); best so far: x"
    # the confirmation names each plan in words, never by its node's internal name (a new user's find)
    confirmed = [note for _, _, note in calls if "passes the release checks" in note or ": fails " in note]
    assert confirmed and not any(note.startswith("node_") for note in confirmed)


def test_progress_of_a_walk_the_loss_bound_stops_ends_at_the_total(testdata):
    """The nodes the loss bound rules out are settled: the walk's last count is the total."""
    spec = categorical_spec(KEYS, k=1, max_global_risk=1.0)  # the keys as they are meet the stricter target
    calls = []
    result = search_wave(testdata, spec, progress=lambda *call: calls.append(call))
    assert not result.exhaustive and result.bound.startswith("loss bound")
    bound = [call for call in calls if "loss bound" in call[2]]
    assert len(bound) == 1 and bound[0][0] == bound[0][1] == result.nodes_total
    left = int(result.bound.split("loss bound: ")[1].split(" nodes")[0].replace(",", ""))
    assert f"the other {left:,} nodes cannot enter the front" in bound[0][2] and 0 < left < result.nodes_total


def test_recode_only_loss_is_the_chains_loss(testdata):
    """The loss bound's additivity: a recode-only node's loss, summed from per-key figures, equals
    headline_loss of the plan as apply_plan runs it."""
    spec = categorical_spec(KEYS, k=1, max_global_risk=1.0)
    result = search_wave(testdata, spec, exhaustive=True)
    recode_only = [c for c in result.candidates if all(s["method"] == "recode" for s in c.plan.steps)]
    assert len(recode_only) == 36
    for candidate in recode_only[::5]:
        protected = apply_plan(testdata, candidate.plan.steps, keys=KEYS, random_state=0).data
        assert candidate.loss == pytest.approx(evaluation.headline_loss(testdata, protected, spec)["lambda_arctan"], abs=1e-12)


@pytest.mark.slow
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4), target=st.sampled_from([0.02, 0.05, 0.1]))
def test_pruned_front_equals_exhaustive_front_on_random_files(seed, k, target):
    rng = np.random.default_rng(seed)
    n = 300
    data = pd.DataFrame({
        "region": rng.choice([11, 12, 13, 21, 22, 31], n, p=[0.4, 0.05, 0.02, 0.3, 0.2, 0.03]),
        "age": rng.integers(15, 80, n),
        "sex": rng.integers(1, 3, n),
        "tenure": rng.choice([1, 2, 3, 4, 5], n, p=[0.6, 0.3, 0.05, 0.03, 0.02]),
    })
    spec = categorical_spec(list(data.columns), k=k, max_global_risk=target, weight=None)
    pruned = search_wave(data, spec)
    full = search_wave(data, spec, exhaustive=True)
    # (issue 38: when no plan of the keys' own levels passes, both search again with the keys' tops,
    # without suppression; a node of that lattice that is not k-anonymous is settled, not evaluated)
    assert full.nodes_evaluated == full.nodes_total <= 400 or "searched again with each key's top" in full.bound
    assert front_points(pruned) == front_points(full)
    if full.recommended is not None:
        check_recommended(data, spec, pruned)


@pytest.mark.slow
def test_searched_plan_beats_the_demo_plans_on_testdata(testdata):
    """Done when (issue 22): on sdcMicro's testdata with k = 3, the searched plan has no more loss
    than each bundled demo plan that meets the target (every blocking check), both measured by the
    chain's headline_loss on the variants as the release runs them."""
    spec = load_spec(EXAMPLE_SPEC)
    result = search_wave(testdata, spec, wave="w")
    check_recommended(testdata, spec, result)
    losses = {}
    for plan in spec.plans:
        protected = protection.protect(testdata, spec, plan, wave="w").data
        if not protection.blocking_failures(protection.release_checks(protected, spec, plan, original=testdata)):
            losses[plan.name] = evaluation.headline_loss(testdata, protected, spec)["lambda_arctan"]
    assert set(losses) == {"suppress_k3", "recode_suppress"}  # perturb fails linkage_risk
    assert all(result.recommended.loss <= loss + 1e-15 for loss in losses.values()), (result.recommended.loss, losses)
    assert result.recommended.loss < losses["recode_suppress"]


@pytest.mark.slow
def test_the_searched_variant_is_released_as_the_search_protected_it(testdata):
    """The search keeps the protection of the plan it recommends, and of no other candidate; it is
    the protection a replay of the plan gives (steps and seeds), and the searched variant takes it
    (and the checks) instead of protecting the wave again (issue 23)."""
    from unittest import mock

    from sdc_dagster.search.outcome import plan_search

    spec = load_spec(EXAMPLE_SPEC)
    found = search_wave(testdata, spec, wave="w")
    assert [c.protected is not None for c in found.front] == [True] + [False] * (len(found.front) - 1)
    outcome = plan_search(found, spec)
    replayed = protection.protect(testdata, spec, outcome.plan, wave="w")
    pd.testing.assert_frame_equal(outcome.protected.data, replayed.data)
    assert outcome.protected.steps == replayed.steps
    with mock.patch.object(protection, "protect", side_effect=AssertionError("protected again")):
        variant = protection.protect_variant(testdata, spec, outcome.plan, wave="w", checks=outcome.checks,
                                             protected=outcome.protected)
    pd.testing.assert_frame_equal(variant.data, replayed.data)


def test_topsis_loss_option_compares_plans_on_the_mean_topsis_loss(testdata):
    spec = categorical_spec(KEYS, max_global_risk=0.0008, search={"loss": "topsis", "max_level": 1})
    result = search_wave(testdata, spec)
    assert result.exhaustive and "every node evaluated" in result.bound  # no loss bound for TOPSIS
    plan = result.recommended.plan
    protected = protection.protect(testdata, spec, plan, wave="").data
    assert result.recommended.loss == pytest.approx(evaluation.headline_loss(testdata, protected, spec)["topsis_mean"], abs=1e-12)
    assert min(c.loss for c in result.front) == result.recommended.loss


@pytest.mark.slow
def test_a_candidate_failing_linkage_only_is_suppressed_to_a_larger_k(testdata):
    """testdata under a 12 % linkage target: no continuous step after local suppression to k=3
    passes (records alone in their key combination keep their amounts), so the search suppresses to
    2k and finds the weakest microaggregation that passes there."""
    spec = load_spec(EXAMPLE_SPEC)
    # the variance limit aside (microaggregation to a 12 % linkage loses half the variance): the
    # suppression ladder is what is tested
    spec = dataclasses.replace(spec, risk=dataclasses.replace(spec.risk, max_linkage_risk=0.12),
                               limits=dataclasses.replace(spec.limits, max_variance_change=1.0))
    strongest = {"method": "microaggregation", "columns": spec.continuous_keys, "k": 10,
                 "strata": spec.categorical_keys}
    plain = Plan(name=SEARCHED_PLAN, steps=({"method": "local_suppression", "k": 3}, strongest), k=3, random_state=1)
    checks = protection.release_checks(protection.protect(testdata, spec, plain, wave="2024").data, spec, plain,
                                   original=testdata)
    assert set(protection.blocking_failures(checks)) == {"linkage_risk"}

    found = search_wave(testdata, spec, wave="2024")
    steps = found.recommended.plan.steps
    assert {"method": "local_suppression", "k": 6} in steps and steps[-1]["method"] == "microaggregation"
    protected = protection.protect(testdata, spec, found.recommended.plan, wave="2024").data
    replayed = protection.release_checks(protected, spec, found.recommended.plan, original=testdata)
    assert not protection.blocking_failures(replayed) and replayed["linkage_risk"].value <= 0.12
    assert "local suppression to 6-anonymity" in found.recommended.plan.description


@pytest.mark.parametrize(("passes_from", "tried", "kept"), [
    (0, [2, 0], 0),          # the middle passes: the strongest step is not run
    (1, [2, 0, 1], 1),
    (3, [2, 5, 3], 3),       # the middle fails: the strongest is run, then the bisection goes on above it
    (5, [2, 5, 3, 4], 5),
    (None, [2, 5], 5),       # nothing passes: the strongest step's failing attempt
])
def test_weakest_passing_bisects_from_the_middle_and_finishes_only_the_step_it_returns(passes_from, tried, kept):
    from sdc_dagster.search.ladder import weakest_passing

    @dataclasses.dataclass(frozen=True)
    class Attempt:  # the bisection reads the release checks (risk checks only, the utility limits aside)
        step: int
        checks: dict

    runs, finished = [], []

    def run(step):
        runs.append(step)
        passed = passes_from is not None and step >= passes_from
        return Attempt(step, {"linkage_risk": protection.CheckOutcome(passed, 0.0, "rule", True)}), f"data of {step}"

    def finish(attempt, protected):
        finished.append((attempt.step, protected))
        return attempt

    result = weakest_passing(list(range(6)), run, lambda: False, finish)
    assert runs == tried and result.step == kept and finished == [(kept, f"data of {kept}")]


@pytest.mark.parametrize("max_global_risk, weight, risk_suppression", [
    (0.01, "sampling_weight", False), (0.0005, "sampling_weight", True), (0.02, None, True)])
def test_every_candidate_has_the_figures_of_its_plan_as_the_release_runs_it(testdata, max_global_risk, weight,
                                                                          risk_suppression):
    """The walk evaluates nodes on the keys' codes (recoded once per level, suppressed on codes,
    counted on renumbered codes); each candidate's k-anonymity violations, global risk, suppressed
    values and loss are, to the bit, those of its plan run by apply_plan on the data (local and
    risk-based suppression, weights, missing key values)."""
    spec = categorical_spec(KEYS, k=3, max_global_risk=max_global_risk, weight=weight)
    result = search_wave(testdata, spec, exhaustive=True)
    methods = {s["method"] for c in result.candidates for s in c.plan.steps}
    assert "local_suppression" in methods and ("risk_suppression" in methods) == risk_suppression
    for candidate in result.candidates[::4]:
        protected = apply_plan(testdata, candidate.plan.steps, keys=KEYS, random_state=0).data
        table = risk_table(protected, KEYS, weight=weight)
        assert candidate.k_violations == k_anonymity_violations(protected, KEYS, 3)
        assert candidate.global_risk == float(table["risk"].mean())
        suppressed = int((protected[KEYS].isna() & testdata[KEYS].notna()).to_numpy().sum())
        assert candidate.suppressed == suppressed
        if suppressed:
            assert candidate.loss == evaluation.headline_loss(testdata, protected, spec)["lambda_arctan"]


def test_lattice_codes_are_the_key_digits_of_the_recoded_keys(testdata):
    """A node's digits, taken from the codes of each key's level, are key_digits of the recoded keys."""
    spec = categorical_spec(KEYS)
    space = search_space(testdata, spec)
    lattice = CodedLattice(testdata, spec, space)
    deepest = tuple(len(h.levels) - 1 for h in space.values())
    for node in [tuple(0 for _ in space), deepest, tuple(level // 2 for level in deepest)]:
        digits, radices = lattice.digits(node)
        recoded = pd.DataFrame({key: lattice.values[key][level] for key, level in zip(KEYS, node)})
        expected_digits, expected_radices = key_digits(recoded, KEYS)
        np.testing.assert_array_equal(digits, expected_digits)
        np.testing.assert_array_equal(radices, expected_radices)


def test_bands_clipped_to_the_data_are_not_called_wider_than_they_are():
    # the methodologist's trial: PSID1976's ages (30-60) were described as "20-wide bands: [30,40]
    # (40,60]" although [30,40] is 10 wide; the words name the cut points, which are true of every band
    ages = pd.Series(np.r_[np.arange(30, 61), np.full(50, 45)], name="age")
    levels = key_hierarchy(ages, Variable("age", "categorical_key", "nominal")).levels
    words = [level.words for level in levels if "multiples of 20" in level.words]
    assert words == ["bands cut at multiples of 20: 2 bands: [30,40], (40,60]"]
    assert not any("-wide" in level.words for level in levels)
