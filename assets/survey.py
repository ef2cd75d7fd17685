"""The survey asset chain, built once per survey spec and partitioned by wave.

raw_microdata -> variable_classification -> key_frequencies -> risk_scores -> risk_contributions
-> protected_<plan> (one asset per protection plan) -> residual_risk, residual_contributions,
information_loss -> sdc_report

One small factory per asset, grouped by stage (reading, risk, protection, evaluation, report);
:func:`build_survey_assets` assembles them in chain order. Each asset reads its inputs, calls one
function of :mod:`sdc_dagster.survey` (or the engine), and attaches its headline figures as metadata.
"""


import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetsDefinition,
    DataVersion,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)
from dagster_duckdb import DuckDBResource
from dagster_pandera import pandera_schema_to_dagster_type

from sdc_dagster.assets.checks import (
    original_risk_check_result,
    original_risk_check_spec,
    release_check_results,
    release_check_specs,
    wave_release_check_result,
    wave_release_check_spec,
)
from sdc_dagster.assets.partitions import latest_materialization, wave_partitions
from sdc_dagster.resources.storage import inputs_dir, landing_dir, releases_dir, reports_dir
import sdc_dagster
from sdc_dagster import lineage, release_files, risk, search, survey
from sdc_dagster.classification import classify_variables
from sdc_dagster.report import headline_table, recommendation, report_plots, write_report
from sdc_dagster.report.plots import boxplot_png, grouped_bars_png, histogram_png
from sdc_dagster.schemas import classification_schema, key_frequencies_schema, microdata_schema, risk_scores_schema, validate
from sdc_dagster.sources import read_wave
from sdc_dagster.spec import Plan, SurveySpec

CODE_VERSION = "1"


def code_version(*spec_parts) -> str:
    """The code version of an asset: the engine version plus a hash of the spec parts it reads, so
    that a changed spec marks exactly the assets that depend on the changed part stale."""
    digest = hashlib.sha256(repr(spec_parts).encode()).hexdigest()[:12]
    return f"{sdc_dagster.__version__}.{CODE_VERSION}-{digest}"


# Shared schemas become one Dagster type each: type names must be unique across the code location.
CLASSIFICATION_TYPE = pandera_schema_to_dagster_type(classification_schema)
KEY_FREQUENCIES_TYPE = pandera_schema_to_dagster_type(key_frequencies_schema)
RISK_SCORES_TYPE = pandera_schema_to_dagster_type(risk_scores_schema)


def image_markdown(png: bytes, title: str) -> MetadataValue:
    """A PNG as Markdown metadata, so the Dagster UI shows the plot inline."""
    return MetadataValue.md(f"**{title}**\n\n![{title}](data:image/png;base64,{base64.b64encode(png).decode()})")


def table_markdown(frame: pd.DataFrame) -> MetadataValue:
    return MetadataValue.md(frame.to_markdown() if len(frame) else "(empty)")


def raw_source(context: AssetExecutionContext, wave: str) -> dict:
    """Source file metadata (path, snapshot, sha256) of the wave's latest raw_microdata materialisation."""
    key = AssetKey([*context.asset_key.path[:-1], "raw_microdata"])
    materialization = latest_materialization(context.instance, key, wave)
    if materialization is None:
        raise RuntimeError(f"{key.to_user_string()} has no materialisation for wave {wave!r}")
    return {name: materialization.metadata[name].value for name in ("source_file", "source_snapshot", "source_sha256")}


def protected_key(spec: SurveySpec, plan_name: str) -> AssetKey:
    return AssetKey([spec.survey, f"protected_{plan_name}"])


def _common(spec: SurveySpec) -> dict:
    """Key prefix, group and wave partitions shared by every asset of the survey."""
    return dict(key_prefix=[spec.survey], group_name=spec.survey, partitions_def=wave_partitions(spec))


def _ins(spec: SurveySpec, *names: str) -> dict[str, AssetIn]:
    return {n: AssetIn(key=AssetKey([spec.survey, n])) for n in names}


def _plan_ins(spec: SurveySpec) -> dict[str, AssetIn]:
    """Every plan's protected variant (the spec's plans, then the searched plan when the spec
    searches) as an input named ``protected_<plan>``."""
    return {f"protected_{name}": AssetIn(key=protected_key(spec, name)) for name in survey.wave_plan_names(spec)}


