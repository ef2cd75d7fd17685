"""The decimals a variable is published with: the one notion behind every value written back at the
precision of the input (a microaggregated or noisy key rounded back, :func:`sdc_dagster.protect.plan.rounded_to_original_decimals`;
a published table's sums, :func:`sdc_dagster.tables.exchange.published_table`).

mu-Argus's metadata gives every numeric variable its number of decimals (``<DECIMALS>`` in the
``.rda`` file, 0 for an integer) and writes its output so; tau-Argus likewise publishes a
magnitude table with the decimals of its response variable (mu-Argus 5.1 and tau-Argus 4.2
manuals, "the metadata file"). Without such metadata the decimals are read from the values.
"""

from __future__ import annotations

import numpy as np

#: The most decimals a released value is rounded back to: a variable whose values need more is measured,
#: not coded to a published precision (mu-Argus's ``<DECIMALS>`` in practice 0 to a few), and is left as
#: the method wrote it.
MAX_RELEASED_DECIMALS = 4


def original_decimals(values: np.ndarray) -> int | None:
    """The number of decimals the observed ``values`` are published with: the least d in
    0..MAX_RELEASED_DECIMALS with every value equal to itself rounded to d decimals (to 1e-12
    relative), None when more are needed or nothing is observed."""
    observed = values[~np.isnan(values)]
    if not len(observed):
        return None
    for decimals in range(MAX_RELEASED_DECIMALS + 1):
        if np.allclose(observed, np.round(observed, decimals), rtol=1e-12, atol=0):
            return decimals
    return None
