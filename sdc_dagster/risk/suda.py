"""SUDA2: minimal sample uniques and the SUDA / DIS-SUDA scores (SPEC §3.8).

A minimal sample unique (MSU) of a record is a set of its key values that no other record shares
while every proper subset is shared by some other record. SUDA scores a record by the number and
the size of its MSUs; DIS-SUDA turns the score into a probability that a sample unique is also a
population unique, using the sampling fraction.

The numbers are those of sdcMicro's ``suda2`` (R package sdcMicro 5.8, ``R/suda2.R`` and
``src/Suda2.h``), which the golden files under ``tests/data/sdcmicro/golden`` record. sdcMicro
finds the MSUs with the recursive SUDA2 search; here they are found by a vectorised sweep over
the lattice of key subsets:

1. every key is turned into integer codes, and records with the same full key are collapsed into
   one combination with its frequency (one bincount of the mixed-radix code); everything after
   this works on the combinations, not the records (only combinations of frequency 1, the sample
   uniques, can have MSUs; sdcMicro's hash count for DIS-SUDA is also taken per combination);
2. for every key subset S, size by size, a bincount of the combinations' codes on S says which
   sample uniques no other combination shares on S ("unique on S", one boolean row per subset);
   sizes on which no candidate is unique are skipped, and the full key is unique by definition;
3. S is an MSU of a record when the record is unique on S and on none of the subsets S minus one
   key (uniqueness is monotone, so the immediate subsets suffice). A record all of whose subsets
   of one size are unique has no larger MSU and leaves the sweep.

Nothing loops over records in Python; the loops run over key subsets (2^m - 1 of them).

Where sdcMicro's code departs from the plain definitions, its behaviour is reproduced (each point
checked against sdcMicro's C++ compiled stand-alone, see tests/risk/test_suda.py):

- one or two keys are padded with constant columns to three (weights and DIS use K = 3);
- the ``missing`` code (and NA) never enters an MSU but counts as a value of the full key;
- weights: an MSU of size s weighs (K - s)!, i.e. SPEC §3.8's prod_{u=s}^{M} (K - u) with its
  upper limit M capped at K - 1 (taken literally with M = K it would be 0 for every size);
- DIS uses single-precision intermediates and sdcMicro's unique count, which counts only records
  alone in their 16-bit hash bucket (NaN when that count is 0 while some score is positive);
- "correlated" items (a key value held by exactly the records of an earlier key's value) are
  credited in the contributions as sdcMicro credits them (see ``_sdcmicro_base_keys``); scores
  are unaffected.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb, factorial, prod

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.risk.suda_codes import missing_code, sdcmicro_codes
from sdc_dagster.validation import check_flag, check_scalar

# sdcMicro's C++ search needs at least three variables; its R wrapper pads one or two keys with
# constant columns, which changes the score weights and the DIS exponent (both depend on the
# number of columns), so the padding is reproduced.
_SDCMICRO_MIN_COLUMNS = 3
# sdcMicro buckets records by a 16-bit rolling hash of their key values; see _records_alone_in_hash_bucket.
_HASH_MASK = 0xFFFF
# Mixed-radix codes are re-densified once the code space exceeds this many slots per record,
# so bincount arrays stay proportional to the data.
_CODE_SPACE_PER_ROW = 4
_MIN_CODE_SPACE = 1 << 16
# Bound on the cells of one size's boolean "unique on S" matrix (subsets x sample uniques); up to
# five such matrices (this size's and the previous size's) are alive at once, about 1.5 GB.
_MAX_LEVEL_CELLS = 300_000_000


def suda2(
    data: pd.DataFrame,
    keys: Sequence[str],
    *,
    dis_fraction: float = 0.01,
    missing: int = -999,
    max_size: int | None = None,
    original_scores: bool = True,
) -> pd.DataFrame:
    """SUDA and DIS-SUDA scores of every record, with each key's share of the score (SPEC §3.8).

    Implements sdcMicro's ``suda2(data, variables=keys, missing=missing, DisFraction=dis_fraction,
    original_scores=original_scores)`` (the ``score``, ``disScore`` and ``contributionPercent``
    parts of its result).

    An MSU of size s among K key columns (K >= 3: sdcMicro pads one or two keys with constant
    columns) scores ``prod_{u=s}^{min(M, K-1)} (K - u)`` with M the largest MSU size searched
    (SPEC §3.8's formula; with the default M = K this is sdcMicro's ``(K - s)!``, an MSU of all K
    keys scoring 1). With ``original_scores=False`` the weight is sdcMicro's IHSN variant
    ``(2^(K-s) - 1) * s! (K-s)! / K!`` whatever M. A record's score is the sum of its MSUs'
    weights; a key's contribution is the summed weight of the record's MSUs that contain the key,
    divided by the score (0 when the score is 0), except that values held by exactly the records
    of an earlier key's value are credited as sdcMicro credits them (module notes). Contributions
    of one record can sum to more than 1, since an MSU counts for each of its keys.

    DIS-SUDA (sdcMicro's formula, with its single-precision arithmetic):
    ``dis = 1 / (1 + (U/D - U) / (score^q * sum_j score_j^-q))`` for records with a positive
    score (0 otherwise), where ``q = 1 + (8 - K) / 20``, ``D = U f / (U f + P (1 - f))``,
    f = ``dis_fraction``, P the number of records whose full key occurs exactly twice, and U
    sdcMicro's count of sample uniques, which counts only records alone in their 16-bit hash
    bucket (``U/D - U`` equals ``P (1 - f) / f`` whenever U > 0, so this affects rounding only;
    U = 0 with positive scores gives NaN, as in sdcMicro).

    Parameters
    ----------
    data : DataFrame
        The microdata; not modified.
    keys : sequence of str
        The categorical key variables (at least one). Numeric keys must hold integer codes
        (within the 32-bit range, as sdcMicro stores them as C ints); booleans count as 0/1;
        categoricals use their category position + 1 and other text columns the position of the
        value among the sorted distinct values + 1 (R's factor codes).
    dis_fraction : float
        Sampling fraction f in (0, 1] (sdcMicro's ``DisFraction``, computed in single precision).
    missing : int
        The code for a missing value (sdcMicro's ``missing``). Pandas NA / NaN in a key is
        replaced by this code; a key value equal to it never enters an MSU but still takes part
        in the full-key comparison (two records missing the same key match there).
    max_size : int, optional
        Largest MSU size searched, 1..number of keys (default: the number of keys, as sdcMicro,
        which has no such option).
    original_scores : bool
        sdcMicro's ``original_scores``: True for Elliot et al.'s weights, False for the IHSN ones.

    Returns
    -------
    DataFrame
        Indexed like ``data``: ``score`` (float), ``dis_score`` (float) and one column
        ``"<key>_contribution"`` per key (share of the score, in [0, 1]).

    References
    ----------
    Elliot, Manning, Ford (2002), "A computational algorithm for handling the special uniques
    problem", IJUFKS 10(5). Manning, Haglin, Keane (2008), "A recursive search algorithm for
    statistical disclosure assessment", Data Min. Knowl. Disc. 16. sdcMicro ``suda2``
    (R/suda2.R, src/Suda2.h).
    """
    keys = require_columns(data, keys, role="key variable")
    if not keys:
        raise SDCInputError("key variables: the selection is empty; name at least one key column")
    if len(set(keys)) != len(keys):
        raise SDCInputError(f"key variables: {keys} names a column more than once")
    # sdcMicro keeps DisFraction in a C float; the DIS arithmetic is single precision.
    fraction = np.float32(check_scalar(dis_fraction, "dis_fraction", low=0, high=1, closed="right"))
    missing = missing_code(missing)
    max_size = len(keys) if max_size is None else check_scalar(max_size, "max_size", integer=True, low=1, high=len(keys))
    check_flag(original_scores, "original_scores")

    codes = [sdcmicro_codes(data[k], k, missing) for k in keys]
    n_keys = len(keys)
    n_columns = max(n_keys, _SDCMICRO_MIN_COLUMNS)

    contribution_names = [f"{k}_contribution" for k in keys]
    if len(data) == 0:
        empty = {"score": [], "dis_score": [], **{c: [] for c in contribution_names}}
        return pd.DataFrame(empty, index=data.index, dtype="float64")

    # Everything after this line works on the distinct full keys, not on the records.
    combination, frequency, representative = _full_key_combinations(codes)
    combo_values = np.column_stack([c[representative] for c in codes])
    weights = _msu_weights(n_columns, max_size, bool(original_scores))
    scored, cand_score, cand_contribution = _msu_scores(combo_values, combo_values == missing, weights, frequency)
    records_in_pairs = int(frequency[frequency == 2].sum())
    # sdcMicro hashes the padded columns too (constant 1 for a missing second or third key).
    padded = np.hstack([combo_values, np.ones((len(frequency), n_columns - n_keys), dtype=np.int64)])
    uniques = _records_alone_in_hash_bucket(padded, frequency)
    rows = representative[scored]
    # DIS sums over the scores in record order (as sdcMicro's loop does), not in combination order.
    in_record_order = np.argsort(rows)
    dis_score = np.empty(len(rows))
    dis_score[in_record_order] = _dis_scores(
        cand_score[in_record_order], n_columns, uniques, records_in_pairs, fraction
    )

    # One (columns x records) block, so the DataFrame wraps it without copying column by column.
    block = np.zeros((2 + n_keys, len(data)))
    block[0, rows] = cand_score
    block[1, rows] = dis_score
    block[2:, rows] = cand_contribution.T
    return pd.DataFrame(block.T, index=data.index, columns=["score", "dis_score", *contribution_names], copy=False)


def suda2_max_size(data: pd.DataFrame, keys: Sequence[str], *, missing: int = -999) -> int:
    """The largest ``max_size`` of :func:`suda2` whose MSU search fits its memory bound (SPEC §3.8).

    The search of MSUs of size s holds a (key subsets of size s) x (sample uniques still searched)
    boolean matrix; this bound takes every sample unique (full-key frequency 1) as searched, so a
    search up to the returned size never exceeds the bound. Returns the number of keys when the
    full search fits (sdcMicro's search), 0 when not even single keys fit.

    Parameters
    ----------
    data, keys, missing : as for :func:`suda2`.
    """
    keys = require_columns(data, keys, role="key variable")
    if not keys or len(data) == 0:
        return len(keys)
    missing = missing_code(missing)
    _, frequency, _ = _full_key_combinations([sdcmicro_codes(data[k], k, missing) for k in keys])
    uniques = int((frequency == 1).sum())
    size = 0
    while size < len(keys) and _level_fits(uniques, comb(len(keys), size + 1)):
        size += 1
    return size


def _level_fits(candidates: int, subsets: int) -> bool:
    """Whether one size's "unique on S" matrix (subsets x candidates) is within the memory bound."""
    return candidates * subsets <= _MAX_LEVEL_CELLS


def suda2_attribute_contributions(scores: pd.DataFrame) -> pd.DataFrame:
    """Each key's share of the total SUDA score, in percent (sdcMicro's ``attribute_contributions``).

    SPEC §3.8. ``100 * sum_i contribution_ij * score_i / sum_i score_i`` for every key j; the
    shares sum to more than 100 when MSUs hold several keys. NaN when every score is 0.

    Parameters
    ----------
    scores : DataFrame
        A result of :func:`suda2` (columns ``score`` and ``"<key>_contribution"``).

    Returns
    -------
    DataFrame
        One row per key, in the order of the columns: ``variable`` and ``contribution`` (percent).

    References
    ----------
    sdcMicro ``suda2`` (R/suda2.R, ``res$attribute_contributions``).
    """
    suffix = "_contribution"
    columns = [c for c in scores.columns if isinstance(c, str) and c.endswith(suffix)]
    if "score" not in scores.columns or not columns:
        raise SDCInputError(
            "scores: expected a suda2 result with a 'score' column and '<key>_contribution' columns"
        )
    score = scores["score"].to_numpy(dtype="float64")
    total = score.sum()
    weighted = scores[columns].to_numpy(dtype="float64") * score[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        percent = 100.0 * weighted.sum(axis=0) / total
    return pd.DataFrame({"variable": [c[: -len(suffix)] for c in columns], "contribution": percent})


def _msu_weights(n_columns: int, max_size: int, original_scores: bool) -> np.ndarray:
    """Score weight of an MSU of each size 1..max_size (index 0 unused)."""
    weights = np.zeros(max_size + 1)
    top = min(max_size, n_columns - 1)
    for size in range(1, max_size + 1):
        if original_scores:
            weights[size] = prod(n_columns - u for u in range(size, top + 1))
        else:
            rest = n_columns - size
            weights[size] = (2.0**rest - 1) * (factorial(size) * factorial(rest) / factorial(n_columns))
    return weights


def _dense(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes renumbered 0..c-1 (hash-based, no sort), and c."""
    dense, uniques = pd.factorize(codes)
    return dense.astype(np.int64, copy=False), len(uniques)


def _offset_codes(column: np.ndarray, limit: int) -> tuple[np.ndarray, int]:
    """Codes 0..c-1 for one column: the values minus their minimum when their range is at most
    ``limit`` (no hashing; unused values leave gaps), otherwise densified."""
    low, high = int(column.min()), int(column.max())
    if high - low < limit:
        return column - low, high - low + 1
    return _dense(column)


def _extend_code(
    code: np.ndarray, space: int, column: np.ndarray, card: int, limit: int
) -> tuple[np.ndarray, int]:
    """Mixed-radix code of a combination extended by one dense code column, code space <= limit."""
    if space * card > limit:
        code, space = _dense(code)
    code = code * card
    code += column
    space *= card
    if space > limit:
        code, space = _dense(code)
    return code, space


def _combination_codes(
    columns: Sequence[np.ndarray], cards: Sequence[int], limit: int
) -> tuple[np.ndarray, int]:
    """One code per row for the combination of the given dense code columns, code space <= limit."""
    code, space = np.zeros(len(columns[0]), dtype=np.int64), 1
    for column, card in zip(columns, cards):
        code, space = _extend_code(code, space, column, card, limit)
    return code, space


def _subset_codes(
    key_codes: Sequence[np.ndarray],
    key_cards: Sequence[int],
    subsets: Sequence[tuple[int, ...]],
    limit: int,
) -> Iterator[tuple[np.ndarray, int]]:
    """Yield (code, space) for every subset, given in lexicographic order.

    Consecutive subsets share prefixes, so the codes of the current chain of prefixes are kept
    and each subset costs about one multiply-add over the rows.
    """
    n = len(key_codes[0])
    chain: list[tuple[np.ndarray, int]] = []
    previous: tuple[int, ...] = ()
    for subset in subsets:
        shared = 0
        while shared < min(len(chain), len(subset)) and subset[shared] == previous[shared]:
            shared += 1
        del chain[shared:]
        for j in subset[shared:]:
            code, space = chain[-1] if chain else (np.zeros(n, dtype=np.int64), 1)
            chain.append(_extend_code(code, space, key_codes[j], key_cards[j], limit))
        previous = subset
        yield chain[-1]


def _full_key_combinations(codes: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct full keys: each record's combination, each combination's frequency and one of its records.

    The mixed-radix code of the keys (code space bounded by :func:`_combination_codes`) is counted
    with one bincount, so the combinations come out in code order."""
    n = len(codes[0])
    limit = max(_MIN_CODE_SPACE, _CODE_SPACE_PER_ROW * n)
    key_codes, key_cards = zip(*(_offset_codes(c, limit) for c in codes))
    full, space = _combination_codes(key_codes, key_cards, limit)
    counts = np.bincount(full, minlength=space)
    occupied = np.flatnonzero(counts)
    slot_to_combination = np.empty(space, dtype=np.int64)
    slot_to_combination[occupied] = np.arange(len(occupied))
    combination, frequency = slot_to_combination[full], counts[occupied]
    representative = np.empty(len(frequency), dtype=np.int64)
    # Any record can stand for its combination: they all carry the same key values.
    representative[combination] = np.arange(n, dtype=np.int64)
    return combination, frequency, representative


def _sdcmicro_base_keys(
    combo_codes: Sequence[np.ndarray],
    key_cards: Sequence[int],
    frequency: np.ndarray,
    combo_missing: np.ndarray,
    rows: np.ndarray,
) -> np.ndarray:
    """For each given combination and key j, the key sdcMicro credits for the record's value of j.

    sdcMicro keeps one "item" per (key, value) held by at least two records and sets aside as
    correlated any later item whose records are exactly those of an earlier item (e.g. a value of
    a grouped copy of a key). MSUs are searched with the earlier (base) item only and multiplied
    out; the scores count every MSU, but the contributions are credited unevenly (src/Suda2.h,
    FindMsu): an MSU of three or more keys credits its weight to the base item's key in place of
    the correlated item's, and of the two-key MSUs a correlated item takes part in, only the one
    paired with the other key's base item credits it.

    Returns the base key index for each of ``rows`` and each key (j itself when the record's
    value of j is not a correlated item), shape (len(rows), n_keys); None when no value of any
    record is a correlated item.
    """
    n_keys = len(combo_codes)
    limit = max(_MIN_CODE_SPACE, _CODE_SPACE_PER_ROW * len(frequency))
    value_frequency = [np.bincount(combo_codes[j], weights=frequency, minlength=key_cards[j]) for j in range(n_keys)]
    shared_values = [f[f >= 2] for f in value_frequency]
    present = ~combo_missing[rows]
    base = None
    for j in range(1, n_keys):
        undecided = np.ones(len(rows), dtype=bool)
        for i in range(j):
            # Values of i and j held by the same records have the same frequency: pairs of keys
            # with no frequency in common have no correlated items (skips the pass over the data).
            if not np.intersect1d(shared_values[i], shared_values[j]).size:
                continue
            code, space = _combination_codes(
                [combo_codes[i], combo_codes[j]], [key_cards[i], key_cards[j]], limit
            )
            together = np.bincount(code, weights=frequency, minlength=space)[code[rows]]
            frequency_i = value_frequency[i][combo_codes[i][rows]]
            frequency_j = value_frequency[j][combo_codes[j][rows]]
            same_records = (
                (together == frequency_i)
                & (together == frequency_j)
                & (frequency_j >= 2)
                & present[:, i]
                & present[:, j]
            )
            first = undecided & same_records
            if first.any():
                if base is None:
                    base = np.tile(np.arange(n_keys, dtype=np.int16), (len(rows), 1))
                base[first, j] = i
            undecided &= ~same_records
    return base


@dataclass(frozen=True)
class _SubsetLevel:
    """The key subsets of one size searched for MSUs: each as a tuple of key positions and a bit
    mask, the subsets holding each key (``rows_with``), the row of each subset one size smaller
    (``previous_row``, by mask) and the SUDA weight of an MSU of this size (Elliot et al. 2002)."""

    size: int
    weight: float
    subsets: Sequence[tuple[int, ...]]
    masks: np.ndarray
    rows_with: Sequence[np.ndarray]
    previous_row: dict[int, int]


@dataclass(frozen=True)
class _Credits:
    """What the MSUs credit, updated in place: each candidate's score and per-key contribution,
    and sdcMicro's base key of each candidate's values with the bits of its correlated keys
    (:func:`_sdcmicro_base_keys`; None when no key has correlated values)."""

    score: np.ndarray
    contribution: np.ndarray
    base: np.ndarray | None
    correlated_bits: np.ndarray | None


def _credit_msus(unique: np.ndarray, previous_unique: np.ndarray | None, target: np.ndarray,
                 level: _SubsetLevel, credits: _Credits) -> None:
    """Add the MSUs of one size to the scores and contributions of the ``target`` candidates.

    ``unique`` (subsets x targets) says which subsets are unique for each target; a subset is an
    MSU when none of its immediate subsets (rows of ``previous_unique``) is unique."""
    subsets, masks, rows_with, previous_row = level.subsets, level.masks, level.rows_with, level.previous_row
    size, weight, base, correlated_bits = level.size, level.weight, credits.base, credits.correlated_bits
    cand_score, cand_contribution = credits.score, credits.contribution
    minimal = unique.copy()
    if previous_unique is not None:
        previous_shared = ~previous_unique
        for row, mask in enumerate(masks):
            for j in subsets[row]:
                parent = previous_row[int(mask) ^ (1 << j)]
                np.logical_and(minimal[row], previous_shared[parent], out=minimal[row])
    cand_score[target] += np.count_nonzero(minimal, axis=0) * weight

    # Contributions as sdcMicro credits them (see _sdcmicro_base_keys): a two-key MSU credits
    # both keys unless both values are correlated items (sdcMicro then credits each of them
    # once only, through the MSU with the other's base item); a larger MSU credits the base
    # key of each of its values.
    credited = minimal
    if size == 2 and base is not None:
        credited = minimal & ((masks[:, None] & correlated_bits[target][None, :]) != masks[:, None])
    counter = np.uint16 if len(rows_with[0]) < np.iinfo(np.uint16).max else np.int64
    for j in range(len(rows_with)):
        msu_count = np.zeros(len(target), dtype=counter)
        for row in rows_with[j]:
            msu_count += credited[row]
        credit = msu_count * weight
        if size >= 3 and base is not None:
            cand_contribution[target, base[target, j]] += credit
        else:
            cand_contribution[target, j] += credit


def _msu_scores(
    combo_values: np.ndarray,
    is_missing: np.ndarray,
    weights: np.ndarray,
    record_frequency: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SUDA score and per-key contribution share of the sample uniques, from the MSUs up to len(weights)-1 keys.

    Works on the distinct full keys (``combo_values``, one row per combination, with their
    frequencies); returns the combinations that are sample uniques, their scores and their
    contribution shares."""
    n_keys = combo_values.shape[1]
    max_size = len(weights) - 1
    frequency = record_frequency.astype(np.float64)
    combo_limit = max(_MIN_CODE_SPACE, _CODE_SPACE_PER_ROW * len(frequency))
    key_codes, key_cards = zip(*(_offset_codes(combo_values[:, j], combo_limit) for j in range(n_keys)))

    # Only sample uniques (full-key frequency 1) can have MSUs.
    unique_combos = np.flatnonzero(record_frequency == 1)
    n_candidates = len(unique_combos)
    bits = np.int64(1) << np.arange(n_keys, dtype=np.int64)
    cand_missing = is_missing[unique_combos]
    base = _sdcmicro_base_keys(key_codes, key_cards, frequency, is_missing, unique_combos)
    correlated_bits = None if base is None else ((base != np.arange(n_keys)) * bits).sum(axis=1)

    cand_score = np.zeros(n_candidates)
    cand_contribution = np.zeros((n_candidates, n_keys))
    credits = _Credits(cand_score, cand_contribution, base, correlated_bits)
    # Positions (into the candidate arrays) still searched: a record all of whose subsets of one
    # size are unique has no larger MSU (each larger subset contains a unique one).
    active = np.arange(n_candidates)
    previous_unique = None
    previous_row = {}
    for size in range(1, max_size + 1):
        if len(active) == 0:
            break
        subsets = list(combinations(range(n_keys), size))
        if not _level_fits(len(active), len(subsets)):
            raise SDCInputError(
                f"max_size: {len(active)} sample uniques x {len(subsets)} key subsets of size {size} "
                "exceed the memory bound; suda2_max_size(data, keys) gives the largest max_size that fits"
            )
        masks = np.array([sum(1 << j for j in s) for s in subsets], dtype=np.int64)
        rows_with = [np.flatnonzero(masks & (1 << j)) for j in range(n_keys)]
        active_combos = unique_combos[active]
        # One row per key subset, one column per active record: subsets are gathered as whole rows.
        unique = np.empty((len(subsets), len(active)), dtype=bool)
        # The candidates are sample uniques, so a candidate is unique on S exactly when no other
        # combination shares its values of S: counting combinations (unweighted) suffices.
        subset_codes = _subset_codes(key_codes, key_cards, subsets[: len(subsets) - (size == n_keys)], combo_limit)
        for row, (code, space) in enumerate(subset_codes):
            single = np.bincount(code, minlength=space) == 1
            if single.any():
                unique[row] = single[code[active_combos]]
            else:
                unique[row] = False
        if size == n_keys:
            unique[-1] = True  # the full key of a sample unique
        # A key whose value is the missing code never enters an MSU.
        for j in range(n_keys):
            missing_j = cand_missing[active, j]
            if missing_j.any():
                unique[rows_with[j]] &= ~missing_j

        # Only records unique on some subset of this size can have an MSU of this size.
        hit = unique.any(axis=0)
        if hit.all():
            target, hit_unique, hit_previous = active, unique, previous_unique
        elif hit.any():
            columns = np.flatnonzero(hit)
            target, hit_unique = active[columns], np.ascontiguousarray(unique[:, columns])
            hit_previous = None if previous_unique is None else np.ascontiguousarray(previous_unique[:, columns])
        else:
            target = None
        if target is not None:
            level = _SubsetLevel(size, weights[size], subsets, masks, rows_with, previous_row)
            _credit_msus(hit_unique, hit_previous, target, level, credits)

        still_open = ~unique.all(axis=0)
        if still_open.all():
            previous_unique = unique
        else:
            active = active[still_open]
            # Row-major again: boolean column selection returns a column-major copy.
            previous_unique = np.ascontiguousarray(unique[:, still_open])
        previous_row = {int(m): r for r, m in enumerate(masks)}

    scored = cand_score > 0
    cand_contribution[scored] /= cand_score[scored, None]
    return unique_combos, cand_score, cand_contribution


def _records_alone_in_hash_bucket(values: np.ndarray, frequency: np.ndarray) -> int:
    """sdcMicro's count of sample uniques: records alone in their 16-bit key-hash bucket.

    sdcMicro's duplicate scan counts a unique record only when no other record shares its hash
    bucket (uniques in shared buckets are missed), and the DIS formula uses that count. ``values``
    are the distinct full keys (hashed once each) and ``frequency`` their numbers of records.
    """
    bucket = np.zeros(len(values), dtype=np.int64)
    for j in range(values.shape[1]):
        carry = (bucket >> 15) & 1
        bucket = ((bucket << 1) + values[:, j] + carry) & _HASH_MASK
    occupancy = np.bincount(bucket, weights=frequency, minlength=_HASH_MASK + 1)
    return int(np.count_nonzero(occupancy[bucket] == 1))


def _dis_scores(
    score: np.ndarray, n_columns: int, uniques: int, records_in_pairs: int, fraction: np.float32
) -> np.ndarray:
    """DIS-SUDA from the SUDA scores of the sample uniques, in sdcMicro's mixed single/double precision.

    ``n_columns`` is the number of columns sdcMicro sees (keys plus padding), ``uniques`` its count
    of sample uniques (:func:`_records_alone_in_hash_bucket`) and ``records_in_pairs`` the number of
    records whose full key occurs exactly twice.
    """
    pairs = np.float32(records_in_pairs)
    uniques = np.float32(uniques)
    with np.errstate(divide="ignore", invalid="ignore"):
        dis = uniques * fraction / (uniques * fraction + pairs * (np.float32(1) - fraction))
        excess = float(uniques / dis - uniques)
    exponent = float(np.float32(1) + (np.float32(8) - np.float32(n_columns)) / np.float32(20))
    positive = score > 0
    powered = np.power(score[positive], exponent)
    adjustment = np.sum(1.0 / powered)
    result = np.zeros(len(score))
    result[positive] = 1.0 / (1.0 + excess / (powered * adjustment))
    return result
