"""Draft a survey spec from a data file: the starting point of a methodologist's own survey.

``sdc init SURVEY --from FILE`` calls :func:`draft_spec`. It reads the file once with its metadata
(:func:`~sdc_dagster.spec.reading.read_with_metadata`): SPSS and Stata value labels become the
category list (with the labels as comments), SPSS measurement levels (nominal, ordinal, scale)
become scales, SPSS user-missing codes become the variable's missing codes. Every column gets the
role :func:`~sdc_dagster.spec.roles.draft_roles` guesses, and every guess says why in a comment.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from sdc_dagster.errors import SDCInputError
from sdc_dagster.names import check_name
from sdc_dagster.spec.drafted_hierarchies import HierarchyRule, draft_rule
from sdc_dagster.spec.guess import plain_scalar, whole_numbers
from sdc_dagster.spec.hierarchies import Hierarchy, hierarchy_files_beside, members_name, read_hierarchy_file
from sdc_dagster.spec.reading import read_with_metadata
from sdc_dagster.spec.roles import (DRAFTED_GLOBAL_RISK, DRAFTED_K, DRAFTED_MICROAGGREGATION_K,
                                   DRAFTED_UNWEIGHTED_GLOBAL_RISK, MAX_CATEGORICAL_KEYS, draft_scenario,
                                   drafted_global_risk)
from sdc_dagster.spec.survey import UtilityLimits

#: Default of the linkage-risk threshold written into drafts with continuous keys.
MAX_LINKAGE_RISK = 0.2

def column_type(values: pd.Series) -> str:
    """The type of a column as the draft states it: integer, number, text, date or boolean."""
    if pd.api.types.is_bool_dtype(values):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(values):
        return "date"
    if pd.api.types.is_numeric_dtype(values):
        return "integer" if whole_numbers(values) else "number"
    return "text"


def _flow(value) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, allow_unicode=True, width=10_000).strip()
    return text.removesuffix("...").strip()  # a scalar is dumped as a document with an end marker


def _read_as(contents) -> list[str]:
    """The draft's comment lines on how the file was read: what was detected, and how to change it."""
    lines = [f"read as: {'; '.join(contents.notes)}"] if contents.notes else []
    if contents.notes and contents.format in ("csv", "spreadsheet"):
        lines.append("(detected from the file: change source.options, or give sdc init --sep/--encoding/"
                     "--decimal/--no-header/--sheet, to read it otherwise)")
    return lines


def _drafted_hierarchy(data: pd.DataFrame, v, nesting: list[str]) -> tuple[HierarchyRule | None, str]:
    """The hierarchy drafted for a categorical key (:func:`~sdc_dagster.spec.drafted_hierarchies.draft_rule`)
    and the comment that says what the plan search will merge (SPEC §8.2)."""
    if v.scale == "ordinal":
        return None, "ordinal: the plan search merges adjacent categories only (ranges such as '2, 3, 4')"
    rule = draft_rule(data, v.name, code_list=v.categories is not None, columns=[c for c in nesting if c != v.name])
    if rule is None and data[v.name].nunique() <= 2:
        return None, ""
    if rule is None:
        return None, ("none in the codes or the file: the search merges rare categories into 'Other (n categories)'; "
                      "give a file (ARX CSV, Argus .hrc) or {levels: [{name: ..., groups: {name: [codes]}}]}")
    if rule.kind == "bands":
        return rule, "drafted: bands of these round widths, bounds whole numbers ((20,25], (25,30], ...); edit the widths"
    first = rule.resolve(data, v.name).levels[0]
    shown = "; ".join(f"{name} = {members_name(group)}" for group, name in first.merged()[:3])
    where = ("the coarser columns it nests in (" + ", ".join(rule.columns) + ")" if rule.kind == "columns"
             else "the prefixes of its codes")
    return rule, f"drafted from {where}: {shown}{'; ...' if len(first.merged()) > 3 else ''}; edit or replace by a file"


