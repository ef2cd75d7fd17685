"""The SVG canvas of the report's charts (:mod:`sdc_dagster.report.plots`): a plot area with
data -> pixel mappings, round ticks and their labels, axes, a legend placed under the title, and
the room labels take. The text is left as text for the browser to set, so its width is estimated
from the number of glyphs (:data:`_CHAR` font sizes each).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

# Okabe & Ito's colour-blind-safe palette; pass / fail differ in marker shape as well as colour.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
PASS_COLOUR = PALETTE[0]
FAIL_COLOUR = PALETTE[5]
WIDTH, HEIGHT = 600, 370  # pixels of an ordinary chart (the 6.4 x 4 inch figure of matplotlib at 96 dpi, cropped)
_FONT = 12  # px: tick labels and legend; titles 14, cell labels 10
_CHAR = 0.58  # average glyph width of a sans-serif font, in font sizes: room reserved for labels


def finite_values(values) -> np.ndarray:
    """Numeric values with NA / inf dropped (a histogram of NaN is meaningless)."""
    array = pd.to_numeric(pd.Series(np.asarray(values).ravel()), errors="coerce").to_numpy(
        dtype=float, na_value=np.nan
    )
    return array[np.isfinite(array)]


def _text_width(text: str, size: float = _FONT) -> float:
    """The width a text takes at ``size`` (an estimate: the browser sets it)."""
    return len(text) * size * _CHAR


def _ticks(low: float, high: float, count: int = 6) -> np.ndarray:
    """Round tick values within [low, high]: the step of 1, 2, 2.5 or 5 x 10^k that cuts the range
    into the number of intervals nearest ``count``."""
    if not high > low:
        low, high = low - 0.5, high + 0.5
    span = high - low
    power = 10.0 ** math.floor(math.log10(span / count))
    step = min((m * power for m in (1, 2, 2.5, 5, 10, 20)), key=lambda step: abs(span / step - count))
    first = math.ceil(low / step - 1e-9) * step
    return np.round(np.arange(first, high + step * 1e-9, step), 12)


def _tick_labels(values: np.ndarray, percent: bool = False) -> list[str]:
    """Plain numbers (no offset, no power of ten; thousands separated by commas) with the decimals
    the step needs; ``percent``: fractions written as percentages."""
    shown = values * 100 if percent else values
    step = float(np.min(np.diff(shown))) if len(shown) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    decimals += 1 if step > 0 and round(step / 10.0 ** -decimals, 6) % 1 else 0  # 2.5 steps
    suffix = "%" if percent else ""
    return [f"{v:,.{decimals}f}".replace("-", "−") + suffix if abs(v) > 1e-12 else "0" + suffix for v in shown]


def axis_limits(values: np.ndarray, *, zero: bool = False, margin: float = 0.05) -> tuple[float, float]:
    """Axis limits around ``values`` with a margin (from zero for bars)."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    if zero:
        low, high = min(low, 0.0), max(high, 0.0)
    if high == low:  # one value: a tenth of it either side (or 0.5 around 0)
        spread = abs(low) / 10 if low else 0.5
        low, high = low - spread, high + spread
    pad = (high - low) * margin
    return (low if zero and low == 0 else low - pad), (high if zero and high == 0 else high + pad)


def number_text(value: float) -> str:
    """A value as written on a chart: one decimal."""
    return f"{value:.1f}"


_TITLE = 34.0  # pixels above the legend (or the plot area): the title


def legend_places(legend: Sequence[tuple[str, str, str]], left: float, right: float) -> list[tuple[float, int]]:
    """``(x, row)`` of each legend entry ``(label, colour, kind)``: left to right in rows between
    ``left`` and ``right``."""
    places, x, row = [], left, 0
    for label, _, _ in legend:
        room = 22 + _text_width(label) + 18
        if x + room > right and x > left:
            x, row = left, row + 1
        places.append((x, row))
        x += room
    return places


def legend_bottom(places: list[tuple[float, int]]) -> float:
    """The top of the plot area below the title and a legend placed in ``places``."""
    return _TITLE + 8 + ((places[-1][1] + 1) * 18 + 6 if places else 0)


