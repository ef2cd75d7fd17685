"""Maps of protected grid tables (S002 Rys. 6–7)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import require_columns
from sdc_dagster.grid.counts import GRID_VARIABLES


def suppression_map_png(
    protected: pd.DataFrame,
    *,
    path: str | Path | None = None,
    northing: str = "northing_km",
    easting: str = "easting_km",
    title: str = "Cells with hidden categories",
) -> bytes:
    """PNG map of inhabited cells coloured by what is hidden (S002 Rys. 6–7).

    Colours: grey = nothing hidden; blue = sex only; orange = age only; red = sex and age.

    Returns
    -------
    bytes
        The PNG image (also written to ``path`` when given).
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    sex, age = ({v.prefix: list(v.columns) for v in GRID_VARIABLES}[name] for name in ("sex", "age"))
    require_columns(protected, [northing, easting, *sex, *age], role="map column")
    sex_hidden = protected[sex].isna().any(axis=1).to_numpy()
    age_hidden = protected[age].isna().any(axis=1).to_numpy()
    north = protected[northing].to_numpy(dtype=np.float64)
    east = protected[easting].to_numpy(dtype=np.float64)
    fig = Figure(figsize=(7, 7), dpi=110)
    ax = fig.add_subplot()
    layers = [
        (~sex_hidden & ~age_hidden, "#d9d9d9", "nothing hidden"),
        (sex_hidden & ~age_hidden, "#3182bd", "sex hidden"),
        (~sex_hidden & age_hidden, "#fd8d3c", "age hidden"),
        (sex_hidden & age_hidden, "#de2d26", "sex and age hidden"),
    ]
    for mask, colour, label in layers:
        ax.scatter(east[mask], north[mask], s=1.0, c=colour, marker="s", linewidths=0, label=f"{label} ({mask.sum()})")
    ax.set_aspect("equal")
    ax.set_xlabel("easting (km, EPSG:3035)")
    ax.set_ylabel("northing (km, EPSG:3035)")
    ax.set_title(title)
    ax.legend(loc="upper right", markerscale=6, fontsize=8)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    png = buffer.getvalue()
    if path is not None:
        Path(path).write_bytes(png)
    return png
