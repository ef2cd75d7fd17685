"""The demo survey specs (``*.yaml``), their data (``data/``) and the demo census grid (``grid/``):
``sdc_dagster.examples`` of an installed package (:func:`sdc_dagster.resources.storage.bundled_examples`)."""
