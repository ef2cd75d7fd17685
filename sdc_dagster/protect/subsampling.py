"""Subsampling: release a simple random sample of the records (SPEC §8.4).

References
----------
Hundepool et al. (2012), *Statistical Disclosure Control*, §3.4 (sampling as a non-perturbative method).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError


def subsample(data: pd.DataFrame, *, fraction: float, random_state=None) -> pd.DataFrame:
    """A simple random sample without replacement of round(fraction · n) records (SPEC §8.4).

    Parameters
    ----------
    data : the microdata; not modified.
    fraction : the share of records released, 0 < fraction <= 1.
    random_state : int seed or numpy Generator.

    Returns
    -------
    The sampled records in their original order, with their original index labels.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.integer, np.floating)) or not 0 < fraction <= 1:
        raise SDCInputError(f"fraction: must be a number in (0, 1], got {fraction!r}")
    rng = np.random.default_rng(random_state)
    size = int(round(fraction * len(data)))
    chosen = np.sort(rng.choice(len(data), size=size, replace=False))
    return data.iloc[chosen].copy()
