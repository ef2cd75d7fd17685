"""Population uniqueness from the sample's class sizes (ARX's population-based uniqueness risk).

The records are grouped by their keys (a missing value is a category of its own, as ARX reads it);
c_j is the number of classes of j records, u = sum_j c_j the number of classes, n the sample size,
N the population size and f = n / N the sampling fraction. Three estimates of the number of
population uniques, as ARX computes them (``RiskModelPopulationUniqueness``), and Dankar et al.'s
rule choosing among them:

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
* **SNB**, the shifted negative binomial model (Chen & Keller-McNulty 1998): each of the K non-empty
  population classes has F = 1 + G units, G negative binomial, P(G = g) = C(g + alpha - 1, g)
  beta^alpha (1 - beta)^g, and the sample draws each unit with probability f. With d = (1 - f)(1 - beta),
  the expected numbers of sample classes of one and two records are (the probability generating
  function of G at 1 - f and its derivatives)

      E c_1 = K f (beta / (1 - d))^alpha (1 + alpha d / (1 - d)),
      E c_2 = K f^2 alpha beta^alpha (1 - beta) (2 - (1 - alpha) d) / (2 (1 - d)^(alpha + 2)),

  (alpha, beta) solve E c_1 = c_1, E c_2 = c_2 (method of moments, alpha > 0, 0 < beta < 1; NaN
  without such a solution, e.g. when no class has two records), and the population uniques are
  K P(F = 1) = K beta^alpha. K is Shlosser's estimate of the number of population classes in Haas
  & Stokes' (1998) form D_Sh3:

      K = u + c_1 [sum_j j f^2 (1 - f^2)^(j-1) c_j / sum_j (1 - f)^j ((1 + f)^j - 1) c_j]
            [sum_j (1 - f)^j c_j / sum_j j f (1 - f)^(j-1) c_j]^2.

* **Dankar** et al. (2012, the rule ARX implements): with f <= 0.1 Pitman's estimate where it is
  available (a number, not 0), else Zayatz's; with f > 0.1 the smaller of Zayatz's and SNB's where
  SNB's is available, else Zayatz's.

Deviations from ARX 3.9 (``ModelSNB``), where its code departs from the formulas it cites: its c_2
equation multiplies by (1 - d)^(alpha + 2) where the model divides (the Jacobian it hands to
Newton's method, and ARX's earlier ``AlgorithmNewtonSNB``, divide), and its Shlosser sum subtracts 1
once per class size, sum_j [(1 - f)^j (1 + f)^j c_j - 1], where Haas & Stokes subtract inside the
bracket, sum_j (1 - f)^j ((1 + f)^j - 1) c_j. Here both follow the papers, so SNB's estimates (and
Dankar's where it picks SNB) differ from ARX's.

References
----------
Hoshino, N. (2001), "Applying Pitman's sampling formula to microdata disclosure risk assessment",
JOS 17(4), 499-520. Zayatz, L. (1991), "Estimation of the percent of unique population elements on
a microdata file using the sample", US Census Bureau SRD Report RR-91/08. Dankar, F. K., El Emam, K.,
Neisa, A. & Roffey, T. (2012), "Estimating the re-identification risk of clinical data sets", BMC
Medical Informatics and Decision Making 12:66. Chen, G. & Keller-McNulty, S. (1998), "Estimation of
identification disclosure risk in microdata", JOS 14(1), 79-95. Haas, P. J. & Stokes, L. (1998),
"Estimating the number of classes in a finite population", JASA 93(444), 1475-1487. ARX
``ModelPitman``, ``ModelZayatz``, ``ModelSNB``, ``RiskModelPopulationUniqueness``.
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

    ``pitman``, ``zayatz``, ``snb``: the estimates; ``dankar``: Dankar et al.'s choice among them,
    ``dankar_model`` the model it chose ("pitman", "zayatz", "snb"; "none" without a sample unique);
    ``pitman_theta``, ``pitman_alpha``, ``snb_alpha``, ``snb_beta``: the fitted parameters,
    ``snb_classes`` Shlosser's K; ``sample_uniques`` c_1, ``classes`` u, ``sample_size`` n,
    ``population_size`` N. Divide an estimate by N for ARX's "fraction of unique tuples".
    """

    pitman: float
    zayatz: float
    pitman_theta: float
    pitman_alpha: float
    sample_uniques: int
    classes: int
    sample_size: int
    population_size: int
    snb: float = math.nan
    snb_alpha: float = math.nan
    snb_beta: float = math.nan
    snb_classes: float = math.nan
    dankar: float = math.nan
    dankar_model: str = "none"

    @property
    def sampling_fraction(self) -> float:
        """f = n / N."""
        return self.sample_size / self.population_size


