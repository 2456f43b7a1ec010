"""The arithmetic of `runner.advise`: a workload (requests a day, spread over the 24 hours, tokens
per request, a latency bound) priced for a month on every measured option by its own billing
model, from the options' own bench and batch figures. Pure: evidence and prices in, advice out.

What it assumes, plainly:

- A month is HOURS_PER_MONTH (730) hours, 30.42 days; every day has the same hourly shape.
- A request of the workload's output tokens T takes, on a measured request, its time to first
  token plus (T - 1) x its time per output token (e2e x T / its tokens where it streamed no
  first token); the prompt's prefill is what the bench prompt's was.
- An instance's capacity at a load level is the level's output tokens/s x 3600 / T requests an
  hour; an option's capacity is that of the busiest level whose p95 (and p95 time to first
  token) stays within the bound.
- Always-on instances (EC2, SageMaker real-time) are sized for the peak hour and billed every
  hour; a real-time endpoint with max_instances 2 or more is sized hour by hour, as if scaling
  kept pace (it is not emulated).
- Arrivals within an hour are Poisson. A scale-to-zero option (serverless, async, Custom Model
  Import) goes to zero after its billing model's idle time (billing_models.py) without a request, so a request finds zero when
  the gap before it is longer: e^(-rate x idle) of the hour's requests. An async instance is up
  1 - e^(-rate x idle) of each hour, plus its measured time to leave zero per wake-up; a Custom
  Model Import copy is active as long, plus half a 5-minute window per activation.
- Cold starts count against the bound when more than COLD_SHARE_FOR_P95 (5 %) of the month's
  requests find zero: the p95 is then a cold request, and the measured cold figure is checked. A
  cold request of the workload takes what the measured cold start (the bench's warm-up on such a
  path) took beyond a warm request of its own size, plus a warm request of the workload's size.
  A scale-to-zero option whose cold start was not measured is then "latency unknown".
- Serverless bills each request's full end-to-end time (an upper bound: AWS bills the inference
  time) and 4 bytes per prompt and output token of data processed; it serves at most its max
  concurrency at once (Little's law at the peak hour).
- Batch transform runs one job a day over the day's requests at the measured job's rate (its
  output tokens over its billable time, start-up included: `runner.batch`'s output_tok_s); an
  answer waits for the day's job, so its p95 is a day; a job longer than a day is out.
- Custom Model Import uses the CMUs the evidence gives (else 1, said), one copy per busy hour
  unless the hour needs more at the copy's capacity, and its storage is a fixed monthly line.
- Bedrock per token: the tokens at their list prices; quotas are not modelled.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from catalog.backends import Billing
from catalog.prices import DAYS_PER_MONTH, HOURS_PER_MONTH, MODEL_IMPORT_WINDOW_MINUTES, Price
from catalog.serving import serving
from runner.core.backend_entries import BackendEntry, entries_of
from runner.core.batch_jobs import BatchJob, jobs_of
from runner.core.errors import RunnerError
from runner.core.records import RequestRecord, records_of
from runner.core.references import resolve
from runner.core.stats import median, percentile
from runner.core.typed_json import JsonObject
from runner.costing.arithmetic import (
    instance_seconds_usd,
    model_import_windows_usd,
    payload_gigabytes,
    usd_per_month_24x7,
)
from runner.costing.billing_models import billing_model
from runner.costing.measured import (
    batch_backend,
    batch_region,
    billing_of,
    cold_records,
    custom_model_units,
    is_cold,
    level_figures,
    max_instances,
    provenance,
)
from runner.costing.prices import (
    PriceRequest,
    batch_price_request,
    price_request,
    priced_kind,
    serverless_memory_mb,
)
from runner.costing.purchase import ON_DEMAND, PurchasePrice, purchased
from runner.costing.rows import Advice
from runner.figures.capacity import capacity_of
from runner.figures.fleet import CopyCapacity, FleetCopies
from runner.figures.latency import time_per_output_token
from runner.figures.levels import level_groups

# Business hours: 09:00-17:00 carry every request; spiky: two one-hour spikes (09:00 and 14:00)
# each as heavy as eleven ordinary hours over a flat base, so each spike is a quarter of the day.
SHAPES: dict[str, tuple[float, ...]] = {
    "flat": (1.0,) * 24,
    "business-hours": tuple(1.0 if 9 <= hour < 17 else 0.0 for hour in range(24)),
    "spiky": tuple(11.0 if hour in (9, 14) else 1.0 for hour in range(24)),
}
COLD_SHARE_FOR_P95 = 0.05
BATCH_WAIT_S = 24 * 3600.0


def mean_of(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Workload:
    requests_per_day: float
    weights: tuple[float, ...]
    shape: str
    input_tokens: int
    output_tokens: int
    latency_bound_s: float | None = None
    ttft_bound_s: float | None = None
    # A named preset (runner.bench --workload) and per-request objectives in vllm bench serve's
    # form (milliseconds), with the share of requests that must meet them all.
    name: str = ""
    slo: tuple[tuple[str, float], ...] = ()
    slo_share: float = 0.9

    @property
    def slo_text(self) -> str:
        return " ".join(f"{key}:{value:g}" for key, value in self.slo)

    def per_hour(self) -> list[float]:
        total = sum(self.weights)
        return [self.requests_per_day * w / total for w in self.weights]

    @property
    def peak_per_hour(self) -> float:
        return max(self.per_hour())

    @property
    def per_month(self) -> float:
        return self.requests_per_day * DAYS_PER_MONTH

    def to_json(self) -> JsonObject:
        return asdict(self) | {"per_hour": self.per_hour(), "per_month": self.per_month}


def hourly_weights(shape: str | None, hourly: str | None) -> tuple[str, tuple[float, ...]]:
    """(shape name, 24 weights) from `--shape` or `--hourly`; bad input is one line."""
    if hourly is not None:
        parts = hourly.split(",")
        try:
            weights = tuple(float(p) for p in parts)
        except ValueError:
            raise RunnerError(f"--hourly {hourly!r}: expected 24 comma-separated numbers") from None
        if len(weights) != 24:
            raise RunnerError(f"--hourly {hourly!r}: expected 24 weights, one per hour, got {len(weights)}")
        if any(w < 0 or not math.isfinite(w) for w in weights) or not sum(weights) > 0:
            raise RunnerError(f"--hourly {hourly!r}: weights must be 0 or more and sum to more than 0")
        return "hourly", weights
    name = shape or "flat"
    if name not in SHAPES:
        raise RunnerError(f"--shape {name!r}: unknown shape; known shapes: {', '.join(SHAPES)} (or --hourly W,...)")
    return name, SHAPES[name]


def cold_share(per_hour: list[float], idle_s: float) -> float:
    """Share of the day's requests that find zero instances: Poisson arrivals at each hour's rate,
    a request finds zero when the gap before it is longer than `idle_s`."""
    total = sum(per_hour)
    found_zero = sum(rate * math.exp(-rate * idle_s / 3600) for rate in per_hour if rate > 0)
    return found_zero / total if total else 0.0


def predicted_e2e(record: RequestRecord, output_tokens: int) -> float | None:
    """A measured request's time scaled to the workload's output tokens: time to first token +
    (T - 1) x its time per output token; e2e x T / its tokens where it has no first token."""
    e2e, ttft, tokens = record.e2e_s, record.ttft_s, record.output_tokens
    if e2e is None:
        return None
    if ttft is not None and tokens and tokens >= 2:
        return ttft + (output_tokens - 1) * (e2e - ttft) / (tokens - 1)
    if tokens:
        return e2e * output_tokens / tokens
    return e2e


@dataclass
class Point:
    """One measured load level of one option, scaled to the workload's output tokens; or the most
    load it was measured to carry within the workload's objectives (`slo_met`)."""

    level: str
    tok_s: float
    capacity_per_h: float
    p95_s: float | None
    p95_ttft_s: float | None
    mean_s: float | None
    p95_tpot_s: float | None = None
    # The share of requests within the objectives at the measured capacity (None: not measured there).
    slo_met: float | None = None


