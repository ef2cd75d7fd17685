"""The roles a spec draft proposes for the columns of a data file (SPEC §1.1, §1.2). Every column
gets a guessed role with the reason, because a guess is only a proposal: the methodologist decides
which variables an intruder could know.

The roles follow a disclosure scenario (:func:`draft_roles`; the key variables an intruder knows
from registers or acquaintance, Hundepool et al. 2012, "Statistical Disclosure Control", chapter 3,
and the mu-Argus manual's identification levels):

* roles declared in the file's metadata (an Argus ``.rda``'s ``<RECORDKEY>``, ``<WEIGHT>``,
  ``<HHID>``, ``<IDLEVEL>``: :attr:`FileContents.roles`) are taken as given;
* direct identifiers and record ids (unique or near-unique per record, id-like names) are never
  keys; a numeric column unique per record that is no amount and no scenario variable is a record
  key, whatever its name: the record id (the release renumbers it), a second one a direct
  identifier (removed); a household or cluster id is a column named like one whose values repeat
  and within whose groups some other variable is constant; a person number within households is an
  id too;
* weights are recognised by name, SPSS/Stata variable label or statistical office code (Eurostat's
  EU-SILC DB090, RB050, PB040, ..., the LFS's COEFF) and by shape (positive; a weakly named one,
  misspelt ones such as "Weigt" included, must sum to at least :data:`WEIGHT_SUM_RATIO` times the
  record count);
* categorical keys are the variables an intruder knows (:data:`SCENARIO`, in priority order: age,
  sex, region, marital status, household size, household composition, citizenship or country of
  birth, ethnicity or race, education, occupation, economic activity, then sdcMicro's relationship
  and dwelling variables), recognised by name (English, some Polish and Spanish), label and the
  variable codes of EU-SILC, the LFS and sdcMicro's examples; at most :data:`MAX_CATEGORICAL_KEYS`
  (``sdc init --max-keys``), taken one per scenario group in turn; other categorical candidates are
  ``other`` with a comment saying why they could be keys;
* ages, years of birth, household sizes and other counts in whole numbers are categorical keys on
  an ordinal scale, never continuous keys (microaggregation or noise would release fractional years
  or persons; the plan search bands them);
* amounts (income, earnings, turnover, ...) and scenario variables with many fractional values are
  continuous keys, at most :data:`MAX_CONTINUOUS_KEYS` (scenario variables, then totals, then file
  order); the other amounts are ``other``: an intruder rarely knows a component of an income, and
  l-diversity on a continuous amount says nothing, so they are not made ``sensitive`` either; hours
  worked, scores and ratios are not amounts (``other``, saying they could be keys); logs and squares
  of another column are ``other``;
* a column that copies or derives from a key (a grouped code beside the detailed one, a year of
  birth beside the age, the household head's age beside each person's) is removed before release
  (``direct_identifier``, with the reason: :func:`_derived_from_keys`);
* a file with no scenario variable and no amount (measurements, not persons) gets its first
  candidates as keys, saying so, so that the draft checks and runs unedited;
* a constant column carries no information and is never a key; ``sensitive`` is what an intruder
  wants to learn: special categories of personal data (health, religion, trade-union membership,
  politics, sex life) and amounts in classes (income or salary class, benefits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from sdc_dagster.spec.reading import FileContents
from sdc_dagster.spec.scenario import (
    AMOUNT_CODE, AMOUNT_LABEL, AMOUNT_TOKEN, CLUSTER_TOKEN, CODED_GROUPS, COUNT_TOKEN, HOUSEHOLD_LEVEL,
    HOUSEHOLD_TOKEN, IDENTIFIER_TOKEN, ID_SUFFIX, ID_TOKEN, MIN_NAMES, NAME_SUFFIX, NOT_WEIGHT_LABEL,
    ORDERED_CODE_GROUPS, ORDINAL_GROUPS, PERSON_TOKEN, SCENARIO, SENSITIVE_LABEL, SENSITIVE_TOKEN, TOTAL_TOKEN,
    VARIABLE_CODES,
    WEAK_WEIGHT_TOKEN, WEIGHT_LABEL, WEIGHT_TOKEN, WEIGHT_WORDS, derived_name_of, name_tokens, named,
    scenario_group,
)

#: At most this many distinct values make a numeric column without labels a categorical variable.
MAX_CATEGORIES = 20
#: A cluster id (school, sampling unit) groups at most this many records on average; a column with
#: fewer, larger groups (a yes/no flag named like an id) is not one.
MAX_GROUP_SIZE = 1000
#: A household number has records of at most this many persons on average (clusters may be larger).
MAX_HOUSEHOLD_SIZE = 20
#: A column whose values are unique on more than this share of records identifies them on its own.
IDENTIFIER_SHARE = 0.95
#: A household or cluster id: some other variable is constant in at least this share of its groups.
CONSTANT_WITHIN_SHARE = 0.95
#: A column only weakly named like a weight ("factor", "w") must sum to this many times the records.
WEIGHT_SUM_RATIO = 2.0
#: A column unique per record is taken for a record key only in a file of at least this many records.
MIN_RECORD_KEY_RECORDS = 20
#: A column copying or deriving from a key: the share of records (or households) the relation holds on.
DERIVED_SHARE = 0.99
#: A function of a categorical key is looked for when the key has this many records per category on average.
MIN_RECORDS_PER_CATEGORY = 10
#: A year beside an age is looked for among whole numbers with at least this many values.
MIN_DERIVED_VALUES = 10
#: Categorical keys drafted at most (more make nearly every record unique and the risk step costly).
MAX_CATEGORICAL_KEYS = 8
#: Continuous keys drafted at most.
MAX_CONTINUOUS_KEYS = 4
#: Categorical keys drafted from candidates outside the scenario when a file has no scenario variable.
FALLBACK_KEYS = 4


@dataclass(frozen=True)
class DraftedVariable:
    """One column of the draft: its guessed role and scale, and why.

    ``group`` is the scenario group of a key candidate, ``"amount"``, ``"categorical candidate"`` or
    ``"continuous candidate"`` for a column outside the scenario that could be a key, ``"id"`` for an
    id-named column that is neither unique nor a household id, ``"constant"``, ``"weight"`` or
    ``"household weight"`` (a person's weight is preferred), ``"candidate"`` for a household id not
    yet confirmed, ``"declared"`` for a role the file's metadata declares (never capped or
    replaced); ``rank`` orders continuous key candidates (lower first)."""

    name: str
    role: str
    reason: str
    scale: str | None = None
    categories: tuple | None = None
    category_labels: dict | None = None
    missing: tuple = ()
    group: str | None = None
    rank: int = 0


def plain_scalar(value):
    """A YAML-friendly Python scalar (integers stay integers)."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return int(value) if float(value).is_integer() else float(value)
    return value


