"""The cell key method for magnitude tables (ONS / Destatis; sdcTools cellKey, "top_contr" variant).

Thompson, Broadfoot and Elazar (2013), "Methodology for the automatic confidentialisation of
statistical outputs from remote servers at the Australian Bureau of Statistics"; Giessing and Tent
(2019), "Concepts for generalising tools implementing the cell key method to the case of continuous
variables" (UNECE SDC work session); Enderle, Giessing and Tent, cellKey R package
(``ck_params_nums(type = "top_contr")`` with ``ck_simpleparams(p, epsilon)``).

Every record carries a random record key; the cell key of a published cell is the sum of its
records' keys modulo 1 (:func:`~sdc_dagster.protect.cellkey.record_key_addends`, the same keys and
sum as the count method), so a cell gets the same noise in every table it appears in.

Magnitude perturbation of a cell of value ``X`` whose largest contributions (by absolute value;
a holding's units summed, as for the primary rules) are ``x_1 >= x_2 >= ... >= x_k``:

* for ``j = 1..k`` the noise amplitude is ``x_delta_j = p · epsilon_j · x_j`` (cellKey's
  ``.x_delta_simple``: ``epsilon_1 = 1``, decreasing), capped at ``|X'|``, the cell's running value
  (cellKey's rescaling when ``|X'| < x_delta``);
* the j-th noise factor ``v_j`` is looked up by inverse CDF in the perturbation table ``ptable``
  (:class:`~sdc_dagster.protect.ptable.PerturbationTable`, its last, unconstrained row: mean 0,
  variance V, bounded by D) at the key ``ck_j``: ``ck_1`` is the cell key and ``ck_j`` the cell key
  with its digits shifted ``j - 1`` places (cellKey's ``.scramble_ckeys``), computed exactly on the
  integer key sum ``s`` as ``(10^(j-1) · s mod M) / M``;
* ``X' <- X' + sign(X') · x_delta_j · v_j``, never past zero (cellKey: a negative step stops at
  ``-X'``); the published value is ``X'`` after the k steps.

Counts of the same table are perturbed by the count method, through its own lookup
(:meth:`PerturbationTable.lookup` of ``count_ptable`` at the same cell keys, SPEC §8.11).
Not offered: cellKey's flex function, even/odd and small-cell p-tables, ``mu_c`` and the
``mean``/``range``/``sum`` variants.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.frequencies import connect
from sdc_dagster.protect.cellkey import assign_record_keys, record_key_addends
from sdc_dagster.protect.ptable import PerturbationTable
from sdc_dagster.tables.model import cover_pairs, tabulate
from sdc_dagster.tables.primary import contributor_statistics
from sdc_dagster.validation import check_scalar

#: cellKey's bound on ``top_k``.
MAX_TOP_K = 6


def _checked_epsilon(epsilon, top_k: int) -> np.ndarray:
    values = np.asarray([1.0] if epsilon is None else list(epsilon), dtype=np.float64)
    if len(values) != top_k:
        raise SDCInputError(f"epsilon: needs one weight per top contribution ({top_k}), got {len(values)}")
    if values[0] != 1 or (values < 0).any() or (values > 1).any() or (np.diff(values) > 0).any():
        raise SDCInputError(f"epsilon: must start at 1 and decrease within [0, 1] (cellKey), got {values.tolist()}")
    return values


def _cell_key_sums(table, inner_of_record: np.ndarray, addends: np.ndarray, modulus: int) -> np.ndarray:
    """Per published row of ``table`` the sum of its records' key addends mod ``modulus`` (DuckDB)."""
    db = connect()
    db.register("sdc_ckm_records", pd.DataFrame({"inner_cell": inner_of_record, "addend": addends}))
    db.register("sdc_ckm_cover", cover_pairs(table.matrix))
    try:
        sums = db.execute(
            f"""
            WITH per_inner AS (SELECT inner_cell, sum(addend) % {modulus} AS s FROM sdc_ckm_records GROUP BY inner_cell)
            SELECT c.row, CAST(sum(p.s) % {modulus} AS BIGINT) AS s
            FROM per_inner p JOIN sdc_ckm_cover c USING (inner_cell) GROUP BY c.row
            """
        ).df()
    finally:
        db.unregister("sdc_ckm_records")
        db.unregister("sdc_ckm_cover")
    out = np.zeros(table.matrix.shape[0], dtype=np.int64)
    out[sums["row"].to_numpy()] = sums["s"].to_numpy(dtype=np.int64)
    return out


def shifted_keys(key_sums: np.ndarray, modulus: int, shift: int) -> np.ndarray:
    """The keys ``(10^shift · s mod M) / M`` in [0, 1) of key sums ``s`` (cellKey's digit shift of
    ``.scramble_ckeys``, exact on integers; ``shift = 0`` is the cell key itself)."""
    factor = pow(10, int(shift), int(modulus))
    shifted = (key_sums.astype(object) * factor) % int(modulus)  # Python integers: no overflow
    return shifted.astype(np.float64) / modulus


