"""The table chain as Dagster assets (assets/tables): materialised in-process, its checks reported, the
release written and replayed byte for byte by `sdc audit tables`; a changed file fails the audit."""

import io
import shutil
from pathlib import Path

import pandas as pd
import pytest
from dagster import AssetKey, materialize

from sdc_dagster.assets.tables import build_table_assets
from sdc_dagster.cli.tables import run_table_audit
from sdc_dagster.definitions import build_definitions
from sdc_dagster.releases.manifest import read_manifest
from sdc_dagster.releases.tables import list_table_releases
from sdc_dagster.resources import configured_resources
from sdc_dagster.spec import load_spec
from sdc_dagster.spec.tables import load_table_spec

from .conftest import EXAMPLES

CHAIN = ["table_input", "tabulated", "primary", "protected_tables", "table_audit", "table_release"]


@pytest.fixture
def business(tmp_path):
    """The demo business table spec and its file, copied so that the test may change them."""
    folder = tmp_path / "tables"
    (folder / "data").mkdir(parents=True)
    shutil.copy(EXAMPLES / "tables" / "business_tables.yaml", folder)
    shutil.copy(EXAMPLES / "tables" / "data" / "business.csv", folder / "data")
    return load_table_spec(folder / "business_tables.yaml")


def test_the_business_chain_materialises_checks_releases_and_replays(sdc_home, business, instance):
    chain = build_table_assets(business)
    assert [key.path for a in chain.assets for key in a.keys] == [["business_tables", name] for name in CHAIN]
    result = materialize(chain.assets, instance=instance, resources=configured_resources())
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"primaries_suppressed": True, "cells_valid": True, "audit_passed": True}
    folder, = list_table_releases(sdc_home / "releases", "business_tables", "file")
    manifest = read_manifest(folder)
    assert manifest["published"]["turnover"]["cells"] == 42 and manifest["method"] == "optimal"
    assert manifest["inputs"]["data"]["file"].startswith(str(sdc_home / "inputs"))
    # the release holds the publishable table only; tau-Argus's files (a .tab line is an inner cell's
    # value and its largest contributions, suppressed or not) go beside the report, recorded by digest
    assert set(manifest["files"]) == {"turnover.csv"}
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "manifest.json", "spec.yaml", "turnover.csv"]
    exchange = Path(manifest["exchange"]["folder"])
    assert exchange == sdc_home / "reports" / "tables" / "business_tables" / "file" / folder.name
    assert set(manifest["exchange"]["files"]) == {"tau_argus/turnover.tab", "tau_argus/turnover.rda",
                                                  "tau_argus/turnover.hst", "tau_argus/turnover_sector4.hrc",
                                                  "tau_argus/turnover_geo.hrc"}
    assert all((exchange / name).is_file() for name in manifest["exchange"]["files"])
    released = pd.read_csv(folder / "turnover.csv")
    # the office's layout: each cell's tau-Argus status letter (Z: the 6 empty cells of nonEU in
    # Agriculture, public and Governmental), blank where suppressed
    assert released["status"].value_counts().to_dict() == {"S": 10, "Z": 6, "U": 19, "M": 7}
    assert released.loc[released["status"].isin(["U", "M"]), "value"].isna().all()
    assert released.loc[released["status"] == "Z", "value"].eq(0).all()
    assert (sdc_home / "reports" / "tables" / "business_tables" / "file.html").is_file()
    out = io.StringIO()
    assert run_table_audit("business_tables", out=out) == 0
    assert "turnover.csv: ok" in out.getvalue() and "audit OK" in out.getvalue()
    assert f"{exchange / 'tau_argus' / 'turnover.tab'}: ok" in out.getvalue()
    # an edited tau-Argus file is found by its digest too
    tab = exchange / "tau_argus" / "turnover.tab"
    original = tab.read_bytes()
    tab.write_bytes(original.replace(b",S\r\n", b",U\r\n", 1))
    out = io.StringIO()
    assert run_table_audit("business_tables", out=out) == 1
    assert f"the tau-Argus file {tab} differs from the hash in its manifest" in out.getvalue()
    tab.write_bytes(original)
    # an edited table is found by its digest
    (folder / "turnover.csv").write_text((folder / "turnover.csv").read_text().replace(",M\n", ",S\n", 1))
    out = io.StringIO()
    assert run_table_audit("business_tables", out=out) == 1
    assert "turnover.csv: differs from the hash in its manifest" in out.getvalue()
    # a changed input snapshot is found before any replay
    snapshot = Path(manifest["inputs"]["data"]["file"])
    snapshot.write_text(snapshot.read_text().replace("75.9", "75.8"))
    out = io.StringIO()
    assert run_table_audit("business_tables", out=out) == 1
    assert "audit FAILED: the recorded input(s) data is missing or changed" in out.getvalue()