def whole_numbers(values: pd.Series) -> bool:
    """Whether a column is numeric and every observed value a whole number."""
    return pd.api.types.is_numeric_dtype(values) and bool(np.all(np.mod(values.dropna().to_numpy(float), 1) == 0))


def record_key_like(values: pd.Series) -> bool:
    """Whether a released column looks like a numeric record key: at least
    :data:`MIN_RECORD_KEY_RECORDS` records, every value a whole number, none missing, every value
    distinct, and either consecutive (a record number) or all of one number of digits (a fixed-width
    key such as 100231, 100877, ...). Released unchanged, such a column links every record one to one
    to the original file. Amounts unique per record (incomes to the unit) vary in their number of
    digits; the rule leaves them to the continuous keys' linkage check."""
    if len(values) < MIN_RECORD_KEY_RECORDS or pd.api.types.is_bool_dtype(values) \
            or not pd.api.types.is_numeric_dtype(values) or values.isna().any() or not whole_numbers(values):
        return False
    numbers = values.to_numpy(dtype=float)
    if len(np.unique(numbers)) < len(numbers):
        return False
    if numbers.max() - numbers.min() + 1 == len(numbers):
        return True
    digits = np.floor(np.log10(np.maximum(np.abs(numbers), 1))) + 1
    return bool(np.all(digits == digits[0]))


