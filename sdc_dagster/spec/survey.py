"""The survey spec as frozen dataclasses: the survey, how its wave files are read, the role and scale
of every variable (SPEC §1.1–1.2), its missing-value codes, the risk parameters (SPEC §3, §5, §12),
the named protection plans (ordered steps, SPEC §8), the release options and the plan search.

A problem of a spec is a :class:`SpecError` naming the key path (``variables.roof.scale``) and what
was expected (:mod:`sdc_dagster.spec.parse` finds them, :mod:`sdc_dagster.spec.files` adds the YAML
line of the key).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROLES = (
    "direct_identifier",
    "categorical_key",
    "continuous_key",
    "sensitive",
    "weight",
    "household_id",
    "record_id",
    "other",
)
SCALES = ("nominal", "ordinal", "continuous")
# File extension -> format of a wave file; a wave is read by its extension (or by its content when
# that says otherwise, :func:`sdc_dagster.spec.reading.file_format`), the spec's ``source.format``
# applies to files without one. "spreadsheet": Excel and OpenDocument workbooks; "argus": data
# described by an Argus ``.rda`` metadata file (fixed-width ``.asc``, or free format with
# ``<SEPARATOR>``: a ``.csv`` with an ``.rda`` beside it, or the spec's ``source.metadata``).
FORMATS = {
    ".csv": "csv",
    ".tsv": "csv",  # delimited text: the separator is sniffed (sdc_dagster.datafiles.dialect)
    ".txt": "csv",  # Excel's "Text (Tab delimited)" and "Unicode Text" (UTF-16) exports
    ".parquet": "parquet",
    ".sav": "spss",
    ".zsav": "spss",
    ".dta": "stata",
    ".sas7bdat": "sas",
    ".xpt": "xport",
    ".xlsx": "spreadsheet",
    ".xlsm": "spreadsheet",
    ".xls": "spreadsheet",
    ".ods": "spreadsheet",
    ".asc": "argus",
}
# Formats a released safe file can be written in (``release.formats``; SAS waves are released as xport).
RELEASE_FORMATS = ("spss", "stata", "csv", "parquet", "xport")


class SpecError(ValueError):
    """The survey spec is wrong; the message names the key and what was expected.

    ``key`` is the key path of the problem (``plans.p.steps[0]``), used to find its YAML line.
    ``errors`` are the independent problems: ``(self,)`` for one; for several (:meth:`combine`) the
    message lists theirs, one per line, and ``key`` is the first one's.
    """

    def __init__(self, message: str, *, key: str | None = None, errors: tuple[SpecError, ...] = ()):
        super().__init__(message)
        self.key = key
        self.errors = tuple(errors) or (self,)

    @classmethod
    def combine(cls, errors: list[SpecError]) -> SpecError:
        """One error for ``errors`` (non-empty): the error itself if it is alone."""
        if len(errors) == 1:
            return errors[0]
        return cls("\n".join(map(str, errors)), key=errors[0].key, errors=tuple(errors))


@dataclass(frozen=True)
class Variable:
    """One column of the survey: its role (SPEC §1.1), scale (§1.2) and value rules."""

    name: str
    role: str
    scale: str | None = None
    categories: tuple | None = None
    missing_codes: tuple = ()
    precision: float | None = None
    # the generalisation hierarchy of a categorical key (``hierarchy:``): a Hierarchy (a file or inline
    # levels, sdc_dagster.spec.hierarchies) or a HierarchyRule the data complete; None: drafted by the search
    hierarchy: Any = None

    @property
    def numeric(self) -> bool:
        """Whether the values must be numbers: a weight, a continuous key, or numeric categories."""
        if self.role in ("weight", "continuous_key"):
            return True
        return self.categories is not None and all(
            isinstance(c, (int, float)) and not isinstance(c, bool) for c in self.categories
        )


class Variables(tuple):
    """The spec's variables in spec order; also indexed by name: ``spec.variables["edu"]``."""

    def __getitem__(self, item):
        if isinstance(item, str):
            for v in self:
                if v.name == item:
                    return v
            raise KeyError(item)
        return super().__getitem__(item)


@dataclass(frozen=True)
class Source:
    """How a wave file is found and read."""

    path: str | None = None
    format: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    metadata: str | None = None  # the Argus .rda describing the wave files (relative to the spec's folder)


#: The population-uniqueness estimates the report can show (``risk.population_uniqueness``): Dankar
#: et al.'s choice, and Pitman's, Zayatz's and the SNB model's (ARX).
POPULATION_UNIQUENESS_MODELS = ("dankar", "pitman", "zayatz", "snb")


