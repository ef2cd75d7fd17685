"""Poisson log-linear models of a complete contingency table: maximum likelihood by iterative
proportional fitting (R's ``loglin``, MASS ``loglm``) and, with numeric covariates, by iteratively
reweighted least squares (R's ``glm(family = poisson)``).

A table with m classifying variables of L_1, ..., L_m categories is held flat, in C order (the last
variable varies fastest), as one count per cell. A model is a list of *terms*: tuples of variable
positions, ``(0,)`` a main effect, ``(0, 2)`` the interaction of variables 0 and 2. The model is
hierarchical: a term stands for itself and every term it contains (R codes the lower-order terms
a formula leaves out so that the fitted values are the same; Bishop, Fienberg & Holland 1975,
"Discrete Multivariate Analysis", ch. 3). For the model

    log mu_c = offset_c + beta_0 + sum over terms T of u_T(c restricted to T) [+ gamma * z_c]

the design matrix has an intercept and, for every term of the hierarchical closure, the products of
the treatment-contrast indicators of its variables (category 1 is the reference, as R's default
``contr.treatment``), so it has full column rank; it is sparse (one entry per term and cell).

Nothing here knows about risk: this module imports only :mod:`sdc_dagster.errors`.

References
----------
Agresti (2013), "Categorical Data Analysis", 3rd ed., §4.6 (IRLS for Poisson log-linear models),
§9.7 (iterative proportional fitting); R ``stats::glm.fit`` (starting values y + 0.1, convergence
|dev - dev_old| / (|dev| + 0.1) < epsilon); R ``stats::loglin``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
from scipy import linalg, sparse

from sdc_dagster.errors import NotComputable

# A complete table of more cells is refused (the sparse design has one entry per term and cell).
MAX_TABLE_CELLS = 2**22


#: R's .Machine$double.eps: the least fitted mean of the IRLS (R's poisson()$linkinv).
_EPS = float(np.finfo(np.float64).eps)

def hierarchical_closure(terms: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """Every non-empty subset of every term, each once, by order and then position: the terms a
    hierarchical log-linear model contains (``[(0, 1)]`` gives ``[(0,), (1,), (0, 1)]``)."""
    closure = set()
    for term in terms:
        term = tuple(sorted(set(term)))
        for size in range(1, len(term) + 1):
            closure.update(combinations(term, size))
    return sorted(closure, key=lambda t: (len(t), t))


def design_matrix(shape: Sequence[int], terms: Sequence[Sequence[int]]) -> sparse.csr_matrix:
    """The sparse (cells x parameters) design of the hierarchical model of ``terms`` on a table of
    ``shape``: an intercept column, then for each term of :func:`hierarchical_closure` one column
    per combination of its variables' non-reference categories (2..L_j), 1 where a cell has them.
    """
    shape = tuple(int(s) for s in shape)
    cells = int(np.prod(shape))
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]  # C order: the last variable varies fastest
    position = np.arange(cells, dtype=np.int64)
    level = [(position // int(strides[j])) % shape[j] for j in range(len(shape))]
    rows, cols = [position], [np.zeros(cells, dtype=np.int64)]
    start = 1
    for term in hierarchical_closure(terms):
        inside = np.ones(cells, dtype=bool)
        column = np.zeros(cells, dtype=np.int64)
        for j in term:
            inside &= level[j] > 0
            column = column * (shape[j] - 1) + (level[j] - 1)
        rows.append(position[inside])
        cols.append(start + column[inside])
        start += int(np.prod([shape[j] - 1 for j in term]))
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(cells, start))


def poisson_deviance(y: np.ndarray, mu: np.ndarray) -> float:
    """2 * sum(y log(y / mu) - (y - mu)), with y log y = 0 at y = 0 (R ``poisson()$dev.resids``)."""
    positive = y > 0
    ratio = np.ones_like(y)
    ratio[positive] = y[positive] / mu[positive]
    return float(2.0 * np.sum(y * np.log(ratio) - (y - mu)))


def poisson_fit(
    y: np.ndarray,
    shape: Sequence[int],
    terms: Sequence[Sequence[int]],
    *,
    offset: np.ndarray | None = None,
    covariates: np.ndarray | None = None,
) -> np.ndarray:
    """Maximum-likelihood fitted means mu of the Poisson log-linear model of ``terms`` (with an
    ``offset`` and numeric ``covariates``, a (cells x q) array, if given) for the flat table ``y``.

    Without covariates the fit is the table with the observed margins of the terms in the family
    exp(offset) x (a product of one factor per margin) (Birch 1963; Bishop, Fienberg & Holland 1975,
    §3.4-3.5), computed by :func:`ipf_fit` from the start table exp(offset): a few sums over a dense
    table per cycle, far cheaper than IRLS on a table of a million cells. With covariates,
    :func:`poisson_irls`. Both converge to the same maximum-likelihood fit as R's ``glm``.

    Raises
    ------
    NotComputable : the table has more than :data:`MAX_TABLE_CELLS` cells.
    """
    if len(y) > MAX_TABLE_CELLS:
        raise NotComputable(
            f"log-linear model: the table has {len(y):,} cells (the product of the variables' category "
            f"counts {list(shape)}); at most {MAX_TABLE_CELLS:,}: use fewer or coarser variables"
        )
    if covariates is None:
        start = None if offset is None else np.exp(np.asarray(offset, dtype=np.float64))
        return ipf_fit(y, shape, _maximal(terms), start=start)
    return poisson_irls(y, shape, terms, offset=offset, covariates=covariates)


def poisson_irls(
    y: np.ndarray,
    shape: Sequence[int],
    terms: Sequence[Sequence[int]],
    *,
    offset: np.ndarray | None = None,
    covariates: np.ndarray | None = None,
    tolerance: float = 1e-11,
    max_iterations: int = 100,
) -> np.ndarray:
    """:func:`poisson_fit` by iteratively reweighted least squares on the sparse design of
    :func:`design_matrix` (plus the covariates), as R's ``glm.fit``: start at mu = y + 0.1, then
    repeat the weighted least-squares step beta = (X'WX)^-1 X'W z with W = diag(mu),
    z = eta - offset + (y - mu) / mu, until the deviance changes by less than ``tolerance`` *
    (|deviance| + 0.1) (R's epsilon is 1e-8; the default here is tighter, so the fitted values are
    the maximum-likelihood ones to about 1e-9). Each covariate is centred and scaled first (same
    column space, better conditioned). Where the maximum likelihood estimate does not exist (a zero
    margin of an interaction), the fitted values of the empty cells concerned tend to 0 and the
    others converge, as in R (whose Poisson inverse link keeps mu at least the machine epsilon, so
    the working response stays finite while those fitted values vanish; so does this one).

    Returns
    -------
    mu, flat like ``y`` (float64).
    """
    y = np.asarray(y, dtype=np.float64)
    cells = len(y)
    design = design_matrix(shape, terms)
    if covariates is not None:
        z = np.asarray(covariates, dtype=np.float64).reshape(cells, -1)
        spread = z.std(axis=0)
        z = (z - z.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
        design = sparse.hstack([design, sparse.csr_matrix(z)], format="csr")
    offset = np.zeros(cells) if offset is None else np.asarray(offset, dtype=np.float64)
    mu = y + 0.1
    eta = np.log(mu)
    deviance = poisson_deviance(y, mu)
    transposed = design.T.tocsr()
    for _ in range(max_iterations):
        working = eta - offset + (y - mu) / mu
        weighted = transposed.multiply(mu[None, :]).tocsr()
        normal = (weighted @ design).toarray()
        rhs = weighted @ working
        try:  # X'WX is positive definite unless a covariate is a combination of the terms
            beta = linalg.cho_solve(linalg.cho_factor(normal), rhs)
        except linalg.LinAlgError:
            beta = linalg.lstsq(normal, rhs)[0]
        eta = offset + design @ beta
        mu = np.maximum(np.exp(eta), _EPS)  # R's poisson()$linkinv: pmax(exp(eta), .Machine$double.eps)
        previous, deviance = deviance, poisson_deviance(y, mu)
        if abs(deviance - previous) <= tolerance * (abs(deviance) + 0.1):
            break
    return mu


def _maximal(terms: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """The terms contained in no other term (the margins IPF fits), or the grand total ``()`` for a
    model of the intercept alone."""
    sets = [frozenset(t) for t in terms]
    maximal = [tuple(sorted(t)) for i, t in enumerate(sets) if not any(t < u for u in sets) and t not in sets[:i]]
    return maximal or [()]


def ipf_fit(
    y: np.ndarray,
    shape: Sequence[int],
    margins: Sequence[Sequence[int]],
    *,
    start: np.ndarray | None = None,
    tolerance: float = 1e-10,
    max_iterations: int = 1000,
) -> np.ndarray:
    """Fitted means of the hierarchical log-linear model with the given ``margins`` by iterative
    proportional fitting (Deming & Stephan 1940; R ``loglin``): start from a table of ones (or
    ``start``, flat like ``y``: the model then has the offset log(start)) and, in
    turn for each margin, scale the fitted table so that its sums over that margin equal the
    observed ones; cycle until no fitted margin differs from the observed one by more than
    ``tolerance`` times the table's total (R's ``loglin`` stops at an absolute ``eps = 0.1``; a
    model of main effects only fits exactly after the first cycle, where every fitted cell is
    n * prod_j (n_j(c_j) / n)).

    Returns the fitted means, flat like ``y``.
    """
    table = np.asarray(y, dtype=np.float64).reshape(tuple(shape))
    fitted = np.ones_like(table) if start is None else np.array(start, dtype=np.float64).reshape(table.shape)
    others = [tuple(j for j in range(table.ndim) if j not in margin) for margin in margins]
    observed = [table.sum(axis=axes, keepdims=True) for axes in others]
    for _ in range(max_iterations):
        for axes, target in zip(others, observed):
            current = fitted.sum(axis=axes, keepdims=True)
            fitted *= np.divide(target, current, out=np.zeros_like(target), where=current > 0)
        gap = max(float(np.abs(fitted.sum(axis=axes, keepdims=True) - target).max())
                  for axes, target in zip(others, observed))
        if gap <= tolerance * max(float(table.sum()), 1.0):
            break
    return fitted.ravel()
