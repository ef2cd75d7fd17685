"""Protection of published tables (tau-Argus / sdcTable class); public names follow CONTRACT.md.

* :mod:`~sdc_dagster.tables.model`: :func:`tabulate`, the :class:`Table` (inner cells and one sparse
  matrix to the published cells), linked tables (:func:`joint_model`);
* :mod:`~sdc_dagster.tables.primary`: the sensitivity rules and protection levels;
* :mod:`~sdc_dagster.tables.intruder`: the intruder's intervals of a suppression pattern (its
  programmes kept in one HiGHS model, :mod:`~sdc_dagster.tables.programme`);
* :mod:`~sdc_dagster.tables.secondary`: the optimal (ILP), Gauss and HiTaS secondary suppression;
* :mod:`~sdc_dagster.tables.hitas`: HiTaS's subtables of a hierarchical table, protected from the top down;
* :mod:`~sdc_dagster.tables.rounding`: small-count rounding (PLS, SmallCountRounding), additive;
* :mod:`~sdc_dagster.tables.cell_key`: the cell key method for magnitude tables (cellKey, top_contr);
* :mod:`~sdc_dagster.tables.hierarchy_files`: hierarchies from tau-Argus ``.hrc`` files, code
  prefixes and nested columns;
* :mod:`~sdc_dagster.tables.exchange`: the office's published layout (CSV, Excel), tau-Argus's
  ``.tab``/``.rda``/``.hrc`` in and out (with the a priori unsafe cells of an ``.hst``), aggregated
  input from CSV.
"""

from sdc_dagster.tables.intruder import audit
from sdc_dagster.tables.cell_key import cell_key_magnitude
from sdc_dagster.tables.exchange import (
    STATUS_LEGEND,
    contributions_from_top,
    published_table,
    read_aggregated,
    read_apriori,
    read_tau_argus,
    write_published,
    write_tau_argus,
)
from sdc_dagster.tables.hierarchy_files import hierarchy_from_codes, hierarchy_from_columns, read_hrc, write_hrc
from sdc_dagster.tables.model import TOTAL, Dimension, JointModel, Table, joint_model, tabulate
from sdc_dagster.tables.primary import RULES, primary_suppression, protection_levels
from sdc_dagster.tables.rounding import small_count_rounding
from sdc_dagster.tables.secondary import METHODS, Optimality, secondary_suppression

__all__ = [
    "METHODS",
    "RULES",
    "STATUS_LEGEND",
    "TOTAL",
    "Dimension",
    "JointModel",
    "Optimality",
    "Table",
    "audit",
    "cell_key_magnitude",
    "contributions_from_top",
    "hierarchy_from_codes",
    "hierarchy_from_columns",
    "joint_model",
    "primary_suppression",
    "protection_levels",
    "published_table",
    "read_aggregated",
    "read_apriori",
    "read_hrc",
    "read_tau_argus",
    "secondary_suppression",
    "small_count_rounding",
    "tabulate",
    "write_hrc",
    "write_published",
    "write_tau_argus",
]
