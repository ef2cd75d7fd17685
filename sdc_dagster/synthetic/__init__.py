"""Synthetic data, seeded: the national census of persons on the 1-km grid
(:mod:`~sdc_dagster.synthetic.census`, SPEC §11.4) and the simulated survey of Młodak's
combined-risk paper (:mod:`~sdc_dagster.synthetic.survey`, SPEC §5.7), the demo's data.
"""