#: The ``limits:`` section a draft writes: each utility limit at its default
#: (:class:`~sdc_dagster.spec.UtilityLimits`) with the reason for it.
LIMIT_REASONS = {
    "max_suppressed_share": "share of a key's values suppressed: above a tenth, estimates from the key "
                            "are biased by the missing rare values (Hundepool et al. 2012, ch. 3)",
    "max_records_changed": "share of records with a key suppressed or perturbed (a merged category is no "
                           "change): at most a quarter carry a missing or false classification",
    "max_mean_change": "relative change of a continuous key's mean: above 5 % a released mean is biased "
                       "(Hundepool et al. 2012, ch. 3)",
    "max_variance_change": "relative change of a variance: a fifth changes standard errors by about 10 %",
    "max_correlation_change": "absolute change of a correlation between continuous keys (relative changes "
                              "of correlations near 0 mean nothing)",
    "max_keys_not_released": "share of the keys withheld or released as one category: a release keeping no "
                             "detail of most keys is safe but of no use",
}


def _limits_lines() -> list[str]:
    """The drafted ``limits:`` section: every limit at its default with its reason in a comment."""
    defaults = UtilityLimits()
    lines = ["limits:                         # utility limits: a plan beyond one is withheld, never recommended"]
    for name, reason in LIMIT_REASONS.items():
        lines.append(f"  {name}: {getattr(defaults, name):g}".ljust(32) + f"# {reason}")
    return lines


def _global_risk_lines(records: int, *, weighted: bool) -> list[str]:
    """The drafted ``max_global_risk`` line with its reason (:func:`drafted_global_risk`)."""
    target = drafted_global_risk(records, weighted=weighted)
    if target == DRAFTED_GLOBAL_RISK:
        return [f"  max_global_risk: {target:g}         # expected share of re-identified records allowed "
                "(sdcMicro measure_risk)"]
    if target == DRAFTED_UNWEIGHTED_GLOBAL_RISK:
        return [
            f"  max_global_risk: {target:g}         # expected share of re-identified records allowed (sdcMicro "
            "measure_risk). Without",
            "                                # sampling weights a record's risk is 1/f_k (the file its own "
            f"population): the mean at most the individual-risk threshold; {DRAFTED_GLOBAL_RISK:g} would allow",
            "                                # one key combination per hundred records (Hundepool et al. 2012 §3.3)",
        ]
    return [
        f"  max_global_risk: {target:g}         # expected share of re-identified records allowed (sdcMicro "
        "measure_risk). Without",
        f"                                # sampling weights a record's risk is 1/f_k, so the global risk of "
        f"{records} records is at least",
        f"                                # 1/{records} = {1 / records:.3f} (every key suppressed), above "
        f"{DRAFTED_UNWEIGHTED_GLOBAL_RISK:g} whenever n < {round(1 / DRAFTED_UNWEIGHTED_GLOBAL_RISK)};",
        f"                                # this is the bound {DRAFTED_K}-anonymity meets by itself (every risk "
        f"at most 1/{DRAFTED_K}; Sweeney 2002, Hundepool et al. 2012 §3.3)",
    ]


