"""Risk of the original wave (SPEC §2, §3, §5, §6): key frequencies, the per-record risk table with
SUDA2 and l-diversity, the unsafe combinations and the combined measure, and the risk
contributions; with the measure notes every stage keeps of the measures it left out or limited.

Each function takes the wave's data and its :class:`~sdc_dagster.spec.SurveySpec` and calls the
measure modules with the spec's roles and parameters, so that the Dagster assets stay thin and the
same chain runs from a notebook.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdc_dagster import risk
from sdc_dagster.risk import contribution
from sdc_dagster.errors import NotComputable
from sdc_dagster.report import MeasureNote
from sdc_dagster.risk.combined import CombinedSetup, prepare_combined, risk_of_setup
from sdc_dagster.spec import SurveySpec


def if_computable(notes: list[MeasureNote], measure: str, variant: str, compute, *args, **kwargs):
    """``compute(*args, **kwargs)``, or None with a "not applicable" :class:`MeasureNote` appended to
    ``notes`` when the measure is undefined on these data (:class:`~sdc_dagster.errors.NotComputable`).
    Any other error propagates: only the measures' own "cannot be computed here" conditions degrade."""
    try:
        return compute(*args, **kwargs)
    except NotComputable as exc:
        notes.append(MeasureNote(measure, str(exc), variant))
        return None


def measure_notes_frame(notes: list[MeasureNote]) -> pd.DataFrame:
    """Measure notes as a table (one row per note; columns ``measure``, ``reason``, ``variant``,
    ``status``), the form a stage stores and the report reads back with :func:`measure_notes_of`."""
    return pd.DataFrame([vars(n) for n in notes], columns=["measure", "reason", "variant", "status"], dtype=object)


def measure_notes_of(frame: pd.DataFrame | list[dict]) -> list[MeasureNote]:
    """:class:`MeasureNote` records from a :func:`measure_notes_frame` table or a list of its rows."""
    rows = frame.to_dict("records") if isinstance(frame, pd.DataFrame) else list(frame)
    return [MeasureNote(**row) for row in rows]


def suda_scores(data: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame | None, list[MeasureNote]]:
    """SUDA2 scores of the wave (SPEC §3.8), searching MSUs up to the largest size that fits SUDA2's
    memory bound (:func:`~sdc_dagster.risk.suda2_max_size`). Returns the scores (None when not even
    single keys fit) and a note saying so whenever the search is cut short."""
    size = risk.suda2_max_size(data, keys)
    if size == 0:
        reason = (f"too many sample uniques for SUDA2's memory bound even with MSUs of one key "
                  f"({len(keys)} keys, {len(data)} records)")
        return None, [MeasureNote("suda2", reason)]
    notes = []
    if size < len(keys):
        notes.append(MeasureNote(
            "suda2",
            f"MSUs searched up to {size} of the {len(keys)} keys (max_size lowered to {size}): the full search "
            "would exceed SUDA2's memory bound; the scores count the MSUs of at most that many keys, weighted "
            f"by SUDA's weights with M = {size}",
            status="limited",
        ))
    return risk.suda2(data, keys, max_size=size), notes


def keys_from_classification(classification: pd.DataFrame, role: str) -> list[str]:
    """The variables the classification table gives a role, in table order."""
    return classification.loc[classification["role"] == role, "variable"].tolist()


def key_frequencies(data: pd.DataFrame, keys: list[str], *, weight: str | None = None, con=None) -> pd.DataFrame:
    """fk and Fk of every record's key (:func:`~sdc_dagster.risk.key_frequencies`, SPEC §2). With no
    key (a spec with continuous keys only, or a variant that releases none of them) every record
    shares the empty key: f = n and F = the sum of the weights (SPEC §5.5 with h = 0), so that
    nobody is singled out by categories."""
    if keys:
        return risk.key_frequencies(data, keys, weight=weight, con=con)
    total = float(data[weight].sum()) if weight is not None else float(len(data))
    return pd.DataFrame({"fk": float(len(data)), "Fk": total}, index=data.index)


