"""Issue 38: the plan search's lattice stage reads each node's classes rolled up from the records
counted once and proves its optimum.

Expected values come from brute force: every level vector of hand-built hierarchies run as an
ordinary plan (recode steps with the hierarchy's groups) through the release checks, the least
headline loss among those with no blocking failure; and from ARX's adult extract (tests/data/arx_adult,
ARX's own hierarchy files).
"""

import dataclasses
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sdc_dagster.pipeline import evaluation, protection
from sdc_dagster.search.outcome import search_summary
from sdc_dagster.search.wave import search_wave
from sdc_dagster.spec import Plan, parse_spec

ADULT = Path(__file__).resolve().parent / "data" / "arx_adult"


def nested_levels(categories: list[int], rng: np.random.Generator) -> list[list[list[int]]]:
    """Levels of a hierarchy over ``categories``, each strictly coarser than the one before (cut
    points dropped at random), the last one every category in one group."""
    cuts = sorted(rng.choice(np.arange(1, len(categories)), size=len(categories) - 1, replace=False).tolist())
    levels = []
    while cuts:
        cuts = sorted(rng.choice(cuts, size=rng.integers(0, len(cuts)), replace=False).tolist())
        bounds = [0, *cuts, len(categories)]
        levels.append([categories[a:b] for a, b in zip(bounds, bounds[1:])])
    return levels


def recode_plan(levels_of: dict[str, list], node: tuple[int, ...], k: int) -> Plan:
    steps = []
    for (key, levels), level in zip(levels_of.items(), node):
        if level == 0:
            continue
        merged = [g for g in levels[level - 1] if len(g) > 1]
        steps.append({"method": "recode", "variable": key, "groups": merged, "names": [f"{g[0]}-{g[-1]}" for g in merged]})
    return Plan(name="brute", steps=tuple(steps), k=k, random_state=1)


def brute_force(data: pd.DataFrame, spec, levels_of: dict[str, list]) -> float:
    """The least headline loss of the plans of the lattice that pass every blocking release check.

    The search's lattice leaves out each key's top (every category in one group: the key withheld)
    and takes it in only when no plan of the other levels passes (search_wave's ``withhold``); so
    does the brute force."""
    own_levels = {key: levels[:-1] for key, levels in levels_of.items()}
    best = least_passing_loss(data, spec, own_levels)
    return best if np.isfinite(best) else least_passing_loss(data, spec, levels_of)


def least_passing_loss(data: pd.DataFrame, spec, levels_of: dict[str, list]) -> float:
    best = np.inf
    for node in product(*[range(len(levels) + 1) for levels in levels_of.values()]):
        plan = recode_plan(levels_of, node, spec.risk.k)
        protected = protection.protect(data, spec, plan, wave="w").data
        if not protection.blocking_failures(protection.release_checks(protected, spec, plan, original=data)):
            best = min(best, evaluation.headline_loss(data, protected, spec)["lambda_arctan"])
    return best


