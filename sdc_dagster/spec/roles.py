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
  (``sdc init --max-keys``), taken one per scenario group in turn, and at most what the file's
  records support at the drafted k, l and global-risk target (:func:`key_cap`); other categorical
  candidates are ``other`` with a comment saying why they could be keys, those beyond the records'
  cap listed as decisions to confirm (:class:`DraftedScenario`); l is not drafted when no key at
  its coarsest level (two classes, or the coarsest level of a hierarchy given beside the data or in
  its metadata) can meet it (:func:`l_reachable`);
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

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from sdc_dagster.keys import category_codes
from sdc_dagster.protect.suppression import codes_below_l
from sdc_dagster.risk.frequencies import digit_key_frequencies
from sdc_dagster.spec.drafted_hierarchies import two_classes
from sdc_dagster.spec.guess import (MAX_CATEGORIES, MIN_RECORD_KEY_RECORDS, DraftedVariable, guess_variable, plain_scalar,
                                   whole_numbers)
from sdc_dagster.spec.hierarchies import Hierarchy
from sdc_dagster.spec.reading import FileContents
from sdc_dagster.spec.scenario import SCENARIO
from sdc_dagster.spec.survey import UtilityLimits

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
#: The drafted k of k-anonymity: the number of categorical keys is capped at what the records support at it.
DRAFTED_K = 3
#: The drafted l of l-diversity of the sensitive variables.
DRAFTED_L = 2
#: The drafted global-risk target of a file with sampling weights: an expected 1 % of the records
#: re-identified, their risks estimated from the population frequencies the weights give.
DRAFTED_GLOBAL_RISK = 0.01
#: The drafted global-risk target of a file without weights: its mean risk of 1/f_k at most the
#: drafted individual-risk threshold (``individual_risk_threshold``, 0.05).
DRAFTED_UNWEIGHTED_GLOBAL_RISK = 0.05


