"""The census grid spec as a configured resource: which routes run and the parameters of every step.

The grid assets receive one :class:`~sdc_dagster.spec.grid.GridSpec` from the ``grid_spec`` resource
(:class:`GridSpecResource`) instead of per-step op config, so the spec's frozen dataclasses are the
one place that names the parameters and their defaults. ``definitions.py`` configures it with the
bundled ``examples/grid/census_grid.yaml``; a run picks another spec file with the run config
``resources: {grid_spec: {config: {path: <file>}}}``, a test or a script holds a spec with
``GridSpecResource.of(spec)``.
"""

from __future__ import annotations

from dagster import ConfigurableResource
from yaml import safe_dump, safe_load

from sdc_dagster.errors import SDCInputError
from sdc_dagster.spec.grid import GridSpec, grid_spec_document, load_grid_spec, parse_grid_spec


class GridSpecResource(ConfigurableResource):
    """A grid spec given as the ``path`` of its YAML file or as its YAML ``yaml`` text (at most one);
    neither gives the published defaults (:class:`~sdc_dagster.spec.grid.GridSpec`)."""

    path: str = ""
    yaml: str = ""

    @classmethod
    def of(cls, spec: GridSpec) -> GridSpecResource:
        """The resource that holds ``spec`` (as YAML text)."""
        return cls(yaml=safe_dump(grid_spec_document(spec), sort_keys=False))

    def spec(self) -> GridSpec:
        """The :class:`~sdc_dagster.spec.grid.GridSpec`, read and validated
        (:class:`~sdc_dagster.errors.SDCInputError` naming the key and the rule broken)."""
        if self.path and self.yaml:
            raise SDCInputError("grid_spec resource: give the spec's path or its yaml text, not both")
        if self.path:
            return load_grid_spec(self.path)
        return parse_grid_spec(safe_load(self.yaml) if self.yaml else None, source="grid_spec resource yaml")
