"""Where sdc-dagster keeps its files, and the IO manager that stores asset outputs as Parquet.

Everything lives under the data home (:func:`sdc_home`): ``specs/`` (the user's survey specs),
``landing/<survey>/<wave>.<ext>`` (incoming wave files), ``storage/`` (asset outputs, one Parquet
file per asset and partition, readable by any tool), ``reports/``, ``releases/``, ``inputs/`` and
``dagster/`` (Dagster's local instance storage).
"""

from __future__ import annotations

import os
import pickle
import typing
from pathlib import Path

import pandas as pd
import platformdirs
from dagster import ConfigurableIOManager, InputContext, OutputContext

import sdc_dagster.examples
from sdc_dagster.files import write_atomic_with
from sdc_dagster.names import check_name, inside

#: The data home of a project folder: a working directory holding this folder uses it.
PROJECT_HOME = ".sdc_home"


def sdc_home() -> Path:
    """The data home, first of: ``$SDC_HOME`` (``sdc --home`` sets it); ``./.sdc_home`` when the
    working directory is a project folder (it holds a ``.sdc_home/`` folder, as a checkout does after
    ``make demo``); the per-user data folder (platformdirs: ``~/.local/share/sdc-dagster`` on Linux,
    ``~/Library/Application Support/sdc-dagster`` on macOS, ``%LOCALAPPDATA%\\sdc-dagster`` on Windows)."""
    if os.environ.get("SDC_HOME"):
        return Path(os.environ["SDC_HOME"]).resolve()
    if (Path.cwd() / PROJECT_HOME).is_dir():
        return (Path.cwd() / PROJECT_HOME).resolve()
    return Path(platformdirs.user_data_dir("sdc-dagster", appauthor=False)).resolve()


def user_specs_dir() -> Path:
    """Where the user's survey specs live (``sdc init`` writes there): ``<data home>/specs``."""
    return sdc_home() / "specs"


def bundled_examples() -> Path:
    """The demo specs and data shipped with the package (``sdc_dagster.examples``):
    ``sdc_dagster/examples`` of an installed wheel, the top-level ``examples/`` of a checkout."""
    for folder in sdc_dagster.examples.__path__:
        if (Path(folder) / "testdata.yaml").is_file():
            return Path(folder)
    raise FileNotFoundError(f"no testdata.yaml in {list(sdc_dagster.examples.__path__)}: a broken installation")


def spec_folders() -> list[Path]:
    """Where the survey specs are read from: ``[$SDC_SPECS]`` when set, else the bundled demo specs
    and ``<data home>/specs``."""
    if os.environ.get("SDC_SPECS"):
        return [Path(os.environ["SDC_SPECS"])]
    return [bundled_examples(), user_specs_dir()]


def table_spec_folders() -> list[Path]:
    """Where the table specs are read from (:mod:`sdc_dagster.spec.tables`): ``[$SDC_TABLES]`` when
    set, else the bundled demo table specs (``examples/tables``) and ``<data home>/tables``."""
    if os.environ.get("SDC_TABLES"):
        return [Path(os.environ["SDC_TABLES"])]
    return [bundled_examples() / "tables", sdc_home() / "tables"]


def landing_dir() -> Path:
    """The folder watched for new wave files: ``$SDC_HOME/landing``."""
    return sdc_home() / "landing"


def reports_dir() -> Path:
    """Where the HTML reports are written: ``$SDC_HOME/reports``."""
    return sdc_home() / "reports"


def releases_dir() -> Path:
    """Where every protected release is kept, versioned by run: ``$SDC_HOME/releases``."""
    return sdc_home() / "releases"


def inputs_dir() -> Path:
    """Content-addressed snapshots of the wave files that were read: ``$SDC_HOME/inputs``."""
    return sdc_home() / "inputs"


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    # Written beside the target then renamed: a failed write never leaves a partial file.
    write_atomic_with(path, lambda temporary: frame.to_parquet(temporary, index=True))


#: The pickle protocol of stored pipeline values: 5 (PEP 574), with which numpy arrays (the frames'
#: columns) are written straight from their memory to the file, and read back from it, without a copy
#: of the whole value in memory (issue 38: on the 1,000,000-record wave a variant is about 150 MB,
#: and ``pickle.dumps`` then ``write_bytes``, ``read_bytes`` then ``pickle.loads`` cost two to three
#: times the CPU seconds of ``pickle.dump`` and ``pickle.load`` on the file).
PICKLE_PROTOCOL = 5


def _write_pickle(value, path: Path) -> None:
    # streamed into the file beside the target, then renamed (as the Parquet files)
    def dump(temporary: Path) -> None:
        with temporary.open("wb") as file:
            pickle.dump(value, file, protocol=PICKLE_PROTOCOL)

    write_atomic_with(path, dump)


def _file(path: Path) -> Path:
    return path.parent / f"{path.name}.parquet"


def _pickle(path: Path) -> Path:
    return path.parent / f"{path.name}.pickle"


def storage_dir(base_dir: str | Path | None = None) -> Path:
    """Where asset outputs are stored: ``base_dir`` when given (the IO manager's), else
    ``<data home>/storage``."""
    return Path(base_dir) if base_dir else sdc_home() / "storage"


class StoredByEarlierVersion(RuntimeError):
    """A stored pipeline value the installed version cannot read back (its classes moved or changed)."""


