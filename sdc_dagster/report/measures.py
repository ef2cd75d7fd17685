"""What each measure of the release report means, and how its numbers are written.

Every risk and information-loss figure the pipeline computes has an entry here: the group it
belongs to, a one-line meaning, its direction (lower or higher is better), its range, the SPEC
section it implements and its kind, which decides how it is formatted (counts as integers, shares
as percentages, scale-dependent figures with their relative counterpart, scientific notation
only for very large or very small values).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from sdc_dagster.validation import check_option

GROUPS = (
    "Disclosure risk",
    "Utility of categorical variables",
    "Utility of continuous variables",
    "Multivariate structure",
    "Młodak's measures (TOPSIS, distance lambda, inverse correlation)",
    "Records and values compared",
)
"""Groups of the measures, in the order the report lists them."""

KINDS = ("count", "share", "percent", "expected", "index", "scale")
"""``count``: integer; ``share``: a proportion in [0, 1], written as a percentage; ``percent``: a
figure computed in percent already (a relative change), written with "%" as it is; ``expected``:
an expected number of records (one decimal); ``index``: a bounded or unit-free figure (three
significant digits); ``scale``: depends on the variables' units (shown with its relative form)."""

LOWER, HIGHER = "lower is better", "higher is better"


@dataclass(frozen=True)
class Measure:
    """One measure: ``label``, ``group`` (one of :data:`GROUPS`), ``meaning`` (one line),
    ``direction``, ``range``, ``spec`` (SPEC section), ``kind`` (one of :data:`KINDS`) and,
    for a scale-dependent measure, ``relative``: the name of its relative form."""

    label: str
    group: str
    meaning: str
    direction: str
    range: str
    spec: str
    kind: str
    relative: str | None = None


_RISK, _CAT, _CONT, _MULTI, _SEED, _COUNTS = GROUPS

