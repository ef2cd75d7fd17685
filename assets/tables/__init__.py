"""The table chain of a table spec (issue 36): ``tabulated`` -> ``primary`` -> ``protected_tables`` ->
``table_audit`` -> ``table_release`` (the release and the report), under key prefix and group
``<set name>``. A set read from a survey is partitioned by the survey's waves and reads the wave's
``raw_microdata``; a set read from a business file starts with ``table_input`` (the file read and
snapshotted) and is unpartitioned. Each asset calls one stage of :mod:`sdc_dagster.pipeline.tables`;
the release rules (:func:`~sdc_dagster.pipeline.tables.table_checks`) are asset checks of
``protected_tables`` (every primary suppressed, no negative or empty published cell) and of
``table_audit`` (the joint audit passed). A set that fails one is withheld by ``table_release``.
"""


import hashlib
from dataclasses import dataclass

import pandas as pd
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetSelection,
    AssetsDefinition,
    MetadataValue,
    Output,
    asset,
    define_asset_job,
)

import sdc_dagster
from sdc_dagster.assets.partitions import wave_partitions
from sdc_dagster.pipeline.ingest import RawWave
from sdc_dagster.pipeline.protection import CheckOutcome
from sdc_dagster.pipeline.tables import (
    TabulatedTables,
    audit_check,
    audit_tables,
    input_file,
    primary_cells,
    protect_tables,
    protection_checks,
    read_table_input,
    table_checks,
    table_input,
    tabulate_tables,
)
from sdc_dagster.releases.digests import snapshot_input
from sdc_dagster.releases.tables import FILE_WAVE, release_tables, table_inputs
from sdc_dagster.resources.home import SdcHome
from sdc_dagster.spec.sources import file_sha256
from sdc_dagster.spec import SurveySpec
from sdc_dagster.spec.tables import TableSetSpec

@dataclass(frozen=True)
class TableAssets:
    """A table set's assets and its job (``<set>_tables_job``: the chain, with the wave's
    ``raw_microdata`` for a set read from a survey)."""

    spec: TableSetSpec
    assets: list[AssetsDefinition]
    job: object  # a job definition (define_asset_job)


def _code_version(spec: TableSetSpec) -> str:
    """The engine version and a hash of the spec text: a changed spec marks the chain stale."""
    return f"{sdc_dagster.__version__}-{hashlib.sha256(spec.spec_sha256.encode()).hexdigest()[:12]}"


def _check_results(outcomes: dict[str, CheckOutcome]) -> list[AssetCheckResult]:
    return [
        AssetCheckResult(check_name=name, passed=bool(outcome.passed),
                         severity=AssetCheckSeverity.ERROR if outcome.blocking else AssetCheckSeverity.WARN,
                         metadata={"value": outcome.value, "rule": outcome.rule, "withholds_release": outcome.blocking,
                                   "figures": MetadataValue.json(outcome.figures or {})})
        for name, outcome in outcomes.items()
    ]


def _cells_markdown(cells: dict[str, pd.DataFrame]) -> MetadataValue:
    counts = pd.DataFrame({name: frame["status"].value_counts() for name, frame in cells.items()}).fillna(0)
    return MetadataValue.md(counts.astype(int).to_markdown())