def guess_variable(name: str, values: pd.Series, *, labels: dict | None = None, measure: str | None = None,
                   missing: tuple = (), label: str = "", columns=(), grouping: bool = True) -> DraftedVariable:
    """The role (SPEC §1.1) and scale (§1.2) a column most likely has on its own, with the reason.

    Rules, first match wins:

    * named or labelled like a weight (or an office's weight code), positive (and, when only weakly
      named, summing to :data:`WEIGHT_SUM_RATIO` times the records) -> weight, even when constant
      (an equal-probability sample); named like one but with zeros -> ``other``, saying so;
    * one observed value -> ``other`` (constant);
    * named like a direct identifier and unique on most records, text unique per record, or named
      like an id and unique per record -> direct identifier;
    * named like a cluster or other id, or like a household (not a scenario variable such as
      ``hh_size``; at most :data:`MAX_HOUSEHOLD_SIZE` records per value on average), with repeating
      values -> ``household_id`` candidate (:func:`draft_roles` confirms it against the other
      columns; with ``grouping=False`` it was refused, and an id-named one becomes ``other``);
    * consecutive whole numbers, one per record -> record id;
    * a categorical column (labels, measured nominal/ordinal, text, at most :data:`MAX_CATEGORIES`
      whole-number codes, a scenario variable with few values such as age classes 17.5, 22, ..., or
      the whole-number codes of a coded scenario group such as occupation) -> sensitive when named
      like a special category of personal data, a categorical key when it is a scenario variable
      (:func:`scenario_group`), else ``other``;
    * a numeric column derived from another (log, square) -> ``other``; a scenario variable or an
      amount -> continuous key candidate; anything else -> ``other``.

    The caps and one-of-each rules are applied by :func:`draft_roles`.
    """
    c = _ColumnFacts.of(name, values, labels=labels, measure=measure, missing=missing, label=label)
    weight = _weight_guess(name, c.observed, c.code, c.tokens, c.label, c.numeric, unobserved=c.n - len(c.observed))
    if weight is not None:  # before the constant rule: an equal-probability sample has a constant weight
        return weight
    if len(c.counts) <= 1:
        return DraftedVariable(name, "other", "constant: carries no information" if len(c.counts) else
                               "no observed value: carries no information", group="constant")
    identifier = _identifier_guess(c, grouping)
    if identifier is not None:
        return identifier
    if c.whole and c.unique_share > IDENTIFIER_SHARE and not c.labels \
            and c.observed.max() - c.observed.min() + 1 == len(c.counts):
        return DraftedVariable(name, "record_id", "consecutive whole numbers, one per record: a record number")
    group = scenario_group(name, c.label)
    amount_named = bool(c.code in ("total amount", "amount") or AMOUNT_CODE.fullmatch(name)
                        or named(AMOUNT_TOKEN, c.tokens) or AMOUNT_LABEL.search(c.label))
    return (_record_key_guess(c, group, amount_named) or _categorical_guess(c, group, amount_named)
            or _continuous_guess(c, group, amount_named, columns))


@dataclass(frozen=True)
class _ColumnFacts:
    """What :func:`guess_variable`'s rules read of one column: its observed values (the missing codes
    dropped), their counts, the share of records whose value is unique, and its name's office code
    and words."""

    name: str
    values: pd.Series
    observed: pd.Series
    counts: pd.Series
    n: int
    unique_share: float
    numeric: bool
    whole: bool
    code: str | None
    tokens: list
    label: str
    labels: dict | None
    measure: str | None
    missing: tuple

    @classmethod
    def of(cls, name: str, values: pd.Series, *, labels: dict | None, measure: str | None, missing: tuple,
           label: str) -> _ColumnFacts:
        observed = values[~values.isin(missing)].dropna() if missing else values.dropna()
        n = len(values)
        counts = observed.value_counts()
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        return cls(name, values, observed, counts, n, float((counts == 1).sum() / n) if n else 0.0, numeric,
                   bool(numeric and whole_numbers(values)), VARIABLE_CODES.get(name.lower()), name_tokens(name),
                   label or "", labels, measure, missing)


def _identifier_guess(c: _ColumnFacts, grouping: bool) -> DraftedVariable | None:
    """The identifier rules of :func:`guess_variable`: a direct identifier (named like one and unique on
    most records, text unique per record, a name column, an id unique per record), a household or
    cluster id candidate, or an id that is never a key; None when the column is no identifier."""
    name, observed, counts, n, unique_share = c.name, c.observed, c.counts, c.n, c.unique_share
    numeric, code, tokens, label = c.numeric, c.code, c.tokens, c.label
    if (named(IDENTIFIER_TOKEN, tokens) or re.search(r"\bname\b|address|phone|e-?mail", label, re.I)) \
            and unique_share > IDENTIFIER_SHARE / 2:
        return DraftedVariable(name, "direct_identifier",
                               f"named like an identifier and unique on {unique_share:.0%} of records; it is "
                               "removed before release")
    if not numeric and unique_share > IDENTIFIER_SHARE:
        return DraftedVariable(name, "direct_identifier",
                               f"text unique on {unique_share:.0%} of records: it identifies them on its own")
    if (not numeric or c.labels) and NAME_SUFFIX.search(name) and len(counts) >= MIN_NAMES:
        return DraftedVariable(name, "direct_identifier",
                               f"text named like a name with {len(counts)} different values: a name identifies its "
                               "unit (a person, a firm) even where the unit has several records; removed before release")
    id_named = (code == "id" or named(ID_TOKEN, tokens) or named(PERSON_TOKEN, tokens)
                or bool(ID_SUFFIX.search(name)))
    # "hh_size", "hh_region": household words in a scenario variable's name; households hold few persons
    household_named = (named(HOUSEHOLD_TOKEN, tokens) and scenario_group(name, label) is None
                       and len(observed) <= MAX_HOUSEHOLD_SIZE * len(counts))
    group_named = household_named or named(CLUSTER_TOKEN, tokens)
    if (id_named or group_named) and unique_share > IDENTIFIER_SHARE:
        return DraftedVariable(name, "direct_identifier",
                               f"named like an id and unique on {unique_share:.0%} of records: it identifies "
                               "them; it is removed before release")
    if grouping and (id_named or group_named) and len(counts) < len(observed) and len(observed) < n:
        return DraftedVariable(name, "other",
                               f"named like a household or cluster id, but missing on {n - len(observed)} records: "
                               "the household risk needs every record's household; never a key", group="id")
    if grouping and (id_named or group_named) and len(observed) / MAX_GROUP_SIZE <= len(counts) < len(observed):
        return DraftedVariable(name, "household_id",
                               f"named like a household or cluster id; {len(counts)} groups for {len(observed)} "
                               "records",
                               group="candidate")
    if id_named and not grouping:
        return DraftedVariable(name, "other",
                               "named like an id, but neither unique per record nor grouping records that share "
                               "other values (an id of another unit, or a person number): never a key", group="id")
    return None


