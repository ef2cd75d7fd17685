"""Shared matplotlib plots rendered to PNG bytes (report, Dagster metadata).

Every function draws on its own ``Figure`` (never the pyplot state machine), so plots are
thread-safe, leave no open figures behind and work without a display (Agg canvas).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import imsave
from matplotlib.ticker import MaxNLocator, PercentFormatter, ScalarFormatter

_FIGSIZE = (6.4, 4.0)
_DPI = 96
_PAD = 0.1  # inches of white around the cropped figure (savefig's default pad_inches)
# Okabe & Ito's colour-blind-safe palette; pass / fail differ in marker shape as well as colour.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_PASS_COLOUR = PALETTE[0]
_FAIL_COLOUR = PALETTE[5]


def _finite(values) -> np.ndarray:
    """Numeric values with NA / inf dropped (a histogram of NaN is meaningless)."""
    array = pd.to_numeric(pd.Series(np.asarray(values).ravel()), errors="coerce").to_numpy(
        dtype=float, na_value=np.nan
    )
    return array[np.isfinite(array)]


def _to_png(figure: Figure) -> bytes:
    """The figure as PNG bytes cropped to its artists with :data:`_PAD` inches of white around
    them, as ``savefig(bbox_inches="tight")`` writes it, but drawn once where savefig draws twice
    (to measure, then to render). Artists beyond the figure's edges (rotated tick labels below the
    axis) widen the figure, the axes keeping their size, and it is drawn once more."""
    figure.set_dpi(_DPI)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    box = figure.get_tightbbox(canvas.get_renderer())
    width, height = figure.get_size_inches()
    left, below = max(-box.x0, 0.0), max(-box.y0, 0.0)
    right, above = max(box.x1 - width, 0.0), max(box.y1 - height, 0.0)
    if left or below or right or above:
        wider, taller = width + left + right, height + below + above
        for axes in figure.axes:
            x0, y0, w, h = axes.get_position().bounds
            axes.set_position([(x0 * width + left) / wider, (y0 * height + below) / taller,
                               w * width / wider, h * height / taller])
        figure.set_size_inches(wider, taller)
        canvas.draw()
        box = figure.get_tightbbox(canvas.get_renderer())
    pixels = np.asarray(canvas.buffer_rgba())
    rows, columns = pixels.shape[:2]
    # the padded box in pixels (rows run top down), cut to the canvas; the rest of the pad is white
    x0, x1 = round((box.x0 - _PAD) * _DPI), round((box.x1 + _PAD) * _DPI)
    y0, y1 = rows - round((box.y1 + _PAD) * _DPI), rows - round((box.y0 - _PAD) * _DPI)
    inside = pixels[max(y0, 0):min(y1, rows), max(x0, 0):min(x1, columns)]
    margins = ((max(-y0, 0), max(y1 - rows, 0)), (max(-x0, 0), max(x1 - columns, 0)), (0, 0))
    buffer = io.BytesIO()
    imsave(buffer, np.pad(inside, margins, constant_values=255), format="png", dpi=_DPI)
    return buffer.getvalue()


def _labelled_png(figure: Figure, axes, title: str, *, xlabel: str = "", ylabel: str = "") -> bytes:
    """The chart with its title and axis labels, as PNG bytes. The vertical axis writes plain
    numbers (no offset or power of ten above it), so the title sits where matplotlib puts it
    (``y=1``) without being placed anew on every drawing by measuring every tick label."""
    formatter = axes.yaxis.get_major_formatter()
    if isinstance(formatter, ScalarFormatter):
        formatter.set_useOffset(False)
        formatter.set_scientific(False)
    axes.set_title(title, y=1.0)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    return _to_png(figure)


def _empty_note(axes, text: str = "no data") -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, color="grey")


def histogram_png(values, title: str, *, bins: int = 30, xlabel: str = "") -> bytes:
    """Histogram of ``values`` (NA and infinite values dropped) as PNG bytes.

    Parameters
    ----------
    values : array-like or Series
        Numbers to bin.
    title : str
        Figure title.
    bins : int
        Number of bins (fewer when there are fewer distinct values).
    xlabel : str
        Label of the horizontal axis.

    Returns
    -------
    bytes
        A PNG image.
    """
    data = _finite(values)
    figure = Figure(figsize=_FIGSIZE)
    axes = figure.add_subplot()
    if data.size:
        distinct = np.unique(data).size
        axes.hist(data, bins=max(1, min(bins, distinct)), color=PALETTE[0], edgecolor="white")
    else:
        _empty_note(axes)
    return _labelled_png(figure, axes, title, xlabel=xlabel, ylabel="records")


def boxplot_png(frame: pd.DataFrame, title: str, *, ylabel: str = "") -> bytes:
    """One box plot per column of ``frame`` (NA dropped per column) as PNG bytes.

    Parameters
    ----------
    frame : DataFrame
        One column per box (e.g. per-record Shapley values, one column per variable).
    title : str
        Figure title.
    ylabel : str
        Label of the vertical axis.

    Returns
    -------
    bytes
        A PNG image.
    """
    columns = [str(c) for c in frame.columns]
    series = [_finite(frame[c]) for c in frame.columns]
    figure = Figure(figsize=(max(_FIGSIZE[0], 0.8 * len(columns)), _FIGSIZE[1]))
    axes = figure.add_subplot()
    if any(s.size for s in series):
        # matplotlib refuses empty arrays in boxplot; an all-NA column gets a NaN placeholder.
        axes.boxplot([s if s.size else np.array([np.nan]) for s in series], tick_labels=columns)
        axes.tick_params(axis="x", labelrotation=30 if len(columns) > 6 else 0)
    else:
        _empty_note(axes)
    return _labelled_png(figure, axes, title, ylabel=ylabel)


def histograms_png(series_by_name: Mapping[str, Sequence[float]], title: str, *, bins: int = 20,
                   xlabel: str = "") -> bytes:
    """Overlaid, semi-transparent histograms on a common bin grid (e.g. TOPSIS loss per plan)."""
    named = {str(name): _finite(values) for name, values in series_by_name.items()}
    figure = Figure(figsize=_FIGSIZE)
    axes = figure.add_subplot()
    pooled = np.concatenate([v for v in named.values() if v.size] or [np.empty(0)])
    if pooled.size:
        low, high = float(pooled.min()), float(pooled.max())
        edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
        for n, (name, values) in enumerate(named.items()):
            if values.size:
                axes.hist(values, bins=edges, histtype="step", linewidth=2, color=PALETTE[n % len(PALETTE)],
                          label=name)
        axes.legend(fontsize="small")
    else:
        _empty_note(axes)
    return _labelled_png(figure, axes, title, xlabel=xlabel, ylabel="records")


def risk_utility_map_png(points: pd.DataFrame, title: str = "Risk-utility map", *, xlabel: str = "residual global risk",
                         ylabel: str = "information loss", recommended: str | None = None,
                         target: float | None = None, target_label: str = "risk target",
                         front: pd.DataFrame | None = None, percent: tuple[bool, bool] = (False, False)) -> bytes:
    """Scatter of protection plans: residual risk (x) against information loss (y).

    Parameters
    ----------
    points : DataFrame
        Index = plan names; columns "risk", "loss" (numbers) and "releasable" (bool), optionally
        "pareto" (bool: on the Pareto front of the releasable plans, drawn as a step line).
        Plans passing the release checks are drawn as filled blue circles, the others as
        vermillion crosses (shape and colour differ, for colour-blind readers).
    title : str
        Figure title.
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
        A PNG image.
    """
    figure = Figure(figsize=_FIGSIZE)
    axes = figure.add_subplot()
    risk = pd.to_numeric(points["risk"], errors="coerce").astype(float)
    loss = pd.to_numeric(points["loss"], errors="coerce").astype(float)
    finite = np.isfinite(risk) & np.isfinite(loss)
    drawn = False
    if front is not None and len(front):
        searched = front[["risk", "loss"]].apply(pd.to_numeric, errors="coerce").dropna().sort_values(["risk", "loss"])
        if len(searched):
            drawn = True
            axes.step(searched["risk"], searched["loss"], where="post", color=PALETTE[2], linewidth=1.5, marker=".",
                      label="front of the plan search")
    if target is not None and np.isfinite(target):
        drawn = True
        axes.axvline(target, color=PALETTE[7], linestyle=":", linewidth=1.5, label=target_label)
    if "pareto" in points.columns:
        front = points.index[points["pareto"].astype(bool) & finite]
        if len(front):
            order = risk[front].sort_values().index
            axes.step(risk[order], loss[order], where="post", color="grey", linestyle="--", linewidth=1,
                      label="Pareto front (passing plans)")
    for releasable, marker, colour, label in (
        (True, "o", _PASS_COLOUR, "passes blocking checks"),
        (False, "X", _FAIL_COLOUR, "fails blocking checks"),
    ):
        chosen = finite & (points["releasable"].astype(bool) == releasable)
        if not chosen.any():
            continue
        drawn = True
        axes.scatter(risk[chosen], loss[chosen], marker=marker, s=70, color=colour, label=label)
        for name in points.index[chosen]:
            axes.annotate(str(name), (risk[name], loss[name]), xytext=(5, 5), textcoords="offset points",
                          fontsize="small")
    if recommended is not None and recommended in points.index and finite[recommended]:
        axes.scatter([risk[recommended]], [loss[recommended]], s=260, facecolors="none", edgecolors="black",
                     linewidths=2, label=f"recommended: {recommended}")
    if drawn:
        axes.legend(fontsize="small")
    else:
        _empty_note(axes)
    # residual risks are small decimals ("0.031 %"): at most five ticks keep their labels apart
    axes.xaxis.set_major_locator(MaxNLocator(nbins=5))
    for axis, share in zip((axes.xaxis, axes.yaxis), percent):
        if share:
            axis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=None))
    return _labelled_png(figure, axes, title, xlabel=xlabel, ylabel=ylabel)


def heatmap_png(matrix: pd.DataFrame, title: str, *, xlabel: str = "released category",
                ylabel: str = "original category") -> bytes:
    """A matrix of probabilities as a heat map (viridis, readable in grey and by colour-blind
    readers), each cell labelled with its value when the matrix is at most 12 x 12."""
    values = matrix.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    side = max(3.5, 0.5 * max(values.shape, default=1) + 2)
    figure = Figure(figsize=(side + 1, side))
    axes = figure.add_subplot()
    if values.size:
        image = axes.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        figure.colorbar(image, ax=axes, label="probability")
        axes.set_xticks(range(values.shape[1]), [str(c) for c in matrix.columns], rotation=45)
        axes.set_yticks(range(values.shape[0]), [str(i) for i in matrix.index])
        if max(values.shape) <= 12:
            rows, cols = np.indices(values.shape)
            for r, c, v in zip(rows.ravel(), cols.ravel(), values.ravel()):
                if np.isfinite(v):
                    axes.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize="x-small",
                              color="black" if v > 0.6 else "white")
    else:
        _empty_note(axes)
    return _labelled_png(figure, axes, title, xlabel=xlabel, ylabel=ylabel)


def lines_png(frame: pd.DataFrame, title: str, *, ylabel: str = "", xlabel: str = "") -> bytes:
    """One line with markers per column of ``frame`` over its index (e.g. a figure across waves)."""
    figure = Figure(figsize=_FIGSIZE)
    axes = figure.add_subplot()
    values = frame.apply(pd.to_numeric, errors="coerce").astype(float)
    if len(values) and values.notna().any().any():
        positions = np.arange(len(values))
        for n, column in enumerate(values.columns):
            axes.plot(positions, values[column].to_numpy(), marker="osD^v"[n % 5], color=PALETTE[n % len(PALETTE)],
                      label=str(column))
        axes.set_xticks(positions, [str(i) for i in values.index])
        axes.legend(fontsize="small")
    else:
        _empty_note(axes)
    return _labelled_png(figure, axes, title, xlabel=xlabel, ylabel=ylabel)


def grouped_bars_png(frame: pd.DataFrame, title: str, *, ylabel: str = "") -> bytes:
    """Grouped bar chart as PNG bytes: one group per row of ``frame`` (e.g. a variable), one bar
    per column (e.g. its contribution before and after protection); NA drawn as no bar."""
    figure = Figure(figsize=(max(_FIGSIZE[0], 0.9 * len(frame)), _FIGSIZE[1]))
    axes = figure.add_subplot()
    values = frame.apply(pd.to_numeric, errors="coerce").astype(float)
    if len(values) and values.notna().any().any():
        positions = np.arange(len(values))
        width = 0.8 / max(len(values.columns), 1)
        for n, column in enumerate(values.columns):
            axes.bar(positions + (n - (len(values.columns) - 1) / 2) * width, values[column].to_numpy(),
                     width=width, label=str(column), color=PALETTE[n % len(PALETTE)])
        axes.set_xticks(positions, [str(i) for i in values.index], rotation=30 if len(values) > 6 else 0)
        axes.legend(fontsize="small")
    else:
        _empty_note(axes)
    return _labelled_png(figure, axes, title, ylabel=ylabel)


#: Categories drawn one by one in :func:`category_bars_png`; the rest are pooled into one bar.
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


def category_bars_png(shares: pd.DataFrame, title: str, *, xlabel: str = "% of records") -> bytes:
    """Horizontal grouped bars, one group per category (row of ``shares``, top to bottom), one bar
    per column (e.g. the original and each plan), at most :data:`MAX_CATEGORY_BARS` categories
    (:func:`top_categories`). The figure's height grows with the number of bars, so a variable with
    a hundred categories stays as readable as one with three."""
    shown = top_categories(shares)
    values = shown.apply(pd.to_numeric, errors="coerce").astype(float)
    n_series = max(len(values.columns), 1)
    height = max(_FIGSIZE[1], 0.9 + len(values) * (0.1 + 0.08 * n_series))
    figure = Figure(figsize=(_FIGSIZE[0] + 0.6, height))
    axes = figure.add_subplot()
    if len(values) and values.notna().any().any():
        positions = np.arange(len(values))
        width = 0.8 / n_series
        for n, column in enumerate(values.columns):
            axes.barh(positions + (n - (n_series - 1) / 2) * width, values[column].to_numpy(), height=width,
                      label=str(column), color=PALETTE[n % len(PALETTE)])
        axes.set_yticks(positions, [str(i) for i in values.index], fontsize="small")
        axes.set_ylim(len(values) - 0.5, -0.5)  # first category at the top
        axes.legend(fontsize="small", loc="best")
    else:
        _empty_note(axes)
    return _labelled_png(figure, axes, title, xlabel=xlabel)
