"""Distance-based record linkage risk (SPEC §4.1): Euclidean, Manhattan, Mahalanobis or Gower distance
(mixed continuous, nominal and ordinal variables, as ``cluster::daisy``), variable weights, nearest
or one-to-one assignment and the count of best candidates, as sdcMicro ``recordLinkage``
(R/recordLinkage.R).

Rows of the original and the protected frame are matched by position; results are indexed like
``protected``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from sdc_dagster.errors import SDCInputError
from sdc_dagster.numerics.distance import gower_block, gower_encoding
from sdc_dagster.numerics.kept import KeptResults, content_digest
from sdc_dagster.risk.gower_scan import TIE_TOLERANCE
from sdc_dagster.risk.gower_search import gower_nearest, gower_own_distances, in_tree_order, observed_patterns, \
    pattern_search_is_cheaper
from sdc_dagster.validation import check_flag, check_option, check_scalar, paired_matrices


@dataclass(frozen=True)
class RecordLinkageRisk:
    """Result of :func:`record_linkage_risk`: the share of correct links and the per-record flags.

    ``expected_risk``: the expected share of correct links when the intruder breaks ties at random
    instead of in his favour (nearest: among the originals tied nearest; one-to-one: between
    identical records); at most ``risk``.

    ``partner``: the index label of the original record each protected record is linked to (NA
    for a record that takes no part); with ties in "nearest" mode, the first nearest in data order;
    None for a linkage asked for its shares only (``partners=False``).

    ``n_best`` (with ``count_best=True``): sdcMicro's ``n_best``, per record i the number of
    protected records whose distance to original i is within ``tol`` of the least distance from
    original i to any protected record (Int64; NA for a record that takes no part).
    """

    risk: float
    linked: pd.Series
    compared: int
    partner: pd.Series | None = None
    distance: str = "euclidean"
    assignment: str = "nearest"
    expected_risk: float | None = None
    n_best: pd.Series | None = None


_LINKAGE_DISTANCES = ("euclidean", "manhattan", "mahalanobis", "gower")
#: sdcMicro recordLinkage's default ``tol`` for tied best candidates, sqrt(.Machine$double.eps).
BEST_TOLERANCE = float(np.sqrt(np.finfo(np.float64).eps))
_LINKAGE_ASSIGNMENTS = ("nearest", "one_to_one")
# one-to-one linkage builds an n x n cost matrix (8 n^2 bytes) and solves it in O(n^3)
MAX_ONE_TO_ONE_LINKAGE = 10_000
# the exact Gower computation holds about this many (protected, original) pairs at a time
_GOWER_BLOCK_PAIRS = 1 << 22



def _linkage_weights(weights, columns: Sequence[str], distance: str) -> np.ndarray | None:
    """The variable weights as an array in the order of ``columns`` (None: equal weights), checked as
    sdcMicro's recordLinkage checks them: one per variable, finite, >= 0, not all 0."""
    if weights is None:
        return None
    if distance == "mahalanobis":
        raise SDCInputError("weights: apply to the euclidean, manhattan and gower distances, not to 'mahalanobis'")
    if isinstance(weights, Mapping):
        unknown = [c for c in weights if c not in columns]
        if unknown:
            raise SDCInputError(f"weights: names column {unknown[0]!r}, which is not a linkage column {list(columns)}")
        values = [weights.get(c, 1.0) for c in columns]
    else:
        values = list(weights)
        if len(values) != len(columns):
            raise SDCInputError(f"weights: needs one weight per linkage column ({len(columns)}), got {len(values)}")
    for c, w in zip(columns, values):
        check_scalar(w, f"weights[{c!r}]", low=0)
    values = np.asarray(values, dtype=np.float64)
    if not values.sum() > 0:
        raise SDCInputError("weights: at least one weight must be positive")
    return values


