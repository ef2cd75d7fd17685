"""Issue 38: local suppression priced from a node's frequency table (sdc_dagster.search.pricing) is
exactly local suppression of its records.

Expected values come from brute force: ``local_suppression`` (the public function, sdcMicro's
``localSuppression`` with its default importance) run on the records of every node of small random
lattices, its suppressed values counted per key (``suppression_counts``)."""

from itertools import product

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdc_dagster.keys import key_digits
from sdc_dagster.protect.suppression import local_suppression, suppress_codes_to_k, suppression_counts
from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts
from sdc_dagster.search.coded import CodedLattice, RolledCounts
from sdc_dagster.search.nodes import evaluate_node
from sdc_dagster.search.pricing import price_local_suppression
from sdc_dagster.search.space import search_space
from sdc_dagster.spec import parse_spec
from tests.test_search_lattice import nested_levels


def _lattice(seed: int, n: int, keys: int, k: int):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 8, keys)
    data = pd.DataFrame({f"k{j}": rng.integers(1, size + 1, n) for j, size in enumerate(sizes)})
    variables = {}
    for key in data.columns:
        levels = nested_levels(sorted(data[key].unique().tolist()), rng)
        # a key the few records show in one category has no level to climb
        variables[key] = {"role": "categorical_key", "scale": "nominal", **({"hierarchy": {"levels": levels}} if levels else {})}
    spec = parse_spec({"survey": "t", "variables": variables, "risk": {"k": k, "max_global_risk": 0.5},
                       "search": {"enabled": True, "methods": ["recode", "local_suppression"]}})
    space = search_space(data, spec)
    return data, spec, space, CodedLattice(data, spec, space)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), n=st.integers(8, 120), keys=st.integers(2, 4), k=st.integers(2, 5))
def test_price_from_rolled_up_classes_is_local_suppression_of_every_node(seed, n, keys, k):
    """Every node of a random lattice: the values priced from its rolled-up classes (no pass over
    the records) are, key by key, those ``local_suppression`` suppresses in its records."""
    data, spec, space, lattice = _lattice(seed, n, keys, k)
    rolled = RolledCounts.of(lattice)
    for node in product(*[range(len(h.levels)) for h in space.values()]):
        classes = rolled.classes(node)
        radices = lattice.digits(node)[1]
        price = price_local_suppression(classes.codes + 1, classes.counts, radices, k)
        recoded = pd.DataFrame({key: lattice.values[key][level] for key, level in zip(lattice.keys, node)})
        brute = suppression_counts(recoded, local_suppression(recoded, lattice.keys, k=k), lattice.keys)
        assert price.exact
        assert price.values.tolist() == brute.tolist(), node


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), n=st.integers(5, 150), keys=st.integers(1, 5), k=st.integers(2, 6),
       missing=st.sampled_from([0.0, 0.1, 0.3]))
def test_classes_suppressed_are_the_records_suppressed(seed, n, keys, k, missing):
    """With missing values too (they match any value, SPEC §2.4): each record's key after
    suppression of its class is what ``suppress_codes_to_k`` gives it on the records, and the
    classes' frequencies afterwards are the records'."""
    rng = np.random.default_rng(seed)
    data = pd.DataFrame({f"k{j}": pd.array(rng.integers(1, int(rng.integers(2, 6)) + 1, n), dtype="Float64")
                         for j in range(keys)})
    for column in data:
        data[column] = data[column].mask(rng.random(n) < missing)
    if n < k:
        return
    digits, radices = key_digits(data, list(data.columns))
    expected, _ = suppress_codes_to_k(digits, radices, k=k)
    table = IncrementalCompatibleCounts(digits, radices)
    price = price_local_suppression(table.table, table.count, radices, k)
    assert (price.table[table.record_key] == expected).all()
    assert price.values.tolist() == ((expected == 0) & (digits > 0)).sum(axis=0).tolist()
    f_records = IncrementalCompatibleCounts(expected, radices).record_counts()[0]
    assert (price.counter.record_counts()[0][table.record_key] == f_records).all()
    assert (f_records >= k).all()


def test_more_than_eight_keys_are_priced_as_a_bound():
    """Nine keys: local suppression's method "auto" also runs sdcMicro's record-by-record
    algorithm, so the price from the classes is not exact and says so."""
    rng = np.random.default_rng(0)
    table = rng.integers(1, 3, (30, 9))
    price = price_local_suppression(table, np.ones(30), np.full(9, 3), 2)
    assert not price.exact
    assert ((price.table == 0) & (table > 0)).sum() == price.total > 0


def test_a_node_evaluated_says_its_suppression_was_priced_from_its_classes():
    """evaluate_node runs local suppression on the node's classes: its candidate says so, and its
    suppressed values are local_suppression's on the recoded records."""
    data, spec, space, lattice = _lattice(5, 60, 3, 3)
    node = (0, 0, 0)
    candidate = evaluate_node(data, spec, lattice, space, node, False, 0.0)
    recoded = pd.DataFrame({key: lattice.values[key][0] for key in lattice.keys})
    brute = suppression_counts(recoded, local_suppression(recoded, lattice.keys, k=3), lattice.keys)
    assert brute.sum() > 0
    assert candidate.suppression_priced == "classes" and candidate.suppressed == brute.sum()
    anonymous = evaluate_node(data, spec, lattice, space, tuple(len(h.levels) - 1 for h in space.values()), True, 0.0)
    assert anonymous.suppression_priced == "" and anonymous.suppressed == 0
