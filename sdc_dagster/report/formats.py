"""The report's other formats: JSON with every figure, PDF printed by headless Chromium from the
same HTML, and an index page linking every wave of a survey with the trend of risk and utility."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.files import write_atomic
from sdc_dagster.report.categories import normal_labels
from sdc_dagster.report.decision import RECOMMENDATION_RULE
from sdc_dagster.report.content import (
    binding_limits,
    categories_merged,
    distribution_tables,
    plan_points,
    recommendation,
    step_sentence,
    suda_summary,
    topsis_summary_table,
    worst_losses,
)
from sdc_dagster.report.header import header_fields, sign_off_fields
from sdc_dagster.report.html import render_report
from sdc_dagster.report.references import REFERENCES, citation_text, sources
from sdc_dagster.report.inputs import ReportInputs
from sdc_dagster.report.markup import REPORT_CSS, html_chart, html_table
from sdc_dagster.report.measures import format_value, measure_info
from sdc_dagster.report.plots import lines_svg

_CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def _plain(value):
    """``value`` with pandas / numpy objects turned into JSON types (NaN and infinity -> null;
    a DataFrame -> ``{"index", "columns", "data"}``; a Series -> ``{label: value}``)."""
    if isinstance(value, pd.DataFrame):
        return {"index": [_plain(i) for i in value.index], "columns": [str(c) for c in value.columns],
                "data": [[_plain(v) for v in row] for row in value.itertuples(index=False, name=None)]}
    if isinstance(value, pd.Series):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(float(value)) else None
    if value is None or value is pd.NA:
        return None
    return str(value)


def report_data(inputs: ReportInputs, topsis: pd.DataFrame | None = None,
                distributions: dict[str, pd.DataFrame] | None = None) -> dict:
    """Every figure of the report as plain JSON types, for other tools: the decision (rule,
    recommendation, plan points), the risk before protection (and the summary of the per-record
    risk), each plan's residual risk, loss, TOPSIS summary, checks, steps (records and
    sentences), contributions, PRAM matrices, provenance, per-variable utility figures and worst
    losses in words, the limits no plan meets, SUDA2's DIS-SUDA intervals, the
    description of every measure, the suppressions, unsafe combinations, distributions and the measures left out
    or limited (``measure_notes``). ``topsis``, ``distributions``: as for
    :func:`~sdc_dagster.report.html.render_report`."""
    points = plan_points(inputs)
    chosen = recommendation(inputs)
    measures = set(inputs.risk_before)
    if topsis is None and inputs.plans:
        topsis = topsis_summary_table(inputs)
    topsis_table = topsis.to_dict() if inputs.plans else {}
    plans = {}
    for name, plan in inputs.plans.items():
        measures |= set(plan.residual_risk) | set(plan.loss)
        plans[name] = {
            "releasable": plan.releasable, "residual_risk": plan.residual_risk, "loss": plan.loss,
            "checks": plan.checks, "withheld_because": plan.withheld_because, "warnings": plan.warnings,
            "steps": plan.steps, "steps_text": [step_sentence(s) for s in plan.steps],
            "topsis_mean": float(plan.topsis.mean()) if len(plan.topsis) else None,
            "topsis_summary": topsis_table.get(name),
            "contributions": plan.contributions, "pram_matrices": plan.pram_matrices,
            "provenance": plan.provenance, "release": plan.release,
            "utility": plan.utility, "worst_losses": worst_losses(plan.utility),
            "categories_merged": categories_merged(inputs, name),
        }
    tables = distribution_tables(inputs) if distributions is None else distributions
    distributions = {
        variable: {"kind": "continuous", "quantiles": table} if variable in inputs.continuous
        else {"kind": "categorical", "shares": table}
        for variable, table in tables.items()
    }
    described = {name: _described(name) for name in sorted(measures)}
    cited = sorted({key for name in measures for key, _ in sources(measure_info(name).spec)})
    return _plain({
        "header": header_fields(inputs), "sign_off": sign_off_fields(inputs),
        "survey": inputs.survey, "wave": inputs.wave, "n_records": inputs.n_records, "keys": inputs.keys,
        "k": inputs.k, "risk_threshold": inputs.risk_threshold, "max_global_risk": inputs.max_global_risk,
        "max_linkage_risk": inputs.max_linkage_risk, "checks_not_applicable": inputs.not_applicable,
        "design": inputs.design,
        "risk_measure": inputs.risk_measure, "loss_measure": inputs.loss_measure,
        "decision": {"rule": RECOMMENDATION_RULE, "recommended": chosen.plan, "reason": chosen.reason,
                     "pareto": chosen.pareto, "tied": chosen.tied, "points": points,
                     "binding_limits": binding_limits(inputs)},
        "suda": suda_summary(inputs.risk_per_record),
        "risk_before": inputs.risk_before,
        "risk_per_record_summary": inputs.risk_per_record.describe(),
        "plans": plans,
        "measures": described,
        "contributions_global": inputs.contributions_global,
        "suppressions": inputs.suppressions,
        "unsafe_by_variable": inputs.unsafe_by_variable, "unsafe_by_category": inputs.unsafe_by_category,
        "distributions": distributions,
        "measure_notes": [vars(n) for n in inputs.measure_notes],
        "value_labels": {variable: normal_labels(labels) for variable, labels in inputs.value_labels.items()},
        "search_front": inputs.search_front,
        "what_it_would_take": inputs.what_it_would_take,
        "references": {key: REFERENCES[key] for key in cited},
    })


def _described(name: str) -> dict:
    """A measure's description in the JSON report: its :class:`~sdc_dagster.report.measures.Measure`
    fields, the section of the formula notes replaced by its published ``sources`` (short forms,
    full entries under ``references``)."""
    described = {key: value for key, value in vars(measure_info(name)).items() if key != "spec"}
    return {**described, "sources": citation_text(measure_info(name).spec)}


def write_report(inputs: ReportInputs, folder: Path, plots: dict[str, bytes] | None = None) -> dict[str, Path]:
    """Write ``<wave>.html`` and ``<wave>.json`` into ``folder`` (created) and refresh the
    survey's ``index.html`` there (``plots``: as for :func:`~sdc_dagster.report.html.render_report`).
    The plans' TOPSIS summary and the distribution tables are computed once, for both files. Returns ``{"html", "json", "index"}``
    paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"html": folder / f"{inputs.wave}.html", "json": folder / f"{inputs.wave}.json"}
    topsis = topsis_summary_table(inputs) if inputs.plans else None
    distributions = distribution_tables(inputs)
    write_atomic(paths["html"], render_report(inputs, plots, topsis, distributions))
    write_atomic(paths["json"], json.dumps(report_data(inputs, topsis, distributions), indent=1, allow_nan=False))
    paths["index"] = write_index(folder)
    return paths


