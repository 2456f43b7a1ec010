"""The fleet question of `runner.advise --load RPS`: for a steady load in requests a second and
per-request objectives, how many of what carries it, at what price an hour and per million output
tokens. Pure: measured options and prices in, rows out.

- An endpoint of inference components is a fleet: its count comes from the capacity measured
  within the objectives at several copy counts and the scaling between them
  (`runner.figures.fleet.copies_for`), never from one copy times N. Each count is read from a
  bench file's own per-count searches (`bench --copies 1,2,4`, its `fleet` section), or from a
  bench file per count that records the endpoint's copies (its stack output's `copies`, held
  there by equal bounds while it was measured). Its instances are the copies' accelerators over the
  instance's (`catalog.backends.accelerators`).
- An instance billed by the hour that is not a fleet (EC2, a SageMaker real-time endpoint, an
  async endpoint) carries the load on one instance where its measured capacity does; past it
  there is no count: several of them were not measured together.
- An option billed by its requests (serverless, Custom Model Import, Bedrock, batch) is the
  month `runner.costing.advice` prices for the load held all day, spread over its 730 hours.
- $/M is the hour's price over the output tokens the load makes in that hour; where an instance
  type holds several GPUs, N copies packed on one instance are set against N one-GPU instances at
  each count measured, in $/M at the capacity within the objectives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from catalog.backends import accelerators
from catalog.prices import HOURS_PER_MONTH, Price
from runner.core.backend_entries import BackendEntry
from runner.core.errors import RunnerError
from runner.core.flags import finite
from runner.core.typed_json import FlatJson, where_set
from runner.costing.advice import SHAPES, Measured, Workload, advise_at
from runner.costing.arithmetic import usd_per_million
from runner.costing.billing_models import billing_model
from runner.costing.purchase import PurchasePrice, purchased
from runner.figures.fleet import CopyCapacity, FleetMeasured, copies_for

RATE_SUFFIXES = ("rps", "req/s", "/s")


def parse_load(text: str) -> float:
    """`--load`'s requests a second (`20`, `20rps`, `20/s`); anything else is one line."""
    raw = text.strip().lower()
    for suffix in RATE_SUFFIXES:
        if raw.endswith(suffix):
            raw = raw.removesuffix(suffix).strip()
            break
    else:
        if raw.endswith("users"):
            raise RunnerError(
                f"--load {text!r}: concurrent users are not a rate until a think time makes them one; "
                "give requests a second, e.g. --load 20rps"
            )
    try:
        value = float(raw)
    except ValueError:
        raise RunnerError(f"--load {text!r}: expected requests a second, e.g. --load 20 or --load 20rps") from None
    finite("--load", value, text=repr(text))
    if not value > 0:
        raise RunnerError(f"--load {text!r}: must be above 0 requests a second")
    return value


def at_load(workload: Workload, load_rps: float) -> Workload:
    """The workload held at `load_rps` all day: what an option billed by its requests is priced on."""
    return replace(workload, requests_per_day=load_rps * 86400, weights=SHAPES["flat"], shape="flat")


def recorded_copies(backend: BackendEntry) -> tuple[int | None, str]:
    """The copies an endpoint of inference components ran while its file was measured: its stack
    output's `copies`, where its bounds held it there; else None and why (nothing recorded: not
    a fleet)."""
    output = backend.raw.get("stack_output")
    if not isinstance(output, dict) or not isinstance(output.get("copies"), int):
        return None, ""
    copies, low, high = output["copies"], output.get("min_copies"), output.get("max_copies")
    if isinstance(low, int) and isinstance(high, int) and low != high:
        return None, (
            f"copies could scale between {low} and {high} while it was measured: not read as a count of "
            f"{copies} (deploy with minCopies = maxCopies = copies to measure one count)"
        )
    return copies, ""


@dataclass
class Fleet:
    """An endpoint of inference components measured at one or more copy counts, with the option
    (of its first file) it is priced and labelled by."""

    measured: FleetMeasured
    option: Measured

    @property
    def name(self) -> str:
        return self.option.name

    @property
    def gpus_per_instance(self) -> int:
        return accelerators(self.measured.instance_type or "") or 1

    def instances_for(self, copies: int) -> int:
        """Instances that hold `copies` copies: their accelerators over one instance's."""
        return math.ceil(copies * self.measured.accelerators_per_copy / self.gpus_per_instance)


