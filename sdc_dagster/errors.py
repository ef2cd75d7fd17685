"""Errors raised on bad input. Every message names the column (or spec key) and the rule broken."""


class SDCInputError(ValueError):
    """Input data or parameters break a rule; the message names the column and the rule."""


def require_columns(data, columns, *, role: str = "column") -> list[str]:
    """Return ``columns`` as a list, raising :class:`SDCInputError` for any not in ``data``."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise SDCInputError(
            f"{role} {missing[0]!r} is not in the data (available: {', '.join(map(str, data.columns))})"
        )
    return columns


class NotComputable(SDCInputError):
    """The data meet every input rule, but a measure is undefined on them: a key with one observed
    category, a variable without spread, a singular matrix, no value to compare, a search past its
    memory bound. The survey stages record the measure as not applicable, with this message as the
    reason, and go on with the wave; called on its own, the measure still raises."""