@dataclass(frozen=True)
class ModelRiskOptions:
    """How the model-based risks gr1 and gr2 of the report are fitted (``risk.model_risk``;
    sdcMicro ``modRisk``, Skinner & Shlomo 2008, :func:`sdc_dagster.risk.model_risk`): ``method``
    (:data:`sdc_dagster.risk.model_risk.MODEL_RISK_METHODS`), ``formula`` (an R model formula over the categorical keys, e.g.
    ``"~ sex + region + sex:region"``; None: the keys' main effects) and ``bound`` (only cells with
    0 < f_k <= bound are counted; infinity: every cell). A variant that withholds a key is fitted
    with the formula's terms of the keys it releases."""

    method: str = "default"
    formula: str | None = None
    bound: float = math.inf


@dataclass(frozen=True)
class RiskParameters:
    """Risk thresholds (SPEC §3.1, §3.3, §3.6, §4.1, §5.1, §12).

    ``max_linkage_risk``: the largest share of released records that distance-based record linkage
    (SPEC §4.1) may link to their own original, the blocking release check of a spec with continuous
    keys (:func:`sdc_dagster.pipeline.protection.release_checks`). It bounds what an intruder who knows a
    person's key values achieves by taking the nearest released record, under the best of the
    linkage variants the pipeline computes. Default 0.2: at most one released record in five is
    re-identified through the continuous keys. sdcMicro's ``dRisk`` (``interval_risk``, SPEC §4.2)
    answers a different question, the share of records whose every original value lies within
    k·sd of its released value; it is reported next to it, not used as the release rule.

    ``l``: the l of l-diversity (SPEC §3.6). When the spec declares it and a ``sensitive`` variable,
    every released record's key group must hold at least l distinct values of each sensitive
    variable (the blocking ``l_diversity`` check, sdcMicro's ``ldiversity`` semantics); entropy
    l-diversity (exp of the group's entropy at least l) is checked beside it, blocking when
    ``l_diversity`` is ``"entropy"`` and a warning when it is ``"distinct"`` (default: entropy
    l-diversity is out of reach for most survey files, whose whole-file entropy of a sensitive
    variable is often barely above l, Machanavajjhala et al. 2007 §4.1). None (not declared): no
    l-diversity check; the risk table still holds the scores.

    ``model_risk``: the fit of the model-based risks (:class:`ModelRiskOptions`), reported with a
    weight. ``population_size``: N, the number of units of the population the wave samples (None:
    the sum of the weights, when the spec has a weight). ``population_uniqueness``: the estimates of
    the number of population uniques the report shows when N is known
    (:data:`POPULATION_UNIQUENESS_MODELS`, ARX's models, :func:`sdc_dagster.risk.population_uniqueness`);
    default Dankar et al.'s choice among them; an empty list shows none.
    """

    k: int = 3
    l: int | None = None
    l_diversity: str = "distinct"
    recursive_c: float = 2.0
    max_global_risk: float = 0.05
    individual_risk_threshold: float = 0.1
    max_linkage_risk: float = 0.2
    model_risk: ModelRiskOptions = ModelRiskOptions()
    population_size: int | None = None
    population_uniqueness: tuple[str, ...] = ("dankar",)


@dataclass(frozen=True)
class ReleaseOptions:
    """How a released variant is published (``release:``): the formats written besides the wave's
    own and Parquet, whether the record order is shuffled, and whether record and household ids
    are replaced by new sequence numbers."""

    formats: tuple[str, ...] = ()
    shuffle: bool = True
    renumber_ids: bool = True


@dataclass(frozen=True)
class ReportOptions:
    """Who signs the wave's release report (``report:``, optional): ``prepared_by`` and
    ``reviewed_by`` pre-fill the report's sign-off block; left empty, the block has blank lines to
    sign on. ``draft_decisions``: what ``sdc init`` decided for the methodologist to confirm (a key
    candidate beyond the key cap, l-diversity not drafted), listed in the sign-off block."""

    prepared_by: str = ""
    reviewed_by: str = ""
    draft_decisions: tuple[str, ...] = ()