def fleet_key(option: Measured) -> tuple[str, str | None, str | None, int]:
    """What makes counts one fleet: the backend, its instance type and region, and a copy's accelerators."""
    output = option.backend.raw.get("stack_output") or {}
    per_copy = output.get("accelerators_per_copy") if isinstance(output, dict) else None
    return (
        option.name,
        option.backend.output.instance_type or option.backend.spec.instance_type,
        option.backend.region or option.backend.output.region,
        per_copy if isinstance(per_copy, int) and per_copy > 0 else 1,
    )


def fleets_of(options: list[Measured]) -> tuple[list[Fleet], list[Measured], list[str]]:
    """The options that are counts of an endpoint's copies, grouped into fleets (one per backend,
    instance type, region and copy size), the options that are not, and what was not read."""
    groups: dict[tuple[str, str | None, str | None, int], tuple[list[CopyCapacity], Measured]] = {}
    rest, notices = [], []
    for option in options:
        found = option.copy_counts  # searched at several counts in one file (`bench --copies`)
        if not found:
            copies, why = recorded_copies(option.backend)
            if why:
                notices.append(f"{option.name} ({option.evidence}): {why}")
                continue
            if copies is None:
                rest.append(option)
                continue
            if option.capacity is None:
                notices.append(f"{option.name} ({option.evidence}) at {copies} copies: {option.capacity_why}")
                continue
            found = [CopyCapacity(copies, option.capacity.capacity_per_h / 3600, option.evidence)]
        counts, _ = groups.setdefault(fleet_key(option), ([], option))
        for count in found:
            if any(c.copies == count.copies for c in counts):
                notices.append(
                    f"{option.name} ({option.evidence}): {count.copies} copies measured twice; the first is read"
                )
            else:
                counts.append(count)
    fleets = [
        Fleet(
            FleetMeasured(name, instance_type, region, per_copy, tuple(sorted(counts, key=lambda c: c.copies))), first
        )
        for (name, instance_type, region, per_copy), (counts, first) in groups.items()
    ]
    return fleets, rest, notices


@dataclass
class FleetAdvice(FlatJson):
    """One option sized for the load: how many of what (`count` of `unit` on `instances` ×
    `instance_type`), its price an hour and per million output tokens, whether it carries the load
    within the objectives, how the count was reached and its arithmetic in one line."""

    option: str
    billing: str
    provenance: str | None
    meets: bool | None
    arithmetic: str
    how: str = ""
    why: str = ""
    count: int | None = None
    unit: str = ""
    instance_type: str | None = None
    instances: int | None = None
    usd_per_hour: float | None = None
    usd_per_million_output: float | None = None
    # What the hour was priced at (--purchase): the option's figure, or on-demand with why.
    priced_at: str | None = where_set()
    # Set where the count is past the largest copy count measured.
    extrapolated: str | None = where_set()

    @property
    def what(self) -> str:
        """`3 copies on ml.g6.xlarge (3 instances)`, `1 instance of ml.g6.xlarge`, or the option's name."""
        if self.count is None or not self.unit:
            return self.option
        if self.unit == "copies":
            held = f" ({self.instances} instance{'s' if self.instances != 1 else ''})"
            return f"{self.count} cop{'ies' if self.count != 1 else 'y'} on {self.instance_type}{held}"
        return f"{self.count} {self.unit} of {self.instance_type}"


def per_million(usd_per_hour: float | None, load_rps: float, output_tokens: int) -> float | None:
    """An hour's price over the output tokens `load_rps` requests of `output_tokens` make in it."""
    if usd_per_hour is None or not load_rps:
        return None
    return usd_per_million(usd_per_hour, load_rps * output_tokens * 3600)


def hourly(option: Measured, price: Price | None, purchase: str, figures: list[PurchasePrice]) -> tuple[float, str]:
    """An instance's hour at the purchase option asked for where it applies, else on-demand (said)."""
    bought = purchased(purchase, price, figures, f"{option.name} ({option.billing.value})")
    assert bought.price is not None and bought.price.usd_per_hour is not None
    return bought.price.usd_per_hour, bought.label


def _base(option: Measured, **fields: object) -> FleetAdvice:
    return FleetAdvice(option.name, option.billing.value, option.provenance, **fields)  # type: ignore[arg-type]


