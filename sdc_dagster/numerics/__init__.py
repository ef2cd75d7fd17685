"""Numerical building blocks shared by the risk and the loss measures: distances between records
(:mod:`~sdc_dagster.numerics.distance`), robust covariance (:mod:`~sdc_dagster.numerics.robust`) and
Poisson log-linear models of contingency tables (:mod:`~sdc_dagster.numerics.loglinear`).

Nothing here knows about risk, loss or protection: these modules import only
:mod:`sdc_dagster.errors` and :mod:`sdc_dagster.validation`.
"""
