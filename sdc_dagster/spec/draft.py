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

from sdc_dagster.names import check_name
from sdc_dagster.spec.reading import read_with_metadata
from sdc_dagster.spec.roles import draft_roles, plain_scalar, whole_numbers
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
}


def _limits_lines() -> list[str]:
    """The drafted ``limits:`` section: every limit at its default with its reason in a comment."""
    defaults = UtilityLimits()
    lines = ["limits:                         # utility limits: a plan beyond one is withheld, never recommended"]
    for name, reason in LIMIT_REASONS.items():
        lines.append(f"  {name}: {getattr(defaults, name):g}".ljust(32) + f"# {reason}")
    return lines


def draft_spec(path: str | Path, survey: str) -> str:
    """A commented YAML survey spec for the data file ``path``, accepted by ``sdc check``.

    Parameters
    ----------
    path : a ``.csv``, ``.parquet``, ``.sav``, ``.zsav``, ``.dta``, ``.sas7bdat`` or ``.xpt`` file.
    survey : the survey's name (a letter, then letters, digits or ``_``).

    Returns
    -------
    The spec text: every column with its type (and SPSS/Stata variable label) and its drafted role
    (:func:`draft_roles`) with a comment giving the reason, value labels as commented categories,
    SPSS user-missing codes as ``missing:``, the risk parameters of SPEC §12 (with
    ``max_linkage_risk`` when there are continuous keys), the utility limits (``limits:``, each at
    its default with its reason, :data:`LIMIT_REASONS`) and the plans to start from: local
    suppression to 3-anonymity when there are categorical keys, MDAV microaggregation (k = 5) of the
    continuous keys when there are continuous keys.
    """
    path = Path(path)
    check_name("survey name", survey)
    contents = read_with_metadata(path)
    drafted = draft_roles(contents)
    lines = [
        f"# Survey spec drafted by `sdc init` from {path.name} ({len(contents.data)} records,",
        f"# {contents.data.shape[1]} columns). Every role below is a GUESS with its reason: check each one,",
        "# above all which variables an intruder could know (the keys), then run `sdc check` on this file.",
        f"survey: {survey}",
        f"title: {_flow(path.stem)}",
        "source:",
        f"  path: {_flow(str(path.resolve()))}",
        f"  format: {contents.format}",
        "variables:",
    ]
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
        lines.append(f"  {_flow(v.name)}: {_flow(entry)}")
        label = contents.column_labels.get(v.name)
        lines.append(f"    # type: {column_type(contents.data[v.name])}" + (f"; label: {label}" if label else ""))
        lines.append(f"    # guess: {v.reason}")
        if v.category_labels:
            shown = ", ".join(f"{plain_scalar(code)} = {label}" for code, label in v.category_labels.items())
            lines.append(f"    # labels: {shown}")
    categorical = [v.name for v in drafted if v.role == "categorical_key"]
    continuous = [v.name for v in drafted if v.role == "continuous_key"]
    lines += [
        "risk:",
        "  k: 3                          # k-anonymity threshold (SPEC §3.3)",
        "  l: 2                          # l-diversity of sensitive variables (SPEC §3.6)",
        "  max_global_risk: 0.01         # expected share of re-identified records allowed (SPEC §3.4)",
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
    lines.append("search: {enabled: true}          # search the plan that meets the risk target with the least loss")
    lines.append("plans:")
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
            lines.append(f"      - {{method: microaggregation, columns: {_flow(continuous)}, k: 5, "
                         f"strata: {_flow(categorical)}}}")
    elif continuous:
        lines += [
            "  microaggregate_k5:",
            "    description: MDAV microaggregation of the continuous keys in groups of at least 5",
            "    steps:",
            f"      - {{method: microaggregation, columns: {_flow(continuous)}, k: 5}}",
        ]
    if not categorical and not continuous:
        lines.insert(3, "# No column looked like a key: give at least one the role categorical_key or continuous_key.")
        lines += [
            "  suppress_k3:",
            "    description: local suppression of the categorical keys to 3-anonymity (once keys are chosen)",
            "    k: 3",
            "    steps:",
            "      - {method: local_suppression, k: 3}",
        ]
    return "\n".join(lines) + "\n"
