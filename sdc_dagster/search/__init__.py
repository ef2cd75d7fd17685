"""The search for the best protection: the globally optimal generalisation of categorical keys along
their hierarchies with record suppression (SPEC §14; ARX's Flash).

``optimal_generalisation(data, hierarchies, *, k, max_suppressed_records=0.0, objective="loss",
weight=None)`` returns a :class:`Generalisation` (CONTRACT "Generalisation search"). Modules:
:mod:`~sdc_dagster.search.lattice` (the level vectors and their cones),
:mod:`~sdc_dagster.search.coding` (keys coded once, classes rolled up),
:mod:`~sdc_dagster.search.objectives` (loss, discernibility, suppressed records, a callable),
:mod:`~sdc_dagster.search.flash` (the traversal), :mod:`~sdc_dagster.search.generalisation` (the
public function and the released data).
"""

from sdc_dagster.search.generalisation import Generalisation, optimal_generalisation
from sdc_dagster.search.objectives import Transformation

__all__ = ["Generalisation", "Transformation", "optimal_generalisation"]
