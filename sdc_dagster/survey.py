"""Survey-level computations: what each stage of the survey asset chain computes for one wave.

Each function takes the wave's data and its :class:`~sdc_dagster.spec.SurveySpec` and calls the
measure modules (``risk``, ``contribution``, ``protect``, ``loss``) with the spec's roles and
parameters, so that the Dagster assets stay thin and the same chain runs from a notebook.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster import contribution, lineage, loss, release_files, risk
from sdc_dagster.errors import NotComputable, SDCInputError
from sdc_dagster.protect.plan import PlanResult, apply_plan
from sdc_dagster.report import MeasureNote, PlanSummary, ReportInputs, format_value
from sdc_dagster.sources import read_wave_file, value_labels
from sdc_dagster.spec import SEARCHED_PLAN, Plan, SurveySpec, load_spec


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
            f"by SPEC §3.8 with M = {size}",
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


def _risk_table(data: pd.DataFrame, keys: list[str], *, weight=None, household=None, con=None,
                frequencies: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`~sdc_dagster.risk.risk_table` with the frequencies of :func:`key_frequencies` (the
    empty key's when there is no key)."""
    if frequencies is None and not keys:
        frequencies = key_frequencies(data, keys, weight=weight)
    return risk.risk_table(data, keys, weight=weight, household=household, con=con, frequencies=frequencies)


def risk_scores(
    data: pd.DataFrame, spec: SurveySpec, *, con=None, frequencies: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, dict]:
    """Per-record risk table and the wave's global risk figures (SPEC §2, §3, §5); ``frequencies``:
    the wave's :func:`~sdc_dagster.risk.key_frequencies`, when already computed.

    Columns: ``fk``, ``Fk`` (SPEC §2.4), ``risk`` (individual risk, §3.2), ``household_risk``
    (§3.5, when the spec names a household id), ``suda_score``, ``suda_dis_score`` (SUDA2, §3.8),
    ``ldiversity_<sensitive>_{distinct,entropy,recursive}`` (§3.6, per sensitive variable),
    ``combined_categorical``, ``combined_continuous``, ``combined_risk`` (§5.5/§5.6, with missing
    values as in §5.8, when the spec has continuous keys).

    ``figures["measure_notes"]``: the :class:`MeasureNote` of each measure left out or limited
    (SUDA2 past its memory bound, :func:`suda_scores`; l-diversity without a sensitive variable).

    Without categorical keys (continuous keys only) every record shares the empty key (fk = n,
    :func:`key_frequencies`); SUDA2, l-diversity and the global figures of §3
    do not apply and are left out, and the risk is the combined measure's continuous part.
    """
    keys, weight, household = spec.categorical_keys, spec.weight, spec.household_id
    table = _risk_table(data, keys, weight=weight, household=household, con=con, frequencies=frequencies)
    figures, notes = {}, []
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
    sensitive = [v for v in spec.names("sensitive") if v in data.columns]
    if sensitive and keys:
        diversity = risk.l_diversity(data, keys, sensitive, recursive_c=spec.risk.recursive_c, con=con)
        diversity.columns = [f"ldiversity_{c}" for c in diversity.columns]
        table = table.join(diversity)
        for v in sensitive:
            figures[f"{v}_records_below_l"] = int((diversity[f"ldiversity_{v}_distinct"] < spec.risk.l).sum())
    elif keys:
        notes.append(MeasureNote("l_diversity", "the spec names no sensitive variable present in the wave"))
    continuous = spec.continuous_keys
    if continuous:  # missing values follow SPEC §5.8
        combined = risk.combined_risk(data, keys, continuous, spec.precision, k=spec.risk.k, weight=weight)
        table["combined_categorical"] = combined["categorical"]
        table["combined_continuous"] = combined["continuous"]
        table["combined_risk"] = combined["risk"]
        figures["combined_global_risk"] = float(combined["risk"].mean())
    figures["measure_notes"] = notes
    return table, figures


def risk_contributions(data: pd.DataFrame, spec: SurveySpec) -> tuple[pd.DataFrame, pd.DataFrame, list[MeasureNote]]:
    """Shapley and solidarity contributions of each quasi-identifier to each record's risk (SPEC §6).

    Both values come from one pass over the risk games (:func:`~sdc_dagster.contribution.contribution_values`);
    missing values in the quasi-identifiers follow SPEC §5.8. Returns the per-record values (columns
    ``shapley_<var>``, ``solidarity_<var>``) and the global contributions (index: variables;
    columns ``shapley``, ``solidarity``; SPEC §6.6), and a note when the games cannot be played on the
    wave (more quasi-identifiers than the games support, or fewer than two): then both are empty.
    """
    keys, continuous = spec.categorical_keys, spec.continuous_keys
    notes = []
    results = if_computable(
        notes, "risk contributions (Shapley, solidarity)", "original", contribution.contribution_values,
        data, keys, continuous, spec.precision, k=spec.risk.k, weight=spec.weight, values=("shapley", "solidarity"),
    )
    per_record, overall = {}, {"shapley": pd.Series(dtype=float), "solidarity": pd.Series(dtype=float)}
    for value, (values, global_values) in (results or {}).items():
        per_record.update({f"{value}_{c}": values[c] for c in values.columns})
        overall[value] = global_values
    return pd.DataFrame(per_record, index=data.index), pd.DataFrame(overall), notes


