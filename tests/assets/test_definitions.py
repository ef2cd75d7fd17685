"""The code location the UI loads: every survey spec in examples/ and the grid chain, loadable."""

from dagster import Definitions

from sdc_dagster.definitions import build_definitions


def test_code_location_loads_with_every_chain():
    defs = build_definitions()
    Definitions.validate_loadable(defs)
    keys = defs.resolve_asset_graph().get_all_asset_keys()
    groups = {}
    for key in keys:
        groups.setdefault(key.path[0] if len(key.path) > 1 else "grid", set()).add(key.path[-1])
    assert {"raw_microdata", "risk_scores", "protected_suppress_k3", "sdc_report"} <= groups["testdata"]
    assert {"raw_microdata", "risk_contributions", "protected_suppress_k3"} <= groups["simulation"]
    assert {"census_microdata", "grid_counts", "grid_suppressed", "grid_cell_key", "census_swapped"} <= groups["grid"]
    assert {j.name for j in defs.jobs} >= {"testdata_wave_job", "simulation_wave_job"}


def test_a_survey_named_census_loads_beside_the_grid_chain(tmp_path):
    """A survey's dagster type is "<survey>_microdata"; a survey named census once clashed with the
    grid's census microdata type and the UI loaded no definitions at all (issue 21, new-user trial)."""
    from sdc_dagster.resources.storage import bundled_examples

    text = (bundled_examples() / "testdata.yaml").read_text().replace("survey: testdata", "survey: census", 1)
    (tmp_path / "census.yaml").write_text(text)
    defs = build_definitions(tmp_path)
    Definitions.validate_loadable(defs)
    assert "census_wave_job" in {j.name for j in defs.jobs}


def test_a_survey_job_without_the_grid_chain_is_the_job_of_the_code_location():
    """``sdc run`` builds one survey's chain only (``grid=False``); its runs must be runs of the job the
    UI shows: the same job snapshot as in the code location that Dagster loads (``defs``)."""
    from sdc_dagster.definitions import defs, survey_specs

    testdata = [spec for spec in survey_specs() if spec.survey == "testdata"]
    alone = build_definitions(specs=testdata, grid=False)
    assert not any(job.name.startswith(("census", "grid")) for job in alone.jobs)
    located = defs()
    assert "census_region_job" in {job.name for job in located.jobs}
    assert (alone.resolve_job_def("testdata_wave_job").get_job_snapshot_id()
            == located.resolve_job_def("testdata_wave_job").get_job_snapshot_id())


def test_the_ui_cites_published_sources_not_internal_documents():
    """Every asset and check description the UI shows (issue 34): methods cited by their published
    sources ("Franconi & Polettini 2004; Hundepool et al. 2012, §3.3"), never the project's formula
    notes ("SPEC §3.3") or the seed documents ("S001")."""
    import re

    graph = build_definitions().resolve_asset_graph()
    texts = {key.to_user_string(): graph.get(key).description or "" for key in graph.get_all_asset_keys()}
    texts.update({f"{key.asset_key.to_user_string()}:{key.name}": graph.get_check_spec(key).description or ""
                  for key in graph.asset_check_keys})
    internal = {name: text for name, text in texts.items()
                if re.search(r"SPEC|\bS00\d\b|(?i:\bseeds\b(?!,)|seed 00\d)", text)}
    assert not internal, internal
    assert "Hundepool et al. 2012, §3.3" in texts["testdata/risk_scores"]
    assert any("Sweeney 2002" in text for name, text in texts.items() if name.endswith("__k_anonymity"))
