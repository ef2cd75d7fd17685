"""sdc-dagster: statistical disclosure control engine (framework-free) and its Dagster assets.

The engine lives in this package and never imports Dagster (except ``definitions``, which
assembles the Dagster code location from ``assets/`` and ``resources/``).
"""

__version__ = "0.1.0"
