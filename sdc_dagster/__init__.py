"""sdc-dagster: statistical disclosure control engine (framework-free) and its Dagster assets.

The engine lives in this package and never imports Dagster (except ``definitions``, which
assembles the Dagster code location from ``sdc_dagster.assets`` and ``sdc_dagster.resources``).

Those two subpackages are the repository's top-level folders ``assets/`` and ``resources/``: a
wheel installs them inside this package (``package-dir`` in pyproject.toml). In a checkout the
folders stay beside this one, so the checkout's root joins this package's search path; the
subpackages then come from the same checkout as the engine, whichever install the interpreter has.
"""

from pathlib import Path as _Path

__version__ = "0.1.0"

_checkout = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "assets").is_dir() and (_checkout / "assets" / "__init__.py").is_file():
    __path__.append(str(_checkout))
