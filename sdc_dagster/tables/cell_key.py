"""The cell key method for magnitude tables (ABS / ONS / Destatis; tau-Argus, sdcTools cellKey).

Thompson, Broadfoot and Elazar (2013), "Methodology for the automatic confidentialisation of
statistical outputs from remote servers at the Australian Bureau of Statistics"; Giessing and Tent
(2019), "Concepts for generalising tools implementing the cell key method to the case of continuous
variables" (UNECE SDC work session); the Handbook on SDC (Hundepool et al., current edition,
§4 "Cell Key Method for Magnitude Tables", worked example); the cellKey R package (Enderle,
Giessing and Tent: ``ck_params_nums(type = "top_contr")`` with ``ck_simpleparams(p, epsilon)``).

Every record carries a random record key; the cell key of a published cell is the sum of its
records' keys modulo 1 (:func:`~sdc_dagster.protect.cellkey.record_key_addends`, the same keys and
sum as the count method), so a cell gets the same noise in every table it appears in.

A cell of value ``X`` whose largest contributions (by absolute value; a holding's units summed, as
for the primary rules) are ``x_1 >= x_2 >= ... >= x_k`` is perturbed in k steps, ``X' = X`` first:

* step j adds ``sign(X') · delta_j · x_j · v_j`` with ``delta_j = delta · epsilon_j`` (the
  Handbook's ``x^ = x + delta · x_max · v``; cellKey's ``p`` and ``epsilon``, ``epsilon_1 = 1``);
* the noise ``v_j`` is looked up in the perturbation table ``ptable``
  (:class:`~sdc_dagster.protect.ptable.PerturbationTable`) at the row ``r = |X'| / (delta_j · x_j)``
  (rows past the last use the last): row i only holds noises ``v >= -i``, so ``X'`` never changes
  sign. A fractional ``r`` between rows ``a = floor(r)`` and ``a + 1`` takes
  ``v = (a + 1 - r) · v_a + (r - a) · v_(a+1)`` (the Handbook's interpolation, as tau-Argus);
* ``v_j`` is read at the key ``ck_j``: ``ck_1`` is the cell key, ``ck_j`` the cell key with its
  digits shifted ``j - 1`` places (cellKey's ``.scramble_ckeys``), computed exactly on the integer
  key sum ``s`` as ``(10^(j-1) · s mod M) / M``.

The lookup is the count method's (:meth:`PerturbationTable.lookup`: the noise ``d`` with
``F(d - 1) <= u < F(d)``, as cellKey; the Handbook writes ``F(d - 1) < u <= F(d)``, which differs
only for a key exactly on a bound). Counts of the same table are perturbed by the count method at the
same cell keys (``count_ptable``, SPEC §8.11). Not offered: cellKey's flex function, even/odd and
small-cell p-tables, ``mu_c`` and the ``mean``/``range``/``sum`` variants.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.frequencies import connect
from sdc_dagster.protect.cellkey import FIXED_POINT_SCALE, assign_record_keys, record_key_addends
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
    factor = np.uint64(pow(10, int(shift), int(modulus)))
    # both factors are below the modulus (at most 2^32): the product fits in 64 bits
    shifted = (key_sums.astype(np.uint64) * factor) % np.uint64(modulus)
    return shifted.astype(np.float64) / modulus


# over 10 parameters, kept: public (exported by sdc_dagster.tables), keyword-only, the cell key method's published
# parameters (ptable, delta, top_k, epsilon, record keys)
def cell_key_magnitude(
    data: pd.DataFrame,
    dimensions: Mapping[str, pd.DataFrame | None],
    *,
    value: str,
    ptable: PerturbationTable,
    delta: float,
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
        The noise distributions by row (:func:`~sdc_dagster.protect.ptable.perturbation_table`, or
        any :class:`PerturbationTable`; row i must not hold noises below -i).
    delta
        The noise amplitude as a share of the largest contribution, 0 < delta <= 1 (the Handbook's
        ``delta``, cellKey's ``ck_simpleparams(p)``).
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
        ``perturbed_freq``. ``attrs["parameters"]`` records delta, top_k, epsilon, D, V, the key form
        and the seed (None when the keys were given), as the grid release records its seeds.
    """
    if (record_key is None) == (seed is None):
        raise SDCInputError("cell_key_magnitude: give either record_key (a column of record keys) or seed (to draw them)")
    if not isinstance(ptable, PerturbationTable) or (count_ptable is not None and not isinstance(count_ptable, PerturbationTable)):
        raise SDCInputError("ptable, count_ptable: must be PerturbationTables (protect.ptable.perturbation_table)")
    delta = check_scalar(delta, "delta", low=0, high=1, closed="right")
    top_k = check_scalar(top_k, "top_k", integer=True, low=1, high=MAX_TOP_K)
    weights = _checked_epsilon(epsilon, int(top_k))
    if seed is not None:
        seed = check_scalar(seed, "seed", integer=True, low=0)
        data = data.assign(sdc_record_key=assign_record_keys(data, n_key=n_key, random_state=int(seed)))
        record_key = "sdc_record_key"
    addends, modulus = record_key_addends(data, record_key, n_key)
    if modulus > FIXED_POINT_SCALE:
        raise SDCInputError(f"n_key: at most 2^32 for the keys of the top contributions, got {n_key}")

    by_record = tabulate(data, dimensions, value=value)  # one contribution per record: its inner cell
    table = by_record if holding is None else tabulate(data, dimensions, value=value, holding=holding)
    records = by_record.contributions.sort_values("unit")
    key_sums = _cell_key_sums(table, records["inner_cell"].to_numpy(), addends[records["unit"].to_numpy()], modulus)
    stats = contributor_statistics(table, int(top_k))

    top_row = len(ptable.probabilities) - 1
    current = table.cells["value"].to_numpy(dtype=np.float64).copy()
    for j in range(int(top_k)):  # at most six steps, each over all cells at once
        amplitude = delta * weights[j] * stats[f"x{j + 1}"].to_numpy()
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # capped at the last row
            row = np.where(amplitude > 0, np.minimum(np.abs(current) / amplitude, top_row), 0.0)
        below = np.floor(row).astype(np.int64)
        share = row - below
        keys = shifted_keys(key_sums, modulus, j)
        noise = (1 - share) * ptable.lookup(below, keys) + share * ptable.lookup(np.minimum(below + 1, top_row), keys)
        current = current + np.sign(current) * amplitude * noise

    out = table.cells.copy()
    out["cell_key"] = key_sums / modulus
    out["perturbation"] = current - out["value"].to_numpy()
    out["perturbed_value"] = current
    if count_ptable is not None:
        counts = by_record.cells["freq"].to_numpy(dtype=np.int64)
        out["perturbed_freq"] = counts + count_ptable.lookup(counts, key_sums / modulus)
    out.attrs["parameters"] = {
        "method": "cell key for magnitudes, top contributions (Handbook, cellKey top_contr)",
        "delta": float(delta), "top_k": int(top_k), "epsilon": weights.tolist(),
        "max_deviation": ptable.max_deviation, "variance": ptable.variance,
        "record_keys": "uniform [0, 1)" if n_key is None else f"integers 1..{n_key}",
        "seed": None if seed is None else int(seed),
    }
    return out