_MEASURES: dict[str, Measure] = {
    "global_risk": Measure("Global risk", _RISK, "mean individual re-identification risk over the records",
                           LOWER, "0 to 1", "§3.3", "share"),
    "expected_reidentifications": Measure(
        "Expected re-identifications", _RISK, "records an intruder is expected to re-identify (sum of individual risks)",
        LOWER, "0 to n records", "§3.3", "expected"),
    "household_risk": Measure("Household risk", _RISK, "mean risk that at least one member of a household is re-identified",
                              LOWER, "0 to 1", "§3.5", "share"),
    "household_expected_reidentifications": Measure(
        "Expected household re-identifications", _RISK, "records in households expected to be re-identified",
        LOWER, "0 to n records", "§3.5", "expected"),
    "suppressed_values": Measure("Values suppressed", _RISK, "key values set to missing by the plan (local suppression)",
                                 LOWER, "0 to n x keys", "§8.3", "count"),
    "sample_uniques": Measure("Sample uniques", _RISK, "records whose key combination no other record shares",
                              LOWER, "0 to n records", "§2.3", "count"),
    "model_risk_gr1": Measure(
        "Model-based risk gr1 (sdcMicro modRisk)", _RISK,
        "the sum over the sample-unique key cells of P(population unique) = exp(-(1 - pi) lambda), lambda the "
        "log-linear fit of the spec's model (risk.model_risk; by default the Poisson fit of the keys' main "
        "effects), divided by the number of key cells holding records, as "
        "sdcMicro's gr1; records with a suppressed key left out; blank when the keys' table exceeds 4,194,304 "
        "cells or no record has every key",
        LOWER, "0 to 1", "§3.9", "share"),
    "model_risk_gr2": Measure(
        "Model-based risk gr2 (sdcMicro modRisk)", _RISK,
        "the same with the expected chance that a match to a sample unique is correct, (1 - exp(-v)) / v, "
        "v = (1 - pi) lambda", LOWER, "0 to 1", "§3.9", "share"),
    "population_uniques_dankar": Measure(
        "Population uniques, Dankar et al.'s estimate (ARX)", _RISK,
        "units of the population alone in their key combination, estimated from the sample's class sizes and the "
        "population size (risk.population_size, else the sum of the weights): Pitman's model with a sampling "
        "fraction up to 10 %, else the smaller of Zayatz's and the SNB model's (ARX's decision rule); a "
        "suppressed key value is a category; blank where no model gives an estimate",
        LOWER, "0 to N units", "§3.9 (ARX)", "expected"),
    "population_uniques_pitman": Measure(
        "Population uniques, Pitman's model (ARX)", _RISK,
        "the number of population uniques under Pitman's sampling formula fitted by maximum likelihood "
        "(Hoshino 2001); blank when the maximum lies on the edge of the parameter space",
        LOWER, "0 to N units", "§3.9 (ARX)", "expected"),
    "population_uniques_zayatz": Measure(
        "Population uniques, Zayatz's model (ARX)", _RISK,
        "the sample uniques times the chance that a sample unique is a population unique (hypergeometric, the "
        "sample class sizes taken as the population's), over the sampling fraction (Zayatz 1991)",
        LOWER, "0 to N units", "§3.9 (ARX)", "expected"),
    "population_uniques_snb": Measure(
        "Population uniques, SNB model (ARX)", _RISK,
        "K beta^alpha: the population classes of 1 + negative-binomial units (Chen & Keller-McNulty 1998) fitted "
        "to the sample's classes of one and two records, K by Shlosser's estimator (Haas & Stokes 1998); blank "
        "without a solution (e.g. no class of two records)",
        LOWER, "0 to N units", "§3.9 (ARX)", "expected"),
    "records_above_threshold": Measure(
        "Records above the risk threshold", _RISK, "records whose individual risk exceeds the spec's threshold",
        LOWER, "0 to n records", "§3.3", "count"),
    "record_linkage_risk": Measure(
        "Record linkage risk", _RISK, "share of perturbed records whose nearest original record is their own "
        "(a tie with another original counts for the intruder: an upper bound)", LOWER, "0 to 1", "§4.1", "share"),
    "record_linkage_expected_risk": Measure(
        "Record linkage risk, expected", _RISK,
        "the same with ties broken at random: a record whose own original is one of t equally near originals counts "
        "1/t", LOWER, "0 to 1", "§4.1", "share"),
    "record_linkage_mahalanobis_risk": Measure(
        "Record linkage risk, Mahalanobis", _RISK,
        "share of perturbed records whose nearest original under the Mahalanobis distance is their own",
        LOWER, "0 to 1", "§4.1", "share"),
    "record_linkage_mahalanobis_expected_risk": Measure(
        "Record linkage risk, Mahalanobis, expected", _RISK,
        "the same with ties between equally near originals broken at random", LOWER, "0 to 1", "§4.1", "share"),
    "record_linkage_gower_risk": Measure(
        "Record linkage risk, Gower", _RISK,
        "share of perturbed records whose nearest original under Gower's distance (changed continuous and released "
        "categorical keys) is their own", LOWER, "0 to 1", "§4.1", "share"),
    "record_linkage_gower_expected_risk": Measure(
        "Record linkage risk, Gower, expected", _RISK,
        "the same with ties between equally near originals broken at random", LOWER, "0 to 1", "§4.1", "share"),
    "record_linkage_one_to_one_risk": Measure(
        "Record linkage risk, one-to-one", _RISK,
        "share of records linked to their own original when each original is used once (least total distance; "
        "ties between identical records in the intruder's favour)", LOWER, "0 to 1", "§4.1", "share"),
    "record_linkage_one_to_one_expected_risk": Measure(
        "Record linkage risk, one-to-one, expected", _RISK,
        "the same with ties between identical records broken at random", LOWER, "0 to 1", "§4.1", "share"),
    "linkage_risk": Measure(
        "Record linkage risk, release check", _RISK,
        "the largest share of records that an intruder links to their own original, over Euclidean, Mahalanobis and "
        "Gower nearest-record linkage and one-to-one linkage, ties at random, on every continuous key released "
        "(100 % when the plan changed none); the spec's max_linkage_risk bounds it. Unlike sdcMicro's dRisk (interval "
        "risk: whether each original value lies within k·sd of its released value) it counts re-identifications",
        LOWER, "0 to 1", "§4.1", "share"),
    "interval_risk": Measure(
        "Interval risk (sdcMicro dRisk)", _RISK,
        "share of records whose every original value lies within 0.05·sd of its perturbed value: values disclosed "
        "closely, whether or not the record can be found", LOWER, "0 to 1", "§4.2", "share"),
    "rank_interval_disclosure": Measure(
        "Rank interval disclosure", _RISK,
        "share of original values inside a rank interval of p % of the records around their perturbed value, "
        "mean over p = 1..10 %", LOWER, "0 to 1", "§4.2, §4.5", "share"),
    "combined_global_risk": Measure(
        "Combined risk (categorical + continuous)", _RISK,
        "mean of Młodak's combined record risk; without categorical keys its continuous part alone, the share of a "
        "record's continuous values with fewer than k neighbours within their precision", LOWER, "0 to 1",
        "§5.5", "share"),
    "ebil": Measure("EBIL", _CAT, "entropy-based loss: uncertainty about the original category given the released one",
                    LOWER, "0 to n·log2(categories) bits", "§9.8", "index"),
    "cramers_v_change_mean": Measure(
        "Change of Cramér's V", _CAT,
        "mean relative change of Cramér's V between pairs of categorical keys: 100·|V - V*| / V, divided by 0.1 "
        "instead of V where the original association is negligible (V < 0.1), so that a small change of a "
        "non-existent association does not read as hundreds of percent", LOWER, "0 % and up (0 = unchanged)",
        "§9.9", "percent"),
    "sse_tss": Measure("SSE / TSS", _CONT, "share of the total variance of the continuous keys lost by perturbation",
                       LOWER, "0 to 1", "§9.5", "share"),
    "regression_relative_change_mean": Measure(
        "Change of regression coefficients", _MULTI,
        "mean relative change of the OLS coefficients of the first continuous key, 100·|b - b*| / |b|; unbounded "
        "where a coefficient is near 0 (variables nearly unrelated)",
        LOWER, "0 % and up (0 = unchanged)", "§9.9, §9.11", "percent"),
    "dUtility_IL1": Measure(
        "IL1 (sdcMicro dUtility)", _CONT,
        "SUM over every continuous value of its relative change in percent, 100·|x - x*| / |x| (values with x = 0 "
        "left out), as sdcMicro's dUtility(method = \"IL1\") returns it: a total that grows with the number of "
        "records and keys, not a mean (divide by the values compared for the mean change in percent)",
        LOWER, "0 and up (0 = unchanged)", "§9.4 (sdcMicro)", "index"),
    "dUtility_IL1s": Measure(
        "IL1s (sdcMicro dUtility)", _CONT,
        "SUM over every continuous value of |x - x*| / (sqrt(2)·s), s the variable's standard deviation in the "
        "original, as sdcMicro's dUtility(method = \"IL1s\") returns it: a total, not a mean",
        LOWER, "0 and up (0 = unchanged)", "§9.4 (sdcMicro)", "index"),
    "dUtility_eigen": Measure("Eigenvalue change (sdcMicro dUtility)", _MULTI,
                              "relative change of the eigenvalues of the covariance matrix",
                              LOWER, "0 and up", "§9.6 (sdcMicro)", "share"),
    "lambda_arctan": Measure("Distance lambda, arctan", _SEED,
                             "mean distance between original and released values (arctan for continuous keys)",
                             LOWER, "0 to 1", "§9.1 eq (1), (6)", "index"),
    "lambda_max_abs": Measure("Distance lambda, |x - x*| / max", _SEED,
                              "mean distance, continuous keys scaled by the largest absolute deviation",
                              LOWER, "0 to 1", "§9.1 eq (1), (4)", "index"),
    "lambda_max_sq": Measure("Distance lambda, squared / max", _SEED,
                             "mean distance, continuous keys scaled by the largest squared deviation",
                             LOWER, "0 to 1", "§9.1 eq (1), (5)", "index"),
    "topsis_mean": Measure("Mean TOPSIS loss", _SEED, "mean per-record TOPSIS loss, relative within the plan",
                           LOWER, "0 to 1", "§10", "index"),
    "moment_inverse_correlation_raw": Measure(
        "Inverse correlation, raw", _SEED, "sum of the changes of the diagonal of the inverse correlation matrix",
        LOWER, "0 and up", "§9.7 eq (11)", "index"),
    "moment_inverse_correlation_normalised": Measure(
        "Inverse correlation, normalised", _SEED, "distance of the normalised diagonals of the inverse correlation matrices",
        LOWER, "0 to 1", "§9.7 eq (12)", "index"),
    "moment_mean_max": Measure("Mean change / maximum", _CONT, "mean change of the means relative to each variable's maximum",
                               LOWER, "0 to 1", "§9.4", "share"),
    "moment_variance_arctan": Measure(
        "Variance change, arctan", _CONT,
        "(2/pi)·arctan of the absolute change of each variance, in the variables' squared units, averaged: it "
        "reaches 1 as soon as a variance changes by more than about 100 squared units, so for amounts in the "
        "thousands or more it is 1 for any perturbation (see the relative change of the variances)",
        LOWER, "0 to 1", "§9.6", "index"),
    "records_compared": Measure("Records compared", _COUNTS, "released records compared with their originals",
                                HIGHER, "0 to n records", "§9.3", "count"),
    "records_removed": Measure("Records removed", _COUNTS, "records the plan does not release (subsampling)",
                               LOWER, "0 to n records", "§8.4", "count"),
    "values_compared": Measure("Values compared", _COUNTS, "key values observed in both files and compared",
                               HIGHER, "0 to n x keys", "§9.3", "count"),
    "continuous_values_compared": Measure(
        "Continuous values compared", _COUNTS, "continuous key values observed in both files", HIGHER,
        "0 to n x continuous keys", "§9.3", "count"),
}