def build_table_assets(spec: TableSetSpec, survey: SurveySpec | None = None) -> TableAssets:
    """Every asset of the table chain of ``spec``; ``survey``: the survey spec of ``source.survey``."""
    if (spec.source.survey is None) != (survey is None) or (survey and survey.survey != spec.source.survey):
        raise ValueError(f"table set {spec.name!r}: reads {spec.source.survey or input_file(spec)}, given survey "
                         f"{survey.survey if survey else None!r}")
    prefix = [spec.name]
    common = dict(key_prefix=prefix, group_name=spec.name, code_version=_code_version(spec),
                  partitions_def=wave_partitions(survey) if survey else None)
    checked = _release_checks(spec)
    assets: list[AssetsDefinition] = []
    if survey is not None:
        raw_key = AssetKey([survey.survey, "raw_microdata"])
    else:
        raw_key = AssetKey([*prefix, "table_input"])
        assets.append(_table_input_asset(spec, common))

    @asset(name="tabulated", ins={"raw": AssetIn(key=raw_key)},
           description="Every table of the spec over its dimensions and hierarchies (inner cells and the sparse "
                       "matrix to the published cells; sdc_dagster.tables.tabulate).", **common)
    def tabulated(context: AssetExecutionContext, raw: RawWave) -> TabulatedTables:
        where = f"{spec.name} {context.partition_key if context.has_partition_key else FILE_WAVE}"
        made = tabulate_tables(spec, table_input(spec, raw.data, source=where))
        context.add_output_metadata({f"{name}_cells": len(t.cells) for name, t in made.items()})
        return TabulatedTables(tables=made, source=raw.source)

    @asset(name="primary", description="Each table's unsafe cells under its rules, with their protection levels.",
           **common)
    def primary(context: AssetExecutionContext, tabulated: TabulatedTables) -> dict[str, pd.DataFrame]:
        cells = primary_cells(spec, tabulated.tables)
        context.add_output_metadata({f"{name}_primary": int(c["primary"].sum()) for name, c in cells.items()})
        return cells

    @asset(name="table_release", description="The release (each table's CSV with status flags, spec copy, manifest "
                                             "with digests; replayed by `sdc audit tables`) and the HTML report; "
                                             "withheld when a release check fails.", **common)
    def table_release(context: AssetExecutionContext, home: SdcHome, tabulated: TabulatedTables,
                      table_audit: dict[str, pd.DataFrame]) -> pd.DataFrame:
        wave = context.partition_key if context.has_partition_key else FILE_WAVE
        outcomes = table_checks(table_audit)
        source = tabulated.source
        release, report = release_tables(
            home.releases, home.reports, context.run_id, spec, wave, tabulated.tables, table_audit, outcomes,
            table_inputs(spec, source.snapshot, source.sha256, survey.spec_path if survey else None,
                         snapshots=home.inputs))
        withheld = release.manifest.get("withheld") or {}
        context.add_output_metadata({"folder": str(release.folder), "report": str(report),
                                     "withheld_because": MetadataValue.json(withheld)})
        return pd.DataFrame([{"file": n, "sha256": d} for n, d in release.manifest["files"].items()],
                            columns=["file", "sha256"])

    assets += [tabulated, primary, *_protection_assets(spec, common, checked, raw_key), table_release]
    keys = [key for a in assets for key in a.keys]
    job = define_asset_job(f"{spec.name}_tables_job", selection=AssetSelection.assets(*keys) | AssetSelection.assets(raw_key),
                           partitions_def=common["partitions_def"],
                           description=f"The tables of {spec.name}: tabulate, protect, audit, release.")
    return TableAssets(spec=spec, assets=assets, job=job)


def _release_checks(spec: TableSetSpec) -> dict[str, list[AssetCheckSpec]]:
    """The release checks of the table chain by the stage that runs them (``protected_tables``,
    ``table_audit``): for small-count rounding, additivity and no count in 1..round_base - 1; for the
    cell key method, every figure perturbed as the p-table says at its cell key; for
    suppression, every primary suppressed and the intruder's linear-programme audit (Hundepool et al.
    2012, §4.4.1); for both, no negative or empty published cell."""
    prefix, rounding = [spec.name], spec.method == "rounding"
    cell_key = spec.method == "cell_key"
    checks = {name: AssetCheckSpec(name=name, asset=AssetKey([*prefix, asset_name]), description=rule)
              for name, asset_name, rule in (
                  ("cells_valid", "protected_tables", "withholds the release unless no published count is negative "
                                                      "and no published cell is empty"),
                  *((("additive", "table_audit", "withholds the release unless every published cell is the sum of "
                                                 "the published inner cells below it (small-count rounding keeps "
                                                 "the tables additive)"),
                     ("no_small_counts", "table_audit", "withholds the release unless no published count is in "
                                                        "1..round_base - 1")) if rounding else
                    (("perturbed_as_ptable", "table_audit", "withholds the release unless every published figure is "
                                                            "perturbed from its cell key as the p-table says"),)
                    if cell_key else
                    (("primaries_suppressed", "protected_tables", "withholds the release unless every primary cell "
                                                                  "is suppressed"),
                     ("audit_passed", "table_audit", "withholds the release unless every primary's interval from the "
                                                     "intruder's linear programme over every linked table meets its "
                                                     "protection levels (Hundepool et al. 2012, §4.4.1)"))))}
    return {stage: [c for c in checks.values() if c.asset_key == AssetKey([*prefix, stage])]
            for stage in ("protected_tables", "table_audit")}


