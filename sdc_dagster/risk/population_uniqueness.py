"""Population uniqueness from the sample's class sizes (ARX's population-based uniqueness risk).

The records are grouped by their keys (a missing value is a category of its own, as ARX reads it);
c_j is the number of classes of j records, u = sum_j c_j the number of classes, n the sample size,
N the population size and f = n / N the sampling fraction. Two estimates of the number of
population uniques, as ARX computes them (``RiskModelPopulationUniqueness``):

* **Pitman** (Hoshino 2001): the class sizes follow Pitman's two-parameter sampling formula. The
  maximum-likelihood (theta, alpha) maximise

      L = sum_{i=1}^{u-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i)
          + sum_j c_j sum_{k=1}^{j-1} log(k - alpha),

  maximised inside 0 < alpha < 1, theta > 0 (see :func:`_pitman_parameters`); the expected
  number of population uniques is Gamma(theta + 1) / Gamma(theta + alpha) N^alpha (not available,
  NaN, when the maximum is not inside that region or the estimate not in [0, N]).
* **Zayatz** (1991): with P_j = P(X = 1) for X hypergeometric (N units, j of them in the class, n
  drawn), the chance that a sample unique is a population unique is
  c_1 P_1 / sum_j c_j P_j, and the number of population uniques is c_1 times that over f.

ARX's third model, SNB (Chen & Keller-McNulty 1998), and Dankar et al.'s rule choosing among the
three (which needs SNB when f > 0.1) are not implemented: ARX's SNB moment equation for c_2
multiplies by (1 - d)^(alpha + 2) where the Jacobian it hands to Newton's method divides by it, and
its Shlosser estimate of the number of population classes subtracts 1 per class size inside a sum
where Haas & Stokes (1998) subtract it inside the bracket, so there is no settled formula to follow.

References
----------
Hoshino, N. (2001), "Applying Pitman's sampling formula to microdata disclosure risk assessment",
JOS 17(4), 499-520. Zayatz, L. (1991), "Estimation of the percent of unique population elements on
a microdata file using the sample", US Census Bureau SRD Report RR-91/08. Dankar, F. K., El Emam, K.,
Neisa, A. & Roffey, T. (2012), "Estimating the re-identification risk of clinical data sets", BMC
Medical Informatics and Decision Making 12:66. ARX ``ModelPitman``, ``ModelZayatz``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from sdc_dagster.errors import SDCInputError
from sdc_dagster.risk.frequencies import distinct_keys
from sdc_dagster.keys import key_columns
from sdc_dagster.validation import check_scalar


@dataclass(frozen=True)
class PopulationUniqueness:
    """Estimated population uniques (numbers of units; NaN where the model gives no estimate).

    ``pitman``, ``zayatz``: the estimates; ``pitman_theta``, ``pitman_alpha``: the fitted
    parameters; ``sample_uniques`` c_1, ``classes`` u, ``sample_size`` n, ``population_size`` N.
    Divide an estimate by N for ARX's "fraction of unique tuples".
    """

    pitman: float
    zayatz: float
    pitman_theta: float
    pitman_alpha: float
    sample_uniques: int
    classes: int
    sample_size: int
    population_size: int


def population_uniqueness(data: pd.DataFrame, keys: Sequence[str], *, population_size: int) -> PopulationUniqueness:
    """Pitman's and Zayatz's estimates of the number of population uniques (module docstring).

    Parameters
    ----------
    data : the sample (not modified).
    keys : the key variables.
    population_size : N, an integer >= the number of records.

    Raises
    ------
    SDCInputError : unknown keys, no record, N not an integer >= n.
    """
    keys = key_columns(data, keys)
    n = len(data)
    if n == 0:
        raise SDCInputError("population_uniqueness: the data have no record")
    population = check_scalar(population_size, "population_size", integer=True, low=n)
    sizes = distinct_keys(data, keys).count.astype(np.int64)
    size, count = np.unique(sizes, return_counts=True)
    c1 = int(count[size == 1].sum())
    u = int(count.sum())
    if c1 == 0:  # no sample unique: no population unique either (ARX)
        theta = alpha = math.nan
        pitman = zayatz = 0.0
    else:
        theta, alpha = _pitman_parameters(size, count, n, u, c1, int(count[size == 2].sum()))
        pitman = _pitman_uniques(theta, alpha, population)
        zayatz = _zayatz_uniques(size, count, n, population)
    return PopulationUniqueness(
        pitman=pitman, zayatz=zayatz, pitman_theta=theta, pitman_alpha=alpha,
        sample_uniques=c1, classes=u, sample_size=n, population_size=population,
    )


def _zayatz_uniques(size: np.ndarray, count: np.ndarray, n: int, population: int) -> float:
    """c_1 * (c_1 P_1 / sum_j c_j P_j) / f, P_j = hypergeometric P(X = 1 | N, j, n) (ARX
    ``ModelZayatz``, which takes the sample class size j as the class's size in the population)."""
    p = stats.hypergeom.pmf(1, population, size, n)
    c1 = float(count[size == 1].sum())
    conditional = c1 * float(p[size == 1].sum()) / float(np.dot(count, p))
    return c1 * conditional * population / n


def _pitman_score(theta: float, alpha: float, size, count, n: int, u: int, *, hessian: bool = True):
    """Score and Hessian (None unless ``hessian``) of Pitman's log-likelihood in (theta, alpha)
    (closed forms with digamma and trigamma, as ARX's ``getMasterFunctionClosed``)."""
    r = theta / alpha
    psi_u, psi_1 = special.digamma(r + u), special.digamma(r + 1)
    # sum_{i=1}^{u-1} 1/(theta + i alpha) and sum i/(theta + i alpha)
    s0 = (psi_u - psi_1) / alpha
    s1 = ((u - 1) - r * (psi_u - psi_1)) / alpha
    big = size > 1
    o4 = float(np.dot(count[big], special.digamma(size[big] - alpha) - special.digamma(1 - alpha)))
    o2 = special.digamma(n + theta) - special.digamma(theta + 1)
    score = np.array([s0 - o2, s1 - o4])
    if not hessian:
        return score, None
    tri_u, tri_1 = special.polygamma(1, r + u), special.polygamma(1, r + 1)
    # their derivatives: sums of 1/(.)^2, i/(.)^2, i^2/(.)^2
    q0 = (tri_1 - tri_u) / alpha**2
    q1 = (psi_u - psi_1 - r * (tri_1 - tri_u)) / alpha**2
    q2 = ((u - 1) - 2 * r * (psi_u - psi_1) + r * r * (tri_1 - tri_u)) / alpha**2
    d4 = float(np.dot(count[big], special.polygamma(1, 1 - alpha) - special.polygamma(1, size[big] - alpha)))
    d2 = special.polygamma(1, theta + 1) - special.polygamma(1, n + theta)
    return score, np.array([[d2 - q0, -q1], [-q1, -q2 - d4]])


def _pitman_log_likelihood(theta: float, alpha: float, size, count, n: int, u: int) -> float:
    """L(theta, alpha) of the module docstring, its sums in closed form with log-gamma:
    sum_{i=1}^{u-1} log(theta + i alpha) = (u - 1) log alpha + lgamma(theta/alpha + u) - lgamma(theta/alpha + 1),
    sum_{i=1}^{n-1} log(theta + i) = lgamma(theta + n) - lgamma(theta + 1),
    sum_{k=1}^{j-1} log(k - alpha) = lgamma(j - alpha) - lgamma(1 - alpha)."""
    r = theta / alpha
    big = size > 1
    return float(
        (u - 1) * math.log(alpha) + special.gammaln(r + u) - special.gammaln(r + 1)
        - special.gammaln(theta + n) + special.gammaln(theta + 1)
        + np.dot(count[big], special.gammaln(size[big] - alpha) - special.gammaln(1 - alpha))
    )



def _pitman_parameters(size, count, n: int, u: int, c1: int, c2: int) -> tuple[float, float]:
    """Maximum-likelihood (theta, alpha) of Pitman's sampling formula; (NaN, NaN) when the maximum
    is not inside 0 < alpha < 1, theta > 0.

    ARX runs Newton's method on the score from its moment-type starting point (c = c_1 (c_1 - 1) / c_2,
    theta_0 = (n u c - c_1 (n - 1)(2u + c)) / (2 c_1 u + c_1 c - n c), alpha_0 = (theta_0 (c_1 - n)
    + (n - 1) c_1) / (n u)), which can leave the admissible region (on skewed keys alpha_0 < 0); here
    the likelihood is maximised inside it (BFGS over log theta and logit alpha, from that point moved
    inside), then Newton's method polishes the maximum. Where ARX's Newton converges to the
    admissible root, both agree."""
    c2 = c2 if c2 else 1  # ARX: over-estimate when there is no class of two
    c = c1 * (c1 - 1) / c2
    denominator = 2 * c1 * u + c1 * c - n * c
    theta0 = (n * u * c - c1 * (n - 1) * (2 * u + c)) / denominator if denominator else math.nan
    alpha0 = (theta0 * (c1 - n) + (n - 1) * c1) / (n * u) if np.isfinite(theta0) else math.nan
    theta0 = theta0 if np.isfinite(theta0) and theta0 > 0 else 1.0
    alpha0 = min(max(alpha0, 0.01), 0.99) if np.isfinite(alpha0) else 0.5

    def objective(x):  # x = (log theta, logit alpha): both unbounded and of like scale
        theta, alpha = math.exp(x[0]), special.expit(x[1])
        score, _ = _pitman_score(theta, alpha, size, count, n, u, hessian=False)
        gradient = score * np.array([theta, alpha * (1 - alpha)])
        return -_pitman_log_likelihood(theta, alpha, size, count, n, u), -gradient

    with np.errstate(all="ignore"):
        found = optimize.minimize(objective, [math.log(theta0), special.logit(alpha0)], jac=True, method="BFGS")
        start = [math.exp(found.x[0]), float(special.expit(found.x[1]))]
        polished = optimize.root(lambda x: _pitman_score(x[0], x[1], size, count, n, u)[0], start,
                                 jac=lambda x: _pitman_score(x[0], x[1], size, count, n, u)[1], method="hybr")
    theta, alpha = (float(v) for v in polished.x)
    if not polished.success or not (0 < alpha < 1 and theta > 0):
        return math.nan, math.nan
    return theta, alpha


def _pitman_uniques(theta: float, alpha: float, population: int) -> float:
    """Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha (Hoshino 2001), NaN outside [0, N]."""
    if math.isnan(theta):
        return math.nan
    value = math.exp(special.gammaln(theta + 1) - special.gammaln(theta + alpha) + alpha * math.log(population))
    return value if 0 <= value <= population else math.nan
