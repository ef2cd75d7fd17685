"""The self-contained HTML release report comparing the protection plans of one survey wave.

One file, no external resources: inline CSS, plots embedded as base64 PNG data URIs, so the
report can be archived, mailed or attached to a Dagster materialisation as it is.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.loss.topsis import topsis_summary
from sdc_dagster.report.inputs import ReportInputs
from sdc_dagster.report.plots import boxplot_png, grouped_bars_png, histogram_png, histograms_png, risk_utility_map_png

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; line-height: 1.4; padding: 0 1em; }
h1 { border-bottom: 2px solid #4575b4; padding-bottom: .3em; }
h2 { margin-top: 2em; color: #4575b4; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: right; }
th { background: #eef2f8; }
td:first-child, th:first-child { text-align: left; }
.pass { color: #1b7837; font-weight: bold; }
.fail { color: #b2182b; font-weight: bold; }
.meta { color: #555; }
figure { display: inline-block; margin: .5em 1em .5em 0; }
figcaption { font-size: .85em; color: #555; }
img { max-width: 100%; border: 1px solid #eee; }
"""

_TOPSIS_STATISTICS = ("n", "min", "q1", "median", "mean", "q3", "max", "cv", "skewness",
                      "shapiro_w", "shapiro_p", "ks_d", "ks_p", "cvm_w2", "cvm_p", "ad_a2", "ad_p")


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
    """PNG of the per-record TOPSIS losses of every plan, overlaid on a common bin grid."""
    return histograms_png({name: plan.topsis for name, plan in inputs.plans.items()},
                          "TOPSIS information loss per record", xlabel="eta (0 = least, 1 = most loss)")


def risk_utility_map(inputs: ReportInputs) -> bytes:
    """PNG scatter of the plans: residual ``inputs.risk_measure`` against mean TOPSIS loss."""
    points = pd.DataFrame(
        {"risk": [float(plan.residual_risk.get(inputs.risk_measure, np.nan)) for plan in inputs.plans.values()],
         "loss": [float(plan.topsis.mean()) if len(plan.topsis) else np.nan for plan in inputs.plans.values()],
         "releasable": [bool(plan.releasable) for plan in inputs.plans.values()]},
        index=list(inputs.plans),
    )
    return risk_utility_map_png(points, f"Risk-utility map ({inputs.risk_measure})")


def report_plots(inputs: ReportInputs) -> dict[str, bytes]:
    """Every plot of the report as ``{name: PNG bytes}`` (for Dagster metadata)."""
    plots = {"risk_histogram": risk_histogram(inputs)}
    combined = combined_risk_histogram(inputs)
    if combined is not None:
        plots["combined_risk_histogram"] = combined
    plots.update({f"{value}_boxplot": png for value, png in contribution_boxplots(inputs).items()})
    plots.update({f"contributions_{name}": png for name, png in contribution_change_plots(inputs).items()})
    if inputs.plans:
        plots["topsis_histograms"] = topsis_histograms(inputs)
        plots["risk_utility_map"] = risk_utility_map(inputs)
    return plots


def _format_cell(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return '<span class="pass">yes</span>' if value else '<span class="fail">no</span>'
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "&ndash;"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        magnitude = abs(float(value))
        if float(value).is_integer() and magnitude >= 1:  # counts that passed through a float column
            return f"{int(value):,}"
        return f"{value:.4g}" if magnitude >= 1e5 or (0 < magnitude < 1e-3) else f"{value:.4f}"
    return html.escape(str(value))


def _table(frame: pd.DataFrame, *, caption: str = "", index_label: str | None = None) -> str:
    """An escaped HTML table; the index becomes the first column."""
    label = index_label if index_label is not None else (frame.index.name or "")
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in [label, *frame.columns])
    body = "".join(
        "<tr><td>" + html.escape(str(index)) + "</td>" + "".join(f"<td>{_format_cell(v)}</td>" for v in row) + "</tr>"
        for index, row in zip(frame.index, frame.itertuples(index=False, name=None))
    )
    caption_html = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    # wide tables (many risk measures or plans) scroll instead of overflowing the page
    return f'<div class="scroll"><table>{caption_html}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _figure(png: bytes, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _by_plan(inputs: ReportInputs, attribute: str) -> pd.DataFrame:
    """Rows = entries of a per-plan dict attribute (union over plans), columns = plans."""
    return pd.DataFrame({name: pd.Series(getattr(plan, attribute), dtype=object)
                         for name, plan in inputs.plans.items()})


def _steps_section(inputs: ReportInputs) -> str:
    parts = []
    for name, plan in inputs.plans.items():
        steps = pd.DataFrame(plan.steps) if plan.steps else pd.DataFrame({"method": ["(none)"]})
        steps.index = pd.RangeIndex(1, len(steps) + 1, name="step")
        parts.append(f"<h3>{html.escape(name)}</h3>" + _table(steps) + _release_note(plan.release))
    return "".join(parts)


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