def test_a_pattern_that_fails_its_check_is_never_released(sdc_home, business, instance, monkeypatch):
    import sdc_dagster.assets.tables as table_assets
    from sdc_dagster.pipeline import tables as stages

    def unprotected(spec, tabulated, primary):  # a protection stage that suppresses nothing
        cells = stages.protect_tables(spec, tabulated, primary)
        for frame in cells.values():
            frame["suppressed"] = False
            frame["status"] = "safe"
        return cells

    monkeypatch.setattr(table_assets, "protect_tables", unprotected)
    chain = build_table_assets(business)
    result = materialize(chain.assets, instance=instance, resources=configured_resources(), raise_on_error=False)
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"primaries_suppressed": False, "cells_valid": True, "audit_passed": False}
    folder, = list_table_releases(sdc_home / "releases", "business_tables", "file", withheld=True)
    assert not list_table_releases(sdc_home / "releases", "business_tables", "file")
    assert sorted(p.name for p in folder.iterdir()) == ["spec.yaml", "withheld.json"]
    assert set(read_manifest(folder)["withheld"]) == {"primaries_suppressed", "audit_passed"}


@pytest.mark.slow
def test_the_survey_chain_reads_the_wave_partition(sdc_home, testdata_only_specs, instance):
    survey = load_spec(testdata_only_specs / "testdata.yaml")
    tables = load_table_spec(EXAMPLES / "tables" / "testdata_tables.yaml")
    defs = build_definitions(specs=[survey], grid=False, tables=[tables])
    landing = sdc_home / "landing" / "testdata"
    landing.mkdir(parents=True)
    shutil.copy(testdata_only_specs / "data" / "testdata.csv", landing / "2024.csv")
    instance.add_dynamic_partitions("testdata_waves", ["2024"])
    job = defs.resolve_job_def("testdata_tables_tables_job")
    result = job.execute_in_process(instance=instance, partition_key="2024")
    assert result.success
    assert AssetKey(["testdata", "raw_microdata"]) in {m.asset_key for m in result.asset_materializations_for_node(
        "testdata__raw_microdata")}
    folder, = list_table_releases(sdc_home / "releases", "testdata_tables", "2024")
    manifest = read_manifest(folder)
    assert set(manifest["files"]) == {"water_by_area.csv", "relat_by_area.csv", "water_by_area.xlsx",
                                      "relat_by_area.xlsx"}
    assert manifest["published"]["water_by_area"]["linked_with"] == ["water_by_area", "relat_by_area"]
    assert manifest["inputs"]["survey_spec"]["file"] == str(testdata_only_specs / "testdata.yaml")
    out = io.StringIO()
    assert run_table_audit("testdata_tables", out=out) == 0, out.getvalue()