def _variants(protected: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Plan name -> protected variant, from inputs named ``protected_<plan>``."""
    return {name.removeprefix("protected_"): frame for name, frame in protected.items()}


def decisions_of(spec: SurveySpec, plan_name: str, wave: str) -> list[Path]:
    """The plan's release decisions of this wave (released or withheld), oldest first (written by
    its protected asset)."""
    return lineage.list_decisions(releases_dir(), spec.survey, wave, plan_name)


# --- Stage 1: reading and classification -------------------------------------------------------


def raw_microdata_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="raw_microdata",
        description=f"{spec.title}: one wave as read from the landing folder, validated by the spec's schema.",
        dagster_type=pandera_schema_to_dagster_type(microdata_schema(spec)),
        code_version=code_version(spec.source, spec.variables),
        **_common(spec),
    )
    def raw_microdata(context: AssetExecutionContext):
        wave = read_wave(spec, context.partition_key, landing_dir())
        data = wave.data
        snapshot = lineage.snapshot_input(wave.path, wave.sha256, inputs_dir())
        return Output(
            data,
            data_version=DataVersion(wave.sha256),
            metadata={
                "records": len(data),
                "columns": len(data.columns),
                "source_file": str(wave.path),
                "source_format": wave.format,
                "source_snapshot": str(snapshot),
                "source_sha256": wave.sha256,
                "spec_sha256": spec.spec_hash,
            },
        )

    return raw_microdata


def variable_classification_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="variable_classification",
        ins=_ins(spec, "raw_microdata"),
        description="Each column's role and scale from the spec, with data-driven suggestions.",
        dagster_type=CLASSIFICATION_TYPE,
        code_version=code_version(spec.variables),
        **_common(spec),
    )
    def variable_classification(context: AssetExecutionContext, raw_microdata: pd.DataFrame):
        table = validate(classify_variables(raw_microdata, spec), classification_schema, source="variable_classification")
        flagged = table.loc[table["suggested_role"] == "direct_identifier", "variable"].tolist()
        context.add_output_metadata(
            {
                "categorical_keys": ", ".join(survey.keys_from_classification(table, "categorical_key")),
                "continuous_keys": ", ".join(survey.keys_from_classification(table, "continuous_key")),
                "likely_direct_identifiers": ", ".join(flagged) or "none",
                "table": table_markdown(table.set_index("variable")),
            }
        )
        return table

    return variable_classification


# --- Stage 2: risk of the original wave --------------------------------------------------------


def key_frequencies_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="key_frequencies",
        ins=_ins(spec, "raw_microdata", "variable_classification"),
        description="fk and Fk of every record's key (SPEC §2), computed in DuckDB.",
        dagster_type=KEY_FREQUENCIES_TYPE,
        code_version=code_version(spec.variables),
        **_common(spec),
    )
    def key_frequencies(
        context: AssetExecutionContext,
        raw_microdata: pd.DataFrame,
        variable_classification: pd.DataFrame,
        duckdb: DuckDBResource,
    ):
        keys = survey.keys_from_classification(variable_classification, "categorical_key")
        with duckdb.get_connection() as con:
            table = survey.key_frequencies(raw_microdata, keys, weight=spec.weight, con=con)
        validate(table, key_frequencies_schema, source="key_frequencies")
        if not keys:  # continuous keys only: every record shares the empty key (fk = n)
            context.add_output_metadata({"keys": "none: the spec has no categorical key"})
            return table
        context.add_output_metadata(
            {
                "keys": ", ".join(keys),
                "distinct_keys": int(raw_microdata[keys].drop_duplicates().shape[0]),
                "sample_uniques": int((table["fk"] == 1).sum()),
                f"k{spec.risk.k}_violations": int((table["fk"] < spec.risk.k).sum()),
            }
        )
        return table

    return key_frequencies


def risk_scores_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="risk_scores",
        ins=_ins(spec, "raw_microdata", "key_frequencies"),
        description="Per-record disclosure risk (SPEC §3, §5) with the wave's global figures as metadata.",
        dagster_type=RISK_SCORES_TYPE,
        code_version=code_version(spec.variables, spec.risk),
        check_specs=[original_risk_check_spec(spec, AssetKey([spec.survey, "risk_scores"]))] if spec.categorical_keys else [],
        **_common(spec),
    )
    def risk_scores(
        context: AssetExecutionContext, raw_microdata: pd.DataFrame, key_frequencies: pd.DataFrame, duckdb: DuckDBResource
    ):
        with duckdb.get_connection() as con:
            table, figures = survey.risk_scores(raw_microdata, spec, con=con, frequencies=key_frequencies)
        validate(table, risk_scores_schema, source="risk_scores")
        notes = figures.pop("measure_notes")
        metadata = {name: float(v) if isinstance(v, float) else v for name, v in figures.items()}
        metadata["measure_notes"] = MetadataValue.json([vars(n) for n in notes])
        if not spec.categorical_keys:  # continuous keys only: the combined measure's continuous part
            metadata["combined_risk_histogram"] = image_markdown(
                histogram_png(table["combined_risk"], "combined risk"), "Combined risk (continuous keys, SPEC §5)"
            )
            yield Output(table, metadata=metadata)
            return
        per_variable, _ = risk.unsafe_combinations(raw_microdata, spec.categorical_keys, k=spec.risk.k)
        metadata["unsafe_combinations"] = table_markdown(per_variable)
        metadata["risk_histogram"] = image_markdown(
            histogram_png(table["risk"], "individual risk"), "Individual re-identification risk"
        )
        yield Output(table, metadata=metadata)
        yield original_risk_check_result(spec, float(figures["risk"]))

    return risk_scores


def risk_contributions_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="risk_contributions",
        ins=_ins(spec, "raw_microdata", "risk_scores"),
        description="Each quasi-identifier's share of each record's risk: Shapley and solidarity values (SPEC §6).",
        code_version=code_version(spec.variables, spec.risk),
        **_common(spec),
    )
    def risk_contributions(context: AssetExecutionContext, raw_microdata: pd.DataFrame, risk_scores: pd.DataFrame):
        per_record, overall, notes = survey.risk_contributions(raw_microdata, spec)
        notes_table = survey.measure_notes_frame(notes)
        if overall.empty:
            context.add_output_metadata({"measure_notes": table_markdown(notes_table)})
            return {"per_record": per_record, "global": overall, "measure_notes": notes_table}
        context.add_output_metadata(
            {
                "global_contributions": table_markdown(overall.round(4)),
                "shapley_boxplot": image_markdown(
                    boxplot_png(per_record.filter(like="shapley_").rename(columns=lambda c: c[8:]), "Shapley values"),
                    "Shapley values per variable",
                ),
                "solidarity_boxplot": image_markdown(
                    boxplot_png(per_record.filter(like="solidarity_").rename(columns=lambda c: c[11:]), "Solidarity values"),
                    "Solidarity values per variable",
                ),
            }
        )
        return {"per_record": per_record, "global": overall, "measure_notes": notes_table}

    return risk_contributions


# --- Stage 3: protection (one asset per plan) --------------------------------------------------

# The risk figures a release record and the protected asset's metadata carry: name -> release check.
_RISK_OF_RELEASE = {"k_violations": "k_anonymity", "global_risk": "global_risk", "linkage_risk": "linkage_risk"}


def protected_asset(spec: SurveySpec, plan: Plan) -> AssetsDefinition:
    @asset(
        name=f"protected_{plan.name}",
        ins=_ins(spec, "raw_microdata"),
        description=(
            f"Protected variant by plan {plan.name!r}: {plan.description}. Eligible for release only "
            "if its blocking release checks pass; otherwise withheld (kept here for evaluation only)."
        ),
        code_version=code_version(spec.variables, spec.risk, plan, spec.release),
        check_specs=release_check_specs(spec, plan, protected_key(spec, plan.name)),
        **_common(spec),
    )
    def protected(context: AssetExecutionContext, raw_microdata: pd.DataFrame):
        yield from _protect_and_record(context, spec, plan, raw_microdata)

    return protected


def _protect_and_record(context: AssetExecutionContext, spec: SurveySpec, plan: Plan, raw_microdata: pd.DataFrame):
    """Apply ``plan`` to the wave, run the release checks and write the plan's decision (an
    eligible release, or the withheld record): the body of every protected asset."""
    wave = context.partition_key
    result = survey.protect(raw_microdata, spec, plan, wave=wave)
    validate(result.data, microdata_schema(spec, protected=True), source=f"protected_{plan.name}")
    checks = survey.release_checks(result.data, spec, plan, original=raw_microdata)
    failures = survey.blocking_failures(checks)
    source = raw_source(context, wave)
    snapshot = Path(source["source_snapshot"])
    # the published files only are shuffled and renumbered: this asset's output keeps the
    # wave's order and index, which residual risk and loss compare record by record
    safe = None if failures else release_files.safe_files(result.data, spec, plan, wave=wave, source=snapshot)
    release = lineage.write_release(
        releases_dir(),
        survey=spec.survey,
        wave=wave,
        plan=plan.name,
        run_id=context.run_id,
        protected=result.data,
        files=safe.files if safe else None,
        order=safe.order if safe else None,
        input_file=snapshot,
        input_sha256=source["source_sha256"],
        spec_path=spec.spec_path,
        spec_sha256=spec.spec_hash,
        plan_definition=plan_definition(plan),
        steps=result.steps,
        risk={name: checks[check]["value"] for name, check in _RISK_OF_RELEASE.items() if check in checks},
        loss=survey.headline_loss(raw_microdata, result.data, spec),
        checks=checks,
        matrices={key.split(":", 1)[1]: m for key, m in result.artifacts.items() if key.startswith("pram:")},
        withheld=failures,
    )
    if failures:
        context.log.warning(
            f"protected_{plan.name} wave {wave} withheld, no release written: "
            + "; ".join(f"{name}: {why}" for name, why in failures.items())
        )
    yield Output(
        result.data,
        metadata={
            "plan": plan.name,
            "random_state": plan.random_state,
            "steps": MetadataValue.json(result.steps),
            "records": len(result.data),
            **{f"check_{name}": bool(c["passed"]) for name, c in checks.items()},
            **{name: checks[check]["value"] for name, check in _RISK_OF_RELEASE.items() if check in checks},
            **({"linkage_measure": checks["linkage_risk"]["measure"]} if "linkage_risk" in checks else {}),
            "checks_not_applicable": MetadataValue.json(survey.checks_not_applicable(spec)),
            "eligible": release.published,
            "withheld_because": MetadataValue.json(failures),
            "warnings": MetadataValue.json(survey.release_warnings(checks)),
            "release": MetadataValue.path(str(release.folder)),
            "release_files": ", ".join(safe.files) if safe else "none (withheld)",
            "previous_release": release.manifest["previous_release"] or "none",
            "manifest": MetadataValue.json(release.manifest),
        },
    )
    yield from release_check_results(checks)


def plan_definition(plan: Plan) -> dict:
    """What a manifest records of a plan (``spec.plan`` of the manifest): steps, k, seed, description.
    :func:`sdc_dagster.survey.recompute_release` replays a plan the spec does not name (the searched
    plan) from it."""
    return {"steps": list(plan.steps), "k": plan.k, "random_state": plan.random_state,
            "description": plan.description}


# --- Stage 3b: the searched plan -----------------------------------------------------------------


def plan_search_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="plan_search",
        ins=_ins(spec, "raw_microdata"),
        description=(
            "Search of the protection plans generated from the wave (recodings, local suppression, "
            "microaggregation, noise): the front of risk against information loss and the recommended "
            "candidate, which protected_searched materialises."
        ),
        code_version=code_version(spec.variables, spec.risk, spec.search),
        **_common(spec),
    )
    def plan_search(context: AssetExecutionContext, raw_microdata: pd.DataFrame):
        found = search.search_wave(raw_microdata, spec, wave=context.partition_key, progress=context.log.info)
        front = found.front_frame()
        plan = search.plan_to_release(found, spec)
        context.add_output_metadata({
            "front": table_markdown(front),
            "recommended": plan.description,
            "nodes_evaluated": found.nodes_evaluated,
            "nodes_total": found.nodes_total,
            "exhaustive": found.exhaustive,
            "bound": found.bound,
            "seconds": round(found.seconds, 2),
            "random_state": plan.random_state,
            "steps": MetadataValue.json(list(plan.steps)),
        })
        summary = pd.DataFrame([search.search_summary(found)])
        return {"front": front, "plan": _plan_frame(plan), "summary": summary}

    return plan_search


def _plan_frame(plan: Plan) -> pd.DataFrame:
    """A plan as a one-row frame (the steps as JSON), as the IO manager stores it."""
    return pd.DataFrame([{"name": plan.name, "steps": json.dumps(list(plan.steps)), "k": plan.k,
                          "random_state": plan.random_state, "description": plan.description}])


def _plan_of_frame(frame: pd.DataFrame) -> Plan:
    row = frame.iloc[0]
    return Plan(name=str(row["name"]), steps=tuple(json.loads(row["steps"])), k=int(row["k"]),
                random_state=int(row["random_state"]), description=str(row["description"]))


def protected_searched_asset(spec: SurveySpec) -> AssetsDefinition:
    # the check specs need the plan's k only: the steps are the search's, known when it has run
    plan = Plan(name=search.SEARCHED_PLAN, steps=(), k=spec.risk.k, random_state=0)

    @asset(
        name=f"protected_{plan.name}",
        ins=_ins(spec, "raw_microdata", "plan_search"),
        description=(
            "Protected variant by the plan the search recommends (plan_search), through the same release "
            "checks, manifest and audit as every spec plan; its steps and seed are in its manifest."
        ),
        code_version=code_version(spec.variables, spec.risk, spec.search, spec.release),
        check_specs=release_check_specs(spec, plan, protected_key(spec, plan.name)),
        **_common(spec),
    )
    def protected(context: AssetExecutionContext, raw_microdata: pd.DataFrame, plan_search: dict):
        yield from _protect_and_record(context, spec, _plan_of_frame(plan_search["plan"]), raw_microdata)

    return protected


# --- Stage 4: evaluation of the protected variants ---------------------------------------------


def residual_risk_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="residual_risk",
        ins={**_ins(spec, "raw_microdata"), **_plan_ins(spec)},
        description="Every risk measure recomputed on each protected variant, next to the original.",
        code_version=code_version(spec.variables, spec.risk),
        **_common(spec),
    )
    def residual_risk(context: AssetExecutionContext, raw_microdata: pd.DataFrame, **protected: pd.DataFrame):
        variants = _variants(protected)
        wave = context.partition_key
        # The linkage shares the protected assets computed for their linkage_risk check.
        linkage = {}
        for name in variants:
            checks = lineage.read_manifest(decisions_of(spec, name, wave)[-1])["checks"]
            if "figures" in checks.get("linkage_risk", {}):
                linkage[name] = checks["linkage_risk"]["figures"]
        table = survey.residual_risk(raw_microdata, variants, spec, linkage=linkage)
        context.add_output_metadata({"table": table_markdown(table.round(6))})
        return table

    return residual_risk


def residual_contributions_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="residual_contributions",
        ins={**_ins(spec, "risk_contributions"), **_plan_ins(spec)},
        description=(
            "Shapley and solidarity contributions of each quasi-identifier recomputed on each protected "
            "variant (SPEC §6, §5.8), next to the original's: how each plan moved every variable's share."
        ),
        code_version=code_version(spec.variables, spec.risk),
        **_common(spec),
    )
    def residual_contributions(context: AssetExecutionContext, risk_contributions: dict, **protected: pd.DataFrame):
        table = survey.residual_contributions(risk_contributions["global"], _variants(protected), spec)
        metadata = {}
        for plan in (p for p in survey.wave_plan_names(spec) if p in table.index.get_level_values("variant")):
            moved = table.xs(plan, level="variant")
            metadata[f"contributions_{plan}"] = table_markdown(moved.round(4))
            metadata[f"contributions_{plan}_plot"] = image_markdown(
                grouped_bars_png(moved, f"Contributions before and after {plan}", ylabel="global contribution"),
                f"Contributions before and after {plan}",
            )
        context.add_output_metadata(metadata)
        return table

    return residual_contributions


def information_loss_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="information_loss",
        ins={**_ins(spec, "raw_microdata"), **_plan_ins(spec)},
        description="Information loss of each protected variant (SPEC §9) and per-record TOPSIS loss (§10).",
        code_version=code_version(spec.variables),
        **_common(spec),
    )
    def information_loss(context: AssetExecutionContext, raw_microdata: pd.DataFrame, **protected: pd.DataFrame):
        variants = _variants(protected)
        wave = context.partition_key
        matrices = {name: lineage.read_matrices(decisions_of(spec, name, wave)[-1]) for name in variants}
        summary, per_record, notes = survey.information_loss(raw_microdata, variants, spec, matrices=matrices)
        notes_table = survey.measure_notes_frame(notes)
        context.add_output_metadata({"summary": table_markdown(summary.round(6)), "measure_notes": table_markdown(notes_table)})
        return {"summary": summary, "per_record": per_record, "measure_notes": notes_table}

    return information_loss


# --- Stage 5: the release report ---------------------------------------------------------------


def sdc_report_asset(spec: SurveySpec) -> AssetsDefinition:
    @asset(
        name="sdc_report",
        ins={
            **_ins(
                spec,
                "raw_microdata",
                "risk_scores",
                "risk_contributions",
                "residual_risk",
                "residual_contributions",
                "information_loss",
            ),
            # The plans' variants give the suppressions and distributions; their steps, seeds and
            # release checks are read from their release records.
            **_plan_ins(spec),
            # the searched plan and the front it was chosen from
            **(_ins(spec, "plan_search") if spec.search.enabled else {}),
        },
        description=(
            "One self-contained HTML report per wave (decision first), its JSON figures, and the survey's "
            "index of waves."
        ),
        code_version=code_version(spec.variables, spec.risk, spec.plans),
        check_specs=[wave_release_check_spec(AssetKey([spec.survey, "sdc_report"]))],
        **_common(spec),
    )
    def sdc_report(
        context: AssetExecutionContext,
        raw_microdata: pd.DataFrame,
        risk_scores: pd.DataFrame,
        risk_contributions: dict,
        residual_risk: pd.DataFrame,
        residual_contributions: pd.DataFrame,
        information_loss: dict,
        **protected: pd.DataFrame,
    ) -> MaterializeResult:
        wave = context.partition_key
        searched = protected.pop("plan_search", None)
        plans = list(spec.plans) + ([_plan_of_frame(searched["plan"])] if searched is not None else [])
        risk_run = latest_materialization(context.instance, AssetKey([spec.survey, "risk_scores"]), wave)
        recorded = risk_run.metadata.get("measure_notes") if risk_run else None
        notes = survey.measure_notes_of(recorded.value if recorded else [])
        notes += survey.measure_notes_of(risk_contributions["measure_notes"])
        notes += survey.measure_notes_of(information_loss["measure_notes"])
        inputs = survey.report_inputs(
            spec,
            wave,
            raw_microdata,
            risk_scores,
            risk_contributions["per_record"],
            risk_contributions["global"],
            residual_risk,
            information_loss["summary"],
            information_loss["per_record"],
            {p.name: decisions_of(spec, p.name, wave) for p in plans},
            residual_contributions=residual_contributions,
            protected=_variants(protected),
            measure_notes=notes,
            plans=plans,
            search_front=searched["front"] if searched is not None else None,
            search=searched["summary"].iloc[0].to_dict() if searched is not None else None,
            source=Path(raw_source(context, wave)["source_snapshot"]),
        )
        plans = inputs.plans
        paths = write_report(inputs, reports_dir() / spec.survey)
        headline = headline_table(inputs)
        chosen = recommendation(inputs).plan
        # the wave's one release: the recommendation, published once its report is written
        released = lineage.publish_wave_release(releases_dir(), spec.survey, wave, chosen,
                                                reason="recommended by the report's decision rule",
                                                report=paths["html"])
        if released is None:
            context.log.warning(f"wave {wave}: no plan passes every blocking check; nothing is released")
        return MaterializeResult(
            check_results=[wave_release_check_result(spec, plans, released)],
            metadata={
                "released_plan": released["plan"] if released else "none",
                "report": MetadataValue.path(str(paths["html"])),
                "report_json": MetadataValue.path(str(paths["json"])),
                "index": MetadataValue.path(str(paths["index"])),
                "recommended_plan": recommendation(inputs).plan or "none",
                "headline": table_markdown(headline),
                "releasable_plans": ", ".join(n for n, p in plans.items() if p.releasable) or "none",
                **{name: image_markdown(png, name.replace("_", " ")) for name, png in report_plots(inputs).items()},
            }
        )

    return sdc_report


@dataclass(frozen=True)
class SurveyAssets:
    """The assets of one survey, in chain order."""

    spec: SurveySpec
    assets: list[AssetsDefinition]

    @property
    def protected_keys(self) -> list[AssetKey]:
        return [protected_key(self.spec, name) for name in survey.wave_plan_names(self.spec)]


def build_survey_assets(spec: SurveySpec) -> SurveyAssets:
    """Every asset of the survey chain for ``spec``, under key prefix and group ``spec.survey``."""
    return SurveyAssets(
        spec=spec,
        assets=[
            raw_microdata_asset(spec),
            variable_classification_asset(spec),
            key_frequencies_asset(spec),
            risk_scores_asset(spec),
            risk_contributions_asset(spec),
            *(protected_asset(spec, plan) for plan in spec.plans),
            *((plan_search_asset(spec), protected_searched_asset(spec)) if spec.search.enabled else ()),
            residual_risk_asset(spec),
            residual_contributions_asset(spec),
            information_loss_asset(spec),
            sdc_report_asset(spec),
        ],
    )