def _table_input_asset(spec: TableSetSpec, common: dict) -> AssetsDefinition:
    """The ``table_input`` asset of a table set read from its own file (no survey): the file as read
    and its content-addressed snapshot."""

    @asset(name="table_input", description=f"The file {input_file(spec).name} as read, with its "
                                           "content-addressed snapshot (what the release records).", **common)
    def table_input_asset(context: AssetExecutionContext, home: SdcHome) -> RawWave:
        path = input_file(spec)
        data = read_table_input(spec)
        context.add_output_metadata({"file": str(path), "records": len(data)})
        return RawWave(data=data, format=path.suffix.lstrip(".") or "csv",
                       source=snapshot_input(path, file_sha256(path), home.inputs))

    return table_input_asset


def _protection_assets(spec: TableSetSpec, common: dict, checked: dict[str, list[AssetCheckSpec]],
                       raw_key: AssetKey) -> list[AssetsDefinition]:
    """The ``protected_tables`` asset (small-count rounding, the cell key method, which also reads the
    input ``raw_key`` to draw the record keys, or secondary suppression, linked tables jointly) and
    the ``table_audit`` asset that checks it, each with its release checks."""
    rounding, cell_key = spec.method == "rounding", spec.method == "cell_key"
    described = dict(
        name="protected_tables", check_specs=checked["protected_tables"], **common,
        description=(f"Small-count rounding to base {spec.rounding.get('round_base')} (PLS, seed "
                     f"{spec.rounding.get('random_state')}); linked tables rounded jointly." if rounding else
                     f"Cell key method (p-table D = {spec.cell_key.get('max_deviation')}, V = "
                     f"{spec.cell_key.get('variance')}, record keys drawn with seed {spec.cell_key.get('seed')})."
                     if cell_key else
                     f"Secondary suppression ({spec.method}, cost by {spec.cost}); linked tables protected jointly."))

    def protected_output(cells: dict[str, pd.DataFrame]):
        yield Output(cells, metadata={"status": _cells_markdown(cells)})
        yield from _check_results(protection_checks(cells))

    if cell_key:
        @asset(ins={"raw": AssetIn(key=raw_key)}, **described)
        def protected_tables(context: AssetExecutionContext, tabulated: TabulatedTables,
                             primary: dict[str, pd.DataFrame], raw: RawWave):
            where = f"{spec.name} {context.partition_key if context.has_partition_key else FILE_WAVE}"
            yield from protected_output(protect_tables(spec, tabulated.tables, primary,
                                                       table_input(spec, raw.data, source=where)))
    else:
        @asset(**described)
        def protected_tables(context: AssetExecutionContext, tabulated: TabulatedTables,
                             primary: dict[str, pd.DataFrame]):
            yield from protected_output(protect_tables(spec, tabulated.tables, primary))

    @asset(name="table_audit",
           description=("Each rounded cell checked: additive over its inner cells, no count in 1..round_base - 1."
                        if rounding else "Each perturbed cell checked against the p-table at its cell key." if cell_key
                        else "Every suppressed cell's interval from the intruder's linear programme "
                                         "over all linked tables together."),
           check_specs=checked["table_audit"], **common)
    def table_audit(context: AssetExecutionContext, tabulated: TabulatedTables,
                    protected_tables: dict[str, pd.DataFrame]):
        audited = audit_tables(spec, tabulated.tables, protected_tables)
        failing = "additive" if rounding else "as_ptable" if cell_key else "protected"
        yield Output(audited, metadata={name: int((~c[failing]).sum()) for name, c in audited.items()})
        yield from _check_results(audit_check(audited))
    return [protected_tables, table_audit]


__all__ = ["TableAssets", "build_table_assets"]
