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
