"""``python -m sdc_dagster.cli``: the ``sdc`` command."""

from sdc_dagster.cli import command

command()
