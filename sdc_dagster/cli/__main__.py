"""``python -m sdc_dagster.cli``: the ``sdc`` command."""

import sys

from sdc_dagster.cli import main

sys.exit(main())
