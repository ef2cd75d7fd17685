"""Shared SVG charts: well-formed SVG for ordinary, degenerate and empty data, round tick values,
and a size bounded by the chart, not by the records."""

import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd

from sdc_dagster.report.plots import (
    boxplot_svg,
    grouped_bars_svg,
    heatmap_svg,
    histogram_svg,
    histograms_svg,
    image_uri,
    lines_svg,
    risk_utility_map_svg,
)
from sdc_dagster.report.svg_chart import _tick_labels, _ticks

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: bytes) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and float(root.get("width")) > 100 and float(root.get("height")) > 100
    return root


def _texts(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter(f"{SVG}text")]


def test_histogram_svg_handles_na_constant_and_empty():
    normal = _parse(histogram_svg(np.random.default_rng(0).normal(size=200), "title", xlabel="x"))
    assert len(normal.findall(f"{SVG}rect")) == 2 + 30  # background, frame, one bar per bin
    constant = _parse(histogram_svg([1.0, 1.0, np.nan, np.inf], "title"))
    assert len(constant.findall(f"{SVG}rect")) == 2 + 1
    assert "no data" in _texts(_parse(histogram_svg([], "title")))


def test_boxplot_svg_with_an_all_missing_column_and_a_million_values():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [np.nan] * 3, "c": [0.5, 0.1, pd.NA]})
    assert {"a", "b", "c", "contributions"} <= set(_texts(_parse(boxplot_svg(frame, "contributions"))))
    assert "no data" in _texts(_parse(boxplot_svg(pd.DataFrame({"a": [np.nan]}), "empty")))
    # outliers are drawn once per pixel row: a million records make a chart of the same size
    big = pd.DataFrame({"v": np.random.default_rng(1).standard_cauchy(1_000_000)})
    svg = boxplot_svg(big, "heavy tails")
    assert len(_parse(svg).findall(f"{SVG}circle")) <= 400 and len(svg) < 60_000


def test_overlaid_histograms_and_risk_utility_map():
    chart = _parse(histograms_svg({"p1": [0.1, 0.5], "p2": [], "p3": [0.2, 0.2]}, "topsis"))
    assert {"p1", "p3"} <= set(_texts(chart)) and "p2" not in _texts(chart)  # the legend names drawn series
    points = pd.DataFrame({"risk": [0.1, 0.3, np.nan, 0.1], "loss": [0.5, 0.2, 0.1, 0.5],
                           "releasable": [True, False, True, True]}, index=["a", "b", "c", "d"])
    texts = _texts(_parse(risk_utility_map_svg(points, recommended="a")))
    assert "a, d" in texts and "b" in texts and "recommended: a" in texts  # twins share one label
    assert "no data" in _texts(_parse(risk_utility_map_svg(points.iloc[2:3])))


def test_bars_heatmap_and_lines_escape_their_text():
    frame = pd.DataFrame({"before": [0.2, np.nan], "after <b>": [0.1, 0.3]}, index=["x & y", "z"])
    assert "after <b>" in _texts(_parse(grouped_bars_svg(frame, "bars")))
    matrix = pd.DataFrame([[0.9, 0.1], [0.2, 0.8]], index=["1", "2"], columns=["1", "2"])
    assert {"0.90", "0.10", "0.20", "0.80", "probability"} <= set(_texts(_parse(heatmap_svg(matrix, "PRAM"))))
    assert "w2" in _texts(_parse(lines_svg(pd.DataFrame({"risk": [0.1, 0.2]}, index=["w1", "w2"]), "trend")))
    # one small value (one wave, the same risk before and after): ticks around it, not around 0
    assert "0.000020" in _texts(_parse(lines_svg(pd.DataFrame({"before": [2e-5], "after": [2e-5]}), "one wave")))


def test_round_ticks_written_as_plain_numbers():
    assert _ticks(0.0, 0.315).tolist() == [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
    assert _ticks(0.29, 0.316).tolist() == [0.29, 0.295, 0.3, 0.305, 0.31, 0.315]
    assert _tick_labels(np.array([0.0, 0.25, 0.5, 0.75, 1.0])) == ["0", "0.25", "0.50", "0.75", "1.00"]
    assert _tick_labels(np.array([0.0, 0.005, 0.01]), percent=True) == ["0%", "0.5%", "1.0%"]
    assert _tick_labels(np.array([-50.0, 0.0, 50.0, 100.0])) == ["−50", "0", "50", "100"]
    assert _tick_labels(np.array([0.0, 2e7, 4e7])) == ["0", "20,000,000", "40,000,000"]


def test_image_uri_names_the_image_type():
    assert image_uri(b"<svg></svg>").startswith("data:image/svg+xml;base64,")
    assert image_uri(b"\x89PNG\r\n\x1a\n").startswith("data:image/png;base64,")