@dataclass
class Cold:
    requests: int
    p95_s: float | None
    p95_ttft_s: float | None
    mean_s: float | None
    leave_zero_s: float | None


@dataclass
class Measured:
    """One option as measured: its evidence entry, billing model, provenance and figures."""

    name: str
    evidence: str
    backend: BackendEntry
    billing: Billing
    provenance: str | None
    points: list[Point] = field(default_factory=list)
    warm: list[RequestRecord] = field(default_factory=list)
    cold: Cold | None = None
    # The backend's records (cold starts and failures too): a Custom Model Import's units may be on one.
    records: list[RequestRecord] = field(default_factory=list)
    jobs: list[BatchJob] = field(default_factory=list)
    # The most load within the workload's objectives, as measured (runner.bench --find-capacity),
    # or why there is none.
    capacity: Point | None = None
    capacity_why: str = ""
    # An endpoint of inference components searched at several copy counts in this file
    # (`bench --copies`): each count's good requests a second within the objectives.
    copy_counts: list[CopyCapacity] = field(default_factory=list)

    def price_request(self) -> PriceRequest | None:
        if billing_model(self.billing).priced_by_jobs:
            job = self.jobs[0] if self.jobs else BatchJob()
            return batch_price_request(job, batch_region(self.backend, job))
        return price_request(self.backend)


