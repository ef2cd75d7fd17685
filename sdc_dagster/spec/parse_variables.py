"""A spec's ``variables:`` section: each variable's role, scale, categories, missing codes and
hierarchy (given inline, as a file, or as a rule the draft writes) into a
:class:`~sdc_dagster.spec.survey.Variable` (SPEC §1.1, §1.2, §8.2), every problem recorded with
where it is written (:class:`~sdc_dagster.spec.problems.Problems`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sdc_dagster.errors import SDCInputError, did_you_mean
from sdc_dagster.spec.drafted_hierarchies import HierarchyRule
from sdc_dagster.spec.hierarchies import Hierarchy, inline_hierarchy, read_codelist, read_hierarchy_file, value_text
from sdc_dagster.spec.problems import FAILED, Problems, as_mapping, expect
from sdc_dagster.spec.survey import ROLES, SCALES, SpecError, Variable


def _categories(raw: Mapping, where: str) -> tuple | None:
    """A variable's ``categories:`` (or ``order:``, which must list the same ones), or None."""
    categories = raw.get("order", raw.get("categories"))
    if "order" in raw and "categories" in raw:
        expect(
            isinstance(raw["order"], list) and isinstance(raw["categories"], list)
            and sorted(map(str, raw["order"])) == sorted(map(str, raw["categories"])),
            f"{where}.order",
            "the same categories as 'categories' (the order of an ordinal variable lists every category once)",
        )
    if categories is None:
        return None
    expect(isinstance(categories, list) and len(categories) > 0, f"{where}.categories", "a non-empty list")
    expect(len(set(map(str, categories))) == len(categories), f"{where}.categories", "distinct values")
    return tuple(categories)


def _precision(precision: Any, where: str) -> float | None:
    if precision is None:
        return None
    expect(isinstance(precision, (int, float)) and 0 < precision < 1, f"{where}.precision", "a number in (0, 1)")
    return float(precision)


def parse_variable(name: str, raw: Any, global_missing: tuple, base: Path | None,
                    problems: Problems) -> Variable | None:
    """One variable; its independent problems (unknown keys, categories, missing codes, precision)
    are recorded, a wrong role or scale raises (the remaining rules depend on them). The variable is
    returned when its role, scale and categories are right, for the checks that read them."""
    where = f"variables.{name}"
    expect(isinstance(name, str) and bool(name), "variables", "non-empty column names")
    raw = as_mapping(raw, where)
    problems.unknown_keys(raw, where, {"role", "scale", "categories", "order", "missing", "precision", "label", "hierarchy"})
    categories = problems.attempt(_categories, raw, where, default=FAILED)
    missing = raw.get("missing", list(global_missing))
    problems.attempt(expect, isinstance(missing, list), f"{where}.missing", "a list of missing-value codes")
    precision = problems.attempt(_precision, raw.get("precision"), where, default=FAILED)
    expect("role" in raw, f"{where}.role", f"one of {list(ROLES)} (missing)")
    role = raw["role"]
    expect(role in ROLES, f"{where}.role", f"one of {list(ROLES)}, got {role!r}{did_you_mean(role, ROLES)}")
    scale = raw.get("scale")
    if scale is None:
        scale = {"categorical_key": "nominal", "continuous_key": "continuous", "weight": "continuous"}.get(role)
    expect(scale is None or scale in SCALES, f"{where}.scale",
            f"one of {list(SCALES)}, got {scale!r}{did_you_mean(scale, SCALES)}")
    if role == "continuous_key":
        expect(scale == "continuous", f"{where}.scale", "'continuous' for a continuous_key")
    if role == "categorical_key":
        expect(scale in ("nominal", "ordinal"), f"{where}.scale", "'nominal' or 'ordinal' for a categorical_key")
    if scale == "ordinal" and categories is not FAILED:
        expect(categories is not None, f"{where}.order", "the category order (a list) for an ordinal variable")
    if role == "continuous_key" and precision is not FAILED:
        expect(precision is not None, f"{where}.precision", "p_j in (0, 1) for a continuous key (SPEC §5.2)")
    if categories is FAILED:
        return None  # the hierarchy's categories cannot be checked; the error is recorded
    return Variable(
        name=name,
        role=role,
        scale=scale,
        categories=categories,
        missing_codes=tuple(missing) if isinstance(missing, list) else (),
        precision=None if precision is FAILED else precision,
        hierarchy=problems.attempt(_parse_hierarchy, raw.get("hierarchy"), f"{where}.hierarchy", role, categories,
                                   base, problems),
    )


