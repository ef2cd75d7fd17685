"""The parts of the release report that make it one a methodologist can sign: the header (the run,
the data file and its digest, the software and spec digests), the sign-off block and the table of
contents. The header's figures are those of the JSON report too (:func:`header_fields`)."""

from __future__ import annotations

import html
import re
from datetime import timezone

from sdc_dagster.report.inputs import ReportInputs
from sdc_dagster.report.references import slug

#: The decisions a reviewer chooses from in the sign-off block.
DECISIONS = ("release", "withhold", "release with conditions")


def run_time(inputs: ReportInputs) -> dict[str, str]:
    """When the run started, in UTC and in the local time of the machine that ran it (with its offset):
    ``{"utc": "2026-11-27 14:34:23 UTC", "local": "2026-11-27 15:34:23 +01:00", "iso": ...}``; empty
    outside a run."""
    if inputs.run is None:
        return {}
    started = inputs.run.started
    offset = started.strftime("%z")
    return {"utc": started.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "local": started.strftime("%Y-%m-%d %H:%M:%S ") + f"{offset[:3]}:{offset[3:]}",
            "iso": started.isoformat()}


def header_fields(inputs: ReportInputs) -> dict:
    """The header of the report as plain fields (the JSON report's ``header``): survey, wave,
    partition, run id, run date and time (UTC and local), data file (the user's; ``landed_file``: the
    copy the run read) and SHA-256, spec SHA-256 and
    the software versions (sdc-dagster's and the key packages')."""
    fields = {"survey": inputs.survey, "wave": inputs.wave}
    run = inputs.run
    if run is None:
        return {**fields, "run": None}
    return {**fields, "partition": run.partition, "run_id": run.run_id,
            "run_started": run_time(inputs), "data_file": run.data_file,
            "landed_file": run.landed_file or run.data_file, "data_sha256": run.data_sha256,
            "spec_sha256": run.spec_sha256, "software": dict(run.packages)}


def header_html(inputs: ReportInputs) -> str:
    """The header table under the title: the run, the data and the software the report comes from."""
    run = inputs.run
    if run is None:
        return ('<p class="meta header">Rendered outside a pipeline run: no run date, data digest or '
                "software versions to show.</p>")
    when = run_time(inputs)
    software = "; ".join(f"{name} {version}" for name, version in run.packages.items())
    rows = [("Survey", inputs.survey), ("Wave (partition)", f"{inputs.wave} ({run.partition})"),
            ("Run date and time", f"{when['utc']} (local time {when['local']})"), ("Dagster run id", run.run_id),
            ("Data file", run.data_file + (f" (landed as {run.landed_file})" if run.landed_file else "")),
            ("Data file SHA-256", run.data_sha256),
            ("Spec SHA-256", run.spec_sha256), ("Software", software)]
    body = "".join(f'<tr><th scope="row">{html.escape(label)}</th><td class="text{" hash" if "SHA" in label else ""}">'
                   f"{html.escape(str(value))}</td></tr>" for label, value in rows)
    return f'<div class="scroll"><table class="header"><tbody>{body}</tbody></table></div>'


def sign_off_fields(inputs: ReportInputs) -> dict:
    """The sign-off block as plain fields (the JSON report's ``sign_off``): prepared by, reviewed by
    (pre-filled from the spec's ``report:``, else empty), decision and date (empty: signed by hand),
    the decisions to choose from, and the draft's decisions to confirm (the spec's
    ``report.draft_decisions``)."""
    return {"prepared_by": inputs.sign_off.prepared_by, "reviewed_by": inputs.sign_off.reviewed_by,
            "decision": "", "date": "", "decisions": list(DECISIONS),
            "draft_decisions": list(inputs.sign_off.draft_decisions)}


def sign_off_html(inputs: ReportInputs) -> str:
    """The sign-off block: prepared by, reviewed by, decision (release / withhold / release with
    conditions, the conditions written below), date and signatures, each on a line to write on
    (pre-filled with the spec's names where it gives them), after the draft's decisions to confirm
    (the spec's ``report.draft_decisions``: keys ``sdc init`` left out, l not drafted) when there are
    any; kept on one printed page."""
    def line(label: str, value: str = "") -> str:
        return (f'<div class="sign"><span class="label">{html.escape(label)}</span>'
                f'<span class="line">{html.escape(value)}</span></div>')

    boxes = "".join(f'<span class="choice">&#9744; {html.escape(d)}</span>' for d in DECISIONS)
    return ('<section class="sign-off"><h2 id="sign-off">Sign-off</h2>'
            "<p>The release decision of this wave, signed by the methodologist who prepared the protection and "
            "the one who reviewed it.</p>"
            + _draft_decisions_html(inputs.sign_off.draft_decisions)
            + line("Prepared by", inputs.sign_off.prepared_by) + line("Signature")
            + line("Reviewed by", inputs.sign_off.reviewed_by) + line("Signature")
            + f'<div class="sign"><span class="label">Decision</span><span class="choices">{boxes}</span></div>'
            + line("Conditions") + line("Date") + "</section>")


def _draft_decisions_html(decisions: tuple[str, ...]) -> str:
    """The draft's decisions to confirm as a list (nothing when there are none)."""
    if not decisions:
        return ""
    items = "".join(f"<li>{html.escape(d)}</li>" for d in decisions)
    return ("<h3>Draft decisions to confirm</h3><p>The spec was drafted by <code>sdc init</code>, which decided "
            f"these for the methodologist to confirm (the spec's report.draft_decisions):</p><ul>{items}</ul>")


_HEADING = re.compile(r'<h([23])(?: id="([^"]*)")?>(.*?)</h\1>', re.S)


def _slug(text: str) -> str:
    return slug(html.unescape(re.sub(r"<[^>]+>", "", text))) or "section"


def with_contents(body: str) -> tuple[str, str]:
    """``body`` with an id on every section heading (h2) and subsection heading (h3) that has none,
    and the table of contents linking to each: ``(contents HTML, body)``."""
    used = set(re.findall(r'\bid="([^"]+)"', body))
    entries: list[tuple[int, str, str]] = []

    def named(match: re.Match) -> str:
        level, given, text = int(match[1]), match[2], match[3]
        ident = given
        if not ident:
            ident, n = _slug(text), 2
            while ident in used:
                ident, n = f"{_slug(text)}-{n}", n + 1
            used.add(ident)
        entries.append((level, ident, re.sub(r"<[^>]+>", "", text)))
        return f'<h{level} id="{ident}">{text}</h{level}>'

    body = _HEADING.sub(named, body)
    items, open_sub = [], False
    for level, ident, text in entries:
        link = f'<a href="#{html.escape(ident)}">{text}</a>'
        if level == 2:
            items.append(("</ul></li>" if open_sub else "</li>") if items else "")
            items.append(f"<li>{link}")
            open_sub = False
        else:
            items.append(f"<li>{link}</li>" if open_sub else f"<ul><li>{link}</li>")
            open_sub = True
    if items:
        items.append("</ul></li>" if open_sub else "</li>")
    contents = (f'<nav class="contents" aria-label="Contents"><p class="contents-title">Contents</p>'
                f'<ul>{"".join(items)}</ul></nav>')
    return contents, body