def _points(records: list[RequestRecord], output_tokens: int) -> list[Point]:
    points = []
    for (_, label), group in level_groups(records).items():
        if group[0].level is not None and group[0].level.stopped_after is not None:
            continue  # stopped midway (Ctrl-C, SIGTERM): what finished is kept, but it is not the level's figure
        figures = level_figures(label, group)
        if figures is None or not figures.output_tok_s:
            continue
        done = [r for r in group if r.ok and not is_cold(r)]
        times = [t for t in (predicted_e2e(r, output_tokens) for r in done) if t is not None]
        ttfts = [r.ttft_s for r in done if r.ttft_s is not None]
        tpots = [t for t in map(time_per_output_token, done) if t is not None]
        points.append(
            Point(
                level=label,
                tok_s=figures.output_tok_s,
                capacity_per_h=figures.output_tok_s * 3600 / output_tokens,
                p95_s=percentile(times, 95),
                p95_ttft_s=percentile(ttfts, 95),
                mean_s=mean_of(times),
                p95_tpot_s=percentile(tpots, 95),
            )
        )
    return points


# A measured workload matches the one advised on when its lengths are within this share.
LENGTH_MATCH = 0.05


def workload_matches(config: JsonObject, workload: Workload) -> str | None:
    """Why a bench file's workload is not the one advised on (None: it is): the same preset, or
    the same lengths within 5 %, graded on the same objectives and a share at least as strict."""
    measured = config.get("workload") or {}
    if not measured:
        return "measured on the survey's prompt, not on a workload"
    if workload.name and measured.get("name") != workload.name:
        return f"measured on workload {measured.get('name')!r}, not {workload.name!r}"
    lengths = measured.get("input_tokens") or []
    if not any(abs(length / workload.input_tokens - 1) <= LENGTH_MATCH for length in lengths) or (
        abs((measured.get("output_tokens") or 0) / workload.output_tokens - 1) > LENGTH_MATCH
    ):
        return f"measured at {lengths} in, {measured.get('output_tokens')} out"
    objectives = {k: float(v) for k, v in ((config.get("slo") or {}).get("limits_ms") or {}).items()}
    if objectives != dict(workload.slo):
        return f"its objectives were {(config.get('slo') or {}).get('text') or 'none'}"
    if (config.get("slo_share") or 0) < workload.slo_share:
        return f"its share was {config.get('slo_share'):.0%}, below {workload.slo_share:.0%}"
    return None


def measured_capacity(path: str, evidence: JsonObject, name: str, workload: Workload) -> tuple[Point | None, str]:
    """The most load `name` carried within the workload's objectives in this evidence (the file at
    `path`), as a point whose capacity is the good requests an hour (goodput x 3600); else None and
    why not."""
    why = workload_matches(evidence.get("config") or {}, workload)
    if why:
        return None, why
    # The search at the workload's own input length (a sweep searched each of its lengths).
    searches = [
        c
        for c in capacity_of(evidence, path)
        if c.backend == name
        and (c.input_tokens is None or abs(c.input_tokens / workload.input_tokens - 1) <= LENGTH_MATCH)
    ]
    found = [
        (best.goodput_rps, c, best)
        for c in searches
        if c.capacity is not None and (best := c.at_capacity) and best.goodput_rps
    ]
    if not found:
        return None, searches[0].stopped if searches else "no capacity search for it (bench --find-capacity)"
    goodput_rps, search, best = max(found, key=lambda f: f[0])
    point = Point(
        level=f"capacity {search.capacity:g} {search.unit} within {workload.slo_text}",
        tok_s=best.output_tok_s or 0.0,
        capacity_per_h=goodput_rps * 3600,
        p95_s=None,
        p95_ttft_s=None,
        mean_s=None,
        slo_met=best.share_met,
    )
    return point, ""


def cold_time(record: RequestRecord, warm: list[RequestRecord], output_tokens: int) -> float | None:
    """A cold request's time for the workload: what it took beyond a warm request of its own size
    (the bench's cold start is its 4-token warm-up) plus a warm request of the workload's size."""
    e2e, tokens = record.e2e_s, record.output_tokens or 0
    if e2e is None:
        return None
    same_size = mean_of([t for t in (predicted_e2e(w, tokens) for w in warm) if t is not None]) if tokens else None
    workload = mean_of([t for t in (predicted_e2e(w, output_tokens) for w in warm) if t is not None])
    if same_size is None or workload is None:
        return predicted_e2e(record, output_tokens) if record.ttft_s is not None else e2e
    return max(0.0, e2e - same_size) + workload