def decision_table(inputs: ReportInputs) -> pd.DataFrame:
    """The release decision of each plan: ``decision`` ("released" or "withheld"),
    ``blocking_checks_failed`` (each failed blocking check with its rule and the value found) and
    ``warnings`` (failed non-blocking checks)."""
    def reasons(failed: dict) -> str:
        return "; ".join(f"{check}: {why}" for check, why in failed.items()) or "none"

    return pd.DataFrame(
        {"decision": ["released" if plan.releasable else "withheld" for plan in inputs.plans.values()],
         "blocking_checks_failed": [reasons(plan.withheld_because) for plan in inputs.plans.values()],
         "warnings": [reasons(plan.warnings) for plan in inputs.plans.values()]},
        index=pd.Index(list(inputs.plans), name="plan"),
    )


def _contributions_section(inputs: ReportInputs) -> str:
    plots = contribution_change_plots(inputs)
    return "".join(
        f"<h3>{html.escape(name)}</h3>" + _table(plan.contributions, index_label="variable")
        + _figure(plots[name], f"Global contributions before and after {name}")
        for name, plan in inputs.plans.items() if plan.contributions is not None
    )


def _topsis_summary_table(inputs: ReportInputs) -> pd.DataFrame:
    columns = {}
    for name, plan in inputs.plans.items():
        eta = plan.topsis.dropna()
        columns[name] = topsis_summary(eta) if len(eta) >= 3 else {"n": len(eta)}
    return pd.DataFrame(columns, index=list(_TOPSIS_STATISTICS))


def render_report(inputs: ReportInputs) -> str:
    """The release report as one self-contained HTML document.

    Sections: headline table; risk before and after each plan (global, k-anonymity,
    household); release checks and the release decision of each plan (withheld plans name the
    blocking checks they failed); protection steps; contributions of the key variables
    (global Shapley / solidarity values and per-record box plots) and, per plan, how the plan
    moved each variable's contribution (table and bar chart); every information-loss
    measure per plan with the distribution of the TOPSIS losses (SPEC §10); plots of the
    individual risk, the TOPSIS losses and the risk-utility map.

    Parameters
    ----------
    inputs : ReportInputs

    Returns
    -------
    str
        HTML5 with inline CSS and base64 PNG images; it references no external URL.
    """
    _check_inputs(inputs)
    title = f"Disclosure control report: {inputs.survey}, wave {inputs.wave}"
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">{inputs.n_records:,} records; key variables: '
        f"{html.escape(', '.join(map(str, inputs.keys)))}; {len(inputs.plans)} protection plan(s).</p>",
        "<h2>Headline</h2>", _table(headline_table(inputs)),
    ]
    risk = pd.DataFrame({"original": pd.Series(inputs.risk_before, dtype=object)})
    for name, plan in inputs.plans.items():
        risk[name] = pd.Series(plan.residual_risk, dtype=object)
    risk = risk.reindex(_risk_measures(inputs))
    sections += ["<h2>Disclosure risk before and after protection</h2>", _table(risk, index_label="measure")]
    figures = [_figure(risk_histogram(inputs), "Individual re-identification risk before protection")]
    combined = combined_risk_histogram(inputs)
    if combined is not None:
        figures.append(_figure(combined, "Combined categorical and continuous risk before protection"))
    sections.append("".join(figures))
    if inputs.plans:
        sections += ["<h2>Release checks</h2>", _table(_by_plan(inputs, "checks"), index_label="check"),
                     "<h3>Release decision</h3>",
                     "<p>A plan failing a blocking check is withheld: no protected file and no release "
                     "manifest are published for it.</p>",
                     _table(decision_table(inputs)),
                     "<h2>Protection steps</h2>", _steps_section(inputs)]
    if inputs.contributions_global is not None or inputs.contributions_per_record:
        sections.append("<h2>Contributions of the key variables to the risk</h2>")
        if inputs.contributions_global is not None:
            sections.append(_table(inputs.contributions_global, index_label="variable"))
        sections.append("".join(_figure(png, f"{value.capitalize()} values per record and variable")
                                for value, png in contribution_boxplots(inputs).items()))
    if any(plan.contributions is not None for plan in inputs.plans.values()):
        sections += ["<h2>Contributions to the residual risk after each plan</h2>", _contributions_section(inputs)]
    if inputs.plans:
        sections += [
            "<h2>Information loss</h2>", _table(_by_plan(inputs, "loss"), index_label="measure"),
            "<h3>TOPSIS information loss per record</h3>",
            _table(_topsis_summary_table(inputs), index_label="statistic"),
            _figure(topsis_histograms(inputs), "TOPSIS information loss per record"),
            "<h2>Risk-utility map</h2>",
            _figure(risk_utility_map(inputs), "Residual risk against mean TOPSIS loss per plan"),
        ]
    body = "\n".join(sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n")
