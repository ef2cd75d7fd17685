"""Shared PNG plots: valid PNG bytes for ordinary, degenerate and empty data."""

import io

import numpy as np
import pandas as pd
from matplotlib.image import imread

from sdc_dagster.report.plots import boxplot_png, histogram_png, histograms_png, risk_utility_map_png

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _shape(png: bytes) -> tuple[int, ...]:
    assert png.startswith(PNG_SIGNATURE)
    return imread(io.BytesIO(png), format="png").shape


def test_histogram_png_handles_na_constant_and_empty():
    for values in (np.random.default_rng(0).normal(size=200), [1.0, 1.0, np.nan, np.inf], []):
        height, width, _ = _shape(histogram_png(values, "title"))
        assert height > 100 and width > 100


def test_boxplot_png_with_an_all_missing_column():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [np.nan] * 3, "c": [0.5, 0.1, pd.NA]})
    assert _shape(boxplot_png(frame, "contributions"))[0] > 100
    assert _shape(boxplot_png(pd.DataFrame({"a": [np.nan]}), "empty"))[0] > 100


def test_overlaid_histograms_and_risk_utility_map():
    assert _shape(histograms_png({"p1": [0.1, 0.5], "p2": [], "p3": [0.2, 0.2]}, "topsis"))[0] > 100
    points = pd.DataFrame({"risk": [0.1, 0.3, np.nan], "loss": [0.5, 0.2, 0.1], "releasable": [True, False, True]},
                          index=["a", "b", "c"])
    assert _shape(risk_utility_map_png(points))[0] > 100


def _figure(rotated: bool):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.0))
    axes = figure.add_subplot()
    axes.bar(range(8), np.arange(8.0))
    axes.set_xticks(range(8), [f"category {i}" for i in range(8)], rotation=30 if rotated else 0)
    axes.set_title("title")
    axes.set_xlabel("variable")
    return figure


def test_to_png_draws_once_what_a_tight_savefig_writes():
    """The PNG cropped from one drawing has the size and the pixels of matplotlib's
    ``savefig(bbox_inches="tight")`` of the same figure, with labels inside the figure (cropped) and
    with rotated labels below its edge (the figure widened, drawn again)."""
    from sdc_dagster.report.plots import _DPI, _to_png

    for rotated in (False, True):
        buffer = io.BytesIO()
        _figure(rotated).savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
        expected, drawn = (imread(io.BytesIO(png), format="png") for png in (buffer.getvalue(), _to_png(_figure(rotated))))
        assert abs(expected.shape[0] - drawn.shape[0]) <= 1 and abs(expected.shape[1] - drawn.shape[1]) <= 1
        rows, columns = min(expected.shape[0], drawn.shape[0]), min(expected.shape[1], drawn.shape[1])
        assert np.abs(expected[:rows, :columns, :3] - drawn[:rows, :columns, :3]).mean() < 0.02