def _record_key_guess(c: _ColumnFacts, group: str | None, amount_named: bool) -> DraftedVariable | None:
    """A numeric record key of :func:`guess_variable`: whole numbers unique on most records that are no
    amount and no scenario variable; the record id when unique on every record, else a direct
    identifier; None otherwise."""
    name, observed, counts, n = c.name, c.observed, c.counts, c.n
    unique_share, whole = c.unique_share, c.whole
    labels = c.labels
    if whole and unique_share > IDENTIFIER_SHARE and not labels and observed.max() - observed.min() + 1 == len(counts):
        return DraftedVariable(name, "record_id", "consecutive whole numbers, one per record: a record number")
    if whole and unique_share > IDENTIFIER_SHARE and not labels and n >= MIN_RECORD_KEY_RECORDS \
            and group is None and not amount_named:
        if len(counts) == n:
            return DraftedVariable(name, "record_id",
                                   "whole numbers unique per record, not an amount: a record key, which released "
                                   "unchanged would link every record one to one to the original file; the release "
                                   "renumbers the record id")
        return DraftedVariable(name, "direct_identifier",
                               f"whole numbers unique on {unique_share:.0%} of records, not an amount: a record key "
                               "(not unique on every record, so not the record id); removed before release")
    return None


def _categorical_guess(c: _ColumnFacts, group: str | None, amount_named: bool) -> DraftedVariable | None:
    """The categorical rules of :func:`guess_variable`: labels, a nominal/ordinal measure, text, few
    whole-number codes or a coded scenario group make a categorical column, whose role is sensitive
    (special category of personal data, sdcMicro's l-diversity example, an amount in classes), a
    categorical key (a scenario variable) or ``other``; None for a numeric column."""
    name, values, observed, counts = c.name, c.values, c.observed, c.counts
    numeric, whole, code, tokens, label = c.numeric, c.whole, c.code, c.tokens, c.label
    labels, measure, missing = c.labels, c.measure, c.missing
    few = len(counts) <= MAX_CATEGORIES
    # whole years of age, years of birth, persons, counts: ordered numbers, never a continuous key
    ordinal_numbers = whole and not labels and (
        group in ORDINAL_GROUPS or (group is None and not amount_named and named(COUNT_TOKEN, tokens)))
    categorical = bool(labels) or measure in ("nominal", "ordinal") or not numeric or (group is not None and few) or (
        whole and (few or group in CODED_GROUPS)) or ordinal_numbers
    if not categorical:
        return None
    codes = sorted({plain_scalar(v) for v in observed.unique()} | {plain_scalar(v) for v in (labels or {})}, key=str)
    if all(isinstance(c, (int, float)) for c in codes):
        codes = sorted(codes)
    ordered = numeric and not labels and (
        group in ORDINAL_GROUPS or ordinal_numbers or group in ORDERED_CODE_GROUPS)
    scale = "ordinal" if measure == "ordinal" or ordered else "nominal"
    why = ("value labels" if labels else f"measured {measure}" if measure in ("nominal", "ordinal")
           else "yes/no values" if pd.api.types.is_bool_dtype(values) else "text values" if not numeric
           else f"{len(counts)} whole-number values" if ordinal_numbers else f"{len(counts)} distinct codes")
    if ordered and not ordinal_numbers and group in ORDERED_CODE_GROUPS:
        why += f" ({group} codes are ordered: an ordinal scale, merged by adjacent codes only)"
    if ordinal_numbers:
        why += (" (ordered whole numbers: an ordinal scale; as a key, categorical, never continuous, so that "
                "no plan releases fractional values: the plan search bands them)")
    details = dict(scale=scale, categories=tuple(codes), category_labels=labels or None, missing=missing)
    if code == "sensitive":
        return DraftedVariable(name, "sensitive", f"{why}; the sensitive variable of sdcMicro's l-diversity "
                               "example: l-diversity target", **details)
    if named(SENSITIVE_TOKEN, tokens) or SENSITIVE_LABEL.search(label):
        return DraftedVariable(name, "sensitive", f"{why}; named like a special category of personal data "
                               "(health, religion, trade union, politics, ...): what an intruder wants to learn, "
                               "the l-diversity target", **details)
    if group is not None:
        return DraftedVariable(name, "categorical_key",
                               f"{why}; {group}: a variable of the disclosure scenario an intruder knows",
                               group=group, **details)
    if amount_named:
        return DraftedVariable(name, "sensitive",
                               f"{why}; an amount in classes (income or salary class, benefits): what an intruder "
                               "wants to learn rather than knows, the l-diversity target", **details)
    return DraftedVariable(name, "other",
                           f"{why}: could be a categorical key if an intruder knows it, but it is not a "
                           f"variable of the disclosure scenario ({', '.join(SCENARIO)})",
                           group="categorical candidate", **details)