def read_stored(path: Path):
    """A stored output: a pipeline value (``<path>.pickle``), ``<path>.parquet`` as a DataFrame, or
    the folder ``<path>/`` as a dict of DataFrames. ``path`` is ``<storage>/<asset key path>/<partition>``."""
    if _pickle(path).is_file():
        try:
            with _pickle(path).open("rb") as file:
                return pickle.load(file)
        except (ModuleNotFoundError, AttributeError, TypeError) as error:
            # a value stored by an earlier version whose classes have moved or changed shape
            raise StoredByEarlierVersion(
                f"{_pickle(path)} was stored by an earlier version of sdc-dagster ({error}); "
                "materialise this asset again for this partition (and the assets downstream of it)"
            ) from error
    if _file(path).is_file():
        return pd.read_parquet(_file(path))
    if path.is_dir():
        return {p.stem: pd.read_parquet(p) for p in sorted(path.glob("*.parquet"))}
    raise FileNotFoundError(f"no stored output at {path}.parquet; materialise it first")


def _optional(context: InputContext) -> bool:
    """Whether the input is typed ``Optional[...]`` (may load as None)."""
    return type(None) in typing.get_args(context.dagster_type.typing_type)


def stored_output(asset_path: list[str], partition: str = "all", *, base_dir: str | Path | None = None):
    """Read back what :class:`ParquetIOManager` stored for an asset partition (``base_dir``: the IO
    manager's, default ``<data home>/storage``)."""
    return read_stored(inside(storage_dir(base_dir), *asset_path, partition))


class ParquetIOManager(ConfigurableIOManager):
    """Stores DataFrame outputs as ``<base_dir>/<asset key path>/<partition>.parquet``.

    An output that is a dict of DataFrames becomes a folder ``<partition>/`` with one Parquet file
    per entry. A pipeline value (a frozen dataclass of :mod:`sdc_dagster.pipeline` with a
    ``stored_frames()`` method: a protected variant, the risk scores, ...) is stored whole as
    ``<partition>.pickle``, which the next asset loads, and its frames as Parquet beside it for any
    other reader (the frame named ``""`` as ``<partition>.parquet``, the others in the folder).
    Unpartitioned assets use the partition name ``all``.
    """

    base_dir: str = ""

    def _root(self) -> Path:
        return storage_dir(self.base_dir)

    def _path(self, context: InputContext | OutputContext) -> Path:
        """``<root>/<asset key path>/<partition>``; a partition key that is not a safe name (a wave id
        added by hand in the UI, say ``../x``) is refused (:mod:`sdc_dagster.names`), and the path
        must lie inside the root."""
        return self._partition_path(context, context.asset_partition_key if context.has_asset_partitions else None)

    def _partition_path(self, context: InputContext | OutputContext, partition: str | None) -> Path:
        """``<root>/<asset key path>/<partition>`` (``all`` for None), the partition key checked."""
        name = check_name("partition key", partition) if partition is not None else "all"
        return inside(self._root(), *context.asset_key.path, name)

    def handle_output(self, context: OutputContext, obj) -> None:
        path = self._path(context)
        if hasattr(obj, "stored_frames"):
            for name, frame in obj.stored_frames().items():
                _write_parquet(frame, _file(path) if name == "" else path / f"{name}.parquet")
            _write_pickle(obj, _pickle(path))
            context.add_output_metadata({"path": str(_pickle(path))})
        elif isinstance(obj, pd.DataFrame):
            _write_parquet(obj, _file(path))
            context.add_output_metadata({"path": str(_file(path))})
        elif isinstance(obj, dict) and all(isinstance(v, pd.DataFrame) for v in obj.values()):
            for name, frame in obj.items():
                _write_parquet(frame, path / f"{name}.parquet")
            context.add_output_metadata({"path": str(path)})
        else:
            raise TypeError(
                f"{context.asset_key.to_user_string()}: ParquetIOManager stores DataFrames, dicts of "
                f"DataFrames or pipeline values with stored_frames(), got {type(obj).__name__}"
            )

    def load_input(self, context: InputContext):
        """The stored output of the input's asset partition; for an unpartitioned asset reading a
        partitioned one (the grid release reading every region's tables), a dict partition -> stored
        output of every partition (Dagster's ``asset_partition_keys``: all partitions of the upstream).
        An input typed ``Optional`` loads the stored partitions only, and None when none is (a route
        of the grid spec that did not run, or not for every region: the asset says what it needs); a
        stored output missing otherwise is an error naming the asset and the partitions."""
        if not context.has_asset_partitions or context.has_partition_key:
            try:
                return read_stored(self._path(context))
            except FileNotFoundError as exc:
                raise FileNotFoundError(f"{context.asset_key.to_user_string()}: {exc}") from None
        stored, missing = {}, []
        for key in context.asset_partition_keys:
            try:
                stored[key] = read_stored(self._partition_path(context, key))
            except FileNotFoundError:
                missing.append(key)
        if _optional(context):
            return stored or None
        if missing:
            raise FileNotFoundError(
                f"{context.asset_key.to_user_string()}: no stored output of partition(s) {', '.join(missing)} "
                f"under {inside(self._root(), *context.asset_key.path)}; materialise them first")
        return stored