@dataclass(frozen=True)
class UtilityLimits:
    """The utility a release must keep (``limits:``), each a blocking release check
    (:func:`sdc_dagster.pipeline.protection.release_checks`) and a constraint of the plan search.
    A spec without the section gets these defaults; each can be changed in the spec.

    * ``max_suppressed_share`` (default 0.10): the share of each categorical key's observed values
      that local suppression may set to missing. Suppressed values are missing not at random (the
      rare combinations): above about a tenth, estimates from the key are biased unless the user
      imputes them (Hundepool et al. 2012, ch. 3 on local suppression; sdcMicro reports the
      suppressions per key for this reason).
    * ``max_records_changed`` (default 0.25): the share of records at least one of whose categorical
      keys is suppressed or perturbed (PRAM, swapping); a value released as its merged category by
      the plan's recodes is not a change. Such a record carries a missing or a false classification:
      with more than a quarter of the records so changed, tables of the keys are no longer dominated
      by true values (per key, PRAM's usual retention of 0.8-0.9 changes 10-20 % of the records).
    * ``max_mean_change`` (default 0.05): the relative change of each continuous key's mean,
      |mean* - mean| / |mean| (Hundepool et al. 2012, ch. 3 on information loss; SPEC §9.4 eq (9) per variable).
      Microaggregation and zero-mean noise keep means; a mean moved by more than 5 % is a biased
      release (sampling errors of survey means are usually a few per cent).
    * ``max_variance_change`` (default 0.2): the relative change of each continuous key's variance
      (SPEC §9.6 per variable). A standard error scales with the square root of the variance:
      a variance changed by a fifth changes standard errors and confidence intervals by about 10 %
      (sqrt(1.2) = 1.095, sqrt(0.8) = 0.894).
    * ``max_correlation_change`` (default 0.1): the absolute change of each correlation between
      continuous keys, |r* - r| (Hundepool et al. 2012, ch. 3; Domingo-Ferrer, Mateo-Sanz & Torra
      2001 bound correlations on their [-1, 1] scale). Absolute, because a relative change of a
      correlation near 0 is unbounded and says nothing; 0.1 is a change a regression or a
      correlation table shows.
    * ``max_keys_not_released`` (default 0.5): the share of the spec's keys (categorical and
      continuous) that a release carries none of: withheld (``remove_variables``, the plan search's
      last rung) or released as one category (every record in the same merged class: a hierarchy's
      top, one band covering everything, every value suppressed;
      :func:`~sdc_dagster.pipeline.variant.keys_lost`). A share, not a count, so that it
      means the same for 3 keys and for 12. The keys are the variables the disclosure scenario says
      an intruder knows, which are also the ones users tabulate and model by (Hundepool et al. 2012,
      ch. 3: a release is judged per variable, not by a composite); a release that keeps no detail
      of most of them is safe but of no use, however low its composite loss. At most half may go:
      a spec can raise it (1 allows a release of no key) or lower it (0: every key keeps some detail).
    """

    max_suppressed_share: float = 0.10
    max_records_changed: float = 0.25
    max_mean_change: float = 0.05
    max_variance_change: float = 0.2
    max_correlation_change: float = 0.1
    max_keys_not_released: float = 0.5


#: Step methods the plan search may use (``search.methods``): the generalisation and suppression of
#: the categorical keys, and the candidate steps of the continuous keys.
SEARCH_METHODS = ("recode", "interval_recode", "top_coding", "local_suppression", "microaggregation", "noise",
                  "rank_swap", "rounding", "remove_variables", "mv_top_coding")
#: Search methods a spec names to use (``search.methods``); the others are used by default.
OPT_IN_SEARCH_METHODS = ("mv_top_coding",)
#: The search methods of a spec that does not name them.
DEFAULT_SEARCH_METHODS = tuple(m for m in SEARCH_METHODS if m not in OPT_IN_SEARCH_METHODS)
SEARCH_LOSSES = ("lambda_arctan", "topsis")
#: The l-diversity a spec's ``risk.l_diversity`` makes blocking (SPEC §3.6).
L_DIVERSITY_MEASURES = ("distinct", "entropy")


#: The name of the plan the search recommends, as a protected variant (``protected_searched``).
SEARCHED_PLAN = "searched"


