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
