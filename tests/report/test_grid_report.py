"""The census grid report (map with layers, S002 loss tables per route, differencing) in headless Chromium."""

import re

import pandas as pd
import pytest

from sdc_dagster.synthetic.census import generate_census
from sdc_dagster.grid.counts import tabulate_grid
from sdc_dagster.protect import assign_record_keys, consistent_grid_suppression, grid_cell_key, perturbation_table
from sdc_dagster.report.grid import grid_map_svg, render_grid_report


@pytest.fixture(scope="module")
def grid_release():
    persons = generate_census(6_000, random_state=11, region_km=10)
    counts = tabulate_grid(persons, where="resident")
    national = tabulate_grid(persons, where="national")
    suppressed, _ = consistent_grid_suppression(counts, national, random_state=1)
    persons = persons.assign(record_key=assign_record_keys(persons, n_key=255, first=0, id_column="person_id",
                                                           random_state=5))
    perturbed = grid_cell_key(persons, ptable=perturbation_table(2, 1.05, threshold=1), where="resident")
    swapped = pd.Series([2, 1], index=counts["cell_id"].iloc[[0, 3]])
    return counts, national, suppressed, perturbed, swapped


def test_map_places_cells_at_their_epsg3035_position():
    counts = pd.DataFrame({"cell_id": ["1kmN3000E4600", "CRS3035RES1000mN3002000E4603000"], "total": [5, 500]})
    svg = grid_map_svg(counts, swapped_cells=["1kmN3000E4600"])
    # north edge is 3003 km: y = 3003 - north - 1; x = easting in km
    assert '<rect x="4600" y="2" width="1" height="1" fill="#fdd0a2">' in svg
    assert '<rect x="4603" y="0" width="1" height="1" fill="#d94801">' in svg
    assert 'id="layer-swapped" data-count="1"' in svg and 'id="layer-suppressed" data-count="0"' in svg


def test_report_content_is_self_contained(grid_release):
    counts, national, suppressed, perturbed, swapped = grid_release
    page = render_grid_report(counts, suppressed=suppressed, perturbed=perturbed, national=national,
                              swapped_households=swapped, title="Grid <2021>",
                              parameters={"swaprate": 0.05, "ptable": "D=2, V=1.05, js=1"})
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"(src|href)=\"", page)
    assert "Grid &lt;2021&gt;" in page and "<2021>" not in page
    for text in ("Cells by number of residents", "Suppression route", "Cell key route", "differencing", "BIRTH3", "RESIDENCE2",
                 "mean_absolute_deviation", "relative_loss_pct", "employed"):
        assert text in page, text
    n_hidden = int(suppressed.drop(columns=["cell_id"]).isna().any(axis=1).sum())
    assert f'id="layer-suppressed" data-count="{n_hidden}"' in page
    assert page.count("<rect ") == len(counts) + n_hidden + 2 + int(
        (perturbed[[c for c in counts.columns if c != "cell_id"]].to_numpy()
         != perturbed[[f"{c}_original" for c in counts.columns if c != "cell_id"]].to_numpy()).any(axis=1).sum())


@pytest.mark.slow
@pytest.mark.ui
def test_grid_report_renders_in_chromium(grid_release, tmp_path, open_in_chromium):
    counts, national, suppressed, perturbed, swapped = grid_release
    path = tmp_path / "grid.html"
    path.write_text(render_grid_report(counts, suppressed=suppressed, perturbed=perturbed, national=national,
                                       swapped_households=swapped), encoding="utf-8")
    page, errors, requests = open_in_chromium(path)
    assert page.locator("#layer-population rect").count() == len(counts)
    box = page.locator("#grid-map").bounding_box()
    assert box["width"] > 100 and box["height"] > 100
    assert page.locator("#layer-swapped").is_visible()
    page.locator('input[data-layer="swapped"]').uncheck()
    assert page.locator("#layer-swapped").evaluate("g => getComputedStyle(g).display") == "none"
    assert page.locator("table").count() >= 4
    # 800 px wide: nothing scrolls sideways, not even in a window just wider than the page
    page.set_viewport_size({"width": 860, "height": 900})
    assert page.locator("body").bounding_box()["width"] == 800
    assert page.evaluate("document.documentElement.scrollWidth") <= 860
    assert max(t["x"] + t["width"] for t in (b.bounding_box() for b in page.locator("table, svg").all())) <= 830
    assert errors == []
    assert all(url.startswith("file://") for url in requests)