def _parse_hierarchy(raw: Any, where: str, role: str, categories: tuple | None, base: Path | None,
                     problems: Problems) -> Hierarchy | HierarchyRule | None:
    """A categorical key's generalisation hierarchy (for the plan search, SPEC §8.2), one of:

    * a list of levels, each a list of groups of categories merged (the categories a level does not
      list stay alone), or ``{levels: [{name: ..., groups: {group name: [categories]}}, ...]}``;
    * a hierarchy file, ``hierarchy: path`` or ``{file: path, leadstring: "@", codelist: path.cdl,
      separator: ";"}``, the path relative to the spec's folder: ARX's hierarchy CSV or an Argus
      ``.hrc`` (:mod:`sdc_dagster.spec.hierarchies`);
    * a rule the data complete (:mod:`sdc_dagster.spec.drafted_hierarchies`): ``{prefixes: [3, 2, 1]}``
      (codes cut to 3, 2, 1 characters), ``{columns: [province, region]}`` (coarser columns of the file),
      ``{bands: [5, 10, 20]}`` (round-width bands, each width a multiple of the one before).

    Each level must coarsen the one before; an error names the level (or the file and its line)."""
    if raw is None:
        return None
    expect(role == "categorical_key", where, "only on a categorical_key")
    try:
        if isinstance(raw, list):
            expect(len(raw) > 0, where, "a non-empty list of levels, each a list of groups")
            hierarchy = _levels_hierarchy(raw, where)
        elif isinstance(raw, str):
            hierarchy = _file_hierarchy({"file": raw}, where, base)
        else:
            raw = as_mapping(raw, where)
            forms = [k for k in ("file", "levels", "prefixes", "columns", "bands") if k in raw]
            expect(len(forms) == 1, where, "one of 'file', 'levels', 'prefixes', 'columns' or 'bands'"
                    + (f", got {forms}" if forms else ""))
            allowed = {"file", "leadstring", "codelist", "separator"} if forms[0] == "file" else {forms[0]}
            problems.unknown_keys(raw, where, allowed)
            if forms[0] == "file":
                hierarchy = _file_hierarchy(raw, where, base)
            elif forms[0] == "levels":
                hierarchy = _levels_hierarchy(raw["levels"], f"{where}.levels")
            else:
                hierarchy = _rule_hierarchy(forms[0], raw[forms[0]], f"{where}.{forms[0]}")
    except SDCInputError as exc:
        raise SpecError(f"{where}: {exc}", key=where) from None
    if isinstance(hierarchy, Hierarchy) and categories is not None:
        if hierarchy.complete:
            try:
                hierarchy.on_categories(categories)
            except SDCInputError as exc:
                raise SpecError(f"{where}: category of the variable missing: {exc}", key=where) from None
        else:
            known = set(map(value_text, categories))
            unknown = [v for v in hierarchy.values if value_text(v) not in known]
            expect(not unknown, where, f"categories of the variable, got {unknown}")
    return hierarchy


def _levels_hierarchy(raw: Any, where: str) -> Hierarchy:
    try:
        return inline_hierarchy(raw, where=where)
    except SDCInputError as exc:  # the level named in the message is the key of its YAML line
        at = str(exc).split(":", 1)[0]
        raise SpecError(str(exc), key=at if at.startswith(where) else where) from None


def _file_hierarchy(raw: Mapping, where: str, base: Path | None) -> Hierarchy:
    """A hierarchy file (ARX CSV or Argus .hrc), its path relative to the spec's folder."""
    for name in ("file", "leadstring", "codelist", "separator"):
        expect(name not in raw or (isinstance(raw[name], str) and raw[name]), f"{where}.{name}", "a non-empty string")
    folder = base if base is not None else Path.cwd()
    options = {}
    if "codelist" in raw:
        options["labels"] = read_codelist(folder / raw["codelist"])
    if "leadstring" in raw:
        options["leadstring"] = raw["leadstring"]
    if "separator" in raw:
        options["separator"] = raw["separator"]
    return read_hierarchy_file(folder / raw["file"], **options)


def _rule_hierarchy(kind: str, value: Any, where: str) -> HierarchyRule:
    """``prefixes``, ``columns`` or ``bands`` (see :func:`_parse_hierarchy`)."""
    expect(isinstance(value, list) and len(value) > 0, where, "a non-empty list")
    if kind == "prefixes":
        expect(all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in value)
                and all(b < a for a, b in zip(value, value[1:])), where,
                f"code lengths, decreasing and positive (finest first), got {value}")
        return HierarchyRule("prefixes", lengths=tuple(value))
    if kind == "columns":
        expect(all(isinstance(c, str) and c for c in value), where, "a list of column names, finest first")
        return HierarchyRule("columns", columns=tuple(value))
    numbers = all(isinstance(w, (int, float)) and not isinstance(w, bool) and w > 0 for w in value)
    expect(numbers and all(b > a and abs(b / a - round(b / a)) < 1e-9 for a, b in zip(value, value[1:])), where,
            f"positive band widths, each a multiple of the one before (so that the bands nest), got {value}")
    return HierarchyRule("bands", widths=tuple(float(w) for w in value))
