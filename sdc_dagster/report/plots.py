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

_FIGSIZE = (6.4, 4.0)
_DPI = 96
_PASS_COLOUR = "#1b7837"
_FAIL_COLOUR = "#b2182b"


def _finite(values) -> np.ndarray:
    """Numeric values with NA / inf dropped (a histogram of NaN is meaningless)."""
    array = pd.to_numeric(pd.Series(np.asarray(values).ravel()), errors="coerce").to_numpy(
        dtype=float, na_value=np.nan
    )
    return array[np.isfinite(array)]


def _to_png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(figure)
    figure.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    return buffer.getvalue()


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
        axes.hist(data, bins=max(1, min(bins, distinct)), color="#4575b4", edgecolor="white")
    else:
        _empty_note(axes)
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("records")
    return _to_png(figure)


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
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    return _to_png(figure)


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
        for name, values in named.items():
            if values.size:
                axes.hist(values, bins=edges, alpha=0.5, label=name)
        axes.legend(fontsize="small")
    else:
        _empty_note(axes)
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("records")
    return _to_png(figure)


def risk_utility_map_png(points: pd.DataFrame, title: str = "Risk-utility map") -> bytes:
    """Scatter of protection plans: residual risk (x) against information loss (y).

    Parameters
    ----------
    points : DataFrame
        Index = plan names; columns "risk", "loss" (numbers) and "releasable" (bool).
        Plans passing the release checks are drawn as green circles, the others as red crosses.
    title : str
        Figure title.

    Returns
    -------
    bytes
        A PNG image.
    """
    figure = Figure(figsize=_FIGSIZE)
    axes = figure.add_subplot()
    drawn = False
    for releasable, marker, colour, label in (
        (True, "o", _PASS_COLOUR, "passes release checks"),
        (False, "X", _FAIL_COLOUR, "fails release checks"),
    ):
        subset = points[points["releasable"].astype(bool) == releasable]
        subset = subset[np.isfinite(subset["risk"].astype(float)) & np.isfinite(subset["loss"].astype(float))]
        if subset.empty:
            continue
        drawn = True
        axes.scatter(subset["risk"].astype(float), subset["loss"].astype(float), marker=marker,
                     s=70, color=colour, label=label)
        for name, row in subset.iterrows():
            axes.annotate(str(name), (float(row["risk"]), float(row["loss"])), xytext=(5, 5),
                          textcoords="offset points", fontsize="small")
    if drawn:
        axes.legend(fontsize="small")
    else:
        _empty_note(axes)
    axes.set_title(title)
    axes.set_xlabel("residual global risk")
    axes.set_ylabel("mean TOPSIS information loss")
    return _to_png(figure)


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
                     width=width, label=str(column))
        axes.set_xticks(positions, [str(i) for i in values.index], rotation=30 if len(values) > 6 else 0)
        axes.legend(fontsize="small")
    else:
        _empty_note(axes)
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    return _to_png(figure)
