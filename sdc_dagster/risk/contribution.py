"""Contributions of quasi-identifiers to disclosure risk: Shapley, solidarity and ESL values (SPEC §6).

Each record i defines a simple game v_i over the m variables (SPEC §6.5): a coalition S is
"winning" (v_i(S) = 1) when the record's categorical sub-combination on S has frequency < k or a
continuous variable of S is unsafe for the record. Every value used here is an ESL value
(SPEC §6.4, Radzik & Driessen 2013)

    phi_j(v) = sum_{S ⊆ M \\ {j}} p_s · ( q_{s+1}·v(S ∪ {j}) - q_s·v(S) ),   p_s = s!(m-s-1)!/m!

with q ≡ 1 for Shapley and q_s = 1/(s+1) (q_m = 1) for the Nowak–Radzik solidarity value.

How it is computed exactly without touching records x 2^m coalitions:

1. Categorical part. Records with the same categorical key share its sub-combination
   frequencies, so we work on the u distinct keys of the shared set-up
   (:class:`~sdc_dagster.risk.combined.CombinedSetup`). The project's compatible counter
   (:func:`~sdc_dagster.risk.subset_frequencies.subset_compatible_counts`: one down-set sum over the lattice
   of key values, or a sparse fallback) gives f(T) of every key on every subset T of the
   categorical variables, with a missing value as a wildcard (SPEC §5.8). Each key's truth table
   over the 2^h subsets (unsafe when f(T) < k) is summarised by its "size profile": the number
   Lg(a) of safe (losing) subsets of size a, and Lg_j(a) of those containing variable j.
2. Continuous part. For a record, an unsafe continuous variable makes every coalition containing
   it winning, and a safe one is a null player. So with z safe continuous variables the numbers
   of losing coalitions of size t in the whole game are convolutions of the profile with binomial
   coefficients: L(t) = sum_a Lg(a)·C(z, t-a), and likewise for coalitions containing j.
3. An ESL value depends on the game only through W(t) (winning coalitions of size t) and W_j(t)
   (those containing j): phi_j = sum_s p_s·( q_{s+1}·W_j(s+1) - q_s·(W(s) - W_j(s)) ). So the values
   of every distinct game (distinct profile x distinct set of unsafe continuous variables, found
   with np.unique) are a few vectorised numpy operations over coalition SIZES, then broadcast to
   the records by the np.unique inverse. Several values (Shapley and solidarity) share steps 1–3
   up to the last product (:func:`contribution_values`).

:func:`game_values` computes the same values by brute force from full truth tables (any game,
small m); the tests check one against the other and against the definitions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import comb

from sdc_dagster.errors import NotComputable, SDCInputError
from sdc_dagster.risk.subset_frequencies import subset_compatible_counts
from sdc_dagster.keys import pack_codes
from sdc_dagster.risk.combined import CombinedSetup, prepare_combined

#: Named values accepted by ``value=``.
NAMED_VALUES = ("shapley", "solidarity", "esl_1_over_s")

# 2^h truth tables per key bound h; 62 bits hold the continuous mask.
MAX_CATEGORICAL = 16
MAX_CONTINUOUS = 62
# Distinct keys x 2^h cells handled per block (bounds peak memory to a few hundred MB).
_BLOCK_CELLS = 1 << 22


def esl_coefficients(value, m: int) -> np.ndarray:
    """The ESL vector q_0..q_m (SPEC §6.4) for a named value or user-given q_1..q_{m-1}.

    Parameters
    ----------
    value : str or sequence of float
        "shapley" (q_s = 1), "solidarity" (Nowak–Radzik: q_s = 1/(s+1)), "esl_1_over_s"
        (q_s = 1/s, the value behind the published "solidarity" numbers, SPEC §6.7 and §13 item 10),
        or the m - 1 numbers q_1..q_{m-1}.
    m : int
        Number of players.

    Returns
    -------
    ndarray of length m + 1 with q_0 = 0 and q_m = 1.
    """
    s = np.arange(m + 1, dtype=np.float64)
    if isinstance(value, str):
        if value == "shapley":
            q = np.ones(m + 1)
        elif value == "solidarity":
            q = 1.0 / (s + 1.0)
        elif value == "esl_1_over_s":
            q = 1.0 / np.maximum(s, 1.0)
        else:
            raise SDCInputError(f"value: must be one of {NAMED_VALUES} or a sequence of q_1..q_(m-1), got {value!r}")
    else:
        given = np.asarray(value, dtype=np.float64).ravel()
        if given.size != m - 1 or not np.isfinite(given).all():
            raise SDCInputError(f"value: an ESL vector must hold m - 1 = {m - 1} finite numbers q_1..q_(m-1), got {value!r}")
        q = np.concatenate([[0.0], given, [1.0]])
    q[0], q[m] = 0.0, 1.0
    return q


def _size_weights(m: int) -> np.ndarray:
    """p_s = s!(m-s-1)!/m! for s = 0..m-1."""
    return 1.0 / (m * comb(m - 1, np.arange(m), exact=False))


def game_values(truth_tables: np.ndarray, value="shapley") -> np.ndarray:
    """ESL / Shapley / solidarity values of games given by their full truth tables (brute force).

    SPEC §6.4. Coalition S is encoded by the integer sum_{j in S} 2^j; ``truth_tables[g, S]`` is
    v_g(S) (v_g(∅) is taken as 0). Work is O(G·m·2^m): for small m only.

    Parameters
    ----------
    truth_tables : array (G, 2^m) or (2^m,)
    value : see :func:`esl_coefficients`

    Returns
    -------
    ndarray (G, m) (or (m,) for a single game) of values.
    """
    tables = np.asarray(truth_tables, dtype=np.float64)
    single = tables.ndim == 1
    tables = np.atleast_2d(tables).copy()
    cells = tables.shape[1]
    m = int(cells).bit_length() - 1
    if cells != 1 << m or m < 1:
        raise SDCInputError(f"truth_tables: need 2^m columns with m >= 1, got {cells}")
    tables[:, 0] = 0.0
    q = esl_coefficients(value, m)
    coalitions = np.arange(cells)
    size = np.bitwise_count(coalitions.astype(np.uint64)).astype(np.int64)
    p = np.append(_size_weights(m), 0.0)
    out = np.empty((tables.shape[0], m))
    for j in range(m):
        without = coalitions[(coalitions >> j) & 1 == 0]
        s = size[without]
        out[:, j] = tables[:, without | (1 << j)] @ (p[s] * q[s + 1]) - tables[:, without] @ (p[s] * q[s])
    return out[0] if single else out


# --- categorical truth tables from the compatible counter ---------------------------------------------


def _categorical_profiles(setup: CombinedSetup):
    """Per record the index of its distinct categorical size profile, and the profiles.

    A profile row holds Lg(0..h) followed by Lg_j(0..h) for j = 1..h (counts of safe subsets of
    the categorical variables by size, and those containing j). A subset T is safe for a key when
    f(T) >= k, f(T) from :func:`~sdc_dagster.risk.subset_frequencies.subset_compatible_counts` (SPEC §5.8: NA
    is a wildcard); the empty subset is safe (SPEC §6.5). Returns (profile_of_record, profiles as
    int64 (P, (h+1)·(h+1))).
    """
    h = len(setup.categorical)
    if h == 0:
        return np.zeros(len(setup.unsafe_continuous), dtype=np.int64), np.ones((1, 1), dtype=np.int64)
    keys = setup.keys
    cells = 1 << h
    subsets = np.arange(cells)
    size = np.bitwise_count(subsets.astype(np.uint64)).astype(np.int64)
    # profile_matrix[T, b·(h+1) + a] = 1 when |T| = a and (b = 0 or variable b-1 in T).
    member = np.column_stack([np.ones(cells, dtype=bool)] + [(subsets >> j) & 1 == 1 for j in range(h)])
    by_size = size[:, None] == np.arange(h + 1)[None, :]
    profile_matrix = (member[:, :, None] & by_size[:, None, :]).reshape(cells, (h + 1) * (h + 1)).astype(np.float32)

    profiles = np.zeros((len(keys.count), (h + 1) * (h + 1)))
    for rows, block_subsets, counts in subset_compatible_counts(keys.digits, keys.radices, keys.count, block_cells=_BLOCK_CELLS):
        safe = counts >= setup.k
        safe[:, block_subsets == 0] = True  # the empty sub-combination is safe (SPEC §6.5)
        profiles[rows] += safe.astype(np.float32) @ profile_matrix[block_subsets]  # sums < 2^24: exact
    profiles = np.rint(profiles).astype(np.int64)
    # rows packed into one int64 code each and hashed (np.unique(axis=0) sorts whole rows: slower)
    (code,) = pack_codes([profiles], profiles.max(axis=0, initial=0) + 1)
    profile_of_key, distinct = pd.factorize(code)
    representative = np.empty(len(distinct), dtype=np.int64)
    representative[profile_of_key] = np.arange(len(code))  # any row of a group: they are equal
    return profile_of_key[keys.record_key], profiles[representative]


# --- values of the risk games from size profiles -----------------------------------------------------


def _convolve_sizes(profile: np.ndarray, binomials: np.ndarray, length: int) -> np.ndarray:
    """out[..., t] = sum_a profile[..., a]·binomials[..., t - a] for t < length."""
    out = np.zeros(profile.shape[:-1] + (length,))
    width = binomials.shape[-1]
    for a in range(profile.shape[-1]):  # at most h + 1 sizes
        stop = min(length, a + width)
        if stop > a:
            out[..., a:stop] += profile[..., a:a + 1] * binomials[..., : stop - a]
    return out


def _risk_game_values(
    categorical_profile: np.ndarray, unsafe_continuous: np.ndarray, h: int, qs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """ESL values (G, m) of risk games given by categorical size profiles and unsafe continuous sets,
    one array per ESL vector of ``qs``; the coalition counts W(t), W_j(t) are built once for all."""
    c = unsafe_continuous.shape[1]
    m = h + c
    G = categorical_profile.shape[0]
    blocks = categorical_profile.reshape(G, h + 1, h + 1).astype(np.float64)
    safe_by_size, safe_with_j = blocks[:, 0, :], blocks[:, 1:, :]
    z = c - unsafe_continuous.sum(axis=1)
    r = np.arange(c + 1)
    b_z = comb(z[:, None], r[None, :])  # C(z, r); comb returns 0 when r > z
    b_z1 = comb(np.maximum(z - 1, 0)[:, None], r[None, :]) * (z > 0)[:, None]
    sizes = np.arange(m + 1)
    losing = _convolve_sizes(safe_by_size, b_z, m + 1)
    winning = comb(m, sizes)[None, :] - losing  # W(t)
    all_with_j = comb(m - 1, sizes - 1)  # coalitions of size t containing a given player

    p = _size_weights(m)
    s = np.arange(m)

    def value_from(q, winning_with_j, winning_all):
        """phi = sum_s p_s·( q_{s+1}·W_j(s+1) - q_s·(W(s) - W_j(s)) ) along the last axis."""
        gain = q[s + 1] * winning_with_j[..., s + 1]
        loss = q[s] * (winning_all[..., s] - winning_with_j[..., s])
        return (gain - loss) @ p

    if h:
        categorical_winning = all_with_j - _convolve_sizes(safe_with_j, b_z[:, None, :], m + 1)
    if c:
        safe_losing = np.zeros((G, m + 1))
        safe_losing[:, 1:] = _convolve_sizes(safe_by_size, b_z1, m)
        all_winning = np.broadcast_to(all_with_j, (G, m + 1))
    out = []
    for q in qs:
        values = np.empty((G, m))
        if h:
            values[:, :h] = value_from(q, categorical_winning, winning[:, None, :])
        if c:
            unsafe_player = value_from(q, all_winning, winning)
            safe_player = value_from(q, all_with_j - safe_losing, winning)
            values[:, h:] = np.where(unsafe_continuous, unsafe_player[:, None], safe_player[:, None])
        out.append(values)
    return out


def _value_name(value) -> str:
    return value if isinstance(value, str) else "esl"


def contribution_values(
    data: pd.DataFrame,
    categorical: Sequence[str],
    continuous: Sequence[str],
    precision,
    *,
    k: int = 3,
    weight: str | None = None,
    omega=None,
    values: Sequence = ("shapley", "solidarity"),
    setup: CombinedSetup | None = None,
) -> dict:
    """Several values of the risk games at once (SPEC §6.4–6.6, §5.8): one set-up, one pass.

    The set-up (:func:`~sdc_dagster.risk.combined.prepare_combined`), the categorical truth tables
    and the distinct games are built once; each value is then a few numpy operations over
    coalition sizes. Parameters as :func:`contributions`, plus:

    values : sequence
        Each a named value ("shapley", "solidarity", "esl_1_over_s") or an ESL vector q_1..q_{m-1}.
    setup : CombinedSetup, optional
        A set-up already prepared from ``data`` with the same arguments (then it is not rebuilt).

    Returns
    -------
    dict value name -> (per_record, global_) as returned by :func:`contributions`; an ESL vector
    is keyed by its position in ``values`` (an int).
    """
    if setup is None:
        setup = prepare_combined(data, categorical, continuous, precision, k=k, weight=weight, omega=omega)
    h, c = len(setup.categorical), len(setup.continuous)
    players = [*setup.categorical, *setup.continuous]
    if h > MAX_CATEGORICAL:
        raise NotComputable(f"categorical: at most {MAX_CATEGORICAL} categorical variables are supported, got {h}")
    if c > MAX_CONTINUOUS:
        raise NotComputable(f"continuous: at most {MAX_CONTINUOUS} continuous variables are supported, got {c}")
    if h + c < 2:
        raise NotComputable(f"categorical, continuous: a game needs at least 2 variables, got {players}")
    values = list(values)
    qs = [esl_coefficients(value, h + c) for value in values]

    profile_of_record, profiles = _categorical_profiles(setup)
    continuous_mask = setup.unsafe_continuous.astype(np.int64) @ (np.int64(1) << np.arange(c, dtype=np.int64))
    game_code = profile_of_record * (np.int64(1) << c) + continuous_mask
    game_of_record, distinct_games = pd.factorize(game_code)
    game_profile = profiles[distinct_games >> c]
    game_unsafe = ((distinct_games[:, None] >> np.arange(c)) & 1).astype(bool)
    game_values_per_q = _risk_game_values(game_profile, game_unsafe, h, qs)

    # v_i(M) = 1 unless the full categorical key is safe (Lg(h) = 1) and no continuous variable is unsafe.
    full_key_safe = game_profile[:, h] == 1 if h else np.ones(len(distinct_games), dtype=bool)
    null_game = full_key_safe & ~game_unsafe.any(axis=1)
    game_of_record = game_of_record.ravel()
    records_per_game = np.bincount(game_of_record, minlength=len(distinct_games)).astype(np.float64)
    records_per_game[null_game] = 0.0
    n0 = records_per_game.sum()
    out = {}
    for position, (value, per_game) in enumerate(zip(values, game_values_per_q)):
        per_record = pd.DataFrame(per_game[game_of_record], index=data.index, columns=players)
        totals = records_per_game @ per_game / n0 if n0 > 0 else np.zeros(h + c)
        key = value if isinstance(value, str) else position
        out[key] = (per_record, pd.Series(totals, index=players, name=_value_name(value)))
    return out


def contributions(
    data: pd.DataFrame,
    categorical: Sequence[str],
    continuous: Sequence[str],
    precision,
    *,
    k: int = 3,
    weight: str | None = None,
    value="shapley",
    omega=None,
) -> tuple[pd.DataFrame, pd.Series]:
    """Each variable's contribution to each record's risk and to the global risk (SPEC §6.5–6.6).

    Parameters
    ----------
    data : DataFrame
        Microdata; missing values in the quasi-identifiers follow SPEC §5.8 (a categorical NA is a
        wildcard in every sub-combination, a continuous NA is safe).
    categorical, continuous : sequence of str
        The categorical and continuous quasi-identifiers (players 1..h and h+1..m, in this order).
    precision : mapping {column: p_j} or float
        Precision of each continuous variable (SPEC §5.2).
    k : int
        Threshold for categorical frequencies and neighbourhood counts (default 3).
    weight : str, optional
        Design-weight column: continuous safety uses w*_j(i) (SPEC §5.6); categorical safety is
        always the sample frequency < k (SPEC §6.5).
    value : str or sequence of float
        "shapley", "solidarity" (Nowak–Radzik), "esl_1_over_s" or an ESL vector q_1..q_{m-1}
        (SPEC §6.4, §6.7). Several values at once: :func:`contribution_values`.
    omega : str or float, optional
        Weight in w*_j(i), as in :func:`sdc_dagster.risk.combined.combined_risk`.

    Returns
    -------
    (per_record, global_):
        per_record: DataFrame indexed like ``data``, one column per variable (categorical then
        continuous), phi_j(v_i); zero rows for records whose game is null.
        global_: Series indexed by variable, phi_j(v) = mean of phi_j(v_i) over N_0 = {i : v_i(M) = 1}
        (SPEC §6.6); sums to 1 for the efficient values. OPEN decision: when N_0 is empty (no
        unsafe record) every global contribution is 0 — no variable contributes to a risk that is
        not there — and the sum is 0.

    References
    ----------
    Młodak (S000); Shapley (1953); Nowak & Radzik (1994), "A solidarity value for n-person
    transferable utility games"; Radzik & Driessen (2013), "On a family of values for TU-games
    generalizing the Shapley value".
    """
    (result,) = contribution_values(
        data, categorical, continuous, precision, k=k, weight=weight, omega=omega, values=[value]
    ).values()
    return result