def _continuous_guess(c: _ColumnFacts, group: str | None, amount_named: bool, columns) -> DraftedVariable:
    """The numeric rules of :func:`guess_variable`: a column derived from another (log, square) is
    ``other``, a scenario variable or an amount a continuous key candidate, anything else ``other``."""
    name, counts, code, tokens, measure, missing = c.name, c.counts, c.code, c.tokens, c.measure, c.missing
    why = f"measured {measure}" if measure == "scale" else f"{len(counts)} distinct numeric values"
    source = derived_name_of(name, columns)
    if source is not None:
        return DraftedVariable(name, "other", f"{why}, derived from {source!r} (log or square): it carries the same "
                               "information, never a key of its own", "continuous", missing=missing)
    if group is not None:
        return DraftedVariable(name, "continuous_key",
                               f"{why}; {group}: a variable of the disclosure scenario an intruder knows, too many "
                               "values for a categorical key (recode it into classes to make it one)",
                               "continuous", missing=missing, group=group, rank=0)
    if amount_named:
        total = code == "total amount" or named(TOTAL_TOKEN, tokens)
        return DraftedVariable(name, "continuous_key",
                               f"{why}; an amount{' (a total or main amount)' if total else ''}: an intruder may "
                               "know it roughly "
                               "(registers, a business directory), a continuous key; or role sensitive if only "
                               "its disclosure matters", "continuous", missing=missing, group="amount",
                               rank=1 if total else 2)
    return DraftedVariable(name, "other",
                           f"{why}, neither a scenario variable nor an amount: make it a continuous_key if an "
                           "intruder could know it", "continuous", missing=missing, group="continuous candidate")


def _misspelt_weight(tokens: list[str]) -> bool:
    """A name word of five letters or more within difflib's similarity ratio 0.8 of a weight word
    (:data:`WEIGHT_WORDS`) with the same first letter: "Weigt", "wieght", "ponderacin"; not
    "height", "eight" or "person"."""
    import difflib

    return any(match[0] == token[0] for token in tokens if len(token) >= 5
               for match in difflib.get_close_matches(token, WEIGHT_WORDS, n=3, cutoff=0.8))


def _weight_guess(name: str, observed: pd.Series, code: str | None, tokens: list[str], label: str,
                  numeric: bool, *, unobserved: int = 0) -> DraftedVariable | None:
    """A weight by office code, name or label, and shape: positive; a weakly named one ("factor",
    "w", or a misspelt weight word such as "Weigt", :func:`_misspelt_weight`) summing to at least
    :data:`WEIGHT_SUM_RATIO` times the records, as a grossing-up weight does.

    The risk (SPEC §3.2) reads a weight as a grossing-up factor: the number of population units a
    record stands for, at least 1, on every record. A weight-named column with missing values (a
    body weight) or with values below 1 (a relative, normalised weight with mean about 1, as the
    European Social Survey's dweight and pspwght) cannot be that, and is drafted ``other``
    with the reason."""
    strong = (code in ("weight", "household weight") or named(WEIGHT_TOKEN, tokens)
              or bool(WEIGHT_LABEL.search(label)))
    weak = named(WEAK_WEIGHT_TOKEN, tokens) or _misspelt_weight(tokens)
    if not (strong or weak) or not numeric or NOT_WEIGHT_LABEL.search(label) or observed.empty:
        return None
    if not (observed > 0).all():
        if not strong:
            return None
        return DraftedVariable(name, "other", f"named or labelled like a weight, but {int((observed <= 0).sum())} of "
                               "its values are 0 or negative and weights must be positive: fix or drop those records, "
                               "then make it the weight; never a key", "continuous")
    ratio = float(observed.sum()) / len(observed) if len(observed) else 0.0
    if not strong and ratio < WEIGHT_SUM_RATIO:
        return None
    if unobserved:
        return DraftedVariable(name, "other", f"named or labelled like a weight, but missing on {unobserved} records: "
                               "a sampling weight is known for every record (a measurement such as body weight?)",
                               "continuous")
    if float(observed.min()) < 1:
        return DraftedVariable(name, "other", f"named or labelled like a weight, but {int((observed < 1).sum())} values "
                               f"are below 1 (mean {ratio:.3g}): a relative (normalised) weight, not the grossing-up "
                               "factor the risk needs (population units per record, at least 1); give the survey's "
                               "grossing-up weight the role weight if it has one", "continuous")
    household = code == "household weight" or named(HOUSEHOLD_LEVEL, tokens)
    kind = ("an office's weight code" if code in ("weight", "household weight")
            else "a misspelt weight" if not strong and not named(WEAK_WEIGHT_TOKEN, tokens) else "a weight")
    return DraftedVariable(name, "weight",
                           f"named or labelled like {kind}, every value positive, summing to {ratio:.3g} times the "
                           f"record count{' (a household weight)' if household else ''}",
                           group="household weight" if household else "weight")