def drafted_global_risk(records: int, *, weighted: bool) -> float:
    """The drafted ``max_global_risk`` of a file of ``records`` records.

    With weights, :data:`DRAFTED_GLOBAL_RISK` (0.01): a record's risk is estimated from F_k, the
    population frequency of its key the weights estimate (sdcMicro ``measure_risk``; Hundepool et
    al. 2012, §3.3). Without weights the file is its own population and a record's risk is 1/f_k,
    the chance that an intruder who knows the person is in the file picks the right record among
    those sharing the key (the prosecutor scenario): a mean of 1 % would allow one key combination
    per hundred records, so that a 534-record file keeps five combinations, stricter by a factor of
    33 than the 1/3 every record gets from 3-anonymity. The draft asks the mean risk to stay at the
    drafted individual-risk threshold, :data:`DRAFTED_UNWEIGHTED_GLOBAL_RISK` (0.05), and for files
    under 1/0.05 = 20 records, where even one combination for all records exceeds it, the target
    k-anonymity meets by itself: every record shares its key with at least k - 1 others, so its risk
    is at most 1/k and so is the mean (Sweeney 2002), written rounded up to two decimals (0.34 for
    k = 3) so that a file of groups of exactly k passes."""
    if weighted:
        return DRAFTED_GLOBAL_RISK
    if records * DRAFTED_UNWEIGHTED_GLOBAL_RISK >= 1:
        return DRAFTED_UNWEIGHTED_GLOBAL_RISK
    return -(-100 // DRAFTED_K) / 100


#: The group size of the drafted plan's MDAV microaggregation of the continuous keys within each
#: released key combination: with continuous keys, a key combination must hold this many records.
DRAFTED_MICROAGGREGATION_K = 5


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


def coarsest_classes(values: pd.Series, scale: str | None, missing=(), hierarchy: Hierarchy | None = None) -> pd.Series:
    """A key at its coarsest useful level, the plan search's last level before a key's top. Without
    a ``hierarchy``, two classes (:func:`~sdc_dagster.spec.drafted_hierarchies.two_classes`): an
    ordinal or whole-number key split after its median record into two adjacent ranges, a nominal
    key's most frequent category against the others; per record the class (0 or 1, the class of the
    first category 0 when there are only two categories). With the key's given ``hierarchy`` (an
    ARX hierarchy file beside the data, an Argus ``.hrc``), the groups of its coarsest level of more
    than one group (its values when every level is a single group): the search generalises no
    further without withholding the key, so two classes would promise more than it can reach
    (ARX's census-income hierarchies stop at five age bands and at continents). Missing values (and
    the ``missing`` codes) stay missing."""
    known = values.where(~values.isin(list(missing))) if len(missing) else values
    counts = known.value_counts(sort=False)
    if hierarchy is not None:
        return _hierarchy_classes(known, counts.index, hierarchy)
    ordered = scale != "nominal" and pd.api.types.is_numeric_dtype(counts.index) \
        and not pd.api.types.is_bool_dtype(counts.index)
    counts = counts.sort_index() if ordered else counts
    classes = two_classes(counts.to_numpy(), ordered=ordered)
    upper = set(counts.index[classes[1]]) if classes is not None else set(counts.index[1:])
    return known.isin(upper).astype(float).where(known.notna())


def _hierarchy_classes(known: pd.Series, categories: pd.Index, hierarchy: Hierarchy) -> pd.Series:
    """Per record the group number (as a float, missing stays missing) of ``hierarchy``'s coarsest
    level of more than one group over the data's ``categories`` (:meth:`Hierarchy.on_categories`;
    a value the file does not list is a group of its own)."""
    on_data = replace(hierarchy, complete=False).on_categories(list(categories))
    useful = [level for level in on_data.levels if len(level.groups) > 1]
    groups = useful[-1].groups if useful else tuple((v,) for v in on_data.values)
    number = {value: float(i) for i, group in enumerate(groups) for value in group}
    return known.map(number).astype(float)


@dataclass(frozen=True)
class KeyCap:
    """How many of the ranked categorical key candidates a file's records support (:func:`key_cap`).

    ``cap``: the keys drafted (at least one); ``by_records``: floor(log2(n / k)), the keys whose
    combinations of two classes each fit n / k groups of k records; ``shares``: for the first
    1, 2, ... ranked candidates (up to the first beyond the cap), the share of the records in key
    combinations below k or not l-diverse with every key at its coarsest level (:func:`coarsest_classes`);
    ``limit``: the share allowed (the suppression limit); ``l``: the l the shares were measured with
    (None: l-diversity not drafted); ``max_risk``: the global-risk target the shares include the
    suppression for (None: a file with weights, not estimated here); ``coarsest``: that level in
    words (two classes, or a given hierarchy's coarsest level)."""

    cap: int
    by_records: int
    shares: tuple[float, ...]
    limit: float
    records: int
    k: int
    l: int | None
    max_risk: float | None = None
    drafted_k: int | None = None
    coarsest: str = "in two classes"

    @property
    def at(self) -> str:
        """The group size in words: "k = 3", or with continuous keys "groups of 5 (k = 3, the
        continuous keys microaggregated in groups of 5 within each key combination)"."""
        if self.drafted_k is None or self.drafted_k == self.k:
            return f"k = {self.k}"
        return (f"groups of {self.k} (k = {self.drafted_k}, the continuous keys microaggregated in groups of {self.k} "
                "within each key combination)")

    def why_beyond(self, position: int) -> str:
        """Why the candidate at 0-based ``position`` of the ranking is beyond the cap, with what
        making it a key would cost."""
        kinds = f"fewer than {self.k} records" + (f" or fewer than {self.l} sensitive values" if self.l else "") \
            + (f", or of the highest risk above the global-risk target {self.max_risk:g}" if self.max_risk else "")
        head = f"candidate key beyond the cap of {self.cap} for {self.records} records at {self.at}"
        if position >= self.by_records:
            return (f"{head}: {position + 1} keys of two classes each make 2^{position + 1} = {2 ** (position + 1)} "
                    f"combinations, more than the {self.records} / {self.k} = {self.records // self.k} groups of "
                    f"{self.k} records the file can fill; make it a key and most plans release keys as one category "
                    "(beyond limits.max_keys_not_released) or withhold the file")
        if position < len(self.shares) and self.shares[position] > self.limit + 1e-12:
            return (f"{head}: with it and the keys ranked before it, {self.shares[position]:.1%} of the records fall in "
                    f"key combinations of {kinds} "
                    f"even with every key {self.coarsest}, against the {self.limit:.0%} suppression limit; make it a "
                    "key and the file cannot be released within the limits")
        return (f"{head}: the {self.cap} keys ranked before it and the next one already put "
                f"{self.shares[-1]:.1%} of the records in key combinations of {kinds} with every key {self.coarsest} "
                f"(the {self.limit:.0%} suppression limit); make it a key in place of a higher-ranked one, or "
                "the file cannot be released within the limits")


def _records_below(digits: list[np.ndarray], sensitive: list[np.ndarray], k: int, l: int | None,
                   max_risk: float | None = None) -> float:
    """The share of records to suppress for the keys ``digits`` (one code array per key, 0 missing)
    to meet the targets: those whose key combination has fewer than ``k`` records (sdcMicro's
    freqCalc: a missing value matches any value, SPEC §2.4) or, with ``l``, fewer than ``l`` distinct
    values of a ``sensitive`` variable (the release's l-diversity check,
    :func:`~sdc_dagster.protect.suppression.codes_below_l`); then, with ``max_risk`` (a file without
    sampling weights, whose record risk is 1/f_k: sdcMicro ``measure_risk``), the records of highest
    risk until the mean risk of the others is at most ``max_risk`` (the rule of risk-based
    suppression, mu-Argus's individual risk threshold; a record's risk summed over its combination is
    1, so the global risk is the number of key combinations over n)."""
    stacked = np.stack(digits, axis=1)
    radices = stacked.max(axis=0) + 1
    frequency = digit_key_frequencies(stacked, radices)[0]
    below = frequency < k
    if l is not None and sensitive:
        below |= codes_below_l(stacked, radices, sensitive, l=l)
    count = int(below.sum())
    if max_risk is not None:
        risk = np.sort(np.where(below, 0.0, 1.0 / frequency))[::-1]
        excess = risk.sum() - max_risk * len(risk)
        if excess > 1e-12:
            count += int(np.searchsorted(np.cumsum(risk), excess - 1e-12)) + 1
    return count / len(stacked)


def key_cap(data: pd.DataFrame, ranked: list[DraftedVariable], sensitive: list[str], *, k: int = DRAFTED_K,
            l: int | None = DRAFTED_L, limit: float = UtilityLimits().max_suppressed_share,
            max_keys: int = MAX_CATEGORICAL_KEYS, max_risk: float | None = None,
            hierarchies: Mapping[str, Hierarchy] | None = None) -> KeyCap:
    """The number of categorical keys the file's records support at ``k`` (the choice of key
    variables against the size of the file, Hundepool et al. 2012, "Statistical Disclosure Control",
    §3.3-3.4: the more keys, the more combinations, the more records unique in them). The ranked
    candidates are taken in order while both hold:

    1. the records: m keys released with at least two categories each make at least 2^m
       combinations, and n records fill at most n / k of them with k records, so
       m <= floor(log2(n / k)) (8 records at k = 3: one key; 13 records: two; 534: seven);
    2. the data: with each of the first m keys at its coarsest useful level (two classes, or the
       coarsest level of its given hierarchy in ``hierarchies``: :func:`coarsest_classes`), the
       records in key combinations of fewer than k records or with fewer than l distinct values
       of a sensitive variable, and with ``max_risk`` (the drafted global-risk target of a file
       without weights) the records of highest risk 1/f_k whose suppression brings the mean risk
       to it (:func:`_records_below`), are at most ``limit`` (the suppression limit, 10 %): even
       the coarsest release of those keys would need more suppression than the limits allow.

    At least one key is kept (a file of fewer than 2k records still has one), at most ``max_keys``."""
    n = len(data)
    hierarchies = hierarchies or {}
    by_records = max(int(math.floor(math.log2(n / k))) if n >= k else 0, 1)
    codes = [category_codes(data[s])[0] - 1 for s in sensitive]
    digits, shares = [], []
    for v in ranked[: min(max_keys, by_records) + 1]:
        digits.append(category_codes(coarsest_classes(data[v.name], v.scale, v.missing, hierarchies.get(v.name)))[0])
        shares.append(_records_below(digits, codes, k, l, max_risk))
    within = [share <= limit + 1e-12 for share in shares]
    fits = within.index(False) if False in within else len(shares)
    cap = max(1, min(max_keys, by_records, fits))
    given = any(v.name in hierarchies for v in ranked[: len(shares)])
    return KeyCap(cap=cap, by_records=by_records, shares=tuple(shares), limit=limit, records=n, k=k, l=l,
                  max_risk=max_risk,
                  coarsest="at its coarsest level (its given hierarchy's, else two classes)" if given else "in two classes")


def _ranked_candidates(drafted: list[DraftedVariable]) -> list[DraftedVariable]:
    """The categorical key candidates not declared in the metadata, in the order the draft takes
    them: one per scenario group in priority order in turn (so that sex, region and education are
    not crowded out by five region dummies), then file order; candidates outside the scenario last."""
    order = list(SCENARIO)
    categorical = [v for v in drafted if v.role == "categorical_key" and v.group != "declared"]
    turn = {}
    seen: dict[str, int] = {}
    for v in categorical:
        turn[v.name] = (seen.get(v.group, 0), order.index(v.group) if v.group in order else len(order))
        seen[v.group] = seen.get(v.group, 0) + 1
    return sorted(categorical, key=lambda v: turn[v.name])


def l_reachable(data: pd.DataFrame, ranked: list[DraftedVariable], sensitive: list[str], *, l: int = DRAFTED_L,
                limit: float = UtilityLimits().max_suppressed_share,
                hierarchies: Mapping[str, Hierarchy] | None = None) -> str | None:
    """None when l-diversity can be drafted, else why not: the sensitive variables cannot be
    l-diverse within the suppression limit even with the first-ranked key alone in two classes or
    at its given hierarchy's coarsest level (:func:`coarsest_classes`; a skewed binary variable, one
    nearly constant within a key, one with fewer than l values), so every plan would be withheld
    for l; the reason says what l would cost."""
    if not sensitive or not ranked:
        return None
    first = ranked[0]
    codes = [category_codes(data[s])[0] - 1 for s in sensitive]
    hierarchies = hierarchies or {}
    digits = [category_codes(coarsest_classes(data[first.name], first.scale, first.missing, hierarchies.get(first.name)))[0]]
    share = _records_below(digits, codes, 1, l)
    if share <= limit + 1e-12:
        return None
    level = "at its hierarchy's coarsest level" if first.name in hierarchies else "in two classes"
    return (f"l = {l} not drafted: with only the first key ({first.name}) {level}, {share:.1%} of the records "
            f"are in key groups with fewer than {l} values of {', '.join(sensitive)}, against the {limit:.0%} "
            f"suppression limit; add l: {l} under risk and no plan of this file can be released within the limits "
            "(Machanavajjhala et al. 2007: l-diversity needs well-represented sensitive values in every group)")


def _cap_keys(drafted: list[DraftedVariable], max_keys: int = MAX_CATEGORICAL_KEYS,
              cap: KeyCap | None = None) -> list[DraftedVariable]:
    """At most ``max_keys`` categorical keys (:data:`MAX_CATEGORICAL_KEYS` unless ``sdc init
    --max-keys`` says otherwise) and at most what the file's records support (``cap``,
    :func:`key_cap`), in the order of :func:`_ranked_candidates`, and at most
    :data:`MAX_CONTINUOUS_KEYS` continuous keys (scenario variables, then totals, then the other
    amounts, in file order); the rest become ``other`` with the reason. Keys declared in the
    metadata are kept and not counted."""
    ranked = _ranked_candidates(drafted)
    limit = min(max_keys, cap.cap) if cap is not None else max_keys
    kept = {v.name for v in ranked[:limit]} | {v.name for v in drafted if v.group == "declared"}
    position = {v.name: i for i, v in enumerate(ranked)}
    continuous = [v for v in drafted if v.role == "continuous_key" and v.group != "declared"]
    ranked_continuous = sorted(continuous, key=lambda v: v.rank)  # stable: file order within a rank
    kept |= {v.name for v in ranked_continuous[:MAX_CONTINUOUS_KEYS]}
    kept_continuous = [v.name for v in ranked_continuous[:MAX_CONTINUOUS_KEYS]]
    out = []
    for v in drafted:
        if v.role == "categorical_key" and v.name not in kept and (cap is None or cap.cap >= max_keys):
            v = replace(v, role="other", reason=f"{v.reason}; left out of the keys: the draft keeps at most "
                        f"{max_keys} categorical keys, one scenario group in turn; swap it in if an "
                        "intruder is more likely to know it")
        elif v.role == "categorical_key" and v.name not in kept:
            v = replace(v, role="other", reason=f"{v.reason}; left out of the keys: {cap.why_beyond(position[v.name])}"
                        " (draft decision to confirm)")
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


@dataclass(frozen=True)
class DraftedScenario:
    """The draft's disclosure scenario (:func:`draft_scenario`): every column's drafted role
    (``variables``), the l of l-diversity drafted (None: not drafted, ``l_reason`` says why), the
    key cap (:class:`KeyCap`, None when no categorical key candidate) and the ``decisions`` the
    methodologist must confirm (a key beyond the cap, l not drafted), each with its reason."""

    variables: list[DraftedVariable]
    l: int | None
    l_reason: str | None
    cap: KeyCap | None
    decisions: tuple[str, ...]


def draft_scenario(contents: FileContents, *, max_keys: int = MAX_CATEGORICAL_KEYS, k: int = DRAFTED_K,
                   l: int = DRAFTED_L, hierarchies: Mapping[str, Hierarchy] | None = None) -> DraftedScenario:
    """The drafted role of every column of a file read by :func:`read_with_metadata` (the scenario
    in the module docstring): roles declared in the file's metadata (``contents.roles``, from an
    Argus ``.rda``) taken as given; each other column guessed on its own (:func:`guess_variable`),
    household and cluster id candidates kept when another variable is constant within their groups,
    person numbers within the household recognised, then one weight/household id/record id, the
    columns that copy or derive from a key removed (:func:`_derived_from_keys`), the key caps
    (``max_keys`` categorical keys, and what the records support at ``k`` and ``l``:
    :func:`key_cap`; l is not drafted when no key at its coarsest level can meet it:
    :func:`l_reachable`; ``hierarchies``: the keys' given hierarchies, their coarsest levels),
    and keys from the other candidates when no scenario variable or amount was found."""
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
    drafted = [_numbered_within(data, v, household) for v in drafted]
    drafted = _one_of_each(drafted)
    derived = _derived_from_keys(data, drafted, household)
    drafted = [DraftedVariable(v.name, "direct_identifier", f"{derived[v.name]}; drafted direct_identifier so that "
                               "every plan removes it before release (or protect it with the key)")
               if v.name in derived else v for v in drafted]
    drafted = _keys_when_none(_cap_keys(drafted, max_keys))
    ranked = _ranked_candidates(drafted)
    sensitive = [v.name for v in drafted if v.role == "sensitive"]
    l_reason = l_reachable(data, ranked, sensitive, l=l, hierarchies=hierarchies)
    drafted_l = l if sensitive and l_reason is None else None
    # the drafted plan microaggregates the continuous keys within each released key combination in
    # groups of DRAFTED_MICROAGGREGATION_K: with continuous keys a combination needs that many records
    group = max(k, DRAFTED_MICROAGGREGATION_K) if any(v.role == "continuous_key" for v in drafted) else k
    # without weights a record's risk is 1/f_k and the drafted global-risk target binds the keys too
    weighted = any(v.role == "weight" for v in drafted)
    max_risk = None if weighted else drafted_global_risk(len(data), weighted=False)
    cap = replace(key_cap(data, ranked, sensitive, k=group, l=drafted_l, max_keys=max_keys, max_risk=max_risk,
                          hierarchies=hierarchies),
                  drafted_k=k) if ranked else None
    variables = _cap_keys(drafted, max_keys, cap)
    decisions = [f"{v.name}: {v.reason.split('left out of the keys: ', 1)[1].removesuffix(' (draft decision to confirm)')}"
                 for v in variables if v.reason.endswith("(draft decision to confirm)")]
    if l_reason is not None:
        decisions.insert(0, l_reason)
    return DraftedScenario(variables, None if l_reason else l, l_reason, cap, tuple(decisions))


#: The most groups (years, waves) within which an id numbering the records is a record key
#: (:func:`_numbered_within`).
MAX_NUMBERING_GROUPS = 100


def _numbered_within(data: pd.DataFrame, v: DraftedVariable, household: str | None) -> DraftedVariable:
    """``v`` as a direct identifier when it is an id (by name) that numbers the records within the
    groups of a column of few values (a year, a wave, a country: at most :data:`MAX_NUMBERING_GROUPS`
    groups, the household aside): together they are the record's number in the source file, a record key
    the release must not carry (stevedata's gss_abortion: GSS respondent ids 1 to about 4,500 in each
    of 32 years were released as they were). ``v`` unchanged otherwise."""
    if v.group != "id" or v.role != "other" or data[v.name].nunique() <= MAX_CATEGORIES:
        return v
    for other in data.columns:
        if other in (v.name, household) or not 1 < data[other].nunique() <= MAX_NUMBERING_GROUPS:
            continue
        if not data[[other, v.name]].duplicated().any():
            return replace(v, role="direct_identifier",
                           reason=f"named like an id and unique within each {other!r}: with it, the record's number in "
                                  "the source file (a record key); removed before release")
    return v


def draft_roles(contents: FileContents, *, max_keys: int = MAX_CATEGORICAL_KEYS) -> list[DraftedVariable]:
    """The drafted role of every column (:func:`draft_scenario`'s ``variables``)."""
    return draft_scenario(contents, max_keys=max_keys).variables
