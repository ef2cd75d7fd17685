"""The report ready for sign-off (issue 34): the header (the run's date and time in UTC and local
time, data file and SHA-256, spec SHA-256, software versions, run id), the sign-off block, the table
of contents, and every method cited by its published source with a full entry in the references,
never an internal document."""

import html
import json
import re
import unicodedata
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sdc_dagster.report import render_report, report_data, write_pdf, write_report
from sdc_dagster.report.formats import chromium_executable
from sdc_dagster.report.inputs import ReportInputs, RunInfo, SignOff
from sdc_dagster.report.references import REFERENCES, SECTION_SOURCES, citation_text, sources
from sdc_dagster.report.measures import _MEASURES

RUN = RunInfo(run_id="6f1c2a4e-0b7d-4c55-9a1e-2f0d3c4b5a69",
              started=datetime(2026, 3, 1, 14, 5, 9, tzinfo=timezone(timedelta(hours=1))),
              partition="2024Q1", data_file="2024Q1.csv", data_sha256="d" * 64, spec_sha256="e" * 64,
              packages={"sdc-dagster": "0.1.0", "pandas": "2.3.3"})

#: Internal documents a reader does not have: the formula notes ("SPEC §3.3"), the seed documents
#: ("the seeds' own measures", "seed 001", "S001"); a plan's random seed is no document.
INTERNAL = re.compile(r"SPEC|\bS00\d\b|(?i:\bseeds\b|seed 00\d|seed document)")


@pytest.fixture
def signed_inputs(full_report_inputs) -> ReportInputs:
    return ReportInputs(**{**full_report_inputs.__dict__, "run": RUN})


def _text(page: str) -> str:
    """The visible text of a page: tags and images dropped, entities decoded."""
    page = re.sub(r'src="data:[^"]*"', "", page)
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", page, flags=re.S)))


def test_header_shows_the_run_the_data_the_spec_and_the_software(signed_inputs):
    page = render_report(signed_inputs)
    header = page[page.index("<table class=\"header\">"):page.index("</table>", page.index("<table class=\"header\">"))]
    # 14:05:09 at UTC+01:00 is 13:05:09 UTC
    assert "2026-03-01 13:05:09 UTC (local time 2026-03-01 14:05:09 +01:00)" in header
    for text in ("2024Q1.csv", "d" * 64, "e" * 64, RUN.run_id, "sdc-dagster 0.1.0; pandas 2.3.3", "2024Q1 (2024Q1)"):
        assert text in header, text
    assert page.index("<table class=\"header\">") < page.index('id="decision"')
    # the header comes from the run: rendered again later, the same run gives the same page
    assert render_report(signed_inputs) == page
    data = report_data(signed_inputs)["header"]
    assert data == {"survey": "Household budget <survey>", "wave": "2024Q1", "partition": "2024Q1",
                    "run_id": RUN.run_id, "data_file": "2024Q1.csv", "landed_file": "2024Q1.csv",
                    "data_sha256": "d" * 64, "spec_sha256": "e" * 64,
                    "software": {"sdc-dagster": "0.1.0", "pandas": "2.3.3"},
                    "run_started": {"utc": "2026-03-01 13:05:09 UTC", "local": "2026-03-01 14:05:09 +01:00",
                                    "iso": "2026-03-01T14:05:09+01:00"}}


def test_header_names_the_file_the_user_gave_and_the_landed_copy_beside_it(full_report_inputs):
    # issue 34: ``sdc run casc 2024 --file casc1.sav`` read the copy landed as 2024.sav, and the header
    # said "Data file 2024.sav": a file the methodologist never had
    from sdc_dagster.pipeline.report_inputs import run_info
    from sdc_dagster.spec import load_spec

    spec = load_spec(Path(__file__).resolve().parents[2] / "examples" / "testdata.yaml")
    run = run_info(spec, "r1", 1772370309.0, "2024", "/home/landing/casc/2024.sav", "f" * 64,
                   given_file="/data/casc1.sav")
    assert (run.data_file, run.landed_file, run.data_sha256) == ("casc1.sav", "2024.sav", "f" * 64)
    inputs = ReportInputs(**{**full_report_inputs.__dict__, "run": run})
    page = render_report(inputs)
    header = page[page.index('<table class="header">'):page.index("</table>", page.index('<table class="header">'))]
    assert "<td class=\"text\">casc1.sav (landed as 2024.sav)</td>" in header
    fields = report_data(inputs)["header"]
    assert (fields["data_file"], fields["landed_file"]) == ("casc1.sav", "2024.sav")
    # a wave read where it lies (the landing sensor, source.path): one name, nothing beside it
    alone = run_info(spec, "r1", 1772370309.0, "2024", "/home/landing/casc/2024.sav", "f" * 64)
    assert (alone.data_file, alone.landed_file) == ("2024.sav", "")


def test_a_report_outside_a_run_says_it_has_no_run_to_show(full_report_inputs):
    assert "Rendered outside a pipeline run" in render_report(full_report_inputs)
    assert report_data(full_report_inputs)["header"]["run"] is None
    with pytest.raises(ValueError, match="timezone-aware"):
        RunInfo(run_id="r", started=datetime(2026, 3, 1), partition="w", data_file="f", data_sha256="", spec_sha256="")