def draft_spec(path: str | Path, survey: str, *, options: dict | None = None,
               max_keys: int = MAX_CATEGORICAL_KEYS) -> str:
    """A commented YAML survey spec for the data file ``path``, accepted by ``sdc check``.

    Parameters
    ----------
    path : a ``.csv``, ``.parquet``, ``.sav``, ``.zsav``, ``.dta``, ``.sas7bdat``, ``.xpt``,
        ``.xlsx``, ``.xlsm``, ``.xls``, ``.ods`` file, or Argus data (``.asc``, or a ``.csv`` with its
        ``.rda`` beside it); read by :func:`~sdc_dagster.spec.reading.read_with_metadata`.
    survey : the survey's name (a letter, then letters, digits or ``_``).
    options : reader options given on the command line (``sep``, ``encoding``, ``decimal``,
        ``header``, ``sheet``); the rest of the CSV dialect is detected.
    max_keys : categorical keys drafted at most (``sdc init --max-keys``), stated in the spec.

    Returns
    -------
    The spec text: the source (its format, the reader options that read it, with a comment saying
    what was detected; an Argus file's ``.rda`` as ``metadata``), every column with its type (and SPSS/Stata variable label) and its drafted role
    (:func:`draft_roles`) with a comment giving the reason, value labels as commented categories,
    SPSS user-missing codes as ``missing:``, the risk parameters of SPEC §12 (with
    ``max_linkage_risk`` when there are continuous keys), the utility limits (``limits:``, each at
    its default with its reason, :data:`LIMIT_REASONS`) and the plans to start from: local
    suppression to 3-anonymity when there are categorical keys, MDAV microaggregation (k = 5) of the
    continuous keys when there are continuous keys; and, when the draft decided something for the
    methodologist to confirm (a key candidate beyond what the records support, l not drafted:
    :func:`~sdc_dagster.spec.roles.draft_scenario`), ``report: draft_decisions:`` listing each with
    its reason, shown in the report's sign-off block.
    """
    path = Path(path)
    check_name("survey name", survey)
    contents = read_with_metadata(path, options=options)
    beside = {column: str(found.resolve()) for column, found in hierarchy_files_beside(path, contents.data.columns).items()
              if column not in contents.hierarchies}
    scenario = draft_scenario(contents, max_keys=max_keys, hierarchies=_given_hierarchies({**contents.hierarchies, **beside}))
    drafted = scenario.variables
    categorical = [v.name for v in drafted if v.role == "categorical_key"]
    continuous = [v.name for v in drafted if v.role == "continuous_key"]
    lines = _source_lines(path, survey, contents, max_keys) + _cap_lines(scenario)
    if not categorical and not continuous:
        lines.insert(3, "# No column looked like a key: give at least one the role categorical_key or continuous_key.")
    lines += ["variables:", *_variable_lines(contents, drafted, beside)]
    lines += _risk_lines(contents, drafted, continuous, scenario)
    lines += _decision_lines(scenario)
    lines.append("search: {enabled: true}          # search the plan that meets the risk target with the least loss")
    lines += ["plans:", *_plan_lines(categorical, continuous)]
    return "\n".join(lines) + "\n"


def _given_hierarchies(files: dict[str, str]) -> dict[str, Hierarchy]:
    """The hierarchies the draft will name (an Argus ``<HIERCODELIST>``, an ARX file beside the data),
    read so that the key cap and l are measured at their coarsest levels
    (:func:`~sdc_dagster.spec.roles.key_cap`). A file that does not read is left out here: the spec
    still names it and ``sdc check`` reports what is wrong with it."""
    given = {}
    for column, file in files.items():
        try:
            given[column] = read_hierarchy_file(file)
        except SDCInputError:
            continue
    return given


def _source_lines(path: Path, survey: str, contents, max_keys: int) -> list[str]:
    """The draft's opening comment (records, columns, the key cap) and its ``survey``, ``title`` and
    ``source`` entries: the format, the reader options and what was detected."""
    lines = [
        f"# Survey spec drafted by `sdc init` from {path.name} ({len(contents.data)} records,",
        f"# {contents.data.shape[1]} columns). Every role below is a GUESS with its reason: check each one,",
        "# above all which variables an intruder could know (the keys), then run `sdc check` on this file.",
        f"# At most {max_keys} categorical keys are drafted, by the scenario's priority (sdc init --max-keys N;",
        f"# the default is MAX_CATEGORICAL_KEYS = {MAX_CATEGORICAL_KEYS} in sdc_dagster/spec/roles.py).",
        f"survey: {survey}",
        f"title: {_flow(path.stem)}",
        "source:",
        f"  path: {_flow(str(path.resolve()))}",
        f"  format: {contents.format}",
    ]
    if contents.source_options:
        lines.append(f"  options: {_flow(contents.source_options)}")
    if contents.metadata_path:
        lines.append(f"  metadata: {_flow(contents.metadata_path)}")
    lines += [f"  # {note}" for note in _read_as(contents)]
    return lines