def _cold(cold: list[RequestRecord], warm: list[RequestRecord], output_tokens: int) -> Cold | None:
    if not cold:
        return None
    times = [t for t in (cold_time(r, warm, output_tokens) for r in cold) if t is not None]
    leave = [(r.phases or {}).get("leave_zero_s") for r in cold]
    return Cold(
        requests=len(cold),
        p95_s=percentile(times, 95),
        p95_ttft_s=_p95_ttft(cold),
        mean_s=mean_of(times),
        leave_zero_s=median(v for v in leave if isinstance(v, int | float)),
    )


def fleet_counts(path: str, evidence: JsonObject, name: str, workload: Workload) -> list[CopyCapacity]:
    """The copy counts `bench --copies` searched for `name` in this file, at the workload's input
    length, each with the good requests a second it carried within the objectives (a count marked
    or with no level within them is left out: it gives no capacity)."""
    if workload_matches(evidence.get("config") or {}, workload):
        return []
    counts = []
    for n, entry in enumerate(evidence.get("fleet") or [], 1):
        fleet = FleetCopies.from_json(entry, f"{path}: fleet entry {n}")
        for count in fleet.counts if fleet.backend == name else []:
            length = count.input_tokens
            if length is not None and abs(length / workload.input_tokens - 1) > LENGTH_MATCH:
                continue
            best = count.capacity.at_capacity if count.capacity is not None else None
            if best is not None and best.goodput_rps:
                counts.append(CopyCapacity(count.copies, best.goodput_rps, path))
    return counts


def measured_options(
    path: str, evidence: JsonObject, output_tokens: int, workload: Workload | None = None
) -> list[Measured]:
    """Every option one bench or batch evidence file measured (one per backend); with a workload
    that has objectives, the capacity each was measured to carry within them."""
    if evidence.get("command") == "batch":
        by_backend: dict[str, Measured] = {}
        for job in jobs_of(evidence, path):
            backend = batch_backend(evidence, job, path)
            option = by_backend.setdefault(
                backend.name,
                Measured(backend.name, path, backend, Billing.JOB_INSTANCE_HOURS, provenance(evidence, backend)),
            )
            option.jobs.append(job)
        return list(by_backend.values())
    options = []
    colds = cold_records(evidence, path)
    typed = records_of(evidence, where=path)
    for backend in entries_of(evidence, path):
        records = [r for r in typed if r.backend == backend.name]
        warm = [r for r in records if r.ok and not is_cold(r)]
        capacity, capacity_why = (
            measured_capacity(path, evidence, backend.name, workload) if workload and workload.slo else (None, "")
        )
        options.append(
            Measured(
                name=backend.name,
                evidence=path,
                backend=backend,
                billing=billing_of(backend),
                provenance=provenance(evidence, backend, records),
                points=_points(records, output_tokens),
                warm=warm,
                cold=_cold(colds.get(backend.name, []), warm, output_tokens),
                records=records,
                capacity=capacity,
                capacity_why=capacity_why,
                copy_counts=fleet_counts(path, evidence, backend.name, workload) if workload and workload.slo else [],
            )
        )
    return options


def measured_tokens(evidences: list[JsonObject]) -> tuple[int | None, int | None]:
    """The mean prompt and output tokens of every successful warm request (the default workload)."""
    records = [r for e in evidences for r in records_of(e) if r.ok and not is_cold(r)]
    prompt = [r.prompt_tokens for r in records if isinstance(r.prompt_tokens, int)]
    output = [r.output_tokens for r in records if isinstance(r.output_tokens, int) and r.output_tokens]
    return (round(mean_of(prompt)) if prompt else None), (round(mean_of(output)) if output else None)


def within(
    workload: Workload, p95_s: float | None, p95_ttft_s: float | None, p95_tpot_s: float | None = None
) -> tuple[bool | None, str]:
    """Whether a p95 meets the workload's bounds: None when a bound is set and the figure unknown.
    Objectives are judged here only for a level not graded on them (an extrapolation): their
    limits taken as bounds on the level's p95."""
    checks = []
    if workload.latency_bound_s is not None:
        checks.append(("p95 end-to-end", p95_s, workload.latency_bound_s))
    if workload.ttft_bound_s is not None:
        checks.append(("p95 time to first token", p95_ttft_s, workload.ttft_bound_s))
    figures = {"ttft": ("p95 time to first token", p95_ttft_s), "tpot": ("p95 time per output token", p95_tpot_s),
               "e2el": ("p95 end-to-end", p95_s)}  # fmt: skip
    for key, limit_ms in workload.slo:
        what, value = figures[key]
        checks.append((what, value, limit_ms / 1000))
    for what, value, bound in checks:
        if value is None:
            return None, f"{what} not measured"
        if value > bound:
            return False, f"{what} {value:.2f} s > bound {bound:g} s"
    return True, ""