def cell_key_magnitude(
    data: pd.DataFrame,
    dimensions: Mapping[str, pd.DataFrame | None],
    *,
    value: str,
    ptable: PerturbationTable,
    p: float,
    top_k: int = 1,
    epsilon: Sequence[float] | None = None,
    record_key: str | None = None,
    n_key: int | None = None,
    seed: int | None = None,
    holding: str | None = None,
    count_ptable: PerturbationTable | None = None,
) -> pd.DataFrame:
    """The magnitude table of ``data`` over ``dimensions`` perturbed by the cell key method.

    Parameters
    ----------
    data, dimensions, value, holding
        As :func:`~sdc_dagster.tables.tabulate` (microdata, one row per record).
    ptable
        The noise distribution (its last row: mean 0, variance V, values -D..D).
    p
        Noise percentage as a share, 0 < p <= 1 (cellKey ``ck_simpleparams(p)``).
    top_k, epsilon
        The k largest contributions perturbed (1..6) and their weights (``epsilon_1 = 1``,
        decreasing; default ``[1]``).
    record_key, n_key
        A column of record keys (integers 1..``n_key``, or uniform in [0, 1) with ``n_key=None``);
    seed
        or, instead, the seed the keys are drawn with (:func:`~sdc_dagster.protect.cellkey.assign_record_keys`).
    count_ptable
        When given, the counts are perturbed too, by the count method at the same cell keys.

    Returns
    -------
    pandas.DataFrame
        One row per published cell (as ``Table.cells``): the dimension columns, ``freq``, ``value``,
        ``cell_key``, ``perturbation`` and ``perturbed_value``; with ``count_ptable`` also
        ``perturbed_freq``. ``attrs["parameters"]`` records p, top_k, epsilon, D, V, the key form
        and the seed (None when the keys were given), as the grid release records its seeds.
    """
    if (record_key is None) == (seed is None):
        raise SDCInputError("cell_key_magnitude: give either record_key (a column of record keys) or seed (to draw them)")
    if not isinstance(ptable, PerturbationTable) or (count_ptable is not None and not isinstance(count_ptable, PerturbationTable)):
        raise SDCInputError("ptable, count_ptable: must be PerturbationTables (protect.ptable.perturbation_table)")
    p = check_scalar(p, "p", low=0, high=1, closed="right")
    top_k = check_scalar(top_k, "top_k", integer=True, low=1, high=MAX_TOP_K)
    weights = _checked_epsilon(epsilon, int(top_k))
    if seed is not None:
        seed = check_scalar(seed, "seed", integer=True, low=0)
        data = data.assign(sdc_record_key=assign_record_keys(data, n_key=n_key, random_state=int(seed)))
        record_key = "sdc_record_key"
    addends, modulus = record_key_addends(data, record_key, n_key)

    by_record = tabulate(data, dimensions, value=value)  # one contribution per record: its inner cell
    table = by_record if holding is None else tabulate(data, dimensions, value=value, holding=holding)
    records = by_record.contributions.sort_values("unit")
    key_sums = _cell_key_sums(table, records["inner_cell"].to_numpy(), addends[records["unit"].to_numpy()], modulus)
    stats = contributor_statistics(table, int(top_k))

    last_row = np.full(len(key_sums), len(ptable.probabilities) - 1)
    current = table.cells["value"].to_numpy(dtype=np.float64).copy()
    for j in range(int(top_k)):  # at most six steps, each over all cells at once
        noise = ptable.lookup(last_row, shifted_keys(key_sums, modulus, j))
        amplitude = np.minimum(p * weights[j] * stats[f"x{j + 1}"].to_numpy(), np.abs(current))
        step = np.sign(current) * amplitude * noise
        crosses = np.sign(current + step) == -np.sign(current)
        current = np.where(crosses, 0.0, current + step)

    out = table.cells.copy()
    out["cell_key"] = key_sums / modulus
    out["perturbation"] = current - out["value"].to_numpy()
    out["perturbed_value"] = current
    if count_ptable is not None:
        counts = by_record.cells["freq"].to_numpy(dtype=np.int64)
        out["perturbed_freq"] = counts + count_ptable.lookup(counts, key_sums / modulus)
    out.attrs["parameters"] = {
        "method": "cell key, top contributions (cellKey top_contr, simple parameters)",
        "p": float(p), "top_k": int(top_k), "epsilon": weights.tolist(),
        "max_deviation": ptable.max_deviation, "variance": ptable.variance,
        "record_keys": "uniform [0, 1)" if n_key is None else f"integers 1..{n_key}",
        "seed": None if seed is None else int(seed),
    }
    return out