def _cap_lines(scenario) -> list[str]:
    """The draft's comment on the key cap the file's records support
    (:func:`~sdc_dagster.spec.roles.key_cap`), when it binds below ``--max-keys``."""
    cap = scenario.cap
    if cap is None or not scenario.decisions or not any(d.split(": ", 1)[1].startswith("candidate key beyond")
                                                        for d in scenario.decisions if ": " in d):
        return []
    lines = [f"# The {cap.records} records support {cap.cap} categorical key{'s' if cap.cap > 1 else ''} at {cap.at}"
             f"{' and l = ' + str(cap.l) if cap.l else ''} (key_cap in sdc_dagster/spec/roles.py):",
             f"# 2^m combinations of m keys of two classes fit n / {cap.k} = {cap.records // cap.k} groups up to m = "
             f"{cap.by_records}, and with each of the",
             f"# first m ranked keys {cap.coarsest}, at most {cap.limit:.0%} (the suppression limit)",
             "# of the records may need suppression: in combinations below "
             f"{cap.k}" + (" or l" if cap.l else "")
             + (f", or of the highest risk above the global-risk target {cap.max_risk:g}" if cap.max_risk else "") + ".",
             "# The keys left out are listed under report.draft_decisions: confirm them or make them keys."]
    if cap.cap == 1 or cap.records < 2 ** 3 * cap.k:
        lines.append(f"# A file of {cap.records} records is small: it can keep {cap.cap} key"
                     f"{'s' if cap.cap > 1 else ''} with some detail at k = {cap.k}, no more.")
    return lines


def _decision_lines(scenario) -> list[str]:
    """The ``report:`` section listing the draft's decisions to confirm (a key beyond the cap, l not
    drafted; :class:`~sdc_dagster.spec.roles.DraftedScenario`): the report's sign-off block shows
    them. Empty when the draft decided nothing the methodologist must confirm."""
    if not scenario.decisions:
        return []
    lines = ["report:                         # the report's sign-off block lists these draft decisions to confirm",
             "  draft_decisions:"]
    lines += [f"    - {_flow(decision)}" for decision in scenario.decisions]
    return lines


def _variable_lines(contents, drafted: list, beside: dict[str, str]) -> list[str]:
    """One ``variables`` entry per drafted column (:func:`draft_roles`): role, scale, categories or
    order, missing codes, a continuous key's precision and a categorical key's hierarchy (declared in
    the metadata, an ARX hierarchy file beside the data (``beside``,
    :func:`~sdc_dagster.spec.hierarchies.hierarchy_files_beside`) or drafted by
    :func:`_drafted_hierarchy`), with its type, label and the guess's reason as comments."""
    lines = []
    # a coarser column drafted for removal as a copy of a key (a province beside the municipality)
    # still gives that key its hierarchy: the search merges along it, the release leaves it out
    nesting = [v.name for v in drafted
               if v.role in ("categorical_key", "other", "direct_identifier") and v.scale != "continuous"]
    for v in drafted:
        entry = {"role": v.role}
        if v.scale is not None:
            entry["scale"] = v.scale
        if v.categories is not None:
            entry["order" if v.scale == "ordinal" else "categories"] = list(v.categories)
        if v.missing:
            entry["missing"] = [plain_scalar(m) for m in v.missing]
        if v.role == "continuous_key":
            entry["precision"] = 0.01
        hierarchy_note = None
        if v.role == "categorical_key" and v.name in contents.hierarchies:
            entry["hierarchy"] = {"file": contents.hierarchies[v.name]}
            hierarchy_note = "declared in the metadata (<HIERCODELIST>): the plan search generalises along it"
        elif v.role == "categorical_key" and v.name in beside:
            entry["hierarchy"] = {"file": beside[v.name]}
            hierarchy_note = (f"ARX's hierarchy file {Path(beside[v.name]).name} beside the data: the plan search "
                              "generalises along its levels")
        elif v.name in beside:
            hierarchy_note = (f"ARX's hierarchy file {Path(beside[v.name]).name} is beside the data: make "
                              f"{v.name} a categorical_key to generalise along it")
        elif v.role == "categorical_key":
            rule, hierarchy_note = _drafted_hierarchy(contents.data, v, nesting)
            if rule is not None:
                entry["hierarchy"] = rule.spec_entry()
        lines.append(f"  {_flow(v.name)}: {_flow(entry)}")
        label = contents.column_labels.get(v.name)
        lines.append(f"    # type: {column_type(contents.data[v.name])}" + (f"; label: {label}" if label else ""))
        lines.append(f"    # guess: {v.reason}")
        if v.category_labels:
            shown = ", ".join(f"{plain_scalar(code)} = {label}" for code, label in v.category_labels.items())
            lines.append(f"    # labels: {shown}")
        if hierarchy_note:
            lines.append(f"    # hierarchy: {hierarchy_note}")
    return lines