def best_point(option: Measured, workload: Workload) -> tuple[Point | None, bool]:
    """The capacity measured within the workload's objectives; else the busiest level within the
    bounds (True), else the fastest level (False)."""
    if option.capacity is not None:
        return option.capacity, True
    if not option.points:
        return None, False
    inside = [p for p in option.points if within(workload, p.p95_s, p.p95_ttft_s, p.p95_tpot_s)[0]]
    if inside:
        return max(inside, key=lambda p: p.capacity_per_h), True
    return min(option.points, key=lambda p: p.p95_s if p.p95_s is not None else math.inf), False


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


def _cold_latency(option: Measured, workload: Workload, share: float, warm: tuple[float | None, float | None]):
    """The p95 an option's requests see: warm, or cold when more than 5 % of them find zero."""
    if share <= COLD_SHARE_FOR_P95:
        return warm, ""
    if option.cold is None:
        return (None, None), f"{share:.0%} of requests find zero instances and no cold start was measured"
    return (option.cold.p95_s, option.cold.p95_ttft_s), f"{share:.0%} of requests find zero: the p95 is a cold start"


def advise_instance_hours(option: Measured, workload: Workload, price: Price) -> Advice:
    point, inside = best_point(option, workload)
    hourly = price.usd_per_hour or 0.0
    base = _advice(option, price)
    if point is None:
        return replace(base, arithmetic="no measured level", meets=None, why="not measured")
    low = max(1, int(option.backend.spec.min_instances or 1))
    high = max_instances(option.backend)
    per_hour = workload.per_hour()
    autoscaled = serving(priced_kind(option.backend)).scales_out and high >= 2
    notes = []
    if autoscaled:
        counts = [max(low, math.ceil(rate / point.capacity_per_h)) for rate in per_hour]
        instance_hours = sum(counts)
        monthly = instance_hours * DAYS_PER_MONTH * hourly
        needed = max(counts)
        arithmetic = (
            f"each hour ceil(req/h ÷ {point.capacity_per_h:,.0f} per instance at {point.level}) → "
            f"{instance_hours} instance-h/day × {DAYS_PER_MONTH:.2f} d × ${hourly:g} = {_money(monthly)}"
        )
        notes.append("sized hour by hour, as if scale-out kept pace (not emulated)")
    else:
        needed = max(low, math.ceil(workload.peak_per_hour / point.capacity_per_h))
        monthly = usd_per_month_24x7(hourly, needed)
        arithmetic = (
            f"peak {workload.peak_per_hour:,.0f} req/h ÷ {point.capacity_per_h:,.0f} per instance at {point.level} → "
            f"{needed} instance{'s' if needed > 1 else ''} × {HOURS_PER_MONTH} h × ${hourly:g} = {_money(monthly)}"
        )
    meets, why = judged(workload, point, point.p95_s, point.p95_ttft_s)
    if not inside and meets is not False:
        meets, why = False, "no measured level within the bound"
    if needed > high:
        meets, why = False, f"needs {needed} instances at peak; it deploys at most {high}"
    return replace(
        base,
        monthly_usd=monthly,
        arithmetic=arithmetic,
        meets=meets,
        why=why,
        p95_s=point.p95_s,
        p95_ttft_s=point.p95_ttft_s,
        level=point.level,
        notes=notes,
    )


def advise_async(option: Measured, workload: Workload, price: Price) -> Advice:
    point, inside = best_point(option, workload)
    hourly = price.usd_per_hour or 0.0
    base = _advice(option, price)
    if point is None:
        return replace(base, arithmetic="no measured level", meets=None, why="not measured")
    idle = idle_before_zero_s(option)
    up = 0.0
    wakeups = 0.0
    for rate in workload.per_hour():
        if rate <= 0:
            continue
        up += max(1, math.ceil(rate / point.capacity_per_h)) * (1 - math.exp(-rate * idle / 3600))
        wakeups += rate * math.exp(-rate * idle / 3600)
    leave = option.cold.leave_zero_s if option.cold and option.cold.leave_zero_s is not None else None
    notes = [] if leave is not None else ["time to leave zero not measured: priced as 0 s"]
    instance_hours = up + wakeups * (leave or 0.0) / 3600
    monthly = instance_hours * DAYS_PER_MONTH * hourly
    share = cold_share(workload.per_hour(), idle)
    arithmetic = (
        f"up {up:.2f} h/day (zero after {idle / 60:.0f} min idle) + {wakeups:.1f} wake-ups/day × {leave or 0:.0f} s "
        f"→ {instance_hours:.2f} instance-h/day × {DAYS_PER_MONTH:.2f} d × ${hourly:g} = {_money(monthly)}"
    )
    return _finish(option, workload, base, point, inside, share, monthly, arithmetic, notes)


