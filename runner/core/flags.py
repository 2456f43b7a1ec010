"""A flag's number checked the same way by every command: out of range is one line that gives the
range, and a value that is not finite (`inf`, `nan`, `1e309`, which Python's float() takes) is
said to be so rather than "not above 0", and never reaches the evidence (strict JSON has no
Infinity)."""

from __future__ import annotations

import math

from runner.core.errors import RunnerError


def finite(flag: str, value: float, unit: str = "", text: str | None = None) -> float:
    """`value`, or one line saying it is not a finite number (`text`: the value as given, when it
    reads otherwise, such as `1e309` for inf)."""
    if not math.isfinite(value):
        given = text if text is not None else str(value)
        what = f"{value} is not" if given != str(value) else "not"
        raise RunnerError(f"{flag} {given}: {what} a finite number{' of ' + unit if unit else ''}")
    return value


def at_least(flag: str, value: float | None, least: float, unit: str = "") -> None:
    """Refuse a value below `least` (or not finite) in one line; None (the flag not given) passes."""
    if value is None:
        return
    finite(flag, value, unit)
    if value < least:
        raise RunnerError(f"{flag} {value:g}: must be at least {least:g}{' ' + unit if unit else ''}")


def above(flag: str, value: float | None, bound: float = 0.0, unit: str = "") -> None:
    """Refuse a value at or below `bound` (or not finite) in one line; None passes."""
    if value is None:
        return
    finite(flag, value, unit)
    if not value > bound:
        raise RunnerError(f"{flag} {value:g}: must be above {bound:g}{' ' + unit if unit else ''}")
