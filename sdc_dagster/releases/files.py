"""The safe files of a release: the protected variant as an office publishes it.

As sdcMicro's ``writeSafeFile`` and mu-Argus do, the released variant is written in the office's
own formats: the format the wave came in (SPSS with its variable labels, value labels, measurement
levels and user-missing codes; Stata with its variable and value labels; CSV; Parquet; SAS waves as
SAS transport, the SAS format that can be written; waves from Excel or OpenDocument workbooks and
Argus ``.asc``/``.rda`` data as CSV, a format every tool reads), Parquet always, and the formats the spec's
``release.formats`` asks for. Before writing, the published file is cut from the source record by
record (SPEC §8.1: direct identifiers are already gone):

* the record order is shuffled with a seed derived like a plan step's
  (:func:`~sdc_dagster.protect.plan.step_seed` over survey, wave, plan, the position after the
  last step and ``"release_order"``) and recorded; households stay together (their records are
  adjacent, households in random order); the index is a fresh ``0..n-1``;
* the record id is replaced by the sequence ``1..n`` and the household id by ``1..H``, both in
  the published order, so no released id equals or maps back to an original one.

Merged categories are released with codes and labels of their own (SPEC §8.2;
:mod:`sdc_dagster.releases.categories`): the protected variant keeps the smallest member's code
for the loss measures, the files never show it. SPSS and Stata files carry the rewritten value
labels (the merged categories' codes with their labels; the labels of merged-away members
dropped). CSV and Parquet carry the codes, as the SPSS and Stata files do, and every release has
``value_labels.csv`` (columns ``variable``, ``code``, ``label``: every labelled code of the
released files, the source's labels of unchanged categories and the merged categories' labels),
so that the label of each code is published beside them; a text category (``"Bachelors"``) is its
own label, a merged one reads ``"Bachelors, Doctorate, Masters"``, and an ``interval_recode``
without labels releases its bands as text, ``"(20,25]"``. The manifest records the merged
categories (``output.categories``, :meth:`~sdc_dagster.releases.categories.ReleasedCoding.record`).

A wave read from CSV is released as CSV in its own dialect: the separator, decimal mark and
encoding of ``source.options`` (a ``;``-separated file with decimal commas in Windows-1252, as
offices' spreadsheets export them, comes back the same, ``value_labels.csv`` too), so the office's
tools read the release as they read the wave; text its encoding cannot hold is written in UTF-8
instead (with a byte-order mark, so spreadsheets read it as such). The manifest records the
dialect written (``order.csv``).

``release.shuffle: false`` or ``release.renumber_ids: false`` keep the order or the ids. The
pipeline's protected asset keeps the source order and index, since residual risk and loss compare
it with the original record by record; only the files written here are reordered.

Reproducible bytes: readstat stamps SPSS, Stata and SAS transport files with the time they were
written. That stamp is set to 1970-01-01 00:00 (as ``SOURCE_DATE_EPOCH=0`` does for reproducible
builds), so a release recomputed by ``sdc audit`` is byte-identical to the stored one.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sdc_dagster.errors import SDCInputError
from sdc_dagster.files import pin_timestamp
from sdc_dagster.protect.plan import step_seed
from sdc_dagster.releases.categories import ReleasedCoding, released_coding
from sdc_dagster.releases.digests import parquet_bytes
from sdc_dagster.report.categories import plain_category
from sdc_dagster.spec.sources import file_format, source_metadata
from sdc_dagster.spec import Plan, SurveySpec
from sdc_dagster.spec.reading import FileContents, read_with_metadata

#: The Parquet file every release has (the manifest's ``output.file``).
PROTECTED = "protected.parquet"
#: File name of each release format (Parquet keeps the name every release has had).
FILE_NAMES = {"parquet": PROTECTED, "spss": "protected.sav", "stata": "protected.dta", "csv": "protected.csv",
              "xport": "protected.xpt"}
#: The label table of every release: variable, code, label of each labelled released code.
LABEL_TABLE = "value_labels.csv"
#: The release format of each wave format (pyreadstat writes no sas7bdat; a wave read from a workbook
#: or from Argus data is released as CSV, beside the Parquet file every release has).
_WAVE_RELEASE_FORMAT = {"csv": "csv", "parquet": "parquet", "spss": "spss", "stata": "stata", "sas": "xport",
                        "xport": "xport", "spreadsheet": "csv", "argus": "csv"}
ORDER_METHOD = "release_order"


@dataclass(frozen=True)
class SafeFiles:
    """The published files of a release (file name -> bytes), how they were cut from the
    protected variant (``order``: shuffled, seed, renumbered id columns; recorded in the manifest)
    and how they code merged categories (``coding``)."""

    files: dict[str, bytes]
    order: dict
    coding: ReleasedCoding = field(default_factory=ReleasedCoding)

    @property
    def categories(self) -> dict:
        """What the manifest records of the coding (``output.categories``,
        :meth:`~sdc_dagster.releases.categories.ReleasedCoding.record`)."""
        return self.coding.record()


def release_formats(spec: SurveySpec, wave_format: str) -> list[str]:
    """The formats a release is written in: the wave's own, Parquet, then the spec's ``release.formats``."""
    return list(dict.fromkeys([_WAVE_RELEASE_FORMAT[wave_format], "parquet", *spec.release.formats]))


def order_seed(spec: SurveySpec, plan: Plan, wave: str) -> int:
    """The seed of the published record order: the step seed of a step after the plan's last."""
    return step_seed(plan.random_state, (spec.survey, str(wave), plan.name), len(plan.steps), ORDER_METHOD)


