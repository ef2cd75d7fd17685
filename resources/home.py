"""The data home as a configured resource: where the survey assets read wave files and write
snapshots, releases and reports, the grid assets read and swap the census region files and write
their release and report, and the sensors look for new files.

``definitions.py`` configures :class:`SdcHome` once from :func:`~sdc_dagster.resources.storage.sdc_home`
(``$SDC_HOME``, a project folder's ``.sdc_home/`` or the per-user data folder), next to the IO
manager's ``base_dir`` (``<home>/storage``), so that the assets and sensors never look a location up
themselves.
"""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource


class SdcHome(ConfigurableResource):
    """The data home (``path``) and its folders (the layout of :mod:`sdc_dagster.resources.storage`)."""

    path: str

    @property
    def root(self) -> Path:
        return Path(self.path)

    @property
    def landing(self) -> Path:
        """Incoming wave files: ``landing/<survey>/<wave>.<ext>``."""
        return self.root / "landing"

    @property
    def inputs(self) -> Path:
        """Content-addressed snapshots of the wave files that were read."""
        return self.root / "inputs"

    @property
    def releases(self) -> Path:
        """Every release decision, versioned by run."""
        return self.root / "releases"

    @property
    def reports(self) -> Path:
        """The HTML reports."""
        return self.root / "reports"

    @property
    def storage(self) -> Path:
        """The asset outputs (:class:`~sdc_dagster.resources.storage.ParquetIOManager`)."""
        return self.root / "storage"
