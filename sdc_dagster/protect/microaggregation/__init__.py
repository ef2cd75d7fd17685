"""Microaggregation: every method of sdcMicro's ``microaggregation`` (SPEC §8.6).

Records are partitioned into groups of at least k and every value of the aggregated variables is
replaced by a value of its group (the group mean by default). A method decides the groups, one
module per family:

* :mod:`.mdav`: ``mdav`` (sdcMicro's C++ ``Mdav``, record for record);
* :mod:`.rmd`: ``rmd``, MDAV-like grouping around robust Mahalanobis outliers;
* :mod:`.ranking`: ``simple`` (data order), ``single`` (sorted by the first variable), ``onedims``
  (individual ranking, each variable on its own; ``individual_ranking`` is its descriptive alias),
  and the cut into groups every sorting method shares;
* :mod:`.projection`: ``pca``, ``mcdpca``, ``pppca`` (sorted by a first principal component);
* :mod:`.cluster`: ``clustpca``, ``clustmcdpca``, ``clustpppca``, ``influence`` (clustered first);
* :mod:`.gower`: :func:`microaggregation_gower`, sdcMicro's ``microaggrGower`` for mixed variables
  (each record aggregated with its k nearest on a Gower-type distance);

and :mod:`.measures` the value a group releases (``mean``, ``median``, ``trim``, ``onestep``,
weighted ``mean`` and ``median``).

References
----------
sdcMicro ``R/microaggregation.R``, ``R/mafast.R``; Templ (2008), Statistical Disclosure Control for
Microdata Using the R-Package sdcMicro, Transactions on Data Privacy 1(2); Domingo-Ferrer &
Mateo-Sanz (2002), IEEE TKDE 14(1); Hundepool et al. (2012) §3.4.2.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.protect.microaggregation.cluster import CLUSTER_METHODS, clara_clusters, cluster_order
from sdc_dagster.protect.microaggregation.gower import gower_options, microaggregation_gower
from sdc_dagster.protect.microaggregation.mdav import mdav_groups
from sdc_dagster.protect.microaggregation.measures import MEASURES, WEIGHTED_MEASURES, group_means, group_values
from sdc_dagster.protect.microaggregation.projection import mcdpca_order, pca_order, pppca_order
from sdc_dagster.protect.microaggregation.ranking import cut, onedims_labels, simple_order, single_order
from sdc_dagster.protect.microaggregation.rmd import rmd_labels, robust_distances, standardised
from sdc_dagster.protect.strata import stratum_codes, stratum_members
from sdc_dagster.validation import check_option, check_scalar, weight_values

#: sdcMicro's method names, and the descriptive alias of ``onedims``.
METHODS = ("mdav", "rmd", "pca", "clustpca", "clustmcdpca", "clustpppca", "pppca", "mcdpca", "influence",
           "onedims", "individual_ranking", "single", "simple")
#: Methods that draw random numbers (MCD subsets, CLARA samples): their seed is recorded.
RANDOMISED_METHODS = ("rmd", "mcdpca", "clustpca", "clustmcdpca", "clustpppca", "influence")

__all__ = ["METHODS", "MEASURES", "RANDOMISED_METHODS", "microaggregation", "microaggregation_gower",
           "microaggregation_options", "gower_options"]

_SORTING = {"simple": simple_order, "single": single_order, "pca": pca_order, "pppca": pppca_order}


def _stratum_labels(x: np.ndarray, method: str, k: int, columns: Sequence[str], clusters: np.ndarray | None,
                    nc: int, rng: np.random.Generator) -> np.ndarray:
    """Group labels (0..) of the records of one stratum: a vector, or records × variables for onedims."""
    if method == "onedims":
        return onedims_labels(x, k, columns)
    if len(x) < 2 * k:
        return np.zeros(len(x), dtype=np.int64)
    if method == "rmd":
        y = standardised(x)
        return rmd_labels(y, robust_distances(y, rng), k)
    if method == "mcdpca":
        return cut(mcdpca_order(x, rng), k)
    if method in CLUSTER_METHODS:
        centres = None
        if clusters is None:
            clusters, centres = clara_clusters(x, nc, rng)
        return cut(cluster_order(x, method, clusters, rng, centres), k)
    return cut(_SORTING[method](x), k)


def microaggregation_options(*, method: str = "mdav", k=3, measure: str = "mean", trim=0.0, weight=None, nc=8,
                             clusters=None) -> None:
    """Check the options of :func:`microaggregation` that need no data (its defaults are theirs): the
    method and measure names, k >= 1, 0 <= trim <= 0.5, nc >= 1, a weight only with a weighted
    measure, a clusters column only with a clustering method. A plan's checks run it on each step
    before any data is read (:func:`sdc_dagster.protect.plan.plan_problems`).

    Raises
    ------
    SDCInputError : ``"<option>: must be ..., got ..."`` for the first option that breaks its rule.
    """
    check_option(method, "method", METHODS)
    check_scalar(k, "k", integer=True, low=1)
    check_option(measure, "measure", MEASURES)
    check_scalar(trim, "trim (the share cut at each end)", low=0, high=0.5)
    if weight is not None and measure not in WEIGHTED_MEASURES:
        raise SDCInputError(f"weight: sdcMicro weights the measures {' and '.join(WEIGHTED_MEASURES)} only, "
                            f"not {measure!r}")
    check_scalar(nc, "nc (the number of clusters)", integer=True, low=1)
    if clusters is not None and method not in CLUSTER_METHODS:
        raise SDCInputError(f"clusters: only the clustering methods ({', '.join(CLUSTER_METHODS)}) use "
                            f"clusters, not method {method!r}")


def _check_options(data: pd.DataFrame, method: str, k, measure: str, trim, weight, nc, clusters) -> None:
    microaggregation_options(method=method, k=k, measure=measure, trim=trim, weight=weight, nc=nc, clusters=clusters)
    if clusters is not None:
        column = require_columns(data, [clusters], role="clusters column")[0]
        if data[column].isna().any():
            raise SDCInputError(f"clusters {column!r}: {int(data[column].isna().sum())} records have no cluster")


# over 10 parameters, kept: its keyword arguments are fixed by CONTRACT.md (sdcMicro's microaggregation)
def microaggregation(
    data: pd.DataFrame,
    columns: Sequence[str],
    *,
    k: int = 3,
    method: str = "mdav",
    strata: str | Sequence[str] | None = None,
    measure: str = "mean",
    trim: float = 0.0,
    weight: str | None = None,
    nc: int = 8,
    clusters: str | None = None,
    random_state=None,
) -> pd.DataFrame:
    """Replace ``columns`` by group values over groups of at least k records (SPEC §8.6).

    Parameters
    ----------
    data : the microdata; not modified.
    columns : numeric columns aggregated together (one grouping for all) or, for ``onedims``, one by one.
    k : minimum group size (sdcMicro ``aggr``).
    method : sdcMicro's method name: "mdav" (default), "rmd", "pca", "mcdpca", "pppca", "clustpca",
        "clustmcdpca", "clustpppca", "influence", "onedims" (alias "individual_ranking"), "single",
        "simple" (the modules of this package describe each). With a single column sdcMicro applies
        ``mafast`` whatever the method (the column sorted and cut: ``onedims``); so does this
        function, except for "mdav", which keeps its MDAV groups.
    strata : column name(s) (sdcMicro ``strata_variables``): each stratum is microaggregated on its
        own and the results are reassembled in record order; a missing stratum value is a stratum.
        A stratum of fewer than 2k records is one group (MDAV: even with fewer than k records, as
        sdcMicro's ``Mdav``; the other methods refuse a stratum of fewer than k records, sdcMicro's
        ``indexMicro`` stops below 2k).
    measure : the group value (:mod:`.measures`): "mean", "median", "trim" (trimmed mean, ``trim``
        the share cut at each end) or "onestep". sdcMicro ignores the measure for "mdav" and "rmd"
        (always the mean); here it applies to their groups.
    trim : the trimming share of ``measure="trim"``, 0 to 0.5.
    weight : a column of positive weights: weighted mean or weighted median group values.
        sdcMicro ignores weights for "mdav" and "rmd"; here they apply to their groups.
    nc : number of clusters of the clustering methods (sdcMicro ``nc``, default 8).
    clusters : for the clustering methods, a column holding the cluster of every record (instead of
        CLARA), e.g. the clustering sdcMicro found.
    random_state : seed or numpy Generator of the randomised methods (MCD subsets of "rmd",
        "mcdpca", "clustmcdpca"; CLARA's samples of the clustering methods): :data:`RANDOMISED_METHODS`.

    Returns
    -------
    A copy of ``data`` with ``columns`` replaced by float64 group values, indexed like ``data``.
    Missing values stay missing (MDAV and individual ranking group the observed values; the other
    methods need complete columns).

    References
    ----------
    SPEC §8.6; sdcMicro ``microaggregation``; Domingo-Ferrer & Mateo-Sanz (2002); Templ (2008).
    """
    columns = require_columns(data, columns, role="column")
    if not columns:
        raise SDCInputError("columns: name at least one column to microaggregate")
    _check_options(data, method, k, measure, trim, weight, nc, clusters)
    method = "onedims" if method == "individual_ranking" or (len(columns) == 1 and method != "mdav") else method
    for column in columns:
        series = data[column]
        if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            raise SDCInputError(f"column {column!r}: microaggregation needs a numeric column, got {series.dtype}")
        if method not in ("mdav", "onedims") and series.isna().any():
            raise SDCInputError(f"column {column!r}: method {method!r} needs complete values, "
                                f"{int(series.isna().sum())} are missing (mdav and onedims group the observed values)")
    if strata is None and len(data) < k:
        raise SDCInputError(f"k: groups of {k} need at least {k} records, the data have {len(data)}")
    x = data[columns].to_numpy(dtype="float64", na_value=np.nan)
    w = weight_values(data, weight)
    codes, values = stratum_codes(data, strata)
    members = stratum_members(codes)
    if method == "mdav":
        # MDAV makes a stratum of fewer than 2k records one group: a record in none of the strata
        # grouped (label -1) keeps its stratum as its group; the group means of all strata at once
        # (bincount sums each group's values in record order, as a stratum's own pass would)
        grouped = mdav_groups(x, int(k), [rows for rows in members if len(rows) >= 2 * k])
        labels = np.where(grouped >= 0, grouped + len(members), codes)
        if measure == "mean" and w is None:
            aggregated = np.where(np.isnan(x), np.nan, group_means(x, labels)[labels])
        else:
            aggregated = group_values(x, labels, measure=measure, trim=float(trim), weight=w)
    else:
        cluster_codes = None
        if clusters is not None:
            cluster_codes = pd.factorize(data[clusters], sort=True)[0]
        rng = np.random.default_rng(random_state)
        labels = np.full(x.shape if method == "onedims" else len(x), -1, dtype=np.int64)
        offset = 0
        for rows, value in zip(members, values):  # strata, not records
            if method != "onedims" and len(rows) < k:
                raise SDCInputError(f"strata: stratum {value!r} has {len(rows)} records, fewer than k={k}")
            own = None if cluster_codes is None else np.unique(cluster_codes[rows], return_inverse=True)[1].reshape(-1)
            local = _stratum_labels(x[rows], method, int(k), columns, own, int(nc), rng)
            labels[rows] = np.where(local >= 0, local + offset, -1)
            offset += int(local.max()) + 1 if local.size else 0
        aggregated = group_values(x, labels, measure=measure, trim=float(trim), weight=w)
    out = data.copy()
    for j, column in enumerate(columns):
        out[column] = aggregated[:, j]
    return out