def publication_order(protected: pd.DataFrame, spec: SurveySpec, plan: Plan, *, wave: str) -> tuple[pd.DataFrame, dict]:
    """The protected variant in published order with new ids (see the module docstring), and the
    record of what was done. Records without a household id are placed after the households."""
    household = spec.household_id if spec.household_id in protected.columns else None
    record_id = spec.record_id if spec.record_id in protected.columns else None
    seed = order_seed(spec, plan, wave) if spec.release.shuffle else None
    order = np.arange(len(protected))
    if seed is not None:
        order = np.random.default_rng(seed).permutation(len(protected))
    if household is not None and len(order):
        # factorize numbers households by first appearance in the shuffled rows: a stable sort on
        # that number keeps each household's records adjacent and the households in shuffled order
        first_seen, _ = pd.factorize(protected[household].to_numpy()[order])
        first_seen = np.where(first_seen < 0, first_seen.max() + 1, first_seen)
        order = order[np.argsort(first_seen, kind="stable")]
    released = protected.iloc[order].reset_index(drop=True)
    renumbered = []
    if spec.release.renumber_ids:
        if record_id is not None:
            released[record_id] = np.arange(1, len(released) + 1, dtype="int64")
            renumbered.append(record_id)
        if household is not None:
            codes, _ = pd.factorize(released[household])
            numbers = pd.Series(codes + 1, dtype="int64")
            released[household] = numbers if (codes >= 0).all() else numbers.astype("Int64").mask(codes < 0)
            renumbered.append(household)
    return released, {"shuffled": seed is not None, "seed": seed, "renumbered_ids": renumbered}


def release_coding(original: pd.DataFrame, spec: SurveySpec, plan: Plan, *,
                   labels: FileContents | None = None) -> ReleasedCoding:
    """The released coding of a plan's variant of ``original``
    (:func:`~sdc_dagster.releases.categories.released_coding` over the plan's steps, the spec's
    categorical keys, declared categories and missing codes, and the source's value labels and
    user-missing codes when ``labels`` has them)."""
    declared = {v.name: v.categories for v in spec.variables if v.categories is not None}
    missing = {v.name: list(v.missing_codes) for v in spec.variables if v.missing_codes}
    for column, codes in (labels.user_missing if labels is not None else {}).items():
        missing[column] = [*missing.get(column, []), *codes]
    return released_coding(original, list(plan.steps), categorical=spec.categorical_keys, declared=declared,
                           labels=labels.value_labels if labels is not None else None, missing=missing)