def judged(workload: Workload, point: Point, p95: float | None, p95_ttft: float | None) -> tuple[bool | None, str]:
    """A measured capacity met its objectives by construction; any other level is judged on its p95s."""
    if point.slo_met is not None:
        return True, ""
    return within(workload, p95, p95_ttft, point.p95_tpot_s)


def _finish(
    option: Measured,
    workload: Workload,
    base: Advice,
    point: Point,
    inside: bool,
    share: float,
    monthly: float,
    arithmetic: str,
    notes: list[str],
) -> Advice:
    (p95, p95_ttft), cold_why = _cold_latency(option, workload, share, (point.p95_s, point.p95_ttft_s))
    meets, why = judged(workload, point, p95, p95_ttft) if not cold_why else within(workload, p95, p95_ttft)
    if not inside and meets is not False and share <= COLD_SHARE_FOR_P95:
        meets, why = False, "no measured level within the bound"
    if cold_why:
        why = f"{cold_why}; {why}" if why else cold_why
    return replace(
        base,
        monthly_usd=monthly,
        arithmetic=arithmetic,
        meets=meets,
        why=why,
        p95_s=p95,
        p95_ttft_s=p95_ttft,
        level=point.level if point else None,
        cold_share=share,
        notes=notes,
    )


def advise_serverless(option: Measured, workload: Workload, price: Price) -> Advice:
    base = _advice(option, price)
    times = [t for t in (predicted_e2e(r, workload.output_tokens) for r in option.warm) if t is not None]
    if not times:
        return replace(base, arithmetic="no measured request", meets=None, why="not measured")
    warm_s = mean_of(times)
    share = cold_share(workload.per_hour(), idle_before_zero_s(option))
    notes = []
    cold_s = option.cold.mean_s if option.cold and option.cold.mean_s is not None else None
    if cold_s is None:
        cold_s = warm_s
        if share > 0:
            notes.append("cold starts not measured: priced as warm requests")
    monthly_requests = workload.per_month
    cold_requests = monthly_requests * share
    warm_requests = monthly_requests - cold_requests
    seconds = warm_requests * warm_s + cold_requests * cold_s
    per_second = price.usd_per_second or 0.0
    compute = seconds * per_second
    gigabytes = payload_gigabytes(monthly_requests * (workload.input_tokens + workload.output_tokens))
    data = gigabytes * (price.usd_per_gb_processed or 0.0)
    monthly = compute + data
    memory = serverless_memory_mb(option.backend)
    arithmetic = (
        f"serverless{f' {memory} MB' if memory else ''}: {warm_requests:,.0f} req × {warm_s:.2f} s + "
        f"{cold_requests:,.0f} cold × {cold_s:.2f} s = {seconds:,.0f} s × ${per_second:g}/s = {_money(compute)} "
        f"+ data {gigabytes:.4f} GB × ${price.usd_per_gb_processed or 0:g} = {_money(monthly)}"
    )
    point = Point("all warm requests", 0.0, 0.0, percentile(times, 95), _p95_ttft(option.warm), warm_s)
    advice = _finish(option, workload, base, point, True, share, monthly, arithmetic, notes)
    limit = option.backend.output.max_concurrency or option.backend.spec.max_concurrency
    busiest = workload.peak_per_hour / 3600 * warm_s
    if limit and busiest > limit:
        advice.meets = False
        advice.why = f"the peak hour needs {busiest:.1f} requests at once > max concurrency {limit}"
    return advice


def _p95_ttft(records: list[RequestRecord]) -> float | None:
    return percentile([r.ttft_s for r in records if r.ttft_s is not None], 95)


def advise_model_import(option: Measured, workload: Workload, price: Price) -> Advice:
    point, inside = best_point(option, workload)
    base = _advice(option, price)
    if point is None:
        return replace(base, arithmetic="no measured level", meets=None, why="not measured")
    idle = idle_before_zero_s(option)
    units, units_note = custom_model_units(option.backend, option.records)
    active_minutes = 0.0
    activations = 0.0
    for rate in workload.per_hour():
        if rate <= 0:
            continue
        active_minutes += max(1, math.ceil(rate / point.capacity_per_h)) * 60 * (1 - math.exp(-rate * idle / 3600))
        activations += rate * math.exp(-rate * idle / 3600)
    windows = (active_minutes + activations * MODEL_IMPORT_WINDOW_MINUTES / 2) / MODEL_IMPORT_WINDOW_MINUTES
    per_minute = price.usd_per_unit_minute or 0.0
    compute = model_import_windows_usd(windows, units, per_minute) * DAYS_PER_MONTH
    storage = units * (price.usd_per_unit_month or 0.0)
    monthly = compute + storage
    arithmetic = (
        f"CMI: {windows:.1f} active {MODEL_IMPORT_WINDOW_MINUTES}-min windows/day × {units} CMU × ${per_minute:g} × "
        f"{MODEL_IMPORT_WINDOW_MINUTES} min × {DAYS_PER_MONTH:.2f} d = {_money(compute)} + storage {units} CMU × "
        f"${price.usd_per_unit_month or 0:g} = {_money(monthly)}"
    )
    share = cold_share(workload.per_hour(), idle)
    return _finish(
        option, workload, base, point, inside, share, monthly, arithmetic, [units_note] if units_note else []
    )


