"""Shared charts written as SVG (report, Dagster metadata), drawn on the canvas of
:mod:`sdc_dagster.report.svg_chart`.

Each chart is a small SVG document (UTF-8 bytes) written directly from aggregated numbers (bin
counts, quantiles, shares, one point per plan), its text left as text for the browser to set: no
plotting library, no rasterising, a few milliseconds per chart, crisp at any zoom or print size, and
its size bounded by the chart (bins, categories, pixels), not by the number of records. A chart
embeds as ``data:image/svg+xml`` (:func:`image_uri`) wherever a PNG would.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdc_dagster.report.svg_chart import (
    FAIL_COLOUR,
    HEIGHT,
    PALETTE,
    PASS_COLOUR,
    WIDTH,
    Chart,
    axis_limits,
    finite_values,
    left_room,
    legend_bottom,
    legend_places,
    number_text,
    rotated_bottom,
)

# viridis (matplotlib's, readable in grey and by colour-blind readers) at 0, 0.1, ..., 1
_VIRIDIS = np.array([(68, 1, 84), (72, 36, 117), (65, 68, 135), (53, 95, 141), (42, 120, 142), (33, 145, 140),
                     (34, 168, 132), (68, 191, 112), (122, 209, 81), (189, 223, 38), (253, 231, 37)], dtype=float)


def image_uri(image: bytes) -> str:
    """A chart (SVG of this module, or PNG) as a ``data:`` URI for an ``<img>`` or Markdown image."""
    kind = "svg+xml" if image.lstrip()[:4] == b"<svg" else "png"
    return f"data:image/{kind};base64,{base64.b64encode(image).decode('ascii')}"


def histogram_svg(values, title: str, *, bins: int = 30, xlabel: str = "") -> bytes:
    """Histogram of ``values`` (NA and infinite values dropped) as an SVG chart.

    Parameters
    ----------
    values : array-like or Series
        Numbers to bin.
    title : str
        Chart title.
    bins : int
        Number of bins (fewer when there are fewer distinct values).
    xlabel : str
        Label of the horizontal axis.

    Returns
    -------
    bytes
        An SVG document.
    """
    data = finite_values(values)
    chart = Chart(title)
    if not data.size:
        chart.scale((0, 1), (0, 1))
        chart.note()
        chart.axes(xlabel=xlabel, ylabel="records")
        return chart.svg()
    counts, edges = np.histogram(data, bins=max(1, min(bins, np.unique(data).size)))
    chart.scale(axis_limits(edges), axis_limits(counts.astype(float), zero=True))
    chart.rects(chart.x(edges[:-1]), chart.y(np.zeros(len(counts))), chart.x(edges[1:]), chart.y(counts),
                PALETTE[0])
    chart.axes(xlabel=xlabel, ylabel="records")
    return chart.svg()


def histograms_svg(series_by_name: Mapping[str, Sequence[float]], title: str, *, bins: int = 20,
                   xlabel: str = "") -> bytes:
    """Overlaid step histograms on a common bin grid (e.g. TOPSIS loss per plan), one colour each."""
    named = {str(name): finite_values(values) for name, values in series_by_name.items()}
    drawn = [name for name, values in named.items() if values.size]
    colours = {name: PALETTE[n % len(PALETTE)] for n, name in enumerate(named)}
    chart = Chart(title, legend=[(name, colours[name], "-") for name in drawn])
    if not drawn:
        chart.scale((0, 1), (0, 1))
        chart.note()
        chart.axes(xlabel=xlabel, ylabel="records")
        return chart.svg()
    pooled = np.concatenate([named[name] for name in drawn])
    low, high = float(pooled.min()), float(pooled.max())
    edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
    counts = {name: np.histogram(named[name], bins=edges)[0] for name in drawn}
    chart.scale(axis_limits(edges), axis_limits(np.concatenate(list(counts.values())).astype(float), zero=True))
    for name in drawn:  # the outline of the bars: up and down at every edge
        xs = np.repeat(edges, 2)
        ys = np.concatenate([[0], np.repeat(counts[name], 2), [0]])
        chart.path(chart.x(xs), chart.y(ys), colours[name])
    chart.axes(xlabel=xlabel, ylabel="records")
    return chart.svg()


def boxplot_svg(frame: pd.DataFrame, title: str, *, ylabel: str = "") -> bytes:
    """One box plot per column of ``frame`` (NA dropped per column) as an SVG chart: the box from
    the first to the third quartile, the median, whiskers to the furthest values within 1.5
    interquartile ranges, and the values beyond them as circles (one per pixel row: the chart's
    size does not grow with the records).

    Parameters
    ----------
    frame : DataFrame
        One column per box (e.g. per-record Shapley values, one column per variable).
    title : str
        Chart title.
    ylabel : str
        Label of the vertical axis.

    Returns
    -------
    bytes
        An SVG document.
    """
    columns = [str(c) for c in frame.columns]
    series = [finite_values(frame[c]) for c in frame.columns]
    rotate = len(columns) > 6
    width = max(WIDTH, 72 * len(columns))
    chart = Chart(title, width=width, height=HEIGHT + (rotated_bottom(columns, "") - 48 if rotate else 0),
                   bottom=rotated_bottom(columns, "") if rotate else 48)
    positions = np.arange(1, len(columns) + 1, dtype=float)
    if not any(s.size for s in series):
        chart.scale((0.5, len(columns) + 0.5), (0, 1))
        chart.note()
        chart.axes(ylabel=ylabel, xcategories=(positions, columns), rotate=rotate)
        return chart.svg()
    chart.scale((0.5, len(columns) + 0.5), axis_limits(np.concatenate([s for s in series if s.size])))
    half = 0.25
    for position, values in zip(positions, series):
        if not values.size:
            continue
        q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75])
        reach = 1.5 * (q3 - q1)
        inside = values[(values >= q1 - reach) & (values <= q3 + reach)]
        low, high = inside.min(), inside.max()
        x0, x1, xm = chart.x([position - half, position + half, position])
        y = chart.y([q1, median, q3, low, high])
        chart.parts.append(f'<rect x="{number_text(x0)}" y="{number_text(y[2])}" width="{number_text(x1 - x0)}" '
                           f'height="{number_text(y[0] - y[2])}" fill="none" stroke="#222"/>')
        chart.path([x0, x1], [y[1], y[1]], PALETTE[1], width=2)
        for end, edge in ((y[3], y[0]), (y[4], y[2])):
            chart.path([xm, xm], [edge, end], "#222", width=1)
            chart.path([xm - (x1 - x0) / 4, xm + (x1 - x0) / 4], [end, end], "#222", width=1)
        beyond = np.unique(np.round(chart.y(values[(values < low) | (values > high)]), 0))
        chart.parts += [f'<circle cx="{number_text(xm)}" cy="{number_text(v)}" r="3" fill="none" stroke="#222" '
                        'stroke-width="0.8"/>' for v in beyond]
    chart.axes(ylabel=ylabel, xcategories=(positions, columns), rotate=rotate)
    return chart.svg()


def risk_utility_map_svg(points: pd.DataFrame, title: str = "Risk-utility map", *, xlabel: str = "residual global risk",
                         ylabel: str = "information loss", recommended: str | None = None,
                         target: float | None = None, target_label: str = "risk target",
                         front: pd.DataFrame | None = None, percent: tuple[bool, bool] = (False, False)) -> bytes:
    """Scatter of protection plans: residual risk (x) against information loss (y), as an SVG chart.

    Parameters
    ----------
    points : DataFrame
        Index = plan names; columns "risk", "loss" (numbers) and "releasable" (bool), optionally
        "pareto" (bool: on the Pareto front of the releasable plans, drawn as a step line).
        Plans passing the release checks are drawn as filled blue circles, the others as
        vermillion crosses (shape and colour differ, for colour-blind readers).
    title : str
        Chart title.
    recommended : str or None
        The recommended plan, ringed and labelled.
    target : float or None
        The risk target (e.g. the spec's ``max_global_risk``), drawn as a vertical line named
        ``target_label``: plans right of it fail it.
    front : DataFrame or None
        Columns "risk" and "loss": the front of a plan search, drawn as a step line.
    percent : (bool, bool)
        Whether the x (risk) and y (loss) values are shares, labelled in % (the values stay
        fractions), as the report's tables write them.

    Returns
    -------
    bytes
        An SVG document.
    """
    risk = pd.to_numeric(points["risk"], errors="coerce").astype(float)
    loss = pd.to_numeric(points["loss"], errors="coerce").astype(float)
    finite = np.isfinite(risk) & np.isfinite(loss)
    releasable = points["releasable"].astype(bool)
    searched = None
    if front is not None and len(front):
        searched = front[["risk", "loss"]].apply(pd.to_numeric, errors="coerce").dropna().sort_values(["risk", "loss"])
        searched = searched if len(searched) else None
    pareto = (points.index[points["pareto"].astype(bool) & finite] if "pareto" in points.columns else [])
    has_target = target is not None and np.isfinite(target)
    ringed = recommended is not None and recommended in points.index and bool(finite[recommended])
    legend = ([("front of the plan search", PALETTE[2], "-.")] if searched is not None else []) \
        + ([(target_label, PALETTE[7], ":")] if has_target else []) \
        + ([("Pareto front (passing plans)", "grey", "--")] if len(pareto) else []) \
        + [(label, colour, marker) for flag, marker, colour, label in
           ((True, "o", PASS_COLOUR, "passes blocking checks"), (False, "X", FAIL_COLOUR, "fails blocking checks"))
           if (finite & (releasable == flag)).any()] \
        + ([(f"recommended: {recommended}", "black", "ring")] if ringed else [])
    chart = Chart(title, legend=legend)
    xs = np.concatenate([risk[finite].to_numpy(), searched["risk"].to_numpy() if searched is not None else [],
                         [target] if has_target else []])
    ys = np.concatenate([loss[finite].to_numpy(), searched["loss"].to_numpy() if searched is not None else []])
    if not xs.size:
        chart.scale((0, 1), (0, 1), percent=percent)
        chart.note()
        chart.axes(xlabel=xlabel, ylabel=ylabel, xcount=5)
        return chart.svg()
    chart.scale(axis_limits(xs, margin=0.08), axis_limits(ys if ys.size else np.array([0.0, 1.0]), margin=0.1), percent=percent)

    def steps(x, y):  # a step line ("post": flat to the next x, then up or down)
        return np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]

    if searched is not None:
        sx, sy = steps(chart.x(searched["risk"]), chart.y(searched["loss"]))
        chart.path(sx, sy, PALETTE[2], width=1.5)
        chart.markers(chart.x(searched["risk"]), chart.y(searched["loss"]), ".", PALETTE[2])
    if has_target:
        _, top, _, bottom = chart.box
        chart.path(chart.x([target, target]), [top, bottom], PALETTE[7], width=1.5, dash=":")
    if len(pareto):
        order = risk[pareto].sort_values().index
        px, py = steps(chart.x(risk[order]), chart.y(loss[order]))
        chart.path(px, py, "grey", width=1, dash="--")
    for flag, marker, colour in ((True, "o", PASS_COLOUR), (False, "X", FAIL_COLOUR)):
        chosen = finite & (releasable == flag)
        chart.markers(chart.x(risk[chosen]), chart.y(loss[chosen]), marker, colour, size=6)
        # plans on the same pixel (the same protection) share one label
        at: dict[tuple[float, float], list[str]] = {}
        for name, px, py in zip(points.index[chosen], chart.x(risk[chosen]), chart.y(loss[chosen])):
            at.setdefault((round(px), round(py)), []).append(str(name))
        for (px, py), names in at.items():
            chart.text(px + 8, py - 8, ", ".join(names), anchor="start", size=11)
    if ringed:
        chart.markers(chart.x([risk[recommended]]), chart.y([loss[recommended]]), "ring", "black", size=7)
    chart.axes(xlabel=xlabel, ylabel=ylabel, xcount=5)
    return chart.svg()


def _viridis(values: np.ndarray) -> list[str]:
    """Colours of values in [0, 1] on the viridis scale (NaN: light grey)."""
    out = []
    for v in values:
        if not np.isfinite(v):
            out.append("#dddddd")
            continue
        at = min(max(float(v), 0.0), 1.0) * 10
        i = min(int(at), 9)
        r, g, b = _VIRIDIS[i] + (_VIRIDIS[i + 1] - _VIRIDIS[i]) * (at - i)
        out.append(f"#{round(r):02x}{round(g):02x}{round(b):02x}")
    return out


def heatmap_svg(matrix: pd.DataFrame, title: str, *, xlabel: str = "released category",
                ylabel: str = "original category") -> bytes:
    """A matrix of probabilities as a heat map (viridis, 0 to 1, readable in grey and by
    colour-blind readers) with a colour bar, each cell labelled with its value when the matrix is
    at most 12 x 12."""
    values = matrix.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    rows, columns = values.shape
    row_labels, column_labels = [str(i) for i in matrix.index], [str(c) for c in matrix.columns]
    cell = 40 if max(rows, columns) <= 12 else 18
    left = left_room(row_labels) + 14
    bottom = rotated_bottom(column_labels, xlabel)
    chart = Chart(title, width=max(360, left + columns * cell + 90), height=max(260, 50 + rows * cell + bottom),
                   left=left, bottom=bottom, right=90)
    if not values.size:
        chart.scale((0, 1), (0, 1))
        chart.note()
        return chart.svg()
    chart.scale((-0.5, columns - 0.5), (-0.5, rows - 0.5), flip_y=False)
    r, c = np.indices(values.shape)
    r, c, v = r.ravel(), c.ravel(), values.ravel()
    for x0, y0, x1, y1, colour in zip(chart.x(c - 0.5), chart.y(r - 0.5), chart.x(c + 0.5), chart.y(r + 0.5),
                                      _viridis(v)):
        chart.parts.append(f'<rect x="{number_text(x0)}" y="{number_text(y0)}" width="{number_text(x1 - x0)}" '
                           f'height="{number_text(y1 - y0)}" fill="{colour}"/>')
    if max(rows, columns) <= 12:
        for x, y, value in zip(chart.x(c), chart.y(r), v):
            if np.isfinite(value):
                chart.text(x, y + 3.5, f"{value:.2f}", size=10, colour="black" if value > 0.6 else "white")
    left, top, right, bottom_edge = chart.box
    bar_x, bar_top, bar_bottom = right + 16, top, bottom_edge
    stops = "".join(f'<stop offset="{i / 10:.1f}" stop-color="{colour}"/>'
                    for i, colour in enumerate(_viridis(np.linspace(1, 0, 11))))
    chart.parts.append(f'<defs><linearGradient id="viridis" x1="0" y1="0" x2="0" y2="1">{stops}</linearGradient></defs>'
                       f'<rect x="{number_text(bar_x)}" y="{number_text(bar_top)}" width="14" '
                       f'height="{number_text(bar_bottom - bar_top)}" fill="url(#viridis)" stroke="#444"/>')
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = bar_bottom - tick * (bar_bottom - bar_top)
        chart.text(bar_x + 18, y + 4, f"{tick:g}", anchor="start", size=10)
    chart.text(bar_x + 60, (bar_top + bar_bottom) / 2, "probability", rotate=-90, size=11)
    chart.axes(xlabel=xlabel, ylabel=ylabel, xcategories=(np.arange(columns), column_labels),
               ycategories=(np.arange(rows), row_labels), rotate=True)
    return chart.svg()


def lines_svg(frame: pd.DataFrame, title: str, *, ylabel: str = "", xlabel: str = "") -> bytes:
    """One line with markers per column of ``frame`` over its index (e.g. a figure across waves)."""
    values = frame.apply(pd.to_numeric, errors="coerce").astype(float)
    markers = "osXos"
    colours = [PALETTE[n % len(PALETTE)] for n in range(len(values.columns))]
    shown = len(values) and values.notna().any().any()
    chart = Chart(title, legend=[(str(c), colours[n], "-" + markers[n % 5]) for n, c in enumerate(values.columns)]
                   if shown else ())
    positions = np.arange(len(values), dtype=float)
    if not shown:
        chart.scale((0, 1), (0, 1))
        chart.note()
        chart.axes(xlabel=xlabel, ylabel=ylabel)
        return chart.svg()
    chart.scale((-0.3, max(len(values) - 0.7, 0.3)), axis_limits(values.to_numpy().ravel(), margin=0.1))
    for n, column in enumerate(values.columns):
        ys = values[column].to_numpy()
        chart.path(chart.x(positions), chart.y(ys), colours[n])
        keep = np.isfinite(ys)
        chart.markers(chart.x(positions[keep]), chart.y(ys[keep]), markers[n % 5], colours[n], size=4)
    chart.axes(xlabel=xlabel, ylabel=ylabel, xcategories=(positions, [str(i) for i in values.index]))
    return chart.svg()


def grouped_bars_svg(frame: pd.DataFrame, title: str, *, ylabel: str = "") -> bytes:
    """Grouped bar chart as SVG: one group per row of ``frame`` (e.g. a variable), one bar per
    column (e.g. its contribution before and after protection); NA drawn as no bar."""
    values = frame.apply(pd.to_numeric, errors="coerce").astype(float)
    labels = [str(i) for i in values.index]
    rotate = len(values) > 6
    shown = len(values) and values.notna().any().any()
    colours = [PALETTE[n % len(PALETTE)] for n in range(len(values.columns))]
    bottom = rotated_bottom(labels, "") if rotate else 48
    chart = Chart(title, width=max(WIDTH, 58 * len(values)), height=HEIGHT + bottom - 48, bottom=bottom,
                   legend=[(str(c), colours[n], "bar") for n, c in enumerate(values.columns)] if shown else ())
    positions = np.arange(len(values), dtype=float)
    if not shown:
        chart.scale((0, 1), (0, 1))
        chart.note()
        chart.axes(ylabel=ylabel)
        return chart.svg()
    chart.scale((-0.5, len(values) - 0.5), axis_limits(values.to_numpy().ravel(), zero=True))
    width = 0.8 / max(len(values.columns), 1)
    for n, column in enumerate(values.columns):
        x = positions + (n - (len(values.columns) - 1) / 2) * width
        chart.rects(chart.x(x - width / 2), chart.y(np.zeros(len(x))), chart.x(x + width / 2),
                    chart.y(values[column].to_numpy()), colours[n], edge="none")
    chart.axes(ylabel=ylabel, xcategories=(positions, labels), rotate=rotate)
    return chart.svg()


#: Categories drawn one by one in :func:`category_bars_svg`; the rest are pooled into one bar.
MAX_CATEGORY_BARS = 30


def top_categories(shares: pd.DataFrame, limit: int = MAX_CATEGORY_BARS) -> pd.DataFrame:
    """``shares`` (categories x series) with at most ``limit`` rows: the ``limit - 1`` categories
    with the largest share in any series, in their given order, and one row ``other (m categories)``
    summing the rest; unchanged when it has at most ``limit`` rows."""
    if len(shares) <= limit:
        return shares
    largest = shares.max(axis=1).sort_values(ascending=False, kind="stable").index[: limit - 1]
    kept = shares.index.isin(largest)
    other = shares[~kept].sum().to_frame(f"other ({int((~kept).sum())} categories)").T
    return pd.concat([shares[kept], other])


def category_bars_svg(shares: pd.DataFrame, title: str, *, xlabel: str = "% of records") -> bytes:
    """Horizontal grouped bars, one group per category (row of ``shares``, top to bottom), one bar
    per column (e.g. the original and each plan), at most :data:`MAX_CATEGORY_BARS` categories
    (:func:`top_categories`). The chart's height grows with the number of bars, so a variable with
    a hundred categories stays as readable as one with three."""
    shown = top_categories(shares)
    values = shown.apply(pd.to_numeric, errors="coerce").astype(float)
    labels = [str(i) for i in values.index]
    n_series = max(len(values.columns), 1)
    colours = [PALETTE[n % len(PALETTE)] for n in range(len(values.columns))]
    drawn = len(values) and values.notna().any().any()
    legend = [(str(c), colours[n], "bar") for n, c in enumerate(values.columns)] if drawn else []
    left, width = left_room(labels, 11), WIDTH + 60
    height = max(HEIGHT, legend_bottom(legend_places(legend, left, width - 16)) + 56 + len(values) * (10 + 7.5 * n_series))
    chart = Chart(title, width=width, height=height, left=left, legend=legend)
    if not drawn:
        chart.scale((0, 1), (0, 1))
        chart.note()
        chart.axes(xlabel=xlabel)
        return chart.svg()
    positions = np.arange(len(values), dtype=float)
    chart.scale(axis_limits(values.to_numpy().ravel(), zero=True), (-0.5, len(values) - 0.5), flip_y=False)
    width = 0.8 / n_series
    for n, column in enumerate(values.columns):
        y = positions + (n - (n_series - 1) / 2) * width
        chart.rects(chart.x(np.zeros(len(y))), chart.y(y - width / 2), chart.x(values[column].to_numpy()),
                    chart.y(y + width / 2), colours[n], edge="none")
    chart.axes(xlabel=xlabel, ycategories=(positions, labels), ysize=11)
    return chart.svg()
