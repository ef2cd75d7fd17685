"""Perturbation tables of the cell key method (SPEC §8.11, :mod:`sdc_dagster.protect.cellkey`).

Perturbation table (OPEN in the seed, which only says "values +1 and -1"), with the parameters of
the sdcTools ``ptable`` package: maximum deviation D, variance V and threshold js. Row i (original
count i) is the maximum-entropy distribution with mean 0 and variance V on the perturbations d with
|d| <= D, i + d >= 0 and i + d not in 1..js (``ptable``'s blocking of small frequencies: no
published count in 1..js). Row 0 is the point mass at 0, so zeros stay zeros; rows 0..D + js (+1
when js > 0) are built and larger counts use the last row, which is unconstrained. This follows
the design constraints of ``ptable`` (unbiased, fixed variance, bounded by D, non-negative results,
js) with a maximum-entropy solution instead of ptable's optimisation. When V is not attainable on a
row's support (a mean-0 distribution on a support with smallest value a < 0 and largest b has
variance at most -a·b, and at least -a'·b' when 0 is excluded, a' and b' the values next to 0), the
row takes the variance 10% inside that range (at most 90% of the bound when 0 is allowed), where
the maximum-entropy solution stays well conditioned; :attr:`PerturbationTable.row_variance`
reports the variance each row really has.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.validation import check_scalar

#: Share of the attainable variance used when V cannot be reached on a truncated row.
ATTAINABLE_VARIANCE_SHARE = 0.9


@dataclass(frozen=True)
class PerturbationTable:
    """p-table: row i (count i; larger counts use the last row) is a distribution over -D..D.

    Attributes
    ----------
    max_deviation
        D, the largest absolute perturbation.
    variance
        V, the target variance of the perturbations.
    probabilities
        Array of shape (rows, 2D + 1); column j is the perturbation j - D; rows = D + 1 + js
        (+1 when js > 0).
    threshold
        js: no perturbed count lies in 1..js.
    """

    max_deviation: int
    variance: float
    probabilities: np.ndarray = field(repr=False)
    threshold: int = 0

    @property
    def perturbations(self) -> np.ndarray:
        """The perturbation values -D..D (the columns of :attr:`probabilities`)."""
        return np.arange(-self.max_deviation, self.max_deviation + 1)

    @property
    def row_mean(self) -> np.ndarray:
        """Mean perturbation of each row (0 by construction)."""
        return self.probabilities @ self.perturbations

    @property
    def row_variance(self) -> np.ndarray:
        """Variance of the perturbation in each row (V where attainable)."""
        d = self.perturbations
        return self.probabilities @ (d * d) - self.row_mean**2

    def to_frame(self) -> pd.DataFrame:
        """The table as rows ``i`` by columns ``d`` (perturbation), for display and export."""
        return pd.DataFrame(
            self.probabilities,
            index=pd.RangeIndex(len(self.probabilities), name="i"),
            columns=pd.Index(self.perturbations, name="d"),
        )

    def to_ons_frame(self, *, n_keys: int = 256, max_pcv: int = 750) -> pd.DataFrame:
        """The table in the ONS form: columns ``pcv`` (1..max_pcv), ``ckey`` (0..n_keys-1), ``pvalue``.

        pvalue(pcv, ckey) is the perturbation of a count pcv whose cell key maps to
        u = (ckey + 0.5) / n_keys (inverse CDF, :meth:`lookup`).
        """
        if max_pcv < len(self.probabilities):
            raise SDCInputError(f"parameter max_pcv: must be at least {len(self.probabilities)} (the rows of the table)")
        check_scalar(n_keys, "n_keys", integer=True, low=2)
        pcv = np.repeat(np.arange(1, max_pcv + 1, dtype=np.int64), n_keys)
        ckey = np.tile(np.arange(n_keys, dtype=np.int64), max_pcv)
        pvalue = self.lookup(pcv, (ckey + 0.5) / n_keys)
        return pd.DataFrame({"pcv": pcv, "ckey": ckey, "pvalue": pvalue})

    def lookup(self, values, cell_keys) -> np.ndarray:
        """Perturbations for cells with counts ``values`` and cell keys ``cell_keys`` in [0, 1).

        Parameters
        ----------
        values
            Non-negative integer cell counts.
        cell_keys
            Cell keys mapped to [0, 1).

        Returns
        -------
        numpy.ndarray
            int64 perturbations, one per cell.
        """
        values = np.asarray(values, dtype=np.int64)
        keys = np.asarray(cell_keys, dtype=np.float64)
        if values.shape != keys.shape:
            raise SDCInputError("cell values and cell keys: must have the same length")
        if (values < 0).any():
            raise SDCInputError("cell values: counts must be non-negative")
        if ((keys < 0) | (keys >= 1)).any():
            raise SDCInputError("cell keys: must lie in [0, 1)")
        cumulative = np.cumsum(self.probabilities, axis=1)
        cumulative[:, -1] = 1.0  # guard against rounding leaving u just above the last bound
        rows = np.minimum(values, len(self.probabilities) - 1)
        # Inverse CDF: the number of bounds F(d) <= u is the column of the d with F(d-1) <= u < F(d);
        # zero-probability columns (below -i) have F = 0 and are always passed over.
        column = (keys[:, None] >= cumulative[rows]).sum(axis=1)
        return self.perturbations[column].astype(np.int64)


def _max_entropy_row(support: np.ndarray, variance: float) -> np.ndarray:
    """Maximum-entropy distribution on ``support`` with mean 0 and the given variance."""
    if variance == 0:
        return (support == 0).astype(np.float64)
    features = np.column_stack([support, support.astype(np.float64) ** 2])
    target = np.array([0.0, variance])

    def dual(theta):
        z = features @ theta
        shift = z.max()
        weights = np.exp(z - shift)
        total = weights.sum()
        p = weights / total
        moments = p @ features
        value = shift + np.log(total) - theta @ target
        centred = features - moments
        hessian = (centred * p[:, None]).T @ centred
        return value, moments - target, hessian

    # Damped Newton on the convex dual (log-partition minus theta . target); two unknowns.
    theta = np.zeros(2)
    value, gradient, hessian = dual(theta)
    for _ in range(200):
        if np.abs(gradient).max() < 1e-12:
            break
        step = np.linalg.solve(hessian + 1e-12 * np.eye(2), gradient)
        scale = 1.0
        while scale > 1e-10:
            candidate = theta - scale * step
            cand_value, cand_gradient, cand_hessian = dual(candidate)
            # Near the optimum the dual is flat to machine precision; a smaller gradient also counts.
            if cand_value < value or np.abs(cand_gradient).max() < np.abs(gradient).max():
                break
            scale /= 2
        theta, value, gradient, hessian = candidate, cand_value, cand_gradient, cand_hessian
    z = features @ theta
    p = np.exp(z - z.max())
    p /= p.sum()
    moments = p @ features
    if abs(moments[0]) > 1e-8 or abs(moments[1] - variance) > 1e-8:
        raise SDCInputError(
            f"p-table: no maximum-entropy row with variance {variance} on support {support.tolist()}"
        )
    return p


def _row_support(i: int, d_max: int, threshold: int) -> np.ndarray:
    """Perturbations allowed for count i: |d| <= D, i + d >= 0, i + d not in 1..js."""
    d = np.arange(-min(i, d_max), d_max + 1)
    result = i + d
    return d[(result == 0) | (result > threshold)]


def _attainable_variance(support: np.ndarray, variance: float) -> float:
    """V moved 10% inside the range of variances a mean-0 distribution on ``support`` can have."""
    negative, positive = support[support < 0], support[support > 0]
    high = float(-negative.min() * positive.max())
    low = 0.0 if (support == 0).any() else float(-negative.max() * positive.min())
    return float(np.clip(variance, low + 0.1 * (high - low), low + 0.9 * (high - low)))


def perturbation_table(max_deviation: int, variance: float, *, threshold: int = 0) -> PerturbationTable:
    """Build the p-table for maximum deviation D, variance V and threshold js (SPEC §8.11 step 3).

    Parameters
    ----------
    max_deviation
        D >= 1: perturbations lie in -D..D.
    variance
        V > 0: target variance of the perturbation of every count (rows with a short support
        get the nearest well-conditioned variance, see the module docstring).
    threshold
        js, 0 <= js < D (sdcTools ptable): no perturbed count lies in 1..js; 0 blocks nothing.

    Returns
    -------
    PerturbationTable
        Rows 0..D + js (+1 when js > 0); row 0 is the point mass at 0; every row has mean 0, never
        takes a count below 0 nor into 1..js.

    References
    ----------
    SPEC §8.11; Enderle, Giessing, Tent (2018), "Designing confidentiality on the fly: the cell key
    method" / sdcTools ptable package (parameters D, V, js and the constraints of the table).
    """
    d_max = check_scalar(max_deviation, "max_deviation", integer=True, low=1)
    check_scalar(variance, "variance", low=0, closed="neither")
    if variance >= d_max * d_max:
        raise SDCInputError(
            f"parameter variance: {variance} is not below D^2 = {d_max * d_max}, the largest variance of "
            "a mean-0 perturbation bounded by D"
        )
    js = check_scalar(threshold, f"threshold (js, below D = {d_max})", integer=True, low=0, high=d_max, closed="left")
    n_rows = d_max + js + 1 + (1 if js > 0 else 0)
    table = np.zeros((n_rows, 2 * d_max + 1))
    table[0, d_max] = 1.0  # zeros stay zeros
    for i in range(1, n_rows):  # D + js rows, never records
        support = _row_support(i, d_max, js)
        row = _max_entropy_row(support, _attainable_variance(support, variance))
        table[i, support + d_max] = row
    return PerturbationTable(max_deviation=d_max, variance=float(variance), probabilities=table, threshold=js)