def safe_files(protected: pd.DataFrame, spec: SurveySpec, plan: Plan, *, wave: str, source: Path,
               original: pd.DataFrame) -> SafeFiles:
    """Every published file of a released variant; ``source`` is the wave file (its labels and
    missing codes go into the SPSS and Stata files), ``original`` the wave as read (its categories
    are the original ones, :func:`release_coding`)."""
    wave_format = file_format(source, default=spec.source.format, metadata=source_metadata(spec))
    formats = release_formats(spec, wave_format)
    labels = wave_labels(source, spec)
    coding = release_coding(original, spec, plan, labels=labels)
    released, order = publication_order(coding.apply(protected), spec, plan, wave=wave)
    value_labels = coding.value_labels(labels.value_labels if labels is not None else None)
    value_labels = {c: m for c, m in value_labels.items() if c in released.columns}
    as_text = labels_as_text(released, value_labels, coding.merged)
    table = label_table(value_labels)
    dialect = csv_dialect(spec, wave_format, [as_text, table])
    files = {FILE_NAMES[f]: encode(as_text if f in ("csv", "parquet") else released, f, labels, value_labels=value_labels,
                                   dialect=dialect)
             for f in formats}
    files[LABEL_TABLE] = csv_bytes(table, dialect)
    if "csv" in formats:
        order = {**order, "csv": dialect}
    return SafeFiles(files, order, coding)


#: The CSV dialect of a release whose wave was not CSV (and of pandas' defaults).
PLAIN_CSV = {"sep": ",", "decimal": ".", "encoding": "utf-8"}


def csv_dialect(spec: SurveySpec, wave_format: str, frames: list[pd.DataFrame]) -> dict:
    """The dialect the release's CSV files are written in (module docstring): the wave's separator,
    decimal mark and encoding when it was CSV, else :data:`PLAIN_CSV`; UTF-8 with a byte-order mark
    (``utf-8-sig``) when the wave's encoding cannot hold some text of ``frames``."""
    if wave_format != "csv":
        return dict(PLAIN_CSV)
    options = spec.source.options or {}
    dialect = {"sep": str(options.get("sep") or ","), "decimal": str(options.get("decimal") or "."),
               "encoding": str(options.get("encoding") or "utf-8")}
    texts = [str(c) for frame in frames for c in frame.columns]
    texts += [v for frame in frames for c in frame.columns if frame[c].dtype == object
              for v in pd.unique(frame[c].dropna()) if isinstance(v, str)]
    try:
        "\n".join(texts).encode(dialect["encoding"])
    except UnicodeEncodeError:
        dialect["encoding"] = "utf-8-sig"
    return dialect


def csv_bytes(frame: pd.DataFrame, dialect: dict) -> bytes:
    """``frame`` as CSV text in ``dialect`` (:func:`csv_dialect`), no index, ``\n`` line ends."""
    text = frame.to_csv(index=False, lineterminator="\n", sep=dialect["sep"], decimal=dialect["decimal"])
    return text.encode(dialect["encoding"])


def labels_as_text(released: pd.DataFrame, value_labels: dict[str, dict], variables) -> pd.DataFrame:
    """The released frame as CSV and Parquet publish it: each variable with merged categories
    (``variables``) carries its label text, every value replaced by its released label ("17 – 30 (14
    categories)", an original category by its value label, else its own text; missing stays missing).
    A file without value labels cannot say that the code 81 of a merged age band is not an age of 81;
    SPSS and Stata files keep the codes with their value labels (issue 34: "CSV and Parquet carry the
    label text"; sdcMicro's ``globalRecode`` likewise releases a recoded key as a factor of its
    labels). ``value_labels.csv`` documents the codes either way."""
    out = released.copy()
    for variable in variables:
        if variable not in out.columns:
            continue
        mapping = {plain_category(code): str(text) for code, text in value_labels.get(variable, {}).items()}
        column = out[variable]
        texts = {v: mapping.get(plain_category(v), str(plain_category(v))) for v in pd.unique(column.dropna())}
        out[variable] = column.map(texts).astype(object).where(column.notna(), None)
    return out


