"""Contributions of variables to risk (SPEC §6), checked against definitions computed by brute force.

The oracle below is deliberately naive and independent of the engine: it builds every record's
game coalition by coalition from pandas group sizes and O(n^2) neighbour counts, then evaluates
the Shapley, Nowak–Radzik solidarity (through A_v(S)) and ESL formulas of SPEC §6.4 literally.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sdc_dagster.pipeline import evaluation
from sdc_dagster.pipeline import risk as pipeline_risk
from sdc_dagster.risk.contribution import contribution_values, contributions, esl_coefficients, game_values
from sdc_dagster.errors import SDCInputError
from sdc_dagster.synthetic.survey import SIMULATION_PRECISION, simulate_survey
from sdc_dagster.spec.sources import read_wave_file
from sdc_dagster.spec import load_spec, parse_spec

# --- the oracle -------------------------------------------------------------------------------------


def oracle_games(data, categorical, continuous, precision, k, omega=None):
    """Per record a dict frozenset(S) -> v_i(S), by the literal definition of SPEC §6.5 and §5.8
    (pairwise: a categorical NaN matches anything, a continuous NaN is safe and nobody's neighbour)."""
    n = len(data)
    players = [*categorical, *continuous]
    unsafe_cont = {}
    for c in continuous:
        x = data[c].to_numpy(float)
        p = precision[c]
        lo, hi = np.minimum((1 - p) * x, (1 + p) * x), np.maximum((1 - p) * x, (1 + p) * x)
        inside = (x[None, :] >= lo[:, None]) & (x[None, :] <= hi[:, None])  # False for any NaN
        eta = inside.sum(axis=1) - 1
        flag = eta < k
        if omega is not None:
            flag |= np.floor(omega * eta) < k
        unsafe_cont[c] = flag & ~np.isnan(x)
    freq = {}
    for r in range(1, len(categorical) + 1):
        for sub in itertools.combinations(categorical, r):
            values = data[list(sub)].to_numpy(float)
            missing = np.isnan(values)
            same = (values[:, None, :] == values[None, :, :]) | missing[:, None, :] | missing[None, :, :]
            freq[frozenset(sub)] = same.all(axis=2).sum(axis=1)
    games = []
    for i in range(n):
        game = {}
        for r in range(len(players) + 1):
            for S in itertools.combinations(players, r):
                cat = frozenset(s for s in S if s in categorical)
                win = (bool(cat) and freq[cat][i] < k) or any(unsafe_cont[c][i] for c in S if c in continuous)
                game[frozenset(S)] = 1.0 if win else 0.0
        games.append(game)
    return players, games


def truth_tables(players, games):
    """The games as game_values' truth tables: column sum_{j in S} 2^j holds v(S)."""
    m = len(players)
    return np.array(
        [[g[frozenset(p for j, p in enumerate(players) if S >> j & 1)] for S in range(1 << m)] for g in games]
    )


def oracle_shapley(players, v):
    m = len(players)
    out = []
    for j in players:
        others = [p for p in players if p != j]
        total = 0.0
        for r in range(m):
            for S in itertools.combinations(others, r):
                S = frozenset(S)
                total += math.factorial(r) * math.factorial(m - r - 1) / math.factorial(m) * (v[S | {j}] - v[S])
        out.append(total)
    return out


def oracle_solidarity(players, v):
    """Nowak–Radzik: Sol_j = sum_{S ∋ j} (s-1)!(m-s)!/m! · A_v(S), A_v(S) = mean marginal in S."""
    m = len(players)
    out = []
    for j in players:
        total = 0.0
        for r in range(1, m + 1):
            for S in itertools.combinations(players, r):
                if j not in S:
                    continue
                S = frozenset(S)
                average = sum(v[S] - v[S - {x}] for x in S) / r
                total += math.factorial(r - 1) * math.factorial(m - r) / math.factorial(m) * average
        out.append(total)
    return out


def oracle_esl(players, v, q):
    """phi_j = sum_{S ⊆ M\\{j}} s!(m-s-1)!/m! (q_{s+1} v(S∪j) - q_s v(S)), q_0 = 0, q_m = 1."""
    m = len(players)
    out = []
    for j in players:
        others = [p for p in players if p != j]
        total = 0.0
        for r in range(m):
            for S in itertools.combinations(others, r):
                S = frozenset(S)
                total += math.factorial(r) * math.factorial(m - r - 1) / math.factorial(m) * (q[r + 1] * v[S | {j}] - q[r] * v[S])
        out.append(total)
    return out


def oracle_global(players, games, per_record):
    unsafe = [i for i, g in enumerate(games) if g[frozenset(players)] == 1.0]
    if not unsafe:
        return np.zeros(len(players))
    return np.mean([per_record[i] for i in unsafe], axis=0)


# --- random small data ------------------------------------------------------------------------------


@st.composite
def small_surveys(draw, missing=False):
    """Small frames; with ``missing``, each value is NaN with a drawn probability (SPEC §5.8)."""
    h = draw(st.integers(0, 4))
    c = draw(st.integers(0 if h >= 2 else 2 - h, min(3, 6 - h)))
    n = draw(st.integers(3, 25))
    data = {}
    for j in range(h):
        levels = draw(st.integers(1, 3))
        data[f"C{j}"] = draw(st.lists(st.integers(0, levels), min_size=n, max_size=n))
    pool = [-12.0, -10.0, -3.0, 0.0, 0.0, 1.0, 1.02, 5.0, 5.1, 10.0, 10.2, 100.0]
    for j in range(c):
        data[f"Y{j}"] = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    frame = pd.DataFrame(data, index=pd.RangeIndex(100, 100 + n))
    if missing:
        share = draw(st.sampled_from([0.1, 0.3, 0.6]))
        holes = draw(st.lists(st.floats(0, 1), min_size=n * (h + c), max_size=n * (h + c)))
        frame = frame.astype(float).mask(np.array(holes).reshape(n, h + c) < share)
    precision = {f"Y{j}": draw(st.sampled_from([0.01, 0.05, 0.2])) for j in range(c)}
    k = draw(st.integers(1, 4))
    return frame, [f"C{j}" for j in range(h)], [f"Y{j}" for j in range(c)], precision, k


@settings(max_examples=40, deadline=None)
@given(small_surveys(), st.lists(st.floats(-1.0, 2.0), min_size=5, max_size=5))
def test_values_agree_with_brute_force_definitions(survey, q_tail):
    data, categorical, continuous, precision, k = survey
    before = data.copy()
    players, games = oracle_games(data, categorical, continuous, precision, k)
    m = len(players)
    q_user = q_tail[: m - 1]
    q_full = [0.0, *q_user, 1.0]
    q_one_over_s = [0.0] + [1.0 / s for s in range(1, m)] + [1.0]
    cases = {
        "shapley": [oracle_shapley(players, g) for g in games],
        "solidarity": [oracle_solidarity(players, g) for g in games],
        "esl_1_over_s": [oracle_esl(players, g, q_one_over_s) for g in games],
    }
    for value, expected in [*cases.items(), (q_user, [oracle_esl(players, g, q_full) for g in games])]:
        per_record, global_ = contributions(data, categorical, continuous, precision, k=k, value=value)
        assert list(per_record.columns) == players
        assert per_record.index.equals(data.index)
        np.testing.assert_allclose(per_record.to_numpy(), np.array(expected), rtol=0, atol=1e-12)
        np.testing.assert_allclose(global_.to_numpy(), oracle_global(players, games, expected), rtol=0, atol=1e-12)
    pd.testing.assert_frame_equal(data, before)


@settings(max_examples=40, deadline=None)
@given(small_surveys(), st.sampled_from(["shapley", "solidarity"]))
def test_axioms_on_risk_games(survey, value):
    """Efficiency, non-negativity (monotone games), null / A-null players get 0, symmetry."""
    check_axioms(survey, value)


@settings(max_examples=40, deadline=None)
@given(small_surveys(missing=True), st.sampled_from(["shapley", "solidarity"]))
def test_axioms_on_risk_games_with_missing_values(survey, value):
    """The same axioms when the quasi-identifiers carry NA (SPEC §5.8)."""
    check_axioms(survey, value)


def check_axioms(survey, value):
    data, categorical, continuous, precision, k = survey
    players, games = oracle_games(data, categorical, continuous, precision, k)
    per_record, global_ = contributions(data, categorical, continuous, precision, k=k, value=value)
    values = per_record.to_numpy()
    grand = np.array([g[frozenset(players)] for g in games])
    np.testing.assert_allclose(values.sum(axis=1), grand, atol=1e-12)  # efficiency
    assert (values >= -1e-15).all()  # monotone game, monotone value
    expected_total = 1.0 if grand.any() else 0.0
    assert global_.sum() == pytest.approx(expected_total, abs=1e-12)
    for i, g in enumerate(games):
        for j, pj in enumerate(players):
            rest = [p for p in players if p != pj]
            subsets = [frozenset(S) for r in range(len(rest) + 1) for S in itertools.combinations(rest, r)]
            if value == "shapley" and all(g[S | {pj}] == g[S] for S in subsets):  # null player
                assert values[i, j] == pytest.approx(0.0, abs=1e-12)
            if value == "solidarity":  # A-null player: A_v(S) = 0 for every S containing j
                a_null = all(sum(g[S | {pj}] - g[(S | {pj}) - {x}] for x in S | {pj}) == 0 for S in subsets)
                if a_null:
                    assert values[i, j] == pytest.approx(0.0, abs=1e-12)
            for jj in range(j + 1, len(players)):  # symmetric players get equal payoffs
                pk = players[jj]
                both = [p for p in players if p not in (pj, pk)]
                subs = [frozenset(S) for r in range(len(both) + 1) for S in itertools.combinations(both, r)]
                if all(g[S | {pj}] == g[S | {pk}] for S in subs):
                    assert values[i, j] == pytest.approx(values[i, jj], abs=1e-12)


def test_weighted_games_use_w_star_with_omega():
    data = pd.DataFrame(
        {
            "A": [1, 1, 1, 2, 2, 2, 2],
            "Y": [100.0, 101.0, 102.0, 150.0, 151.0, 152.0, 153.0],
            "Z": [5.0, 5.0, 5.0, 5.0, 9.0, 9.0, 9.0],
            "w": [0.5, 0.6, 2.0, 1.0, 1.0, 0.4, 3.0],
        }
    )
    precision = {"Y": 0.05, "Z": 0.01}
    players, games = oracle_games(data, ["A"], ["Y", "Z"], precision, 2, omega=data["w"].to_numpy())
    expected = [oracle_shapley(players, g) for g in games]
    per_record, _ = contributions(data, ["A"], ["Y", "Z"], precision, k=2, weight="w")
    np.testing.assert_allclose(per_record.to_numpy(), expected, atol=1e-12)
    # A constant omega overrides the weight column; omega = 1 gives back the census game.
    plain, _ = contributions(data, ["A"], ["Y", "Z"], precision, k=2)
    same, _ = contributions(data, ["A"], ["Y", "Z"], precision, k=2, weight="w", omega=1.0)
    pd.testing.assert_frame_equal(plain, same)
    assert not np.allclose(plain.to_numpy(), per_record.to_numpy())


# --- missing values (SPEC §5.8) ---------------------------------------------------------------------

NA_GOLDEN = json.loads((Path(__file__).parent / "data" / "missing" / "combined_risk_na.json").read_text())


@pytest.mark.parametrize("case", NA_GOLDEN["cases"], ids=lambda c: f"h{len(c['categorical'])}_c{len(c['continuous'])}")
def test_missing_values_match_independent_brute_force(case):
    """Shapley and solidarity, per record and global, of tests/data/missing (independent brute force)."""
    data = pd.DataFrame({c: pd.array(v, dtype="Float64") for c, v in case["data"].items()})
    before = data.copy()
    args = (data, case["categorical"], case["continuous"], case["precision"])
    results = contribution_values(*args, k=case["k"], values=("shapley", "solidarity"))
    players = [*case["categorical"], *case["continuous"]]
    for value in ("shapley", "solidarity"):
        per_record, global_ = results[value]
        expected = case["expected"][value]
        np.testing.assert_allclose(per_record.to_numpy(), expected["per_record"], rtol=0, atol=1e-11)
        np.testing.assert_allclose(global_[players].to_numpy(), [expected["global"][p] for p in players], rtol=0, atol=1e-11)
        single, single_global = contributions(*args, k=case["k"], value=value)
        pd.testing.assert_frame_equal(single, per_record)
        pd.testing.assert_series_equal(single_global, global_)
    pd.testing.assert_frame_equal(data, before)


def test_spec_5_8_worked_example():
    """SPEC §5.8 EXPECTED: only record 4 (2, NA) is unsafe; Shapley (1, 0), solidarity (0.75, 0.25)."""
    data = pd.DataFrame({"a": ["1", "1", "1", "2", None], "b": ["1", "1", None, None, None]})
    results = contribution_values(data, ["a", "b"], [], {}, k=3)
    for value, row in (("shapley", [1.0, 0.0]), ("solidarity", [0.75, 0.25])):
        per_record, global_ = results[value]
        expected = np.zeros((5, 2))
        expected[3] = row
        np.testing.assert_allclose(per_record.to_numpy(), expected, atol=1e-15)
        np.testing.assert_allclose(global_.to_numpy(), row, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(small_surveys(missing=True))
def test_values_with_missing_agree_with_brute_force_over_coalitions(survey):
    """Random small frames with NA: both values of the one pass equal game_values on the oracle's
    truth tables and the literal Shapley / solidarity formulas."""
    data, categorical, continuous, precision, k = survey
    before = data.copy()
    players, games = oracle_games(data, categorical, continuous, precision, k)
    tables = truth_tables(players, games)
    results = contribution_values(data, categorical, continuous, precision, k=k, values=("shapley", "solidarity", [0.5] * (len(players) - 1)))
    oracles = {"shapley": oracle_shapley, "solidarity": oracle_solidarity}
    for value in ("shapley", "solidarity"):
        per_record, global_ = results[value]
        expected = game_values(tables, value)
        np.testing.assert_allclose(per_record.to_numpy(), expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(per_record.to_numpy(), [oracles[value](players, g) for g in games], rtol=0, atol=1e-12)
        np.testing.assert_allclose(global_.to_numpy(), oracle_global(players, games, expected), rtol=0, atol=1e-12)
    np.testing.assert_allclose(results[2][0].to_numpy(), game_values(tables, [0.5] * (len(players) - 1)), rtol=0, atol=1e-12)
    pd.testing.assert_frame_equal(data, before)


@pytest.mark.parametrize("share_missing", [0.0, 0.2])
@pytest.mark.parametrize("dense_cell_limit, block_cells", [(2**23, 2**22), (2**23, 40), (0, 2**22), (0, 40)])
def test_every_counting_method_and_block_size(monkeypatch, share_missing, dense_cell_limit, block_cells):
    """The lattice, per-subset grouping (complete keys) and clash-set (keys with NA) methods of
    subset_frequencies.subset_compatible_counts, in one block and in many, agree with the oracle."""
    monkeypatch.setattr("sdc_dagster.risk.subset_frequencies.DENSE_CELL_LIMIT", dense_cell_limit)
    monkeypatch.setattr("sdc_dagster.risk.contribution._BLOCK_CELLS", block_cells)
    rng = np.random.default_rng(11)
    n = 60
    data = pd.DataFrame({f"C{j}": rng.integers(0, 3, n).astype(float) for j in range(4)})
    data["Y"] = rng.choice([1.0, 1.01, 2.0, 5.0, 5.05, 9.0], n)
    data = data.mask(rng.random(data.shape) < share_missing)
    categorical, continuous, precision = ["C0", "C1", "C2", "C3"], ["Y"], {"Y": 0.02}
    players, games = oracle_games(data, categorical, continuous, precision, 3)
    tables = truth_tables(players, games)
    results = contribution_values(data, categorical, continuous, precision, k=3)
    for value in ("shapley", "solidarity"):
        np.testing.assert_allclose(results[value][0].to_numpy(), game_values(tables, value), rtol=0, atol=1e-12)


def test_survey_functions_on_testdata_with_missing_key_values():
    """The issue's wave: 5% of five key variables of sdcMicro's testdata set missing."""
    spec = load_spec(Path(__file__).parents[1] / "examples" / "testdata.yaml")
    data = read_wave_file(spec, Path(__file__).parent / "data" / "sdcmicro" / "testdata.csv")
    rng = np.random.default_rng(5)
    for column in ["roof", "walls", "water", "relat", "income"]:
        data[column] = data[column].mask(rng.random(len(data)) < 0.05)
    found = pipeline_risk.risk_contributions(data, spec)
    per_record, overall, notes = found.per_record, found.global_, found.notes
    players = [*spec.categorical_keys, *spec.continuous_keys]
    assert notes == []
    assert list(overall.columns) == ["shapley", "solidarity"] and list(overall.index) == players
    np.testing.assert_allclose(overall.sum(), [1.0, 1.0], atol=1e-12)
    for value in ("shapley", "solidarity"):
        totals = per_record[[f"{value}_{p}" for p in players]].sum(axis=1).to_numpy()
        assert np.isin(np.round(totals, 12), [0.0, 1.0]).all()  # efficiency: v_i(M) is 0 or 1
    scores = pipeline_risk.risk_scores(data, spec)
    assert scores.table[["combined_categorical", "combined_continuous", "combined_risk"]].notna().all().all()
    assert 0 < scores.figures["combined_global_risk"] < 1


# --- generic game values ----------------------------------------------------------------------------


def test_two_player_closed_forms():
    """SPEC §6.4: n = 2, Sol_i = v(N)/2 + (v(i) - v(j))/4 and Shapley with /2."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        v1, v2, v12 = rng.normal(size=3)
        table = np.array([0.0, v1, v2, v12])
        np.testing.assert_allclose(game_values(table, "shapley"), [v12 / 2 + (v1 - v2) / 2, v12 / 2 + (v2 - v1) / 2], atol=1e-14)
        np.testing.assert_allclose(game_values(table, "solidarity"), [v12 / 2 + (v1 - v2) / 4, v12 / 2 + (v2 - v1) / 4], atol=1e-14)


def test_game_values_brute_force_on_random_games():
    rng = np.random.default_rng(3)
    m = 5
    players = list(range(m))
    tables = rng.normal(size=(4, 1 << m))
    tables[:, 0] = 0.0
    q = [0.0, 0.3, -0.2, 1.5, 0.9, 1.0]
    for t in tables:
        v = {frozenset(S): t[sum(1 << j for j in S)] for r in range(m + 1) for S in itertools.combinations(players, r)}
        np.testing.assert_allclose(game_values(t, "shapley"), oracle_shapley(players, v), atol=1e-12)
        np.testing.assert_allclose(game_values(t, "solidarity"), oracle_solidarity(players, v), atol=1e-12)
        np.testing.assert_allclose(game_values(t, q[1:-1]), oracle_esl(players, v, q), atol=1e-12)


def test_unanimity_game_values():
    """u_T: Shapley gives 1/|T| to members of T and 0 elsewhere (textbook value)."""
    m = 4
    table = np.array([1.0 if (S & 0b0110) == 0b0110 else 0.0 for S in range(1 << m)])
    np.testing.assert_allclose(game_values(table), [0.0, 0.5, 0.5, 0.0], atol=1e-15)


def test_esl_coefficients():
    np.testing.assert_allclose(esl_coefficients("shapley", 3), [0, 1, 1, 1])
    np.testing.assert_allclose(esl_coefficients("solidarity", 3), [0, 1 / 2, 1 / 3, 1])
    np.testing.assert_allclose(esl_coefficients("esl_1_over_s", 3), [0, 1, 1 / 2, 1])
    np.testing.assert_allclose(esl_coefficients([0.2, 0.7], 3), [0, 0.2, 0.7, 1])
    with pytest.raises(SDCInputError, match="value"):
        esl_coefficients([0.2], 3)
    with pytest.raises(SDCInputError, match="value"):
        esl_coefficients("banzhaf", 3)


# --- behaviour on the §5.7 simulation and edge cases ------------------------------------------------


def test_simulation_contributions_resemble_published_table():
    """SPEC §6.7 (orientation only): averaged over 10 draws of the §5.7 design, global Shapley is
    near the published figures; the published "solidarity" row is matched by ESL with q_s = 1/s
    better than by Nowak–Radzik (SPEC §13 item 10); solidarity is flatter than Shapley."""
    cat, cont = ["X1", "X2", "X3", "X4"], ["X5", "X6", "X7"]
    draws = {"shapley": [], "solidarity": [], "esl_1_over_s": []}
    for seed in range(10):
        data = simulate_survey(random_state=seed)
        for value, store in draws.items():
            _, global_ = contributions(data, cat, cont, SIMULATION_PRECISION, value=value)
            assert global_.sum() == pytest.approx(1.0, abs=1e-12)
            store.append(global_)
    mean = {value: pd.concat(store, axis=1).mean(axis=1) for value, store in draws.items()}
    published_shapley = np.array([0.0697, 0.1698, 0.1627, 0.1794, 0.1745, 0.0301, 0.2139])
    published_solidarity = np.array([0.1133, 0.1357, 0.1342, 0.1380, 0.1747, 0.1126, 0.1915])
    np.testing.assert_allclose(mean["shapley"], published_shapley, atol=0.04)
    np.testing.assert_allclose(mean["esl_1_over_s"], published_solidarity, atol=0.02)
    distance = {v: np.abs(mean[v].to_numpy() - published_solidarity).sum() for v in ("solidarity", "esl_1_over_s")}
    assert distance["esl_1_over_s"] < distance["solidarity"]
    assert mean["solidarity"].std() < mean["shapley"].std()  # "Shapley values are more differentiated"


def test_no_unsafe_record_gives_zero_global():
    data = pd.DataFrame({"A": [1] * 6, "B": [2] * 6, "Y": [10.0] * 6})
    per_record, global_ = contributions(data, ["A", "B"], ["Y"], {"Y": 0.1}, k=3)
    assert (per_record.to_numpy() == 0).all()
    assert (global_ == 0).all()


def test_only_categorical_or_only_continuous():
    data = pd.DataFrame({"A": [1, 1, 2, 2, 2], "B": [1, 2, 1, 1, 1], "Y": [1.0, 1.0, 1.0, 5.0, 9.0], "Z": [1.0, 2.0, 3.0, 4.0, 5.0]})
    per_record, _ = contributions(data, ["A", "B"], [], {}, k=2)
    # record 0: key (1,1) unique, A alone (f=2) and B alone (f=4) safe: both needed, 1/2 each
    np.testing.assert_allclose(per_record.iloc[0], [0.5, 0.5])
    per_record, _ = contributions(data, [], ["Y", "Z"], {"Y": 0.01, "Z": 0.01}, k=1)
    # Y = 1 has two neighbours (safe); Y = 5, 9 and every Z are alone (unsafe): an unsafe
    # variable alone takes the whole risk, two unsafe variables share it equally
    np.testing.assert_allclose(per_record.to_numpy(), [[0, 1], [0, 1], [0, 1], [0.5, 0.5], [0.5, 0.5]])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(categorical=["A"], continuous=[]), "at least 2"),
        (dict(categorical=["A", "nope"], continuous=["Y"]), "nope"),
        (dict(categorical=["A"], continuous=["Y"], precision={}), "'Y'"),
        (dict(categorical=["A"], continuous=["Y"], precision={"Y": 1.5}), "'Y'"),
        (dict(categorical=["A"], continuous=["Y"], k=0), "k"),
        (dict(categorical=["A"], continuous=["S"], precision={"S": 0.1}), "'S'.*numeric"),
        (dict(categorical=["A"], continuous=["Y", "Y"]), "twice"),
    ],
)
def test_bad_input(kwargs, match):
    data = pd.DataFrame({"A": [1, 2, 2], "Y": [1.0, 2.0, 3.0], "S": ["a", "b", "c"]})
    args = dict(categorical=["A"], continuous=["Y"], precision={"Y": 0.1}) | kwargs
    with pytest.raises(SDCInputError, match=match):
        contributions(data, args.pop("categorical"), args.pop("continuous"), args.pop("precision"), **args)


def test_more_keys_than_the_games_support_are_noted_not_fatal():
    """Issue 21: a wide file (17 categorical keys, one more than MAX_CATEGORICAL) has no Shapley or
    solidarity values; the stage notes why and returns empty tables, and the residual
    contributions are empty too, instead of aborting the wave."""
    keys = [f"k{j:02d}" for j in range(17)]
    raw = {"survey": "wide", "title": "t", "source": {"path": "x.csv"},
           "variables": {k: {"role": "categorical_key", "scale": "nominal"} for k in keys},
           "plans": {"p": {"steps": [{"method": "local_suppression", "k": 2}]}}}
    spec = parse_spec(yaml.safe_load(yaml.safe_dump(raw)))
    data = pd.DataFrame(np.random.default_rng(17).integers(1, 3, size=(40, 17)), columns=keys)
    found = pipeline_risk.risk_contributions(data, spec)
    per_record, overall, notes = found.per_record, found.global_, found.notes
    assert per_record.shape == (40, 0) and overall.empty and list(overall.columns) == ["shapley", "solidarity"]
    assert [(n.measure, n.status) for n in notes] == [("risk contributions (Shapley, solidarity)", "not applicable")]
    assert "at most 16 categorical variables" in notes[0].reason
    assert evaluation.residual_contributions(overall, {"p": data}, spec).empty


def test_the_contract_path_names_the_module_of_risk():
    """CONTRACT.md's import of the contributions keeps working after the module moved to ``risk/`` (issue 35)."""
    import sdc_dagster.contribution as contract  # move_modules: keep (CONTRACT.md's path)
    import sdc_dagster.risk.contribution as module

    assert contract.contributions is module.contributions
    assert contract.contribution_values is module.contribution_values