#: Browsers that print the report, looked up on PATH in this order (Chromium, Chrome, Edge).
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "microsoft-edge")

#: Seconds a headless browser may take to print one report.
PDF_TIMEOUT = 180


class BrowserNotFound(RuntimeError):
    """No Chromium-family browser to print the PDF with; the message names what to install."""


def chromium_executable() -> str | None:
    """The first Chromium-family browser on PATH (:data:`BROWSERS`), or None."""
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def write_pdf(html_path: Path, pdf_path: Path) -> Path:
    """Print the HTML report to PDF (A4, the report's print style sheet: decision on page 1, pages
    filled) with a headless Chromium-family browser found on PATH (``--headless --print-to-pdf``),
    so that it works from an installed package without any Python browser driver.

    Raises
    ------
    BrowserNotFound
        No browser of :data:`BROWSERS` is on PATH (the message says what to install).
    RuntimeError
        The browser ran but wrote no PDF (its error output is quoted).
    """
    browser = chromium_executable()
    if browser is None:
        raise BrowserNotFound("printing the PDF needs Chromium or Google Chrome on PATH: install it "
                              "(e.g. `apt install chromium`) or open the HTML report and print it from a browser")
    pdf_path = Path(pdf_path).resolve()
    with tempfile.TemporaryDirectory(prefix="sdc-pdf-") as profile:  # no user profile touched or left behind
        printed = Path(profile) / "report.pdf"  # then moved into place whole (sdc_dagster.files)
        command = [browser, "--headless", *_CHROMIUM_ARGS, f"--user-data-dir={profile}", "--no-pdf-header-footer",
                   "--run-all-compositor-stages-before-draw", f"--print-to-pdf={printed}",
                   Path(html_path).resolve().as_uri()]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PDF_TIMEOUT, check=False)
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(f"{browser} did not print {pdf_path.name} within {PDF_TIMEOUT} s") from exc
        if not printed.is_file() or printed.stat().st_size == 0:
            detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"{browser} wrote no PDF (exit {done.returncode}: {detail[0]})")
        return write_atomic(pdf_path, printed.read_bytes())


