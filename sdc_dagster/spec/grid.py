"""The census grid spec: which protection routes run and their parameters (SPEC §8.10, §8.11, §11.2).

YAML (``examples/grid/census_grid.yaml``) or a dict -> frozen dataclasses, without Dagster (the grid
assets receive it from the ``grid_spec`` resource, :class:`sdc_dagster.resources.grid.GridSpecResource`). Keys:
``routes`` (a non-empty list of ``cell_key`` / ``suppression``), ``swap`` (:class:`SwapSpec`),
``cell_key`` (:class:`CellKeySpec`) and ``suppression`` (:class:`SuppressionSpec`); every section
and parameter is optional and defaults to the published practice of the 2021 round. A wrong key or
value raises :class:`~sdc_dagster.errors.SDCInputError` naming the key and the rule broken.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import yaml

from sdc_dagster.errors import SDCInputError

#: The routes of protection of the tabulated grid (seed 002: cell key method, or suppression).
ROUTES: tuple[str, ...] = ("cell_key", "suppression")


@dataclass(frozen=True)
class SwapSpec:
    """SPEC §8.10 parameters (sdcMicro recordSwap): households matched on size, geography region > cell."""

    swaprate: float = 0.05
    k_anonymity: int = 3
    risk_variables: tuple[str, ...] = ("sex", "age_group")
    seed: int = 2021


@dataclass(frozen=True)
class CellKeySpec:
    """SPEC §8.11 parameters: p-table D, V, js (sdcTools ptable) and the seed of the record keys."""

    max_deviation: int = 2
    variance: float = 1.05
    threshold: int = 1
    seed: int = 2021


@dataclass(frozen=True)
class SuppressionSpec:
    """SPEC §11.2 parameters; "distribution" reads the national totals of the resident population."""

    k: int = 3
    strategy: str = "distribution"
    tie_only: bool = True
    seed: int = 2021


SECTIONS = {"swap": SwapSpec, "cell_key": CellKeySpec, "suppression": SuppressionSpec}


@dataclass(frozen=True)
class GridSpec:
    """A grid spec: the routes in canonical order (:data:`ROUTES`) and the parameters of every step."""

    routes: tuple[str, ...] = ROUTES
    swap: SwapSpec = field(default_factory=SwapSpec)
    cell_key: CellKeySpec = field(default_factory=CellKeySpec)
    suppression: SuppressionSpec = field(default_factory=SuppressionSpec)


def spec_parameters(section) -> dict:
    """The parameters of one section as plain JSON values (tuples as lists), as manifests record them."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(section).items()}


def release_parameters(spec: GridSpec) -> dict[str, dict]:
    """The parameters a grid release records and its audit replays: ``swap``, then the section of
    every route of ``spec`` in canonical order (:func:`spec_parameters` of each, its parameters in
    name order, as the manifest's JSON and the grid report's parameter table list them)."""
    return {step: dict(sorted(spec_parameters(getattr(spec, step)).items())) for step in ("swap", *spec.routes)}


def grid_spec_document(spec: GridSpec) -> dict:
    """The mapping :func:`parse_grid_spec` reads back as ``spec``: ``routes`` and every section."""
    return {"routes": list(spec.routes), **{key: spec_parameters(getattr(spec, key)) for key in SECTIONS}}


def _value(where: str, value, annotation: str):
    """``value`` checked against a field's annotation (int, float, bool, str, tuple[str, ...])."""
    if annotation == "bool":
        if isinstance(value, bool):
            return value
    elif annotation == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif annotation == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif annotation == "str":
        if isinstance(value, str):
            return value
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    expected = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a text"}
    raise SDCInputError(f"{where}: must be {expected.get(annotation, 'a list of column names')}, got {value!r}")


def _section(source: str, key: str, raw) -> object:
    cls = SECTIONS[key]
    if raw is None:
        return cls()
    if not isinstance(raw, dict):
        raise SDCInputError(f"{source}, key {key!r}: must be a mapping of parameters, got {raw!r}")
    known = {f.name: f.type for f in fields(cls)}
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise SDCInputError(f"{source}, key {key!r}: unknown parameter {unknown[0]!r} (known: {', '.join(known)})")
    return cls(**{name: _value(f"{source}, key '{key}.{name}'", value, known[name]) for name, value in raw.items()})


def parse_grid_spec(raw, *, source: str = "grid spec") -> GridSpec:
    """A :class:`GridSpec` from a mapping (a parsed YAML file); ``source`` names it in error messages."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SDCInputError(f"{source}: expected a mapping of routes, swap, cell_key, suppression")
    unknown = sorted(set(raw) - {"routes", *SECTIONS})
    if unknown:
        raise SDCInputError(f"{source}: unknown key {unknown[0]!r} (known: routes, {', '.join(SECTIONS)})")
    routes = raw.get("routes", list(ROUTES))
    if not isinstance(routes, (list, tuple)) or not routes or any(r not in ROUTES for r in routes):
        raise SDCInputError(f"{source}, key 'routes': a non-empty list of {list(ROUTES)}, got {routes!r}")
    return GridSpec(routes=tuple(r for r in ROUTES if r in routes),
                    **{key: _section(source, key, raw.get(key)) for key in SECTIONS})


def load_grid_spec(path: str | Path) -> GridSpec:
    """The :class:`GridSpec` of a YAML file."""
    return parse_grid_spec(yaml.safe_load(Path(path).read_text()), source=f"grid spec {path}")
