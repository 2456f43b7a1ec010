"""Small, dependency-free summaries used by every table."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable


def median(values: Iterable[float]) -> float | None:
    data = [v for v in values if v is not None]
    return statistics.median(data) if data else None


def value_range(values: Iterable[float]) -> tuple[float, float] | None:
    data = [v for v in values if v is not None]
    return (min(data), max(data)) if data else None


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_range(bounds: tuple[float, float] | None, digits: int = 1) -> str:
    if bounds is None:
        return "-"
    low, high = bounds
    return f"{low:.{digits}f}-{high:.{digits}f}"


def change_percent(old: float | None, new: float | None) -> str:
    if old in (None, 0) or new is None:
        return "-"
    return f"{(new - old) / old * 100:+.1f}%"


def counts(values: list[str]) -> str:
    """`a ×3, b` — each value with how often it occurs, most common first."""
    return ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in Counter(values).most_common()) or "-"