def test_the_code_location_shows_the_demo_table_chains(sdc_home, monkeypatch):
    """The UI's definitions (every spec folder) hold each demo table set's assets, checks and job."""
    monkeypatch.delenv("SDC_SPECS", raising=False)
    monkeypatch.delenv("SDC_TABLES", raising=False)
    defs = build_definitions(grid=False)
    keys = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    for name in ("testdata_tables", "business_tables"):
        assert {f"{name}/{asset}" for asset in CHAIN[1:]} <= keys
        assert defs.resolve_job_def(f"{name}_tables_job") is not None
    assert "business_tables/table_input" in keys and "testdata_tables/table_input" not in keys
    checks = {key.name for key in defs.resolve_asset_graph().asset_check_keys}
    assert {"primaries_suppressed", "cells_valid", "audit_passed"} <= checks


def test_a_tau_argus_source_is_released_with_its_files_recorded(sdc_home, tmp_path, instance):
    import sdc_dagster.tables as tables

    data = pd.read_csv(EXAMPLES / "tables" / "data" / "business.csv")
    counts = tables.tabulate(data, {"sector4": tables.hierarchy_from_columns(data, ["sector2", "sector4"]),
                                    "geo": None})
    folder = tmp_path / "argus"
    tables.write_tau_argus(counts, folder, "counts")
    (folder / "counts.yaml").write_text("""
tables: argus_counts
source: {tau_argus: counts.rda}
dimensions: {sector4: {}, geo: {}}
published:
  counts: {dimensions: [sector4, geo], freq: freq, rules: [{rule: freq, n: 2}]}
protection: {method: optimal, cost: count}
""")
    chain = build_table_assets(load_table_spec(folder / "counts.yaml"))
    assert materialize(chain.assets, instance=instance, resources=configured_resources()).success
    release, = list_table_releases(sdc_home / "releases", "argus_counts", "file")
    inputs = read_manifest(release)["inputs"]
    assert set(inputs) == {"data", "tau_argus:rda", "tau_argus:tab", "tau_argus:sector4"}
    # each file is copied into the inputs folder under its name, the one read recorded as the source
    hrc = folder / "counts_sector4.hrc"
    assert inputs["tau_argus:sector4"]["source"] == str(hrc)
    copy = Path(inputs["tau_argus:sector4"]["file"])
    assert copy.parent == Path(inputs["tau_argus:rda"]["file"]).parent and copy.name == hrc.name
    assert copy.is_relative_to(sdc_home / "inputs") and copy.read_bytes() == hrc.read_bytes()
    out = io.StringIO()
    assert run_table_audit("argus_counts", out=out) == 0, out.getvalue()
    # the .hrc edited for the next release: the last one is replayed from its copy
    hrc.write_bytes(hrc.read_bytes() + b"@Fishing\r\n")
    out = io.StringIO()
    assert run_table_audit("argus_counts", out=out) == 0, out.getvalue()
    # the copy damaged: the audit says which input changed
    copy.write_bytes(copy.read_bytes() + b"@Fishing\r\n")
    out = io.StringIO()
    assert run_table_audit("argus_counts", out=out) == 1
    assert "the recorded input(s) tau_argus:sector4 is missing or changed" in out.getvalue()


def test_the_cell_key_chain_reads_the_input_to_draw_its_keys_and_checks_the_p_table(sdc_home, tmp_path, instance):
    folder = tmp_path / "tables"
    (folder / "data").mkdir(parents=True)
    shutil.copy(EXAMPLES / "tables" / "business_cellkey.yaml", folder)
    shutil.copy(EXAMPLES / "tables" / "data" / "business.csv", folder / "data")
    chain = build_table_assets(load_table_spec(folder / "business_cellkey.yaml"))
    protected = next(a for a in chain.assets if AssetKey(["business_cellkey", "protected_tables"]) in a.keys)
    # the record keys are drawn per record: protected_tables reads the input beside the tabulated tables
    assert AssetKey(["business_cellkey", "table_input"]) in protected.dependency_keys
    result = materialize(chain.assets, instance=instance, resources=configured_resources())
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"cells_valid": True, "perturbed_as_ptable": True}
    release, = list_table_releases(sdc_home / "releases", "business_cellkey", "file")
    assert read_manifest(release)["cell_key"]["seed"] == 2026
    assert set(read_manifest(release)["files"]) == {"turnover.csv", "turnover.xlsx"}
    out = io.StringIO()
    assert run_table_audit("business_cellkey", out=out) == 0 and "audit OK" in out.getvalue()


