"""Attribute-disclosure measures within key groups: l-diversity and t-closeness (SPEC §3.6, §3.7).

A record's group for l-diversity is the records its key matches, a missing key value matching any
value: the one notion of a missing key value, the one k-anonymity counts with (SPEC §2.4,
sdcMicro's ``freqCalc``; :func:`matched_l_diversity`). sdcMicro's ``ldiversity`` makes a missing
key value a value of its own instead (the NA-key rows of its test suite form one group): with
complete keys the two agree. t-closeness groups records by identical key. The group-by runs in
DuckDB; per-(group, value) counts and every score are then computed with vectorised numpy on the
counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.risk.frequencies import distinct_digit_keys, distinct_keys, matched_counts
from sdc_dagster.keys import category_codes, key_columns, key_digits
from sdc_dagster.validation import check_scalar


def _key_groups(data: pd.DataFrame, keys: list[str], con) -> tuple[np.ndarray, int]:
    groups = distinct_keys(data, keys, con=con)
    return groups.record_key, len(groups.count)


def _sensitive_columns(data: pd.DataFrame, keys: list[str], sensitive: str | Sequence[str]) -> list[str]:
    columns = require_columns(data, sensitive, role="sensitive variable")
    if not columns:
        raise SDCInputError("sensitive variables: the selection is empty; name at least one sensitive column")
    for column in columns:
        if column in keys:
            raise SDCInputError(f"sensitive variable {column!r} is also a key variable; it must not be")
    return columns


def _value_counts_by_group(group: np.ndarray, values: np.ndarray, n_groups: int):
    """Sorted (group, value code) pairs present among non-missing values, and their counts."""
    valid = values >= 0
    n_values = int(values.max()) + 1 if valid.any() else 1
    pair, count = np.unique(group[valid] * np.int64(n_values) + values[valid], return_counts=True)
    return pair // n_values, pair % n_values, count


def group_l_diversity(group: np.ndarray, n_groups: int, values: np.ndarray, recursive_c: float = 2.0) -> pd.DataFrame:
    """Distinct, entropy and recursive (c, l) diversity per record (columns ``distinct``,
    ``entropy``, ``recursive``, :func:`l_diversity`'s semantics) for one coded sensitive column:
    ``group``, each record's key group in 0..n_groups-1 (as :func:`~sdc_dagster.risk.frequencies.distinct_keys`
    numbers them), a group being exactly the records of one key; ``values``, the sensitive
    variable's category codes from 0, -1 for missing. For callers that group the records already
    (the plan search, per node of its lattice)."""
    pair_group, _, count = _value_counts_by_group(group, values, n_groups)
    size = np.bincount(group, minlength=n_groups).astype(np.float64)
    missing = np.bincount(group[values < 0], minlength=n_groups).astype(np.float64)
    return _group_scores(pair_group, count, size, missing, n_groups, recursive_c).iloc[group].reset_index(drop=True)


def _group_scores(pair_group: np.ndarray, count: np.ndarray, size: np.ndarray, missing: np.ndarray, n_groups: int,
                  recursive_c: float) -> pd.DataFrame:
    """Distinct, entropy and recursive (c, l) diversity per group from its sorted (group, value)
    pairs of non-missing values and their ``count``, each group's ``size`` (records, missing
    sensitive values included) and ``missing`` (records with a missing sensitive value)."""
    distinct = np.bincount(pair_group, minlength=n_groups)

    share = count / size[pair_group]
    plogp = np.bincount(pair_group, weights=share * np.log(share), minlength=n_groups).astype(np.float64)
    # sdcMicro: missing sensitive values are one extra category, unless they are all there is
    with_missing = (missing > 0) & (distinct > 0)
    missing_share = np.where(with_missing, missing / np.where(size > 0, size, 1.0), 1.0)
    plogp += np.where(with_missing, missing_share * np.log(missing_share), 0.0)
    entropy = np.exp(-plogp)

    # Recursive (c, l): counts sorted decreasingly r_1 >= ... >= r_d; score = 1 + #{l in 2..d :
    # r_1 < c (r_l + ... + r_d)} (the tail sums decrease in l, so this is sdcMicro's loop). sdcMicro
    # keeps c and the sums in single precision; so does this comparison.
    order = np.lexsort((-count, pair_group))
    sorted_group, sorted_count = pair_group[order], count[order]
    start = np.searchsorted(sorted_group, sorted_group, side="left")
    rank = np.arange(len(sorted_group)) - start
    cumulative = np.cumsum(sorted_count)
    before_group = cumulative[start] - sorted_count[start]
    total = np.bincount(pair_group, weights=count, minlength=n_groups)
    tail = total[sorted_group] - (cumulative - sorted_count - before_group)
    largest = sorted_count[start]
    holds = (rank >= 1) & (np.float32(recursive_c) * tail.astype(np.float32) > largest.astype(np.float32))
    recursive = 1 + np.bincount(sorted_group[holds], minlength=n_groups)
    recursive[np.bincount(pair_group, minlength=n_groups) == 0] = 0

    return pd.DataFrame(
        {
            "distinct": (distinct + with_missing).astype(np.int64),
            "entropy": entropy,
            "recursive": recursive.astype(np.int64),
        }
    )


def matched_l_diversity(digits: np.ndarray, radices: np.ndarray, values: np.ndarray, recursive_c: float = 2.0,
                        *, con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
    """Per record, :func:`group_l_diversity`'s scores over the records its key matches, a missing
    key value matching any value: the one notion of a missing key value that k-anonymity uses
    (SPEC §2.4, sdcMicro's ``freqCalc``, :func:`~sdc_dagster.risk.frequencies.compatible_counts`).
    An intruder cannot tell a record whose key value is suppressed from the records of any value,
    so its sensitive values are among those of every group it matches, and its own group's values
    are those of every key it matches (Hundepool et al. 2012, §3.3 on missing key values).

    For each sensitive category c, the records of c that match a key are counted by
    :func:`~sdc_dagster.risk.frequencies.matched_counts` on the counts of c per distinct key
    (:func:`~sdc_dagster.risk.frequencies.compatible_counts` with alpha 1, every category in one
    pass over the missingness patterns, none when no key value is missing): a complete key matches the keys with a
    missing value that agree with it where they are observed (the key missing in every variable
    only when there is one key variable, as sdcMicro's freqCalc counts it); a key with a missing
    value matches every key that agrees with it where both are observed; a key missing in every
    variable matches every record. ``digits``, ``radices`` as :func:`~sdc_dagster.keys.key_digits`
    codes the keys (0 missing); ``values`` the sensitive variable's category codes from 0, -1
    missing."""
    groups = distinct_digit_keys(digits, radices, con=con)
    n_groups = len(groups.count)
    category = values.astype(np.int64) + 1  # 0 = a missing sensitive value
    m = int(category.max()) + 1 if len(category) else 1
    counts = np.bincount(groups.record_key * m + category, minlength=n_groups * m).reshape(n_groups, m)
    matched = counts.astype(np.float64)
    if not (groups.digits > 0).all():
        present = np.flatnonzero(counts.sum(axis=0))  # one pattern pass for every category, never per record
        matched[:, present] = matched_counts(groups.digits, groups.radices, matched[:, present])
    pair_group, pair_value = np.nonzero(matched[:, 1:] > 0)  # row-major: sorted by group
    count = matched[pair_group, pair_value + 1]
    scores = _group_scores(pair_group.astype(np.int64), count, matched.sum(axis=1), matched[:, 0], n_groups,
                           float(recursive_c))
    return scores.iloc[groups.record_key].reset_index(drop=True)


def l_diversity(
    data: pd.DataFrame,
    keys: Sequence[str],
    sensitive: str | Sequence[str],
    *,
    recursive_c: float = 2,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """Per-record l-diversity of sensitive variables within the record's key group (SPEC §3.6): the
    records its key matches, a missing key value matching any value as for k-anonymity (SPEC §2.4,
    :func:`matched_l_diversity`; sdcMicro's ``ldiversity`` when no key value is missing).

    sdcMicro ``ldiversity`` scores, per sensitive variable:

    * ``distinct``: number of distinct values in the group; missing values count as one extra
      value when the group has other values (a group with only missing values scores 0);
    * ``entropy``: exp(-sum_v p_v ln p_v), p_v = share of value v among the group's records
      (missing values form one category when other values exist);
    * ``recursive``: recursive (c, l)-diversity with c = ``recursive_c``: with the value counts
      sorted r_1 >= ... >= r_d, the largest l in 2..d with r_1 < c (r_l + ... + r_d), else 1
      (0 for a group with only missing values, where sdcMicro leaves an undefined value).

    Parameters
    ----------
    data : the microdata (not modified).
    keys : the key variables defining the groups.
    sensitive : one column name (result columns ``distinct``, ``entropy``, ``recursive``), or a
        list of names (columns ``<name>_distinct``, ``<name>_entropy``, ``<name>_recursive``).
    recursive_c : the constant c (> 0), default 2 as in sdcMicro.
    con : DuckDB connection for the group-by.

    Returns
    -------
    DataFrame indexed like ``data``.

    References
    ----------
    Machanavajjhala et al. (2007), l-Diversity: Privacy Beyond k-Anonymity; sdcMicro
    ``ldiversity`` / ``measure_risk_cpp`` (src/Measure_Risk.h, compute_group_ldiversity).
    """
    keys = key_columns(data, keys)
    columns = _sensitive_columns(data, keys, sensitive)
    check_scalar(recursive_c, "recursive_c", low=0, closed="neither")
    digits, radices = key_digits(data, keys)
    parts = []
    for column in columns:
        values = category_codes(data[column])[0] - 1  # -1 = missing
        part = matched_l_diversity(digits, radices, values, float(recursive_c), con=con)
        if not isinstance(sensitive, str):
            part = part.add_prefix(f"{column}_")
        parts.append(part)
    result = pd.concat(parts, axis=1)
    result.index = data.index
    return result


def _ordinal_emd(pair_group, pair_value, share, q, n_groups):
    """(1/(m-1)) sum_{i<m-1} |P_g(<= i) - Q(<= i)| per group, from the sparse (group, value) shares.

    Between two consecutive values present in a group its cumulative share P is constant, while
    the overall cumulative share Q grows; the sum of |P - Q(i)| over such a run is closed-form
    from prefix sums of Q and the point where Q crosses P.
    """
    m = len(q)
    if m < 2:
        return np.zeros(n_groups)
    cum_q = np.cumsum(q)[: m - 1]
    prefix = np.concatenate([[0.0], np.cumsum(cum_q)])
    cum_p = np.cumsum(share)
    start = np.searchsorted(pair_group, pair_group, side="left")
    cum_p = cum_p - (cum_p[start] - share[start])
    is_last = np.append(pair_group[1:] != pair_group[:-1], True)
    next_value = np.where(is_last, m - 1, np.append(pair_value[1:], m - 1))
    lo = pair_value
    hi = np.minimum(next_value, m - 1)  # exclusive end of the run
    hi = np.maximum(hi, lo)
    cross = np.clip(np.searchsorted(cum_q, cum_p, side="left"), lo, hi)
    run = (cum_p * (cross - lo) - (prefix[cross] - prefix[lo])
           + (prefix[hi] - prefix[cross]) - cum_p * (hi - cross))
    total = np.bincount(pair_group, weights=run, minlength=n_groups)
    first = pair_value[start[np.append(True, pair_group[1:] != pair_group[:-1])]]
    groups_present = np.unique(pair_group)
    before_first = prefix[np.minimum(first, m - 1)]
    total[groups_present] += before_first
    return total / (m - 1)


def t_closeness(
    data: pd.DataFrame,
    keys: Sequence[str],
    sensitive: str,
    *,
    ordinal: bool = False,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.Series:
    """Per record, the Earth Mover's Distance between the sensitive variable's distribution in the
    record's key group and in the whole data set (SPEC §3.7; a group is t-close when it is < t).

    ASSUMPTION (SPEC §3.7, Li et al. 2007): nominal variables use equal ground distance,
    EMD = 0.5 sum_v |p_v - q_v|; ordinal variables (``ordinal=True``; categories in sorted order,
    or category order of an ordered Categorical) use EMD = (1/(m-1)) sum_{i=1}^{m-1} |sum_{v<=i}
    (p_v - q_v)| over the m categories present in the data. Missing sensitive values are left out
    of both distributions; a group with only missing values gets NaN.

    Returns
    -------
    Series ``t_closeness`` indexed like ``data``.

    References
    ----------
    Li, Li & Venkatasubramanian (2007), t-Closeness: Privacy Beyond k-Anonymity and l-Diversity.
    """
    keys = key_columns(data, keys)
    if not isinstance(sensitive, str):
        raise SDCInputError("t_closeness takes one sensitive variable (a column name)")
    (column,) = _sensitive_columns(data, keys, sensitive)
    group, n_groups = _key_groups(data, keys, con)
    values = category_codes(data[column], sort=True)[0] - 1  # sorted for the ordinal EMD; -1 = missing
    valid = values >= 0
    m = int(values.max()) + 1 if valid.any() else 0
    q = np.bincount(values[valid], minlength=m) / max(int(valid.sum()), 1)
    pair_group, pair_value, count = _value_counts_by_group(group, values, n_groups)
    group_size = np.bincount(pair_group, weights=count, minlength=n_groups)
    share = count / group_size[pair_group]
    if ordinal:
        emd = _ordinal_emd(pair_group, pair_value, share, q, n_groups)
    else:
        # values absent from the group contribute q_v each; present ones |p_v - q_v|
        emd = 0.5 * (1.0 + np.bincount(pair_group, weights=np.abs(share - q[pair_value]) - q[pair_value],
                                        minlength=n_groups))
    emd = np.where(group_size > 0, emd, np.nan)
    return pd.Series(emd[group], index=data.index, name="t_closeness")
