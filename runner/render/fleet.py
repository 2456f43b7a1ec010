"""A fleet's figures as the report draws them, from bench evidence's `fleet` section (`bench
--copies 1,2,4 --find-capacity`, runner/measure/fleet_copies.py): each component's capacity at each
copy count beside the ideal line N x capacity(1) and the scaling efficiency the evidence holds, and
the same fleet under several routing strategies compared at each shared share (goodput at the
capacity found, time to first token at a load every routing measured), with 95 % intervals where
the records hold enough requests for one. Nothing here draws: `plots` and `headline` render it.

A copy count the evidence marked (refused, never in service, a copy lost mid-level) is kept as
not measured with its reason, never as a capacity of zero."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from runner.core.evidence import EvidenceFile
from runner.core.records import Level
from runner.core.stats import Z_95, percentiles, wilson_interval
from runner.figures.capacity import CapacityFound
from runner.figures.fleet import CopyCount, FleetCopies
from runner.figures.levels import LevelSummary
from runner.measure.bench_file import BenchFile
from runner.render.headline import level_rows, run_label

Source = tuple[Path, EvidenceFile]
# A level label of `bench --copies` leads with its copy count ("2 copies, 500 in, 4 at a time").
COPIES_LABEL = re.compile(r"^(\d+) cop(?:y|ies), ")
NO_FLEET = "no fleet evidence given (python -m runner.bench --copies 1,2,4 --find-capacity on an inference component)"
# The routing strategies SageMaker offers (ProductionVariantRoutingConfig), for the line that says
# which are missing.
ROUTINGS = ("LEAST_OUTSTANDING_REQUESTS", "PREFIX_AWARE", "RANDOM")


def copies_in(label: str) -> int | None:
    """The copy count a level ran with, from its label (None: not a `--copies` level)."""
    found = COPIES_LABEL.match(label)
    return int(found.group(1)) if found else None


def fleet_files(sources: list[Source]) -> list[tuple[Path, BenchFile]]:
    """Bench evidence with a fleet section, oldest first (a later run of the same series wins)."""
    files = [(p, d) for p, d in sources if isinstance(d, BenchFile) and d.fleet]
    return sorted(files, key=lambda s: str(s[1].started_at))


@dataclass(frozen=True)
class CountPoint:
    """One copy count of a series: its capacity (None: not measured, or none within the
    objectives; `missing` says which), the ideal N x capacity(1) and the efficiency."""

    copies: int
    capacity: float | None
    ideal: float | None
    efficiency: float | None
    missing: str | None


@dataclass
class FleetSeries:
    """One component under one routing at one input length, across the copy counts measured."""

    path: Path
    evidence: BenchFile
    fleet: FleetCopies
    input_tokens: int | None
    shared_share: float
    mode: str | None = None
    points: list[CountPoint] = field(default_factory=list)
    # Which run, when the same component, routing and length are in several files.
    run: str | None = None

    @property
    def measured(self) -> list[CountPoint]:
        return [p for p in self.points if p.capacity is not None]

    @property
    def name(self) -> str:
        parts = [self.fleet.backend, self.fleet.routing, f"{self.shared_share:.0%} shared"]
        if self.input_tokens:
            parts.append(f"{self.input_tokens} in")
        return ", ".join(parts) + (f" ({self.run})" if self.run else "")


def missing_text(count: CopyCount) -> str:
    """Why a count has no capacity: marked (not measured, the evidence's line), or measured with
    none within the objectives."""
    if count.marked:
        return f"not measured: {count.marked}"
    return "none within the objectives" + (f" ({count.capacity.stopped})" if count.capacity else "")


def fleet_series(sources: list[Source]) -> list[FleetSeries]:
    """Every component's counts per routing and input length, in the order the evidence holds them."""
    series: list[FleetSeries] = []
    for path, evidence in fleet_files(sources):
        for fleet in evidence.fleet or []:
            lengths = dict.fromkeys(c.input_tokens for c in fleet.counts)
            for length in lengths:
                counts = sorted((c for c in fleet.counts if c.input_tokens == length), key=lambda c: c.copies)
                one = next((c.found for c in counts if c.copies == 1 and not c.marked), None)
                entry = FleetSeries(path, evidence, fleet, length, counts[0].shared_share)
                for count in counts:
                    found = count.found if not count.marked else None
                    ideal = count.ideal if count.ideal is not None else (count.copies * one if one else None)
                    entry.points.append(
                        CountPoint(
                            count.copies,
                            found,
                            ideal,
                            count.efficiency if found is not None else None,
                            None if found is not None else missing_text(count),
                        )
                    )
                    if count.capacity is not None and entry.mode is None:
                        entry.mode = count.capacity.mode
                series.append(entry)
    keys = [(s.fleet.backend, s.fleet.routing, s.input_tokens) for s in series]
    for entry, key in zip(series, keys, strict=True):
        if keys.count(key) > 1:
            entry.run = run_label(entry.evidence)
    return series


# -- intervals ---------------------------------------------------------------------------------


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(B <= k) for B ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def quantile_interval(values: list[float], q: float, z: float = Z_95) -> tuple[float, float] | None:
    """The distribution-free interval of the q-quantile (0-1) from order statistics: the sorted
    values at ranks l and u, where the count of values below the true quantile (binomial n, q)
    falls in [l, u) with at least the confidence of z (two-sided, 95 % by default). None when the
    requests are too few for both bounds (a p95 needs about 60 for an upper one)."""
    data = sorted(values)
    n = len(data)
    tail = (1 - math.erf(z / math.sqrt(2))) / 2
    if n == 0:
        return None
    cdf = [binomial_cdf(k, n, q) for k in range(n + 1)]
    # Lower rank l (1-based): the largest with P(B <= l - 1) <= tail; upper u: the smallest with
    # P(B <= u - 1) >= 1 - tail.
    low = max((k + 1 for k in range(n) if cdf[k] <= tail), default=0)
    high = min((k + 1 for k in range(n) if cdf[k] >= 1 - tail), default=n + 1)
    if low < 1 or high > n:
        return None
    return data[low - 1], data[high - 1]


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95 % interval (None where the evidence cannot give one)."""

    value: float
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class RoutingPoint:
    """One routing at one shared share, at the copy count compared: the good requests per second at
    the capacity found (its interval from the share of that level's requests within the
    objectives), and TTFT p50 and p95 at `ttft_at`, the heaviest load every routing measured there."""

    routing: str
    backend: str
    shared_share: float
    goodput: Estimate | None
    ttft_at: str | None
    ttft_p50: Estimate | None
    ttft_p95: Estimate | None


@dataclass(frozen=True)
class RoutingComparison:
    copies: int
    points: list[RoutingPoint]


def level_of(series: FleetSeries, copies: int, value: float) -> tuple[Level, LevelSummary, list[float]] | None:
    """The level of `series` at `copies` and load `value`: its summary and its requests' TTFTs."""
    for backend, level, summary in level_rows(series.evidence):
        if (
            backend == series.fleet.backend
            and copies_in(level.label) == copies
            and level.input_tokens == series.input_tokens
            and level.mode == series.mode
            and level.value == value
        ):
            ttfts = [
                r.ttft_s
                for r in series.evidence.records
                if r.backend == backend
                and r.label == level.label
                and r.ok
                and not r.cold_start
                and r.ttft_s is not None
            ]
            return level, summary, ttfts
    return None


def goodput_figure(search: CapacityFound, series: FleetSeries, copies: int) -> Estimate | None:
    """Good requests/s at the capacity found, with the Wilson interval of its share within the
    objectives carried to requests/s (the level's judged requests over its wall time)."""
    best = search.at_capacity
    if best is None or best.goodput_rps is None:
        return None
    found = level_of(series, copies, best.value)
    graded = found[1].goodput if found else None
    duration = found[1].duration_s if found else None
    if graded is None or not graded.judged or not duration:
        return Estimate(best.goodput_rps)
    bounds = wilson_interval(graded.met, graded.judged)
    assert bounds is not None
    rate = graded.judged / duration
    return Estimate(best.goodput_rps, bounds[0] * rate, bounds[1] * rate)


def ttft_figures(ttfts: list[float]) -> tuple[Estimate | None, Estimate | None]:
    """TTFT p50 and p95 with their distribution-free intervals, in seconds."""
    if not ttfts:
        return None, None
    p50, p95 = percentiles(ttfts, (50, 95))
    assert p50 is not None and p95 is not None
    figures = []
    for value, q in ((p50, 0.5), (p95, 0.95)):
        bounds = quantile_interval(ttfts, q)
        figures.append(Estimate(value, *bounds) if bounds else Estimate(value))
    return figures[0], figures[1]


def routing_comparison(sources: list[Source]) -> RoutingComparison | str:
    """The routings given compared at the largest copy count every one of them measured, or the
    reason they cannot be (one routing only: which are missing)."""
    series = [s for s in fleet_series(sources) if s.mode is not None]
    if not fleet_files(sources):
        return NO_FLEET
    routings = sorted({s.fleet.routing for s in fleet_series(sources)})
    if len(routings) < 2:
        files = ", ".join(p.name for p, _ in fleet_files(sources))
        others = ", ".join(r for r in ROUTINGS if r not in routings)
        return (
            f"only {routings[0] if routings else 'one routing'} measured ({files}): give bench --copies evidence of the "
            f"same fleet under another RoutingStrategy ({others}) to compare routing"
        )
    measured = [{p.copies for s in series if s.fleet.routing == r for p in s.measured} for r in routings]
    common = set.intersection(*measured)
    if not common:
        counts = "; ".join(f"{r}: {sorted(m) or 'none'}" for r, m in zip(routings, measured, strict=True))
        return f"no copy count measured under every routing ({counts})"
    copies = max(common)
    chosen: dict[tuple[str, str, float], FleetSeries] = {}
    for entry in series:
        if any(p.copies == copies for p in entry.measured):
            # A later run of the same routing and share replaces an earlier one (files oldest first).
            chosen[(entry.fleet.routing, entry.fleet.backend, entry.shared_share)] = entry
    points = []
    for (routing, backend, share), entry in sorted(chosen.items()):
        count = next(c for c in entry.fleet.counts if c.copies == copies and c.input_tokens == entry.input_tokens)
        search = count.capacity
        assert search is not None
        # TTFT at the heaviest load every routing measured at this share and count: the same load.
        tried = [
            {t.value for c in s.fleet.counts if c.copies == copies and c.input_tokens == s.input_tokens and c.capacity
             for t in c.capacity.tried}
            for (_, b, sh), s in chosen.items() if b == backend and sh == share
        ]  # fmt: skip
        both = set.intersection(*tried) if len(tried) > 1 else set()
        ttft_at, p50, p95 = None, None, None
        if both:
            value = max(both)
            found = level_of(entry, copies, value)
            if found:
                ttft_at = found[0].label
                p50, p95 = ttft_figures(found[2])
        points.append(RoutingPoint(routing, backend, share, goodput_figure(search, entry, copies), ttft_at, p50, p95))
    return RoutingComparison(copies, points)