def test_two_table_specs_of_one_set_name_do_not_stop_the_code_location(sdc_home, tmp_path, monkeypatch, caplog):
    """Found with sdc ui: a copy of a table spec left beside it in $SDC_TABLES (same `tables:` name)
    stopped the whole code location (Dagster: duplicate asset key business_tables/table_input), so the
    UI showed no survey and no table. The first file's chain loads; the copy is skipped, named."""
    import logging

    folder = tmp_path / "tables"
    (folder / "data").mkdir(parents=True)
    shutil.copy(EXAMPLES / "tables" / "data" / "business.csv", folder / "data")
    text = (EXAMPLES / "tables" / "business_tables.yaml").read_text()
    (folder / "a_business.yaml").write_text(text)
    (folder / "b_business_copy.yaml").write_text(text.replace("title: turnover by sector and country",
                                                              "title: a draft"))
    monkeypatch.setenv("SDC_TABLES", str(folder))
    monkeypatch.delenv("SDC_SPECS", raising=False)
    with caplog.at_level(logging.WARNING, logger="sdc_dagster.definitions"):
        defs = build_definitions(grid=False)
    keys = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {f"business_tables/{asset}" for asset in CHAIN} <= keys and "testdata/raw_microdata" in keys
    assert (f"skipped the table spec {folder / 'b_business_copy.yaml'}: its set name 'business_tables' is "
            f"already that of {folder / 'a_business.yaml'}") in caplog.text


def test_a_release_replays_with_the_hierarchy_file_it_was_made_with(sdc_home, business, instance):
    """Found with EIA's utilities by census region (regions.hrc): the methodologist edits the .hrc
    for the next release and `sdc audit tables` of the last one failed ("hierarchy:geo is missing
    or changed"), as the manifest named the .hrc itself. Its content-addressed copy in the inputs
    folder is what the manifest records now, with the file it was read from, and what the replay
    reads."""
    folder = business.spec_path.parent
    (folder / "geo.hrc").write_text("EU\n@Portugal\n@Spain\nnonEU\n@Iceland\n")
    text = business.spec_path.read_text().replace("geo: {hierarchy: {columns: [eu]}}",
                                                  "geo: {hierarchy: {file: geo.hrc}}")
    assert "file: geo.hrc" in text
    business.spec_path.write_text(text)
    chain = build_table_assets(load_table_spec(business.spec_path))
    assert materialize(chain.assets, instance=instance, resources=configured_resources()).success
    release, = list_table_releases(sdc_home / "releases", "business_tables", "file")
    recorded = read_manifest(release)["inputs"]["hierarchy:geo"]
    assert recorded["source"] == str(folder / "geo.hrc")
    assert Path(recorded["file"]).parent == sdc_home / "inputs"
    assert Path(recorded["file"]).read_bytes() == (folder / "geo.hrc").read_bytes()
    (folder / "geo.hrc").write_text("EU\n@Portugal\n@Spain\n@Iceland\n")  # edited for the next release
    out = io.StringIO()
    assert run_table_audit("business_tables", out=out) == 0, out.getvalue()
    assert "audit OK" in out.getvalue()
    # moved away, with the business file: the spec copy named them, and its replay stopped with a
    # traceback (SpecError: an existing .hrc file ... is not one); the recorded copies suffice
    (folder / "geo.hrc").unlink()
    (folder / "data" / "business.csv").unlink()
    out = io.StringIO()
    assert run_table_audit("business_tables", out=out) == 0, out.getvalue()