def hierarchy_spec(data, rng, *, k, target, methods):
    """A spec whose keys are every column of ``data``, nominal, each with random nested levels
    (:func:`nested_levels`, drawn from ``rng``), and the search allowed ``methods``; with the levels."""
    levels_of = {key: nested_levels(sorted(data[key].unique().tolist()), rng) for key in data.columns}
    spec = parse_spec({
        "survey": "t",
        "variables": {key: {"role": "categorical_key", "scale": "nominal", "hierarchy": {"levels": levels}}
                      for key, levels in levels_of.items()},
        "risk": {"k": k, "max_global_risk": target},
        "search": {"enabled": True, "methods": methods, "budget_seconds": 120},
    })
    return spec, levels_of


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), k=st.integers(2, 5), target=st.sampled_from([0.05, 0.1, 0.2]))
# every plan meeting k = 2 and 5 % by recoding releases 2 or 3 of the 3 keys as one category: none passes
@example(seed=0, k=2, target=0.05)
# found by hypothesis: nodes 2_0_2 and 2_5_0 tie at 0.44222..., the recommended one's loss measured on the
# released file 1 ulp above the other's summed on its codes: the optimum is proven (losses within 1e-12 tie)
@example(seed=7587, k=2, target=0.1)
def test_search_over_hierarchies_finds_the_brute_force_optimum(seed, k, target):
    """Recodes along given hierarchies, no suppression: the search's recommended loss is the least
    loss of every plan of the lattice that passes the release checks, and it says it is proven; when no
    plan passes (the limit of keys not released rules out the plans with most keys at their top,
    issues 34, 38), the search recommends none either."""
    rng = np.random.default_rng(seed)
    n = 150
    data = pd.DataFrame({
        "region": rng.choice(np.arange(1, 7), n, p=[0.4, 0.05, 0.05, 0.3, 0.15, 0.05]),
        "age": rng.integers(1, 8, n),
        "tenure": rng.choice(np.arange(1, 6), n, p=[0.6, 0.25, 0.08, 0.05, 0.02]),
    })
    spec, levels_of = hierarchy_spec(data, rng, k=k, target=target, methods=["recode"])
    found = search_wave(data, spec)
    expected = brute_force(data, spec, levels_of)
    assert (found.recommended is None) == (not np.isfinite(expected))
    if found.recommended is None:
        return
    assert found.recommended.loss == pytest.approx(expected, abs=1e-12)
    assert found.proven and search_summary(found)["optimality"] == f"optimal over {found.nodes_total:,} plans"


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4), target=st.sampled_from([0.05, 0.1]))
@example(seed=0, k=2, target=0.05)  # no plan of the keys' own levels passes: the keys' tops are searched too
# found by hypothesis: the walk preferred region at its top (scored 0.31, its 40 % of records coded as
# the top's smallest member read as unchanged) to (2, 1) with suppression (0.497), which the search of
# every node recommends; a key released as one category now counts as total loss of it (headline_loss)
@example(seed=1, k=2, target=0.05)
@example(seed=101, k=2, target=0.05)  # every node evaluated, the wider lattice's plan (age at its top) competes
def test_search_with_local_suppression_over_hierarchies_equals_every_node_evaluated(seed, k, target):
    """With local suppression the classes settle no node that needs it: the walk (loss bound, rolled
    classes) recommends the plan of the search that evaluates every node."""
    rng = np.random.default_rng(seed)
    n = 150
    data = pd.DataFrame({"region": rng.choice(np.arange(1, 7), n, p=[0.4, 0.05, 0.05, 0.3, 0.15, 0.05]),
                         "age": rng.integers(1, 8, n)})
    spec, _ = hierarchy_spec(data, rng, k=k, target=target, methods=["recode", "local_suppression"])
    found, every = search_wave(data, spec), search_wave(data, spec, exhaustive=True)
    assert every.exhaustive  # every node evaluated or settled by its classes (in each lattice searched)
    assert (found.recommended is None) == (every.recommended is None)
    if every.recommended is not None:
        assert found.recommended.levels == every.recommended.levels
        assert found.recommended.loss == pytest.approx(every.recommended.loss, abs=1e-12)


def adult_spec(**search):
    data = pd.read_csv(ADULT / "adult.csv", sep=";")
    keys = [c for c in data.columns if c != "salary-class"]
    spec = parse_spec({
        "survey": "adult",
        "variables": {**{key: {"role": "categorical_key", "scale": "nominal",
                               "hierarchy": {"file": str(ADULT / f"adult_hierarchy_{key}.csv")}} for key in keys},
                      "salary-class": {"role": "sensitive", "scale": "nominal"}},
        "risk": {"k": 5, "max_global_risk": 0.05},
        "search": {"enabled": True, "budget_seconds": 120, **search},
    })
    return data, spec


@pytest.mark.slow
def test_search_settles_the_whole_lattice_of_the_adult_hierarchies():
    """ARX's adult extract with ARX's hierarchies, k = 5, recodes only: every node of the lattice is
    settled (evaluated, or shown by its classes not to reach the target, or beyond the loss bound)
    and the plan is proven optimal."""
    data, spec = adult_spec(methods=["recode"])
    # ARX's lattice has no limit of keys not released: within the default (at most 4 of the 8 keys at
    # their top, "*") no node meets k = 5 and 5 % by recoding alone, every node settled to show it
    within = search_wave(data, spec, withhold=True)
    assert within.recommended is None and within.exhaustive
    assert all(c.keys_not_released_share > 0.5 for c in within.candidates if c.k_violations == 0
               and c.global_risk <= 0.05)
    spec = dataclasses.replace(spec, limits=dataclasses.replace(spec.limits, max_keys_not_released=1.0))
    calls = []
    # with each key's top: ARX's lattice of these eight keys (the levels of the files, "*" included)
    found = search_wave(data, spec, withhold=True, progress=lambda *call: calls.append(call))
    assert found.nodes_total == 2 * 5 * 2 * 3 * 4 * 3 * 3 * 3
    assert found.proven and found.recommended is not None
    walk_end = [call for call in calls if call[1] == found.nodes_total and call[0] == call[1]]
    assert walk_end, "the walk never reported every node settled"
    assert found.nodes_evaluated < found.nodes_total  # the classes settle most nodes without an evaluation