def population_uniqueness(data: pd.DataFrame, keys: Sequence[str], *, population_size: int) -> PopulationUniqueness:
    """Pitman's, Zayatz's and SNB's estimates of the number of population uniques, and Dankar et
    al.'s choice among them (module docstring).

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
        return PopulationUniqueness(
            pitman=0.0, zayatz=0.0, pitman_theta=math.nan, pitman_alpha=math.nan, sample_uniques=0, classes=u,
            sample_size=n, population_size=population, snb=0.0, dankar=0.0, dankar_model="none")
    c2 = int(count[size == 2].sum())
    theta, alpha = _pitman_parameters(size, count, n, u, c1, c2)
    pitman = _pitman_uniques(theta, alpha, population)
    zayatz = _zayatz_uniques(size, count, n, population)
    f = n / population
    classes = shlosser_classes(size, count, f)
    snb_alpha, snb_beta = snb_parameters(classes, f, c1, c2)
    snb = classes * snb_beta**snb_alpha if np.isfinite(snb_alpha) else math.nan
    dankar, model = dankar_choice(f, pitman=pitman, zayatz=zayatz, snb=snb)
    return PopulationUniqueness(
        pitman=pitman, zayatz=zayatz, pitman_theta=theta, pitman_alpha=alpha,
        sample_uniques=c1, classes=u, sample_size=n, population_size=population,
        snb=snb, snb_alpha=snb_alpha, snb_beta=snb_beta, snb_classes=classes, dankar=dankar, dankar_model=model,
    )


def _available(value: float) -> bool:
    """ARX's ``isValid``: an estimate that is a number and not 0."""
    return not math.isnan(value) and value != 0.0


def dankar_choice(f: float, *, pitman: float, zayatz: float, snb: float) -> tuple[float, str]:
    """Dankar et al.'s (2012) decision rule as ARX applies it (``getNumUniqueTuplesDankar``): for a
    sampling fraction f <= 0.1 Pitman's estimate where available (a number, not 0), else Zayatz's;
    for f > 0.1 Zayatz's when it is below SNB's, else SNB's, and Zayatz's when SNB's is not
    available. Returns the estimate and the model's name."""
    if f <= 0.1:
        return (pitman, "pitman") if _available(pitman) else (zayatz, "zayatz")
    if _available(snb) and not zayatz < snb:
        return snb, "snb"
    return zayatz, "zayatz"


def shlosser_classes(size: np.ndarray, count: np.ndarray, f: float) -> float:
    """Shlosser's estimate of the number of non-empty population classes in Haas & Stokes' (1998) form
    D_Sh3 (module docstring), from the classes of ``size`` j, ``count`` c_j of them, at sampling
    fraction f; u (the classes seen) when f = 1."""
    size = np.asarray(size, dtype=np.float64)
    count = np.asarray(count, dtype=np.float64)
    u = float(count.sum())
    c1 = float(count[size == 1].sum())
    unseen = np.dot((1 - f) ** size, count)
    if f >= 1 or unseen == 0:  # every unit drawn: no class unseen
        return u
    with np.errstate(under="ignore"):
        ratio = np.dot(size * f * f * (1 - f * f) ** (size - 1), count) / np.dot((1 - f) ** size * ((1 + f) ** size - 1),
                                                                                 count)
        scale = unseen / np.dot(size * f * (1 - f) ** (size - 1), count)
    return u + c1 * float(ratio) * float(scale) ** 2


