"""Evaluation of a wave's protected variants: residual risk and contributions (SPEC §3-§6, §4.1,
§4.2) and information loss (SPEC §9, §10), each variant next to the original.

The functions compare plain DataFrames (a notebook passes its own variants); the wave chain passes
its :class:`~sdc_dagster.pipeline.protection.ProtectedVariant` values' data, with the linkage shares
their release checks computed and the PRAM matrices their plans used, so that nothing is computed
twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from sdc_dagster import loss, risk
from sdc_dagster.risk import contribution
from sdc_dagster.errors import NotComputable
from sdc_dagster.pipeline.protection import linkage_figures
from sdc_dagster.pipeline.risk import RiskScores, if_computable, measure_notes_frame, records_below_l, risk_table
from sdc_dagster.pipeline.variant import (
    ReleasedKeys,
    keys_lost,
    loss_scales,
    ordinal_orders,
    perturbed,
    released_keys,
    retained_records,
    same_release,
    two_values,
    values_changed,
)
from sdc_dagster.report import MeasureNote
from sdc_dagster.spec import SurveySpec


def residual_risk(
    original: pd.DataFrame,
    protected: dict[str, pd.DataFrame],
    spec: SurveySpec,
    *,
    linkage: dict[str, dict[str, float]] | None = None,
    original_risk: RiskScores | None = None,
    keys: dict[str, ReleasedKeys] | None = None,
) -> pd.DataFrame:
    """Risk measures recomputed on each protected variant next to the original (one row per variant).

    The first row (``original``) is the unprotected wave. With categorical keys: global,
    household and individual-risk figures (SPEC §3), k-anonymity violations and the values
    suppressed. With continuous keys: ``combined_global_risk`` (SPEC §5.5/§5.6 on the keys the
    variant releases; its continuous part alone without categorical keys) and ``linkage_risk``,
    the figure of the ``linkage_risk`` release check
    (:func:`~sdc_dagster.pipeline.protection.linkage_figures`: 1 for the original and for a variant
    that changed no continuous key). Record linkage (SPEC §4.1) compares
    original and protected on every continuous key the variant releases, once one changed:
    ``record_linkage_risk`` (Euclidean, nearest original), ``record_linkage_mahalanobis_risk``
    (nearest original under that distance), ``record_linkage_gower_risk`` (nearest original under
    Gower's distance for mixed data on those continuous keys AND the categorical keys the variant
    releases, with their spec scales and orders, as sdcMicro's ``recordLinkage`` links on
    quasi-identifiers of any type; suppressed key values are skipped pairwise) and
    ``record_linkage_one_to_one_risk`` (Euclidean, one-to-one assignment), each with ties in the
    intruder's favour (a tie between the own original and another counts as a correct link; for
    one-to-one, between identical records): upper bounds; and each as ``..._expected_risk``
    (``record_linkage_expected_risk``, ``record_linkage_mahalanobis_expected_risk``,
    ``record_linkage_gower_expected_risk``, ``record_linkage_one_to_one_expected_risk``) with the
    ties broken at random, the shares the ``linkage_risk`` check takes; see
    :func:`risk.record_linkage_risk`. The interval measures (SPEC §4.2) compare the continuous keys
    the plan changed: ``interval_risk`` is sdcMicro's dRisk and ``rank_interval_disclosure`` the
    rank-based interval disclosure ID of Domingo-Ferrer, Mateo-Sanz & Torra (mean over p = 1..10 %,
    :func:`risk.rank_interval_disclosure`).

    ``linkage``: the :func:`~sdc_dagster.pipeline.protection.linkage_figures` of variants already
    computed (by the release checks, ``checks["linkage_risk"].figures``), so that the quadratic linkages are not computed twice.
    With a weight: ``model_risk_gr1``, ``model_risk_gr2``, sdcMicro's model-based risks (``modRisk``,
    Skinner & Shlomo 2008) under the spec's ``risk.model_risk`` (default: the log-linear model of the
    released keys' main effects), NaN when their table has more than 2**22 cells or no record has
    every key observed (:func:`risk.model_risk`). With a population size (``risk.population_size``,
    or the sum of the weights): ``population_uniques_<model>`` for each model of
    ``risk.population_uniqueness`` (default ``dankar``), the estimated number of population uniques
    of the released keys (:func:`risk.population_uniqueness`, ARX's models).
    ``original_risk``: the risk stage's :class:`~sdc_dagster.pipeline.risk.RiskScores` of
    ``original``, whose risk table and combined risk the first row reads instead of computing them
    again. A variant released exactly as an earlier one (:func:`~sdc_dagster.pipeline.variant.same_release`:
    the searched plan is often a spec plan) takes its row. ``keys``: the keys each variant releases, as
    the chain stored them on its variants (derived from the frame otherwise).
    """
    categorical = spec.categorical_keys
    rows, evaluated, row_of = [], {}, {}
    for name, frame in {"original": original, **protected}.items():
        twin = _twin(frame, evaluated) if name != "original" else None
        if twin is not None:  # released exactly as an earlier variant: its figures
            known = (linkage or {}).get(name) or {}
            rows.append({**row_of[twin], "variant": name,
                         **{m: np.nan if v is None else float(v) for m, v in known.items()}})
            continue
        if name != "original":
            evaluated[name] = frame
        row = {"variant": name}
        released = _keys_of(spec, name, frame, keys)
        present = released.categorical
        known_risk = original_risk if name == "original" else None
        if categorical:
            if known_risk is not None:
                table = known_risk.table
            else:
                table = risk_table(frame, present, weight=released.weight, household=released.household)
            figures, fk = risk.summarise_risk(table), table["fk"]
            row.update({
                "global_risk": float(figures["risk"]),
                "expected_reidentifications": float(figures["expected_reidentifications"]),
                "household_risk": float(figures.get("household_risk", np.nan)),
                "k2_violations": int((fk < 2).sum()),
                "k3_violations": int((fk < 3).sum()),
                "k5_violations": int((fk < 5).sum()),
                "suppressed_values": int(frame[present].isna().sum().sum() - original[present].isna().sum().sum()),
            })
            row.update(records_below_l(frame, spec, present, known_risk.table if known_risk is not None else None))
            if released.weight is not None and present:
                row.update(_model_risk(frame, present, released.weight, spec))
            if present:
                row.update(_population_uniques(frame, present, released.weight, spec))
        if spec.continuous_keys:
            # a subsampled variant is compared with the original records it releases
            matched = retained_records(original, frame, name)
            if known_risk is not None and "combined_global_risk" in known_risk.figures:
                row["combined_global_risk"] = float(known_risk.figures["combined_global_risk"])
            elif present or released.continuous:
                combined = risk.combined_risk(frame, present, released.continuous, spec.precision, k=spec.risk.k,
                                              weight=released.weight)
                row["combined_global_risk"] = float(combined["risk"].mean())
            known = (linkage or {}).get(name)
            if known is None:
                known = linkage_figures(matched, frame, spec, name, released=released)
            row.update({m: np.nan if v is None else float(v) for m, v in known.items()})
            changed = perturbed(matched, frame, released.continuous)
            row["interval_risk"] = float(risk.interval_risk(matched, frame, changed).risk) if changed else np.nan
            row["rank_interval_disclosure"] = (
                float(risk.rank_interval_disclosure(matched, frame, changed).value) if changed else np.nan
            )
        rows.append(row)
        row_of[name] = row
    return pd.DataFrame(rows).set_index("variant")


def _model_risk(frame: pd.DataFrame, keys: list[str], weight: str, spec: SurveySpec) -> dict[str, float]:
    """sdcMicro's modRisk figures gr1 and gr2 of a variant (:func:`risk.model_risk` with the spec's
    ``risk.model_risk``: method, bound, and the formula's terms of the released ``keys``,
    :func:`risk.formula_on_keys`; default the Poisson log-linear model of the keys' main effects),
    NaN where it is not computable (the keys' table too large to fit, or no record with every key
    observed)."""
    options = spec.risk.model_risk
    try:
        result = risk.model_risk(frame, keys, weight=weight, method=options.method, bound=options.bound,
                                 formula=risk.formula_on_keys(options.formula, spec.categorical_keys, keys))
    except NotComputable:
        return {"model_risk_gr1": np.nan, "model_risk_gr2": np.nan}
    return {"model_risk_gr1": result["gr1"], "model_risk_gr2": result["gr2"]}


def population_size(frame: pd.DataFrame, weight: str | None, spec: SurveySpec) -> int | None:
    """N of the population uniqueness estimates: the spec's ``risk.population_size``, else the sum of
    the weights (rounded; each record stands for w units, SPEC §3.1), None without either."""
    if spec.risk.population_size is not None:
        return int(spec.risk.population_size)
    if weight is None:
        return None
    return int(round(float(frame[weight].sum())))


def _population_uniques(frame: pd.DataFrame, keys: list[str], weight: str | None,
                        spec: SurveySpec) -> dict[str, float]:
    """The estimated population uniques of the released ``keys`` the spec asks for
    (``risk.population_uniqueness``: ``population_uniques_<model>``, :func:`risk.population_uniqueness`,
    ARX's Pitman, Zayatz and SNB models and Dankar et al.'s choice), when N is known
    (:func:`population_size`); NaN where a model has no estimate or N is below the records."""
    models = spec.risk.population_uniqueness
    size = population_size(frame, weight, spec) if models else None
    if size is None:
        return {}
    if size < len(frame):
        return {f"population_uniques_{model}": np.nan for model in models}
    result = risk.population_uniqueness(frame, keys, population_size=size)
    return {f"population_uniques_{model}": float(getattr(result, model)) for model in models}


def residual_contributions(
    before: pd.DataFrame, protected: dict[str, pd.DataFrame], spec: SurveySpec, *,
    keys: dict[str, ReleasedKeys] | None = None,
) -> pd.DataFrame:
    """How each plan moved every quasi-identifier's share of the risk (SPEC §6.5–6.6, §5.8).

    ``before``: the wave's global contributions (:attr:`~sdc_dagster.pipeline.risk.Contributions.global_`,
    index: variables; columns ``shapley``, ``solidarity``). For each protected variant the risk
    games are played again on the released values (missing values from local suppression match
    any value, SPEC §5.8), in one pass for both values, with the quasi-identifiers the variant
    still releases (a variable a plan removed has no contribution after it: NA; so has every
    variable of a variant on which the games cannot be played, e.g. fewer than two
    quasi-identifiers left). Empty when ``before`` is (the original's games could not be played).
    A variant released exactly as an earlier one (:func:`~sdc_dagster.pipeline.variant.same_release`)
    takes its values. ``keys``: the keys each variant releases, as the chain stored them on its
    variants (derived from the frame otherwise).

    Returns
    -------
    DataFrame indexed by (``variant``, ``variable``) with columns ``shapley_before``,
    ``shapley_after``, ``solidarity_before``, ``solidarity_after``: global contributions, which sum
    to 1 over the variables while some record is unsafe and are all 0 when none is (SPEC §6.6).
    """
    tables, evaluated = {}, {}
    for name, frame in protected.items():
        if before.empty:  # no contributions of the original (risk_contributions noted why)
            continue
        twin = _twin(frame, evaluated)
        if twin is not None:  # released exactly as an earlier variant: its contributions
            tables[name] = tables[twin]
            continue
        evaluated[name] = frame
        released = _keys_of(spec, name, frame, keys)
        results = if_computable(
            [], "residual contributions", name, contribution.contribution_values,
            frame, released.categorical, released.continuous, spec.precision,
            k=spec.risk.k, weight=released.weight, values=("shapley", "solidarity"),
        )
        table = pd.DataFrame(index=before.index)
        for value in ("shapley", "solidarity"):
            table[f"{value}_before"] = before[value]
            table[f"{value}_after"] = results[value][1].reindex(before.index) if results else np.nan
        tables[name] = table
    columns = [f"{value}_{when}" for value in ("shapley", "solidarity") for when in ("before", "after")]
    if not tables:
        return pd.DataFrame(columns=columns, index=pd.MultiIndex.from_tuples([], names=["variant", "variable"]))
    return pd.concat(tables, names=["variant", "variable"])[columns]



@dataclass(frozen=True)
class PlanLoss:
    """The information loss of one plan's variant, as the report and the release read it: ``figures``,
    measure name -> value (the row of :attr:`InformationLoss.summary`, measures undefined on the
    variant left out: e.g. ``lambda_arctan``, SPEC §9.1 eq (6); ``topsis_mean``, SPEC §10;
    ``sse_tss``, §9.5); ``topsis``: the TOPSIS loss of each record it releases (SPEC §10);
    ``headline``: the loss its release manifest records (:func:`headline_loss`; its
    ``lambda_arctan`` and ``topsis_mean`` are those of ``figures``), empty for a plan not evaluated."""

    figures: dict[str, float]
    topsis: pd.Series
    headline: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)  # frames have no truth value: compared by identity
class InformationLoss:
    """The loss stage's result of a wave (:func:`information_loss`): ``summary`` (one row per
    variant, one column per measure), ``per_record`` (``<plan>_topsis`` and ``<plan>_distance`` for
    each variant, NaN where a variant does not release the record), ``notes`` (the measures left
    out of a variant because they are undefined on its data) and ``headline`` (variant -> the loss
    figures its release manifest records, :func:`headline_loss`: the release stage reads them here,
    so that the manifest, the report and ``sdc run`` show one number)."""

    summary: pd.DataFrame
    per_record: pd.DataFrame
    notes: list[MeasureNote] = field(default_factory=list)
    headline: dict[str, dict] = field(default_factory=dict)

    def plan(self, name: str) -> PlanLoss:
        """The loss of plan ``name``'s variant (:class:`PlanLoss`); no figure for a plan not evaluated."""
        row = self.summary.loc[name].dropna().to_dict() if name in self.summary.index else {}
        topsis = self.per_record.get(f"{name}_topsis", pd.Series(dtype=float)).dropna()  # NaN: not released
        return PlanLoss(figures={measure: float(value) for measure, value in row.items()}, topsis=topsis,
                        headline=dict(self.headline.get(name, {})))

    def stored_frames(self) -> dict[str, pd.DataFrame]:
        """What the IO manager also writes as Parquet, for readers outside Python: the summary, the
        per-record losses and the measure notes (``summary.parquet``, ``per_record.parquet``,
        ``measure_notes.parquet`` in the wave's folder)."""
        return {"summary": self.summary, "per_record": self.per_record, "measure_notes": measure_notes_frame(self.notes)}