_MOMENT_TERMS = {"mean": ("means", _CONT, "§9.4"), "variance": ("variances", _CONT, "§9.6"),
                 "covariance": ("covariances", _MULTI, "§9.6"), "correlation": ("correlations", _MULTI, "§9.6")}
for _term, (_plural, _group, _section) in _MOMENT_TERMS.items():
    _MEASURES[f"moment_{_term}_abs"] = Measure(
        f"Change of {_plural}, absolute", _group, f"mean absolute change of the {_plural}", LOWER,
        "0 and up, in the variables' units", _section, "index" if _term == "correlation" else "scale",
        None if _term == "correlation" else f"moment_{_term}_relative")
    _MEASURES[f"moment_{_term}_squared"] = Measure(
        f"Change of {_plural}, squared", _group, f"mean squared change of the {_plural}", LOWER,
        "0 and up, in squared units", _section, "index" if _term == "correlation" else "scale",
        None if _term == "correlation" else f"moment_{_term}_relative")
    _MEASURES[f"moment_{_term}_relative"] = Measure(
        f"Change of {_plural}, relative", _group, f"mean change of the {_plural} relative to their original values"
        + ("; unbounded where an original correlation is near 0 (0.001 -> 0.003 is +200 %): the correlation "
           "limit bounds the absolute change instead" if _term == "correlation" else ""),
        LOWER, "0 and up (0 = unchanged)", _section, "share")