def _grouped_constant(data: pd.DataFrame, column: str, others: list[str]) -> list[str]:
    """The columns of ``others`` constant within the groups of ``column`` (in at least
    :data:`CONSTANT_WITHIN_SHARE` of the groups of two or more records), one vectorised groupby."""
    if not others:
        return []
    groups = data.groupby(column, sort=False, dropna=True)
    sizes = groups.size()
    multi = sizes.index[sizes > 1]
    if len(multi) == 0:
        return []
    distinct = groups[others].nunique(dropna=False).loc[multi]
    share = (distinct <= 1).mean()
    return share.index[share >= CONSTANT_WITHIN_SHARE].tolist()


def _one_of_each(drafted: list[DraftedVariable]) -> list[DraftedVariable]:
    """One weight, household id and record id: the one declared in the metadata, else the first of
    each stands (a person's weight before a household's, as the risk is per person); later ones
    become ``other``, saying so, except a second record key, which is removed before release
    (``direct_identifier``)."""
    first: dict[str, str] = {}
    weights = sorted((v for v in drafted if v.role == "weight"), key=lambda v: v.group == "household weight")
    if weights:
        first["weight"] = weights[0].name
    first.update({v.role: v.name for v in drafted if v.group == "declared" and v.role in ("weight", "household_id",
                                                                                          "record_id")})
    out = []
    for v in drafted:
        if v.role in ("weight", "household_id", "record_id"):
            taken = first.setdefault(v.role, v.name)
            if taken != v.name and v.role == "record_id":
                v = DraftedVariable(v.name, "direct_identifier", f"{v.reason}; {taken!r} was taken as the record "
                                    "id, and a second record key released unchanged would still link every record "
                                    "one to one: removed before release")
            elif taken != v.name:
                v = DraftedVariable(v.name, "other", f"looks like a {v.role} too, but {taken!r} was taken "
                                    f"as the survey's {v.role}; swap them if this one is right", "continuous")
        out.append(v)
    return out


def _cap_keys(drafted: list[DraftedVariable], max_keys: int = MAX_CATEGORICAL_KEYS) -> list[DraftedVariable]:
    """At most ``max_keys`` categorical keys (:data:`MAX_CATEGORICAL_KEYS` unless ``sdc init
    --max-keys`` says otherwise), one per scenario group in priority order in turn (so that sex,
    region and education are not crowded out by five region dummies), and at most
    :data:`MAX_CONTINUOUS_KEYS` continuous keys (scenario variables, then totals, then the other
    amounts, in file order); the rest become ``other`` with the reason. Keys declared in the
    metadata are kept and not counted."""
    order = list(SCENARIO)
    categorical = [v for v in drafted if v.role == "categorical_key" and v.group != "declared"]
    turn = {}
    seen: dict[str, int] = {}
    for v in categorical:
        turn[v.name] = (seen.get(v.group, 0), order.index(v.group))
        seen[v.group] = seen.get(v.group, 0) + 1
    kept = set(sorted(turn, key=turn.get)[:max_keys]) | {v.name for v in drafted if v.group == "declared"}
    continuous = [v for v in drafted if v.role == "continuous_key" and v.group != "declared"]
    ranked = sorted(continuous, key=lambda v: v.rank)  # stable: file order within a rank
    kept |= {v.name for v in ranked[:MAX_CONTINUOUS_KEYS]}
    kept_continuous = [v.name for v in ranked[:MAX_CONTINUOUS_KEYS]]
    out = []
    for v in drafted:
        if v.role == "categorical_key" and v.name not in kept:
            v = replace(v, role="other", reason=f"{v.reason}; left out of the keys: the draft keeps at most "
                        f"{max_keys} categorical keys, one scenario group in turn; swap it in if an "
                        "intruder is more likely to know it")
        elif v.role == "continuous_key" and v.name not in kept:
            v = replace(v, role="other", reason=f"{v.reason}; left out of the keys: the draft keeps at most "
                        f"{MAX_CONTINUOUS_KEYS} continuous keys ({', '.join(kept_continuous)}); an intruder rarely "
                        "knows this one as well")
        out.append(v)
    return out