def residual_contributions(
    before: pd.DataFrame, protected: dict[str, pd.DataFrame], spec: SurveySpec
) -> pd.DataFrame:
    """How each plan moved every quasi-identifier's share of the risk (SPEC §6.5–6.6, §5.8).

    ``before``: the wave's global contributions (the ``global`` table of :func:`risk_contributions`,
    index: variables; columns ``shapley``, ``solidarity``). For each protected variant the risk
    games are played again on the released values (missing values from local suppression match
    any value, SPEC §5.8), in one pass for both values, with the quasi-identifiers the variant
    still releases (a variable a plan removed has no contribution after it: NA; so has every
    variable of a variant on which the games cannot be played, e.g. fewer than two
    quasi-identifiers left). Empty when ``before`` is (the original's games could not be played).

    Returns
    -------
    DataFrame indexed by (``variant``, ``variable``) with columns ``shapley_before``,
    ``shapley_after``, ``solidarity_before``, ``solidarity_after``: global contributions, which sum
    to 1 over the variables while some record is unsafe and are all 0 when none is (SPEC §6.6).
    """
    tables = {}
    for name, frame in protected.items():
        if before.empty:  # no contributions of the original (risk_contributions noted why)
            continue
        results = if_computable(
            [], "residual contributions", name, contribution.contribution_values,
            frame,
            [c for c in spec.categorical_keys if c in frame.columns],
            [c for c in spec.continuous_keys if c in frame.columns],
            spec.precision,
            k=spec.risk.k,
            weight=spec.weight if spec.weight in frame.columns else None,
            values=("shapley", "solidarity"),
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


def wave_plan_names(spec: SurveySpec) -> list[str]:
    """The plans a wave is protected by: the spec's, then the searched plan when the spec searches."""
    return [p.name for p in spec.plans] + ([SEARCHED_PLAN] if spec.search.enabled else [])


def direct_identifiers(spec: SurveySpec) -> list[str]:
    """Variables the spec marks as direct identifiers (removed before release, SPEC §8.1)."""
    return spec.names("direct_identifier")


def protect(data: pd.DataFrame, spec: SurveySpec, plan: Plan, *, wave: str) -> PlanResult:
    """Apply a protection plan to a copy of the wave, direct identifiers removed first (SPEC §8.1).

    Every random step is seeded from the plan's ``random_state`` and (survey, wave, plan name, step)
    (:func:`~sdc_dagster.protect.plan.step_seed`), so the order of the plans in the spec changes no
    output. Subsample steps sample whole households and rescale the weight when the spec names them.
    """
    released = data.drop(columns=[c for c in direct_identifiers(spec) if c in data.columns])
    return apply_plan(
        released,
        list(plan.steps),
        keys=spec.categorical_keys,
        random_state=plan.random_state,
        seed_labels=(spec.survey, str(wave), plan.name),
        household=spec.household_id,
        weight=spec.weight,
    )


def release_check_names(spec: SurveySpec) -> list[str]:
    """The release checks :func:`release_checks` evaluates for a spec's plans, in order: the
    categorical ones only with categorical keys, ``linkage_risk`` only with continuous keys
    (:func:`checks_not_applicable` says why a check is left out)."""
    names = ["k_anonymity", "global_risk"] if spec.categorical_keys else []
    names += ["linkage_risk"] if spec.continuous_keys else []
    return names + ["no_direct_identifier"] + (["individual_risk"] if spec.categorical_keys else [])


def checks_not_applicable(spec: SurveySpec) -> dict[str, str]:
    """The release checks left out for a spec, with the reason: {check: why}."""
    reasons = {}
    if not spec.categorical_keys:
        why = "the spec has no categorical key: no key combination can single out a record"
        reasons.update(k_anonymity=why, global_risk=why, individual_risk=why)
    if not spec.continuous_keys:
        reasons["linkage_risk"] = "the spec has no continuous key: nothing to link on"
    return reasons


def release_checks(
    protected: pd.DataFrame, spec: SurveySpec, plan: Plan, *, original: pd.DataFrame | None = None
) -> dict[str, dict]:
    """The release rules for a protected variant:
    ``{check: {"passed": bool, "value": ..., "rule": str, "blocking": bool}}``, for the checks of
    :func:`release_check_names`.

    Blocking rules (a variant failing one is not released):

    * ``k_anonymity``: no record with fk < k for the plan's k (SPEC §3.1, missing values matching
      any value, §2.4);
    * ``global_risk``: global risk (SPEC §3.3) at most ``risk.max_global_risk``;
    * ``linkage_risk`` (a spec with continuous keys): the share of released records that
      distance-based record linkage (SPEC §4.1) links to their own original, the largest over the
      variants an intruder can choose from (:func:`linkage_figures`), at most
      ``risk.max_linkage_risk``; the outcome also names the variant (``measure``) and carries every
      share (``figures``, which :func:`residual_risk` reuses). Needs ``original``, the wave the
      variant was protected from;
    * ``no_direct_identifier``: no column the spec marks as a direct identifier (SPEC §8.1).

    Warning (reported, not blocking):

    * ``individual_risk``: no record whose individual risk exceeds ``risk.individual_risk_threshold``
      (count of records above a threshold, SPEC §3.3).

    Without categorical keys k-anonymity, global and individual risk do not apply (no key
    combination singles out a record) and are left out (:func:`checks_not_applicable`); the
    continuous keys' linkage risk is then the blocking risk rule. Where sdcMicro's ``dRisk``
    (``interval_risk``, SPEC §4.2) asks whether each original value lies within k·sd of its
    released value, ``linkage_risk`` asks whether the intruder's nearest released record is the
    person's own: the measure of re-identification that a threshold can bound.

    A check that cannot be evaluated on the variant (its risk cannot be computed, e.g. a weight the
    plan left missing) fails, its value saying ``not evaluated:`` and why, so that nothing is
    released on a check nobody could make.
    """
    checks: dict[str, dict] = {}
    keys = [k for k in spec.categorical_keys if k in protected.columns]
    threshold = spec.risk.individual_risk_threshold
    if spec.categorical_keys:
        weight = spec.weight if spec.weight in protected.columns else None
        rules = {
            "k_anonymity": (f"every record's key is shared by at least k={plan.k} records", True),
            "global_risk": (f"global risk <= {spec.risk.max_global_risk}", True),
            "individual_risk": (f"no record with individual risk > {threshold}", False),
        }
        try:
            table = _risk_table(protected, keys, weight=weight)
            violations = int((table["fk"] < plan.k).sum())
            global_risk = risk.summarise_risk(table)["risk"]
            risky = int(risk.risk_above_threshold(table["risk"], threshold))
            outcomes = {"k_anonymity": (violations == 0, violations),
                        "global_risk": (global_risk <= spec.risk.max_global_risk, global_risk),
                        "individual_risk": (risky == 0, risky)}
        except SDCInputError as exc:
            outcomes = dict.fromkeys(rules, (False, f"not evaluated: {exc}"))
        for name, (rule, blocking) in rules.items():
            checks[name] = {"passed": bool(outcomes[name][0]), "value": outcomes[name][1], "rule": rule,
                            "blocking": blocking}
    if spec.continuous_keys:
        if original is None:
            raise ValueError("release_checks: original is required for a spec with continuous keys (linkage_risk)")
        rule = (f"record linkage risk (largest share of records linked to their own original) <= "
                f"{spec.risk.max_linkage_risk}")
        try:
            figures = linkage_figures(original, protected, spec, plan.name)
        except SDCInputError as exc:
            checks["linkage_risk"] = {"passed": False, "value": f"not evaluated: {exc}", "rule": rule,
                                      "blocking": True}
        else:
            value = figures["linkage_risk"]
            checks["linkage_risk"] = {
                "passed": value <= spec.risk.max_linkage_risk,
                "value": value,
                "rule": rule,
                "blocking": True,
                "measure": _linkage_measure(figures),
                "figures": {name: (None if np.isnan(v) else v) for name, v in figures.items()},
            }
    identifiers = [c for c in direct_identifiers(spec) if c in protected.columns]
    checks["no_direct_identifier"] = {
        "passed": not identifiers,
        "value": ", ".join(identifiers),
        "rule": "no direct identifier column is released",
        "blocking": True,
    }
    if spec.categorical_keys:  # the warning last, as before
        checks["individual_risk"] = checks.pop("individual_risk")
    return checks


#: One-to-one linkage (an O(n^3) assignment) runs in the wave chain on at most this many compared
#: records (about 10 s); above it the nearest-record linkages, which cost O(n log n), stand for the
#: intruder and the one-to-one shares are NaN. risk.MAX_ONE_TO_ONE_LINKAGE is the engine's memory bound.
ONE_TO_ONE_RECORDS = 4_000


# The linkage shares the linkage_risk check takes the largest of, with the intruder each stands for:
# every linkage with its ties broken at random. The shares that break ties in the intruder's favour
# (between the identical released records of one microaggregation group, one-to-one; between
# identical or equally near originals, nearest: integer ages and years, categories) are not among
# them: no intruder can tell which of t equally near records is the unit, so they would credit him
# with links he cannot make; they are reported as upper bounds in residual_risk.
LINKAGE_CHECK_MEASURES = {
    "record_linkage_expected_risk": "Euclidean, nearest original, ties at random",
    "record_linkage_mahalanobis_expected_risk": "Mahalanobis, nearest original, ties at random",
    "record_linkage_gower_expected_risk": "Gower with the released categorical keys, nearest original, ties at random",
    "record_linkage_one_to_one_expected_risk": "Euclidean, one-to-one, ties at random",
}
_LINKAGE_COLUMNS = ("record_linkage_risk", "record_linkage_expected_risk", "record_linkage_mahalanobis_risk",
                    "record_linkage_mahalanobis_expected_risk", "record_linkage_gower_risk",
                    "record_linkage_gower_expected_risk", "record_linkage_one_to_one_risk",
                    "record_linkage_one_to_one_expected_risk")


def linkage_figures(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec, name: str) -> dict[str, float]:
    """Every record-linkage share of a variant (SPEC §4.1) and ``linkage_risk``, the largest of the
    shares of :data:`LINKAGE_CHECK_MEASURES`: the best linkage an intruder can choose.

    Linkage uses every continuous key the variant releases (one released unchanged links as well as
    any) on the records it releases (:func:`_retained_records`); Gower adds the categorical keys
    it releases. The shares are those of :func:`residual_risk`: ``record_linkage_risk``
    (Euclidean, nearest original, ties for the intruder), ``record_linkage_expected_risk`` (the
    same, ties at random) and the variants of :func:`_record_linkage_variants`, NaN where a variant
    does not apply. A variant in which no continuous key changed has ``linkage_risk`` 1
    (every released record is its own original) and no share computed; one that releases no
    continuous key has ``linkage_risk`` 0 (nothing to link on).
    """
    figures = dict.fromkeys(_LINKAGE_COLUMNS, np.nan)
    matched = _retained_records(original, protected, name)
    released = [c for c in spec.continuous_keys if c in protected.columns]
    changed = _perturbed(matched, protected, released)
    if not released or not changed:
        return {**figures, "linkage_risk": 1.0 if released else 0.0}
    euclidean = risk.record_linkage_risk(matched, protected, released)
    figures["record_linkage_risk"] = float(euclidean.risk)
    figures["record_linkage_expected_risk"] = float(euclidean.expected_risk)
    figures.update(_record_linkage_variants(matched, protected, released, spec))
    checked = [figures[m] for m in LINKAGE_CHECK_MEASURES if not np.isnan(figures[m])]
    return {**figures, "linkage_risk": max(checked)}


def _perturbed(original: pd.DataFrame, protected: pd.DataFrame, columns: list[str]) -> list[str]:
    """The continuous keys of ``columns`` whose released values differ from the original ones
    (beyond rounding; a value missing in both counts as equal)."""
    return [c for c in columns
            if not np.allclose(protected[c].to_numpy(float), original[c].to_numpy(float), equal_nan=True)]


def _linkage_measure(figures: dict[str, float]) -> str:
    """Which linkage gives the ``linkage_risk`` of :func:`linkage_figures`, in words."""
    for measure, label in LINKAGE_CHECK_MEASURES.items():
        if figures[measure] == figures["linkage_risk"]:
            return label
    if figures["linkage_risk"] == 1.0:
        return "no continuous key changed: every released record is its own original"
    return "no continuous key released"


#: Release checks whose value is a share of the records (a risk), written in % in their outcome.
SHARE_CHECKS = ("global_risk", "linkage_risk")


def _check_outcome(name: str, check: dict) -> str:
    """Why release check ``name`` failed: its rule, the value found and, where the check names it,
    the measure that gave the value. A risk share is written in % ("2.43 %"), another number to 4
    significant digits, a count or a text as it is."""
    value = check["value"]
    if isinstance(value, (float, np.floating)):
        value = format_value(value, "share") if name in SHARE_CHECKS else f"{float(value):.4g}"
    if check.get("measure"):
        return f"{check['rule']} (found: {value}, {check['measure']})"
    return f"{check['rule']} (found: {value})"


def blocking_failures(checks: dict[str, dict]) -> dict[str, str]:
    """The failed blocking checks of :func:`release_checks` outcomes: {check: why}. A variant with
    any is withheld. Outcomes recorded without a ``blocking`` flag count as blocking."""
    return {name: _check_outcome(name, c) for name, c in checks.items() if not c["passed"] and c.get("blocking", True)}


def release_warnings(checks: dict[str, dict]) -> dict[str, str]:
    """The failed non-blocking checks of :func:`release_checks` outcomes: {check: why}."""
    return {name: _check_outcome(name, c) for name, c in checks.items() if not c["passed"] and not c.get("blocking", True)}


def residual_risk(
    original: pd.DataFrame,
    protected: dict[str, pd.DataFrame],
    spec: SurveySpec,
    *,
    linkage: dict[str, dict[str, float]] | None = None,
) -> pd.DataFrame:
    """Risk measures recomputed on each protected variant next to the original (one row per variant).

    The first row (``original``) is the unprotected wave. With categorical keys: global,
    household and individual-risk figures (SPEC §3), k-anonymity violations and the values
    suppressed. With continuous keys: ``combined_global_risk`` (SPEC §5.5/§5.6 on the keys the
    variant releases; its continuous part alone without categorical keys) and ``linkage_risk``,
    the figure of the ``linkage_risk`` release check (:func:`linkage_figures`: 1 for the original
    and for a variant that changed no continuous key). Record linkage (SPEC §4.1) compares
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

    ``linkage``: the :func:`linkage_figures` of variants already computed (by the release checks,
    ``checks["linkage_risk"]["figures"]``), so that the quadratic linkages are not computed twice.
    """
    keys, weight, household = spec.categorical_keys, spec.weight, spec.household_id
    rows = []
    for name, frame in {"original": original, **protected}.items():
        row = {"variant": name}
        present = [k for k in keys if k in frame.columns]
        if keys:
            hh = household if household in frame.columns else None
            table = _risk_table(frame, present, weight=weight, household=hh)
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
        if spec.continuous_keys:
            # a subsampled variant is compared with the original records it releases
            matched = _retained_records(original, frame, name)
            released = [c for c in spec.continuous_keys if c in frame.columns]
            if present or released:
                combined = risk.combined_risk(frame, present, released, spec.precision, k=spec.risk.k,
                                              weight=weight if weight in frame.columns else None)
                row["combined_global_risk"] = float(combined["risk"].mean())
            known = (linkage or {}).get(name)
            if known is None:
                known = linkage_figures(matched, frame, spec, name)
            row.update({m: np.nan if v is None else float(v) for m, v in known.items()})
            changed = _perturbed(matched, frame, released)
            row["interval_risk"] = float(risk.interval_risk(matched, frame, changed).risk) if changed else np.nan
            row["rank_interval_disclosure"] = (
                float(risk.rank_interval_disclosure(matched, frame, changed).value) if changed else np.nan
            )
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant")


# residual_risk column -> (distance, assignment, reported figure) of risk.record_linkage_risk
_LINKAGE_VARIANTS = {
    "record_linkage_mahalanobis_risk": ("mahalanobis", "nearest", "risk"),
    "record_linkage_mahalanobis_expected_risk": ("mahalanobis", "nearest", "expected_risk"),
    "record_linkage_gower_risk": ("gower", "nearest", "risk"),
    "record_linkage_gower_expected_risk": ("gower", "nearest", "expected_risk"),
    "record_linkage_one_to_one_risk": ("euclidean", "one_to_one", "risk"),
    "record_linkage_one_to_one_expected_risk": ("euclidean", "one_to_one", "expected_risk"),
}


def _record_linkage_variants(
    original: pd.DataFrame, protected: pd.DataFrame, changed: list[str], spec: SurveySpec
) -> dict[str, float]:
    """Linked shares of the other record-linkage variants of SPEC §4.1 on the continuous keys
    ``changed`` (those :func:`linkage_figures` links on; NaN when there are none; the Mahalanobis
    share is NaN when they have a singular covariance, and the one-to-one shares when more than
    :data:`ONE_TO_ONE_RECORDS` records are compared). Gower links on them and the categorical keys the
    variant releases (spec scales, nominal when none is given, and ordinal orders)."""
    figures = dict.fromkeys(_LINKAGE_VARIANTS, np.nan)
    if not changed:
        return figures
    compared = int((original[changed].notna().all(axis=1) & protected[changed].notna().all(axis=1)).sum())
    keys = [k for k in spec.categorical_keys if k in protected.columns]
    key_scales = {k: spec.scales.get(k, "nominal") for k in keys}
    gower = {"scales": key_scales, "categories": _ordinal_orders(spec, key_scales)}
    results = {}
    for column, (distance, assignment, figure) in _LINKAGE_VARIANTS.items():
        if assignment == "one_to_one" and compared > ONE_TO_ONE_RECORDS:
            continue
        if (distance, assignment) not in results:
            columns, options = (changed + keys, gower) if distance == "gower" else (changed, {})
            try:
                results[distance, assignment] = risk.record_linkage_risk(
                    original, protected, columns, distance=distance, assignment=assignment, **options
                )
            except SDCInputError:  # the inputs passed the Euclidean linkage: a singular covariance
                if distance != "mahalanobis":
                    raise
                continue
        figures[column] = float(getattr(results[distance, assignment], figure))
    return figures


def information_loss(
    original: pd.DataFrame,
    protected: dict[str, pd.DataFrame],
    spec: SurveySpec,
    *,
    matrices: dict[str, dict[str, pd.DataFrame]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Loss measures per protected variant (SPEC §9, §10).

    Record-level measures compare each released record with the same record of the original: a
    subsampled variant is compared on the records it retains (``records_compared``,
    ``records_removed``). Ordinal keys use the rank in the spec's ``order:``. A value missing in
    both files is not compared (``values_compared`` counts the values compared by the distance
    measure). The partial distances are computed once per variant and shared by the three
    continuous distances and TOPSIS.

    Returns (summary: one row per variant with the distance measure (1) under each continuous
    distance, the mean TOPSIS loss, the moment, SSE/TSS, utility, EBIL and association figures;
    per_record: TOPSIS loss and the per-record sum of partial distances for each variant, NaN for
    records a variant does not release; notes: a :class:`MeasureNote` per measure left out of a
    variant's row because it is undefined on its data, :func:`if_computable`).
    """
    rows, per_record, notes = [], {}, []
    for name, frame in protected.items():
        matched = _retained_records(original, frame, name)
        scales = _loss_scales(spec, frame)
        row = {"variant": name, "records_compared": len(frame), "records_removed": len(original) - len(frame)}
        results = if_computable(
            notes, "lambda (distance measure (1)) and TOPSIS", name, loss.distance_losses,
            matched[list(scales)], frame[list(scales)], scales,
            continuous_distances=("max_abs", "max_sq", "arctan"), categories=_ordinal_orders(spec, scales),
        )
        if results is not None:
            for distance, result in results.items():
                row[f"lambda_{distance}"] = float(result.value)
            arctan = results["arctan"]
            row["values_compared"] = int(arctan.compared.sum())
            eta = loss.topsis_scores(arctan.distances)
            per_record[f"{name}_distance"] = arctan.per_record.reindex(original.index)
            per_record[f"{name}_topsis"] = eta.reindex(original.index)
            row["topsis_mean"] = float(eta.mean())
        row.update(_continuous_loss(matched, frame, spec, notes, name))
        row.update(_categorical_loss(matched, frame, spec, (matrices or {}).get(name, {}), notes, name))
        rows.append(row)
    summary = pd.DataFrame(rows).set_index("variant") if rows else pd.DataFrame(index=pd.Index([], name="variant"))
    return summary, pd.DataFrame(per_record, index=original.index), notes


def _retained_records(original: pd.DataFrame, protected: pd.DataFrame, name: str) -> pd.DataFrame:
    """The original records a variant releases, in its order (all of them unless it subsampled)."""
    if protected.index.equals(original.index):
        return original
    if not protected.index.is_unique or not protected.index.isin(original.index).all():
        raise SDCInputError(
            f"protected variant {name!r}: its records must keep the index labels of the original "
            "(a subset of them) so that loss can be measured record by record"
        )
    return original.loc[protected.index]


def _loss_scales(spec: SurveySpec, frame: pd.DataFrame) -> dict[str, str]:
    """Scales of the quasi-identifiers a variant still releases."""
    keys = spec.categorical_keys + spec.continuous_keys
    return {v: s for v, s in spec.scales.items() if v in keys and v in frame.columns}


def _ordinal_orders(spec: SurveySpec, scales: dict[str, str]) -> dict[str, list]:
    """The spec's ``order:`` of each ordinal variable, for the ordinal distance (SPEC §9.1 (3))."""
    return {
        v: list(spec.variable(v).categories)
        for v, s in scales.items()
        if s == "ordinal" and spec.variable(v).categories is not None
    }


def _changed(original: pd.Series, protected: pd.Series) -> bool:
    """Whether a variable's released values differ from the original where both are observed."""
    both = original.notna() & protected.notna()
    return bool((original[both].to_numpy() != protected[both].to_numpy()).any())


def _continuous_loss(
    original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec, notes: list[MeasureNote], variant: str
) -> dict:
    """Moment measures (SPEC §9.4, §9.6, §9.7 with Pearson correlations), SSE/TSS (§9.5: for
    microaggregation the within-group loss, for any other perturbation the squared error of the
    release relative to TSS), sdcMicro's dUtility and the mean relative change of regression
    coefficients, for the continuous keys a plan perturbed. Missing values are skipped pairwise;
    ``continuous_values_compared`` counts the values observed in both files. A measure undefined on
    the data (a constant column, too few values) is left out with a note in ``notes``."""
    columns = [c for c in spec.continuous_keys if c in protected.columns]
    if not columns or not any(_changed(original[c], protected[c]) for c in columns):
        return {}
    x, y = original[columns], protected[columns]
    figures = {}
    # a variable without spread has no correlation: the moment and utility measures leave it out
    spread = [c for c in columns if x[c].nunique() >= 2 and y[c].nunique() >= 2]
    if len(spread) < len(columns):
        notes.append(MeasureNote("moment measures and dUtility", "continuous keys left out, without spread in the "
                                 f"original or the released file: {', '.join(c for c in columns if c not in spread)}",
                                 variant))
    if spread:
        moments = if_computable(notes, "moment measures (SPEC §9.4, §9.6, §9.7)", variant, loss.moment_losses,
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
    spec: SurveySpec,
    matrices: dict[str, pd.DataFrame],
    notes: list[MeasureNote],
    variant: str,
) -> dict:
    """EBIL of each categorical key whose values were changed (SPEC §9.8: from the PRAM matrix the
    plan used when there is one, otherwise with backward probabilities estimated from the
    cross-tabulation, e.g. after recoding) and the mean relative change of Cramér's V over pairs
    of categorical keys (§9.9), over the keys with at least two observed categories in both files
    (a key with one category has no association: left out with a note in ``notes``)."""
    keys = [k for k in spec.categorical_keys if k in protected.columns]
    figures = {}
    for k in keys:
        if _changed(original[k], protected[k]):
            value = if_computable(notes, f"ebil_{k}", variant, loss.ebil, original, protected, k, matrix=matrices.get(k))
            if value is not None:
                figures[f"ebil_{k}"] = float(value)
    varied = [k for k in keys if original[k].nunique() >= 2 and protected[k].nunique() >= 2]
    if len(varied) < len(keys):
        left_out = ", ".join(k for k in keys if k not in varied)
        notes.append(MeasureNote("cramers_v_change_mean", f"keys left out, with fewer than 2 observed categories in "
                                 f"the original or the released file (no association): {left_out}", variant))
    if len(varied) >= 2:
        changes = if_computable(notes, "cramers_v_change_mean", variant, loss.association_loss, original, protected, varied)
        if changes is not None:
            figures["cramers_v_change_mean"] = float(changes["cramers_v_change"].mean())
    return figures


def plan_summary(
    plan: Plan,
    steps: list[dict],
    checks: dict[str, dict],
    residual: pd.DataFrame,
    loss_summary: pd.DataFrame,
    loss_per_record: pd.DataFrame,
    release: dict | None = None,
    *,
    contributions: pd.DataFrame | None = None,
    pram_matrices: dict[str, pd.DataFrame] | None = None,
    provenance: dict | None = None,
) -> PlanSummary:
    """What the report shows of one plan: its steps, residual risk, loss, release checks (outcomes
    of :func:`release_checks`), the release decision and, when given, the variables' global
    contributions before and after the plan (a :func:`residual_contributions` table), the PRAM
    matrices it used and its provenance (:func:`release_provenance`)."""
    loss_row = loss_summary.loc[plan.name].dropna().to_dict() if plan.name in loss_summary.index else {}
    topsis = loss_per_record.get(f"{plan.name}_topsis", pd.Series(dtype=float)).dropna()  # NaN: not released
    passed = {name: bool(c["passed"]) for name, c in checks.items()}
    withheld = blocking_failures(checks)
    return PlanSummary(
        steps=steps,
        residual_risk=residual.loc[plan.name].dropna().to_dict(),
        loss={k: float(v) for k, v in loss_row.items()},
        topsis=topsis,
        checks=passed,
        releasable=not withheld,
        release=release,
        withheld_because=withheld,
        warnings=release_warnings(checks),
        contributions=contributions,
        pram_matrices=dict(pram_matrices or {}),
        provenance=dict(provenance or {}),
    )


def release_provenance(folder: Path, manifest: dict) -> dict:
    """Where a plan's output comes from, as the report shows it: its seed, run, hashes of the spec,
    input and output, package versions, the path of its manifest (or withheld record) and the
    ``sdc audit`` command that recomputes a released output and compares it byte by byte."""
    released = "withheld" not in manifest
    record = Path(folder) / ("manifest.json" if released else "withheld.json")
    command = (f"sdc audit {manifest['wave']} --survey {manifest['survey']} --plan {manifest['plan']} "
               f"--run {manifest['run_id']}")
    return {
        "seed": manifest["spec"]["plan"].get("random_state"),
        "run_id": manifest["run_id"],
        "spec_sha256": manifest["spec"]["sha256"],
        "input_sha256": manifest["input"]["sha256"],
        "output_sha256": manifest["output"]["sha256"] if released else None,
        "packages": dict(manifest.get("packages", {})),
        "record": str(record),
        "audit_command": command if released else None,
    }


def suppressions_by_key(original: pd.DataFrame, protected: dict[str, pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    """Values each plan suppressed, per key variable (SPEC §8.3): values observed in the original
    record and missing in its release (index: keys; columns: plans; a key a plan does not release
    counts all of its observed values)."""
    counts = {}
    for name, frame in protected.items():
        matched = _retained_records(original, frame, name)
        released = frame.reindex(columns=keys)
        counts[name] = (released.isna() & matched[keys].notna()).sum().astype("int64")
    return pd.DataFrame(counts, index=pd.Index(keys, name="variable"), dtype="int64")


def protected_distributions(
    original: pd.DataFrame, protected: dict[str, pd.DataFrame], spec: SurveySpec
) -> tuple[dict[str, dict[str, pd.Series]], list[str]]:
    """The values of every quasi-identifier some plan changed or suppressed, before and after each
    plan that releases it (for the report's distribution plots), and which of them are continuous.
    Variables in spec order."""
    matched = {name: _retained_records(original, frame, name) for name, frame in protected.items()}
    distributions = {}
    for variable in [v for v in spec.categorical_keys + spec.continuous_keys if v in original.columns]:
        after = {name: frame[variable] for name, frame in protected.items() if variable in frame.columns}
        moved = any(
            _changed(matched[name][variable], values) or values.isna().sum() != matched[name][variable].isna().sum()
            for name, values in after.items()
        )
        if moved:
            distributions[variable] = {"original": original[variable], **after}
    return distributions, [v for v in spec.continuous_keys if v in distributions]


def design_statement(spec: SurveySpec) -> str:
    """Which weight and household id the risk used (SPEC §3.2, §3.5), or that there was none: for
    the report's decision section and ``sdc run``'s summary."""
    weight = (f"weight {spec.weight!r}" if spec.weight else
              "no weight (each record stands for itself: the risks are sample risks)")
    household = (f"household id {spec.household_id!r}" if spec.household_id else
                 "no household id (no household risk)")
    return f"{weight}; {household}"


def report_inputs(
    spec: SurveySpec,
    wave: str,
    original: pd.DataFrame,
    risk_table: pd.DataFrame,
    contributions_per_record: pd.DataFrame,
    contributions_global: pd.DataFrame,
    residual: pd.DataFrame,
    loss_summary: pd.DataFrame,
    loss_per_record: pd.DataFrame,
    releases: dict[str, list[Path]],
    *,
    residual_contributions: pd.DataFrame | None = None,
    protected: dict[str, pd.DataFrame] | None = None,
    measure_notes: list[MeasureNote] | None = None,
    plans: list[Plan] | None = None,
    search_front: pd.DataFrame | None = None,
    search: dict | None = None,
    source: Path | None = None,
    con=None,
) -> ReportInputs:
    """Gather the wave's results into the report's inputs. Each plan's steps (with their seeds),
    release checks, PRAM matrices and provenance come from the record of its latest release
    decision (``releases``: plan -> run folders from :func:`~sdc_dagster.lineage.list_decisions`,
    oldest first). A released plan is linked to its manifest and to the release it supersedes; a
    withheld plan has no link and names the blocking checks it failed. ``residual_contributions``:
    the :func:`residual_contributions` table of the wave, split by plan for the report.
    ``protected``: the plans' protected variants, for the suppressions per key and the
    distributions before and after; the unsafe combinations table (SPEC §3.10) is computed on
    ``original`` with the spec's k. ``measure_notes``: the measures the stages left out or limited
    (:class:`MeasureNote`), shown in the report. ``plans``: the wave's plans (default: the spec's;
    the wave chain adds the searched plan), ``search_front``: the front the search chose it from,
    ``search``: the search in figures (:func:`sdc_dagster.search.search_summary`).
    ``source``: the wave file, whose SPSS / Stata value labels (:func:`~sdc_dagster.sources.value_labels`)
    the report shows next to the codes."""
    wave_plans = list(spec.plans) if plans is None else list(plans)
    plans = {}
    for p in wave_plans:
        folder = releases[p.name][-1]
        manifest = lineage.read_manifest(folder)
        link = None
        if "withheld" not in manifest:
            previous = manifest["previous_release"]
            link = {
                "run_id": manifest["run_id"],
                "folder": str(folder),
                "previous_release": previous,
                "previous_folder": str(folder.parent / previous) if previous else None,
            }
        moved = None
        if residual_contributions is not None and p.name in residual_contributions.index.get_level_values("variant"):
            moved = residual_contributions.xs(p.name, level="variant")
        plans[p.name] = plan_summary(
            p, manifest["steps"], manifest["checks"], residual, loss_summary, loss_per_record, link,
            contributions=moved, pram_matrices=lineage.read_matrices(folder),
            provenance=release_provenance(folder, manifest),
        )
    keys = [k for k in spec.categorical_keys if k in original.columns]
    by_variable = by_category = None
    if keys:
        by_variable, by_category = risk.unsafe_combinations(original, keys, k=spec.risk.k,
                                                            max_dim=min(3, len(keys)), con=con)
    if protected:
        protected = {p.name: protected[p.name] for p in wave_plans if p.name in protected}  # spec order
    distributions, continuous = protected_distributions(original, protected, spec) if protected else ({}, [])
    return ReportInputs(
        survey=spec.survey,
        wave=wave,
        n_records=len(original),
        keys=spec.categorical_keys,
        risk_before={
            **residual.loc["original"].dropna().to_dict(),
            **({"records_above_threshold": risk.risk_above_threshold(risk_table["risk"],
                                                                     spec.risk.individual_risk_threshold)}
               if keys else {}),
        },
        risk_per_record=risk_table,
        # empty when the games could not be played on the wave (a measure note says why)
        contributions_global=None if contributions_global.empty else contributions_global,
        contributions_per_record=None if contributions_global.empty else {
            value: contributions_per_record.filter(like=f"{value}_").rename(columns=lambda c: c.split("_", 1)[1])
            for value in ("shapley", "solidarity")
        },
        plans=plans,
        k=spec.risk.k if spec.categorical_keys else None,
        risk_threshold=spec.risk.individual_risk_threshold if spec.categorical_keys else None,
        max_global_risk=spec.risk.max_global_risk if spec.categorical_keys else None,
        max_linkage_risk=spec.risk.max_linkage_risk if spec.continuous_keys else None,
        design=design_statement(spec),
        not_applicable=checks_not_applicable(spec),
        risk_measure="global_risk" if spec.categorical_keys else "linkage_risk",
        suppressions=suppressions_by_key(original, protected, keys) if protected else None,
        unsafe_by_variable=by_variable,
        unsafe_by_category=by_category,
        distributions=distributions,
        continuous=continuous,
        measure_notes=list(measure_notes or []),
        search_front=search_front,
        search=search,
        value_labels=value_labels(source, default_format=spec.source.format) if source is not None else {},
    )


def headline_loss(original: pd.DataFrame, protected: pd.DataFrame, spec: SurveySpec) -> dict:
    """The loss figures a release manifest carries: distance measure (1) with arctan distances
    (SPEC §9.1 eq (6)) and the mean TOPSIS loss (SPEC §10) over the quasi-identifiers (ordinal keys
    in the spec's order), on the records the release retains (``records_compared``,
    ``records_removed``), from one computation of the partial distances. When the distance measure
    is undefined on the data, ``not_applicable`` gives the reason instead of the two figures."""
    matched = _retained_records(original, protected, "release")
    scales = _loss_scales(spec, protected)
    columns = list(scales)
    counts = {"records_compared": len(protected), "records_removed": len(original) - len(protected)}
    notes = []
    result = if_computable(notes, "lambda_arctan", "release", loss.distance_loss, matched[columns], protected[columns],
                           scales, categories=_ordinal_orders(spec, scales))
    if result is None:
        return {"not_applicable": notes[0].reason, **counts}
    eta = loss.topsis_scores(result.distances)
    return {
        "lambda_arctan": float(result.value),
        "topsis_mean": float(eta.mean()),
        "values_compared": int(result.compared.sum()),
        **counts,
    }


def recompute_release(input_file: Path, spec_copy: Path, manifest: dict) -> dict[str, bytes]:
    """Recompute a release's safe files (file name -> bytes, :func:`~sdc_dagster.release_files.safe_files`)
    from what its manifest records: the input snapshot, the spec text used, the wave and the plan
    (whose seed is in the spec; step seeds and the published order's seed derive from it, the
    survey, the wave and the plan name)."""
    spec = load_spec(spec_copy)
    data = read_wave_file(spec, input_file)
    recorded = manifest["spec"]["plan"]
    # the searched plan is not in the spec: it is replayed from the steps and seed its manifest records
    plan = spec.plan(manifest["plan"]) if manifest["plan"] in {p.name for p in spec.plans} else Plan(
        name=manifest["plan"], steps=tuple(recorded["steps"]), k=recorded["k"],
        random_state=recorded["random_state"], description=recorded.get("description", ""))
    protected = protect(data, spec, plan, wave=manifest["wave"]).data
    return release_files.safe_files(protected, spec, plan, wave=manifest["wave"], source=input_file).files