def advise_batch(option: Measured, workload: Workload, price: Price) -> Advice:
    base = _advice(option, price)
    timed = [(j, j.output_tok_s, j.billable_s) for j in option.jobs if j.output_tok_s and j.billable_s is not None]
    if not timed:
        return replace(base, arithmetic="no job with a rate and billable time", meets=None, why="not measured")
    job, rate, billable_s = max(timed, key=lambda t: t[0].output_tokens)
    start = max(0.0, billable_s - job.output_tokens / rate)
    count = job.instances
    tokens = workload.requests_per_day * workload.output_tokens
    run_s = start + tokens / rate
    hourly = price.usd_per_hour or 0.0
    monthly = instance_seconds_usd(run_s, count, hourly) * DAYS_PER_MONTH
    arithmetic = (
        f"batch: 1 job/day × ({start:.0f} s start + {tokens:,.0f} tok ÷ {rate:,.0f} tok/s) = {run_s:,.0f} s × "
        f"{count} × ${hourly:g}/h × {DAYS_PER_MONTH:.2f} d = {_money(monthly)}"
    )
    meets, why = within(workload, BATCH_WAIT_S + run_s, None if workload.ttft_bound_s is None else BATCH_WAIT_S)
    if run_s > BATCH_WAIT_S:
        meets, why = False, f"the day's job takes {run_s / 3600:,.1f} h on {count} instance(s): more than a day"
    return replace(
        base,
        monthly_usd=monthly,
        arithmetic=arithmetic,
        meets=meets,
        why=(f"{why} (an answer waits for the day's job)" if why else ""),
        p95_s=BATCH_WAIT_S + run_s,
        level=f"job {job.job_name or ''}".strip(),
        notes=["one job a day over the day's requests"],
    )


def advise_per_token(option: Measured, workload: Workload, price: Price) -> Advice:
    base = _advice(option, price)
    times = [t for t in (predicted_e2e(r, workload.output_tokens) for r in option.warm) if t is not None]
    per_request = (
        workload.input_tokens * (price.usd_per_million_input or 0.0)
        + workload.output_tokens * (price.usd_per_million_output or 0.0)
    ) / 1_000_000
    monthly = workload.per_month * per_request
    arithmetic = (
        f"Bedrock: {workload.per_month:,.0f} req × ({workload.input_tokens} in × ${price.usd_per_million_input:g}/M + "
        f"{workload.output_tokens} out × ${price.usd_per_million_output:g}/M) = {_money(monthly)}"
    )
    p95, p95_ttft = percentile(times, 95), _p95_ttft(option.warm)
    meets, why = within(workload, p95, p95_ttft)
    return replace(
        base,
        monthly_usd=monthly,
        arithmetic=arithmetic,
        meets=meets,
        why=why,
        p95_s=p95,
        p95_ttft_s=p95_ttft,
        notes=["service quotas not modelled"],
    )


def _advice(option: Measured, price: Price | None) -> Advice:
    return Advice(option.name, option.billing, option.evidence, option.provenance, price=price)


def idle_before_zero_s(option: Measured) -> float:
    """How long its billing model waits without a request before it is at zero (the row says)."""
    idle = billing_model(option.billing).idle_before_zero_s
    assert idle is not None, option.billing  # an option of a model that never reaches zero is not asked
    return idle


def advise(option: Measured, workload: Workload, price: Price | None) -> Advice:
    """One option's month for the workload, with its arithmetic in one line; with objectives, an
    option not measured at them is labelled an extrapolation, with why and from what."""
    advice = _advise(option, workload, price)
    if workload.slo:
        advice.measured_capacity = option.capacity is not None
        if option.capacity is None and not billing_model(option.billing).priced_by_jobs:
            why = option.capacity_why or "no capacity search in its evidence"
            advice.extrapolated = (
                f"EXTRAPOLATED: no capacity measured within {workload.slo_text} ({why}); "
                f"from {advice.level or 'its requests'} scaled to {workload.output_tokens} output tokens, "
                "its p95s taken for the objectives"
            )
    return advice


