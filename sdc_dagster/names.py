"""Safe names: survey names, plan names and wave ids become file and folder names under the data
home (``landing/<survey>/<wave>.csv``, ``storage/<survey>/<asset>/<wave>.parquet``,
``releases/<survey>/<wave>/<plan>/``, ``reports/<survey>/<wave>.html``).

Two guards keep every such path inside its folder of the data home:

1. :func:`check_name`: a name must match its rule (:data:`RULES`) before it is used at all; a wave
   id of ``../../x``, ``/tmp/x``, ``a/b`` or the empty string is refused with the rule.
2. :func:`inside`: a path joined from names is normalised and must lie inside its root folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sdc_dagster.errors import SDCInputError

#: The longest name of any kind.
MAX_LENGTH = 64

# Survey and plan names are also parts of Dagster names (asset keys, jobs, partition sets), which
# allow letters, digits and _ only.
_IDENTIFIER = re.compile(rf"[A-Za-z][A-Za-z0-9_]{{0,{MAX_LENGTH - 1}}}")
_IDENTIFIER_RULE = f"a letter, then letters, digits or _ (at most {MAX_LENGTH} characters)"
# Wave ids (and every partition key) are file names: no separator, no "..", no leading "." or "-".
_WAVE = re.compile(rf"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_LENGTH - 1}}}")
_WAVE_RULE = (f"1 to {MAX_LENGTH} letters, digits, '_', '-' or '.', starting with a letter or digit, "
              "without '..'")

#: Kind of name -> (pattern, the rule in words).
RULES = {
    "survey name": (_IDENTIFIER, _IDENTIFIER_RULE),
    "plan name": (_IDENTIFIER, _IDENTIFIER_RULE),
    "wave id": (_WAVE, _WAVE_RULE),
    "partition key": (_WAVE, _WAVE_RULE),
}


class UnsafeNameError(SDCInputError):
    """A survey name, plan name or wave id breaks its rule, or a path built from names would leave
    its folder; the message names the value and the rule."""


def name_problem(kind: str, value) -> str | None:
    """What is wrong with ``value`` as a name of ``kind`` (a key of :data:`RULES`), or None."""
    pattern, rule = RULES[kind]
    if isinstance(value, str) and pattern.fullmatch(value):
        return None
    return f"{kind} {value!r} is not allowed: use {rule}"


def check_name(kind: str, value) -> str:
    """``value`` if it is a safe name of ``kind`` (a key of :data:`RULES`), else :class:`UnsafeNameError`."""
    problem = name_problem(kind, value)
    if problem is not None:
        raise UnsafeNameError(problem)
    return value


def inside(root: str | Path, *parts: str) -> Path:
    """``root`` joined with ``parts``, normalised; :class:`UnsafeNameError` unless it lies strictly
    inside ``root``.

    Normalised without following symbolic links (``..`` and absolute parts are resolved in the
    text), so a landing folder, a storage folder or a wave file that is a link stays allowed, while
    no name can lead out of ``root``."""
    base = Path(os.path.abspath(root))
    path = Path(os.path.normpath(base.joinpath(*parts)))
    if base not in path.parents:
        raise UnsafeNameError(f"{'/'.join(map(str, parts))!r} leads to {path}, outside {base}: "
                              "names must stay inside the data home")
    return path
