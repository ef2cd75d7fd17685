"""What a methodologist checks in a released safe file, read back from the bytes as published
(issue 34): written here from the files alone, with no function of sdc-dagster, so that it tests
the release rather than repeating it.

* **faithful categories**: for every categorical key and every category c of the original file
  (by its label where the file has value labels), the released file has at most as many records
  with c as the original: a merged category never wears one member's code or label (SPEC §8.2).
  Keys a perturbative step (PRAM) changed at random are exempt, and listed;
* **whole numbers stay whole**: a key whose original values are all whole numbers has no
  fractional value in the released file (released text such as a band "(20,25]" is not a number);
* **utility limits**: the share of each categorical key's values suppressed by the release (the
  values missing in the released file beyond those missing in the original, over the records) is
  at most the spec's limit; the share of the keys (categorical and continuous) the file carries none
  of (not in it, or at most one distinct value where the original has two or more) is at most the
  spec's ``max_keys_not_released`` (issues 34, 38);
* **no more decimals than the original**: no numeric column of the released file has values with
  more decimals than the original's (a microaggregated log income published with 6 decimals was
  released as 10.718007666666665: the new-user trial of issue 34; mu-Argus's ``<DECIMALS>``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

#: The perturbative steps that may legitimately move records between categories.
PERTURBING_CATEGORIES = ("pram",)


@dataclass
class ReleaseProperties:
    """The four properties of one released safe file: the breaches found (empty: it holds)."""

    file: str
    safe_file: str = ""
    more_than_original: list[str] = field(default_factory=list)
    fractional: list[str] = field(default_factory=list)
    over_limit: list[str] = field(default_factory=list)
    more_decimals: list[str] = field(default_factory=list)
    exempt: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.more_than_original or self.fractional or self.over_limit or self.more_decimals)


def _read(path: Path, options: dict | None = None) -> pd.DataFrame:
    """A data file with value labels applied (SPSS/Stata), as text where the file stores text."""
    suffix = path.suffix.lower()
    if suffix in (".sav", ".zsav", ".dta"):
        import pyreadstat

        reader = pyreadstat.read_sav if suffix != ".dta" else pyreadstat.read_dta
        data, _ = reader(str(path), apply_value_formats=True)
        return data
    if suffix == ".parquet":
        return pd.read_parquet(path)
    # the spec's source.options: the CSV dialect, with ``header: false`` for a file without names
    # (its columns are then V1..Vn, as R names them)
    csv_options = {k: v for k, v in (options or {}).items() if k in ("sep", "encoding", "decimal", "quotechar")}
    if (options or {}).get("header") is False:
        csv_options["header"] = None
        frame = pd.read_csv(path, **csv_options)
        return frame.set_axis([f"V{i + 1}" for i in range(frame.shape[1])], axis=1)
    return pd.read_csv(path, **csv_options)


def _as_text(values: pd.Series) -> pd.Series:
    """Categories compared as text: a whole float as an integer ("3.0" and 3 are the same code)."""
    values = values.dropna()
    numbers = pd.to_numeric(values, errors="coerce")
    whole = numbers.notna() & np.isclose(numbers.fillna(0) % 1, 0)
    text = values.astype(str).str.strip()
    text[whole] = numbers[whole].astype("int64").astype(str)
    return text[text != ""]


def _whole_numbered(values: pd.Series) -> bool:
    numbers = pd.to_numeric(values.dropna(), errors="coerce")
    return bool(numbers.notna().all() and len(numbers) and np.all(numbers == np.round(numbers)))


#: Decimals a value is read with at most (to 1e-12 relative, about a double's 12 significant digits);
#: a value needing more counts as :data:`MORE_DECIMALS`.
MOST_DECIMALS = 15
MORE_DECIMALS = MOST_DECIMALS + 1


def _decimals(values: pd.Series) -> int | None:
    """The least number of decimals d with every numeric value equal to itself rounded to d
    (to 1e-12 relative), :data:`MORE_DECIMALS` when none up to :data:`MOST_DECIMALS` is, None
    for a column without numbers (text, bands)."""
    numbers = pd.to_numeric(values.dropna(), errors="coerce").dropna().to_numpy(dtype=float)
    if not len(numbers):
        return None
    return next((d for d in range(MOST_DECIMALS + 1)
                 if np.allclose(numbers, np.round(numbers, d), rtol=1e-12, atol=0)), MORE_DECIMALS)


def released_folder(home: Path, survey: str, wave: str = "2024") -> Path | None:
    """The run folder of the wave's one release (``release.json``), or None when nothing was released."""
    record = home / "releases" / survey / wave / "release.json"
    return Path(json.loads(record.read_text())["folder"]) if record.is_file() else None