def _advise(option: Measured, workload: Workload, price: Price | None) -> Advice:
    if price is None:
        return replace(_advice(option, None), arithmetic="no price found", why="no price")
    model = billing_model(option.billing)
    if not model.advise:
        return replace(_advice(option, price), arithmetic="not billed by AWS", why="not billed")
    return resolve(model.advise)(option, workload, price)


def advise_at(
    option: Measured, workload: Workload, price: Price | None, purchase: str, figures: list[PurchasePrice]
) -> Advice:
    """One option's month at a purchase option (`runner.advise --purchase`), its arithmetic opening
    with what it was priced at: the option's figure where it applies and has one, else on-demand
    with why. Bedrock's batch and flex tiers answer slower than the standard tier the latency was
    measured on: with a bound, their verdict is unknown. Provisioned Throughput is priced per model
    unit, whose tokens a minute AWS does not publish: the units a month needs are unknown."""
    if purchase == ON_DEMAND:
        return advise(option, workload, price)
    bought = purchased(purchase, price, figures, f"{option.name} ({option.billing.value})")
    if bought.provisioned is not None:
        unit_month = usd_per_month_24x7(bought.provisioned.usd_per_hour or 0.0)
        return replace(
            _advice(option, bought.price),
            arithmetic=f"{bought.label} × {HOURS_PER_MONTH} h = {_money(unit_month)} a month per model unit; "
            "the units this workload needs are unknown",
            meets=None,
            why="a model unit's tokens per minute are not published (Bedrock user guide, Provisioned Throughput)",
        )
    advice = advise(option, workload, bought.price)
    advice.arithmetic = f"{bought.label}: {advice.arithmetic}"
    bounded = workload.latency_bound_s is not None or workload.ttft_bound_s is not None or bool(workload.slo)
    if bought.latency and advice.monthly_usd is not None:
        if bounded and advice.meets is not False:
            advice.meets, advice.why = None, bought.latency
        else:
            advice.notes = [*(advice.notes or []), bought.latency]
    return advice


def rank(advice: list[Advice]) -> list[Advice]:
    """Within the bound first (cheapest first), then latency unknown, then those that miss it."""
    order = {True: 0, None: 1, False: 2}
    return sorted(advice, key=lambda a: (order[a.meets], a.monthly_usd is None, a.monthly_usd or 0.0, a.option))


def explain(ranked: list[Advice]) -> list[str]:
    """Why the first option beat each of the others, in the options' own arithmetic."""
    winner = ranked[0] if ranked else None
    if winner is None or winner.meets is not True or winner.monthly_usd is None:
        return ["no option is within the bound at a known price"] if ranked else []
    cheapest = winner.monthly_usd
    lines = [f"cheapest within the bound: {winner.option}, {_money(cheapest)}/month: {winner.arithmetic}"]
    for other in ranked[1:]:
        if other.meets is True and other.monthly_usd is not None:
            lines.append(
                f"{winner.option} beats {other.option} by {_money(other.monthly_usd - cheapest)}/month: {other.arithmetic}"
            )
        else:
            lines.append(f"{other.option} is out: {other.why or 'no price'}")
    return lines


ASSUMPTIONS = [
    f"a month is {HOURS_PER_MONTH} h ({DAYS_PER_MONTH:.2f} days), every day the same hourly shape",
    "a request of T output tokens takes its measured time to first token + (T - 1) x its time per output token",
    "capacity: the busiest measured level within the bound, output tok/s x 3600 / T requests an hour per instance",
    "always-on instances are sized for the peak hour (a real-time endpoint with max_instances >= 2: hour by hour, "
    "as if scaling kept pace: not emulated)",
    "Poisson arrivals within each hour: a request finds zero instances when the gap before it is longer than the "
    "option's idle time (serverless 5 min, assumed: AWS does not publish it; async 15 min, its scale-in alarm; "
    "Custom Model Import 5 min), e^(-rate x idle) of the hour's requests",
    "cold starts count against the bound when more than 5 % of the month's requests find zero (the p95 is then a "
    "cold request); unmeasured cold starts then leave the latency unknown",
    "serverless bills each request's full end-to-end time and 4 bytes per token of data processed",
    "batch transform: one job a day over the day's requests at the measured job's output tok/s (start-up "
    "included); an answer waits for it (p95 a day)",
    "a cold request: what the measured cold start took beyond a warm request of its size, plus a warm request",
    "Custom Model Import: the evidence's CMUs (else 1), half a 5-minute window per activation, storage monthly",
]
