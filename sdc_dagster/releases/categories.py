"""How a released file codes the categories a plan merged, and the invariant it keeps (SPEC §8.2).

Inside the pipeline a merged category keeps the smallest code of its members (SPEC §8.2, the
device of the ordinal distance (3)): the loss measures and residual risk compare the protected
variant with the original in that coding. A released file must not show it: the value "10th" that
also counts the doctorates misstates the data. :func:`released_coding` derives, from a plan's steps
and the original wave, the coding a safe file uses instead:

* every **merged category** (a ``recode`` group, a ``mapping`` that sends several codes to one, a
  ``mapping`` onto a brand-new code, the tail a ``top_coding``/``bottom_coding`` step of a
  categorical key folds into its replacement, a band of ``interval_recode``) gets a code of its own:

  - numeric codes: a brand-new code a ``mapping`` chose is kept; a merged category whose code is an
    original category's gets the next free integer above the original categories (in the order of
    the merged categories' smallest members), skipping every code the source labels or declares
    missing;
  - text categories: the label itself (a brand-new text code a ``mapping`` chose is its own label),
    with `` (merged)`` appended while it equals an original category;
  - ``interval_recode`` without ``labels``: the interval as sdcMicro's ``globalRecode`` prints it,
    ``"(20,25]"`` (text);

* and a **label that names it**: the group's name (the ``names`` of a ``recode`` step, the labels
  of an ``interval_recode`` step; a name the search or a hierarchy made from the members' codes
  reads their labels instead), else its members' labels (the source's value labels, else the codes)
  by :func:`~sdc_dagster.spec.hierarchies.members_name`, the one naming of merged groups: all of them
  when at most three ("Bachelors, Masters, Doctorate"), else ``"<first> – <last> (N categories)"``
  when the members are a run of adjacent categories and ``"<first>, …, <last> (N categories)"`` when
  they are not;
  A label equal to an original category's label (a group named after one of its members) gets
  `` (merged)`` appended, so that a file read back by its labels counts each label once;
* every category left alone keeps its code and label; the labels of merged-away members are
  dropped, since no released record carries them.

The invariant (:func:`category_count_excess`, the release check ``released_categories``): for each
released categorical key and each original category c, released count(c) <= original count(c) (a
released category that is not an original category is not constrained). Non-perturbative
protection (recoding, top and bottom coding, local suppression, subsampling) keeps it by
construction once merged categories have codes of their own. Perturbative methods that change a
key's values (:data:`PERTURBATIVE_METHODS`: PRAM above all, SPEC §8.8) move records between
categories by design, so a PRAM-ed category may legitimately count more records than it had (the
published transition matrix lets users correct for it): the check leaves the keys such a step
touched out and names them (``perturbed_keys`` in the check's value and the manifest).

References: Hundepool et al. (2012), *Statistical Disclosure Control*, §3.4.2 (global recoding:
the released file shows the new, coarser categories); sdcMicro ``globalRecode`` and
``groupAndRename`` (a merged factor level gets a new level name).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real

import numpy as np
import pandas as pd

from sdc_dagster.protect.recode import interval_labels, merge_mapping
from sdc_dagster.report.categories import plain_category
from sdc_dagster.spec.hierarchies import labelled_name, members_name

#: Plan methods that may move records into a category of a key they change, so that it counts more
#: than it had (the keys they touch are left out of the invariant, :func:`perturbed_keys`). Rank
#: swapping is not among them: it exchanges values between records, so every category keeps its
#: count and the invariant is checked.
PERTURBATIVE_METHODS = ("pram", "microaggregation", "microaggregation_gower", "noise", "rounding")
#: The methods whose steps change a variable's categories as a recode (the variables they name get
#: a released coding).
RECODING_METHODS = ("recode", "interval_recode", "top_coding", "bottom_coding")
#: What is appended to a merged text category's label while it equals an original category.
MERGED_SUFFIX = " (merged)"


@dataclass(frozen=True)
class Band:
    """One interval of an ``interval_recode`` step: its position and its text ``"(20,25]"``."""

    position: int
    text: str


@dataclass(frozen=True)
class MergedCategory:
    """One released category that stands for other original ones (see the module docstring).

    ``internal``: its value in the protected variant (the smallest member, or the step's target);
    ``members``: the original categories it holds (bands for an ``interval_recode``), sorted;
    ``code``: its released code; ``label``: its released label."""

    internal: Hashable
    members: tuple
    code: Hashable
    label: str

    def record(self) -> dict:
        """The manifest's record: members (codes, or bands as their text), released code and label."""
        return {"members": [m.text if isinstance(m, Band) else m for m in self.members],
                "code": self.code, "label": self.label}


@dataclass(frozen=True)
class ReleasedCoding:
    """The released coding of a plan's variant (:func:`released_coding`): the merged categories of
    each recoded variable, the categorical keys a perturbative step touched (``perturbed``) and the
    variables released as text (``text``: the bands of an ``interval_recode`` without labels)."""

    merged: dict[str, tuple[MergedCategory, ...]] = field(default_factory=dict)
    perturbed: tuple[str, ...] = ()
    text: tuple[str, ...] = ()

    def codes(self, variable: str) -> dict:
        """internal value -> released code of the merged categories of ``variable``."""
        return {m.internal: m.code for m in self.merged.get(variable, ())}

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (the protected variant) with each merged category's internal value replaced by
        its released code; a copy when anything changes. Distinct values are mapped, not records."""
        recoded = {}
        for variable, merged in self.merged.items():
            if variable not in frame.columns or not merged:
                continue
            column = frame[variable]
            codes, uniques = pd.factorize(column, use_na_sentinel=True)
            if not len(uniques):  # every value suppressed: no merged category to recode
                continue
            mapping = self.codes(variable)
            released = [mapping.get(plain_category(u), u) for u in uniques]
            if (variable in self.text or any(isinstance(v, str) for v in released)
                    or not pd.api.types.is_numeric_dtype(column)):
                values = np.array([*released, None], dtype=object)[codes]  # code -1 -> the last: missing
                recoded[variable] = pd.Series(values, index=frame.index, dtype=object)
            else:
                table = pd.Series(released, dtype=column.dtype if pd.api.types.is_numeric_dtype(column) else None)
                recoded[variable] = pd.Series(table.to_numpy()[codes], index=frame.index).where(codes >= 0)
                recoded[variable] = recoded[variable].astype(_released_dtype(column, recoded[variable]))
        if not recoded:
            return frame
        out = frame.copy()
        for variable, values in recoded.items():
            out[variable] = values
        return out

    def shown(self, variable: str, values: pd.Series) -> pd.Series:
        """``values`` of ``variable`` (the protected variant's) as the report shows the released
        file: each merged category as its released code and label, ``"13 (Bachelors, Masters,
        Doctorate)"`` (a text code, which is its own label, as it is); other values unchanged."""
        merged = self.merged.get(variable, ())
        if not merged:
            return values
        texts = {m.internal: (m.code if m.code == m.label else f"{m.code} ({m.label})") for m in merged}
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        shown = [texts.get(plain_category(u), u) for u in uniques]
        return pd.Series(np.array([*shown, None], dtype=object)[codes], index=values.index, name=values.name)

    def matrix(self, variable: str, matrix: pd.DataFrame, *, shown: bool = False) -> pd.DataFrame:
        """A PRAM transition matrix of ``variable`` (rows and columns: the variant's categories)
        with each merged category as its released code, or with ``shown`` as :meth:`shown` writes
        it: the matrix published with a release and drawn in the report names the categories of the
        safe files."""
        merged = self.merged.get(variable, ())
        if not merged:
            return matrix
        names = {m.internal: (m.code if not shown or m.code == m.label else f"{m.code} ({m.label})") for m in merged}

        def rename(category):
            return names.get(plain_category(category), category)

        return matrix.rename(index=rename, columns=rename)

    def value_labels(self, source: Mapping[str, Mapping] | None) -> dict[str, dict]:
        """The released value labels: the source's (``{column: {code: label}}``) without the codes of
        merged members, and the merged categories' codes with their labels (text codes too)."""
        labels = {column: {plain_category(c): str(t) for c, t in mapping.items()}
                  for column, mapping in (source or {}).items()}
        for variable, merged in self.merged.items():
            kept = dict(labels.get(variable, {}))
            if variable in self.text:
                kept = {}  # the variable is released as text: no numeric label applies
            for category in merged:
                for member in (category.internal, *category.members):
                    kept.pop(member, None)
            kept.update({m.code: m.label for m in merged if m.code != m.label})
            labels[variable] = kept
        return {column: mapping for column, mapping in labels.items() if mapping}

    def record(self) -> dict:
        """What the manifest records: ``merged`` (variable -> [{members, code, label}]) and
        ``perturbed_keys`` (the keys the invariant leaves out)."""
        return {"merged": {v: [m.record() for m in merged] for v, merged in self.merged.items() if merged},
                "perturbed_keys": list(self.perturbed)}


def _released_dtype(original: pd.Series, values: pd.Series):
    """The dtype of a recoded numeric column: the original's, nullable Int64 for an integer column
    with missing values."""
    if pd.api.types.is_integer_dtype(original.dtype) and values.isna().any():
        return "Int64"
    return original.dtype


def step_parameters(step: Mapping) -> dict:
    """A step's parameters, from a step as the spec writes it or as a manifest records it."""
    return dict(step["parameters"]) if "parameters" in step else {k: v for k, v in step.items() if k != "method"}


def step_columns(step: Mapping) -> list[str]:
    """The columns a step writes into (its ``variable`` or ``columns``)."""
    parameters = step_parameters(step)
    named = parameters.get("variable", parameters.get("columns"))
    return [named] if isinstance(named, str) else [c for c in (named or []) if isinstance(c, str)]


def perturbed_keys(steps: Sequence[Mapping], keys: Sequence[str]) -> tuple[str, ...]:
    """The keys of ``keys`` a step of a :data:`PERTURBATIVE_METHODS` method writes into."""
    touched = {c for step in steps if step.get("method") in PERTURBATIVE_METHODS for c in step_columns(step)}
    return tuple(k for k in keys if k in touched)


def _sort_key(value):
    if isinstance(value, Band):
        return (0, value.position, "")
    if isinstance(value, Real) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


class _Variable:
    """The membership of one variable's internal categories while the steps are replayed."""

    def __init__(self, known: set):
        self.known = frozenset(known)  # the original categories
        self.alive = set(known)  # internal values a record may hold
        self.members: dict = {}  # internal value -> frozenset of atoms, where it is not {itself}
        self.names: dict = {}  # internal value -> the name its step gave
        self.bands: dict = {}  # internal value -> its band's text (default labels of interval_recode)

    def members_of(self, value, listed: bool) -> frozenset:
        if value in self.members:
            return self.members[value]
        return frozenset({value}) if value in self.alive or listed else frozenset()

    def remap(self, mapping: Mapping, names: Mapping | None = None) -> None:
        """Replay one old -> new mapping (``names``: target -> the name its step gave)."""
        mapping = {plain_category(old): plain_category(new) for old, new in mapping.items()}
        targets: dict = {}
        for old, new in mapping.items():
            targets.setdefault(new, []).append(old)
        merged = {}
        for target, sources in targets.items():
            atoms = frozenset().union(*(self.members_of(s, listed=True) for s in sources))
            if target not in mapping:  # the target keeps its own records
                atoms |= self.members_of(target, listed=False)
            merged[target] = atoms
        for old, new in mapping.items():
            if old != new:
                self.alive.discard(old)
                self.members.pop(old, None)
                self.names.pop(old, None)
                self.bands.pop(old, None)
        for target, atoms in merged.items():
            before = self.members_of(target, listed=False)
            self.alive.add(target)
            self.members[target] = atoms
            if names and target in names:
                self.names[target] = names[target]
            elif atoms != before:
                self.names.pop(target, None)
                self.bands.pop(target, None)


def _known_categories(original: pd.Series, declared: Sequence | None) -> set:
    """The original categories of a column: its observed values and the spec's ``categories``."""
    observed = {plain_category(v) for v in pd.unique(original.dropna())}
    return observed | {plain_category(c) for c in (declared or ())}


def _replay(state: _Variable, step: Mapping, *, categorical: bool) -> None:
    """Replay one step on a variable's state (steps of other methods leave the coding alone)."""
    method = step.get("method")
    parameters = step_parameters(step)
    if method == "recode":
        groups, names = parameters.get("groups"), parameters.get("names")
        if groups is not None:
            named = {min(plain_category(c) for c in group): name
                     for group, name in zip(groups, names or ()) if group}
            state.remap(merge_mapping(groups), named)
        elif isinstance(parameters.get("mapping"), Mapping):
            state.remap(parameters["mapping"])
    if method in ("top_coding", "bottom_coding") and categorical:
        value, replacement = parameters.get("value"), parameters.get("replacement")
        numbers = [v for v in state.alive if _is_number(v)]
        coded = [v for v in numbers if (v > value if method == "top_coding" else v < value)]
        if replacement is None:
            for v in coded:
                state.alive.discard(v)
                state.members.pop(v, None)
        elif coded:
            state.remap({v: replacement for v in coded})
    if method == "interval_recode":
        breaks = list(parameters.get("breaks") or ())
        texts = interval_labels(breaks, right=parameters.get("right", True))
        given = parameters.get("labels")
        labels = [plain_category(v) for v in given] if given is not None else list(range(1, len(texts) + 1))
        state.alive = set(labels)
        state.members = {label: frozenset({Band(i, text)}) for i, (label, text) in enumerate(zip(labels, texts))}
        state.names = {label: str(label) for label in labels} if given is not None else {}
        state.bands = {} if given is not None else dict(zip(labels, texts))


def _member_texts(members: Sequence, labels: Mapping) -> dict:
    """Each member's text: a band's interval, else the source's value label (the code when it has none)."""
    return {m: (m.text if isinstance(m, Band) else labels.get(m, str(m))) for m in members}


def released_coding(
    original: pd.DataFrame,
    steps: Sequence[Mapping],
    *,
    categorical: Sequence[str] = (),
    declared: Mapping[str, Sequence] | None = None,
    labels: Mapping[str, Mapping] | None = None,
    missing: Mapping[str, Sequence] | None = None,
) -> ReleasedCoding:
    """The released coding of the variant that ``steps`` (a plan's steps, as the spec or a manifest
    writes them) make of ``original`` (module docstring).

    Parameters
    ----------
    original : the wave the plan protects (its observed categories are the original ones).
    steps : the plan's steps in order.
    categorical : the categorical keys (their top and bottom coding merges categories; the keys a
        perturbative step touches are :attr:`ReleasedCoding.perturbed`).
    declared : the spec's ``categories`` of each variable (original categories too).
    labels : the source's value labels ``{column: {code: label}}``; they label the members and
        their codes are never given to a merged category.
    missing : codes declared missing per column (the spec's and the source's user-missing codes),
        never given to a merged category.
    """
    declared = declared or {}
    labels = {c: {plain_category(k): str(t) for k, t in m.items()} for c, m in (labels or {}).items()}
    states: dict[str, _Variable] = {}
    text_variables = set()
    for step in steps:
        method = step.get("method")
        if method == "remove_variables":
            removed = step_parameters(step).get("variables")
            for variable in [removed] if isinstance(removed, str) else list(removed or ()):
                states.pop(variable, None)
                text_variables.discard(variable)
            continue
        for variable in step_columns(step):
            if variable not in original.columns:
                continue
            if variable not in states:
                if method not in RECODING_METHODS:
                    continue
                states[variable] = _Variable(_known_categories(original[variable], declared.get(variable)))
            _replay(states[variable], step, categorical=variable in categorical)
            if method == "interval_recode":
                if step_parameters(step).get("labels") is None:
                    text_variables.add(variable)
                else:
                    text_variables.discard(variable)
    merged = {}
    for variable, state in states.items():
        merged[variable] = _merged_categories(
            state, original[variable], labels.get(variable, {}),
            [plain_category(c) for c in (missing or {}).get(variable, ())], text=variable in text_variables)
    return ReleasedCoding(merged={v: m for v, m in merged.items() if m},
                          perturbed=perturbed_keys(steps, categorical),
                          text=tuple(v for v in text_variables if v in merged))


def _merged_categories(state: _Variable, original: pd.Series, labels: Mapping, missing: list, *,
                       text: bool) -> tuple[MergedCategory, ...]:
    """The merged categories of one variable's replayed state, with their released codes and labels
    (module docstring); ``original``: the original column (its dtype decides numeric codes)."""
    known = state.known
    categories = [(internal, tuple(sorted(atoms, key=_sort_key)))
                  for internal, atoms in state.members.items()
                  if atoms != frozenset({internal}) and internal in state.alive]
    if not categories:
        return ()
    categories.sort(key=lambda item: _sort_key(item[1][0]) if item[1] else _sort_key(item[0]))
    order = sorted(known | {a for _, atoms in categories for a in atoms if not isinstance(a, Band)}, key=_sort_key)
    numeric = pd.api.types.is_numeric_dtype(original) and not pd.api.types.is_bool_dtype(original) and not text
    taken = known | set(labels) | set(missing) | {a for _, atoms in categories for a in atoms}
    numbers = [v for v in known | {a for _, atoms in categories for a in atoms} if _is_number(v)]
    next_code = int(np.floor(max(numbers))) + 1 if numbers else 1
    original_labels = {labels.get(c, str(c)) for c in known} | set(labels.values())
    out = []
    used, used_labels = set(), set()
    for internal, members in categories:
        new_text = (isinstance(internal, str) and internal not in known and internal not in labels
                    and internal not in state.bands)
        if internal in state.bands:
            label = state.bands[internal]
        elif internal in state.names:
            # a name the search or a hierarchy made from the members' codes reads their labels instead
            label = labelled_name(state.names[internal], members, _member_texts(members, labels), order)
        elif new_text:
            label = internal  # a brand-new text code chosen by a mapping names itself
        else:
            label = members_name(members, _member_texts(members, labels), order)
        if len(members) > 1 or internal in state.names:
            while label in original_labels or label in used_labels:
                label = f"{label}{MERGED_SUFFIX}"  # a label read back must name one category only
        if text or not numeric or isinstance(internal, str):
            code = label  # a text category is its own label
            while code in known or code in used:
                code = f"{code}{MERGED_SUFFIX}"
            label = code
        elif internal in known or internal in labels or internal in used:
            while next_code in taken or next_code in used:
                next_code += 1
            code = next_code
        else:
            code = internal  # a brand-new code chosen by a mapping
        used_labels.add(label)
        used.add(code)
        out.append(MergedCategory(internal=internal, members=members, code=code, label=label))
    return tuple(out)


def category_count_excess(original: pd.DataFrame, released: pd.DataFrame, keys: Sequence[str]) -> dict[str, list]:
    """The breaches of the invariant: for each key of ``keys`` released in ``released`` (released
    coding, :meth:`ReleasedCoding.apply`), each original category c with released count(c) >
    original count(c), as ``{key: [(c, original count, released count), ...]}`` (keys without a
    breach left out). Categories compare as values (``1`` and ``1.0`` alike, text as text)."""
    breaches = {}
    for key in keys:
        if key not in released.columns or key not in original.columns:
            continue
        before = _counts(original[key])
        after = _counts(released[key])
        common = before.index.intersection(after.index)
        # looked up by label (reindex): a list of True/False categories would be taken as a mask
        over = common[after.reindex(common).to_numpy() > before.reindex(common).to_numpy()]
        if len(over):
            breaches[key] = [(c, int(before[c]), int(after[c])) for c in sorted(over, key=_sort_key)]
    return breaches


def _counts(values: pd.Series) -> pd.Series:
    """Records per category (missing values left out), categories as plain values; categories that
    are the same value (``1``, ``1.0``) summed. Counted per distinct value."""
    counted = values.value_counts(dropna=True)
    counted.index = pd.Index([plain_category(v) for v in counted.index], dtype=object)
    return counted.groupby(level=0, sort=False).sum() if not counted.index.is_unique else counted