def label_table(value_labels: dict[str, dict]) -> pd.DataFrame:
    """``value_labels.csv``: one row per labelled code (``variable``, ``code``, ``label``), the
    variables in column order and their codes in label order (written in the release's CSV dialect,
    :func:`csv_dialect`)."""
    rows = [(variable, code, label) for variable, mapping in value_labels.items() for code, label in mapping.items()]
    return pd.DataFrame(rows, columns=["variable", "code", "label"], dtype=object)


def wave_labels(source: Path, spec: SurveySpec) -> FileContents | None:
    """The wave file's labels and missing codes: the metadata pyreadstat reads from SPSS, Stata and
    SAS files, the code lists of Argus data (its ``.rda``, the spec's ``source.metadata``); None for
    formats that keep none (CSV, Parquet, workbooks)."""
    metadata = source_metadata(spec)
    fmt = file_format(source, default=spec.source.format, metadata=metadata)
    if fmt not in ("spss", "stata", "sas", "xport", "argus"):
        return None
    return read_with_metadata(source, default_format=spec.source.format, metadata=metadata)


def encode(frame: pd.DataFrame, fmt: str, labels: FileContents | None = None, *,
           value_labels: dict[str, dict] | None = None, dialect: dict | None = None) -> bytes:
    """The bytes of ``frame`` in release format ``fmt``; ``labels``: the source file's metadata
    (variable labels, measures, user-missing codes); ``value_labels``: the released value labels
    (``{column: {code: label}}``, :meth:`~sdc_dagster.releases.categories.ReleasedCoding.value_labels`;
    the source's when not given); ``dialect``: a CSV file's (:func:`csv_dialect`; default
    :data:`PLAIN_CSV`)."""
    if fmt == "parquet":
        return parquet_bytes(frame)
    if fmt == "csv":
        return csv_bytes(frame, dialect or PLAIN_CSV)
    import pyreadstat

    if value_labels is None:
        value_labels = labels.value_labels if labels is not None else {}
    options = _label_options(frame, fmt, labels, value_labels)
    writer = {"spss": pyreadstat.write_sav, "stata": pyreadstat.write_dta, "xport": pyreadstat.write_xport}[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / FILE_NAMES[fmt]
        try:
            writer(frame, str(path), **options)
        except (ValueError, TypeError, pyreadstat.ReadstatError, pyreadstat.PyreadstatError) as exc:
            raise SDCInputError(f"the released variant cannot be written as {fmt} ({exc}); "
                                "choose other release.formats in the spec") from exc
        return pin_timestamp(path.read_bytes(), fmt)


def _label_options(frame: pd.DataFrame, fmt: str, labels: FileContents | None, value_labels: dict) -> dict:
    """pyreadstat writer options carrying the source's variable labels, the released value labels
    (those whose values fit the released column's type: a recode to text drops numeric labels;
    Stata labels integers only), SPSS measurement levels and SPSS user-missing codes (at most
    three, as SPSS allows)."""
    columns = set(frame.columns)
    numeric = {c for c in columns if pd.api.types.is_numeric_dtype(frame[c])}
    options: dict = {}
    if labels is not None:
        options["column_labels"] = {c: label for c, label in labels.column_labels.items() if c in columns}
    if fmt == "xport":
        return options

    def fits(column, value) -> bool:
        if isinstance(value, str):
            return fmt == "spss" and column not in numeric
        is_number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        return column in numeric and is_number and (fmt == "spss" or float(value).is_integer())

    written = {}
    for column, mapping in value_labels.items():
        if column in columns and mapping and all(fits(column, v) for v in mapping):
            written[column] = {(int(v) if fmt == "stata" else v): text for v, text in mapping.items()}
    options["variable_value_labels"] = written
    if fmt == "spss" and labels is not None:
        options["variable_measure"] = {c: m for c, m in labels.measures.items() if c in columns}
        options["missing_ranges"] = {
            c: list(codes[:3]) for c, codes in labels.user_missing.items()
            if c in columns and all(fits(c, v) for v in codes)
        }
    return options
