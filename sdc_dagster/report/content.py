"""What the release report shows, as frames and figures every format shares (HTML, PDF, JSON):
the headline and decision tables, the plan points and the recommendation, the step sentences,
the category shares and distribution panels of the variables, and the report's plots."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss.topsis import topsis_summary
from sdc_dagster.protect import global_recode as protect_global_recode
from sdc_dagster.protect import interval_recode as protect_interval_recode
from sdc_dagster.protect.microaggregation.cluster import CLUSTER_METHODS
from sdc_dagster.protect.recode import interval_labels as protect_interval_labels
from sdc_dagster.report.categories import category_counts, category_sort_key, plain_category
from sdc_dagster.report.decision import Recommendation, pareto_optimal, recommend_plan
from sdc_dagster.report.inputs import ReportInputs
from sdc_dagster.report.measures import format_value, is_missing, measure_info
from sdc_dagster.report.plots import (
    boxplot_svg,
    grouped_bars_svg,
    histogram_svg,
    histograms_svg,
    risk_utility_map_svg,
)

_TOPSIS_STATISTICS = ("n", "min", "q1", "median", "mean", "q3", "max", "cv", "skewness",
                      "shapiro_w", "shapiro_p", "ks_d", "ks_p", "cvm_w2", "cvm_p", "ad_a2", "ad_p")

_METHOD_LABELS = {
    "local_suppression": "Local suppression", "diversity_suppression": "Suppression to l-diversity",
    "pram": "PRAM", "microaggregation": "Microaggregation",
    "microaggregation_gower": "Gower-distance microaggregation of mixed variables (sdcMicro microaggrGower)",
    "recode": "Global recoding", "global_recode": "Global recoding", "interval_recode": "Global recoding into intervals",
    "top_code": "Top coding", "bottom_code": "Bottom coding",
    "mv_top_coding": "Multivariate top coding (outliers pulled onto the chi-square ellipsoid of the Mahalanobis distance)",
    "noise": "Noise addition", "rounding": "Rounding",
    "rank_swap": "Rank swapping", "record_swap": "Targeted record swapping", "subsample": "Subsampling",
    "remove": "Removal of variables",
}

#: Microaggregation by the method that formed the groups (a step's ``kind``, sdcMicro's method name),
#: and the published sources of each: ``(label, ((short form, where), ...))``.
_TEMPL_2008 = ("Templ 2008", "")
MICROAGGREGATION_METHODS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "mdav": ("MDAV microaggregation", (("Domingo-Ferrer & Mateo-Sanz 2002", ""),)),
    "rmd": ("Microaggregation around robust Mahalanobis outliers (sdcMicro rmd)",
            (("Templ & Meindl 2008", ""), ("Rousseeuw & Van Driessen 1999", ""))),
    "pca": ("Microaggregation along the first principal component (sdcMicro pca)", (_TEMPL_2008,)),
    "mcdpca": ("Microaggregation along the robust (MCD) first principal component (sdcMicro mcdpca)",
               (_TEMPL_2008, ("Rousseeuw & Van Driessen 1999", ""))),
    "pppca": ("Microaggregation along the projection-pursuit first principal component (sdcMicro pppca)",
              (_TEMPL_2008, ("Croux & Ruiz-Gazen 2005", ""))),
    "clustpca": ("Microaggregation within clusters, along each cluster's first principal component "
                 "(sdcMicro clustpca)", (_TEMPL_2008,)),
    "clustmcdpca": ("Microaggregation within clusters, along each cluster's robust (MCD) first principal "
                    "component (sdcMicro clustmcdpca)", (_TEMPL_2008, ("Rousseeuw & Van Driessen 1999", ""))),
    "clustpppca": ("Microaggregation within clusters, along each cluster's projection-pursuit first principal "
                   "component (sdcMicro clustpppca)", (_TEMPL_2008, ("Croux & Ruiz-Gazen 2005", ""))),
    "influence": ("Microaggregation within clusters, sorted by the variable of largest cluster centre "
                  "(sdcMicro influence)", (_TEMPL_2008,)),
    "onedims": ("Individual ranking microaggregation (sdcMicro onedims)", (("Defays & Nanopoulos 1993", ""),)),
    "individual_ranking": ("Individual ranking microaggregation (sdcMicro onedims)",
                           (("Defays & Nanopoulos 1993", ""),)),
    "single": ("Microaggregation sorted by the first variable (sdcMicro single)", (_TEMPL_2008,)),
    "simple": ("Microaggregation of the records in file order (sdcMicro simple)", (_TEMPL_2008,)),
}


def step_sources(step: dict) -> tuple[tuple[str, str], ...]:
    """The published sources of a protection step's method where the report cites them (the
    microaggregation methods: :data:`MICROAGGREGATION_METHODS`, Gower microaggregation, and
    multivariate top coding, sdcMicro's ``mvTopCoding``, with the MCD of its robust estimates), else ()."""
    if step.get("method") == "microaggregation_gower":
        return (("Gower 1971", ""), ("Templ, Kowarik & Meindl 2015", ""))
    if step.get("method") == "mv_top_coding":
        parameters = step["parameters"] if "parameters" in step else step
        robust = parameters.get("estimator", "robust") == "robust" and parameters.get("center") is None
        return (("sdcMicro reference manual", "mvTopCoding"),) + ((("Rousseeuw & Van Driessen 1999", ""),)
                                                                  if robust else ())
    if step.get("method") != "microaggregation":
        return ()
    parameters = step["parameters"] if "parameters" in step else step
    return MICROAGGREGATION_METHODS.get(str(parameters.get("kind", "mdav")), ("", ()))[1]


