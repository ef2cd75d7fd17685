"""Releases: what leaves the office, for the survey waves and the census grid alike (SPEC §8).

* :mod:`~sdc_dagster.releases.digests`: SHA-256 of every released and input file, the canonical
  bytes hashed, the wave snapshot (:class:`~sdc_dagster.releases.digests.WaveSnapshot`), package versions;
* :mod:`~sdc_dagster.releases.categories`: the released coding of merged categories and its invariant;
* :mod:`~sdc_dagster.releases.files`: the safe files (formats, value labels, order and ids);
* :mod:`~sdc_dagster.releases.manifest`: a plan's release decision on disk
  (:class:`~sdc_dagster.releases.manifest.ReleaseRecord` -> ``manifest.json`` or ``withheld.json``);
* :mod:`~sdc_dagster.releases.wave`: a variant's release decision and the wave's one release;
* :mod:`~sdc_dagster.releases.grid`: the census grid release;
* :mod:`~sdc_dagster.releases.replay`: ``sdc audit``, a release recomputed and compared byte for byte.

The first four sit below the survey stages (``pipeline/`` imports them: the release check
``released_categories``, a variant's release, the report's provenance); ``wave``, ``grid`` and
``replay`` call the stages and sit beside them. Nothing is imported here, so that importing a
lower module never loads the upper ones.
"""
