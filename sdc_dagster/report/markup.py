"""HTML building blocks of the release report: its style sheet, tables and charts (a chart is an
inline SVG image with alt text, a caption and the table of its numbers behind it)."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd

from sdc_dagster.report.measures import format_value, is_missing
from sdc_dagster.report.plots import image_uri

REPORT_CSS = """
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
table.header th { width: 12em; }
nav.contents ul { margin: .2em 0; padding-left: 1.4em; }
nav.contents a { overflow-wrap: anywhere; }  /* a long plan name breaks inside its column */
.contents-title { font-weight: 600; margin: .6em 0 .2em; }
nav.contents > ul { columns: 2; }
.sign-off { break-inside: avoid; }
.sign { display: flex; align-items: flex-end; gap: 1em; margin: 1.4em 0 .4em; }
.sign .label { width: 9em; font-weight: 600; }
.sign .line { flex: 1; border-bottom: 1px solid #222; min-height: 1.4em; padding: 0 .3em; }
.sign .choices { display: flex; gap: 2em; }
ul.references li { margin: .3em 0; }
ul.references .short { font-weight: 600; }
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
  figure img { max-height: 65mm; }  /* a chart fits below the text of a page rather than leaving its foot blank */
  details { display: none; }
  nav.contents ul ul { display: none; }
  nav.contents > ul { columns: 3; }
  table.header { font-size: .8em; }
  p { orphans: 3; widows: 3; }
}
"""

_NUMBER = re.compile(r"^[-−–]?\d|^–$")  # a formatted number (or a missing one): right-aligned


def format_cell(value) -> str:
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


class Markup(str):
    """A table label that is already HTML (not escaped again)."""


def html_table(frame: pd.DataFrame, *, caption: str = "", index_label: str | None = None, raw: bool = False) -> str:
    """An HTML table in its own horizontal scroll container; the index becomes the first column.
    ``raw``: cells are already HTML."""
    label = index_label if index_label is not None else (frame.index.name or "")
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in [label, *frame.columns])
    cell = (lambda v: str(v)) if raw else format_cell
    body = "".join(
        "<tr><td>" + (str(index) if isinstance(index, Markup) else html.escape(str(index))) + "</td>" + "".join(
            f'<td class="text">{cell(v)}</td>' if isinstance(v, str) and not _NUMBER.match(v) else f"<td>{cell(v)}</td>"
            for v in row
        ) + "</tr>"
        for index, row in zip(frame.index, frame.itertuples(index=False, name=None))
    )
    caption_html = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f'<div class="scroll"><table>{caption_html}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def html_chart(image: bytes, alt: str, caption: str, data: str) -> str:
    """A chart (:mod:`~sdc_dagster.report.plots`) with alt text, a caption and the table of its
    numbers behind it."""
    return (f'<figure><img alt="{html.escape(alt)}" src="{image_uri(image)}">'
            f"<figcaption>{html.escape(caption)}</figcaption>"
            f"<details><summary>Data behind the chart</summary>{data}</details></figure>")