def _keys_when_none(drafted: list[DraftedVariable]) -> list[DraftedVariable]:
    """Without any scenario variable or amount (measurements, not persons: a spec needs a key), the
    first :data:`FALLBACK_KEYS` categorical and :data:`MAX_CONTINUOUS_KEYS` numeric candidates become
    keys, saying so, so that the draft can be checked and run as it is."""
    if any(v.role in ("categorical_key", "continuous_key") for v in drafted):
        return drafted
    promoted = {"categorical candidate": ("categorical_key", FALLBACK_KEYS),
                "continuous candidate": ("continuous_key", MAX_CONTINUOUS_KEYS)}
    taken = {group: 0 for group in promoted}
    out = []
    for v in drafted:
        if v.group in promoted and taken[v.group] < promoted[v.group][1]:
            taken[v.group] += 1
            v = replace(v, role=promoted[v.group][0], reason=f"{v.reason}. No variable of the disclosure scenario "
                        "and no amount was found, so the first candidates are drafted as keys: set role other "
                        "on those an intruder cannot know")
        out.append(v)
    return out


def _declared(name: str, role: str, guessed: DraftedVariable, values: pd.Series) -> DraftedVariable:
    """The role the file's metadata declares (an Argus ``.rda``'s ``<RECORDKEY>``, ``<WEIGHT>``,
    ``<HHID>``, ``<IDLEVEL>``), taken as given; a declared categorical key keeps the categories and
    scale the data show (ordinal for whole numbers without labels)."""
    reason = "declared in the metadata"
    if role == "categorical_key":
        if guessed.categories is not None:
            return replace(guessed, role=role, reason=reason, group="declared")
        codes = sorted(plain_scalar(v) for v in values.dropna().unique())
        return DraftedVariable(name, role, reason, "ordinal" if whole_numbers(values) else "nominal", tuple(codes),
                               missing=guessed.missing, group="declared")
    scale = "continuous" if role in ("continuous_key", "weight") else guessed.scale
    return DraftedVariable(name, role, reason, scale if role != "weight" else None,
                           guessed.categories if role not in ("continuous_key", "weight") else None,
                           guessed.category_labels, guessed.missing, group="declared")


def _derived_from_keys(data: pd.DataFrame, drafted: list[DraftedVariable], household: str | None) -> dict[str, str]:
    """The released columns that copy or derive from a key, each with the reason (found on the data,
    one group-by per key or pair, no loop over records):

    * a function of a categorical key with at least :data:`MIN_RECORDS_PER_CATEGORY` records per
      category on average: one value within each of the key's categories (a grouped code beside the
      detailed one, a copy of the key);
    * a year beside an age: ``column + key`` takes at most two adjacent values on at least
      :data:`DERIVED_SHARE` of the records where both are known (the survey year, less one before the
      birthday), for whole numbers with at least :data:`MIN_DERIVED_VALUES` values each;
    * a household member's copy (the household head's age beside each person's age): constant within
      households and equal to the key on a record of at least :data:`DERIVED_SHARE` of the
      households with two or more records, for a key with at least :data:`MIN_DERIVED_VALUES` values
      (a key of a few codes matches some member of most households by chance).

    Released unchanged beside the protected key, such a column would give the key's value back (the
    suppressed age read off the year of birth, the suppressed occupation off its group code): derived
    variables must be protected with the key or dropped (Hundepool et al. 2012, chapter 3). Of two
    copies of each other, the later one in file order is the copy."""
    keys = [v for v in drafted if v.role in ("categorical_key", "continuous_key") and v.group != "declared"]
    released = [v.name for v in drafted if v.role in ("categorical_key", "continuous_key", "sensitive", "other")
                and v.group not in ("constant", "declared")]
    n = len(data)
    distinct = data[released].nunique(dropna=True)
    found: dict[str, str] = {}
    for key in (v.name for v in keys if v.role == "categorical_key"):
        if key in found or distinct[key] < 2 or distinct[key] * MIN_RECORDS_PER_CATEGORY > n:
            continue
        others = [c for c in released if c != key and c not in found and 2 <= distinct[c] <= distinct[key]]
        if not others:
            continue
        within = data.groupby(key, sort=False, dropna=False)[others].nunique(dropna=False)
        for column in within.columns[(within <= 1).all()]:
            found[column] = (f"one value within each category of the key {key!r}: a grouped code or copy of it, "
                             f"which released unchanged beside the protected {key!r} would give back what its "
                             "protection hid")
    numbers = [c for c in released if c not in found and distinct[c] >= MIN_DERIVED_VALUES
               and pd.api.types.is_numeric_dtype(data[c]) and not pd.api.types.is_bool_dtype(data[c])
               and whole_numbers(data[c])]
    for key in (v.name for v in keys if v.name in numbers):
        for column in (c for c in numbers if c != key and c not in found and key not in found):
            shares = (data[key] + data[column]).value_counts(normalize=True, dropna=True)
            if shares.empty:
                continue
            values = [shares.index[0]]  # the survey year, and the year before it for those not yet born that day
            if len(shares) > 1 and abs(shares.index[1] - shares.index[0]) == 1:
                values.append(shares.index[1])
            share = float(shares.iloc[: len(values)].sum())
            if share >= DERIVED_SHARE:
                shown = " or ".join(str(plain_scalar(v)) for v in sorted(values, reverse=True))
                found[column] = (f"{column} + {key} is {shown} on {share:.0%} of records (a year of birth beside an "
                                 f"age): derived from the key {key!r}, it would give back its protected value")
    if household is not None:
        groups = data[household]
        sizes = groups.map(groups.value_counts())
        multi = sizes > 1
        for key in (v.name for v in keys if distinct[v.name] >= MIN_DERIVED_VALUES):  # a few codes match by chance
            others = [c for c in released if c != key and c not in found and key not in found]
            if not others or not multi.any():
                continue
            grouped = data.loc[multi].groupby(household, sort=False)
            constant = (grouped[others].nunique(dropna=False) <= 1).mean()
            matches = data.loc[multi, others].eq(data.loc[multi, key], axis=0)
            equal = matches.groupby(groups[multi], sort=False).any().mean()
            for column in constant.index[(constant >= DERIVED_SHARE) & (equal >= DERIVED_SHARE)]:
                found[column] = (f"constant within households and equal to the key {key!r} on one of their records "
                                 f"in {equal[column]:.0%} of households (a household member's {key}, such as the "
                                 f"head's): a copy of {key!r}, which released unchanged beside it would give back "
                                 "its protected value")
    return found