# --- inputs and the figures every format shares ------------------------------------------------


def check_inputs(inputs: ReportInputs) -> None:
    if "risk" not in inputs.risk_per_record.columns:
        raise SDCInputError("risk_per_record: column 'risk' is required for the report")
    for name, plan in inputs.plans.items():
        if not isinstance(plan.topsis, pd.Series):
            raise SDCInputError(f"plans[{name!r}].topsis: a Series of per-record TOPSIS losses is required")


def risk_measures(inputs: ReportInputs) -> list[str]:
    """Risk entries in first-seen order: the wave's own, then any only reported after a plan."""
    names = list(inputs.risk_before)
    for plan in inputs.plans.values():
        names.extend(name for name in plan.residual_risk if name not in names)
    return names


def loss_measures(inputs: ReportInputs) -> list[str]:
    names: list[str] = []
    for plan in inputs.plans.values():
        names.extend(name for name in plan.loss if name not in names)
    return names


def headline_table(inputs: ReportInputs) -> pd.DataFrame:
    """Headline figures: one row for the unprotected wave and one per protection plan.

    Returns
    -------
    DataFrame
        Index "original" and the plan names; one column per risk measure, then
        ``mean_topsis_loss``, ``checks_passed`` ("passed/total") and ``releasable``
        (NA for the original row, which has no loss or checks).
    """
    check_inputs(inputs)
    measures = risk_measures(inputs)
    rows = {"original": {**{m: inputs.risk_before.get(m, np.nan) for m in measures},
                         "mean_topsis_loss": np.nan, "checks_passed": "", "releasable": pd.NA}}
    for name, plan in inputs.plans.items():
        rows[name] = {**{m: plan.residual_risk.get(m, np.nan) for m in measures},
                      "mean_topsis_loss": float(plan.topsis.mean()) if len(plan.topsis) else np.nan,
                      "checks_passed": f"{sum(bool(v) for v in plan.checks.values())}/{len(plan.checks)}",
                      "releasable": bool(plan.releasable)}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "plan"
    return table


def plan_points(inputs: ReportInputs) -> pd.DataFrame:
    """The plans on the risk-utility map: index = plans (spec order); ``risk`` (residual
    ``inputs.risk_measure``), ``loss`` (``inputs.loss_measure``), ``utility`` (1 - loss),
    ``releasable`` and ``pareto`` (Pareto-optimal among the releasable plans)."""
    points = pd.DataFrame(
        {"risk": [float(plan.residual_risk.get(inputs.risk_measure, np.nan)) for plan in inputs.plans.values()],
         "loss": [float(plan.loss.get(inputs.loss_measure, np.nan)) for plan in inputs.plans.values()],
         "releasable": [bool(plan.releasable) for plan in inputs.plans.values()]},
        index=pd.Index(list(inputs.plans), name="plan"),
    )
    points["utility"] = 1.0 - points["loss"]
    front = pareto_optimal(points[points["releasable"].astype(bool)])
    points["pareto"] = front.reindex(points.index, fill_value=False).astype(bool)
    return points


def recommendation(inputs: ReportInputs) -> Recommendation:
    """The plan to release by :data:`~sdc_dagster.report.decision.RECOMMENDATION_RULE`."""
    return recommend_plan(plan_points(inputs))