class Chart:
    """One SVG chart: a plot area within the canvas, data -> pixel mappings, axes and legend."""

    def __init__(self, title: str, *, width: float = WIDTH, height: float = HEIGHT, left: float = 64,
                 bottom: float = 48, right: float = 16, legend: Sequence[tuple[str, str, str]] = ()):
        self.width, self.height = width, height
        self.parts: list[str] = []
        # a long title (a long plan name) set smaller to stay within the chart
        self.text(width / 2, 22, title, size=round(min(14, (width - 16) / (max(len(title), 1) * 0.62)), 1),
                  weight="bold")
        places = legend_places(legend, left, width - right)
        for (label, colour, kind), (x, row) in zip(legend, places):  # under the title, never over the data
            y = _TITLE + 6 + row * 18
            self._swatch(x, y, colour, kind)
            self.text(x + 22, y + 4, label, anchor="start")
        self.box = (left, legend_bottom(places), width - right, height - bottom)

    # -- primitives ------------------------------------------------------------------------------
    def text(self, x, y, text, *, size=_FONT, anchor="middle", weight=None, colour="#222", rotate=None):
        extra = f' font-weight="{weight}"' if weight else ""
        if rotate is not None:
            extra += f' transform="rotate({rotate} {number_text(x)} {number_text(y)})"'
        self.parts.append(f'<text x="{number_text(x)}" y="{number_text(y)}" font-size="{size}" text-anchor="{anchor}" '
                          f'fill="{colour}"{extra}>{html.escape(str(text))}</text>')

    def _swatch(self, x, y, colour, kind):
        if kind == "bar":
            self.parts.append(f'<rect x="{x}" y="{y - 5}" width="16" height="10" fill="{colour}"/>')
        elif kind in ("o", "X", "ring", "."):
            self.markers(np.array([x + 8.0]), np.array([y]), kind, colour)
        else:  # a line style: "-", "--", ":" or a line with markers "-o"
            dash = {"--": ' stroke-dasharray="6 3"', ":": ' stroke-dasharray="2 3"'}.get(kind[:2], "")
            self.parts.append(f'<line x1="{x}" y1="{y}" x2="{x + 16}" y2="{y}" stroke="{colour}" stroke-width="2"{dash}/>')
            if len(kind) > 1 and kind[0] == "-" and kind[1] not in "-:":
                self.markers(np.array([x + 8.0]), np.array([y]), kind[1], colour)

    def markers(self, xs, ys, kind, colour, size=5.0):
        for x, y in zip(xs, ys):
            if kind == "X":
                s = size
                self.parts.append(f'<path d="M{number_text(x - s)} {number_text(y - s)}L{number_text(x + s)} {number_text(y + s)}'
                                  f'M{number_text(x - s)} {number_text(y + s)}L{number_text(x + s)} {number_text(y - s)}" '
                                  f'stroke="{colour}" stroke-width="3"/>')
            elif kind == "ring":
                self.parts.append(f'<circle cx="{number_text(x)}" cy="{number_text(y)}" r="{size * 2}" fill="none" '
                                  f'stroke="black" stroke-width="2"/>')
            elif kind == "s":
                self.parts.append(f'<rect x="{number_text(x - size)}" y="{number_text(y - size)}" width="{2 * size}" '
                                  f'height="{2 * size}" fill="{colour}"/>')
            else:
                radius = 2.5 if kind == "." else size
                self.parts.append(f'<circle cx="{number_text(x)}" cy="{number_text(y)}" r="{radius}" fill="{colour}"/>')

    def path(self, xs, ys, colour, *, width=2.0, dash=""):
        points = [(x, y) for x, y in zip(xs, ys) if np.isfinite(x) and np.isfinite(y)]
        if len(points) < 2:
            return
        d = "M" + "L".join(f"{number_text(x)} {number_text(y)}" for x, y in points)
        dashed = {"--": ' stroke-dasharray="6 3"', ":": ' stroke-dasharray="2 3"'}.get(dash, "")
        self.parts.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}"{dashed}/>')

    def rects(self, x0, y0, x1, y1, colour, *, edge="white"):
        """Filled rectangles between pixel corners (vectors); NaN ones are left out."""
        for a, b, c, d in zip(x0, y0, x1, y1):
            if np.isfinite(a) and np.isfinite(b) and np.isfinite(c) and np.isfinite(d):
                self.parts.append(f'<rect x="{number_text(min(a, c))}" y="{number_text(min(b, d))}" width="{number_text(abs(c - a))}" '
                                  f'height="{number_text(abs(d - b))}" fill="{colour}" stroke="{edge}" stroke-width="0.5"/>')

    # -- axes ------------------------------------------------------------------------------------
    def scale(self, xlim, ylim, *, flip_y: bool = True, percent=(False, False)):
        """Set the data limits of the plot area (pixels grow downward; ``flip_y`` puts low values
        at the bottom, as on every numeric axis; a category axis runs top down) and whether the
        axes write shares in %. A numeric vertical axis widens the left margin to its tick labels."""
        self.xlim, self.ylim, self.flip_y, self.percent = xlim, ylim, flip_y, percent
        if flip_y:
            left, top, right, bottom = self.box
            need = 30 + max((_text_width(t) for t in _tick_labels(self._ticks_within(ylim), percent[1])), default=0)
            self.box = (max(left, need), top, right, bottom)

    @staticmethod
    def _ticks_within(limits, count: int = 6) -> np.ndarray:
        values = _ticks(*limits, count)
        return values[(values >= min(limits) - 1e-12) & (values <= max(limits) + 1e-12)]

    def x(self, values):
        left, _, right, _ = self.box
        low, high = self.xlim
        return left + (np.asarray(values, dtype=float) - low) / (high - low) * (right - left)

    def y(self, values):
        _, top, _, bottom = self.box
        low, high = self.ylim
        share = (np.asarray(values, dtype=float) - low) / (high - low)
        return bottom - share * (bottom - top) if self.flip_y else top + share * (bottom - top)

    def axes(self, *, xlabel="", ylabel="", xcategories=None, ycategories=None, xcount=6, rotate=False,
             ysize=_FONT):
        """The frame, grid, ticks and labels. Numeric axes get round ticks; ``xcategories`` /
        ``ycategories`` are ``(positions, labels)``; ``rotate`` turns the x labels by 30 degrees."""
        left, top, right, bottom = self.box
        self.parts.append(f'<rect x="{left}" y="{number_text(top)}" width="{number_text(right - left)}" '
                          f'height="{number_text(bottom - top)}" fill="none" stroke="#444" stroke-width="1"/>')
        if xcategories is None:
            values = self._ticks_within(self.xlim, xcount)
            xcategories = (values, _tick_labels(values, self.percent[0]))
        for position, label in zip(self.x(xcategories[0]), xcategories[1]):
            self.parts.append(f'<line x1="{number_text(position)}" y1="{number_text(bottom)}" x2="{number_text(position)}" '
                              f'y2="{number_text(bottom + 4)}" stroke="#444"/>')
            if rotate:
                self.text(position, bottom + 14, label, anchor="end", rotate=-30)
            else:
                self.text(position, bottom + 17, label)
        if ycategories is None:
            values = self._ticks_within(self.ylim)
            ycategories = (values, _tick_labels(values, self.percent[1]))
            for position in self.y(values):  # light grid lines across a numeric axis
                self.parts.append(f'<line x1="{left}" y1="{number_text(position)}" x2="{right}" y2="{number_text(position)}" '
                                  f'stroke="#e4e4e4"/>')
        for position, label in zip(self.y(ycategories[0]), ycategories[1]):
            self.parts.append(f'<line x1="{left - 4}" y1="{number_text(position)}" x2="{left}" y2="{number_text(position)}" '
                              f'stroke="#444"/>')
            self.text(left - 7, position + ysize * 0.35, label, anchor="end", size=ysize)
        if xlabel:
            below = bottom + (self._rotated_room(xcategories[1]) if rotate else 22) + 16
            self.text((left + right) / 2, below, xlabel)
        if ylabel:  # a long label in a smaller font, to stay beside the plot area
            size = min(_FONT, (bottom - top + 40) / (len(ylabel) * _CHAR))
            self.text(14, (top + bottom) / 2, ylabel, rotate=-90, size=round(size, 1))

    @staticmethod
    def _rotated_room(labels) -> float:
        return 14 + 0.5 * max((_text_width(str(t)) for t in labels), default=0.0)

    def note(self, text: str = "no data"):
        left, top, right, bottom = self.box
        self.text((left + right) / 2, (top + bottom) / 2, text, colour="grey")

    def svg(self) -> bytes:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{number_text(self.width)}" height="{number_text(self.height)}" '
                f'viewBox="0 0 {number_text(self.width)} {number_text(self.height)}" '
                'font-family="system-ui, -apple-system, \'Segoe UI\', Arial, sans-serif">'
                '<rect width="100%" height="100%" fill="white"/>' + "".join(self.parts) + "</svg>").encode()


def rotated_bottom(labels: Sequence[str], xlabel: str) -> float:
    """Room below the plot area for labels turned by 30 degrees (and the axis label)."""
    return Chart._rotated_room(labels) + (30 if xlabel else 8)


def left_room(labels: Sequence[str], size: float = _FONT) -> float:
    """Room left of the plot area for the longest of ``labels`` (and the axis label)."""
    return 34 + max((_text_width(str(t), size) for t in labels), default=0.0)