def test_sign_off_block_has_blank_lines_or_the_spec_names(signed_inputs):
    page = render_report(signed_inputs)
    block = page[page.index('id="sign-off"'):page.index('id="references"')]
    for label in ("Prepared by", "Reviewed by", "Decision", "release with conditions", "withhold", "Date", "Signature"):
        assert label in block, label
    assert block.count('<span class="line"></span>') == 6  # every line blank: signed by hand
    named = ReportInputs(**{**signed_inputs.__dict__, "sign_off": SignOff(prepared_by="A. Nowak", reviewed_by="B. Kowal")})
    block = render_report(named)
    assert '<span class="line">A. Nowak</span>' in block and '<span class="line">B. Kowal</span>' in block
    assert report_data(named)["sign_off"] == {"prepared_by": "A. Nowak", "reviewed_by": "B. Kowal", "decision": "",
                                              "date": "", "decisions": ["release", "withhold", "release with conditions"],
                                              "draft_decisions": []}


def test_sign_off_block_lists_the_draft_decisions_to_confirm(signed_inputs):
    # issues 34, 38: what `sdc init` decided (a key beyond the key cap, l not drafted) is for the
    # methodologist to confirm, listed where the release is signed
    decision = "race: candidate key beyond the cap of 5 for 534 records at k = 3 <and more>"
    named = ReportInputs(**{**signed_inputs.__dict__, "sign_off": SignOff(draft_decisions=(decision,))})
    page = render_report(named)
    block = page[page.index('id="sign-off"'):page.index('id="references"')]
    assert "Draft decisions to confirm" in block
    assert f"<li>{html.escape(decision)}</li>" in block
    assert report_data(named)["sign_off"]["draft_decisions"] == [decision]
    assert "Draft decisions to confirm" not in render_report(signed_inputs)


def test_contents_at_the_top_link_to_every_section(signed_inputs):
    page = render_report(signed_inputs)
    nav = page[page.index("<nav"):page.index("</nav>")]
    body = page[page.index("</nav>"):]
    assert page.index("<nav") < page.index('id="decision"')
    sections = re.findall(r'<h[23] id="([^"]+)">', body)
    links = re.findall(r'<a href="#([^"]+)">', nav)
    assert links == sections and len(sections) > 10
    assert {"decision", "map", "variables", "measures", "provenance", "sign-off", "references"} <= set(links)
    assert len(set(sections)) == len(sections)  # every section reachable by its own anchor


def test_no_internal_document_is_cited_and_every_citation_has_its_full_entry(signed_inputs):
    page = render_report(signed_inputs)
    text = _text(page)
    json_text = json.dumps(report_data(signed_inputs), ensure_ascii=False)
    for where, content in (("HTML", text), ("JSON", json_text)):
        found = INTERNAL.findall(content)
        assert not found, (where, found)
    references = page[page.index('id="references"'):]
    listed = re.findall(r'<span class="short">([^<]+)</span>', references)
    assert listed and all(html.unescape(key) in REFERENCES for key in listed)
    # every citation in the text, "(Hundepool et al. 2012, §3.3; Templ, Kowarik & Meindl 2015)", is listed
    before = _text(page[:page.index('id="references"')])
    cited = {re.sub(r"\s*,\s*(§|ch\.|dUtility).*$", "", part).strip()
             for group in re.findall(r"\(([^()]*\b(?:19|20)\d\d\b(?!-)[^()]*)\)", before)
             for part in group.split(";") if re.search(r"\b(?:19|20)\d\d\b", part)}
    assert cited and cited <= {html.unescape(key) for key in listed}, cited - set(listed)
    assert {"Hundepool et al. 2012", "Templ, Kowarik & Meindl 2015", "Franconi & Polettini 2004", "Młodak 2020",
            "Młodak 2025", "Gouweleeuw et al. 1998"} <= cited
    assert set(json.loads(json_text)["references"]) <= set(REFERENCES)


def test_every_measure_and_section_has_published_sources():
    """Each measure the report describes names its sources, and each source has its full entry."""
    for name, measure in _MEASURES.items():
        assert sources(measure.spec), name
        assert "SPEC" not in citation_text(measure.spec)
    assert all(key in REFERENCES for entry in SECTION_SOURCES.values() for key, _ in entry)
    # the combined measure and the contributions are Młodak's; the distance lambda is his loss measure
    assert citation_text("§5.5") == "Młodak 2025"
    assert citation_text("§9.1 eq (1), (6)") == "Młodak 2020"
    assert citation_text("§9.4 (sdcMicro)").endswith("sdcMicro reference manual, dUtility")


@pytest.mark.slow
@pytest.mark.skipif(chromium_executable() is None, reason="no Chromium-family browser on PATH")
def test_the_pdf_has_the_sign_off_block_contents_and_references(signed_inputs, tmp_path):
    from pypdf import PdfReader

    paths = write_report(signed_inputs, tmp_path / "survey")
    reader = PdfReader(write_pdf(paths["html"], tmp_path / "report.pdf"))
    # NFKC: Chromium's PDF sets "ff" as its ligature (U+FB00), which the text extraction keeps
    text = unicodedata.normalize("NFKC", "\n".join(page.extract_text() for page in reader.pages))
    for heading in ("Contents", "Sign-off", "Prepared by", "Reviewed by", "Decision", "Date", "Signature",
                    "References", "Hundepool, A., Domingo-Ferrer, J.", "13:05:09 UTC"):
        assert heading in text, heading
    assert "SPEC" not in text