@dataclass(frozen=True)
class SearchOptions:
    """The plan search of a wave (``search:``, issue 22; :func:`sdc_dagster.search.wave.search_wave`).

    ``enabled``: whether the pipeline searches (off when the spec has no ``search:`` section, on when
    it has one without ``enabled``; drafted specs write ``search: {enabled: true}``).
    ``keep``: categorical keys never recoded. ``max_level``: the deepest generalisation level tried
    per key (None: every level the data gives). ``methods``: the step methods the search may use
    (:data:`SEARCH_METHODS`): ``recode`` merges along the key's hierarchy (the spec's ``hierarchy:``
    or one drafted from the data), adjacent categories of an ordinal key, or rare nominal categories
    into "Other", ``interval_recode`` and ``top_coding`` give the bands and coded tails of ordered and
    integer-valued keys (every level released as a ``recode`` step whose ``names`` name its merged
    groups, SPEC §8.2; :mod:`sdc_dagster.search.space`), ``local_suppression``
    suppresses to k-anonymity and, where the global risk is still above the target, by individual
    risk; ``microaggregation``, ``rank_swap``, ``noise``, ``rounding``, ``top_coding`` and
    ``interval_recode`` (bands) and ``remove_variables`` (withholding a key) are the rungs of the
    continuous keys' ladder (:func:`sdc_dagster.search.space.continuous_steps`); ``mv_top_coding``
    (multivariate top coding before microaggregation, on small files with multivariate outliers) is
    used only when the spec names it (:data:`OPT_IN_SEARCH_METHODS`; default
    :data:`DEFAULT_SEARCH_METHODS`).
    ``budget_seconds``: the time budget of one wave's search, default 120 s (two minutes; a
    100,000-record wave with 7 keys stays within it, ``benchmarks/plan_search.py``); past it the
    search stops with the best plans found and says so. Every stage spends it by fixed charges
    (:mod:`sdc_dagster.search.clock`: per node the walk visits, per node Flash checks, per plan the
    confirmation runs), never by a clock: neither the timing, other work on the machine nor the
    number of ``workers`` changes which nodes and plans a budget-cut search takes. ``loss``: the information loss the plans are
    compared on, the distance measure (1) with arctan distances (SPEC §9.1, ``lambda_arctan``,
    default) or the mean TOPSIS loss (SPEC §10, ``topsis``). ``workers``: the processes that evaluate
    the lattice walk's nodes, ``"auto"`` (default: serial until the walk's evaluations have cost
    :data:`sdc_dagster.search.parallel.PAYS_SECONDS` CPU seconds, then one process per core the
    process may use; small files stay serial) or a number (1: serial);
    the plan found is the same for every number (:mod:`sdc_dagster.search.parallel`).
    """

    enabled: bool = False
    keep: tuple[str, ...] = ()
    max_level: int | None = None
    methods: tuple[str, ...] = DEFAULT_SEARCH_METHODS
    budget_seconds: float = 120.0
    loss: str = "lambda_arctan"
    workers: int | str = "auto"


@dataclass(frozen=True)
class Plan:
    """A named protection plan: ordered steps, the k its output must reach, and its seed."""

    name: str
    steps: tuple[Mapping[str, Any], ...]
    k: int
    random_state: int
    description: str = ""


@dataclass(frozen=True)
class SurveySpec:
    """A validated survey specification."""

    survey: str
    title: str
    source: Source
    variables: Variables
    risk: RiskParameters
    plans: tuple[Plan, ...]
    spec_path: Path | None = None
    spec_hash: str = ""
    release: ReleaseOptions = ReleaseOptions()
    search: SearchOptions = SearchOptions()
    report: ReportOptions = ReportOptions()
    limits: UtilityLimits = UtilityLimits()

    def variable(self, name: str) -> Variable:
        return self.variables[name]

    def names(self, role: str) -> list[str]:
        return [v.name for v in self.variables if v.role == role]

    @property
    def categorical_keys(self) -> list[str]:
        return self.names("categorical_key")

    @property
    def continuous_keys(self) -> list[str]:
        return self.names("continuous_key")

    @property
    def weight(self) -> str | None:
        w = self.names("weight")
        return w[0] if w else None

    @property
    def household_id(self) -> str | None:
        h = self.names("household_id")
        return h[0] if h else None

    @property
    def record_id(self) -> str | None:
        r = self.names("record_id")
        return r[0] if r else None

    @property
    def precision(self) -> dict[str, float]:
        return {v.name: v.precision for v in self.variables if v.role == "continuous_key"}

    @property
    def scales(self) -> dict[str, str]:
        return {v.name: v.scale for v in self.variables if v.scale is not None}

    @property
    def hierarchies(self) -> dict[str, Any]:
        """The hierarchy of each categorical key that has one (``hierarchy:``): a
        :class:`~sdc_dagster.spec.hierarchies.Hierarchy` or a
        :class:`~sdc_dagster.spec.drafted_hierarchies.HierarchyRule`."""
        return {v.name: v.hierarchy for v in self.variables if v.hierarchy is not None}

    def plan(self, name: str) -> Plan:
        for p in self.plans:
            if p.name == name:
                return p
        raise KeyError(name)