def snb_moments(alpha: float, beta: float, classes: float, f: float) -> tuple[float, float]:
    """E c_1 and E c_2 of the shifted negative binomial model (module docstring) for K = ``classes``."""
    d = (1 - f) * (1 - beta)
    ratio = (beta / (1 - d)) ** alpha
    c1 = classes * f * ratio * (1 + alpha * d / (1 - d))
    c2 = classes * f * f * alpha * ratio * (1 - beta) * (2 - (1 - alpha) * d) / (2 * (1 - d) ** 2)
    return c1, c2


#: Starting points (alpha, beta) of the SNB moment equations: the solution is searched from each in
#: turn until one converges inside alpha > 0, 0 < beta < 1.
_SNB_STARTS = ((1.0, 0.5), (0.1, 0.1), (0.1, 0.9), (5.0, 0.5), (0.01, 0.01), (20.0, 0.9))


#: The largest log alpha the SNB solver evaluates (exp(700) is near the largest float), and the
#: residual it gets beyond it.
_LOG_ALPHA_MAX, _FAR = 700.0, 1e6


def snb_parameters(classes: float, f: float, c1: int, c2: int) -> tuple[float, float]:
    """(alpha, beta) of the SNB model solving E c_1 = c_1 and E c_2 = c_2 (:func:`snb_moments`) with
    alpha > 0, 0 < beta < 1, solved in (log alpha, logit beta) by scipy's least squares from each
    start of :data:`_SNB_STARTS` until the residuals vanish (1e-9 relative to c_1); (NaN, NaN)
    without such a solution (no class of two records, or f = 1)."""
    if c1 <= 0 or c2 <= 0 or f >= 1:
        return math.nan, math.nan

    def residuals(x):
        if x[0] > _LOG_ALPHA_MAX:  # alpha beyond any float: steer the solver back (exp would overflow)
            return [_FAR, _FAR]
        e1, e2 = snb_moments(math.exp(x[0]), float(special.expit(x[1])), classes, f)
        return [e1 / c1 - 1.0, e2 / c2 - 1.0]

    with np.errstate(all="ignore"):
        for alpha0, beta0 in _SNB_STARTS:
            found = optimize.least_squares(residuals, [math.log(alpha0), float(special.logit(beta0))],
                                           method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15)
            alpha, beta = math.exp(found.x[0]), float(special.expit(found.x[1]))
            if np.all(np.isfinite(found.fun)) and np.max(np.abs(found.fun)) < 1e-9 and 0 < beta < 1 and alpha > 0:
                return alpha, beta
    return math.nan, math.nan


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



#: How close to 0 or 1 the likelihood's maximum over alpha may lie and still count as inside the
#: region 0 < alpha < 1 (closer, the maximum is on its edge, e.g. class sizes of a negative binomial,
#: whose Pitman fit tends to alpha = 0 with theta growing without bound).
_BOUNDARY = 1e-6


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

    def inside(x) -> bool:
        return bool(x[0] > 0 and 0 < x[1] < 1)

    def score(x):  # outside the region the sums have no meaning (and polygamma of a huge negative argument
        return _pitman_score(x[0], x[1], size, count, n, u)[0] if inside(x) else np.full(2, np.nan)  # never ends)

    def hessian(x):
        return _pitman_score(x[0], x[1], size, count, n, u)[1] if inside(x) else np.full((2, 2), np.nan)

    with np.errstate(all="ignore"):
        found = optimize.minimize(objective, [math.log(theta0), special.logit(alpha0)], jac=True, method="BFGS")
        start = [math.exp(found.x[0]), float(special.expit(found.x[1]))]
        if not (_BOUNDARY < start[1] < 1 - _BOUNDARY):  # the maximum lies on the edge alpha = 0 or 1: none inside
            return math.nan, math.nan
        polished = optimize.root(score, start, jac=hessian, method="hybr")
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
