"""The problems of a spec found in one pass: each a :class:`~sdc_dagster.spec.survey.SpecError`
keyed by where it is written (``risk.k``, ``plans.p.steps[0]``), so that the message can name its
line, and independent parts are checked after one fails (:class:`Problems`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdc_dagster.errors import closest_name, did_you_mean
from sdc_dagster.spec.survey import SpecError


def expect(cond: bool, where: str, what: str) -> None:
    """Raise ``SpecError("<where>: expected <what>")``, keyed by ``where``, unless ``cond``."""
    if not cond:
        raise SpecError(f"{where}: expected {what}", key=where)


def spec_error(where: str):
    """The exception :func:`~sdc_dagster.validation.check_scalar` and ``check_option`` raise for a
    spec key: a :class:`SpecError` keyed by ``where`` (so that its YAML line is found)."""
    return lambda message: SpecError(message, key=where)


def as_mapping(value: Any, where: str) -> Mapping[str, Any]:
    """``value``, which must be a mapping (:func:`expect`)."""
    expect(isinstance(value, Mapping), where, f"a mapping, got {type(value).__name__}")
    return value


#: What Problems.attempt returns for a part that failed, where None would mean "not given".
FAILED = object()


class Problems:
    """The spec errors found so far, so that independent parts are checked after one fails."""

    def __init__(self):
        self.errors: list[SpecError] = []

    def collect(self, check, *args, default=None):
        """``check(*args)``, or ``default`` if it raised a :class:`SpecError` (recorded)."""
        try:
            return check(*args)
        except SpecError as error:
            self.errors.append(error)
            return default

    def attempt(self, check, *args, default=None):
        """:meth:`collect`, with ``default`` also if ``check`` recorded an error."""
        found = len(self.errors)
        value = self.collect(check, *args, default=default)
        return default if len(self.errors) > found else value

    def unknown_keys(self, value: Mapping, where: str, allowed: set[str]) -> None:
        """One error per key of ``value`` not in ``allowed``."""
        self.errors += [
            SpecError(f"{where}.{key}: unknown key; expected one of {sorted(allowed)}{did_you_mean(key, allowed)}",
                      key=f"{where}.{key}")
            for key in sorted(set(value) - allowed, key=str)
        ]

    def unknown_variables(self, where: str, value: Any, known: Mapping) -> list[str]:
        """One error per name in ``value`` (a name, a list of names or a mapping keyed by name) that is
        not a variable of the spec (``known``), keyed by where it is written (``where[j]`` for the j-th
        item of a list, ``where.<name>`` for a mapping key), with the closest variable's name; returns
        the unknown names."""
        if isinstance(value, str):
            items = [(value, where)]
        elif isinstance(value, Mapping):
            items = [(name, f"{where}.{name}") for name in value]
        elif isinstance(value, (list, tuple)):
            items = [(name, f"{where}[{j}]") for j, name in enumerate(value)]
        else:
            items = []
        unknown = [(name, key) for name, key in items if isinstance(name, str) and name not in known]
        for name, key in unknown:
            close = closest_name(name, known)
            # the misspelling may be the variable's own name (variables: educaton: ... with strata:
            # education, the data's column): the hint names both places
            hint = (f"; did you mean {close!r}? (or, if {name!r} is the data's column, the misspelt name is "
                    f"variables.{close})" if close is not None else f" (the variables: {', '.join(map(str, known))})")
            self.errors.append(SpecError(f"{where} names {name!r}, which is not a variable of the spec{hint}", key=key))
        return [name for name, _ in unknown]