def risk_table(data: pd.DataFrame, keys: list[str], *, weight=None, household=None, con=None,
               frequencies: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`~sdc_dagster.risk.risk_table` with the frequencies of :func:`key_frequencies` (the
    empty key's when there is no key)."""
    if frequencies is None and not keys:
        frequencies = key_frequencies(data, keys, weight=weight)
    return risk.risk_table(data, keys, weight=weight, household=household, con=con, frequencies=frequencies)


def diversity_l(spec: SurveySpec) -> int:
    """The l the report counts l-diversity against: the spec's ``risk.l``, 2 when it declares none
    (a key group whose records all share one value of the sensitive variable)."""
    return spec.risk.l if spec.risk.l is not None else 2


def records_below_l(frame: pd.DataFrame, spec: SurveySpec, keys: list[str],
                    table: pd.DataFrame | None = None) -> dict[str, int]:
    """Per sensitive variable v of the spec that ``frame`` holds, the records whose key group (the
    released ``keys``) holds fewer than l distinct values of v (``<v>_records_below_l``) and whose
    group's entropy l-diversity is below l (``<v>_records_below_entropy_l``), l by
    :func:`diversity_l` (SPEC §3.6, sdcMicro's ``ldiversity``); empty without keys or sensitive
    variables. ``table``: the risk stage's table of ``frame`` with its ``ldiversity_<v>_*`` columns,
    read instead of computed again."""
    sensitive = [v for v in spec.names("sensitive") if v in frame.columns]
    if not keys or not sensitive:
        return {}
    if table is not None and all(f"ldiversity_{v}_distinct" in table.columns for v in sensitive):
        scores = table[[f"ldiversity_{v}_{m}" for v in sensitive for m in ("distinct", "entropy")]].rename(
            columns=lambda c: c.removeprefix("ldiversity_"))
    else:
        scores = risk.l_diversity(frame, keys, sensitive, recursive_c=spec.risk.recursive_c)
    l = diversity_l(spec)
    figures = {}
    for v in sensitive:
        figures[f"{v}_records_below_l"] = int((scores[f"{v}_distinct"] < l).sum())
        figures[f"{v}_records_below_entropy_l"] = int((scores[f"{v}_entropy"] < l - 1e-9).sum())
    return figures


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class RiskScores:
    """The risk of the original wave, computed once and passed on to every later stage.

    ``table``: per-record risk (columns in :func:`risk_scores`); ``figures``: the wave's global
    figures; ``notes``: the :class:`MeasureNote` of each measure left out or limited;
    ``unsafe_by_variable``, ``unsafe_by_category``: the unsafe combinations (SPEC §3.10, None
    without categorical keys); ``combined``: the set-up of the combined measure (SPEC §5), which the
    risk games of the contributions reuse (None without continuous keys: then only the games need it).
    """

    table: pd.DataFrame
    figures: dict
    notes: list[MeasureNote]
    unsafe_by_variable: pd.DataFrame | None = None
    unsafe_by_category: pd.DataFrame | None = None
    combined: CombinedSetup | None = None

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet, for readers outside Python: the table."""
        return {"": self.table}


def risk_scores(
    data: pd.DataFrame, spec: SurveySpec, *, con=None, frequencies: pd.DataFrame | None = None
) -> RiskScores:
    """Per-record risk table, the wave's global risk figures (SPEC §2, §3, §5) and its unsafe
    combinations (SPEC §3.10); ``frequencies``: the wave's :func:`~sdc_dagster.risk.key_frequencies`,
    when already computed.

    Columns of the table: ``fk``, ``Fk`` (SPEC §2.4), ``risk`` (individual risk, §3.2),
    ``household_risk`` (§3.5, when the spec names a household id), ``suda_score``,
    ``suda_dis_score`` (SUDA2, §3.8), ``ldiversity_<sensitive>_{distinct,entropy,recursive}`` (§3.6,
    per sensitive variable), ``combined_categorical``, ``combined_continuous``, ``combined_risk``
    (§5.5/§5.6, with missing values as in §5.8, when the spec has continuous keys).

    The notes name each measure left out or limited (SUDA2 past its memory bound,
    :func:`suda_scores`; l-diversity without a sensitive variable). The unsafe combinations count
    the value combinations of up to three keys shared by fewer than k records (the spec's k).

    Without categorical keys (continuous keys only) every record shares the empty key (fk = n,
    :func:`key_frequencies`); SUDA2, l-diversity, the unsafe combinations and the global figures of
    §3 do not apply and are left out, and the risk is the combined measure's continuous part.
    """
    keys, weight, household = spec.categorical_keys, spec.weight, spec.household_id
    table = risk_table(data, keys, weight=weight, household=household, con=con, frequencies=frequencies)
    figures, notes = {}, []
    by_variable = by_category = None
    if keys:  # without categorical keys the key is shared by every record: no figure of §3 applies
        figures = risk.summarise_risk(table)
        for k in sorted({2, 3, 5, spec.risk.k}):
            figures[f"k{k}_violations"] = int((table["fk"] < k).sum())
        figures["sample_uniques"] = int((table["fk"] == 1).sum())
        figures["records_above_threshold"] = risk.risk_above_threshold(
            table["risk"], spec.risk.individual_risk_threshold
        )
        suda, notes = suda_scores(data, keys)
        table["suda_score"] = suda["score"] if suda is not None else np.nan
        table["suda_dis_score"] = suda["dis_score"] if suda is not None else np.nan
        by_variable, by_category = risk.unsafe_combinations(data, keys, k=spec.risk.k, max_dim=min(3, len(keys)),
                                                            con=con)
    sensitive = [v for v in spec.names("sensitive") if v in data.columns]
    if sensitive and keys:
        diversity = risk.l_diversity(data, keys, sensitive, recursive_c=spec.risk.recursive_c, con=con)
        diversity.columns = [f"ldiversity_{c}" for c in diversity.columns]
        table = table.join(diversity)
    elif keys:
        notes.append(MeasureNote("l_diversity", "the spec names no sensitive variable present in the wave"))
    continuous = spec.continuous_keys
    setup = None
    if continuous:  # missing values follow SPEC §5.8
        setup = prepare_combined(data, keys, continuous, spec.precision, k=spec.risk.k, weight=weight)
        combined = risk_of_setup(setup, data.index)
        table["combined_categorical"] = combined["categorical"]
        table["combined_continuous"] = combined["continuous"]
        table["combined_risk"] = combined["risk"]
        figures["combined_global_risk"] = float(combined["risk"].mean())
    return RiskScores(table, figures, notes, by_variable, by_category, setup)


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class Contributions:
    """Shapley and solidarity contributions of the wave (:func:`risk_contributions`)."""

    per_record: pd.DataFrame
    global_: pd.DataFrame
    notes: list[MeasureNote]

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet, for readers outside Python."""
        return {"per_record": self.per_record, "global": self.global_, "measure_notes": measure_notes_frame(self.notes)}


def risk_contributions(data: pd.DataFrame, spec: SurveySpec, *, setup: CombinedSetup | None = None) -> Contributions:
    """Shapley and solidarity contributions of each quasi-identifier to each record's risk (SPEC §6).

    Both values come from one pass over the risk games (:func:`~sdc_dagster.risk.contribution.contribution_values`);
    missing values in the quasi-identifiers follow SPEC §5.8. ``setup``: the combined measure's
    set-up of the wave (:attr:`RiskScores.combined`) when the risk stage built it, so that it is not
    built twice. Returns the per-record values (columns ``shapley_<var>``, ``solidarity_<var>``),
    the global contributions (index: variables; columns ``shapley``, ``solidarity``; SPEC §6.6)
    and a note when the games cannot be played on the wave (more quasi-identifiers than the games
    support, or fewer than two): then both are empty.
    """
    keys, continuous = spec.categorical_keys, spec.continuous_keys
    notes = []
    results = if_computable(
        notes, "risk contributions (Shapley, solidarity)", "original", contribution.contribution_values,
        data, keys, continuous, spec.precision, k=spec.risk.k, weight=spec.weight, values=("shapley", "solidarity"),
        setup=setup,
    )
    per_record, overall = {}, {"shapley": pd.Series(dtype=float), "solidarity": pd.Series(dtype=float)}
    for value, (values, global_values) in (results or {}).items():
        per_record.update({f"{value}_{c}": values[c] for c in values.columns})
        overall[value] = global_values
    return Contributions(pd.DataFrame(per_record, index=data.index), pd.DataFrame(overall), notes)
