"""A fleet's figures from capacity searches at several copy counts (`bench --copies 1,2,4`): how
much load N copies carry within the objectives, how well that scales, and how many copies a load
needs. The count always comes from what was measured at a copy count near it, never from one copy
times N: where the load is past every count measured, the largest count's capacity per copy is
carried on, and the answer says so.

Scaling efficiency is capacity(N) / (N x capacity(1)): 1.0 when N copies carry N times one copy's
load (the ideal line of the report), less when the routing, the shared endpoint or the client
cost some of it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from runner.core.typed_json import FlatJson, where_set
from runner.figures.capacity import CapacityFound


@dataclass(frozen=True)
class FleetPoint:
    """The most load `copies` copies carried within the objectives (None: even the first level missed)."""

    copies: int
    capacity: float | None


@dataclass(frozen=True)
class Scaling:
    copies: int
    capacity: float | None
    # capacity(N) / (N x capacity(1)); None without both capacities.
    efficiency: float | None
    # N x capacity(1): the ideal line.
    ideal: float | None


def scaling(points: list[FleetPoint]) -> list[Scaling]:
    """Each copy count measured, in order, with its efficiency against one copy's capacity."""
    ordered = sorted(points, key=lambda p: p.copies)
    one = next((p.capacity for p in ordered if p.copies == 1), None)
    rows = []
    for point in ordered:
        ideal = point.copies * one if one else None
        efficiency = point.capacity / ideal if ideal and point.capacity is not None else None
        rows.append(Scaling(point.copies, point.capacity, None if efficiency is None else round(efficiency, 3), ideal))
    return rows


@dataclass(frozen=True)
class CopiesNeeded:
    """How many copies carry `load`, and how that count was reached."""

    copies: int | None
    how: str


def copies_for(load: float, points: list[FleetPoint]) -> CopiesNeeded:
    """The fewest copies that carry `load` within the objectives: a count measured to carry it; else
    between two counts measured, the capacity read on the line between them; else past the largest
    count measured, its capacity per copy carried on (said). One count measured is no scaling
    measured: no count."""
    measured = sorted((p for p in points if p.capacity), key=lambda p: p.copies)
    if load <= 0:
        return CopiesNeeded(None, f"load {load:g}: nothing to carry")
    if len(measured) < 2:
        return CopiesNeeded(
            None,
            "scaling not measured: capacity at one copy count only (bench --copies 1,2,4 measures it); "
            "one copy times N is not a fleet's capacity",
        )
    for point in measured:
        if point.capacity is not None and point.capacity >= load:
            below = [p for p in measured if p.copies < point.copies]
            if below:
                low = below[-1]
                assert low.capacity is not None
                # Between two measured counts: the capacity on the line between them.
                for count in range(low.copies + 1, point.copies):
                    share = (count - low.copies) / (point.copies - low.copies)
                    if low.capacity + share * (point.capacity - low.capacity) >= load:
                        return CopiesNeeded(
                            count,
                            f"{count} copies: between {low.copies} (measured {low.capacity:g}) and "
                            f"{point.copies} (measured {point.capacity:g}), read on the line between them",
                        )
            return CopiesNeeded(point.copies, f"{point.copies} copies: measured to carry {point.capacity:g}")
    largest = measured[-1]
    assert largest.capacity is not None
    per_copy = largest.capacity / largest.copies
    count = math.ceil(load / per_copy)
    return CopiesNeeded(
        count,
        f"{count} copies: past the largest count measured ({largest.copies}, {largest.capacity:g}), at its "
        f"capacity per copy ({per_copy:g}); EXTRAPOLATED beyond what was measured",
    )


@dataclass(frozen=True)
class CopyCapacity:
    """One copy count's capacity search as advise reads it: the good requests a second at the most
    load the copies carried within the objectives (None: even the first level missed), and the
    evidence file it came from."""

    copies: int
    goodput_rps: float | None
    source: str


@dataclass(frozen=True)
class FleetMeasured:
    """One endpoint of inference components measured at several copy counts, whatever wrote it:
    one bench file per count, each recording the endpoint's copies (`runner.costing.fleet` reads
    those), or a bench file's own per-count section. What the fleet's count and price are read
    from: the capacity at each count, the instance the copies run on, and what one copy takes."""

    backend: str
    instance_type: str | None
    region: str | None
    accelerators_per_copy: int
    counts: tuple[CopyCapacity, ...]

    @property
    def points(self) -> list[FleetPoint]:
        return [FleetPoint(c.copies, c.goodput_rps) for c in sorted(self.counts, key=lambda c: c.copies)]

    def capacity_at(self, copies: int) -> float | None:
        """The good requests a second measured at exactly `copies` copies (None: not measured there)."""
        return next((c.goodput_rps for c in self.counts if c.copies == copies), None)


@dataclass
class CopyCount(FlatJson):
    """One copy count of `bench --copies` at one input length: the capacity search run with that
    many copies in service (absent where the count was marked, not measured: `marked` says why),
    the share of each prompt that was a shared prefix, and the scaling efficiency against one
    copy's capacity (runner/figures/fleet.py) with its ideal line, N x capacity(1)."""

    copies: int
    shared_share: float
    input_tokens: int | None = where_set()
    capacity: CapacityFound | None = where_set()
    marked: str | None = where_set()
    efficiency: float | None = where_set()
    ideal: float | None = where_set()
    # The endpoint's instances in service at this count (DescribeEndpoint CurrentInstanceCount), and
    # a note where the routing named was not what served it (PREFIX_AWARE on one instance).
    instances: int | None = where_set()
    routing_note: str | None = where_set()

    @property
    def found(self) -> float | None:
        """The most load this count carried within the objectives (None: none, or not measured)."""
        return self.capacity.capacity if self.capacity is not None else None


@dataclass
class FleetCopies(FlatJson):
    """One inference component measured at several copy counts: its endpoint's routing strategy as
    DescribeEndpointConfig gives it (a report groups runs by routing and shared share), the copy
    count it had before the run and what was done to give it back, and each count measured."""

    backend: str
    endpoint: str
    component: str
    routing: str
    copies_before: int
    prefix_length: int | None = where_set()
    concurrency_threshold: int | None = where_set()
    counts: list[CopyCount] = field(default_factory=list)
    restored: str | None = where_set()
    # What was done to the component's scalable target for the counts (dynamic scaling suspended),
    # and what was done to put its SuspendedState back.
    scaling: str | None = where_set()
    scaling_restored: str | None = where_set()
