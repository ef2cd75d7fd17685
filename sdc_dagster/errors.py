"""Errors raised on bad input. Every message names the column (or spec key) and the rule broken."""


class SDCInputError(ValueError):
    """Input data or parameters break a rule; the message names the column and the rule."""


def closest_name(name, choices) -> str | None:
    """The choice closest to a misspelt ``name`` (Python's :func:`difflib.get_close_matches`:
    Ratcliff/Obershelp similarity at least 0.6; else one differing only in case), or None."""
    import difflib

    choices = [str(c) for c in choices]
    close = difflib.get_close_matches(str(name), choices, n=1)
    if not close:  # a name differing only in case ("Age" for "age")
        close = [c for c in choices if c.lower() == str(name).lower()][:1]
    return close[0] if close else None


def did_you_mean(name, choices) -> str:
    """``"; did you mean 'occupation'?"`` naming the choice closest to a misspelt ``name``
    (:func:`closest_name`), or ``""`` when none is close."""
    close = closest_name(name, choices)
    return f"; did you mean {close!r}?" if close is not None else ""


def require_columns(data, columns, *, role: str = "column") -> list[str]:
    """Return ``columns`` as a list, raising :class:`SDCInputError` for any not in ``data`` (with the
    closest column, :func:`did_you_mean`)."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise SDCInputError(
            f"{role} {missing[0]!r} is not in the data (available: {', '.join(map(str, data.columns))})"
            + did_you_mean(missing[0], data.columns)
        )
    return columns


class NotComputable(SDCInputError):
    """The data meet every input rule, but a measure is undefined on them: a key with one observed
    category, a variable without spread, a singular matrix, no value to compare, a search past its
    memory bound. The survey stages record the measure as not applicable, with this message as the
    reason, and go on with the wave; called on its own, the measure still raises."""