def information_loss(
    original: pd.DataFrame,
    protected: dict[str, pd.DataFrame],
    spec: SurveySpec,
    *,
    matrices: dict[str, dict[str, pd.DataFrame]] | None = None,
    keys: dict[str, ReleasedKeys] | None = None,
) -> InformationLoss:
    """Loss measures per protected variant (SPEC §9, §10), as an :class:`InformationLoss`.

    Record-level measures compare each released record with the same record of the original: a
    subsampled variant is compared on the records it retains (``records_compared``,
    ``records_removed``). Ordinal keys use the rank in the spec's ``order:``. A value missing in
    both files is not compared (``values_compared`` counts the values compared by the distance
    measure). The partial distances are computed once per variant and shared by the three
    continuous distances and TOPSIS. A variant released exactly as an earlier one with the same
    PRAM matrices (:func:`~sdc_dagster.pipeline.variant.same_release`) takes its figures. ``keys``:
    the keys each variant releases, as the chain stored them on its variants (derived from the frame
    otherwise).

    A key the variant does not release (withheld, or released as one category) is total loss of it
    in the distance measure, as in :func:`headline_loss` (``values_withheld``: its observed values).

    Returns the :class:`InformationLoss`: ``summary``, one row per variant with the distance measure
    (1) under each continuous distance, the mean TOPSIS loss, the moment, SSE/TSS, utility, EBIL and
    association figures; ``per_record``, TOPSIS loss and the per-record sum of partial distances for
    each variant, NaN for records a variant does not release; ``notes``, a :class:`MeasureNote` per
    measure left out of a variant's row because it is undefined on its data
    (:func:`~sdc_dagster.pipeline.risk.if_computable`); ``headline``, each variant's release
    figures (:func:`headline_loss`). The row's ``lambda_arctan``, ``topsis_mean``,
    ``values_compared`` (and ``values_withheld``) are the headline's: a key the variant withholds
    counts as total loss of it there (SPEC §9.1 over the original's keys), and the report, ``sdc
    run`` and the manifest show that one figure.
    """
    rows, per_record, notes, headline = [], {}, [], {}
    associations = {}  # the original's association figures, per pair of keys: computed once
    evaluated, of_variant = {}, {}  # the variants computed, with (row, notes) of each
    for name, frame in protected.items():
        twin = _twin(frame, evaluated)
        if twin is not None and _same_matrices((matrices or {}).get(name, {}), (matrices or {}).get(twin, {})):
            # released exactly as an earlier variant (with the same PRAM matrices): its figures
            row, own_notes = of_variant[twin]
            rows.append({**row, "variant": name})
            headline[name] = headline[twin]
            notes.extend(replace(note, variant=name) for note in own_notes)
            for kind in ("distance", "topsis"):
                if f"{twin}_{kind}" in per_record:
                    per_record[f"{name}_{kind}"] = per_record[f"{twin}_{kind}"]
            continue
        evaluated[name], first_note = frame, len(notes)
        matched = retained_records(original, frame, name)
        released = _keys_of(spec, name, frame, keys)
        lost = _LostKeys.of(spec, original, frame, released)
        row = {"variant": name, "records_compared": len(frame), "records_removed": len(original) - len(frame)}
        results = if_computable(
            notes, "lambda (distance measure (1)) and TOPSIS", name, loss.distance_losses,
            matched, frame, lost.measured,
            continuous_distances=("max_abs", "max_sq", "arctan"), categories=ordinal_orders(spec, lost.measured),
        )
        if results is not None:
            arctan = results["arctan"]
            compared = lost.compared(arctan)
            for distance, result in results.items():
                row[f"lambda_{distance}"] = lost.lambda_of(result, compared)
            row["values_compared"] = compared
            if lost.observed:
                row["values_withheld"] = lost.observed
            eta = loss.topsis_scores(arctan.distances)
            per_record[f"{name}_distance"] = arctan.per_record.reindex(original.index)
            per_record[f"{name}_topsis"] = eta.reindex(original.index)
            row["topsis_mean"] = float(eta.mean())
        # the release's figures, for the manifest, the report and the console, from the same partial
        # distances (computed again only to say why when the distance measure is undefined)
        headline[name] = headline_loss(original, frame, spec, arctan=results["arctan"] if results else None)
        row.update({measure: value for measure, value in headline[name].items() if measure != "not_applicable"})
        row.update(_continuous_loss(matched, frame, released.continuous, notes, name))
        row.update(_categorical_loss(matched, frame, released.categorical, (matrices or {}).get(name, {}), notes,
                                     name, associations if matched is original else None))
        rows.append(row)
        of_variant[name] = (row, notes[first_note:])
    summary = pd.DataFrame(rows).set_index("variant") if rows else pd.DataFrame(index=pd.Index([], name="variant"))
    return InformationLoss(summary=summary, per_record=pd.DataFrame(per_record, index=original.index), notes=notes,
                           headline=headline)



