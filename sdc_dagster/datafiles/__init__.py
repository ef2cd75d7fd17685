"""Data files as other SDC tools and statistical offices publish them, read without a spec.

* :mod:`~sdc_dagster.datafiles.sniff`: what a file is by its first bytes, whatever its extension;
* :mod:`~sdc_dagster.datafiles.dialect`: a CSV's separator, quoting, header row, decimal mark and
  encoding, detected;
* :mod:`~sdc_dagster.datafiles.spreadsheets`: ``.xlsx``, ``.xls``, ``.ods`` workbooks (calamine);
* :mod:`~sdc_dagster.datafiles.argus`: mu-Argus and tau-Argus microdata and tabular data, fixed-width
  or free format, described by an ``.rda`` metadata file with ``.cdl`` code lists and ``.hrc``
  hierarchical code lists.

:func:`sdc_dagster.spec.reading.read_with_metadata` is the one reading path of the draft, of
``sdc check --data`` and of the wave ingest; it calls these. They import nothing above
:mod:`sdc_dagster.errors`.
"""