def _risk_lines(contents, drafted: list, continuous: list[str], scenario) -> list[str]:
    """The ``risk`` entry of SPEC §12: k-anonymity (Sweeney 2002), l-diversity (Machanavajjhala et
    al. 2007), the global and individual risk bounds, ``max_linkage_risk`` when there are
    continuous keys; then the utility ``limits`` (:func:`_limits_lines`)."""
    lines = [
        "risk:",
        f"  k: {DRAFTED_K}                          # k-anonymity threshold (Sweeney 2002; Hundepool et al. 2012, ch. 3)",
        *([f"  l: {scenario.l}                          # l-diversity of sensitive variables (Machanavajjhala "
           "et al. 2007)"] if scenario.l is not None else [f"  # {scenario.l_reason}"]),
        *_global_risk_lines(len(contents.data), weighted=any(v.role == "weight" for v in drafted)),
        "  individual_risk_threshold: 0.05",
    ]
    if continuous:
        lines += [
            f"  max_linkage_risk: {MAX_LINKAGE_RISK}         # share of released records that the best record "
            "linkage an",
            "                                # intruder could run on the continuous keys links to their own",
            "                                # original record: at most one in five (next to sdcMicro's dRisk,",
            "                                # the share of records whose masked values stay near the original)",
        ]
    lines += _limits_lines()
    return lines


def _plan_lines(categorical: list[str], continuous: list[str]) -> list[str]:
    """The plans to start from: local suppression to 3-anonymity when there are categorical keys
    (then MDAV microaggregation, k = 5, of the continuous keys within each released key combination),
    MDAV microaggregation of the continuous keys alone, or a suppression plan once keys are chosen."""
    lines = []
    if categorical:
        # With continuous keys too, the amounts are microaggregated within each released key
        # combination: released unchanged (or averaged across key combinations) they would link each
        # record back to its original (the linkage_risk check).
        lines += [
            "  suppress_k3:",
            "    description: local suppression of the categorical keys to 3-anonymity"
            + (", then MDAV microaggregation of the continuous keys within each released key combination"
               " (groups of at least 5), so that they do not single out a record among those sharing its key"
               if continuous else " (a plan to start from)"),
            "    k: 3",
            "    steps:",
            "      - {method: local_suppression, k: 3}",
        ]
        if continuous:
            lines.append(f"      - {{method: microaggregation, columns: {_flow(continuous)}, k: {DRAFTED_MICROAGGREGATION_K}, "
                         f"strata: {_flow(categorical)}}}")
    elif continuous:
        lines += [
            "  microaggregate_k5:",
            "    description: MDAV microaggregation of the continuous keys in groups of at least 5",
            "    steps:",
            f"      - {{method: microaggregation, columns: {_flow(continuous)}, k: 5}}",
        ]
    if not categorical and not continuous:
        lines += [
            "  suppress_k3:",
            "    description: local suppression of the categorical keys to 3-anonymity (once keys are chosen)",
            "    k: 3",
            "    steps:",
            "      - {method: local_suppression, k: 3}",
        ]
    return lines
