"""How the report writes and orders the categories of a variable (display only; data unchanged).

A category that passed through a float column (``1.0``) is written as the integer it is (``1``);
a category with a value label from the SPSS / Stata source (:func:`sdc_dagster.spec.sources.value_labels`)
is written ``4 (Burgenland)``; interval labels of a global recoding (``(20,30]``) sort by their lower
bound, numbers numerically, other text by length then alphabetically, missing last.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

MISSING = "(missing)"

_INTERVAL = re.compile(r"^[\(\[]\s*(-?[0-9.eE+-]+)\s*[,;]")


def plain_category(value):
    """``value`` as a plain Python scalar, an integral float as an int (``1.0`` -> ``1``)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def normal_labels(labels: Mapping | None) -> dict:
    """A value-label mapping with its codes as :func:`plain_category` (SPSS stores ``4.0``)."""
    return {plain_category(code): str(text) for code, text in (labels or {}).items()}


def category_text(value, labels: Mapping | None = None) -> str:
    """One category as the report writes it: ``"1"`` for ``1.0``, ``"4 (Burgenland)"`` when
    ``labels`` (code -> label, already :func:`normal_labels`) names it, ``"(missing)"`` for NA."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return MISSING
    value = plain_category(value)
    text = str(value)
    if labels and value in labels and labels[value] != text:
        return f"{text} ({labels[value]})"
    return text


def category_counts(values: pd.Series, labels: Mapping | None = None) -> pd.Series:
    """Records per category of ``values`` as :func:`category_text` writes it (index: the texts in
    order of first appearance, ``(missing)`` first when there are missing values; categories that
    write alike, ``1`` and ``1.0``, counted together): the records are counted per distinct value,
    and only the distinct values are written."""
    labels = normal_labels(labels)
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    counts = np.bincount(codes + 1, minlength=len(uniques) + 1)  # slot 0: the missing values (code -1)
    texts = np.array([MISSING, *(category_text(u, labels) for u in uniques)], dtype=object)
    present = counts > 0
    counted = pd.Series(counts[present], index=pd.Index(texts[present], dtype=object))
    # categories that write alike are summed; the report draws every table of them, so the
    # grouping is skipped when each text is written once (the usual case)
    return counted if counted.index.is_unique else counted.groupby(level=0, sort=False).sum()


def category_sort_key(text: str):
    """Sort key of a written category: numbers (and ``"4 (label)"``) by value, intervals by their
    lower bound, other text by length then alphabetically, ``(missing)`` last."""
    if text == MISSING:
        return (2, 0.0, 0, text)
    head = text.split(" (", 1)[0]
    interval = _INTERVAL.match(head)
    try:
        return (0, float(interval.group(1) if interval else head), len(text), text)
    except ValueError:
        return (1, 0.0, len(text), text)
