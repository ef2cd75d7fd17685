"""Local suppression to k-anonymity, to an individual-risk threshold and to l-diversity (SPEC §8.3,
§2.4, §3.2, §3.6).

Suppressed key values become missing, and a missing value matches any value in later frequency
counts (SPEC §2.4, sdcMicro ``freqCalc``). Every count here comes from the one §2.4 counter,
:class:`sdc_dagster.risk.incremental_counts.IncrementalCompatibleCounts` (the counts of
``risk.key_frequencies`` and ``risk.k_anonymity_violations``), so "safe" means the same for the
algorithm, the risk measures and the asset checks.

Suppression mostly only adds compatible records, with one exception of §2.4: a key missing in
every variable is not counted for complete keys. A record whose last value is suppressed can
therefore make a complete record unsafe again; the algorithms re-count every record after each
step and continue until none is unsafe, which is what guarantees the result.

The greedy algorithm and the choice of method "auto" are described in
:mod:`sdc_dagster.protect.suppression_greedy`.

Strata and key subsets (sdcMicro ``strataVars`` and ``combs``)
--------------------------------------------------------------
With strata every stratum is coded and suppressed on its own, exactly as if it were the whole data
(the default importance is counted once, on the whole data, as sdcMicro does), and the results are
put back in record order. With ``combs`` the greedy algorithm runs on the columns of every key
subset of each size in turn, with that size's k; passes over all targets repeat until none changes
anything. sdcMicro 5.8.1 reaches the same targets with more suppressions on its golden cases
(a_*, b_* in ``tests/data/sdcmicro/golden_parity``: 117 -> 102, 118 -> 83, 293 -> 183 with strata;
72 -> 63, 79 -> 63, 95/96 -> 73, 81 -> 66 with combs); with strata and combs together its
data.frame method also misses targets (golden README, note 1), which does not happen here.

sdcMicro's own algorithm (``method="sdcmicro"``)
-----------------------------------------------
A transcription of sdcMicro 5.8.1's ``suppSubset``, record for record, in
:mod:`sdc_dagster.protect.suppression_sdcmicro`; the targets, strata and passes are those above.

References
----------
Templ, Kowarik & Meindl (2015), sdcMicro, J. Stat. Softw. 67(4), §3.3 (local suppression);
sdcMicro 5.8.1 ``R/localSuppression.R`` (``suppSubset``). Hundepool et al. (2012), §3.4.3.
Machanavajjhala et al. (2007), "l-Diversity: Privacy Beyond k-Anonymity"; Prasser et al. (2014),
"ARX: a comprehensive tool for anonymizing biomedical data" (record suppression to a privacy model).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.risk.incremental_counts import IncrementalCompatibleCounts
from sdc_dagster.keys import category_codes, check_mask_width, key_digits
from sdc_dagster.protect.strata import stratum_codes, stratum_members
from sdc_dagster.protect.suppression_greedy import auto_suppress_to_k, greedy_suppress_to_k
from sdc_dagster.protect.suppression_sdcmicro import sdcmicro_suppress_to_k
from sdc_dagster.risk.categorical import risk_from_frequencies
from sdc_dagster.risk.diversity import group_l_diversity, matched_l_diversity
from sdc_dagster.validation import check_option, check_scalar, weight_values

LOCAL_SUPPRESSION_METHODS = ("auto", "greedy", "sdcmicro")
# The attribute of the returned frame naming the method(s) used: "greedy", "sdcmicro" or both.
METHOD_ATTRIBUTE = "local_suppression_method"


# --------------------------------------------------------------------------------------------
# the order of suppression, the checks and the result shared by the methods
# --------------------------------------------------------------------------------------------


def suppression_ranks(
    data: pd.DataFrame, keys: list[str], importance: Sequence[str] | Mapping[str, int] | None
) -> np.ndarray:
    """Per key, its rank in the suppression order: 0 = suppressed first (least important).

    ``importance`` is either the keys listed from the most to the least important, or sdcMicro's
    numeric form, a mapping key -> number from 1 (most important) to the number of keys, ties
    allowed (the key with the largest number is suppressed first, ties in the order of ``keys``).
    Default as sdcMicro: keys with fewer categories are more important, ties in the order of
    ``keys``.
    """
    ranks = np.empty(len(keys), dtype=np.int64)
    if isinstance(importance, Mapping):
        if sorted(map(str, importance)) != sorted(map(str, keys)):
            raise SDCInputError(
                f"importance: must give a number for every key variable and no other (keys {keys}, "
                f"got {sorted(map(str, importance))})"
            )
        numbers = [importance[k] for k in keys]
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 1 <= v <= len(keys) for v in numbers):
            raise SDCInputError(
                f"importance: numbers must be integers from 1 (most important) to {len(keys)}, got {dict(importance)}"
            )
        ranks[sorted(range(len(keys)), key=lambda j: (-numbers[j], j))] = np.arange(len(keys))
        return ranks
    if importance is None:
        return default_ranks([data[k].nunique(dropna=True) for k in keys])
    importance = list(importance)
    if sorted(map(str, importance)) != sorted(map(str, keys)) or len(set(importance)) != len(importance):
        raise SDCInputError(
            f"importance: must list every key variable exactly once (keys {keys}, got {importance})"
        )
    most_important_first = [keys.index(k) for k in importance]
    ranks[most_important_first[::-1]] = np.arange(len(keys))
    return ranks


def default_ranks(n_categories: Sequence[int]) -> np.ndarray:
    """sdcMicro's default importance as ranks (:func:`suppression_ranks`): keys with fewer
    categories (``n_categories``, one per key) are more important, ties in key order."""
    most_important_first = sorted(range(len(n_categories)), key=lambda j: (n_categories[j], j))
    ranks = np.empty(len(n_categories), dtype=np.int64)
    ranks[most_important_first[::-1]] = np.arange(len(n_categories))
    return ranks


def _prepare(data: pd.DataFrame, keys: Sequence[str], k: int) -> list[str]:
    keys = require_columns(data, keys, role="key variable")
    if not keys:
        raise SDCInputError("keys: name at least one key variable")
    if len(set(keys)) != len(keys):
        raise SDCInputError(f"keys: a key variable is listed twice in {keys}")
    _prepare_k(k, len(data))
    return keys


def _prepare_k(k: int, n: int) -> None:
    """Raise :class:`SDCInputError` unless k is a positive integer that n records can reach."""
    check_scalar(k, "k", integer=True, low=1)
    if k > n and n > 0:
        raise SDCInputError(
            f"k: {k}-anonymity is impossible with {n} records (even a fully suppressed key is shared by n records)"
        )


def apply_suppression(data: pd.DataFrame, keys: list[str], digits: np.ndarray, original: np.ndarray) -> pd.DataFrame:
    """A copy of ``data`` with the key values missing in ``digits`` (0) but present in ``original``."""
    out = data.copy()
    for j, key in enumerate(keys):
        newly_missing = (digits[:, j] == 0) & (original[:, j] > 0)
        if newly_missing.any():
            column = out[key]
            if pd.api.types.is_integer_dtype(column) and not pd.api.types.is_extension_array_dtype(column):
                column = column.astype("Int64")
            elif pd.api.types.is_bool_dtype(column) and not pd.api.types.is_extension_array_dtype(column):
                column = column.astype("boolean")
            out[key] = column.mask(newly_missing)
    return out


# --------------------------------------------------------------------------------------------
# local suppression to k-anonymity
# --------------------------------------------------------------------------------------------


def local_suppression(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    k: int | Sequence[int] = 3,
    importance: Sequence[str] | Mapping[str, int] | None = None,
    strata: str | Sequence[str] | None = None,
    combs: Sequence[int] | None = None,
    method: str = "auto",
) -> pd.DataFrame:
    """Suppress key values (set them to NA) until every record's §2.4 fk is at least k (SPEC §8.3).

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables (quasi-identifiers).
    k : the k-anonymity threshold; with ``combs``, one threshold per subset size (a single number
        is used for every size).
    importance : the keys from the most important (suppressed least) to the least important, or
        sdcMicro's numeric form {key: 1 (most important) .. number of keys}, ties allowed. With
        the greedy method it is honoured lexicographically as in sdcMicro: a key is suppressed in
        a record only when no combination of less important keys makes the record safe. Default:
        the fewest suppressions per record, ties broken by sdcMicro's default importance (keys
        with fewer categories are more important, counted on the whole data also with strata).
    strata : column name(s) (sdcMicro ``strataVars``): fk is counted within each stratum and each
        stratum is suppressed on its own; the result is reassembled in record order. A missing
        stratum value is a stratum.
    combs : subset sizes (sdcMicro ``combs``): for each size in turn, with its k, every subset of
        that many keys is made k-anonymous (fk counted on the subset's keys only). The targets are
        processed in the order given, subset after subset as ``itertools.combinations`` lists them,
        and the pass is repeated until every target holds (a later suppression can only break an
        earlier target through the all-missing rule of SPEC §2.4).
    method : "auto" (default: the greedy algorithm of :mod:`~sdc_dagster.protect.suppression_greedy`
        up to 8 keys, where it suppresses fewer values; on more keys both, keeping the fewer
        suppressions, see "Choosing the algorithm" there), "greedy" or "sdcmicro" (sdcMicro 5.8.1's ``localSuppression``
        transcribed: the same file as sdcMicro, record for record, for an office that must
        reproduce it).

    Returns
    -------
    A copy of ``data`` indexed like it, with some key values missing (integer keys become nullable
    ``Int64`` when suppressed), such that ``risk.k_anonymity_violations(result, keys, k) == 0``
    (fk with missing values matching any value, SPEC §2.4, sdcMicro ``freqCalc``) within each
    stratum, and on every key subset of each size in ``combs``. ``result.attrs[METHOD_ATTRIBUTE]``
    (``"local_suppression_method"``) names the algorithm used: "greedy", "sdcmicro", or
    "greedy+sdcmicro" when "auto" chose differently for different strata or key subsets.

    References
    ----------
    SPEC §8.3, §2.4; sdcMicro ``localSuppression`` (Templ, Kowarik & Meindl 2015). The greedy
    algorithm is described in :mod:`sdc_dagster.protect.suppression_greedy`.
    """
    keys = require_columns(data, keys, role="key variable")
    check_mask_width(len(keys), "local suppression")
    check_option(method, "method", LOCAL_SUPPRESSION_METHODS)
    targets = _suppression_targets(keys, k, combs)
    for _, k_size in targets:
        _prepare(data, keys, k_size)
    codes, values = stratum_codes(data, strata)
    members = stratum_members(codes) if len(data) else []
    largest_k = max(k_size for _, k_size in targets)
    for which, rows in enumerate(members):
        if largest_k > len(rows):
            raise SDCInputError(
                f"k: {largest_k}-anonymity is impossible in stratum {values[which]!r} of strata {strata!r}, "
                f"which has {len(rows)} records"
            )
    ranks = suppression_ranks(data, keys, importance)
    if len(data) == 0:
        return data.copy()
    original = np.zeros((len(data), len(keys)), dtype=np.int64)
    suppressed = np.zeros_like(original)
    used: set[str] = set()
    for rows in members:  # strata, not records; each coded on its own, as if suppressed alone
        original[rows], radices = key_digits(data.iloc[rows], keys)
        suppressed[rows], used_here = _suppress_to_targets(
            original[rows], radices, ranks, targets, lexicographic=importance is not None, method=method
        )
        used |= used_here
    out = apply_suppression(data, keys, suppressed, original)
    out.attrs[METHOD_ATTRIBUTE] = "+".join(m for m in LOCAL_SUPPRESSION_METHODS if m in used)
    return out


def suppress_codes_to_k(digits: np.ndarray, radices: np.ndarray, *, k: int,
                        counter: IncrementalCompatibleCounts | None = None) -> tuple[np.ndarray, str]:
    """:func:`local_suppression` to k of keys already coded (SPEC §8.3), with its defaults (no
    strata, no combs, the default importance, method "auto"): ``digits``, ``radices`` as
    :func:`~sdc_dagster.keys.key_digits` codes the keys (``digits`` is not modified). Returns the
    digits after suppression (0 = missing) and the method used; ``local_suppression(data, keys, k=k)``
    suppresses exactly these values. The plan search evaluates its nodes on codes.

    ``counter``: an :class:`IncrementalCompatibleCounts` of ``digits`` (without weights) that the
    caller made to check k-anonymity; the greedy method continues from it (it is changed)."""
    check_mask_width(digits.shape[1], "local suppression")
    _prepare_k(k, len(digits))
    ranks = default_ranks(np.asarray(radices) - 1)  # radix = categories present + 1
    # one target (all keys together): what _suppress_to_targets runs, the ranks being a permutation
    return auto_suppress_to_k(digits, radices, ranks, int(k), lexicographic=False, counter=counter)


def _suppression_targets(
    keys: list[str], k: int | Sequence[int], combs: Sequence[int] | None
) -> list[tuple[list[tuple[int, ...]], int]]:
    """The (key subsets, k) targets of :func:`local_suppression`; all keys together without combs."""
    if combs is None:
        if np.ndim(k) != 0:
            raise SDCInputError(f"k: a single threshold without combs, got {k!r}")
        return [([tuple(range(len(keys)))], k)]
    combs = [combs] if np.ndim(combs) == 0 else list(combs)
    thresholds = [k] * len(combs) if np.ndim(k) == 0 else list(k)
    if len(thresholds) != len(combs):
        raise SDCInputError(f"k: give one threshold per subset size in combs {combs}, got {k!r}")
    targets = []
    for size, k_size in zip(combs, thresholds):
        check_scalar(size, "combs (a subset size of the keys)", integer=True, low=1, high=len(keys))
        targets.append((list(combinations(range(len(keys)), int(size))), k_size))
    return targets


def _suppress_to_targets(digits, radices, ranks, targets, *, lexicographic: bool, method: str) -> np.ndarray:
    """Digits after suppression until every (key subsets, k) target holds (one stratum)."""
    digits = digits.copy()
    single_target = len(targets) == 1 and len(targets[0][0]) == 1
    used = set()
    while True:
        changed = False
        for subsets, k in targets:
            for subset in subsets:
                columns = list(subset)
                before = digits[:, columns]
                subset_ranks = np.argsort(np.argsort(ranks[columns]))
                if method == "sdcmicro":
                    after, chosen = sdcmicro_suppress_to_k(before, radices[columns], subset_ranks, int(k)), method
                elif method == "greedy":
                    after, chosen = greedy_suppress_to_k(before, radices[columns], subset_ranks, int(k), lexicographic), method
                else:
                    after, chosen = auto_suppress_to_k(before, radices[columns], subset_ranks, int(k), lexicographic)
                used.add(chosen)
                if (after != before).any():
                    digits[:, columns] = after
                    changed = True
        # one target holds after one pass; several are re-checked until a pass changes nothing
        if single_target or not changed:
            return digits, used


def suppression_counts(original: pd.DataFrame, protected: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """Number of values suppressed per key: present in ``original`` and missing in ``protected``.

    Returns a Series indexed by key (int64), as sdcMicro's ``localSuppression`` ``supps`` slot.
    """
    keys = require_columns(original, keys, role="key variable")
    require_columns(protected, keys, role="key variable")
    if not original.index.equals(protected.index):
        raise SDCInputError("protected: must be indexed like the original data")
    return pd.Series(
        {k: int((original[k].notna() & protected[k].isna()).sum()) for k in keys}, dtype="int64", name="suppressed"
    )


# --------------------------------------------------------------------------------------------
# suppression down to an individual-risk threshold
# --------------------------------------------------------------------------------------------


def risk_suppression(
    data: pd.DataFrame,
    keys: Sequence[str],
    risk: str | Callable[[pd.DataFrame, list[str]], pd.Series] = "individual",
    *,
    threshold: float,
    weight: str | None = None,
    importance: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Suppress key values of records whose individual risk exceeds ``threshold`` (SPEC §8.3, §3.2).

    Each pass suppresses one key value in every record above the threshold and re-computes the
    risk of every record, until no record is above it (or every such record has no key left, where
    its risk is that of the fully suppressed key).

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables.
    risk : "individual" = ``risk.individual_risk`` (sdcMicro's individual risk on the §2.4 f and
        F: 1/f without weights, SPEC §3.2 "approx" with ``weight``); or a callable
        ``risk(frame, keys) -> Series`` re-evaluated after every pass (then keys are suppressed in
        the order given by ``importance``).
    threshold : records with risk > threshold are treated.
    weight : sampling-weight column for the "individual" risk.
    importance : keys from the most important (suppressed least) to the least important;
        default as :func:`local_suppression`.

    Returns
    -------
    A copy of ``data`` with some key values missing, every record's risk <= threshold where
    reachable. With ``risk="individual"`` the key suppressed in a record is the least important
    one that brings it under the threshold, else the one that lowers its risk most.
    """
    keys = _prepare(data, keys, 1)
    check_scalar(threshold, "threshold", low=0, closed="neither")
    order = np.argsort(suppression_ranks(data, keys, importance), kind="stable")
    if len(data) == 0:
        return data.copy()
    digits, radices = key_digits(data, keys)
    if callable(risk):
        return _callable_risk_suppression(data, keys, risk, float(threshold), order, digits)
    if risk != "individual":
        raise SDCInputError(f"risk: must be 'individual' or a callable, got {risk!r}")
    weights = weight_values(data, weight)

    def individual(f: np.ndarray, F: np.ndarray) -> np.ndarray:
        return risk_from_frequencies(f, F, weighted=weights is not None, weight=str(weight))

    counter = IncrementalCompatibleCounts(digits, radices, weights)
    while True:
        risky = np.flatnonzero((individual(*counter.record_counts()) > threshold) & (counter.digits > 0).any(axis=1))
        if not len(risky):
            break
        rows = counter.digits[risky]
        best_key = np.full(len(risky), -1)
        best_risk = np.full(len(risky), np.inf)
        solved = np.zeros(len(risky), dtype=bool)
        for j in order:
            usable = np.flatnonzero((rows[:, j] > 0) & ~solved)
            if len(usable) == 0:
                continue
            probes = rows[usable].copy()
            probes[:, j] = 0
            r = individual(*counter.probe_counts(probes))
            improve = r < best_risk[usable]
            best_key[usable[improve]] = j
            best_risk[usable[improve]] = r[improve]
            solved[usable[r <= threshold]] = True
        counter.set_missing(risky, np.int64(1) << best_key)
    return apply_suppression(data, keys, counter.digits, digits)


def _callable_risk_suppression(data, keys, risk, threshold, order, digits) -> pd.DataFrame:
    current = digits.copy()
    while True:
        frame = apply_suppression(data, keys, current, digits)
        values = pd.Series(risk(frame, list(keys)))
        if len(values) != len(data):
            raise SDCInputError(f"risk: the callable returned {len(values)} values for {len(data)} records")
        risky = np.flatnonzero(values.to_numpy(dtype="float64") > threshold)
        risky = risky[(current[risky] > 0).any(axis=1)]
        if not len(risky):
            return frame
        # the first key in suppression order that the record still has
        ranked = current[risky][:, order] > 0
        first = np.asarray(order)[ranked.argmax(axis=1)]
        current[risky, first] = 0


# --------------------------------------------------------------------------------------------
# suppression to l-diversity
# --------------------------------------------------------------------------------------------


# the tolerance of an entropy compared with l (exp of a sum of logarithms)
_L_TOLERANCE = 1e-9


def codes_below_l(digits: np.ndarray, radices: np.ndarray, sensitive: Sequence[np.ndarray], *, l: int,
                  entropy: bool = False) -> np.ndarray:
    """Per record, whether the records its key ``digits`` match (a missing value, 0, matching any
    value, as k-anonymity counts them: :func:`~sdc_dagster.risk.matched_l_diversity`, SPEC §2.4)
    hold fewer than ``l`` distinct values of one of the ``sensitive`` variables (category codes from
    0, -1 missing), or with ``entropy`` also an entropy l-diversity below l (SPEC §3.6; exp(entropy)
    never exceeds the distinct count but for a group holding only missing values, distinct 0 and
    exp(entropy) 1)."""
    below = np.zeros(len(digits), dtype=bool)
    for codes in sensitive:
        scores = matched_l_diversity(digits, radices, codes)
        below |= (scores["distinct"] < l).to_numpy()
        if entropy:
            below |= (scores["entropy"] < l - _L_TOLERANCE).to_numpy()
    return below


def suppress_codes_to_l(digits: np.ndarray, radices: np.ndarray, sensitive: Mapping[str, np.ndarray], *, l: int,
                        entropy: bool = False) -> np.ndarray:
    """Digits (0 = missing) after :func:`diversity_suppression` of keys already coded (``digits``,
    ``radices`` as :func:`~sdc_dagster.keys.key_digits` codes them; not modified); ``sensitive``:
    per sensitive variable its category codes from 0, -1 missing.

    Every key value of the records below l (:func:`codes_below_l`) is suppressed, and again for
    the records below l then, until none is: a record whose keys are all missing matches every
    record (SPEC §2.4), so the suppressed records are as diverse as the whole file; suppressing a
    record's keys can leave a complete key that matched it below l (the key missing in every
    variable is not counted for complete keys, as sdcMicro's freqCalc counts k), hence the rounds,
    at most one per record and in practice two or three. The whole file is l-diverse whenever some
    grouping is (the distinct values of a group are values of the file; the entropy of a mixture is
    at least the least entropy of its parts), so the result is l-diverse for every sensitive
    variable; when the whole file is not, l is unreachable and :class:`SDCInputError` says so."""
    check_mask_width(digits.shape[1], "suppression to l-diversity")
    measure = "entropy l-diversity (exp of the entropy, at most the distinct count)" if entropy else "distinct l-diversity"
    one_group = np.zeros(len(digits), dtype=np.int64)
    for name, codes in sensitive.items():
        scores = group_l_diversity(one_group, 1, codes)
        file_score = float(scores["entropy"].min() if entropy else scores["distinct"].min()) if len(digits) else l
        if entropy and len(digits):
            file_score = min(file_score, float(scores["distinct"].min()))
        if file_score < l - _L_TOLERANCE:
            raise SDCInputError(
                f"l: {l} is unreachable for sensitive variable {name!r}: the whole file, keys all suppressed, "
                f"reaches {measure} {file_score:.4g} (SPEC §3.6; a missing value counts as a value when others exist)"
            )
    suppressed = digits.copy()
    while True:
        below = codes_below_l(suppressed, radices, list(sensitive.values()), l=l, entropy=entropy)
        below &= suppressed.any(axis=1)  # the records with every key missing match the whole file
        if not below.any():
            return suppressed
        suppressed[below] = 0


def diversity_suppression(data: pd.DataFrame, keys: Sequence[str], sensitive: Sequence[str] | str, *, l: int,
                          entropy: bool = False) -> pd.DataFrame:
    """Suppress every key value of the records whose key group is not l-diverse in a sensitive
    variable (SPEC §3.6; :func:`codes_below_l`), as ARX suppresses the records of a class that
    violates its privacy model (Prasser et al., "ARX: a comprehensive tool for anonymizing biomedical
    data", 2014). A record's group is the records its key matches, a missing key value matching any
    value, as k-anonymity counts them (SPEC §2.4, :func:`~sdc_dagster.risk.l_diversity`): the
    suppressed records, all keys missing, match the whole file and so are l-diverse whenever the
    file is; the records they no longer complete are judged again (:func:`suppress_codes_to_l`), so
    every record of the result is l-diverse. Groups that are l-diverse are left as they are.

    Parameters
    ----------
    data : the microdata; not modified.
    keys : the categorical key variables (grouped as released, a missing value a value of its own).
    sensitive : the sensitive variables (one or a list).
    l : the least number of distinct sensitive values of a group (an integer >= 1).
    entropy : require entropy l-diversity as well (exp of the group's entropy at least l).

    Returns
    -------
    A copy of ``data`` with the keys of the suppressed records missing.

    Raises
    ------
    SDCInputError : when l is unreachable: the whole file, as one group, is not l-diverse in a
        sensitive variable (e.g. fewer than l distinct values).
    """
    keys = _prepare(data, keys, 1)
    sensitive = require_columns(data, [sensitive] if isinstance(sensitive, str) else list(sensitive),
                                role="sensitive variable")
    l = check_scalar(l, "l", integer=True, low=1)
    if len(data) == 0:
        return data.copy()
    digits, radices = key_digits(data, keys)
    codes = {v: category_codes(data[v])[0] - 1 for v in sensitive}
    return apply_suppression(data, keys, suppress_codes_to_l(digits, radices, codes, l=l, entropy=entropy), digits)