def test_a_missing_key_value_matches_any_value_in_the_search():
    """SPEC §2.4: a missing value matches any value. The 6 records below are 3-anonymous as they
    are (f = 3, 3, 6, 4, 4, 4: the record missing region matches every record), though their
    region classes {1: 2, missing: 1, 2: 3} are not; the search keeps the keys as they are, with
    global risk (1/3 + 1/3 + 1/6 + 3/4) / 6 = 19/72."""
    data = pd.DataFrame({"region": [1, 1, np.nan, 2, 2, 2], "sex": [1, 1, 1, 1, 1, 1]})
    spec = parse_spec({
        "survey": "t",
        "variables": {"region": {"role": "categorical_key", "scale": "nominal", "hierarchy": {"levels": [[[1, 2]]]}},
                      "sex": {"role": "categorical_key", "scale": "nominal"}},
        "risk": {"k": 3, "max_global_risk": 0.5},
        "search": {"enabled": True, "methods": ["recode"], "budget_seconds": 60},
    })
    found = search_wave(data, spec)
    assert found.recommended is not None and found.recommended.levels == (0, 0)
    assert found.recommended.global_risk == pytest.approx(19 / 72, abs=1e-12)
    assert found.recommended.k_violations == 0


def brute_flash(data: pd.DataFrame, levels_of: dict[str, list], lower: np.ndarray, *, k: int, target: float,
                suppressible: int) -> int | None:
    """The node (numbered with the first key most significant) of least (``lower``, number) among those
    whose records, recoded by pandas from the hand-built ``levels_of``, form classes of which those
    smaller than k hold at most ``suppressible`` records and, with ``suppressible`` 0, whose global
    risk without weights (classes over records, SPEC §3.3 with risk 1/f) is at most ``target``."""
    best = None
    chains = [[[[c] for c in sorted(data[key].unique())], *levels] for key, levels in levels_of.items()]
    for number, node in enumerate(product(*[range(len(chain)) for chain in chains])):
        recoded = pd.DataFrame({key: data[key].map({c: g[0] for g in chain[level] for c in g})
                                for (key, chain), level in zip(zip(levels_of, chains), node)})
        sizes = recoded.groupby(list(recoded.columns)).size()
        if sizes[sizes < k].sum() > suppressible:
            continue
        if not suppressible and len(sizes) / len(data) > target:
            continue
        if best is None or (lower[number], number) < (lower[best], best):
            best = number
    return best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), k=st.integers(2, 5), target=st.sampled_from([0.05, 0.1, 0.3]),
       suppressible=st.sampled_from([0, 5, 20]))
def test_flash_finds_the_brute_force_node_on_random_hierarchies(seed, k, target, suppressible):
    """The plan search's Flash passes (predictive tagging on rolled-up classes) find the node a
    brute force over every level vector finds, for any loss values (drawn at random: the traversal
    may not rely on them being monotone), and say the result is proven."""
    from sdc_dagster.search.coded import CodedLattice, RolledCounts, lattice_nodes
    from sdc_dagster.search.nodes import flash_node
    from sdc_dagster.search.space import search_space

    rng = np.random.default_rng(seed)
    n = 120
    data = pd.DataFrame({"region": rng.choice(np.arange(1, 7), n, p=[0.4, 0.05, 0.05, 0.3, 0.15, 0.05]),
                         "age": rng.integers(1, 8, n), "tenure": rng.choice(np.arange(1, 5), n, p=[0.6, 0.3, 0.07, 0.03])})
    spec, levels_of = hierarchy_spec(data, rng, k=k, target=target, methods=["recode", "local_suppression"])
    space = search_space(data, spec)
    # the keys' own levels: the given ones but the top (every category in one group)
    levels_of = {key: levels[:-1] for key, levels in levels_of.items()}
    assert [[sorted(map(sorted, level.groups)) for level in h.levels[1:]] for h in space.values()] == [
        [sorted(map(sorted, level)) for level in levels] for levels in levels_of.values()]
    lattice = CodedLattice(data, spec, space)
    nodes = lattice_nodes(space)
    lower = rng.random(len(nodes)).round(2)  # ties too
    found = flash_node(lattice, RolledCounts(lattice), nodes, lower, spec, 60.0, lambda *_: None,
                       suppressible=suppressible)
    expected = brute_flash(data, levels_of, lower, k=k, target=target, suppressible=suppressible)
    assert found.optimal
    if expected is None:
        assert found.value == np.inf
    else:
        assert (found.node, found.value) == (expected, lower[expected])