def _safe_file(folder: Path) -> Path:
    for name in ("protected.sav", "protected.dta", "protected.csv", "protected.parquet"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"no safe file in {folder}")


def read_safe_file(folder: Path) -> tuple[Path, pd.DataFrame]:
    """The release's safe file in the office's format and its records; a CSV release in the wave's
    dialect (releases.files.csv_dialect), which its manifest records."""
    safe = _safe_file(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    return safe, _read(safe, manifest["output"]["order"].get("csv") if safe.suffix == ".csv" else None)


#: The limit on the share of a key's values suppressed when the spec states none (issue 34: "e.g. at most 10 %").
DEFAULT_SUPPRESSED_SHARE = 0.10


def _limit(spec: dict, key: str) -> float:
    """The spec's limit on the share of a key's values suppressed, wherever the spec states it."""
    for section in ("utility", "limits"):
        limits = spec.get(section) or {}
        per_key = limits.get("max_suppressed_share_by_key") or {}
        if key in per_key:
            return float(per_key[key])
        for name in ("max_suppressed_share", "max_suppressed"):
            if name in limits:
                return float(limits[name])
    return DEFAULT_SUPPRESSED_SHARE


#: The limit on the share of the keys not released when the spec states none (its drafted default).
DEFAULT_KEYS_NOT_RELEASED = 0.5


def _keys_not_released(spec: dict, before: pd.DataFrame, after: pd.DataFrame) -> tuple[list[str], int]:
    """The spec's keys of the original with two or more distinct values that the safe file does not
    have or has with at most one distinct value, and the number of the spec's keys in the original."""
    keys = [name for name, variable in spec["variables"].items()
            if variable.get("role") in ("categorical_key", "continuous_key") and name in before.columns]
    lost = [name for name in keys if before[name].nunique() >= 2
            and (name not in after.columns or after[name].nunique() <= 1)]
    return lost, len(keys)


def check_release(original: Path, home: Path, survey: str, wave: str = "2024") -> ReleaseProperties:
    """The four properties of the wave's released safe file against the ``original`` file."""
    result = ReleaseProperties(original.name)
    folder = released_folder(home, survey, wave)
    if folder is None:
        result.more_than_original.append("nothing released")
        return result
    spec = yaml.safe_load((folder / "spec.yaml").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    safe, after = read_safe_file(folder)
    result.safe_file = safe.name
    source_options = (spec.get("source") or {}).get("options") or {}
    before = _read(original, source_options)
    variables = spec["variables"]
    perturbed = {s["parameters"].get("variable") for s in manifest.get("steps", [])
                 if s["method"] in PERTURBING_CATEGORIES}
    for name, variable in variables.items():
        role = variable.get("role")
        if name not in before.columns or name not in after.columns:
            continue
        if role == "categorical_key":
            if name in perturbed:
                result.exempt.append(name)
            else:
                counts_before = _as_text(before[name]).value_counts()
                counts_after = _as_text(after[name]).value_counts()
                shared = counts_after.index.intersection(counts_before.index)
                grown = counts_after[shared] > counts_before[shared]
                for category in shared[grown.to_numpy()]:
                    result.more_than_original.append(
                        f"{name}={category!r}: {counts_after[category]} released, {counts_before[category]} original")
            limit = _limit(spec, name)
            if len(after) == len(before):
                # the safe file's records are shuffled: the newly missing values are counted, not matched
                suppressed = float(after[name].isna().sum() - before[name].isna().sum()) / max(len(before), 1)
                if suppressed > limit + 1e-12:
                    result.over_limit.append(f"{name}: {suppressed:.1%} suppressed (limit {limit:.0%})")
        if role in ("categorical_key", "continuous_key") and _whole_numbered(before[name]):
            released = pd.to_numeric(after[name], errors="coerce").dropna()
            fractional = released[released != np.round(released)]
            if len(fractional):
                result.fractional.append(f"{name}: {len(fractional)} fractional values, e.g. {fractional.iloc[0]!r}")
    for name in before.columns.intersection(after.columns):
        if not pd.api.types.is_numeric_dtype(before[name]) or pd.api.types.is_bool_dtype(before[name]):
            continue
        published, released = _decimals(before[name]), _decimals(after[name])
        if published is not None and released is not None and released > published:
            shown = "more than 15" if released == MORE_DECIMALS else released
            result.more_decimals.append(f"{name}: {shown} decimals released, {published} in the original")
    lost, keys = _keys_not_released(spec, before, after)
    limit = float((spec.get("limits") or {}).get("max_keys_not_released", DEFAULT_KEYS_NOT_RELEASED))
    if keys and len(lost) / keys > limit + 1e-12:
        result.over_limit.append(f"{len(lost)} of {keys} keys not released ({', '.join(lost)}; limit {limit:.0%})")
    return result
