"""sdc-dagster: statistical disclosure control engine (framework-free) and its Dagster assets.

The engine lives in this package and never imports Dagster (except ``definitions`` and ``cli``,
which assemble the Dagster code location from ``sdc_dagster.assets`` and ``sdc_dagster.resources``
and drive it).

Those two subpackages are the repository's top-level folders ``assets/`` and ``resources/``,
mapped into this package by setuptools (``package_dir`` in setup.py): a wheel installs them inside
it, an editable install (``pip install -e .``) resolves the same names to the checkout's folders.
"""

__version__ = "0.1.0"