def draft_roles(contents: FileContents, *, max_keys: int = MAX_CATEGORICAL_KEYS) -> list[DraftedVariable]:
    """The drafted role of every column of a file read by :func:`read_with_metadata` (the scenario
    in the module docstring): roles declared in the file's metadata (``contents.roles``, from an
    Argus ``.rda``) taken as given; each other column guessed on its own (:func:`guess_variable`),
    household and cluster id candidates kept when another variable is constant within their groups,
    person numbers within the household recognised, then one weight/household id/record id, the
    columns that copy or derive from a key removed (:func:`_derived_from_keys`), the key caps
    (``max_keys`` categorical keys), and keys from the other candidates when no scenario variable or
    amount was found."""
    data = contents.data
    columns = [str(c) for c in data.columns]
    declared = getattr(contents, "roles", None) or {}

    def guess(column, grouping=True):
        guessed = guess_variable(column, data[column], labels=contents.value_labels.get(column),
                                 measure=contents.measures.get(column), missing=contents.user_missing.get(column, ()),
                                 label=contents.column_labels.get(column, ""), columns=columns, grouping=grouping)
        return _declared(column, declared[column], guessed, data[column]) if column in declared else guessed

    drafted = [guess(c) for c in columns]
    # a unit's name (a direct identifier) constant within the groups also shows that they are units
    informative = [v.name for v in drafted if v.role in ("categorical_key", "continuous_key", "sensitive",
                                                         "direct_identifier")
                   or (v.role == "other" and v.group not in ("id", "constant"))]
    household = next((v.name for v in drafted if v.role == "household_id" and v.group == "declared"), None)
    for i, v in enumerate(drafted):
        if v.role != "household_id" or v.group == "declared":
            continue
        constant = _grouped_constant(data, v.name, [c for c in informative if c != v.name])
        if constant and household is None:
            household = v.name
            shown = ", ".join(constant[:4]) + (", ..." if len(constant) > 4 else "")
            drafted[i] = replace(v, reason=f"{v.reason}; constant within them: {shown}", group=None)
        elif constant:
            drafted[i] = replace(v, group=None)  # a second grouping: _one_of_each says so
        else:
            drafted[i] = guess(v.name, grouping=False)
    if household is not None:
        keys = data[household]
        for i, v in enumerate(drafted):
            if v.group == "id" and not data.loc[keys.notna(), [household, v.name]].duplicated().any():
                drafted[i] = replace(v, reason=f"a person number within the household {household!r}: together "
                                     "they identify the record; never a key")
    drafted = _one_of_each(drafted)
    derived = _derived_from_keys(data, drafted, household)
    drafted = [DraftedVariable(v.name, "direct_identifier", f"{derived[v.name]}; drafted direct_identifier so that "
                               "every plan removes it before release (or protect it with the key)")
               if v.name in derived else v for v in drafted]
    return _keys_when_none(_cap_keys(drafted, max_keys))