def decision_table(inputs: ReportInputs) -> pd.DataFrame:
    """The release decision of each plan: ``decision`` ("released": the recommendation, the wave's
    one release; "eligible alternative": passes every blocking check, ``sdc promote`` can make it
    the release; or "withheld"),
    ``blocking_checks_failed`` (each failed blocking check with its rule and the value found) and
    ``warnings`` (failed non-blocking checks)."""
    def reasons(failed: dict) -> str:
        return "; ".join(f"{check}: {why}" for check, why in failed.items()) or "none"

    chosen = recommendation(inputs).plan
    return pd.DataFrame(
        {"decision": ["released" if name == chosen else "eligible alternative" if plan.releasable else "withheld"
                      for name, plan in inputs.plans.items()],
         "blocking_checks_failed": [reasons(plan.withheld_because) for plan in inputs.plans.values()],
         "warnings": [reasons(plan.warnings) for plan in inputs.plans.values()]},
        index=pd.Index(list(inputs.plans), name="plan"),
    )


def step_sentence(step: dict) -> str:
    """One protection step as a sentence: the method, its parameters, its seed and what it did.

    ``step`` is a step record of a release manifest (``method``, ``parameters``,
    ``random_state``, ``values_changed``, ``values_suppressed``, ``records_before`` /
    ``records_after``, ``columns_removed``, ``reported``: the algorithm local suppression chose,
    ROMM's blocks, the records multivariate top coding pulled) or a step as written in the spec (``method`` and its parameters side by side).
    """
    method = str(step.get("method", "step"))
    recorded = "parameters" in step
    parameters = step["parameters"] if recorded else {k: v for k, v in step.items() if k != "method"}

    def written(key: str, value) -> str:
        label = key.replace("_", " ")
        if isinstance(value, dict):  # a mapping of categories
            return f"{label} " + ", ".join(f"{k} → {v}" for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return f"{label} " + ", ".join(map(str, value))
        return f"{label} {value}" if isinstance(value, str) else f"{label} = {value}"

    unused = set()
    if method == "microaggregation":  # options the step's method and measure do not use
        unused |= {"trim"} if parameters.get("measure", "mean") != "trim" else set()
        unused |= {"nc"} if str(parameters.get("kind", "mdav")) not in CLUSTER_METHODS else set()
    shown = [written(key, value) for key, value in parameters.items()
             if value is not None and value is not False and value != [] and value != {} and key not in unused]
    sentence = _METHOD_LABELS.get(method, method.replace("_", " ").capitalize())
    if method == "microaggregation" and str(parameters.get("kind", "mdav")) in MICROAGGREGATION_METHODS:
        sentence = MICROAGGREGATION_METHODS[str(parameters.get("kind", "mdav"))][0]
    if shown:
        sentence += " with " + "; ".join(shown)
    if step.get("random_state") is not None:
        sentence += f" (seed {step['random_state']})"
    reported = step.get("reported") or {}
    if reported.get("local_suppression_method"):
        sentence += f" (algorithm: {reported['local_suppression_method']})"
    if "mv_top_coded_records" in reported:
        sentence += f" ({reported['mv_top_coded_records']:,} records pulled onto the ellipsoid)"
    if reported.get("romm_blocks", 1) > 1:
        sentence += f" (in {reported['romm_blocks']:,} random blocks of records, ROMM's approximation on large files)"
    outcomes = []
    for key, verb in (("values_changed", "changed"), ("values_suppressed", "suppressed")):
        counts = step.get(key) or {}
        if counts and (key == "values_suppressed" or counts != step.get("values_suppressed")):
            outcomes.append(f"{verb} {sum(counts.values()):,} values ("
                            + ", ".join(f"{v} {n:,}" for v, n in counts.items()) + ")")
    if recorded and step.get("records_after", 0) < step.get("records_before", 0):
        outcomes.append(f"kept {step['records_after']:,} of {step['records_before']:,} records")
    if step.get("columns_removed"):
        outcomes.append("removed " + ", ".join(map(str, step["columns_removed"])))
    if outcomes:
        sentence += ": " + "; ".join(outcomes)
    return sentence + "."


# --- plots (also the Dagster metadata of the report asset) ------------------------------------


def risk_histogram(inputs: ReportInputs) -> bytes:
    """SVG histogram of the individual re-identification risk of the unprotected records."""
    check_inputs(inputs)
    return histogram_svg(inputs.risk_per_record["risk"], f"Individual risk, {inputs.survey} {inputs.wave}",
                         xlabel="risk")


def combined_risk_histogram(inputs: ReportInputs) -> bytes | None:
    """SVG histogram of the combined categorical + continuous risk, if the inputs carry it."""
    if "combined_risk" not in inputs.risk_per_record.columns:
        return None
    return histogram_svg(inputs.risk_per_record["combined_risk"], "Combined risk (Młodak 2025)", xlabel="risk")


def contribution_boxplots(inputs: ReportInputs) -> dict[str, bytes]:
    """SVG box plots of the per-record contribution values, one plot per value (Shapley, solidarity)."""
    return {value: boxplot_svg(frame, f"{value.capitalize()} values per variable", ylabel="contribution")
            for value, frame in (inputs.contributions_per_record or {}).items()}


def contribution_change_plots(inputs: ReportInputs) -> dict[str, bytes]:
    """SVG bar charts, one per plan with contributions: each variable's global contribution to the
    risk (SPEC §6.6) before and after the plan."""
    return {name: grouped_bars_svg(plan.contributions, f"Contributions to the risk before and after {name}",
                                   ylabel="global contribution")
            for name, plan in inputs.plans.items() if plan.contributions is not None}


def topsis_histograms(inputs: ReportInputs) -> bytes:
    """SVG of the per-record TOPSIS losses of every plan, on a common bin grid."""
    return histograms_svg({name: plan.topsis for name, plan in inputs.plans.items()},
                          "TOPSIS information loss per record", xlabel="eta (0 = least, 1 = most loss)")


def risk_utility_map(inputs: ReportInputs) -> bytes:
    """SVG scatter of the plans: residual risk against information loss, the Pareto front of the
    plans passing their blocking checks drawn and the recommended plan ringed."""
    points = plan_points(inputs)
    target, target_label = risk_target(inputs)
    front = None
    if inputs.search_front is not None:
        front = inputs.search_front.rename(columns={"global_risk": "risk"})
    risk_info, loss_info = measure_info(inputs.risk_measure), measure_info(inputs.loss_measure)
    return risk_utility_map_svg(
        points, f"Risk-utility map of the {len(points)} plan(s)",
        xlabel=f"residual risk: {risk_info.label}" + (" (%)" if risk_info.kind == "share" else ""),
        ylabel=f"information loss: {loss_info.label}" + (" (%)" if loss_info.kind == "share" else ""),
        recommended=recommend_plan(points).plan, target=target, target_label=target_label, front=front,
        percent=(risk_info.kind == "share", loss_info.kind == "share"),
    )


def risk_target(inputs: ReportInputs) -> tuple[float | None, str]:
    """The target of the map's risk measure and its legend text: the spec's ``max_global_risk``
    for the global risk, ``max_linkage_risk`` for the record-linkage risk, else None."""
    target = {"global_risk": inputs.max_global_risk, "linkage_risk": inputs.max_linkage_risk}.get(inputs.risk_measure)
    if target is None:
        return None, ""
    return float(target), f"target: at most {format_value(target, 'share')}"


def report_plots(inputs: ReportInputs) -> dict[str, bytes]:
    """The summary plots of the report as ``{name: SVG bytes}``: drawn once, shown in the HTML
    (:func:`~sdc_dagster.report.html.render_report`) and as the report asset's Dagster metadata."""
    plots = {"risk_histogram": risk_histogram(inputs)} if inputs.keys else {}
    combined = combined_risk_histogram(inputs)
    if combined is not None:
        plots["combined_risk_histogram"] = combined
    plots.update({f"{value}_boxplot": chart for value, chart in contribution_boxplots(inputs).items()})
    plots.update({f"contributions_{name}": chart for name, chart in contribution_change_plots(inputs).items()})
    suda = suda_histogram(inputs)
    if suda is not None:
        plots["suda_histogram"] = suda
    if inputs.plans:
        plots["topsis_histograms"] = topsis_histograms(inputs)
        plots["risk_utility_map"] = risk_utility_map(inputs)
    return plots


def category_shares(values: dict[str, pd.Series], labels: dict | None = None) -> pd.DataFrame:
    """Share of the records in each category (missing values as "(missing)"), one column per
    series of ``values`` (e.g. "original" and each plan). Categories are written by
    :func:`~sdc_dagster.report.categories.category_text` (``1`` for ``1.0``; with ``labels``,
    code -> value label, ``4 (Burgenland)``) and ordered by
    :func:`~sdc_dagster.report.categories.category_sort_key`."""
    counts = {name: category_counts(series, labels) for name, series in values.items()}
    shares = {name: counted / counted.sum() for name, counted in counts.items()}
    table = pd.DataFrame(shares).fillna(0.0)
    return table.reindex(sorted(table.index, key=category_sort_key)).rename_axis("category")


_INTERVAL_METHODS = ("interval_recode", "global_recode")


def _step_parameters(step: dict) -> dict:
    """A step's parameters, from a manifest step record or a step as written in the spec."""
    return step["parameters"] if "parameters" in step else {k: v for k, v in step.items() if k != "method"}


def _banded(step: dict, values: pd.Series) -> pd.Series | None:
    """``values`` recoded into the bands of an interval step, each band by its interval label
    ("(20,30]", as sdcMicro's globalRecode writes it) when the step gave none; None when the bands
    cannot be applied (values outside the breaks, a step without breaks)."""
    parameters = _step_parameters(step)
    breaks = parameters.get("breaks")
    if not isinstance(breaks, (list, tuple)) or len(breaks) < 2:
        return None
    numbers = pd.to_numeric(values, errors="coerce")
    try:
        if step.get("method") == "global_recode":
            return protect_global_recode(numbers, breaks=list(breaks), labels=parameters.get("labels"))
        return protect_interval_recode(numbers.to_frame("v"), "v", list(breaks),
                                       labels=_interval_labels(parameters), right=parameters.get("right", True))["v"]
    except (SDCInputError, TypeError, ValueError):
        return None


def _interval_labels(parameters: dict) -> list | None:
    """The labels of an ``interval_recode`` step: its own, else the interval texts the released
    files show (:func:`~sdc_dagster.protect.recode.interval_labels`)."""
    if parameters.get("labels") is not None:
        return parameters.get("labels")
    return protect_interval_labels([float(b) for b in parameters["breaks"]], right=parameters.get("right", True))


def _band_names(step: dict, released: pd.Series) -> pd.Series:
    """``released`` with interval_recode's default codes 1, 2, ... replaced by their bands' labels
    (unchanged when the step named its labels or its codes cannot be matched to bands)."""
    parameters = _step_parameters(step)
    if step.get("method") != "interval_recode" or parameters.get("labels") is not None:
        return released
    try:
        labels = _interval_labels(parameters)
    except (SDCInputError, KeyError, TypeError, ValueError):
        return released
    numbered = dict(zip(range(1, len(labels) + 1), labels)) if labels else {}
    codes = pd.to_numeric(released, errors="coerce")
    if not numbered or codes.notna().sum() != released.notna().sum() or not set(codes.dropna()) <= set(numbered):
        return released
    return codes.map(numbered)


#: Steps that recode a categorical key by a fixed rule (a record's released category is a function of
#: its original one): the original can be put into the plan's categories to be compared with them.
_FIXED_RECODES = ("recode", "top_code", "bottom_code")
#: Steps that only suppress values (a suppressed record's category is missing, not moved).
_SUPPRESSIONS = ("local_suppression", "diversity_suppression")


def _writes(step: dict, variable: str) -> bool:
    """Whether a plan step names ``variable`` among the columns it writes."""
    parameters = _step_parameters(step)
    named = [parameters.get("variable"), *(parameters.get("columns") or ()), *(parameters.get("variables") or ())]
    return variable in named


def _fixed_recode(steps: list[dict], variable: str) -> bool:
    """Whether a plan's steps change ``variable`` only by fixed recodes (:data:`_FIXED_RECODES`, at
    least one) and suppression: no PRAM, swapping, noise or microaggregation writes into it."""
    writing = [s.get("method") for s in steps if _writes(s, variable) and s.get("method") not in _SUPPRESSIONS]
    return bool(writing) and all(method in _FIXED_RECODES for method in writing)


def _in_released_categories(original: pd.Series, released: pd.Series, groups=()) -> pd.Series | None:
    """The ``original`` values put into the categories a plan released (``released``, the same records
    by index, as the plan shows them): each original category under the one released category its
    released records carry, the records the plan suppressed left out of that rule (a global recoding
    maps every member of a merged group to the group, Hundepool et al. 2012, §3.4.1); a category
    whose every record was suppressed goes with the members of its group in ``groups`` (the plan's
    recode groups). None when that is not a rule (an original category released as two categories,
    or a category left without one)."""
    position = original.index.get_indexer(released.index)
    if (position < 0).any():
        return None
    codes, uniques = pd.factorize(original)  # -1: missing
    category = [plain_category(u) for u in uniques]  # one per category, not per record
    theirs = codes[position]
    kept = (theirs >= 0) & released.notna().to_numpy()
    if not kept.any():
        return None
    pairs = pd.DataFrame({"code": theirs[kept], "released": released.to_numpy(dtype=object)[kept]})
    rule = pairs.groupby("code")["released"].agg(["nunique", "first"])
    if (rule["nunique"] != 1).any():
        return None
    mapped = {category[code]: shown for code, shown in rule["first"].items()}
    for group in groups:
        members = [plain_category(m) for m in group]
        known = {mapped[m] for m in members if m in mapped}
        if len(known) == 1:
            mapped.update(dict.fromkeys(members, known.pop()))
    if not all(c in mapped for c in category):
        return None
    shown = np.array([*(mapped[c] for c in category), None], dtype=object)  # code -1 (missing): None
    return pd.Series(shown[codes], index=original.index, name=original.name)


def _recode_groups(steps: list[dict], variable: str) -> list:
    """The groups of every ``recode`` step of ``variable`` (members in the step's coding)."""
    return [group for s in steps if s.get("method") == "recode" and _writes(s, variable)
            for group in (_step_parameters(s).get("groups") or ())]


def distribution_panels(inputs: ReportInputs, variable: str) -> list[tuple[str, dict[str, pd.Series], bool]]:
    """The charts of ``variable`` in "Distributions before and after": ``(title, {series name:
    values}, continuous)`` each. The first holds the original and every plan released on the
    original's scale (categories among the original's, numbers for a continuous variable); a plan
    that recoded the variable into bands (an interval step, or categories the original does not
    have) gets its own chart of categories, with the original put into the same bands when the
    plan's step allows it (an interval step's breaks; a plan that recodes the variable by fixed
    groups only, :func:`_in_released_categories`), so that bands are never drawn on the axis of the
    original values. An ``interval_recode`` without labels (codes 1, 2, ...) is shown with its
    interval labels."""
    values = inputs.distributions[variable]
    original = values["original"]
    continuous = variable in inputs.continuous
    # the original's categories (a continuous variable has as many as records and needs none)
    observed = set() if continuous else set(category_counts(original.dropna()).index)
    shared: dict[str, pd.Series] = {"original": original}
    own = []
    for name, series in values.items():
        if name == "original":
            continue
        plan = inputs.plans.get(name)
        steps = [s for s in (plan.steps if plan else [])
                 if s.get("method") in _INTERVAL_METHODS and _step_parameters(s).get("variable") == variable]
        present = series.dropna()
        if continuous:
            recoded = bool(steps) or pd.to_numeric(present, errors="coerce").isna().any()
        else:
            recoded = bool(steps) or not set(category_counts(present).index) <= observed
        if not recoded:
            shared[name] = series
            continue
        panel = {}
        if steps:
            before = _banded(steps[-1], original)
            if before is not None:
                panel["original, in the same bands"] = before
            series = _band_names(steps[-1], series)
        elif plan is not None and _fixed_recode(plan.steps, variable):
            before = _in_released_categories(original, series, _recode_groups(plan.steps, variable))
            if before is not None:
                panel["original, in the same categories"] = before
        own.append((f"{variable}, recoded by {name}", {**panel, name: series}, False))
    return [(variable, shared, continuous), *own]


def quantile_table(values: dict[str, pd.Series]) -> pd.DataFrame:
    """Quantiles (min, 10 %, 25 %, median, 75 %, 90 %, max), mean and missing count of each series."""
    levels = {"min": 0.0, "q10": 0.1, "q25": 0.25, "median": 0.5, "q75": 0.75, "q90": 0.9, "max": 1.0}
    table = {}
    for name, series in values.items():
        numbers = pd.to_numeric(series, errors="coerce")
        row = numbers.quantile(list(levels.values())).set_axis(list(levels)).to_dict()
        table[name] = {**row, "mean": numbers.mean(), "missing": int(numbers.isna().sum())}
    return pd.DataFrame(table).rename_axis("statistic")


def distribution_tables(inputs: ReportInputs) -> dict[str, pd.DataFrame]:
    """The table of each variable in "Distributions before and after", over the original and every
    plan that releases it: :func:`quantile_table` of a continuous variable, :func:`category_shares`
    (with its value labels) of a categorical one. Computed once for the JSON report and the HTML
    (whose chart of the original and the plans on the original's scale shows the same table)."""
    return {
        variable: quantile_table(values) if variable in inputs.continuous
        else category_shares(values, inputs.value_labels.get(variable))
        for variable, values in inputs.distributions.items()
    }


def topsis_summary_table(inputs: ReportInputs) -> pd.DataFrame:
    columns = {}
    for name, plan in inputs.plans.items():
        eta = plan.topsis.dropna()
        columns[name] = topsis_summary(eta) if len(eta) >= 3 else {"n": len(eta)}
    return pd.DataFrame(columns, index=list(_TOPSIS_STATISTICS))


def contributions_side_by_side(inputs: ReportInputs) -> pd.DataFrame | None:
    """Variables x (value, plan): each global contribution before (the wave) and after each plan."""
    frames = {name: plan.contributions for name, plan in inputs.plans.items() if plan.contributions is not None}
    if not frames:
        return None
    columns = {}
    for value in ("shapley", "solidarity"):
        first = next(iter(frames.values()))
        if f"{value}_before" not in first.columns:
            continue
        columns[f"{value} before"] = first[f"{value}_before"]
        for name, frame in frames.items():
            columns[f"{value} after {name}"] = frame[f"{value}_after"]
    return pd.DataFrame(columns).rename_axis("variable")


# --- losses in words, binding limits, measures that do not discriminate, SUDA ----------------------


def _signed_percent(change: float) -> str:
    """A signed relative change in percent, three significant digits: "+8 %", "-36.3 %"."""
    return ("+" if change > 0 else "") + format_value(change, "share")


def loss_words(row) -> str:
    """One row of a plan's utility figures (:attr:`~sdc_dagster.report.PlanSummary.utility`) in
    words: "age: 12 % suppressed", "18 % of records with a categorical key suppressed or perturbed", "mean of savings +8 %",
    "variance of income -36.3 %", "correlation income–expend 0.71 → 0.52", "3 of 4 keys not released
    (75 %): region, age, income"."""
    if row["measure"] == "keys not released":
        lost = int(row["before"]) - int(row["after"])
        return (f"{lost} of {int(row['before'])} keys not released ({format_value(row['change'], 'share')}): "
                f"{row['variable']}")
    if row["measure"] == "suppressed":
        return f"{row['variable']}: {format_value(row['change'], 'share')} suppressed"
    if row["measure"] == "records changed":
        return f"{format_value(row['change'], 'share')} of records with a categorical key suppressed or perturbed"
    if row["measure"] == "correlation":
        return f"correlation {row['variable']} {row['before']:.2f} → {row['after']:.2f}"
    return f"{row['measure']} of {row['variable']} {_signed_percent(row['change'])}"


#: How :func:`not_released_words` says each way a key is not released.
NOT_RELEASED_WORDS = {"one category": "released as one category", "withheld": "withheld",
                      "every value suppressed": "every value suppressed"}


def not_released_words(keys: Mapping[str, str]) -> str:
    """The variables a plan does not release (:func:`~sdc_dagster.releases.manifest.keys_not_released`)
    in words, grouped by how: "age, region: released as one category; income, savings: withheld";
    empty when every key is released."""
    groups: dict[str, list[str]] = {}
    for variable, how in keys.items():
        groups.setdefault(how, []).append(str(variable))
    return "; ".join(f"{', '.join(names)}: {NOT_RELEASED_WORDS.get(how, how)}" for how, names in groups.items())


def worst_losses(utility: pd.DataFrame | None, count: int = 3) -> list[str]:
    """The ``count`` largest per-variable losses of a plan, in words (:func:`loss_words`), the
    largest share of its limit first (``used``); losses that are 0 are left out."""
    if utility is None or utility.empty:
        return []
    rows = utility[(utility["change"].abs() > 1e-12) & utility["used"].notna()]
    rows = rows.sort_values("used", ascending=False, kind="stable").head(count)
    return [loss_words(row) for _, row in rows.iterrows()]


def categories_merged(inputs: ReportInputs, plan: str) -> list[str]:
    """The categorical keys ``plan`` releases in fewer categories than the wave has, in words, the
    most merged first: "age: 61 categories released as 3" (distinct observed values before and after,
    as :func:`~sdc_dagster.report.categories.category_counts` writes them). Global recoding is the
    loss of detail the utility limits do not count (a merged category is no suppression: Hundepool
    et al. 2012, §3.4.1, §3.5), so the decision names it beside them; keys the plan does not release
    at all are left to :func:`not_released_words`."""
    lost = inputs.plans[plan].keys_not_released if plan in inputs.plans else {}
    merged = []
    for variable in inputs.keys:
        values = inputs.distributions.get(variable, {})
        if variable in lost or plan not in values or variable in inputs.continuous:
            continue
        before = len(category_counts(values["original"].dropna()))
        after = len(category_counts(values[plan].dropna()))
        if after < before:
            merged.append((after / before, f"{variable}: {before} categories released as {after}"))
    return [words for _, words in sorted(merged, key=lambda item: item[0])]


def binding_limits(inputs: ReportInputs) -> list[str]:
    """When no plan is releasable: each utility limit that every plan with utility figures exceeds,
    with the plan that comes closest and by how much, in words ("variance of income -36.3 % against
    at most 20 % (1.8 times the limit) in suppress_k3, the closest plan"). Empty when a plan is
    releasable or no limit binds every plan."""
    tables = {name: plan.utility for name, plan in inputs.plans.items() if plan.utility is not None}
    if not tables or any(plan.releasable for plan in inputs.plans.values()):
        return []
    sentences = []
    for measure in dict.fromkeys(m for table in tables.values() for m in table["measure"]):
        worst = {name: table[table["measure"] == measure].sort_values("used", ascending=False).iloc[0]
                 for name, table in tables.items() if (table["measure"] == measure).any()}
        if len(worst) < len(tables) or not all(row["used"] > 1 + 1e-12 for row in worst.values()):
            continue
        closest, row = min(worst.items(), key=lambda item: item[1]["used"])
        limit = format_value(row["limit"], "share") if measure != "correlation" else f"{row['limit']:.2g}"
        sentences.append(f"{loss_words(row)} against at most {limit} ({row['used']:.2g} times the limit) in "
                         f"{closest}, the closest plan")
    return sentences


def same_for_every_plan(inputs: ReportInputs, name: str, values: dict[str, dict]) -> bool:
    """Whether measure ``name`` has one value for every plan (at least two plans with a value):
    a measure that cannot tell the plans apart, which the report flags ("does not discriminate")."""
    numbers = [float(v[name]) for plan, v in values.items() if plan != "original" and name in v
               and not is_missing(v[name])]
    return len(numbers) >= 2 and np.allclose(numbers, numbers[0], rtol=1e-9, atol=0.0)


#: The DIS-SUDA score intervals sdcMicro's ``print.suda2`` counts the records in.
DIS_SUDA_BREAKS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def suda_summary(risk_per_record: pd.DataFrame) -> pd.DataFrame | None:
    """SUDA2's scores of the unprotected wave (SPEC §3.8; Elliot, Manning & Ford 2002) as sdcMicro's
    ``print.suda2`` summarises them: the records per interval of the DIS-SUDA score ("= 0",
    "(0, 0.1]", ..., "> 0.7"), the SUDA scores' mean and maximum in it, and the records in it or a
    higher one (above a threshold). None when the risk table has no SUDA scores."""
    if "suda_dis_score" not in risk_per_record.columns or risk_per_record["suda_dis_score"].isna().all():
        return None
    dis, score = risk_per_record["suda_dis_score"], risk_per_record["suda_score"]
    rows = {"= 0": dis == 0}
    for low, high in zip(DIS_SUDA_BREAKS[:-1], DIS_SUDA_BREAKS[1:]):
        rows[f"({low:g}, {high:g}]"] = (dis > low) & (dis <= high)
    rows[f"> {DIS_SUDA_BREAKS[-1]:g}"] = dis > DIS_SUDA_BREAKS[-1]
    table = pd.DataFrame({
        "records": {label: int(mask.sum()) for label, mask in rows.items()},
        "SUDA score, mean": {label: float(score[mask].mean()) if mask.any() else np.nan for label, mask in rows.items()},
        "SUDA score, max": {label: float(score[mask].max()) if mask.any() else np.nan for label, mask in rows.items()},
    })
    table["records in this interval or above"] = table["records"][::-1].cumsum()[::-1]
    return table.rename_axis("DIS-SUDA score")


def suda_histogram(inputs: ReportInputs) -> bytes | None:
    """SVG histogram of the DIS-SUDA scores of the records with a special unique (score > 0);
    None without SUDA scores or without any record above 0."""
    if "suda_dis_score" not in inputs.risk_per_record.columns:
        return None
    positive = inputs.risk_per_record["suda_dis_score"]
    positive = positive[positive > 0]
    if positive.empty:
        return None
    return histogram_svg(positive, f"DIS-SUDA scores of the {len(positive):,} records with a minimal sample unique",
                         xlabel="DIS-SUDA score")