def _wave_order(wave: str):
    """Natural order of wave names (w2 before w10)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", wave)]


def wave_trend(folder: Path) -> pd.DataFrame:
    """One row per wave report (``<wave>.json``) in ``folder``, in natural wave order: the risk
    before protection (the report's risk measure: global risk, or record-linkage risk for a survey
    with continuous keys only), the recommended plan, its residual risk and its information loss.
    ``attrs["risk_measure"]``: the risk measure of the latest wave."""
    rows, measure = {}, "global_risk"
    for path in sorted(Path(folder).glob("*.json"), key=lambda p: _wave_order(p.stem)):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "decision" not in data:
            continue
        measure = data["risk_measure"]
        chosen = data["decision"]["recommended"]
        plan = data["plans"].get(chosen, {}) if chosen else {}
        rows[str(data["wave"])] = {
            "risk before": data["risk_before"].get(data["risk_measure"]),
            "recommended plan": chosen or "none",
            "risk after": plan.get("residual_risk", {}).get(data["risk_measure"]),
            "information loss": plan.get("loss", {}).get(data["loss_measure"]),
        }
    columns = ["risk before", "recommended plan", "risk after", "information loss"]
    trend = pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis("wave")
    trend.attrs["risk_measure"] = measure
    return trend


def write_index(folder: Path) -> Path:
    """``index.html`` in a survey's report folder: a link to every wave's report and the trend of
    the risk before and after the recommended plan and of its information loss across waves."""
    folder = Path(folder)
    trend = wave_trend(folder)
    survey = folder.name
    links = "".join(f'<li><a href="{html.escape(w)}.html">wave {html.escape(w)}</a> '
                    f"(recommended: {html.escape(str(r['recommended plan']))})</li>"
                    for w, r in trend.iterrows())
    shown = trend.copy()
    for column in ("risk before", "risk after"):
        shown[column] = [format_value(v, "share") for v in trend[column]]
    shown["information loss"] = [format_value(v, "index") for v in trend["information loss"]]
    body = f"<h1>Disclosure control reports: {html.escape(survey)}</h1><ul>{links}</ul>"
    if len(trend):
        numbers = trend[["risk before", "risk after", "information loss"]].astype(float)
        label = measure_info(trend.attrs["risk_measure"]).label
        body += ("<h2>Risk and utility across waves</h2>"
                 + html_chart(lines_svg(numbers[["risk before", "risk after"]], f"{label} across waves",
                                         ylabel=label.lower(), xlabel="wave"),
                               f"Line chart of the {label.lower()} before protection and after the recommended plan, by wave",
                               f"{label} before and after the recommended plan", html_table(shown))
                 + html_chart(lines_svg(numbers[["information loss"]], "Information loss of the recommended plan",
                                         ylabel="information loss", xlabel="wave"),
                               "Line chart of the information loss of the recommended plan, by wave",
                               "Information loss of the recommended plan", html_table(shown)))
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Reports: {html.escape(survey)}</title><style>{REPORT_CSS}</style></head>\n<body><main>{body}</main>"
            "</body></html>\n")
    path = folder / "index.html"
    write_atomic(path, page)
    return path



def export_report(folder: Path, wave: str, *, pdf: bool = False) -> dict[str, Path]:
    """The files of a wave's report in a survey's report folder (as the ``sdc_report`` asset wrote
    them): ``html``, ``json``, the refreshed ``index`` and, with ``pdf``, the PDF printed from the
    HTML (``<wave>.pdf``). Raises SDCInputError naming the missing file when the wave has no report."""
    folder = Path(folder)
    paths = {"html": folder / f"{wave}.html", "json": folder / f"{wave}.json"}
    for kind, path in paths.items():
        if not path.is_file():
            raise SDCInputError(f"report of wave {wave!r}: {path} ({kind}) not found; materialise sdc_report first")
    paths["index"] = write_index(folder)
    if pdf:
        paths["pdf"] = write_pdf(paths["html"], folder / f"{wave}.pdf")
    return paths
