"""One column's guessed role and scale, with the reason (SPEC §1.1, §1.2): the rules of
:func:`guess_variable`, which :func:`~sdc_dagster.spec.roles.draft_roles` applies to every column of
a file before it confirms household ids and caps the keys (the disclosure scenario of Hundepool et
al. 2012, "Statistical Disclosure Control", chapter 3, and the mu-Argus manual's identification
levels; see :mod:`sdc_dagster.spec.roles`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster.spec.scenario import (
    AMOUNT_CODE, AMOUNT_LABEL, AMOUNT_TOKEN, CLUSTER_TOKEN, CODED_GROUPS, COUNT_TOKEN, HOUSEHOLD_LEVEL,
    HOUSEHOLD_TOKEN, IDENTIFIER_TOKEN, ID_SUFFIX, ID_TOKEN, MIN_NAMES, NAME_SUFFIX, NOT_WEIGHT_LABEL,
    ORDERED_CODE_GROUPS, ORDINAL_GROUPS, PERSON_TOKEN, SCENARIO, SENSITIVE_LABEL, SENSITIVE_TOKEN, TOTAL_TOKEN,
    VARIABLE_CODES, WEAK_WEIGHT_TOKEN, WEIGHT_LABEL, WEIGHT_TOKEN, WEIGHT_WORDS, derived_name_of, name_tokens,
    named, scenario_group,
)

#: At most this many distinct values make a numeric column without labels a categorical variable.
MAX_CATEGORIES = 20

#: The oldest age in years a column named like an age may hold and still read as ages (an age in
#: fractions of a year is a categorical key on an ordinal scale, :func:`_categorical_guess`).
MAX_AGE = 130
#: A cluster id (school, sampling unit) groups at most this many records on average; a column with
#: fewer, larger groups (a yes/no flag named like an id) is not one.
MAX_GROUP_SIZE = 1000
#: A household number has records of at most this many persons on average (clusters may be larger).
MAX_HOUSEHOLD_SIZE = 20
#: A column whose values are unique on more than this share of records identifies them on its own.
IDENTIFIER_SHARE = 0.95
#: A column only weakly named like a weight ("factor", "w") must sum to this many times the records.
WEIGHT_SUM_RATIO = 2.0
#: A column unique per record is taken for a record key only in a file of at least this many records.
MIN_RECORD_KEY_RECORDS = 20


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
      values -> ``household_id`` candidate (:func:`~.roles.draft_roles` confirms it against the other
      columns; with ``grouping=False`` it was refused, and an id-named one becomes ``other``);
    * consecutive whole numbers, one per record -> record id;
    * a categorical column (labels, measured nominal/ordinal, text, at most :data:`MAX_CATEGORIES`
      whole-number codes, a scenario variable with few values such as age classes 17.5, 22, ..., or
      the whole-number codes of a coded scenario group such as occupation) -> sensitive when named
      like a special category of personal data, a categorical key when it is a scenario variable
      (:func:`scenario_group`), else ``other``;
    * a numeric column derived from another (log, square) -> ``other``; a scenario variable or an
      amount -> continuous key candidate; anything else -> ``other``.

    The caps and one-of-each rules are applied by :func:`~.roles.draft_roles`.
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


#: A text category written after its number: "1. < HS Grad", "2) Secondary", "03 Tertiary".
_LEADING_NUMBER = re.compile(r"^\s*(\d+)\s*[.):-]?\s+\S")


def leading_code_order(categories: list) -> list | None:
    """Text categories that each start with a distinct number ("1. < HS Grad", ..., "5. Advanced
    Degree": ISLR's Wage, files exported with "code label" values), in the order of their numbers;
    None otherwise. Only a scenario group whose codes are ordered (education) is made ordinal by it:
    numbered categories of a nominal variable ("1. White", "2. Black") are numbered, not ordered."""
    if not categories or not all(isinstance(c, str) for c in categories):
        return None
    matches = [_LEADING_NUMBER.match(c) for c in categories]
    if not all(matches):
        return None
    numbers = [int(m.group(1)) for m in matches]
    if len(set(numbers)) != len(numbers):
        return None
    return [c for _, c in sorted(zip(numbers, categories))]


#: Education attainment in words, from least to most, each (pattern, rank) tried in this order on
#: the lower-cased category with ``-``/``_`` as spaces, the first match giving its rank: the
#: attainment levels of ISCED 2011 (UNESCO) as survey files write them, in years of schooling
#: (grades by their number; the census-income file's "Preschool" ... "Doctorate", whose published
#: ``education-num`` orders them so).
_EDUCATION_WORDS = tuple((re.compile(pattern), rank) for pattern, rank in (
    (r"pre ?school|kindergarten|no (?:formal )?(?:schooling|education)|^none$|illiterate|never attended", 0.0),
    (r"^(\d{1,2})(?:st|nd|rd|th)\b", None),  # a grade: its number
    (r"less than lower secondary|below lower secondary", 7.5),
    (r"less than (?:high school|hs|secondary|upper secondary)|^< ?hs|below (?:upper )?secondary|some (?:high school|hs)",
     11.5),
    (r"lower secondary|middle school|junior high", 9.0),
    (r"primary|elementary|grade school", 6.0),
    (r"post ?secondary|vocational|trade school|technical", 13.0),
    (r"some (?:college|university)", 13.5),
    (r"assoc(?:iate)?s? voc", 14.0),
    (r"assoc", 14.5),
    (r"high school|\bhs\b|upper secondary|secondary|matura|\bged\b", 12.5),
    (r"undergrad|bachelor|college|university|tertiary|higher education|\bba\b|\bbsc?\b", 16.0),
    (r"prof(?:essional)? school|professional degree", 19.0),
    (r"doctor|\bph ?d\b", 21.0),
    (r"master|post ?grad|graduate|advanced degree|\bma\b|\bmsc?\b", 18.0),
))


def education_word_order(categories: list) -> list | None:
    """Education categories written as words ("Preschool", "1st-4th", ..., "HS-grad", "Some-college",
    "Bachelors", "Masters", "Doctorate") in the order of attainment (:data:`_EDUCATION_WORDS`); None
    unless every category is such a word and no two have the same rank (then the order is not known)."""
    if not categories or not all(isinstance(c, str) for c in categories):
        return None
    ranks = []
    for category in categories:
        text = re.sub(r"[-_]+", " ", category.strip().lower())
        for pattern, rank in _EDUCATION_WORDS:
            found = pattern.search(text)
            if found:
                ranks.append(float(found.group(1)) if rank is None else rank)
                break
        else:
            return None
    if len(set(ranks)) != len(ranks):
        return None
    return [c for _, c in sorted(zip(ranks, categories))]


def _categorical_guess(c: _ColumnFacts, group: str | None, amount_named: bool) -> DraftedVariable | None:
    """The categorical rules of :func:`guess_variable`: labels, a nominal/ordinal measure, text, few
    whole-number codes or a coded scenario group make a categorical column, whose role is sensitive
    (special category of personal data, sdcMicro's l-diversity example, an amount in classes), a
    categorical key (a scenario variable) or ``other``; None for a numeric column."""
    name, values, observed, counts = c.name, c.values, c.observed, c.counts
    numeric, whole, code, tokens, label = c.numeric, c.whole, c.code, c.tokens, c.label
    labels, measure, missing = c.labels, c.measure, c.missing
    few = len(counts) <= MAX_CATEGORIES
    # whole years of age, years of birth, persons, counts: ordered numbers, never a continuous key;
    # an age in fractions of a year too (infants in months, estimated ages as 28.5: the Titanic's
    # passenger list): microaggregated, it was released as ages no one has (8.33, 13.67)
    fractional_ages = numeric and not whole and not labels and group == "age" and len(observed) \
        and observed.min() >= 0 and observed.max() <= MAX_AGE
    ordinal_numbers = not labels and (fractional_ages or whole and (
        group in ORDINAL_GROUPS or (group is None and not amount_named and named(COUNT_TOKEN, tokens))))
    categorical = bool(labels) or measure in ("nominal", "ordinal") or not numeric or (group is not None and few) or (
        whole and (few or group in CODED_GROUPS)) or ordinal_numbers
    if not categorical:
        return None
    codes = sorted({plain_scalar(v) for v in observed.unique()} | {plain_scalar(v) for v in (labels or {})}, key=str)
    if all(isinstance(c, (int, float)) for c in codes):
        codes = sorted(codes)
    ordered = numeric and not labels and (
        group in ORDINAL_GROUPS or ordinal_numbers or group in ORDERED_CODE_GROUPS)
    numbered = leading_code_order(codes) if not numeric and group in ORDERED_CODE_GROUPS else None
    worded = education_word_order(codes) if not numeric and group == "education" and numbered is None else None
    if numbered is not None:  # "1. < HS Grad", ..., "5. Advanced Degree": ordered by their numbers
        codes, ordered = numbered, True
    elif worded is not None:  # "Preschool", ..., "Doctorate": ordered by attainment
        codes, ordered = worded, True
    scale = "ordinal" if measure == "ordinal" or ordered else "nominal"
    why = ("value labels" if labels else f"measured {measure}" if measure in ("nominal", "ordinal")
           else "yes/no values" if pd.api.types.is_bool_dtype(values) else "text values" if not numeric
           else f"{len(counts)} numeric values" if fractional_ages
           else f"{len(counts)} whole-number values" if ordinal_numbers else f"{len(counts)} distinct codes")
    if numbered is not None:
        why += (f" ({group} categories numbered in their order, {numbered[0]!r} first: an ordinal scale, merged by "
                "adjacent categories only)")
    elif worded is not None:
        why += (f" (levels of education in words, {worded[0]!r} to {worded[-1]!r}: an ordinal scale, merged by "
                "adjacent levels only)")
    elif ordered and not ordinal_numbers and group in ORDERED_CODE_GROUPS:
        why += f" ({group} codes are ordered: an ordinal scale, merged by adjacent codes only)"
    if fractional_ages:
        why += (" (ages, some in fractions of a year: an ordinal scale; as a key, categorical, never continuous, "
                "so that no plan releases an age no one has: the plan search bands them)")
    elif ordinal_numbers:
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