@dataclass(frozen=True)
class _OriginalSpace:
    """The originals of a Euclidean, Manhattan or Mahalanobis linkage mapped to its Minkowski space
    (:func:`_original_space`): the centre and the map (a per-variable factor, or the whitening
    matrix), p, the mapped originals and their k-d tree."""

    centre: np.ndarray
    factor: np.ndarray | None
    whiten: np.ndarray | None
    p: int
    zx: np.ndarray
    tree: cKDTree

    def mapped(self, xm: np.ndarray) -> np.ndarray:
        """Protected records mapped as the originals were."""
        return (xm - self.centre) * self.factor if self.whiten is None else (xm - self.centre) @ self.whiten


#: The mapped originals and k-d trees of the last few linkages (:func:`_original_space`), by a
#: digest of the original records and the linkage's options.
_ORIGINAL_SPACES = KeptResults(4)


def _original_space(x: np.ndarray, distance: str, columns: Sequence[str], *, weights: np.ndarray | None = None,
                    standardise: bool = True) -> _OriginalSpace:
    """The original records ``x`` mapped so that the Euclidean, Manhattan or Mahalanobis distance is
    the Minkowski distance (p = 2, or p = 1 for Manhattan) between the mapped rows, with the k-d tree
    of the mapped rows.

    Euclidean and Manhattan: each variable divided by its standard deviation in the original file
    (``standardise``; a constant variable is centred only) and multiplied by w_j^(1/p), so that the
    distance is (sum_j w_j |a_j - b_j|^p)^(1/p). Mahalanobis: whitened with the covariance of the
    original records, d^2 = (a - b)' S^-1 (a - b).

    The map and the tree depend on the originals only, and the wave chain links every plan's
    protected file (and every rung the plan search tries) to the same originals: the last
    four are kept (:data:`_ORIGINAL_SPACES`), found again by a digest
    (:func:`~sdc_dagster.numerics.kept.content_digest`) of the original records and the options, so a tree is built once per original file and distance, not once per plan
    (on 1,000,000 records x 3, 0.4 CPU s a tree)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    key = (content_digest(x), distance, None if weights is None else weights.tobytes(), bool(standardise))
    return _ORIGINAL_SPACES.get(key, lambda: _mapped_originals(x, distance, columns, weights, standardise))


def _mapped_originals(x: np.ndarray, distance: str, columns: Sequence[str], weights: np.ndarray | None,
                      standardise: bool) -> _OriginalSpace:
    """:func:`_original_space` computed."""
    centre = x.mean(axis=0)
    factor = whiten = None
    if distance in ("euclidean", "manhattan"):
        p = 2 if distance == "euclidean" else 1
        scale = x.std(axis=0, ddof=1) if standardise and len(x) > 1 else np.ones(x.shape[1])
        scale = np.where(scale > 0, scale, 1.0)
        factor = 1.0 / scale if weights is None else weights ** (1.0 / p) / scale
        zx = (x - centre) * factor
    else:
        # Mahalanobis: whiten with the covariance of the original records
        if len(x) <= x.shape[1]:
            raise SDCInputError(
                f"distance 'mahalanobis': needs more records observed in both files ({len(x)}) than columns "
                f"({x.shape[1]}) to estimate the covariance"
            )
        covariance = np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
        eigenvalues, eigenvectors = np.linalg.eigh(covariance)
        if eigenvalues.min() <= 1e-12 * max(eigenvalues.max(), 0.0) or eigenvalues.max() <= 0:
            raise SDCInputError(
                f"distance 'mahalanobis': the covariance of the original columns {list(columns)} is singular "
                "(a constant or linearly dependent column); drop it or use distance='euclidean'"
            )
        p = 2
        whiten = eigenvectors / np.sqrt(eigenvalues)
        zx = (x - centre) @ whiten
    return _OriginalSpace(centre, factor, whiten, p, zx, cKDTree(zx))


def _minkowski(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """Row-wise Minkowski distance between the rows of ``a`` and ``b`` (p = 1 or 2)."""
    gap = np.abs(a - b)
    return gap.sum(axis=1) if p == 1 else np.sqrt((gap * gap).sum(axis=1))


def _best_counts_tree(zx: np.ndarray, zm: np.ndarray, p: float, tol: float) -> np.ndarray:
    """sdcMicro's n_best for Minkowski distances: per original row, the protected rows within ``tol``
    of its least distance to any protected row (k-d tree queries)."""
    tree = cKDTree(zm)
    nearest = in_tree_order(lambda points: tree.query(points, k=1, p=p)[0], zx)
    return in_tree_order(lambda points, radius: tree.query_ball_point(points, radius, p=p, return_length=True),
                         zx, nearest + tol)


def _best_counts_gower(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray, weights, tol: float) -> np.ndarray:
    """sdcMicro's n_best for Gower distances, in blocks of originals: per original row, the
    protected rows with a distance within ``tol`` of its least one (-1 where no distance is defined)."""
    counts = np.full(len(zx), -1, dtype=np.int64)
    step = max(1, _GOWER_BLOCK_PAIRS // max(len(zm), 1))
    for start in range(0, len(zx), step):  # blocks of originals, not records
        block = gower_block(zx[start:start + step], zm, nominal, weights)
        with np.errstate(invalid="ignore"):
            least = np.nanmin(np.where(np.isnan(block), np.inf, block), axis=1)
            counts[start:start + step] = np.where(np.isfinite(least), (block <= least[:, None] + tol).sum(axis=1), -1)
    return counts


def _one_to_one_links(cost: np.ndarray, original_keys: np.ndarray, protected_keys: np.ndarray):
    """Linked flags, partners and link probabilities of the assignment of protected to original
    records (each original used once) with the least total ``cost`` (protected x original); ties
    between identical records (equal rows of the ``*_keys`` matrices) counted for the intruder
    (flags) or broken at random (probabilities)."""
    protected_rows, partner = linear_sum_assignment(cost)
    partner = partner[np.argsort(protected_rows)]
    # Identical protected records (or identical originals) can trade partners at no cost: within
    # each (protected value a, original value b) class, as many records count as linked as the
    # assignment sends protected records of a to originals of b (c_ab); at random, each record of
    # the class is linked with probability c_ab / (|a| |b|).
    protected_class = np.unique(protected_keys, axis=0, return_inverse=True)[1].ravel()
    original_class = np.unique(original_keys, axis=0, return_inverse=True)[1].ravel()
    own = pd.MultiIndex.from_arrays([protected_class, original_class])
    sent = pd.MultiIndex.from_arrays([protected_class, original_class[partner]])
    links = pd.Series(1, index=sent).groupby(level=[0, 1]).sum().reindex(own, fill_value=0).to_numpy()
    rank_in_class = pd.Series(np.arange(len(partner))).groupby([protected_class, original_class]).cumcount().to_numpy()
    size_a = np.bincount(protected_class)[protected_class]
    size_b = np.bincount(original_class)[original_class]
    return rank_in_class < links, partner, links / (size_a * size_b)


def _gower_links(zx: np.ndarray, zm: np.ndarray, nominal: np.ndarray, assignment: str, weights=None,
                 partners: bool = True):
    """Linked flags, partner positions (-1: none), own distances (NaN: undefined) and link
    probabilities (ties broken at random) of Gower linkage on encoded records (``weights``: daisy's
    variable weights, computed exactly in blocks). Without ``partners`` the pattern search stops at
    the first original nearer than a record's own (:func:`~sdc_dagster.risk.gower_search.gower_nearest`'s
    ``linked_only``): the partners of the records not linked are then not the nearest."""
    n = len(zx)
    if assignment == "one_to_one":
        distances = gower_block(zm, zx, nominal, weights)
        own = np.diag(distances).copy()
        # A pair with no variable observed in both records has no distance: it costs more than any
        # assignment of defined pairs (each at most 1), so the solver uses as few as it can.
        cost = np.where(np.isnan(distances), n + 1.0, distances)
        keys = lambda z: np.where(np.isnan(z), np.inf, z)  # noqa: E731 - one missing-value pattern, one class
        flags, partner, probability = _one_to_one_links(cost, keys(zx), keys(zm))
        defined = ~np.isnan(own)
        return flags & defined, partner, own, np.where(defined, probability, 0.0)
    x_patterns, m_patterns = observed_patterns(zx), observed_patterns(zm)
    complete = x_patterns[0].all() and m_patterns[0].all()  # one pattern each: every variable observed
    if weights is None and (complete or pattern_search_is_cheaper(x_patterns[0], m_patterns[0], len(zx), len(zm))):
        own = gower_own_distances(zx, zm, nominal)
        # identical released records share their nearest originals and ties (the tie radius depends
        # on the nearest distance only): each distinct record is searched once, as linked when any
        # of its copies is (the least own distance)
        first, copy_of = _distinct_rows(zm)
        least_own = np.full(len(first), np.nan)
        np.fmin.at(least_own, copy_of, own)
        distinct = zm[first]
        nearest, partner, ties = (values[copy_of] for values in gower_nearest(
            zx, distinct, nominal, x_patterns, observed_patterns(distinct), least_own, linked_only=not partners))
    else:
        nearest, partner, own, ties = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n), np.empty(n)
        step = max(1, _GOWER_BLOCK_PAIRS // max(n, 1))
        for start in range(0, n, step):
            rows = np.arange(start, min(start + step, n))
            distances = gower_block(zm[rows], zx, nominal, weights)
            own[rows] = distances[np.arange(len(rows)), rows]
            filled = np.where(np.isnan(distances), np.inf, distances)
            partner[rows] = filled.argmin(axis=1)
            nearest[rows] = filled[np.arange(len(rows)), partner[rows]]
            ties[rows] = (filled <= nearest[rows, None] * (1.0 + TIE_TOLERANCE) + 1e-300).sum(axis=1)
    # The tree and the direct formula may round differently; a relative tolerance keeps exact ties.
    linked = (own <= nearest * (1.0 + 1e-12) + 1e-300) & ~np.isnan(own)
    partner = np.where(linked, np.arange(n), np.where(np.isfinite(nearest), partner, -1))
    # ties at random: a linked record is its own original's with probability 1 / (originals tied nearest)
    return linked, partner, own, linked / np.maximum(ties, 1.0)


def _distinct_rows(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first position of each distinct row of ``z`` (rows equal bit for bit, so NaN equals NaN)
    and each row's place among them. The released records of one microaggregation group are
    copies of each other: a nearest-record search needs each only once."""
    bits = np.ascontiguousarray(z, dtype=np.float64).view(np.uint64)
    if not bits.size:
        return np.arange(len(z)), np.arange(len(z))
    # rows numbered by a 64-bit hash of their bits (a hash table, fast); if two different rows share
    # a hash, by the rows themselves (a sort)
    copy_of = pd.factorize(_row_digest(bits))[0]  # numbered in order of first appearance
    first = np.flatnonzero(np.r_[True, copy_of[1:] > np.maximum.accumulate(copy_of)[:-1]])
    if not (bits[first][copy_of] == bits).all():
        packed = bits.view(np.dtype((np.void, 8 * bits.shape[1]))).ravel()
        _, first, copy_of = np.unique(packed, return_index=True, return_inverse=True)
    return first, copy_of.ravel()


