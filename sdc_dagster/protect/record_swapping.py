"""Targeted record swapping, TRS (SPEC §8.10), following sdcMicro ``recordSwap`` semantics.

What is kept from sdcMicro (R/recordSwap.R, src/recordSwap/recordSwap.cpp):

* Units are households: the geography (every ``hierarchy`` column, plus ``carry_along``) of a whole
  household is exchanged with that of a donor household; persons never move alone.
* Risk: for each hierarchy level l (top = 0), a person's count is the number of persons sharing
  their ``risk_variables`` values within their area at level l (areas nested: region > cell, ...).
  A household's risk at level l is the largest 1/count of its members. A household is at risk at
  level l when a member's count is below ``k_anonymity``; it must be swapped across the first
  (highest) such level, i.e. with a donor from a different area at that level.
* Swap rate: ``round(n_households * swaprate / 2)`` swaps (each swap moves two households), the
  half-unit rounded up or down at random, are distributed over the lowest-level areas in proportion
  to their number of households (remainders given to randomly chosen areas). Starting at the top
  level, households at risk at that level are swapped; at the lowest level every area also samples
  non-risky households, with probability increasing in their risk (weighted sampling without
  replacement by the exponential-key method, as sdcMicro's ``randSample``), until its target is met.
* Donors: not yet swapped, outside the sampled household's area at the swap level, with the same
  values of the first similarity profile (e.g. household size); when none is available, the next
  profile is tried. Donors with higher risk at that level are preferred (key risk / Exp(1)). As in
  sdcMicro's ``sampleDonor``, a donor may itself be a household sampled at that level in another
  area (two risky households of different regions are swapped with each other), or a household
  that found no donor at a higher level (it is not sampled again, but can still be chosen as a
  donor). Households left without a donor and never chosen as one stay unswapped and are reported.

Where this implementation differs (vectorisation; documented deviations):

* Matching is done for all households of a level at once: within each similarity group, sampled
  households (in random order) are paired rank by rank with donors in priority order. A pair whose
  donor lies in the sampled household's own area is rejected and both return to the pools; up to
  ``matching_rounds`` rounds re-pair the rest (later rounds draw fresh random donor orders); the
  households still without a donor then take, group by group (same profile and area), the donors of
  their profile outside their area in priority order, so that no household stays unswapped while a
  donor is available (sdcMicro walks the sampled households one by one, area by area).
* Sampled households are first paired with donors that were not sampled; households at risk at that
  level still without a donor are then paired with each other across areas (within each similarity
  group, sorted by a random order of the areas, the first half paired rank by rank with the second;
  pairs within one area rejected and retried for ``matching_rounds`` rounds). sdcMicro takes donors
  by priority among both kinds at once. The lowest level's extra draws are never paired with each
  other (each stands for one swap of its area's target).
* ``n_unmatched_households`` counts the households without a donor that stay unswapped; sdcMicro's
  log also lists a household that found no donor at a higher level but was later taken as a donor.
* A risk supplied by the user (``risk``, sdcMicro's ``risk`` / ``risk_threshold``) replaces the
  k-anonymity risk: see :func:`targeted_record_swap`. sdcMicro ignores ``risk_threshold`` without
  ``risk``; here that combination is refused.
* Risk variables and similarity variables are taken as given; similarity variables must be
  constant within a household (checked), as must the hierarchy and carry-along columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.keys import category_codes
from sdc_dagster.validation import check_scalar


@dataclass(frozen=True)
class RecordSwapResult:
    """Outcome of :func:`targeted_record_swap`.

    Attributes
    ----------
    data
        The input with the hierarchy (and carry-along) columns exchanged between swapped
        households (new arrays; the other columns share the input's memory); indexed like the input.
    swapped_with
        Per household id, the id of the household it exchanged geography with (itself if not
        swapped).
    n_swapped_households
        Number of households whose geography changed (twice the number of swaps).
    n_risky_households
        Households at risk at some hierarchy level (k-anonymity on the risk variables).
    n_unmatched_households
        Sampled or risky households for which no donor was found and that were not taken as a
        donor later: they keep their geography.
    """

    data: pd.DataFrame
    swapped_with: pd.Series
    n_swapped_households: int
    n_risky_households: int
    n_unmatched_households: int


def _codes(frame: pd.DataFrame, columns: Sequence[str], factors: dict | None = None) -> np.ndarray:
    """Non-negative int64 codes of the value combinations of ``columns`` (NA forms a value).

    Codes are mixed-radix numbers of the per-column codes of
    :func:`~sdc_dagster.keys.category_codes` (0 = missing, 1..c), re-densified (a sort) only
    when their range would grow too large for ``np.bincount``. ``factors`` caches each column's
    codes across calls (the same columns are coded at every hierarchy level).
    """
    code = np.zeros(len(frame), dtype=np.int64)
    bound = 1
    for col in columns:
        if factors is not None and col in factors:
            part, radix = factors[col]
        else:
            part, categories = category_codes(frame[col])
            radix = len(categories) + 1
            # Kept in the smallest integer type (one code per record and column is cached).
            part = part.astype(np.min_scalar_type(radix - 1), copy=False)
            if factors is not None:
                factors[col] = (part, radix)
        if bound * radix > 2**26:
            code = np.unique(code, return_inverse=True)[1].astype(np.int64).ravel()
            bound = int(code.max()) + 1 if len(code) else 1
        code = code * radix + part
        bound *= radix
    return code


def _rank_within(groups: np.ndarray) -> np.ndarray:
    """0-based position of each element within its run of equal values (``groups`` sorted)."""
    n = len(groups)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    return np.arange(n, dtype=np.int64) - run_start


def _household_constant(codes: np.ndarray, hh: np.ndarray, first_row: np.ndarray, name: str) -> None:
    if (codes != codes[first_row][hh]).any():
        raise SDCInputError(f"column {name!r}: must be constant within each household (targeted record swapping)")


def _distribute_swaps(hh_area: np.ndarray, n_areas: int, n_swaps: int, rng: np.random.Generator) -> np.ndarray:
    """Target number of sampled households per lowest-level area, proportional to its households."""
    size = np.bincount(hh_area, minlength=n_areas).astype(np.float64)
    exact = size / size.sum() * n_swaps
    target = np.floor(exact).astype(np.int64)
    excess = int(round(float((exact - target).sum())))
    if excess > 0:
        inhabited = np.flatnonzero(size > 0)  # area codes need not be dense
        target[rng.choice(inhabited, size=min(excess, inhabited.size), replace=False)] += 1
    return target


def _match_donors(
    sampled: np.ndarray,
    pool: np.ndarray,
    area: np.ndarray,
    profile: np.ndarray,
    priority: np.ndarray,
    rounds: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Pair sampled households with pool donors of the same profile and a different area.

    Returns (matched sampled households, their donors); each donor is used once.
    """
    matched_s, matched_d = [], []
    pending = sampled
    available = pool
    for r in range(rounds):
        if pending.size == 0 or available.size == 0:
            break
        s_order = np.lexsort((rng.random(pending.size), profile[pending]))
        s = pending[s_order]
        donor_key = -priority[available] if r == 0 else rng.random(available.size)
        d_order = np.lexsort((donor_key, profile[available]))
        d = available[d_order]
        d_profile = profile[d]
        # position of the first donor of each sampled household's profile, and how many there are
        first = np.searchsorted(d_profile, profile[s], side="left")
        last = np.searchsorted(d_profile, profile[s], side="right")
        rank = _rank_within(profile[s])
        has = rank < (last - first)
        cand_s = s[has]
        cand_d = d[first[has] + rank[has]]
        ok = area[cand_s] != area[cand_d]
        matched_s.append(cand_s[ok])
        matched_d.append(cand_d[ok])
        used = np.zeros(area.size, dtype=bool)
        used[cand_s[ok]] = True
        used[cand_d[ok]] = True
        pending = pending[~used[pending]]
        available = available[~used[available]]
    # The households the rounds left (their rank partners kept falling in their own area, as happens
    # in an area holding most donors): each (profile, area) group of them takes the donors of its
    # profile outside its area in priority order, as sdcMicro's sampleDonor does; a loop over these
    # few groups, not over records.
    if pending.size and available.size:
        groups = np.unique(np.column_stack([profile[pending], area[pending]]), axis=0)
        free = np.ones(area.size, dtype=bool)
        by_priority = available[np.argsort(-priority[available], kind="stable")]
        for code, own_area in groups:
            members = pending[(profile[pending] == code) & (area[pending] == own_area)]
            donors = by_priority[(profile[by_priority] == code) & (area[by_priority] != own_area)
                                 & free[by_priority]][:members.size]
            members = members[:donors.size]
            free[donors] = False
            matched_s.append(members)
            matched_d.append(donors)
    if not matched_s:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(matched_s), np.concatenate(matched_d)


def _match_among(
    sampled: np.ndarray, area: np.ndarray, profile: np.ndarray, rounds: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Pair sampled households with each other: same profile, different area (sdcMicro lets a sampled
    household of another area be the donor). Within each profile group of m households, sorted by a
    random order of the areas (random inside an area), the household at rank i < floor(m/2) is
    paired with the one at rank i + ceil(m/2): different areas unless one area holds more than half
    of the group. Pairs within one area are rejected; later rounds re-draw the orders.

    Returns (first households, their partners), disjoint."""
    firsts, seconds = [], []
    pending = sampled
    for _ in range(rounds):
        if pending.size < 2:
            break
        area_codes = np.unique(area[pending], return_inverse=True)[1].ravel()
        area_key = rng.permutation(int(area_codes.max()) + 1)[area_codes]
        order = np.lexsort((rng.random(pending.size), area_key, profile[pending]))
        s = pending[order]
        group = profile[s]
        rank = _rank_within(group)
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        size = np.diff(np.r_[starts, s.size])
        group_size = np.repeat(size, size)
        first = rank < group_size // 2
        a = s[first]
        b = s[np.flatnonzero(first) + (group_size[first] + 1) // 2]
        ok = area[a] != area[b]
        if not ok.any():
            break
        firsts.append(a[ok])
        seconds.append(b[ok])
        used = np.zeros(area.size, dtype=bool)
        used[a[ok]] = True
        used[b[ok]] = True
        pending = pending[~used[pending]]
    if not firsts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(firsts), np.concatenate(seconds)


def _user_risk(data: pd.DataFrame, risk, n_levels: int) -> np.ndarray:
    """The user's risk as an (n, levels) float array, checked (sdcMicro ``recordSwap(risk=)``)."""
    if isinstance(risk, str) or (isinstance(risk, Sequence) and all(isinstance(c, str) for c in risk)):
        values = data[require_columns(data, risk, role="risk column")]
    else:
        values = risk
        if not isinstance(risk, pd.DataFrame):
            values = pd.DataFrame(np.asarray(risk, dtype="float64").reshape(len(np.asarray(risk)), -1))
            values.columns = [f"risk column {j}" for j in range(values.shape[1])]
        if len(values) != len(data):
            raise SDCInputError(f"risk: needs one row per record ({len(data)}), got {len(values)} rows")
    if values.shape[1] != n_levels:
        raise SDCInputError(
            f"risk: needs one column per hierarchy level ({n_levels}), got {values.shape[1]}"
        )
    out = np.empty(values.shape, dtype=np.float64)
    for j, name in enumerate(values.columns):
        column = values.iloc[:, j]
        if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
            raise SDCInputError(f"risk {name!r}: must be numeric, got {column.dtype}")
        out[:, j] = column.to_numpy(dtype="float64", na_value=np.nan)
        if not np.isfinite(out[:, j]).all() or (out[:, j] < 0).any():
            raise SDCInputError(f"risk {name!r}: must hold finite values >= 0 (no missing value)")
    return out


@dataclass(frozen=True)
class _Households:
    """Person records grouped by household: household code per record (``hh``) and the ids, the
    records in household order (``order``, ``starts``, ``first_row``: one representative row per
    household), the area codes per level and the similarity-profile codes at household level."""

    hh: np.ndarray
    ids: pd.Index
    order: np.ndarray
    starts: np.ndarray
    first_row: np.ndarray
    area: list
    profile_codes: list
    factors: dict


def _households(data: pd.DataFrame, hid: str, hierarchy: list[str], carry_along: list[str],
                profiles: list[list[str]]) -> _Households:
    """The households of ``data`` with their geography and similarity profiles, checked constant
    within every household."""
    hh, hh_ids = pd.factorize(data[hid])
    hh = hh.astype(np.int64, copy=False)
    order = np.argsort(hh, kind="stable")
    starts = np.flatnonzero(np.r_[True, hh[order][1:] != hh[order][:-1]]) if len(hh) else np.empty(0, np.int64)
    first_row = order[starts]  # one representative row per household, in household-code order

    # Geography and similarity at household level (checked constant within households).
    factors: dict = {}
    area = []
    for level in range(len(hierarchy)):
        codes = _codes(data, hierarchy[: level + 1], factors)
        _household_constant(codes, hh, first_row, hierarchy[level])
        area.append(codes[first_row])
    for col in carry_along:
        _household_constant(_codes(data, [col], factors), hh, first_row, col)
    profile_codes = []
    for p in profiles:
        codes = _codes(data, p, factors)
        _household_constant(codes, hh, first_row, ", ".join(p))
        profile_codes.append(codes[first_row])
    return _Households(hh, pd.Index(hh_ids), order, starts, first_row, area, profile_codes, factors)


def _k_anonymity_risk(data, risk_variables, hierarchy, factors, order, starts, n_hh: int, k_anonymity: int):
    """Risk per household and level, the largest 1/count of its members' risk-variable values within
    the area (sdcMicro setRisk), and whether it is at risk there (a member's count below k)."""
    n_levels = len(hierarchy)
    risk_level = np.empty((n_levels, n_hh))
    min_count = np.empty((n_levels, n_hh), dtype=np.int64)
    for level in range(n_levels):
        codes = _codes(data, [*risk_variables, *hierarchy[: level + 1]], factors)
        person_count = np.bincount(codes)[codes]
        min_count[level] = np.minimum.reduceat(person_count[order], starts) if n_hh else []
        risk_level[level] = 1.0 / min_count[level]
    at_risk = min_count < k_anonymity if k_anonymity > 0 else np.zeros_like(min_count, dtype=bool)
    return risk_level, at_risk


def _pair_households(area, profile_codes, risk_level, swap_level, target, matching_rounds: int,
                     rng: np.random.Generator):
    """Level by level from the highest, the households to swap (the risky ones, and at the lowest
    level risk-weighted draws up to each area's target) paired with donors from other areas by the
    similarity profiles in turn. Returns each household's partner (itself when not swapped) and the
    households left without a donor."""
    n_levels, n_hh = len(area), len(swap_level)
    lowest = area[-1]
    partner = np.arange(n_hh, dtype=np.int64)
    used = np.zeros(n_hh, dtype=bool)
    unmatched = np.zeros(n_hh, dtype=bool)
    sampled_count = np.zeros(len(target), dtype=np.int64)
    for level in range(n_levels):
        free = ~used & ~unmatched
        must = free & (swap_level == level)
        if level < n_levels - 1:
            sampled = np.flatnonzero(must)
        else:
            # Lowest level: risky households plus risk-weighted draws up to each area's target.
            need = np.maximum(0, target - sampled_count - np.bincount(lowest[must], minlength=len(target)))
            candidates = np.flatnonzero(free & ~must)
            key = risk_level[level, candidates] / rng.exponential(size=candidates.size)
            by_area = np.lexsort((-key, lowest[candidates]))
            cand_sorted = candidates[by_area]
            rank = _rank_within(lowest[cand_sorted])
            extra = cand_sorted[rank < need[lowest[cand_sorted]]]
            sampled = np.sort(np.concatenate([np.flatnonzero(must), extra]))
        if sampled.size == 0:
            continue
        is_sampled = np.zeros(n_hh, dtype=bool)
        is_sampled[sampled] = True
        priority = risk_level[level] / rng.exponential(size=n_hh)
        pending = sampled
        initiators = []  # the sampled side of each pair (sdcMicro's swappedIndex keys)
        for codes in profile_codes:
            # donors that were not sampled (a household left without a donor at a higher level included,
            # as in sdcMicro), then the households at risk here still without one paired with each other
            # across areas. The extra draws of the lowest level are not paired with each other: each of
            # them stands for one swap of its area's target.
            for mutual in (False, True):
                if mutual:
                    s, d = _match_among(pending[must[pending]], area[level], codes, matching_rounds, rng)
                else:
                    pool = np.flatnonzero(~used & ~is_sampled)
                    s, d = _match_donors(pending, pool, area[level], codes, priority, matching_rounds, rng)
                partner[s] = d
                partner[d] = s
                used[s] = True
                used[d] = True
                initiators.append(s)
                pending = pending[~used[pending]]
            if pending.size == 0:
                break
        unmatched[pending] = True
        # Swaps counted towards each lowest area's target: one per pair, in the area of its sampled side
        # (sdcMicro's countSwaps counts the keys of swappedIndex, not the donors).
        sampled_count += np.bincount(lowest[np.concatenate(initiators)], minlength=len(target))
    return partner, unmatched


# over 10 parameters, kept: public (exported by sdc_dagster.protect), keyword-only, sdcMicro's recordSwap
# arguments one to one
def targeted_record_swap(
    data: pd.DataFrame,
    *,
    hid: str,
    hierarchy: Sequence[str],
    similar: Sequence[Sequence[str]] | Sequence[str],
    risk_variables: Sequence[str] | None = None,
    swaprate: float = 0.05,
    k_anonymity: int = 3,
    carry_along: Sequence[str] = (),
    random_state=None,
    matching_rounds: int = 4,
    risk: Sequence[str] | pd.DataFrame | np.ndarray | None = None,
    risk_threshold: float = 0.0,
) -> RecordSwapResult:
    """Targeted record swapping of household geography (SPEC §8.10; sdcMicro ``recordSwap``).

    Parameters
    ----------
    data
        Person records.
    hid
        Household id column.
    hierarchy
        Geographic columns from the highest to the lowest level (e.g. ``["region", "cell_id"]``);
        all of them are exchanged between paired households.
    similar
        Similarity profiles: a list of column lists (or one list) of household-level variables a
        donor must share (e.g. ``[["household_size"]]``); later profiles are fall-backs.
    risk_variables
        Person-level variables whose counts within each area define the k-anonymity risk (not used,
        and not needed, when ``risk`` is given).
    swaprate
        Share of households to swap (0..1); each swap counts two households.
    k_anonymity
        A household is at risk at a level when a member's count is below this; 0 disables.
    carry_along
        Further household-level columns exchanged with the geography.
    random_state
        int seed or numpy Generator; the same seed gives the same swaps.
    matching_rounds
        Rounds of rank pairing per similarity profile (see the module docstring).
    risk
        A risk supplied by the user (sdcMicro ``risk``), one value per record and hierarchy level:
        column names (one per level, highest first), or a DataFrame / array of n rows and one column
        per level (matched by position). Values must be finite and >= 0. As in sdcMicro, the
        k-anonymity rule is then not used; each household takes the largest risk of its members at
        each level; a household is at risk at the first (highest) level where its risk exceeds the
        threshold and is swapped across that level; the risk replaces 1/count as the weight of the
        lowest-level sampling and of the donor order, so a household of risk 0 is drawn, or serves
        as donor, only when no household of positive risk is left.
    risk_threshold
        sdcMicro ``risk_threshold``: a household is at risk at a level when its risk is strictly
        above it. 0 (the default) means 1 / ``k_anonymity`` (no household at risk when
        ``k_anonymity`` is 0), which with the k-anonymity risk 1/count is the rule count < k.

    Returns
    -------
    RecordSwapResult

    References
    ----------
    SPEC §8.10; S002; sdcMicro ``recordSwap`` (Gussenbauer), sdcTools/recordSwapping.
    """
    hierarchy = require_columns(data, hierarchy, role="hierarchy column")
    if not hierarchy:
        raise SDCInputError("hierarchy: name at least one geographic column")
    if risk is None:
        if risk_variables is None:
            raise SDCInputError("risk_variables: name the variables of the k-anonymity risk, or give a risk")
        risk_variables = require_columns(data, risk_variables, role="risk variable")
    else:
        record_risk = _user_risk(data, risk, len(hierarchy))
    check_scalar(risk_threshold, "parameter risk_threshold", low=0)
    if risk is None and risk_threshold != 0:
        raise SDCInputError("parameter risk_threshold: applies to a given risk only (the k-anonymity rule uses k_anonymity)")
    carry_along = [c for c in require_columns(data, carry_along, role="carry-along column") if c not in hierarchy]
    require_columns(data, [hid], role="household id column")
    if isinstance(similar, str) or (len(similar) and isinstance(similar[0], str)):
        similar = [list(similar) if not isinstance(similar, str) else [similar]]
    profiles = [require_columns(data, p, role="similarity variable") for p in similar]
    if not profiles or any(not p for p in profiles):
        raise SDCInputError("similar: give at least one non-empty similarity profile")
    check_scalar(swaprate, "parameter swaprate", low=0, high=1)
    check_scalar(k_anonymity, "parameter k_anonymity", integer=True, low=0)
    if data[hid].isna().any():
        raise SDCInputError(f"column {hid!r}: household id must not be missing")
    rng = np.random.default_rng(random_state)

    households = _households(data, hid, hierarchy, carry_along, profiles)
    hh, hh_ids, order, starts, first_row = (households.hh, households.ids, households.order, households.starts,
                                            households.first_row)
    area, profile_codes, factors = households.area, households.profile_codes, households.factors
    n_hh, n_levels = len(hh_ids), len(hierarchy)

    if risk is None:
        risk_level, at_risk = _k_anonymity_risk(data, risk_variables, hierarchy, factors, order, starts, n_hh,
                                                k_anonymity)
    else:
        # The user's risk: the largest of the household's members at each level.
        risk_level = np.maximum.reduceat(record_risk[order], starts, axis=0).T if n_hh else np.empty((n_levels, 0))
        threshold = risk_threshold if risk_threshold > 0 else (1.0 / k_anonymity if k_anonymity > 0 else np.inf)
        at_risk = risk_level > threshold
    swap_level = np.where(at_risk.any(axis=0), at_risk.argmax(axis=0), n_levels)

    half = n_hh * float(swaprate) / 2
    n_swaps = int(np.ceil(half)) if rng.random() < 0.5 else int(np.floor(half))
    lowest = area[-1]
    target = _distribute_swaps(lowest, int(lowest.max()) + 1 if n_hh else 0, n_swaps, rng) if n_hh else np.empty(0)

    partner, unmatched = _pair_households(area, profile_codes, risk_level, swap_level, target, matching_rounds, rng)

    # A shallow copy: the exchanged columns are new arrays, the others are shared with ``data``
    # (a deep copy of a census of millions of persons would double its memory).
    out = data.copy(deep=False)
    source_rows = first_row[partner[hh]]
    for col in [*hierarchy, *carry_along]:
        values = data[col].take(source_rows)
        values.index = data.index
        out[col] = values
    swapped_with = pd.Series(np.asarray(hh_ids)[partner], index=pd.Index(hh_ids, name=hid), name=f"{hid}_swapped")
    return RecordSwapResult(
        data=out,
        swapped_with=swapped_with,
        n_swapped_households=int((partner != np.arange(n_hh)).sum()),
        n_risky_households=int((swap_level < n_levels).sum()),
        n_unmatched_households=int((unmatched & (partner == np.arange(n_hh))).sum()),
    )
