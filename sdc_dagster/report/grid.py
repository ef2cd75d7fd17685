"""The census grid report: a self-contained HTML page (SPEC §11; S002 Rys. 3-7).

* a map of the inhabited cells at their ETRS89-LAEA (EPSG:3035) position, decoded from the INSPIRE /
  GEOSTAT cell id (:func:`sdc_dagster.grid.counts.parse_cell_id`), coloured by population, as inline
  SVG with switchable layers: cells with a suppressed count, cells whose perturbed figures differ
  from the original (cell key method), cells that received swapped households;
* per route, the tables of S002 Figures 3-5: resident size distribution (Rys. 3) and the loss per
  variable (Rys. 4-5: suppression; deviations and distances for the cell key method);
* the differencing table of resident versus national-definition counts (SPEC §11.4).

The page loads nothing from outside (no script or style sources, no fonts); its only script toggles
the layers.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError, require_columns
from sdc_dagster.grid.counts import parse_cell_id
from sdc_dagster.loss.tables import grid_information_loss, perturbation_loss
from sdc_dagster.risk.tables import difference_table, resident_size_distribution

#: Population classes of the map (upper bounds, persons per cell) and their colours (light to dark).
POPULATION_BREAKS: tuple[int, ...] = (2, 10, 50, 200, 1000)
POPULATION_COLOURS: tuple[str, ...] = ("#fff5eb", "#fdd0a2", "#fdae6b", "#f16913", "#d94801", "#7f2704")
LAYER_COLOURS = {"suppressed": "#1f78b4", "perturbed": "#33a02c", "swapped": "#e31a1c"}

#: The page is 800 px wide: wide tables (the 13 figures, the difference table) wrap their headers
#: and the map scales down, so that nothing scrolls sideways.
PAGE_WIDTH_PX = 800

_STYLE = f"""
body {{ font-family: sans-serif; width: {PAGE_WIDTH_PX}px; margin: 1.5em auto; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.8em; max-width: 100%; }}
th, td {{ border: 1px solid #bbb; padding: 0.2em 0.4em; text-align: right; overflow-wrap: anywhere; }}
th:first-child, td:first-child {{ text-align: left; }}
caption {{ font-weight: bold; text-align: left; padding-bottom: 0.3em; }}
svg {{ border: 1px solid #999; background: #f7f7f7; max-width: 100%; height: auto; }}
.legend span {{ display: inline-block; width: 1em; height: 1em; vertical-align: middle; margin: 0 0.3em 0 1em; }}
"""

_SCRIPT = """
document.querySelectorAll('input[data-layer]').forEach(function (box) {
  box.addEventListener('change', function () {
    document.getElementById('layer-' + box.dataset.layer).style.display = box.checked ? '' : 'none';
  });
});
"""


def _html_table(frame: pd.DataFrame, caption: str) -> str:
    """A table with a caption; every cell and header escaped."""
    inner = frame.to_html(escape=True, float_format=lambda v: f"{v:.4g}", na_rep="", border=0)
    start = inner.index(">") + 1  # after the opening <table ...> tag
    return f'<table class="grid">\n<caption>{html.escape(caption)}</caption>{inner[start:]}'


def _cells_frame(counts: pd.DataFrame) -> pd.DataFrame:
    require_columns(counts, ["cell_id", "total"], role="grid count column")
    if counts["cell_id"].duplicated().any():
        raise SDCInputError("column 'cell_id': each cell must appear once in the grid counts")
    coords = parse_cell_id(counts["cell_id"].astype(str).reset_index(drop=True))
    return pd.DataFrame(
        {
            "cell_id": counts["cell_id"].astype(str).to_numpy(),
            "total": counts["total"].to_numpy(dtype=np.int64),
            "north": coords["northing_km"].to_numpy(),
            "east": coords["easting_km"].to_numpy(),
            "size": coords["resolution_m"].to_numpy() / 1000.0,
        }
    )


def _rects(cells: pd.DataFrame, fill, top: float, *, stroke: str | None = None) -> str:
    """SVG rects of the cells (y grows southwards: y = top - north - size); vectorised string building."""
    if cells.empty:
        return ""
    x = cells["east"].map("{:g}".format)
    y = (top - cells["north"] - cells["size"]).map("{:g}".format)
    size = cells["size"].map("{:g}".format)
    titles = cells["cell_id"].map(html.escape) + ": " + cells["total"].astype(str) + " residents"
    style = f'fill="none" stroke="{stroke}" stroke-width="0.35"' if stroke else 'fill="' + fill + '"'
    return "\n".join(
        '<rect x="' + x + '" y="' + y + '" width="' + size + '" height="' + size + '" ' + style + "><title>"
        + titles + "</title></rect>"
    )


def grid_map_svg(
    counts: pd.DataFrame,
    *,
    suppressed_cells=(),
    perturbed_cells=(),
    swapped_cells=(),
    width_px: int = 720,
) -> str:
    """Inline SVG map of the cells coloured by population, with the three switchable layers.

    Parameters
    ----------
    counts
        ``cell_id`` (INSPIRE / GEOSTAT ids) and ``total``.
    suppressed_cells, perturbed_cells, swapped_cells
        Cell ids outlined in the layers ``layer-suppressed``, ``layer-perturbed``, ``layer-swapped``.
    width_px
        Display width of the map.
    """
    cells = _cells_frame(counts)
    if cells.empty:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
    west, east = cells["east"].min(), (cells["east"] + cells["size"]).max()
    south, north = cells["north"].min(), (cells["north"] + cells["size"]).max()
    pad = 1.0
    view = f"{west - pad:g} {-pad:g} {east - west + 2 * pad:g} {north - south + 2 * pad:g}"
    height_px = int(width_px * (north - south + 2 * pad) / (east - west + 2 * pad))
    classes = np.searchsorted(np.array(POPULATION_BREAKS), cells["total"].to_numpy(), side="left")
    fills = pd.Series(np.array(POPULATION_COLOURS)[classes], index=cells.index)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="grid-map" viewBox="{view}" '
        f'width="{width_px}" height="{height_px}" role="img" aria-label="grid cells by population">',
        '<g id="layer-population">',
        _rects(cells, fills, north),
        "</g>",
    ]
    for name, members in (("suppressed", suppressed_cells), ("perturbed", perturbed_cells), ("swapped", swapped_cells)):
        chosen = cells[cells["cell_id"].isin(pd.Index([str(m) for m in members]))]
        parts += [f'<g id="layer-{name}" data-count="{len(chosen)}">', _rects(chosen, None, north, stroke=LAYER_COLOURS[name]),
                  "</g>"]
    parts.append("</svg>")
    return "\n".join(parts)


def render_grid_report(
    counts: pd.DataFrame,
    *,
    title: str = "Census grid release",
    suppressed: pd.DataFrame | None = None,
    perturbed: pd.DataFrame | None = None,
    national: pd.DataFrame | None = None,
    swapped_households: pd.Series | None = None,
    parameters: dict | None = None,
) -> str:
    """The grid report as one self-contained HTML page.

    Parameters
    ----------
    counts
        Resident grid counts (all regions), one row per cell: ``cell_id``, ``total`` and the
        category columns (the 13 figures of the 2021 grid, or the 2011 subset).
    suppressed
        The suppression route's resident table (same rows as ``counts``; hidden counts NA).
    perturbed
        The cell key route's table (``grid_cell_key``: perturbed columns and ``<name>_original``),
        rows matched to ``counts`` by ``cell_id``.
    national
        National-definition counts, for the differencing table (SPEC §11.4).
    swapped_households
        Number of swapped households received per cell id (index cell id).
    parameters
        Release parameters shown in a table (swap rate, p-table, seeds...).

    Returns
    -------
    str
        The HTML page.
    """
    sections = [f"<h1>{html.escape(title)}</h1>"]
    if parameters:
        frame = pd.DataFrame({"value": [str(v) for v in parameters.values()]}, index=list(map(str, parameters)))
        sections.append(_html_table(frame, "Release parameters"))
    suppressed_cells = perturbed_cells = swapped_cells = ()
    count_columns = [c for c in counts.columns if c not in ("cell_id", "northing_km", "easting_km")]
    if suppressed is not None:
        require_columns(suppressed, ["cell_id", *count_columns], role="suppressed grid column")
        hidden = suppressed[count_columns].isna().any(axis=1)
        suppressed_cells = suppressed.loc[hidden, "cell_id"].astype(str)
    if perturbed is not None:
        require_columns(perturbed, ["cell_id"], role="perturbed grid column")
        names = [c for c in count_columns if f"{c}_original" in perturbed.columns]
        changed = (perturbed[names].to_numpy() != perturbed[[f"{c}_original" for c in names]].to_numpy()).any(axis=1)
        perturbed_cells = perturbed.loc[changed, "cell_id"].astype(str)
    if swapped_households is not None:
        swapped_cells = swapped_households.index[swapped_households.to_numpy() > 0].astype(str)

    legend = "".join(
        f'<span style="background:{c}"></span>{html.escape(label)}'
        for c, label in zip(POPULATION_COLOURS, _population_labels())
    )
    toggles = "".join(
        f'<label><input type="checkbox" data-layer="{name}" checked> '
        f'<span style="background:{LAYER_COLOURS[name]}"></span>{html.escape(text)} ({len(cells)} cells)</label> '
        for name, text, cells in (
            ("suppressed", "cells with a suppressed count", suppressed_cells),
            ("perturbed", "cells perturbed by the cell key method", perturbed_cells),
            ("swapped", "cells that received swapped households", swapped_cells),
        )
    )
    sections += [
        "<h2>Map of the cells (EPSG:3035)</h2>",
        f'<p class="legend">Residents per cell: {legend}</p>',
        f'<p class="legend">{toggles}</p>',
        grid_map_svg(counts, suppressed_cells=suppressed_cells, perturbed_cells=perturbed_cells,
                     swapped_cells=swapped_cells),
        "<h2>Cells by number of residents</h2>",
        _html_table(resident_size_distribution(counts).round(4), "Inhabited cells and residents by cell size"),
    ]
    if suppressed is not None:
        aligned = suppressed.set_index("cell_id").reindex(counts["cell_id"]).reset_index()
        aligned.index = counts.index
        loss = grid_information_loss(counts, aligned)
        sections += ["<h2>Suppression route: information loss</h2>",
                     _html_table(loss, "Loss per variable from suppressed counts")]
    if perturbed is not None:
        names = [c for c in count_columns if f"{c}_original" in perturbed.columns]
        original = perturbed[[f"{c}_original" for c in names]].set_axis(names, axis=1)
        loss = perturbation_loss(original, perturbed[names])
        sections += ["<h2>Cell key route: information loss</h2>",
                     _html_table(loss, "Deviation of the perturbed counts per variable")]
    if national is not None:
        table = difference_table(counts, national)
        flat = table.copy()
        flat.columns = [f"{d:+d} {measure}" for d, measure in table.columns]
        sections += ["<h2>Resident versus national definition (differencing)</h2>",
                     _html_table(flat, "Cells by difference of resident minus national counts")]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(sections)
        + f"\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def _population_labels() -> list[str]:
    bounds = [0, *POPULATION_BREAKS]
    labels = [f"{lo + 1}-{hi}" for lo, hi in zip(bounds[:-1], bounds[1:])]
    return [*labels, f"{POPULATION_BREAKS[-1] + 1}+"]