def size_fleet(
    fleet: Fleet,
    load_rps: float,
    workload: Workload,
    purchase: str,
    price: Price | None,
    figures: list[PurchasePrice],
) -> FleetAdvice:
    """The fewest copies that carry the load (copies_for), on the instances they need, priced."""
    option, measured = fleet.option, fleet.measured
    needed = copies_for(load_rps, measured.points)
    counted = ", ".join(f"{c.copies}: {c.goodput_rps:.3g}" for c in measured.counts if c.goodput_rps is not None)
    base = _base(option, meets=None, arithmetic=f"good requests/s measured at copies {counted}", how=needed.how)
    if needed.copies is None:
        return replace(base, why=needed.how, instance_type=measured.instance_type)
    if price is None or price.usd_per_hour is None:
        return replace(
            base,
            why="no price",
            count=needed.copies,
            unit="copies",
            instance_type=measured.instance_type,
            instances=fleet.instances_for(needed.copies),
        )
    usd, label = hourly(option, price, purchase, figures)
    instances = fleet.instances_for(needed.copies)
    usd_per_hour = instances * usd
    usd_m = per_million(usd_per_hour, load_rps, workload.output_tokens)
    arithmetic = (
        f"{needed.copies} × {measured.accelerators_per_copy} accelerator(s) ÷ {fleet.gpus_per_instance} per "
        f"{measured.instance_type} → {instances} instance(s) × ${usd:g}/h = ${usd_per_hour:,.2f}/h; ÷ "
        f"({load_rps:g} req/s × {workload.output_tokens} output tokens × 3600) = ${usd_m:,.2f}/M"
    )
    return replace(
        base,
        meets=True,
        arithmetic=arithmetic,
        count=needed.copies,
        unit="copies",
        instance_type=measured.instance_type,
        instances=instances,
        usd_per_hour=usd_per_hour,
        usd_per_million_output=usd_m,
        priced_at=label or None,
        extrapolated=needed.how if "EXTRAPOLATED" in needed.how else None,
    )


def size_single(
    option: Measured,
    load_rps: float,
    workload: Workload,
    purchase: str,
    price: Price | None,
    figures: list[PurchasePrice],
) -> FleetAdvice:
    """One instance where its measured capacity carries the load; past it no count (several were
    not measured together, and one times N is not their capacity)."""
    instance_type = option.backend.output.instance_type or option.backend.spec.instance_type
    base = _base(option, meets=None, arithmetic="", instance_type=instance_type)
    if option.capacity is None:
        why = f"no capacity measured within {workload.slo_text} ({option.capacity_why})"
        return replace(base, arithmetic="not sized", why=why)
    carried = option.capacity.capacity_per_h / 3600
    if carried < load_rps:
        return replace(
            base,
            meets=False,
            arithmetic=f"one instance carries {carried:.3g} good req/s within {workload.slo_text}",
            why=f"one instance carries {carried:.3g} good req/s, below {load_rps:g}; several were not measured "
            "together (one instance times N is not their capacity)",
        )
    if price is None or price.usd_per_hour is None:
        return replace(base, arithmetic="no price found", why="no price", count=1, unit="instance")
    usd, label = hourly(option, price, purchase, figures)
    usd_m = per_million(usd, load_rps, workload.output_tokens)
    arithmetic = (
        f"one instance carries {carried:.3g} good req/s ≥ {load_rps:g}: 1 × ${usd:g}/h; ÷ ({load_rps:g} req/s × "
        f"{workload.output_tokens} output tokens × 3600) = ${usd_m:,.2f}/M"
    )
    return replace(
        base,
        meets=True,
        arithmetic=arithmetic,
        how=f"measured to carry {carried:.3g} good req/s",
        count=1,
        unit="instance",
        usd_per_hour=usd,
        usd_per_million_output=usd_m,
        priced_at=label or None,
    )


def size_by_requests(
    option: Measured,
    load_rps: float,
    workload: Workload,
    purchase: str,
    price: Price | None,
    figures: list[PurchasePrice],
) -> FleetAdvice:
    """An option billed by its requests: its month at the load held all day, over 730 hours."""
    advice = advise_at(option, at_load(workload, load_rps), price, purchase, figures)  # its own order
    why = "; ".join(part for part in (advice.extrapolated, advice.why, *(advice.notes or [])) if part)
    if advice.monthly_usd is None:
        return _base(option, meets=advice.meets, arithmetic=advice.arithmetic, why=why)
    usd_per_hour = advice.monthly_usd / HOURS_PER_MONTH
    return _base(
        option,
        meets=advice.meets,
        arithmetic=f"{advice.arithmetic} ÷ {HOURS_PER_MONTH} h",
        how="scales by its own billing model",
        why=why,
        usd_per_hour=usd_per_hour,
        usd_per_million_output=per_million(usd_per_hour, load_rps, workload.output_tokens),
    )