def _twin(frame: pd.DataFrame, evaluated: dict[str, pd.DataFrame]) -> str | None:
    """The first variant of ``evaluated`` released exactly as ``frame`` (:func:`same_release`), or None."""
    return next((name for name, other in evaluated.items() if same_release(other, frame)), None)


def _keys_of(spec: SurveySpec, name: str, frame: pd.DataFrame, keys: dict[str, ReleasedKeys] | None) -> ReleasedKeys:
    """The keys variant ``name`` releases: those the chain stored on its variant
    (:attr:`~sdc_dagster.pipeline.protection.ProtectedVariant.keys`, passed as ``keys``), else derived
    from ``frame`` (:func:`~sdc_dagster.pipeline.variant.released_keys`: a notebook's own variant or
    the original)."""
    known = (keys or {}).get(name)
    return known if known is not None else released_keys(spec, frame)


def _same_matrices(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> bool:
    """Whether two variants' PRAM matrices are the same (variables and probabilities)."""
    return a.keys() == b.keys() and all(a[v].equals(b[v]) for v in a)


def _continuous_loss(
    original: pd.DataFrame, protected: pd.DataFrame, columns: list[str], notes: list[MeasureNote], variant: str
) -> dict:
    """Moment measures (SPEC §9.4, §9.6, §9.7 with Pearson correlations), SSE/TSS (§9.5: for
    microaggregation the within-group loss, for any other perturbation the squared error of the
    release relative to TSS), sdcMicro's dUtility and the mean relative change of regression
    coefficients, for the continuous keys a plan perturbed (``columns``: those the variant releases).
    Missing values are skipped pairwise;
    ``continuous_values_compared`` counts the values observed in both files. A measure undefined on
    the data (a constant column, too few values) is left out with a note in ``notes``."""
    if not columns or not any(values_changed(original[c], protected[c]) for c in columns):
        return {}
    x, y = original[columns], protected[columns]
    figures = {}
    # a variable without spread has no correlation: the moment and utility measures leave it out
    spread = [c for c in columns if two_values(x[c]) and two_values(y[c])]
    if len(spread) < len(columns):
        notes.append(MeasureNote("moment measures and dUtility", "continuous keys left out, without spread in the "
                                 f"original or the released file: {', '.join(c for c in columns if c not in spread)}",
                                 variant))
    if spread:
        moments = if_computable(notes, "moment measures (means, variances, covariances, correlations, inverse correlations)", variant, loss.moment_losses,
                                x[spread], y[spread])
        figures.update({f"moment_{k}": v for k, v in (moments or {}).items()})
        utility = if_computable(notes, "dUtility", variant, loss.d_utility_summary, x[spread], y[spread])
        figures.update({f"dUtility_{k}": v for k, v in (utility or {}).items()})
    within = if_computable(notes, "sse_tss", variant, loss.within_group_loss, x, y, columns)
    if within is not None:
        figures["sse_tss"] = float(within.value)
        figures["continuous_values_compared"] = within.compared
    complete = x.notna().all(axis=1) & y.notna().all(axis=1)
    if len(columns) >= 2 and int(complete.sum()) > len(columns):
        # OLS of the first continuous key on the others, before and after, each on its complete
        # records (SPEC §9.9, §9.11).
        coefficients = if_computable(notes, "regression_relative_change_mean", variant, loss.regression_loss,
                                     original, protected, columns[0], columns[1:])
        if coefficients is not None:
            figures["regression_relative_change_mean"] = float(coefficients["relative_change"].mean())
    return figures


def _categorical_loss(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    keys: list[str],
    matrices: dict[str, pd.DataFrame],
    notes: list[MeasureNote],
    variant: str,
    associations: dict | None = None,
) -> dict:
    """EBIL of each categorical key the variant releases (``keys``) whose values were changed (SPEC §9.8: from the PRAM matrix the
    plan used when there is one, otherwise with backward probabilities estimated from the
    cross-tabulation, e.g. after recoding) and the mean relative change of Cramér's V over pairs
    of categorical keys (§9.9), over the keys with at least two observed categories in both files
    (a key with one category has no association: left out with a note in ``notes``).
    ``associations``: the original's association figures computed for earlier variants
    (:func:`~sdc_dagster.loss.association_loss`'s ``known``)."""
    figures = {}
    for k in keys:
        if values_changed(original[k], protected[k]):
            value = if_computable(notes, f"ebil_{k}", variant, loss.ebil, original, protected, k, matrix=matrices.get(k))
            if value is not None:
                figures[f"ebil_{k}"] = float(value)
    varied = [k for k in keys if two_values(original[k]) and two_values(protected[k])]
    if len(varied) < len(keys):
        left_out = ", ".join(k for k in keys if k not in varied)
        notes.append(MeasureNote("cramers_v_change_mean", f"keys left out, with fewer than 2 observed categories in "
                                 f"the original or the released file (no association): {left_out}", variant))
    if len(varied) >= 2:
        changes = if_computable(notes, "cramers_v_change_mean", variant, loss.association_loss, original, protected,
                                varied, known=associations)
        if changes is not None:
            figures["cramers_v_change_mean"] = float(changes["cramers_v_change"].mean())
    return figures



def headline_loss(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec, *,
                  unchanged: Sequence[str] = (), topsis: bool = True, arctan: loss.LossResult | None = None) -> dict:
    """The loss figures a release manifest carries: distance measure (1) with arctan distances
    (SPEC §9.1 eq (6)) and the mean TOPSIS loss (SPEC §10) over the quasi-identifiers (ordinal keys
    in the spec's order), on the records the release retains (``records_compared``,
    ``records_removed``), from one computation of the partial distances. When the distance measure
    is undefined on the data, ``not_applicable`` gives the reason instead of the two figures.

    For the plan search, which needs one figure of many variants that change the keys only:
    ``unchanged``, quasi-identifiers released as they are, whose partial distances are known to be 0
    (:func:`sdc_dagster.loss.distance_losses`); ``topsis=False`` leaves ``topsis_mean`` out. For
    :func:`information_loss`, which computed the partial distances of these frames already:
    ``arctan``, its arctan result, used instead of computing them again.

    A key the variant does not release (:func:`~sdc_dagster.pipeline.variant.keys_lost`:
    withheld by ``remove_variables``, the plan search's last rung, or released as one category, the
    hierarchy's top or one band covering everything) is total loss of that key: SPEC §9.1's
    lambda = sum_j sum_i d(x_ij, x*_ij) / (m·n) runs over the keys of the original, each observed
    value of such a key with d = 1 (nothing of it is released), so
    lambda = (lambda_released · C + R) / (C + R), C the values compared over the other keys and R
    (``values_withheld``, given when > 0) the observed values of the keys not released; lambda = 1
    when no key is released. Taken over the released keys only, the measure would call withholding a
    key no loss of it at all; and a key released as one category would be read as partly unchanged
    (the members sharing the merged group's internal code, its smallest member: SPEC §8.2 keeps that
    coding for the ordinal distance only). C + R is the observed values of the original's keys
    whatever the plan, so the figure stays a sum of per-key figures (the plan search's recode-only
    bound, :func:`~sdc_dagster.search.coded.level_bounds`)."""
    matched = retained_records(original, protected, "release")
    lost = _LostKeys.of(spec, original, protected, released_keys(spec, protected), unchanged=unchanged)
    counts = {"records_compared": len(protected), "records_removed": len(original) - len(protected)}
    notes = []
    # the frames as they are: the measure reads the columns of ``lost.measured`` only (no copy of them)
    result = arctan if arctan is not None else if_computable(
        notes, "lambda_arctan", "release", loss.distance_loss, matched, protected, lost.measured,
        categories=ordinal_orders(spec, lost.measured), unchanged=unchanged)
    if result is None:
        return {"not_applicable": notes[0].reason, **counts}
    compared = lost.compared(result)
    observed = lost.observed
    figures = {"lambda_arctan": lost.lambda_of(result, compared)}
    if topsis:
        figures["topsis_mean"] = float(loss.topsis_scores(result.distances).mean())
    return {**figures, "values_compared": compared, **({"values_withheld": observed} if observed else {}), **counts}


@dataclass(frozen=True)
class _LostKeys:
    """The keys a variant does not release (:func:`~sdc_dagster.pipeline.variant.keys_lost`)
    as the distance measure (1) counts them (:func:`headline_loss`, :func:`information_loss`):
    ``measured``, the scales of the keys whose partial distances are computed (those released with
    detail; all of them when none is, for TOPSIS's record scores only); ``informative``, whether any
    key is released with detail; ``observed`` (R), the observed values of the keys not released."""

    measured: dict[str, str]
    informative: bool
    observed: int

    @classmethod
    def of(cls, spec: SurveySpec, original: pd.DataFrame, protected: pd.DataFrame, released: ReleasedKeys, *,
           unchanged: Sequence[str] = ()) -> _LostKeys:
        lost = keys_lost(spec, original, protected, unchanged=unchanged)
        scales = loss_scales(spec, released)
        informative = {key: scale for key, scale in scales.items() if key not in lost}
        matched = retained_records(original, protected, "release")
        observed = int(matched[list(lost)].notna().to_numpy().sum()) if lost else 0
        return cls(informative or scales, bool(informative), observed)

    def compared(self, result) -> int:
        """C, the values compared over the keys released with detail (0 when none is)."""
        return int(result.compared.sum()) if self.informative else 0

    def lambda_of(self, result, compared: int) -> float:
        """lambda = (lambda_released · C + R) / (C + R) (:func:`headline_loss`); 1 when no key is
        released with detail."""
        if not self.informative:
            return 1.0
        value = float(result.value)
        return (value * compared + self.observed) / (compared + self.observed) if self.observed else value
