"""The census grid's table (SPEC §11.1): its variables, GEOSTAT cell ids and the tabulation of
persons into grid counts (:mod:`~sdc_dagster.grid.counts`), below the methods that protect
and measure it.
"""
