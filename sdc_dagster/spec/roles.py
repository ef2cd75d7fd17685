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
  misspelt ones such as "Weigt" included, must sum to at least
  :data:`~sdc_dagster.spec.guess.WEIGHT_SUM_RATIO` times the
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
  birth beside the age, the household head's age beside each person's, a log of a continuous key) is
  removed before release
  (``direct_identifier``, with the reason: :func:`_derived_from_keys`);
* a file with no scenario variable and no amount (measurements, not persons) gets its first
  candidates as keys, saying so, so that the draft checks and runs unedited;
* a constant column carries no information and is never a key; ``sensitive`` is what an intruder
  wants to learn: special categories of personal data (health, religion, trade-union membership,
  politics, sex life) and amounts in classes (income or salary class, benefits).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from sdc_dagster.spec.guess import MIN_RECORD_KEY_RECORDS, DraftedVariable, guess_variable, plain_scalar, whole_numbers
from sdc_dagster.spec.reading import FileContents
from sdc_dagster.spec.scenario import SCENARIO

#: A household or cluster id: some other variable is constant in at least this share of its groups.
CONSTANT_WITHIN_SHARE = 0.95
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


def _monotone_functions_of(data: pd.DataFrame, key: str, columns: list[str]) -> list[str]:
    """The numeric ``columns`` that are a strictly monotone function of the numeric ``key`` on every
    record where both are known, over at least :data:`MIN_DERIVED_VALUES` distinct values of the key
    (a log income beside the income, an amount in thousands beside the amount): the distinct
    (key, column) pairs, sorted by the key, have one pair per key value and strictly increasing or
    strictly decreasing column values (Spearman's rank correlation exactly +-1). One sort per pair
    of columns."""
    found = []
    for column in columns:
        if not pd.api.types.is_numeric_dtype(data[column]) or pd.api.types.is_bool_dtype(data[column]):
            continue
        pairs = data[[key, column]].dropna().drop_duplicates().sort_values(key, kind="stable")
        if len(pairs) < MIN_DERIVED_VALUES or not pairs[key].is_unique or not pairs[column].is_unique:
            continue
        if pairs[column].is_monotonic_increasing or pairs[column].is_monotonic_decreasing:
            found.append(column)
    return found


def _derived_from_keys(data: pd.DataFrame, drafted: list[DraftedVariable], household: str | None) -> dict[str, str]:
    """The released columns that copy or derive from a key, each with the reason (found on the data,
    one group-by per key or pair, no loop over records):

    * a function of a categorical key with at least :data:`MIN_RECORDS_PER_CATEGORY` records per
      category on average: one value within each of the key's categories (a grouped code beside the
      detailed one, a copy of the key);
    * a year beside an age: ``column + key`` takes at most two adjacent values on at least
      :data:`DERIVED_SHARE` of the records where both are known (the survey year, less one before the
      birthday), for whole numbers with at least :data:`MIN_DERIVED_VALUES` values each;
    * a strictly monotone function of a continuous key (a log wage beside the wage: exp gives the wage
      back, however the wage is microaggregated; :func:`_monotone_functions_of`);
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
    for key in (v.name for v in keys if v.role == "continuous_key" and v.name not in found):
        for column in _monotone_functions_of(data, key, [c for c in released if c != key and c not in found]):
            found[column] = (f"a strictly monotone function of the continuous key {key!r} on every record where "
                             f"both are known (a log, a rescaling or a copy of it): released unchanged beside the "
                             f"protected {key!r} it would give back its original values (exp(log wage) is the wage)")
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
