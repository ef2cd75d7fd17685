"""The report of a table set: a self-contained HTML page with one section per table.

Each section lists the table's release checks, then its cells with the suppressed ones marked,
primary (unsafe under the table's rules) apart from secondary (suppressed to protect a primary), and
each suppressed cell's audit interval ``[lo, up]``: the range an intruder derives for it by linear
programming from every published cell of every linked table (Hundepool et al. 2012, "Statistical
Disclosure Control", §4.4.1; :func:`sdc_dagster.tables.intruder.audit`), beside the protection levels the
rules ask for. A rounded table (``method: rounding``) or one perturbed by the cell key method
(``method: cell_key``) shows each cell's original and published figure, the cells it changed
marked (with the cell key each perturbation was read at). A duplicate cell (a parent with a single child: the same cell under two codes,
:func:`sdc_dagster.pipeline.tables.duplicate_of`) names the cell it duplicates and is counted
once. A table of more than :data:`FULL_TABLE_CELLS` cells shows its suppressed cells only.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np
import pandas as pd

from sdc_dagster.numerics.decimals import MAX_RELEASED_DECIMALS, original_decimals
from sdc_dagster.report.markup import REPORT_CSS, Markup, format_cell, html_table

#: Above this many cells a section lists the suppressed cells only.
FULL_TABLE_CELLS = 400

_STYLE = """
td .primary, .primary { background: #fbe0d0; color: #7a2800; font-weight: bold; padding: 0 .3em; }
td .secondary, .secondary { background: #dcebf7; color: #0b4f7c; padding: 0 .3em; }
td .rounded, .rounded, td .perturbed, .perturbed { background: #fff3c4; color: #5c4400; font-weight: bold;
    padding: 0 .3em; }
td .figure, td .rounded, td .perturbed { display: block; text-align: right; }
"""


#: Decimals a table's derived figures (audit bounds, protection levels) get beyond its values'
#: (the Handbook's protection level 22.94 of a table of whole values).
DERIVED_DECIMALS = 2


def figure_format(values) -> Callable[..., str]:
    """The text of a table's figures: thousands separated, at the decimals the table's ``values`` are
    published with (:func:`~sdc_dagster.numerics.decimals.original_decimals`, as the released CSV
    writes them), trailing zeros dropped; not the report's three significant digits, which showed a
    cell of 199.6 as 200 and the protection level 418,311.76 as 4.18 × 10⁵. ``derived=True``:
    :data:`DERIVED_DECIMALS` more, for bounds and levels computed from the values."""
    observed = np.asarray(values, dtype=np.float64)
    decimals = original_decimals(observed)
    decimals = MAX_RELEASED_DECIMALS if decimals is None else decimals

    def text(value, *, derived: bool = False) -> str:
        value = float(value)
        if np.isnan(value):
            return "&ndash;"
        if np.isinf(value):
            return "&infin;" if value > 0 else "&minus;&infin;"
        shown = f"{value:,.{decimals + (DERIVED_DECIMALS if derived else 0)}f}"
        shown = shown.rstrip("0").rstrip(".") if "." in shown else shown
        return "0" if shown in ("-0", "") else shown

    return text


def _interval(lo: float, up: float, figure) -> str:
    if np.isnan(lo):
        return "&ndash;"
    return f"[{figure(lo, derived=True)}, {figure(up, derived=True)}]"


def _codes(shown: pd.DataFrame, dimensions: list[str]) -> pd.DataFrame:
    """The dimension columns as text cells: a code that looks like a number (``1``) is aligned
    left like ``Total`` and ``piped`` in the same column, not right like a figure."""
    return pd.DataFrame({d: shown[d].map(lambda v: f'<span class="code">{html.escape(str(v))}</span>')
                         for d in dimensions})


def _cell_count(published: int, duplicates: int) -> str:
    if not duplicates:
        return f"{published} cells"
    return (f"{published - duplicates} distinct cells ({published} published: {duplicates} "
            f"{'is a duplicate' if duplicates == 1 else 'are duplicates'} of another code's cell, a parent with a "
            "single child, listed in the column <em>duplicate of</em> and counted once)")


#: The words of a perturbative method's section by the status of the cells it changed.
_PERTURBED_WORDS = {"rounded": "published rounded (small-count rounding)",
                    "perturbed": "published perturbed (cell key method)"}


def perturbed_section(name: str, cells: pd.DataFrame, dimensions: list[str], checks: dict[str, dict]) -> str:
    """One rounded or perturbed table's section (``method: rounding``,
    :func:`sdc_dagster.pipeline.tables.round_tables`; ``method: cell_key``,
    :func:`sdc_dagster.pipeline.tables.cell_key_tables`): its checks, then original beside published
    figure with the difference (and the cell key under the cell key method), the cells the method
    changed marked and those unsafe under the rules flagged (a methodologist's view of what it did)."""
    status = "perturbed" if "cell_key" in cells else "rounded"
    measure = "value" if "value" in cells else "freq"
    duplicate = cells["duplicate_of"] != ""
    changed = int((cells.loc[~duplicate, "status"] == status).sum())
    unsafe = int(cells.loc[~duplicate, "primary"].sum())
    shown = cells if len(cells) <= FULL_TABLE_CELLS else cells[cells["status"] == status]
    frame = _codes(shown, dimensions)
    figure = figure_format(cells[measure])
    frame["original"] = shown[measure].map(figure)
    frame["published"] = [f'<span class="{status if s == status else "figure"}">{figure(p)}</span>'
                          for p, s in zip(shown["published"], shown["status"])]  # one alignment, right
    frame["difference"] = [f'<span class="figure">{figure(d, derived=True) if d else "&ndash;"}</span>'
                           for d in shown["published"] - shown[measure]]
    if status == "perturbed":
        frame["cell key"] = [f'<span class="figure">{k:.6f}</span>' for k in shown["cell_key"]]
    frame["unsafe under the rules"] = ["yes" if p else "&ndash;" for p in shown["primary"]]
    if duplicate.any():
        frame["duplicate of"] = shown["duplicate_of"].map(lambda v: html.escape(v) if v else "&ndash;")
    frame.index = [Markup(str(i)) for i in range(len(frame))]
    listed = "every cell" if len(shown) == len(cells) else f"the {len(shown)} changed cells"
    return (f'<section id="table-{html.escape(name)}"><h2>Table {html.escape(name)}</h2>'
            f"<p>{_cell_count(len(cells), int(duplicate.sum()))} over {html.escape(' × '.join(dimensions))}, "
            f'{_PERTURBED_WORDS[status]}: <span class="{status}">{changed} changed</span>, '
            f"{unsafe} unsafe under the rules. Below: {listed}, original beside published.</p>"
            + _checks_table(name, checks)
            + html_table(frame, caption=f"Cells of {name}: original and published", index_label="#", raw=True)
            + "</section>")


def _checks_table(name: str, checks: dict[str, dict]) -> str:
    rows = []
    for check, outcome in checks.items():
        figure = (outcome.get("figures") or {}).get(name, outcome.get("value"))
        state = '<span class="pass">passed</span>' if not figure else '<span class="fail">failed</span>'
        rows.append({"check": html.escape(check), "outcome": state, "cells": format_cell(figure or 0),
                     "rule": html.escape(outcome["rule"])})
    return html_table(pd.DataFrame(rows).set_index("check"), caption="Release checks", raw=True) if rows else ""


def table_section(name: str, cells: pd.DataFrame, dimensions: list[str], checks: dict[str, dict]) -> str:
    """One table's section: its checks (``checks``: check -> recorded outcome with ``passed``,
    ``rule``, ``figures``), counts of primary and secondary cells, and its cells (:func:`render_table_report`)."""
    measure = "value" if "value" in cells else "freq"
    duplicate = cells["duplicate_of"] != ""
    status = cells.loc[~duplicate, "status"]
    primary, secondary = int((status == "primary").sum()), int((status == "secondary").sum())
    shown = cells if len(cells) <= FULL_TABLE_CELLS else cells[cells["suppressed"]]
    frame = _codes(shown, dimensions)
    figure = figure_format(cells[measure])
    frame[measure] = shown[measure].map(figure)
    frame["status"] = [f'<span class="{s}">{s}</span>' if s != "safe" else "safe" for s in shown["status"]]
    if duplicate.any():
        frame["duplicate of"] = shown["duplicate_of"].map(lambda v: html.escape(v) if v else "&ndash;")
    frame["audit interval"] = [_interval(lo, up, figure) for lo, up in zip(shown["lo"], shown["up"])]
    frame["protection (lower, upper)"] = [
        f"{figure(a, derived=True)}, {figure(b, derived=True)}" if p else "&ndash;"
        for p, a, b in zip(shown["primary"], shown["lower"], shown["upper"])]
    frame.index = [Markup(str(i)) for i in range(len(frame))]
    listed = "every cell" if len(shown) == len(cells) else f"the {len(shown)} suppressed cells"
    return (f'<section id="table-{html.escape(name)}"><h2>Table {html.escape(name)}</h2>'
            f"<p>{_cell_count(len(cells), int(duplicate.sum()))} over {html.escape(' × '.join(dimensions))}; "
            f'<span class="primary">{primary} primary</span> and <span class="secondary">{secondary} secondary</span> '
            f"suppressions. Below: {listed}, with each suppressed cell's audit interval.</p>"
            + _checks_table(name, checks)
            + html_table(frame, caption=f"Cells of {name}", index_label="#", raw=True)
            + "</section>")


def render_table_report(title: str, audited: dict[str, pd.DataFrame], dimensions: dict[str, list[str]],
                        checks: dict[str, dict], provenance: dict[str, str]) -> str:
    """The HTML page of a table set: ``title``, the run's ``provenance`` (label -> text: the spec,
    input and their SHA-256, the release folder, the audit command), then one section per table
    (``audited``: name -> audited cells, :func:`sdc_dagster.pipeline.tables.audit_tables`;
    ``dimensions``: name -> its dimension columns; ``checks``: the set's checks as recorded)."""
    header = pd.DataFrame({"": [html.escape(str(v)) for v in provenance.values()]},
                          index=[Markup(html.escape(k)) for k in provenance])
    sections = "".join((perturbed_section if "published" in cells else table_section)(n, cells, dimensions[n], checks)
                       for n, cells in audited.items())
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{REPORT_CSS}{_STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>" + html_table(header, caption="Run", raw=True) + sections
            + "</body></html>")
