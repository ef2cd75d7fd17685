"""The self-contained HTML release report comparing the protection plans of one survey wave.

One file, no external resources: inline CSS, plots embedded as base64 PNG data URIs (each with
alt text and the table of its numbers behind it), so the report can be archived, mailed, printed
to PDF or attached to a Dagster materialisation as it is. The order is the one a methodologist
signs off in: the decision first, then the risk-utility map, the variables, every measure
explained, and the provenance of each plan.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss.topsis import topsis_summary
from sdc_dagster.protect import global_recode as protect_global_recode
from sdc_dagster.protect import interval_recode as protect_interval_recode
from sdc_dagster.report.categories import category_sort_key, category_text, category_texts, normal_labels
from sdc_dagster.report.decision import RECOMMENDATION_RULE, Recommendation, pareto_optimal, recommend_plan
from sdc_dagster.report.inputs import ReportInputs
from sdc_dagster.report.measures import GROUPS, format_measure, format_value, is_missing, measure_info
from sdc_dagster.report.plots import (
    boxplot_png,
    category_bars_png,
    grouped_bars_png,
    heatmap_png,
    histogram_png,
    histograms_png,
    risk_utility_map_png,
)
from sdc_dagster.spec import SEARCHED_PLAN

_CSS = """
*, *::before, *::after { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; line-height: 1.45; padding: 0 1em; }
h1 { border-bottom: 2px solid #0072B2; padding-bottom: .3em; font-size: 1.7em; }
h2 { margin-top: 2em; color: #0b4f7c; border-bottom: 1px solid #ddd; }
h3 { margin-top: 1.4em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .6em 0; font-size: .88em; }
caption { text-align: left; font-weight: 600; padding: .2em 0; }
th, td { border: 1px solid #ccc; padding: .3em .55em; text-align: right; vertical-align: top; }
th { background: #eef3f8; text-align: left; }
td:first-child, th:first-child, td.text, th.text { text-align: left; }
.pass { color: #005a8c; font-weight: bold; }
.fail { color: #a23b00; font-weight: bold; }
.meta { color: #444; }
.decision { border: 2px solid #0072B2; background: #f2f8fc; padding: .6em 1em; margin: 1em 0; }
.decision.none { border-color: #D55E00; background: #fdf3ec; }
.rule { font-size: .9em; color: #444; }
figure { margin: .8em 0; max-width: 100%; }
figcaption { font-size: .88em; color: #444; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
details { margin: .3em 0 1em; }
summary { cursor: pointer; color: #0b4f7c; }
code, .hash { overflow-wrap: anywhere; word-break: break-all; font-size: .88em; }
.grid { display: flex; flex-wrap: wrap; gap: 1em; }
.grid > figure { flex: 1 1 420px; min-width: 0; }
@page { size: A4; margin: 14mm; }
@media print {
  body { margin: 0; max-width: none; font-size: 9.5pt; }
  .scroll { overflow: visible; }
  .grid { display: block; }
  .grid > figure { display: inline-block; width: 49%; margin: .4em 0; vertical-align: top; }
  h2, h3, caption { break-after: avoid; }
  figure, tr { break-inside: avoid; }
  thead { display: table-header-group; }
  img { max-height: 235mm; width: auto; }
  details { display: none; }
  p { orphans: 3; widows: 3; }
}
"""

_TOPSIS_STATISTICS = ("n", "min", "q1", "median", "mean", "q3", "max", "cv", "skewness",
                      "shapiro_w", "shapiro_p", "ks_d", "ks_p", "cvm_w2", "cvm_p", "ad_a2", "ad_p")

_NUMBER = re.compile(r"^[-−–]?\d|^–$")  # a formatted number (or a missing one): right-aligned

_DECISION_RISK = ("global_risk", "expected_reidentifications", "k2_violations", "k3_violations",
                  "k5_violations", "records_above_threshold", "household_risk", "combined_global_risk",
                  "linkage_risk")

_METHOD_LABELS = {
    "local_suppression": "Local suppression", "pram": "PRAM", "microaggregation": "Microaggregation",
    "recode": "Global recoding", "global_recode": "Global recoding", "interval_recode": "Global recoding into intervals",
    "top_code": "Top coding", "bottom_code": "Bottom coding", "noise": "Noise addition", "rounding": "Rounding",
    "rank_swap": "Rank swapping", "record_swap": "Targeted record swapping", "subsample": "Subsampling",
    "remove": "Removal of variables",
}


# --- inputs and the figures every format shares ------------------------------------------------


def _check_inputs(inputs: ReportInputs) -> None:
    if "risk" not in inputs.risk_per_record.columns:
        raise SDCInputError("risk_per_record: column 'risk' is required for the report")
    for name, plan in inputs.plans.items():
        if not isinstance(plan.topsis, pd.Series):
            raise SDCInputError(f"plans[{name!r}].topsis: a Series of per-record TOPSIS losses is required")


def _risk_measures(inputs: ReportInputs) -> list[str]:
    """Risk entries in first-seen order: the wave's own, then any only reported after a plan."""
    names = list(inputs.risk_before)
    for plan in inputs.plans.values():
        names.extend(name for name in plan.residual_risk if name not in names)
    return names


def _loss_measures(inputs: ReportInputs) -> list[str]:
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
    _check_inputs(inputs)
    measures = _risk_measures(inputs)
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
    ``records_after``, ``columns_removed``) or a step as written in the spec (``method`` and its
    parameters side by side).
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

    shown = [written(key, value) for key, value in parameters.items()
             if value is not None and value is not False and value != [] and value != {}]
    sentence = _METHOD_LABELS.get(method, method.replace("_", " ").capitalize())
    if shown:
        sentence += " with " + "; ".join(shown)
    if step.get("random_state") is not None:
        sentence += f" (seed {step['random_state']})"
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
    """PNG histogram of the individual re-identification risk of the unprotected records."""
    _check_inputs(inputs)
    return histogram_png(inputs.risk_per_record["risk"], f"Individual risk, {inputs.survey} {inputs.wave}",
                         xlabel="risk")


def combined_risk_histogram(inputs: ReportInputs) -> bytes | None:
    """PNG histogram of the combined categorical + continuous risk, if the inputs carry it."""
    if "combined_risk" not in inputs.risk_per_record.columns:
        return None
    return histogram_png(inputs.risk_per_record["combined_risk"], "Combined risk (SPEC §5)", xlabel="risk")


def contribution_boxplots(inputs: ReportInputs) -> dict[str, bytes]:
    """PNG box plots of the per-record contribution values, one plot per value (Shapley, solidarity)."""
    return {value: boxplot_png(frame, f"{value.capitalize()} values per variable", ylabel="contribution")
            for value, frame in (inputs.contributions_per_record or {}).items()}


def contribution_change_plots(inputs: ReportInputs) -> dict[str, bytes]:
    """PNG bar charts, one per plan with contributions: each variable's global contribution to the
    risk (SPEC §6.6) before and after the plan."""
    return {name: grouped_bars_png(plan.contributions, f"Contributions to the risk before and after {name}",
                                   ylabel="global contribution")
            for name, plan in inputs.plans.items() if plan.contributions is not None}


def topsis_histograms(inputs: ReportInputs) -> bytes:
    """PNG of the per-record TOPSIS losses of every plan, on a common bin grid."""
    return histograms_png({name: plan.topsis for name, plan in inputs.plans.items()},
                          "TOPSIS information loss per record", xlabel="eta (0 = least, 1 = most loss)")


def risk_utility_map(inputs: ReportInputs) -> bytes:
    """PNG scatter of the plans: residual risk against information loss, the Pareto front of the
    plans passing their blocking checks drawn and the recommended plan ringed."""
    points = plan_points(inputs)
    target, target_label = risk_target(inputs)
    front = None
    if inputs.search_front is not None:
        front = inputs.search_front.rename(columns={"global_risk": "risk"})
    risk_info, loss_info = measure_info(inputs.risk_measure), measure_info(inputs.loss_measure)
    return risk_utility_map_png(
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
    """The summary plots of the report as ``{name: PNG bytes}`` (for Dagster metadata)."""
    plots = {"risk_histogram": risk_histogram(inputs)} if inputs.keys else {}
    combined = combined_risk_histogram(inputs)
    if combined is not None:
        plots["combined_risk_histogram"] = combined
    plots.update({f"{value}_boxplot": png for value, png in contribution_boxplots(inputs).items()})
    plots.update({f"contributions_{name}": png for name, png in contribution_change_plots(inputs).items()})
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
    shares = {name: category_texts(series, labels).value_counts(normalize=True) for name, series in values.items()}
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
    """The labels of an ``interval_recode`` step: its own, else (right-closed bands) the interval
    labels of sdcMicro's globalRecode, the first closed on the left as interval_recode includes it."""
    if parameters.get("labels") is not None or not parameters.get("right", True):
        return parameters.get("labels")
    edges = [float(b) for b in parameters["breaks"]]
    labels = list(protect_global_recode(pd.Series(edges), breaks=edges).cat.categories)
    return ["[" + labels[0][1:], *labels[1:]]


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


def distribution_panels(inputs: ReportInputs, variable: str) -> list[tuple[str, dict[str, pd.Series], bool]]:
    """The charts of ``variable`` in "Distributions before and after": ``(title, {series name:
    values}, continuous)`` each. The first holds the original and every plan released on the
    original's scale (categories among the original's, numbers for a continuous variable); a plan
    that recoded the variable into bands (an interval step, or categories the original does not
    have) gets its own chart of categories, with the original put into the same bands when the
    plan's step allows it, so that bands are never drawn on the axis of the original values. An
    ``interval_recode`` without labels (codes 1, 2, ...) is shown with its interval labels."""
    values = inputs.distributions[variable]
    original = values["original"]
    continuous = variable in inputs.continuous
    observed = set(category_texts(original.dropna()))
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
            recoded = bool(steps) or not set(category_texts(present)) <= observed
        if not recoded:
            shared[name] = series
            continue
        panel = {}
        if steps:
            before = _banded(steps[-1], original)
            if before is not None:
                panel["original, in the same bands"] = before
            series = _band_names(steps[-1], series)
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


def _topsis_summary_table(inputs: ReportInputs) -> pd.DataFrame:
    columns = {}
    for name, plan in inputs.plans.items():
        eta = plan.topsis.dropna()
        columns[name] = topsis_summary(eta) if len(eta) >= 3 else {"n": len(eta)}
    return pd.DataFrame(columns, index=list(_TOPSIS_STATISTICS))


def _contributions_side_by_side(inputs: ReportInputs) -> pd.DataFrame | None:
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


# --- HTML building blocks ----------------------------------------------------------------------


def _format_cell(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return '<span class="pass">yes</span>' if value else '<span class="fail">no</span>'
    if value is None or value is pd.NA or (isinstance(value, float) and is_missing(value)):
        return "&ndash;"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if float(value).is_integer() and abs(float(value)) >= 1:  # counts that passed through a float column
            return f"{int(value):,}"
        return html.escape(format_value(value, "index"))
    return html.escape(str(value))


class _Markup(str):
    """A table label that is already HTML (not escaped again)."""


def _table(frame: pd.DataFrame, *, caption: str = "", index_label: str | None = None, raw: bool = False) -> str:
    """An HTML table in its own horizontal scroll container; the index becomes the first column.
    ``raw``: cells are already HTML."""
    label = index_label if index_label is not None else (frame.index.name or "")
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in [label, *frame.columns])
    cell = (lambda v: str(v)) if raw else _format_cell
    body = "".join(
        "<tr><td>" + (str(index) if isinstance(index, _Markup) else html.escape(str(index))) + "</td>" + "".join(
            f'<td class="text">{cell(v)}</td>' if isinstance(v, str) and not _NUMBER.match(v) else f"<td>{cell(v)}</td>"
            for v in row
        ) + "</tr>"
        for index, row in zip(frame.index, frame.itertuples(index=False, name=None))
    )
    caption_html = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f'<div class="scroll"><table>{caption_html}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _chart(png: bytes, alt: str, caption: str, data: str) -> str:
    """A chart with alt text, a caption and the table of its numbers behind it."""
    encoded = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{encoded}">'
            f"<figcaption>{html.escape(caption)}</figcaption>"
            f"<details><summary>Data behind the chart</summary>{data}</details></figure>")


def _release_note(release: dict | None) -> str:
    """Links to this release's manifest and to the release it supersedes."""
    if not release:
        return ""

    def link(folder: str, label: str) -> str:
        manifest = Path(folder) / "manifest.json"
        return f'<a href="{html.escape(manifest.as_uri())}">{html.escape(label)}</a>'

    text = f"<p class=\"release\">Release {link(release['folder'], 'run ' + str(release['run_id']))}"
    if release.get("previous_folder"):
        text += f"; supersedes {link(release['previous_folder'], 'run ' + str(release['previous_release']))}"
    return text + ".</p>"


# --- sections ------------------------------------------------------------------------------------


def search_sentence(inputs: ReportInputs) -> str:
    """What the plan search did and found, in words: the nodes it evaluated and how the lattice was
    cut, the plan it proposes (``searched``) and its loss against every other eligible plan, the
    runner-up, and the loss a stricter target (half the global-risk target) would cost."""
    found = inputs.search
    label = measure_info(inputs.loss_measure).label
    how = "every plan of the space" if found["exhaustive"] else found["bound"]
    text = (f"The plan search evaluated {int(found['nodes_evaluated']):,} of {int(found['nodes_total']):,} "
            f"generalisation plans in {found['seconds']:.1f} s ({how}). ")
    searched = inputs.plans.get(SEARCHED_PLAN)
    if not found["recommended"] or searched is None:
        return text + "No searched plan passes every blocking release check."
    text += f"It proposes {SEARCHED_PLAN} ({found['recommended']}). "
    mine = searched.loss.get(inputs.loss_measure, np.nan)
    compared = []
    for name, plan in inputs.plans.items():
        other = plan.loss.get(inputs.loss_measure, np.nan)
        if name == SEARCHED_PLAN or not plan.releasable or np.isnan(other) or np.isnan(mine):
            continue
        if np.isclose(mine, other, rtol=1e-9, atol=1e-12):
            compared.append(f"equal to {name}'s (the same protection)")
        else:
            compared.append(f"{'lower' if mine < other else 'higher'} than {name}'s ({other:.4g})")
    if compared:
        text += f"Its {label} ({mine:.4g}) is " + ", ".join(compared) + ". "
    if found["runner_up"]:
        text += f"Runner-up: {found['runner_up']} ({label} {found['runner_up_loss']:.4g}). "
    if not np.isnan(found["stricter_loss"]):
        text += (f"Meeting a stricter global-risk target of {format_value(found['stricter_target'], 'share')} "
                 f"would cost a {label} of {found['stricter_loss']:.4g}.")
    else:
        text += "No searched plan meets half the global-risk target."
    return text.strip()


def _decision_section(inputs: ReportInputs, points: pd.DataFrame, chosen: Recommendation) -> str:
    settings = [f"{inputs.n_records:,} records"]
    if inputs.keys:
        settings.append("categorical key variables " + ", ".join(map(str, inputs.keys)))
    else:
        settings.append("no categorical key variable (continuous keys only)")
    if inputs.design:
        settings.append(inputs.design)
    if inputs.k is not None:
        settings.append(f"k = {inputs.k}")
    if inputs.risk_threshold is not None:
        settings.append(f"individual-risk threshold {format_value(inputs.risk_threshold, 'share')}")
    if inputs.max_global_risk is not None:
        settings.append(f"global-risk target at most {format_value(inputs.max_global_risk, 'share')}")
    if inputs.max_linkage_risk is not None:
        settings.append(f"record-linkage target at most {format_value(inputs.max_linkage_risk, 'share')} of the "
                        "records linked to their own original")
    parts = ["<h2 id=\"decision\">Decision</h2>", f"<p class=\"meta\">Wave {html.escape(str(inputs.wave))}: "
             f"{html.escape('; '.join(settings))}.</p>"]
    if not inputs.keys and inputs.max_linkage_risk is not None:
        parts.append("<p>The risk of this file comes from its continuous variables: an intruder who knows some of a "
                     "person's values looks for the released record nearest to them. A plan is released when the best "
                     "record linkage (Euclidean, Mahalanobis, Gower or one-to-one) links at most the target share of "
                     "the records to their own original; the combined risk's continuous part (values with fewer than "
                     "k neighbours) and interval disclosure are shown with it.</p>")
    elif inputs.not_applicable:
        reasons: dict[str, list[str]] = {}
        for check, why in inputs.not_applicable.items():
            reasons.setdefault(why, []).append(check.replace("_", " "))
        parts.append("<p>Not checked for this file: " + html.escape("; ".join(
            f"{', '.join(checks)} ({why})" for why, checks in reasons.items())) + ".</p>")
    if not inputs.plans:
        return "".join(parts) + "<p>No protection plan is configured: nothing to release.</p>" + _risk_before(inputs)
    box = "decision" + ("" if chosen.plan else " none")
    verdict = (f"Recommended plan: <strong>{html.escape(chosen.plan)}</strong>" if chosen.plan
               else "<strong>No plan is recommended</strong>")
    parts.append(f'<div class="{box}"><p>{verdict}. {html.escape(chosen.reason)}</p>'
                 f'<p class="rule">Rule: {html.escape(RECOMMENDATION_RULE)}</p></div>')
    if inputs.search is not None:
        parts.append(f"<p>{html.escape(search_sentence(inputs))}</p>")
    parts.append(_risk_before(inputs))
    loss_label = measure_info(inputs.loss_measure)
    rows = {}
    for name, plan in inputs.plans.items():
        failed = "; ".join(f"{c}: {why}" for c, why in plan.withheld_because.items())
        rows[name] = {
            "residual risk": format_measure(inputs.risk_measure, plan.residual_risk),
            f"information loss ({loss_label.label})": format_measure(inputs.loss_measure, plan.loss),
            "utility (1 - loss)": format_value(points.loc[name, "utility"], "index"),
            "blocking checks": "passed" if plan.releasable else f"failed: {failed}",
            "warnings": "; ".join(f"{c}: {why}" for c, why in plan.warnings.items()) or "none",
            "Pareto-optimal": "yes" if points.loc[name, "pareto"] else "no",
        }
    plans = pd.DataFrame.from_dict(rows, orient="index").rename_axis("plan")
    parts.append(_table(plans, caption=f"Each plan: residual {measure_info(inputs.risk_measure).label.lower()}, "
                                        "information loss and its blocking release checks"))
    parts += ["<h3>Release decision</h3>",
              "<p>A plan failing a blocking check is withheld: no protected file and no release manifest are "
              "published for it.</p>", _table(decision_table(inputs)),
              _table(_by_plan(inputs, "checks"), caption="Release checks passed", index_label="check")]
    return "".join(parts)


def _by_plan(inputs: ReportInputs, attribute: str) -> pd.DataFrame:
    """Rows = entries of a per-plan dict attribute (union over plans), columns = plans."""
    return pd.DataFrame({name: pd.Series(getattr(plan, attribute), dtype=object)
                         for name, plan in inputs.plans.items()})


def _risk_before(inputs: ReportInputs) -> str:
    names = [n for n in _DECISION_RISK if n in inputs.risk_before]
    if not names:
        return ""
    rows = {measure_info(n).label: [format_measure(n, inputs.risk_before), measure_info(n).meaning] for n in names}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["before protection", "meaning"])
    return _table(table.rename_axis("risk of the unprotected wave"), caption="Risk before protection")


def _map_section(inputs: ReportInputs, points: pd.DataFrame, chosen: Recommendation) -> str:
    if not inputs.plans:
        return ""
    risk_kind, loss_kind = measure_info(inputs.risk_measure).kind, measure_info(inputs.loss_measure).kind
    data = points.assign(risk=[format_value(v, risk_kind) for v in points["risk"]],
                         loss=[format_value(v, loss_kind) for v in points["loss"]],
                         utility=[format_value(v, loss_kind) for v in points["utility"]],
                         recommended=[name == chosen.plan for name in points.index])
    alt = ("Scatter plot of the plans, residual risk on the horizontal axis and information loss on the vertical "
           "axis: " + "; ".join(f"{name} risk {format_value(r.risk, risk_kind)}, "
                                 f"loss {format_value(r.loss, loss_kind)}, "
                                 f"{'passes' if r.releasable else 'fails'} its checks"
                                 for name, r in points.iterrows())
           + (f"; recommended: {chosen.plan}" if chosen.plan else "; no plan recommended"))
    return ("<h2 id=\"map\">Risk-utility map</h2>"
            "<p>Lower left is better. Circles pass their blocking checks, crosses fail them; the dashed line is "
            "the Pareto front of the passing plans; the ring marks the recommendation"
            + ("; the dotted vertical line is the risk target" if risk_target(inputs)[0] is not None else "")
            + ("; the solid step line is the front of the plan search" if inputs.search_front is not None else "")
            + ".</p>"
            + _chart(risk_utility_map(inputs), alt, "Residual risk against information loss per plan",
                     _table(data, index_label="plan") + _front_table(inputs)))


def _front_table(inputs: ReportInputs) -> str:
    """The front of the plan search (``inputs.search_front``) as the tables write its figures."""
    if inputs.search_front is None or not len(inputs.search_front):
        return ""
    loss_kind = measure_info(inputs.loss_measure).kind
    front = pd.DataFrame({"global risk": [format_value(v, "share") for v in inputs.search_front["global_risk"]],
                          "information loss": [format_value(v, loss_kind) for v in inputs.search_front["loss"]]},
                         index=pd.RangeIndex(1, len(inputs.search_front) + 1, name="candidate"))
    return _table(front, caption="Front of the plan search")


def _variables_section(inputs: ReportInputs) -> str:
    parts = ["<h2 id=\"variables\">Per variable</h2>"]
    if inputs.suppressions is not None and not inputs.suppressions.empty:
        parts += ["<h3>Suppressions per key and plan</h3>",
                  "<p>Values observed in the original record and missing after the plan (SPEC §8.3).</p>",
                  _chart(grouped_bars_png(inputs.suppressions, "Values suppressed per key variable",
                                          ylabel="values suppressed"),
                         "Bar chart of the values suppressed per key variable and plan",
                         "Values suppressed per key variable and plan", _table(inputs.suppressions))]
    side = _contributions_side_by_side(inputs)
    if inputs.contributions_global is not None or side is not None:
        parts += ["<h3>Contributions to the risk: Shapley and solidarity values</h3>",
                  "<p>Share of the risk each variable carries (SPEC §6.6; sums to 1 over the variables while "
                  "some record is unsafe, 0 when none is), before protection and after each plan.</p>"]
        if side is not None:
            parts.append(_table(side, caption="Global contributions before and after each plan"))
        elif inputs.contributions_global is not None:
            parts.append(_table(inputs.contributions_global, index_label="variable"))
        if any(plan.contributions is not None for plan in inputs.plans.values()):
            parts.append("<h3>Contributions to the residual risk after each plan</h3>")
            plots = contribution_change_plots(inputs)
            parts.append('<div class="grid">' + "".join(
                _chart(plots[name], f"Bar chart of each variable's Shapley and solidarity contribution before and "
                                    f"after {name}", f"Contributions before and after {name}",
                       _table(plan.contributions, index_label="variable"))
                for name, plan in inputs.plans.items() if plan.contributions is not None) + "</div>")
        boxes = contribution_boxplots(inputs)
        if boxes:
            parts.append('<div class="grid">' + "".join(
                _chart(png, f"Box plots of the per-record {value} values of each variable",
                       f"{value.capitalize()} values per record and variable, before protection",
                       _table(inputs.contributions_per_record[value].describe().rename_axis("statistic")))
                for value, png in boxes.items()) + "</div>")
    if inputs.unsafe_by_variable is not None:
        parts += [f"<h3>Unsafe combinations (k = {inputs.k})</h3>",
                  "<p>Value combinations of 1, 2, 3 key variables shared by fewer than k records in the unprotected "
                  "wave, counted for each variable and category involved (SPEC §3.10, the mu-Argus table of "
                  "seed 001).</p>",
                  _table(inputs.unsafe_by_variable, caption="By variable and dimension", index_label="variable")]
        if inputs.unsafe_by_category is not None:
            by_category = inputs.unsafe_by_category.set_index(["variable", "category"])
            by_category.index = [f"{v} = {category_text(c, normal_labels(inputs.value_labels.get(v)))}"
                                 for v, c in by_category.index]
            parts.append(_table(by_category, caption="By category and dimension", index_label="variable = category"))
    matrices = [(name, variable, _labelled_matrix(matrix, inputs.value_labels.get(variable)))
                for name, plan in inputs.plans.items() for variable, matrix in plan.pram_matrices.items()]
    if matrices:
        parts += ["<h3>PRAM transition matrices</h3>",
                  "<p>Probability that a record with the original category (row) is released with the category of "
                  "the column (SPEC §8.8).</p>", '<div class="grid">']
        parts += [_chart(heatmap_png(matrix, f"PRAM of {variable}, plan {name}"),
                         f"Heat map of the PRAM transition matrix of {variable} in plan {name}; diagonal "
                         f"(retention) from {format_value(np.nanmin(np.diag(matrix.to_numpy(float))), 'index')} to "
                         f"{format_value(np.nanmax(np.diag(matrix.to_numpy(float))), 'index')}",
                         f"PRAM transition matrix of {variable}, plan {name}",
                         _table(matrix.rename_axis(index=None, columns=None), index_label="from \\ to"))
                  for name, variable, matrix in matrices]
        parts.append("</div>")
    if inputs.distributions:
        parts += ["<h3>Distributions before and after</h3>",
                  "<p>Every quasi-identifier a plan changed or suppressed: categories as shares of the records, "
                  "continuous variables as histograms and quantiles. A plan that recoded a variable into bands is "
                  "drawn on its own categories, next to the original recoded into the same bands where that is "
                  "possible.</p>", '<div class="grid">']
        for variable in inputs.distributions:
            for title, values, continuous in distribution_panels(inputs, variable):
                if continuous:
                    png = histograms_png(values, f"{title}: before and after", xlabel=variable)
                    parts.append(_chart(png, f"Overlaid histograms of {title} before protection and after "
                                             + ", ".join(n for n in values if n != "original"),
                                        f"{title} before and after", _table(quantile_table(values))))
                    continue
                shares = category_shares(values, inputs.value_labels.get(variable))
                png = category_bars_png(100 * shares, f"{title}: share of records per category")
                parts.append(_chart(png, f"Bar chart of the share of records in each category of {title}: "
                                         + ", ".join(values), f"{title} before and after",
                                    _table((100 * shares).round(2), caption="% of records")))
        parts.append("</div>")
    return "".join(parts) if len(parts) > 1 else ""


def _labelled_matrix(matrix: pd.DataFrame, labels: dict | None) -> pd.DataFrame:
    """A PRAM matrix with its categories written as the report writes categories (``1``, not
    ``1.0``; with their value labels)."""
    labels = normal_labels(labels)
    return matrix.rename(index=lambda c: category_text(c, labels), columns=lambda c: category_text(c, labels))


def _measures_section(inputs: ReportInputs) -> str:
    risk_names, loss_names = _risk_measures(inputs), _loss_measures(inputs)
    columns = ["original", *inputs.plans]
    parts = ["<h2 id=\"measures\">All measures, explained</h2>",
             "<p>Each measure with its meaning, the direction in which it is better, its range and the SPEC section "
             "that defines it. Counts are integers, shares percentages; a scale-dependent measure is followed by its "
             "relative form.</p>"]
    for group in GROUPS:
        names = [n for n in risk_names + loss_names if measure_info(n).group == group]
        if not names:
            continue
        rows = {}
        for name in names:
            info = measure_info(name)
            values = {"original": inputs.risk_before if name in risk_names else {},
                      **{p: (plan.residual_risk if name in risk_names else plan.loss) for p, plan in inputs.plans.items()}}
            rows[name] = {"measure": f"<strong>{html.escape(info.label)}</strong><br><code>{html.escape(name)}</code>",
                          "what it says": html.escape(f"{info.meaning}; {info.direction}; range {info.range}"),
                          "SPEC": html.escape(info.spec),
                          **{c: html.escape(format_measure(name, values[c])) for c in columns}}
        table = pd.DataFrame.from_dict(rows, orient="index").set_index("measure")
        table.index = table.index.map(_Markup)
        parts += [f"<h3>{html.escape(group)}</h3>", _table(table, raw=True)]
        if group == GROUPS[0]:
            figures = [_chart(risk_histogram(inputs), "Histogram of the individual re-identification risk of the "
                              "unprotected records", "Individual re-identification risk before protection",
                              _table(inputs.risk_per_record["risk"].describe().to_frame("risk").rename_axis("statistic")))
                       ] if inputs.keys else []  # without categorical keys every record shares the empty key
            combined = combined_risk_histogram(inputs)
            if combined is not None:
                figures.append(_chart(combined, "Histogram of the combined categorical and continuous record risk",
                                      "Combined categorical and continuous risk before protection",
                                      _table(inputs.risk_per_record["combined_risk"].describe().to_frame("combined risk")
                                             .rename_axis("statistic"))))
            parts.append('<div class="grid">' + "".join(figures) + "</div>")
    if inputs.measure_notes:
        parts += ["<h3 id=\"not-applicable\">Measures not computed, or computed with a limit</h3>",
                  "<p>A measure undefined on this wave's data is left out and the wave goes on; the release "
                  "decision rests on the blocking checks alone.</p>",
                  _table(measure_notes_table(inputs), index_label="measure")]
    if inputs.plans:
        parts += ["<h3>TOPSIS information loss per record (SPEC §10)</h3>",
                  "<p>Per-record loss relative to the best and worst record of the same plan (0 = least, 1 = most): "
                  "compare distributions within a plan, not levels across plans.</p>",
                  _chart(topsis_histograms(inputs), "Histograms of the per-record TOPSIS loss of each plan",
                         "TOPSIS information loss per record",
                         _table(_topsis_summary_table(inputs), index_label="statistic"))]
    return "".join(parts)


def measure_notes_table(inputs: ReportInputs) -> pd.DataFrame:
    """The measures left out as not applicable or computed with a limit: one row per note, indexed
    by measure, with the data it concerns ("original" or a plan), its status and the reason."""
    rows = [{"measure": n.measure, "data": n.variant, "status": n.status, "reason": n.reason} for n in inputs.measure_notes]
    return pd.DataFrame(rows, columns=["measure", "data", "status", "reason"]).set_index("measure")


def _provenance_section(inputs: ReportInputs) -> str:
    if not inputs.plans:
        return ""
    parts = ["<h2 id=\"provenance\">Protection steps and provenance</h2>"]
    versions: dict[str, dict] = {}
    for name, plan in inputs.plans.items():
        steps = plan.steps or [{"method": "none"}]
        parts += [f"<h3>{html.escape(name)}</h3>",
                  "<ol>" + "".join(f"<li>{html.escape(step_sentence(s))}</li>" for s in steps) + "</ol>"]
        origin = plan.provenance
        if origin:
            facts = [("plan seed (random_state)", origin.get("seed")), ("run", origin.get("run_id")),
                     ("spec SHA-256", origin.get("spec_sha256")), ("input data SHA-256", origin.get("input_sha256")),
                     ("output SHA-256", origin.get("output_sha256") or "none (withheld)")]
            record = origin.get("record")
            items = "".join(f'<li>{html.escape(label)}: <span class="hash">{html.escape(str(value))}</span></li>'
                            for label, value in facts)
            if record:
                items += (f'<li>{"manifest" if plan.releasable else "withheld record"}: '
                          f'<a class="hash" href="{html.escape(Path(record).as_uri())}">{html.escape(record)}</a></li>')
            if origin.get("audit_command"):
                items += f"<li>replay and verify: <code>{html.escape(origin['audit_command'])}</code></li>"
            parts.append(f"<ul>{items}</ul>")
            versions[name] = origin.get("packages", {})
        parts.append(_release_note(plan.release))
    if versions:
        table = pd.DataFrame(versions).fillna("").rename_axis("package")
        parts += ["<h3>Versions</h3>", _table(table)]
    return "".join(parts)


def render_report(inputs: ReportInputs) -> str:
    """The release report as one self-contained HTML document.

    Sections, in order: the decision (wave, keys, k and thresholds, risk before protection, one
    line per plan with its residual risk, loss, utility and blocking checks, the recommended plan
    with its reason and the rule of :mod:`~sdc_dagster.report.decision`, the release decision of
    each plan); the risk-utility map with the Pareto front; per variable (suppressions per key
    and plan, Shapley and solidarity contributions before and after each plan, the unsafe
    combinations of SPEC §3.10, PRAM matrices as heat maps, distributions before and after);
    every measure explained and grouped (meaning, direction, range, SPEC section), formatted by
    kind, and the measures left out as not applicable or limited, with the reason; the plans' steps as sentences with seeds, hashes, versions, manifest links and the
    ``sdc audit`` command. Every chart has alt text and its numbers in a table behind it.

    Returns
    -------
    str
        HTML5 with inline CSS and base64 PNG images; it references no external URL.
    """
    _check_inputs(inputs)
    title = f"Disclosure control report: {inputs.survey}, wave {inputs.wave}"
    points = plan_points(inputs)
    chosen = recommend_plan(points)
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        _decision_section(inputs, points, chosen),
        _map_section(inputs, points, chosen),
        _variables_section(inputs),
        _measures_section(inputs),
        _provenance_section(inputs),
    ]
    body = "\n".join(s for s in sections if s)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n<main>\n{body}\n</main>\n"
            "</body></html>\n")