_MEASURES.update({f"k{k}_violations": Measure(
    f"{k}-anonymity violations", _RISK, f"records whose key combination fewer than {k} records share", LOWER,
    "0 to n records", "§3.1", "count") for k in range(2, 11)})


def measure_info(name: str) -> Measure:
    """The :class:`Measure` of a measure name; per-variable names (``ebil_<variable>``,
    ``<variable>_records_below_l``, ``<variable>_records_below_entropy_l``) take the entry of their family. An unknown name gets a
    generic entry (group "Disclosure risk" for names ending in ``risk``, else loss), so that a
    new measure is still shown, marked "not described"."""
    if name in _MEASURES:
        return _MEASURES[name]
    if name.startswith("ebil_"):
        base = _MEASURES["ebil"]
        return Measure(f"EBIL of {name[5:]}", base.group, base.meaning, base.direction, base.range, base.spec, base.kind)
    match = re.fullmatch(r"(.+)_records_below_l", name)
    if match:
        return Measure(f"Records below l for {match[1]}", _RISK,
                       f"records whose key group holds fewer than l distinct values of {match[1]} (distinct "
                       "l-diversity, sdcMicro's ldiversity; l = the spec's risk.l, 2 when it declares none)", LOWER,
                       "0 to n records", "§3.6", "count")
    match = re.fullmatch(r"(.+)_records_below_entropy_l", name)
    if match:
        return Measure(f"Records below entropy l for {match[1]}", _RISK,
                       f"records whose key group's entropy of {match[1]} is below log(l) (entropy l-diversity: "
                       "exp(-sum p ln p) < l)", LOWER, "0 to n records", "§3.6", "count")
    group = _RISK if name.endswith("risk") else _MULTI
    return Measure(name, group, "not described", LOWER, "not stated", "–", "index")


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits: fixed notation between 0.001 and 100 000,
    otherwise ``m × 10ⁿ`` (where fixed notation would hide the figure in zeros); below 10⁻¹² "≈ 0"."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude < 1e-12:  # floating-point residue of an unchanged figure, not a measurement
        return "≈ 0"
    if 1e-3 <= magnitude < 1e5:
        decimals = max(0, digits - 1 - math.floor(math.log10(magnitude)))
        text = f"{value:,.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def is_missing(value) -> bool:
    """None, NA, NaN or an infinite number: nothing to show."""
    if value is None:
        return True
    try:
        return not np.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def format_value(value, kind: str) -> str:
    """A number written for a reader by its kind (:data:`KINDS`).

    Examples: count 12.0 -> "12", 4580 -> "4,580"; share 0.000546 -> "0.0546 %", 0.25 -> "25 %";
    percent 4.31 -> "4.31 %";
    expected 10.7783 -> "10.8"; index 0.12345 -> "0.123", 5.2e24 -> "5.2 × 10²⁴"; a missing
    value -> "–". ``scale`` is written like ``index`` (its relative form is shown next to it by
    :func:`format_measure`).
    """
    check_option(kind, "kind", KINDS, error=ValueError)
    if is_missing(value):
        return "–"
    number = float(value)
    if kind == "count":
        return f"{round(number):,}"
    if kind == "share":
        return f"{_significant(100.0 * number)} %"
    if kind == "percent":
        return f"{_significant(number)} %"
    if kind == "expected":
        return f"{number:,.1f}"
    return _significant(number)


def format_measure(name: str, values: dict) -> str:
    """The value of measure ``name`` in ``values`` (one plan's figures) written by its kind; a
    scale-dependent measure is followed by its relative form, e.g. "5.2 × 10²⁴ (relative: 3.1 %)"."""
    info = measure_info(name)
    text = format_value(values.get(name), info.kind)
    if info.relative and not is_missing(values.get(name)) and not is_missing(values.get(info.relative)):
        text += f" (relative: {format_value(values[info.relative], 'share')})"
    return text