def size(
    option: Measured,
    load_rps: float,
    workload: Workload,
    purchase: str,
    price: Price | None,
    figures: list[PurchasePrice],
) -> FleetAdvice:
    """A measured option that is not a fleet, sized by its billing model: an instance by the hour,
    or its requests."""
    sizer = size_single if billing_model(option.billing).hourly else size_by_requests
    return sizer(option, load_rps, workload, purchase, price, figures)


def rank_fleet(rows: list[FleetAdvice]) -> list[FleetAdvice]:
    """Those that carry the load first (measured counts before extrapolated ones), cheapest an hour first."""
    order = {True: 0, None: 1, False: 2}
    return sorted(
        rows,
        key=lambda r: (order[r.meets], r.extrapolated is not None, r.usd_per_hour is None, r.usd_per_hour or 0.0),
    )


def answer(ranked: list[FleetAdvice], load_rps: float, workload: Workload) -> str:
    """The one line that answers: the cheapest option that carries the load, or that none does."""
    winner = ranked[0] if ranked else None
    what = f"{load_rps:g} requests/s within {workload.slo_text}"
    if winner is None or winner.meets is not True or winner.usd_per_hour is None:
        return f"no measured option carries {what}"
    per_m = f", ${winner.usd_per_million_output:,.2f}/M output tokens" if winner.usd_per_million_output else ""
    label = ": EXTRAPOLATED past the largest copy count measured" if winner.extrapolated else ""
    return f"{what}: {winner.what} ({winner.option}), ${winner.usd_per_hour:,.2f}/h{per_m}{label}"


@dataclass
class PackedSide(FlatJson):
    """One side of the packing comparison at a copy count: the option, its instances, its hour, the
    good requests a second measured there and its $/M at that capacity (None with why where not
    measured)."""

    option: str
    instance_type: str | None
    instances: int
    usd_per_hour: float | None = None
    goodput_rps: float | None = None
    usd_per_million_output: float | None = None
    why: str = ""


@dataclass
class Packing(FlatJson):
    """N copies packed on instances of several GPUs against N one-GPU instances, at the capacity
    within the objectives measured at N copies on each."""

    copies: int
    packed: PackedSide
    spread: PackedSide | None = None
    why: str = ""


def _side(fleet: Fleet, copies: int, usd: float | None, output_tokens: int) -> PackedSide:
    instances = fleet.instances_for(copies)
    capacity = fleet.measured.capacity_at(copies)
    usd_per_hour = None if usd is None else instances * usd
    side = PackedSide(fleet.name, fleet.measured.instance_type, instances, usd_per_hour, capacity)
    if capacity is None:
        return replace(side, why=f"not measured at {copies} copies")
    if usd_per_hour is None:
        return replace(side, why="no price")
    return replace(side, usd_per_million_output=per_million(usd_per_hour, capacity, output_tokens))


def packing(fleets: list[Fleet], usd_of: dict[int, float | None], output_tokens: int) -> list[Packing]:
    """For each fleet on an instance type of several GPUs, each copy count it measured against as
    many one-GPU instances of the same model (`usd_of`: each fleet's hour by id)."""
    rows = []
    for packed in (f for f in fleets if f.gpus_per_instance > 1):
        model = packed.option.backend.model_id
        spread = [f for f in fleets if f.gpus_per_instance == 1 and f.option.backend.model_id == model]
        for count in packed.measured.counts:
            left = _side(packed, count.copies, usd_of[id(packed)], output_tokens)
            if not spread:
                rows.append(Packing(count.copies, left, why="no endpoint of one-GPU instances of this model measured"))
            for other in spread:
                rows.append(Packing(count.copies, left, _side(other, count.copies, usd_of[id(other)], output_tokens)))
    return rows


FLEET_ASSUMPTIONS = [
    "a load is a steady rate of requests a second, every request the workload's lengths",
    "a fleet's count is read from the capacity within the objectives measured at several copy counts: a count "
    "measured, else the line between two counts measured, else past the largest at its capacity per copy "
    "(EXTRAPOLATED); one count measured gives no count",
    "a fleet's copies take whole accelerators; its instances are its copies' accelerators over one instance's",
    "an instance that is not a fleet carries the load alone or not at all: several were not measured together",
    "an option billed by its requests is its month at the load held all day, over 730 hours",
    "$/M: the hour's price over the output tokens the load makes in that hour; the packing comparison at each "
    "count's measured capacity, at on-demand prices",
    "quotas (instances, copies, tokens a minute) are not modelled",
]