def _row_digest(bits: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of ``bits`` (float rows viewed as unsigned integers)."""
    digest = np.zeros(len(bits), dtype=np.uint64)
    for column in bits.T:
        digest = (digest ^ column) * np.uint64(0x100000001B3) + (digest >> np.uint64(29))
    return digest


def _nearest_links(zx: np.ndarray, zm: np.ndarray, p: float, tree: cKDTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Linked flags, partner positions and link probabilities (ties at random) of nearest-record
    linkage of the mapped protected rows ``zm`` to the mapped originals ``zx`` (Minkowski ``p``; their
    k-d ``tree``, queried once per distinct protected row for its two nearest originals).

    The originals tied nearest (within the tie radius, :data:`TIE_TOLERANCE`) are counted by radius
    queries only where they can be more than one (:func:`_tied_originals`): a row whose second
    nearest original lies clearly beyond the radius has exactly one (issue 38: on 1,000,000 records
    the radius queries cost as much as the nearest-record queries, and almost every row has no tie)."""
    first, copy_of = _distinct_rows(zm)
    distinct = zm[first]
    # the two nearest originals of each distinct row (a second that does not exist is at inf)
    distances, rows = in_tree_order(lambda points: tree.query(points, k=[1, 2], p=p), distinct)
    # two originals equally near: the nearest of a one-nearest query, as before (which of them the
    # two-nearest query puts first is not the same)
    level = distances[:, 0] == distances[:, 1]
    rows[level, 0] = in_tree_order(lambda points: tree.query(points, k=1, p=p)[1], distinct[level])
    nearest, nearest_row, second = distances[copy_of, 0], rows[copy_of, 0], distances[:, 1]
    own = _minkowski(zm, zx, p)
    # The tree and the direct formula may round differently; a relative tolerance keeps exact ties.
    hit = own <= nearest * (1.0 + 1e-12) + 1e-300
    ties = np.ones(len(zm))
    # the originals tied nearest, within max(own, nearest): per distinct row for the records whose
    # own distance is at most the nearest (the radius is the nearest's), per record for the others
    # (an own distance above the nearest by rounding only)
    at_nearest = hit & (own <= nearest)
    counted = np.zeros(len(first))
    asked = np.unique(copy_of[at_nearest])
    counted[asked] = _tied_originals(tree, p, distinct[asked], nearest[first[asked]] * (1.0 + TIE_TOLERANCE) + 1e-300,
                                     second[asked])
    ties[at_nearest] = counted[copy_of[at_nearest]]
    above = hit & ~at_nearest
    ties[above] = _tied_originals(tree, p, zm[above], own[above] * (1.0 + TIE_TOLERANCE) + 1e-300,
                                  second[copy_of[above]])
    partner = np.where(hit, np.arange(len(zm)), nearest_row)
    return hit, partner, hit / np.maximum(ties, 1.0)


#: A second nearest original beyond the tie radius by more than this share (and above
#: :data:`_CLEAR_OF_ZERO`) is outside it whatever the rounding of a radius query's distances
#: (about 1e-16 relative), so the row has one original within the radius and needs no query.
_CLEAR_OF_RADIUS = 1e-6
_CLEAR_OF_ZERO = 1e-100


def _tied_originals(tree: cKDTree, p: float, points: np.ndarray, radius: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The originals within ``radius`` of each of ``points``, each of which has its nearest
    original within its radius and ``second`` as the distance of its second nearest (inf: none):
    1 where the second lies clearly beyond the radius (:data:`_CLEAR_OF_RADIUS`), else the count of a
    radius query of the ``tree`` (as :func:`_nearest_links` counted them all before issue 38)."""
    counts = np.ones(len(points))
    near = ~((second > radius * (1.0 + _CLEAR_OF_RADIUS)) & (second > _CLEAR_OF_ZERO))
    counts[near] = in_tree_order(lambda points, radius: tree.query_ball_point(
        points, radius, p=p, return_length=True), points[near], radius[near])
    return counts


def _check_one_to_one_size(n: int) -> None:
    """One-to-one assignment holds an n x n distance matrix: at most MAX_ONE_TO_ONE_LINKAGE records."""
    if n > MAX_ONE_TO_ONE_LINKAGE:
        raise SDCInputError(
            f"assignment 'one_to_one': {n} records compared, at most {MAX_ONE_TO_ONE_LINKAGE} "
            "(an n x n distance matrix); use assignment='nearest'"
        )


def _gower_linkage(original, protected, columns, scales, categories, assignment: str, weights, best_tol,
                   partners: bool = True):
    """Linked flags, partner positions (-1: none; without ``partners`` not the nearest for a record
    not linked), records compared, the expected risk and the best counts (None unless ``best_tol`` is
    given) of Gower linkage (:func:`record_linkage_risk` with ``distance="gower"``)."""
    zx, zm, nominal = gower_encoding(original, protected, columns, scales, categories)
    if assignment == "one_to_one":
        _check_one_to_one_size(len(zx))
    if not len(zx):
        return np.zeros(0, bool), np.zeros(0, np.int64), 0, 0.0, np.zeros(0, np.int64)
    linked, partner, own, probability = _gower_links(zx, zm, nominal, assignment, weights, partners)
    best = None if best_tol is None else _best_counts_gower(zx, zm, nominal, weights, best_tol)
    return linked, partner, int((~np.isnan(own)).sum()), float(probability.sum() / len(zx)), best


def _continuous_linkage(original, protected, columns, scales, distance: str, assignment: str, weights,
                        standardise: bool, best_tol):
    """Linked flags, partner positions (-1: none), records compared, the expected risk and the best
    counts (-1 for a record not compared; None unless ``best_tol`` is given) of Euclidean, Manhattan
    or Mahalanobis linkage on the records observed in both files."""
    wrong = [c for c in columns if scales.get(c, "continuous") != "continuous"]
    if wrong:
        raise SDCInputError(
            f"scales[{wrong[0]!r}]: distance {distance!r} links on continuous variables only; "
            "use distance='gower' for nominal or ordinal variables"
        )
    x_all, xm_all = paired_matrices(original, protected, columns)
    observed = np.isfinite(x_all).all(axis=1) & np.isfinite(xm_all).all(axis=1)
    x, xm = x_all[observed], xm_all[observed]
    if assignment == "one_to_one":
        _check_one_to_one_size(len(x))
    linked = np.zeros(len(x_all), dtype=bool)
    partner = np.full(len(x_all), -1, dtype=np.int64)
    best = None if best_tol is None else np.full(len(x_all), -1, dtype=np.int64)
    positions = np.flatnonzero(observed)
    expected = 0.0
    if len(x):
        space = _original_space(x, distance, columns, weights=weights, standardise=standardise)
        zx, zm, p = space.zx, space.mapped(xm), space.p
        if assignment == "nearest":
            linked[observed], nearest_row, probability = _nearest_links(zx, zm, p, space.tree)
            partner[observed] = positions[nearest_row]
            expected = float(probability.sum() / len(x_all))
        else:
            cost = cdist(zm, zx, metric="cityblock" if p == 1 else "euclidean")
            flags, rows, probability = _one_to_one_links(cost, x, xm)
            linked[observed] = flags
            partner[observed] = positions[rows]
            expected = float(probability.sum() / len(x_all))
        if best is not None:
            best[observed] = _best_counts_tree(zx, zm, p, best_tol)
    return linked, partner, int(observed.sum()), expected, best


# over 10 parameters, kept: public (exported by sdc_dagster.risk), keyword-only options of the linkage (distance,
# assignment, scales, weights)
def record_linkage_risk(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    columns: Sequence[str],
    *,
    distance: str = "euclidean",
    assignment: str = "nearest",
    scales: Mapping[str, str] | None = None,
    categories: Mapping[str, Sequence] | None = None,
    weights: Mapping[str, float] | Sequence[float] | None = None,
    standardise: bool = True,
    count_best: bool = False,
    tol: float = BEST_TOLERANCE,
    partners: bool = True,
) -> RecordLinkageRisk:
    """Distance-based record linkage: share of protected records linked to their own original.

    SPEC §4.1. Each protected record is linked to an original record; it is a correct link when
    that original is its own, and the risk is the share of correct links.

    Distances (``distance``):

    * ``"euclidean"`` (default): on variables standardised with the mean and standard deviation of
      the ORIGINAL data (so both files are on the same scale; a constant variable is centred only).
    * ``"manhattan"``: the sum of the absolute differences, on the same standardised variables
      (sdcMicro recordLinkage's ``distance = "manhattan"``, daisy's L1 distance).
    * With ``standardise=False`` Euclidean and Manhattan distances are taken on the raw values, as
      sdcMicro's recordLinkage computes them (``cluster::daisy(..., stand = FALSE)``).
    * ``"mahalanobis"``: d(a, b)^2 = (a - b)' S^-1 (a - b), S the sample covariance (n - 1) of the
      original records (Domingo-Ferrer & Torra 2001 and Torra, Abowd & Domingo-Ferrer 2006 use
      Mahalanobis distance-based linkage; taking S from the original file is our choice). A
      singular S is refused.
    * ``"gower"``: Gower's (1971) distance for mixed data exactly as sdcMicro's ``recordLinkage``
      computes it, ``cluster::daisy(rbind(x, y), metric = "gower")`` with equal weights: the mean
      over the variables of the partial distances d_j(a, b), where for a continuous variable
      d_j = |a_j - b_j| / R_j with R_j the range of the variable over BOTH files together; for an
      ordinal variable the same on its category positions (codes 0..k-1 in the given order, R_j
      their range over both files); for a nominal variable d_j = 0 if a_j = b_j, else 1. A
      variable constant over both files has d_j = 0 and still counts in the mean. Missing values
      are handled pairwise: the mean is over the variables observed in both records, and a pair
      with no such variable has no distance.

    Weights (``weights``, sdcMicro's ``weights``): one non-negative number per linkage variable (a
    sequence in the order of ``columns``, or a mapping column -> weight, unnamed columns 1), not
    all 0. Gower: the weighted mean sum_j w_j d_j / sum_j w_j over the variables observed in both
    records, exactly daisy's weights (computed exactly in blocks: no pattern search). Euclidean and
    Manhattan: (sum_j w_j |a_j - b_j|^p)^(1/p) with p = 2, 1. Deviation: daisy applies ``weights``
    to Gower only and ignores them for purely numeric data, so sdcMicro's Euclidean and Manhattan
    linkage is unweighted whatever the weights; give no weights for its numbers. Mahalanobis takes
    no weights.

    Best candidates (``count_best=True``; sdcMicro's ``n_best``): for each record i, the number of
    protected records whose distance to original i is within ``tol`` (absolute, default
    sqrt(machine epsilon) as sdcMicro) of the least distance from original i to any protected
    record (k-d tree queries; for Gower in blocks of originals, n x n work). 1 means the nearest
    released record is unambiguous.

    Which Gower variables are nominal or ordinal (``scales``, ``categories``): ``scales`` maps a
    column to "nominal", "ordinal" or "continuous" (as in
    :func:`~sdc_dagster.loss.distance_losses`); ``categories`` maps an ordinal column to its
    categories in order. A column not in ``scales`` takes its scale from the dtypes, as daisy
    reads R classes: an ordered pandas Categorical (in either file) is ordinal with its
    categories as the order; an unordered Categorical, object, string or bool column is nominal
    (daisy treats R logicals as asymmetric binary; we do not); a numeric column is continuous.
    An ordinal column with neither ``categories`` nor an ordered dtype is ordered by the sorted
    values observed in either file. Euclidean and Mahalanobis distances take continuous columns
    only.

    Assignments (``assignment``):

    * ``"nearest"``: every protected record is linked to its nearest original (scipy cKDTree; for
      Gower with missing values a compiled scan of the originals grouped by missing-value pattern
      and nominal categories, the groups agreeing with the record first, with k-d trees per pattern
      pair for the records it leaves where they are many, exact, or an exact computation in blocks
      of protected records where that is cheaper: few records, many patterns; identical
      protected records, such as a microaggregation group, are searched once); a tie between its
      own original and another counts as a correct link (worst case, SPEC §4.5's intruder who
      takes every nearest neighbour to be the unit itself). ``expected_risk`` breaks
      the ties at random instead: a record whose own original is among t originals tied nearest
      counts 1/t (t counted in the same scan, by radius queries of the k-d trees, or in the blocks), since no
      intruder can tell which of t equally near originals is the unit (identical originals: ages,
      years, counts, categories). ``expected_risk`` <= ``risk``.
    * ``"one_to_one"``: protected records are assigned to distinct originals with the least total
      distance (``scipy.optimize.linear_sum_assignment``), the intruder who knows both files hold
      the same units. Identical protected records (e.g. one microaggregation group) or identical
      originals may trade partners at no cost; the number of correct links is the largest such a
      trade gives (per class of identical records, the first ones in data order are flagged);
      ``expected_risk`` gives the share when such ties are broken at random instead. Other ties of
      equal total distance are broken by the solver. Needs an n x n matrix: at most
      10,000 compared records (800 MB). For Gower, pairs without a distance are assigned only
      when no assignment avoids them (they cost more than any total of defined distances).

    Missing values (item non-response, suppression): Euclidean and Mahalanobis linkage use only
    records observed on every column in both files, as candidates and as records to link; a
    record with a missing value is never counted as linked (it does not show the intruder all the
    values linkage uses). Gower linkage uses every record, with daisy's pairwise distances; a
    record whose distance to its own original is undefined (no variable observed in both) is never
    linked. The risk is the share of linked records among all records.

    Parameters
    ----------
    original, protected : DataFrame
        Same number of rows, matched by position.
    columns : sequence of str
        Variables used for linkage (continuous; for Gower also nominal and ordinal).
    distance : "euclidean", "manhattan", "mahalanobis" or "gower".
    assignment : "nearest" or "one_to_one".
    scales : mapping {column: "nominal" | "ordinal" | "continuous"}, optional
        Scales of the linkage columns; a column not named takes its scale from its dtype.
    categories : mapping {column: ordered list of categories}, optional
        The order of ordinal columns.
    weights : sequence or mapping of non-negative numbers, optional
        Variable weights (see above).
    standardise : bool
        Euclidean and Manhattan on standardised variables (default) or on the raw values (False).
    count_best : bool
        Also count the best candidates of each record (``n_best``).
    tol : float
        The tolerance of the best candidates, >= 0.
    partners : bool
        Report each record's partner (default). False: ``partner`` is None, and Gower's nearest
        search of a record ends at the first original nearer than its own (issue 38: a record known
        not to be linked needs no nearest original; the release checks, which read the shares only,
        link so). The shares, flags, records compared and best counts are the same either way.

    Returns
    -------
    RecordLinkageRisk with ``risk`` (share of linked records), ``linked`` (bool Series indexed
    like ``protected``), ``compared`` (records observed in both files; for Gower, records with a
    distance to their own original), ``partner`` (index label of the original each protected
    record is linked to), ``expected_risk`` (ties broken at random) and with ``count_best``
    ``n_best``.

    References
    ----------
    SDC Practice Guide ch. 7.6 (S004); Domingo-Ferrer & Torra (2001), A quantitative comparison of
    disclosure control methods for microdata; Gower (1971), Biometrics 27(4); Kaufman &
    Rousseeuw (1990) and R ``cluster::daisy``; sdcMicro ``R/recordLinkage.R`` (Herranz et al.
    2015, global distance-based record linkage); Kuhn (1955) / Crouse (2016) for the assignment
    problem.
    """
    check_option(distance, "distance", _LINKAGE_DISTANCES)
    check_option(assignment, "assignment", _LINKAGE_ASSIGNMENTS)
    scales, categories = dict(scales or {}), dict(categories or {})
    columns = [columns] if isinstance(columns, str) else list(columns)
    weight_values = _linkage_weights(weights, columns, distance)
    check_flag(standardise, "standardise")
    check_flag(partners, "partners")
    best_tol = check_scalar(tol, "tol", low=0) if count_best else None
    if distance == "gower":
        linked, partner, compared, expected, best = _gower_linkage(
            original, protected, columns, scales, categories, assignment, weight_values, best_tol, partners)
    else:
        linked, partner, compared, expected, best = _continuous_linkage(
            original, protected, columns, scales, distance, assignment, weight_values, bool(standardise), best_tol)
    labels = pd.Series(original.index[np.maximum(partner, 0)], index=protected.index, name="partner")
    flags = pd.Series(linked, index=protected.index, name="linked")
    return RecordLinkageRisk(
        risk=float(linked.mean()) if len(linked) else 0.0,
        linked=flags,
        compared=compared,
        partner=labels.where(partner >= 0) if partners else None,
        distance=distance,
        assignment=assignment,
        expected_risk=expected,
        n_best=None if best is None else pd.Series(
            pd.array(np.where(best >= 0, best, 0), dtype="Int64"), index=protected.index, name="n_best"
        ).mask(best < 0),
    )

