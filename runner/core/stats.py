"""Small, dependency-free summaries used by every table."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable


def median(values: Iterable[float]) -> float | None:
    data = [v for v in values if v is not None]
    return statistics.median(data) if data else None


def mean(values: Iterable[float]) -> float | None:
    data = [v for v in values if v is not None]
    return statistics.fmean(data) if data else None


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


def percentile(values: Iterable[float], q: float, weights: Iterable[float] | None = None) -> float | None:
    """The q-th percentile (0-100). Unweighted: linear interpolation between closest ranks (numpy's
    default). Weighted: the smallest value whose cumulative weight reaches q % of the total, so a
    value carried by several tokens counts once per token."""
    return percentiles(values, (q,), weights)[0]


def percentiles(
    values: Iterable[float], qs: Iterable[float], weights: Iterable[float] | None = None
) -> list[float | None]:
    """`percentile` at each of `qs`, from one sort of the values (a table asks three of each
    figure of every level)."""
    pairs = [(v, w) for v, w in zip(values, weights if weights is not None else _ones(), strict=False) if v is not None]
    if not pairs:
        return [None for _ in qs]
    if weights is None:
        data = sorted(v for v, _ in pairs)
        return [_interpolated(data, q) for q in qs]
    pairs.sort()
    total = sum(w for _, w in pairs)
    return [_weighted(pairs, total, q) for q in qs]


def _interpolated(data: list[float], q: float) -> float:
    rank = (len(data) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (rank - low)


def _weighted(pairs: list[tuple[float, float]], total: float, q: float) -> float:
    running = 0.0
    for value, weight in pairs:
        running += weight
        if running >= total * q / 100 - 1e-12:
            return value
    return pairs[-1][0]


def weighted_mean(values: Iterable[float], weights: Iterable[float]) -> float | None:
    pairs = [(v, w) for v, w in zip(values, weights, strict=True) if v is not None]
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total else None


# The normal quantile of a two-sided 95 % interval.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, total: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (95 % by default): the bounds p for which the
    observed share lies within z standard errors of p. Unlike the normal approximation it stays in
    [0, 1] and is not empty at 0 or n successes. None when nothing was counted."""
    if total <= 0:
        return None
    if not 0 <= successes <= total:
        raise ValueError(f"successes {successes} outside 0..{total}")
    share = successes / total
    z2 = z * z
    centre = (share + z2 / (2 * total)) / (1 + z2 / total)
    half = z * math.sqrt(share * (1 - share) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def _ones() -> Iterable[float]:
    while True:
        yield 1.0
