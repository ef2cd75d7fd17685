"""Primary suppression: the sensitivity rules of a table's cells and the Handbook's protection levels.

Notation (Hundepool et al. 2012, "Statistical Disclosure Control", §4.2): a cell's contributors,
sorted, contribute ``x1 >= x2 >= ... >= 0`` to its value ``X = sum x_i``. A contributor is a unit of
the microdata, or a holding when the table was tabulated with ``holding=`` (tau-Argus manual §4.2.3:
the contributions of the units of one holding are summed and count as one contributor). Negative
contributions count by absolute value (tau-Argus, GaussSuppression ``MagnitudeRule``): ``x_i`` is
the absolute value of the contributor's (signed) total in the cell, and ``X`` their sum.

Rules (a cell is unsafe if any rule of the list says so); each comparison is exact (integers are
compared as integers: ``100·(x1+..+xn) > k·X``, never the rounded ``k/100·X``):

* ``{"rule": "freq", "n": n}``: ``0 < contributors <= n`` (minimum frequency as sdcTable's ``maxN``
  states it). tau-Argus's minimum frequency ``m`` flags ``0 < contributors < m`` (libtauargus,
  ``CTable::UnsafeCellMinRec``): its threshold 3 is ``n = 2`` here.
* ``{"rule": "zero"}``: an empty cell (no contributor): sdcTable's ``protectZeros``.
* ``{"rule": "nk", "n": n, "k": k}``: dominance, the n largest contributions are more than k % of
  ``X``. ``dominance_tie="strict"`` (``>``, as tau-Argus and sdcTable) leaves an exact tie safe;
  ``"inclusive"`` (``>=``, as GaussSuppression and ACRO) flags it.
* ``{"rule": "p", "p": p}``: p % rule, ``X - x1 - x2 < p/100 · x1``: the second largest contributor
  estimates ``x1`` within p %. ``"inclusive"`` makes it ``<=``.
* ``{"rule": "pq", "p": p, "q": q}``: pq rule, ``q·(X - x1 - x2) < p·x1`` (every contributor knows
  the others' within q %; p % with q = 100). ``"inclusive"`` makes it ``<=``.
* ``{"rule": "request", "percent": s}``: the request rule (tau-Argus manual §4.2.4): a contributor
  that asked for protection (``tabulate(..., request=)``) has more than s % of ``X`` (``>=`` with
  ``"inclusive"``).

Protection levels (Hundepool et al. 2012 §4.2.2-§4.2.3, tau-Argus manual §4.2.2): the distance an
intruder's upper bound of an unsafe cell must keep from its value so that the rule's intruder
learns no contribution more precisely than the rule allows:

* p %: ``UPL = p/100 · x1 - (X - x1 - x2)``; pq: ``UPL = p/q · x1 - (X - x1 - x2)``;
* (n, k): ``UPL = 100/k · (x1 + ... + xn) - X`` (the cell must look as large as ``100/k`` times its
  n largest contributions; e.g. 330 = 300 + 20 + 10 under (1, 85): 300/0.85 - 330 = 22.94).

The lower protection level is taken equal to the upper one (tau-Argus's symmetric default). A cell
unsafe under several rules needs the largest level; frequency, zero and request rules ask only that
the cell is not exactly derivable (level 0: an interval of positive width).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.frequencies import connect
from sdc_dagster.tables.model import Table, cover_pairs
from sdc_dagster.validation import check_option, check_scalar

#: rule -> its parameters
RULES: dict[str, tuple[str, ...]] = {
    "freq": ("n",),
    "zero": (),
    "nk": ("n", "k"),
    "p": ("p",),
    "pq": ("p", "q"),
    "request": ("percent",),
}
#: the rules that need each contributor's contribution (a magnitude table from microdata)
MAGNITUDE_RULES = ("nk", "p", "pq", "request")
TIES = ("strict", "inclusive")


def _checked_rules(rules) -> list[dict]:
    if isinstance(rules, Mapping):
        rules = [rules]
    if not isinstance(rules, Sequence) or not rules:
        raise SDCInputError("rules: must be a non-empty list of rules such as {'rule': 'freq', 'n': 3}")
    out = []
    for position, rule in enumerate(rules):
        if not isinstance(rule, Mapping) or "rule" not in rule:
            raise SDCInputError(f"rules[{position}]: must be a mapping with a 'rule' key, got {rule!r}")
        name = check_option(rule["rule"], f"rules[{position}]['rule']", list(RULES))
        extra = sorted(set(rule) - {"rule", *RULES[name]})
        if extra:
            raise SDCInputError(f"rules[{position}] ({name}): unknown parameter {extra[0]!r}; it takes {list(RULES[name])}")
        checked = {"rule": name}
        for key in RULES[name]:
            if key not in rule:
                raise SDCInputError(f"rules[{position}] ({name}): needs {key!r}")
        if name in ("freq", "nk"):
            checked["n"] = check_scalar(rule["n"], f"rules[{position}] ({name}): 'n'", integer=True, low=1)
        if name == "nk":
            checked["k"] = check_scalar(rule["k"], f"rules[{position}] (nk): 'k'", low=0, high=100, closed="right")
        if name in ("p", "pq"):
            checked["p"] = check_scalar(rule["p"], f"rules[{position}] ({name}): 'p'", low=0, closed="neither")
        if name == "pq":
            checked["q"] = check_scalar(rule["q"], f"rules[{position}] (pq): 'q'", low=checked["p"], high=100,
                                        closed="right")
        if name == "request":
            checked["percent"] = check_scalar(rule["percent"], f"rules[{position}] (request): 'percent'", low=0,
                                              high=100)
        out.append(checked)
    return out


def contributor_statistics(table: Table, top: int) -> pd.DataFrame:
    """Per row of ``table.cells``: ``total`` (``X``, the sum of absolute contributions), the ``top``
    largest absolute contributions as columns ``x1``, ``x2``, ... (0 where fewer contributors) and
    ``request_max`` (the largest contribution of a contributor that asked for protection, 0 if none).
    A contributor's contribution to a cell is its signed total over the cell's inner cells (a
    holding's units summed), counted in DuckDB."""
    if table.contributions is None:
        raise SDCInputError(
            "rules nk, p, pq and request: need each contributor's contribution; tabulate microdata with value="
        )
    db = connect()
    db.register("sdc_table_units", table.contributions)
    db.register("sdc_table_cover", cover_pairs(table.matrix))
    try:
        columns = ", ".join(f"coalesce(list_extract(top, {j + 1}), 0) AS x{j + 1}" for j in range(int(top)))
        stats = db.execute(
            f"""
            WITH per_unit AS (
                SELECT c.row, u.unit, abs(sum(u.value)) AS a, bool_or(u.request) AS asked
                FROM sdc_table_units u JOIN sdc_table_cover c USING (inner_cell) GROUP BY c.row, u.unit),
            per_cell AS (
                SELECT row, sum(a) AS total, list(a ORDER BY a DESC) AS top,
                       coalesce(max(CASE WHEN asked THEN a END), 0) AS request_max
                FROM per_unit GROUP BY row)
            SELECT row, total, request_max, {columns} FROM per_cell
            """
        ).df()
    finally:
        db.unregister("sdc_table_units")
        db.unregister("sdc_table_cover")
    names = ["total", "request_max", *[f"x{j + 1}" for j in range(int(top))]]
    values = np.zeros((len(table.cells), len(names)))
    values[stats["row"].to_numpy()] = stats[names].to_numpy(dtype=np.float64)
    return pd.DataFrame(values, columns=names)


def _evaluate(table: Table, rules, dominance_tie: str) -> tuple[np.ndarray, np.ndarray]:
    """(unsafe, upper protection level) per row of ``table.cells``."""
    if not isinstance(table, Table):
        raise SDCInputError(f"table: must be a Table (from tables.tabulate), got {type(table).__name__}")
    rules = _checked_rules(rules)
    check_option(dominance_tie, "dominance_tie", TIES)
    inclusive = dominance_tie == "inclusive"
    n = len(table.cells)
    unsafe = np.zeros(n, dtype=bool)
    level = np.zeros(n)
    contributors = table.contributors
    stats = None
    if any(r["rule"] in MAGNITUDE_RULES for r in rules):
        top = max([2] + [r["n"] for r in rules if r["rule"] == "nk"])
        stats = contributor_statistics(table, top)
    for rule in rules:
        name = rule["rule"]
        if name == "freq":
            unsafe |= (contributors > 0) & (contributors <= rule["n"])
        elif name == "zero":
            unsafe |= contributors == 0
        elif name == "request":
            share, whole = 100.0 * stats["request_max"].to_numpy(), rule["percent"] * stats["total"].to_numpy()
            unsafe |= (stats["request_max"].to_numpy() > 0) & ((share >= whole) if inclusive else (share > whole))
        elif name == "nk":
            x = stats[[f"x{j + 1}" for j in range(rule["n"])]].to_numpy().sum(axis=1)
            total = stats["total"].to_numpy()
            flagged = (total > 0) & ((100.0 * x >= rule["k"] * total) if inclusive else (100.0 * x > rule["k"] * total))
            unsafe |= flagged
            level = np.where(flagged, np.maximum(level, 100.0 * x / rule["k"] - total), level)
        else:  # p and pq
            p, q = rule["p"], rule.get("q", 100.0)
            x1, x2, total = (stats[c].to_numpy() for c in ("x1", "x2", "total"))
            rest = total - x1 - x2
            flagged = (total > 0) & ((q * rest <= p * x1) if inclusive else (q * rest < p * x1))
            unsafe |= flagged
            level = np.where(flagged, np.maximum(level, p / q * x1 - rest), level)
    return unsafe, np.maximum(level, 0.0)


def primary_suppression(table: Table, rules, *, dominance_tie: str = "strict") -> pd.Series:
    """Whether each cell of ``table.cells`` is unsafe under any of ``rules`` (see the module text for
    each rule and its convention). Returns a bool Series indexed like ``table.cells``."""
    unsafe, _ = _evaluate(table, rules, dominance_tie)
    return pd.Series(unsafe, index=table.cells.index, name="primary")


def protection_levels(table: Table, rules, *, dominance_tie: str = "strict") -> pd.DataFrame:
    """The Handbook's protection levels of every cell: columns ``lower``, ``upper`` (0 for safe cells
    and for cells unsafe only under the frequency, zero or request rule), indexed like
    ``table.cells``. A secondary suppression meets them when the audit interval of each unsafe
    cell reaches ``value - lower`` and ``value + upper`` (:func:`sdc_dagster.tables.intruder.audit`)."""
    _, level = _evaluate(table, rules, dominance_tie)
    return pd.DataFrame({"lower": level, "upper": level}, index=table.cells.index)
