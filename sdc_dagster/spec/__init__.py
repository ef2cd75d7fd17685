"""Survey specifications: YAML -> frozen dataclasses, validated (SPEC §1, §3, §5, §8, §12).

* :mod:`~sdc_dagster.spec.survey`: the :class:`SurveySpec` and its parts;
* :mod:`~sdc_dagster.spec.parse`: validation of a parsed document (:func:`parse_spec`);
* :mod:`~sdc_dagster.spec.files`: spec files with the YAML line of every problem (:func:`load_spec`,
  :func:`scan_specs`);
* :mod:`~sdc_dagster.spec.draft`: a first spec drafted from a data file (``sdc draft``);
* :mod:`~sdc_dagster.spec.hierarchies`: generalisation hierarchies of categorical keys (ARX CSV, Argus
  ``.hrc`` and ``.cdl``, inline levels), :mod:`~sdc_dagster.spec.drafted_hierarchies`: hierarchies
  drafted from the data (code prefixes, coarser columns, round-width bands).
"""

from sdc_dagster.spec.files import BrokenSpec, load_spec, load_specs, scan_specs
from sdc_dagster.spec.parse import parse_spec, spec_text_with_plans
from sdc_dagster.spec.survey import (
    DEFAULT_SEARCH_METHODS,
    FORMATS,
    L_DIVERSITY_MEASURES,
    POPULATION_UNIQUENESS_MODELS,
    RELEASE_FORMATS,
    ROLES,
    SCALES,
    SEARCH_LOSSES,
    SEARCH_METHODS,
    SEARCHED_PLAN,
    ModelRiskOptions,
    Plan,
    ReleaseOptions,
    RiskParameters,
    ReportOptions,
    SearchOptions,
    Source,
    SpecError,
    SurveySpec,
    UtilityLimits,
    Variable,
    Variables,
)

__all__ = [
    "DEFAULT_SEARCH_METHODS",
    "FORMATS",
    "L_DIVERSITY_MEASURES",
    "POPULATION_UNIQUENESS_MODELS",
    "RELEASE_FORMATS",
    "ROLES",
    "SCALES",
    "SEARCHED_PLAN",
    "SEARCH_LOSSES",
    "SEARCH_METHODS",
    "BrokenSpec",
    "ModelRiskOptions",
    "Plan",
    "ReleaseOptions",
    "RiskParameters",
    "ReportOptions",
    "SearchOptions",
    "Source",
    "SpecError",
    "SurveySpec",
    "UtilityLimits",
    "Variable",
    "Variables",
    "load_spec",
    "load_specs",
    "parse_spec",
    "scan_specs",
    "spec_text_with_plans",
]
