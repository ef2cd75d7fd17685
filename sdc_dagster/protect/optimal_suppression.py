"""Optimal local suppression to k-anonymity: an integer programme solved with HiGHS (SPEC §8.3, §2.4).

Every record releases its key with a *suppression pattern* S (the set of key variables set to
missing). The records are grouped by distinct key u (c_u records each); the decision variables are
x[u, S], the number of records of key u released with pattern S, and the objective is the total
cost of the suppressed values, sum x[u, S] · cost(S).

The constraints are a condition sufficient for k-anonymity with missing values matching any value
(SPEC §2.4): every count below is a count of records that are compatible with the record it
protects, so its real f_k can only be larger.

* A record released with pattern S != {} publishes the partial key (S, v), v its values on the
  keys not in S. The records publishing (S, v) or a refinement of it (a pattern S' contained in
  S with the same values v) number at least k whenever any record publishes (S, v): the groups of
  the task's formulation, widened to the refinements, which are compatible too.
* A record of a key u released complete (S = {}) has at least k compatible records among the
  records of u and the records released with any pattern S' whose values agree with u on the
  keys outside S' (except S' = all keys: §2.4 and sdcMicro do not count a key missing in every
  variable for complete keys).

DECISION: keys with c_u >= k are released complete (they are k-anonymous as they are; letting them
suppress could only help other records through the complete-key condition, at the price of a far
larger programme); the programme decides for the other keys. This restriction and the sufficient
condition make the optimum an upper bound of the true minimum under §2.4 (which also credits
partial overlaps between two suppressed records). The frequencies are those of alpha = 1 (every
compatible record counts fully); the result is checked with the §2.4 counter
(:func:`sdc_dagster.risk.k_anonymity_violations`) in the tests.

Cost of suppressing key j: 1 + (m - 1 - p_j) / m², p_j its position in ``importance`` (0 = the most
important key), so the objective counts suppressions first and prefers less important keys on
ties; a whole record costs less than one extra suppression more.

NOTE (measured on sdcMicro's testdata, 7 keys): without ``max_suppressed`` the optimum is
degenerate. Under §2.4 a record released with one observed key (say sex = 1) is compatible with
every complete record of that sex, so two such records make every record 2-anonymous: k = 2, 3, 5
need only 12, 24 and 48 suppressions, all in 2, 4 and 8 records with 6 of 7 keys missing. That is
what the §2.4 measure rewards, not what a user usually wants; ``max_suppressed=2`` gives 73, 120
and 215 suppressions spread over 58, 87 and 143 records (greedy :func:`local_suppression`: 105,
182, 317; sdcMicro 5.8.1: 157, 293, 500).

Solved with ``scipy.optimize.milp`` (HiGHS). The objective, HiGHS's lower (dual) bound and the
relative gap are reported; when the time limit stops HiGHS the best solution found is used, and if
there is none the greedy :func:`sdc_dagster.protect.suppression.local_suppression` result is
returned (status "heuristic").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from sdc_dagster.errors import SDCInputError
from sdc_dagster.keys import key_columns, key_digits, pack_codes
from sdc_dagster.protect.suppression import apply_suppression, suppression_ranks, local_suppression
from sdc_dagster.validation import check_scalar


@dataclass(frozen=True)
class OptimalSuppression:
    """Result of :func:`optimal_local_suppression`.

    ``data``: the protected copy. ``suppressions``: values suppressed. ``objective``: the cost of
    the solution (see the module notes). ``lower_bound``: HiGHS's bound on the optimal cost of the
    programme (0 when HiGHS stopped before finding one). ``gap``: (objective - lower_bound) /
    objective. ``status``: "optimal", "time_limit"
    (best solution found when the limit stopped HiGHS) or "heuristic" (no solution found in time;
    the greedy result is returned and ``lower_bound`` is still HiGHS's). ``seconds``: solver time.
    """

    data: pd.DataFrame
    suppressions: int
    objective: float
    lower_bound: float
    gap: float
    status: str
    seconds: float


def _patterns(m: int, max_suppressed: int) -> list[tuple[int, ...]]:
    return [s for size in range(0, max_suppressed + 1) for s in combinations(range(m), size)]


def optimal_local_suppression(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    k: int = 3,
    importance: Sequence[str] | None = None,
    max_suppressed: int | None = None,
    time_limit: float = 60.0,
) -> OptimalSuppression:
    """Suppress key values so that every record's §2.4 f_k is at least k, at minimum cost.

    SPEC §8.3 (local suppression) with the §2.4 frequencies; the integer programme of the module
    notes, solved by HiGHS.

    Parameters
    ----------
    data : the microdata; not modified. The keys must be complete (no missing value).
    keys : the categorical key variables.
    k : the k-anonymity threshold (at most the number of records).
    importance : the keys in the order they should be kept (first = suppressed least). Default as
        sdcMicro and :func:`~sdc_dagster.protect.local_suppression`: fewer categories = more important.
    max_suppressed : largest number of keys suppressed in one record (default all; fewer makes
        the programme smaller but may make it infeasible).
    time_limit : seconds given to HiGHS.

    Returns
    -------
    :class:`OptimalSuppression`.
    """
    keys = key_columns(data, keys)
    check_scalar(k, "k", integer=True, low=1)
    if k > len(data):
        raise SDCInputError(f"parameter k: {k}-anonymity is impossible with {len(data)} records")
    missing = [key for key in keys if data[key].isna().any()]
    if missing:
        raise SDCInputError(f"key variable {missing[0]!r} has missing values; optimal suppression needs complete keys")
    m = len(keys)
    max_suppressed = m if max_suppressed is None else int(max_suppressed)
    if not 1 <= max_suppressed <= m:
        raise SDCInputError(f"parameter max_suppressed must lie in 1..{m} (got {max_suppressed!r})")
    if not time_limit > 0:
        raise SDCInputError(f"parameter time_limit must be positive (got {time_limit!r})")
    # rank 0 = suppressed first; the most important key costs 1 + (m-1)/m²
    key_cost = 1.0 + suppression_ranks(data, keys, importance) / m**2

    digits, radices = key_digits(data, keys)
    distinct, record_key, count = np.unique(digits, axis=0, return_inverse=True, return_counts=True)
    record_key = record_key.ravel()
    unsafe = np.flatnonzero(count < k)
    safe = np.flatnonzero(count >= k)
    if len(unsafe) == 0:
        return OptimalSuppression(data.copy(), 0, 0.0, 0.0, 0.0, "optimal", 0.0)
    patterns = _patterns(m, max_suppressed)
    problem = _Programme(distinct, radices, count, unsafe, safe, patterns, key_cost, k)
    solution = problem.solve(time_limit)

    if solution.x is None:
        protected = local_suppression(data, keys, k=k, importance=importance)
        suppressed = int(protected[keys].isna().to_numpy().sum())
        cost = float((protected[keys].isna().to_numpy() * key_cost).sum())
        bound = solution.lower_bound
        return OptimalSuppression(protected, suppressed, cost, bound, (cost - bound) / cost if cost else 0.0,
                                  "heuristic", solution.seconds)
    # the records of an unsafe key take its chosen patterns in the order of the patterns list:
    # the r-th record (in data order) takes the pattern whose cumulative count first exceeds r
    chosen = np.rint(solution.x[: problem.n_x]).astype(np.int64).reshape(len(unsafe), len(patterns))
    position = np.full(len(distinct), -1)
    position[unsafe] = np.arange(len(unsafe))
    records = np.flatnonzero(position[record_key] >= 0)
    owner = position[record_key[records]]
    rank = pd.Series(owner).groupby(owner).cumcount().to_numpy()
    pattern = (np.cumsum(chosen, axis=1)[owner] <= rank[:, None]).sum(axis=1)
    masks = np.array([[j in s for j in range(m)] for s in patterns], dtype=bool)
    released = digits.copy()  # key_digits: 0 = missing
    released[records] = np.where(masks[pattern], 0, released[records])
    protected = apply_suppression(data, keys, released, digits)
    suppressed = int((released == 0).sum())
    objective = float(solution.objective)
    gap = (objective - solution.lower_bound) / objective if objective else 0.0
    return OptimalSuppression(protected, suppressed, objective, solution.lower_bound, max(gap, 0.0),
                              solution.status, solution.seconds)


@dataclass(frozen=True)
class _Solution:
    x: np.ndarray | None
    objective: float
    lower_bound: float
    status: str
    seconds: float


class _Rows:
    """A sparse constraint matrix assembled block by block: its coefficients, each row's bounds, and
    the number of rows and variables so far."""

    def __init__(self, n_vars: int):
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.lower: list[np.ndarray] = []
        self.upper: list[np.ndarray] = []
        self.n_rows, self.n_vars = 0, n_vars

    def add(self, row_ids, col_ids, values) -> None:
        self.rows.append(np.asarray(row_ids, dtype=np.int64))
        self.cols.append(np.asarray(col_ids, dtype=np.int64))
        self.vals.append(np.asarray(values, dtype=float))

    def new_rows(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """The ids of ``len(lower)`` new rows bounded by ``lower`` .. ``upper``."""
        ids = self.n_rows + np.arange(len(lower))
        self.lower.append(lower)
        self.upper.append(upper)
        self.n_rows += len(lower)
        return ids

    def new_vars(self, n: int) -> np.ndarray:
        """The ids of ``n`` new (binary) variables."""
        ids = self.n_vars + np.arange(n)
        self.n_vars += n
        return ids

    def matrix(self) -> sparse.csr_matrix:
        return sparse.csr_matrix(
            (np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))),
            shape=(self.n_rows, self.n_vars))


class _Programme:
    """The integer programme of the module notes, built with numpy per pattern (not per record)."""

    def __init__(self, distinct, radices, count, unsafe, safe, patterns, key_cost, k):
        self.k = k
        self.m = distinct.shape[1]
        self.radices, self.patterns = radices, patterns
        n_u, n_p = len(unsafe), len(patterns)
        self.n_x = n_u * n_p
        self.x_of = np.arange(self.n_x).reshape(n_u, n_p)  # variable of (unsafe key, pattern)
        cost = np.array([key_cost[list(s)].sum() for s in patterns])
        self.cap = count[unsafe].astype(float)
        self.observed = [np.array([j for j in range(self.m) if j not in s], dtype=np.int64) for s in patterns]
        self.index_of = {s: i for i, s in enumerate(patterns)}
        rows = _Rows(self.n_x)
        # (a) every record of an unsafe key gets one pattern
        rows.add(rows.new_rows(self.cap, self.cap).repeat(n_p), self.x_of.ravel(), np.ones(self.n_x))
        self._group_rows(rows, distinct[unsafe], distinct[safe], count[safe])
        self._complete_key_rows(rows, distinct[unsafe])
        self.matrix = rows.matrix()
        self.lower, self.upper = np.concatenate(rows.lower), np.concatenate(rows.upper)
        n_vars = rows.n_vars
        self.cost = np.concatenate([np.tile(cost, n_u), np.zeros(n_vars - self.n_x)])
        self.var_upper = np.concatenate([np.tile(self.cap[:, None], (1, n_p)).ravel(), np.ones(n_vars - self.n_x)])

    def _project(self, rows: np.ndarray, pattern: int) -> np.ndarray:
        """The packed codes of ``rows`` on the variables ``pattern`` leaves observed."""
        columns = self.observed[pattern]
        if len(columns) == 0:
            return np.zeros(len(rows), dtype=np.int64)
        return pack_codes([rows[:, columns]], self.radices[columns])[0]

    def _group_rows(self, rows: _Rows, unsafe_digits: np.ndarray, safe_digits: np.ndarray,
                    safe_counts: np.ndarray) -> None:
        """(b) groups (S, v), S != {}: refinements (S' in S, same v) number >= k when the group is used."""
        k, cap, x_of = self.k, self.cap, self.x_of
        for p, pattern in enumerate(self.patterns):
            if not pattern:
                continue
            group_codes = self._project(unsafe_digits, p)
            groups, member_group = np.unique(group_codes, return_inverse=True)
            safe_codes = self._project(safe_digits, p)
            safe_in = pd.Series(safe_counts).groupby(safe_codes).sum()
            safe_count = safe_in.reindex(groups, fill_value=0).to_numpy()
            needs = safe_count < k
            if not needs.any():
                continue
            g_ids = np.flatnonzero(needs)
            z = rows.new_vars(len(g_ids))
            z_of_group = np.full(len(groups), -1)
            z_of_group[g_ids] = z
            members = np.flatnonzero(needs[member_group])
            # linking: x[u, S] <= c_u z_g
            link_rows = rows.new_rows(np.full(len(members), -np.inf), np.zeros(len(members)))
            rows.add(link_rows, x_of[members, p], np.ones(len(members)))
            rows.add(link_rows, z_of_group[member_group[members]], -cap[members])
            # count: sum over members and refinements S' of S of x[u', S'] - k z_g >= -safe_count
            count_row = np.full(len(groups), -1)
            count_row[g_ids] = rows.new_rows(-safe_count[g_ids].astype(float), np.full(len(g_ids), np.inf))
            refinements = [self.index_of[s] for s in self.patterns if set(s) <= set(pattern)]
            for q in refinements:
                rows.add(count_row[member_group[members]], x_of[members, q], np.ones(len(members)))
            rows.add(count_row[g_ids], z, np.full(len(g_ids), -float(k)))

    def _complete_key_rows(self, rows: _Rows, unsafe_digits: np.ndarray) -> None:
        """(c) complete release of an unsafe key u: compatible records >= k when used."""
        n_u = len(unsafe_digits)
        empty = self.index_of[()]
        z_empty = rows.new_vars(n_u)
        link_rows = rows.new_rows(np.full(n_u, -np.inf), np.zeros(n_u))
        rows.add(link_rows, self.x_of[:, empty], np.ones(n_u))
        rows.add(link_rows, z_empty, -self.cap)
        count_rows = rows.new_rows(np.zeros(n_u), np.full(n_u, np.inf))
        for p in range(len(self.patterns)):  # records released with pattern p that agree with u outside p
            if len(self.observed[p]) == 0 and self.m > 1:
                continue  # as sdcMicro, a key missing in every variable is not counted for complete keys
            codes = self._project(unsafe_digits, p)
            order = np.argsort(codes, kind="stable")
            sorted_codes = codes[order]
            start = np.searchsorted(sorted_codes, codes, side="left")
            stop = np.searchsorted(sorted_codes, codes, side="right")
            sizes = stop - start
            protected = np.repeat(np.arange(n_u), sizes)
            offsets = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            partner = order[np.repeat(start, sizes) + offsets]  # (distinct keys: {} pairs u with itself)
            rows.add(count_rows[protected], self.x_of[partner, p], np.ones(len(partner)))
        rows.add(count_rows, z_empty, np.full(n_u, -float(self.k)))

    def solve(self, time_limit: float) -> _Solution:
        start = time.perf_counter()
        result = milp(
            self.cost,
            integrality=np.ones(len(self.cost)),
            bounds=Bounds(np.zeros(len(self.cost)), self.var_upper),
            constraints=LinearConstraint(self.matrix, self.lower, self.upper),
            options={"time_limit": float(time_limit), "mip_rel_gap": 0.0},
        )
        seconds = time.perf_counter() - start
        bound = getattr(result, "mip_dual_bound", None)
        # costs are >= 0, so 0 is a valid bound when HiGHS has none yet
        bound = float(bound) if bound is not None and np.isfinite(bound) else 0.0
        if result.x is None:
            return _Solution(None, float("nan"), bound, "heuristic", seconds)
        status = "optimal" if result.status == 0 else "time_limit"
        if status == "optimal" and not np.isfinite(bound):
            bound = float(result.fun)
        return _Solution(result.x, float(result.fun), bound, status, seconds)
