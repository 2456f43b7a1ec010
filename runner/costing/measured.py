"""Cost of what was measured, each backend by its own billing model (catalog `Billing`), per load
level in $ per million output tokens:

- instance-hours (EC2, SageMaker real-time): $/h over the output tokens/s the level reached
  (one request at a time: the median of the requests' own rates, as the survey priced them;
  any other level: all output tokens over the level's wall time), with the break-even against
  Bedrock; for the real-time endpoint, where a second instance starts paying for itself;
- async (instance-hours while an instance runs): the same $/M while busy, and apart what one
  burst after idle adds (the measured time to leave zero, and the idle time before scale-in);
- serverless (compute seconds at the memory size): each request's end-to-end time x the price
  per second, plus the data it processed, over its output tokens; cold starts apart;
- batch transform (a job's instances for its billable time), from `runner.batch` evidence;
- Custom Model Import (CMU-minutes in 5-minute windows while a copy is active): the level's
  active time rounded up to windows x CMUs x the price, over its tokens; storage a monthly line;
- Bedrock per token: the output price plus the input each output token took.

Cold-start records (`cold_start` true) never enter a level's figures: they are shown apart.
Evidence that did not come from AWS (the embedded model, an `--endpoint` server, a server marked
emulated or scripted) is priced but labelled, by `provenance`.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from catalog import BACKENDS, BackendKind
from catalog.backends import Billing
from catalog.prices import (
    BEDROCK,
    DEFAULT_CUSTOM_MODEL_UNITS,
    DEFAULT_CUSTOM_MODEL_UNITS_NOTE,
    MODEL_IMPORT_WINDOW_MINUTES,
    PRICING_API_REGION,
    Price,
)
from catalog.serving import UNKNOWN, serving
from runner.core.accuracy import Accuracy, accuracy_by_backend
from runner.core.backend_entries import BackendEntry, entries_of, model_units
from runner.core.batch_jobs import BatchJob, jobs_of
from runner.core.errors import RunnerError
from runner.core.evidence import load
from runner.core.records import RequestRecord, records_of
from runner.core.references import resolve
from runner.core.stats import median, percentile
from runner.core.typed_json import JsonObject
from runner.costing.arithmetic import (
    bedrock_per_million_output,
    breakeven_tok_s,
    instance_seconds_usd,
    model_import_windows_usd,
    payload_gigabytes,
    usd_per_million,
    usd_per_million_output,
    usd_per_month_24x7,
)
from runner.costing.billing_models import ASYNC_IDLE_TAIL_S, billing_model
from runner.costing.prices import (
    GIVEN,
    REFERENCE_BEDROCK,
    PriceRequest,
    batch_price_request,
    bedrock_price_name,
    price_all,
    price_request,
    priced_kind,
)
from runner.costing.rows import ColdFigures, CostRow, JobFigures, LevelFigures, Scaling
from runner.figures.levels import level_groups, level_summary

COST_COMMANDS = ("bench", "batch")
# Real-time scaling: one instance has stopped growing when the next level's tok/s is within this
# share of its own.
PLATEAU_SHARE = 0.05
NOT_EMULATED = "needs a real account: scaling under load is not emulated"
NOT_BILLED = "not billed by AWS"


def billing_of(backend: BackendEntry) -> Billing:
    """How AWS bills a backend as an evidence file lists it: by the kind it is priced as (a known
    backend given with --endpoint is priced as its catalog entry), else by its catalog entry."""
    if backend.priced_as is not None:  # by the hour, as the user priced it
        return Billing.INSTANCE_HOURS
    path = serving(priced_kind(backend))
    if path is not UNKNOWN:
        return path.billing
    try:
        return Billing(backend.spec.billing)
    except ValueError:
        return Billing.NONE


def _flag(value: Any, what: str) -> str | None:
    if not value:
        return None
    return f"{what} ({value})" if isinstance(value, str) else what


def provenance(evidence: Mapping[str, Any], backend: BackendEntry, records: Sequence[RequestRecord] = ()) -> str | None:
    """None when the figures came from AWS; otherwise what they came from. Not AWS: the embedded
    model, any `--endpoint` server (not known to be AWS, even under a known backend's name), a
    plain OpenAI-compatible server, and anything marked `emulated` or `scripted` (on the evidence,
    its config, the backend, or any of the backend's records, `records`)."""
    config = evidence.get("config") or {}
    marks = [
        (evidence.get("emulated"), evidence.get("scripted")),
        (config.get("emulated"), config.get("scripted")),
        (backend.emulated, backend.scripted),
        *((r.emulated, r.scripted) for r in records if r.backend == backend.name),
    ]
    for emulated, scripted in marks:
        label = _flag(emulated, "emulated AWS") or _flag(scripted, "scripted server")
        if label:
            return label
    source = backend.source or ""
    if source == "embedded":
        return serving(BackendKind.LOCAL).provenance
    if "--endpoint" in source:
        return "--endpoint server, not known to be AWS"
    return serving(backend.kind).provenance


def custom_model_units(backend: BackendEntry, records: Sequence[RequestRecord]) -> tuple[int, str | None]:
    """CMUs per model copy: an evidence field `custom_model_units` (on the backend, its stack
    output or a record; a number, or GetImportedModel's `customModelUnits` object) wins; else 1,
    with the note that says it is assumed."""
    given = [backend.custom_model_units, backend.output.custom_model_units]
    given += [model_units(r.custom_model_units) for r in records]
    units = next((u for u in given if u is not None), None)
    if units is not None:
        return units, None
    return DEFAULT_CUSTOM_MODEL_UNITS, DEFAULT_CUSTOM_MODEL_UNITS_NOTE


def is_cold(record: RequestRecord) -> bool:
    return bool(record.cold_start)


def level_figures(label: str, records: list[RequestRecord]) -> LevelFigures | None:
    """One level's figures from its warm records (cold starts left out); None when none succeeded."""
    warm = [r for r in records if not is_cold(r)]
    done = [r for r in warm if r.ok]
    if not done:
        return None
    prompt = [r.prompt_tokens for r in done]
    output = sum(r.output_tokens or 0 for r in done)
    known = [p for p in prompt if isinstance(p, int)]
    known_prompt = len(known) == len(prompt)
    ratio = sum(known) / output if output and known_prompt else None
    summary = level_summary(warm)
    if label == "1 at a time" or summary.output_tok_s is None:
        rate, method = median(r.tokens_per_s for r in done), "median of single requests"
    else:
        rate, method = summary.output_tok_s, "all output tokens / level wall time"
    level = done[0].level
    counts = [(r.phases or {}).get("instances") for r in done]
    instances = max((c for c in counts if isinstance(c, int | float)), default=None)
    return LevelFigures(
        level=label,
        requests=len(done),
        output_tok_s=rate,
        method=method,
        input_per_output=ratio,
        mode=level.mode if level else None,
        value=level.value if level else None,
        duration_s=summary.duration_s,
        output_tokens=output,
        prompt_tokens=sum(known) if known_prompt else 0,
        e2e_sum_s=sum(r.e2e_s or 0.0 for r in done),
        p95_e2e_s=percentile([r.e2e_s for r in done if r.e2e_s is not None], 95),
        instances=int(instances) if instances else None,
    )


def load_levels(records: list[RequestRecord]) -> dict[str, list[LevelFigures]]:
    """Per backend and load level: its figures (see `level_figures`)."""
    levels: dict[str, list[LevelFigures]] = defaultdict(list)
    for (backend, label), group in level_groups(records).items():
        figures = level_figures(label, group)
        if figures is not None:
            levels[backend].append(figures)
    return levels


def cold_records(evidence: Mapping[str, Any], where: object = None) -> dict[str, list[RequestRecord]]:
    """Per backend, its successful cold starts (the first request after idle): the bench's warm-up
    on a path that scales from zero (kept under `warm_up`), and any timed request marked cold."""
    cold: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in [*records_of(evidence, "warm_up", where), *records_of(evidence, "records", where)]:
        if is_cold(record) and record.ok:
            cold[record.backend].append(record)
    return cold


def _spec_json(spec: Any) -> JsonObject:
    return {k: getattr(v, "value", v) for k, v in asdict(spec).items()}


def catalog_backends() -> list[JsonObject]:
    """With no evidence: every AWS backend of the catalog, in its first region."""
    return [
        {
            "name": spec.name,
            "kind": spec.kind.value,
            "region": spec.regions[0] if spec.regions else None,
            "model_id": spec.model_id,
            "source": "catalog",
            "catalog": _spec_json(spec),
        }
        for spec in BACKENDS
        if serving(spec.kind).provenance is None
    ]


def read_cost_evidence(path: Path, reader: str = "runner.cost") -> JsonObject:
    """A bench or batch evidence file; evidence of any other command is one line."""
    data = load(path)
    if data["command"] not in COST_COMMANDS:
        raise RunnerError(
            f"{path} is {data['command']} evidence; {reader} reads bench or batch evidence, and quality "
            "evidence for the accuracy beside them (python -m runner.bench, runner.batch, runner.quality)"
        )
    return data


def split_quality(paths: list[Path], reader: str) -> tuple[list[tuple[str, JsonObject]], dict[str, Accuracy]]:
    """The cost inputs (bench, batch) read and checked, and the accuracy per backend that any
    quality evidence among them gives (runner.quality), shown beside the cost, never priced."""
    loaded = [(path, load(path)) for path in paths]
    quality = [data for _, data in loaded if data["command"] == "quality"]
    inputs = [(str(path), read_cost_evidence(path, reader)) for path, data in loaded if data["command"] != "quality"]
    return inputs, accuracy_by_backend(quality)


def batch_backend(evidence: Mapping[str, Any], job: BatchJob, where: object = None) -> BackendEntry:
    """The backend a batch job ran on: the evidence's own entry where it lists one, else the catalog's
    (the backend whose row runner.batch measures)."""
    spec = next(spec for spec in BACKENDS if serving(spec.kind).measured_by == "batch")
    name = job.backend or spec.name
    listed = next((b for b in entries_of(evidence, where) if b.name == name), None)
    if listed is not None:
        return listed
    entry = {
        "name": name,
        "kind": spec.kind.value,
        "region": job.region or (spec.regions[0] if spec.regions else None),
        "source": "batch evidence",
        "catalog": _spec_json(spec),
    }
    return BackendEntry.from_json(entry, f"the catalog's {name}")


def batch_region(backend: BackendEntry, job: BatchJob) -> str | None:
    return job.region or backend.region or backend.output.region or next(iter(backend.spec.regions), None)


def evidence_price_requests(evidence: JsonObject) -> list[PriceRequest]:
    """Everything one bench or batch evidence file needs priced."""
    if evidence.get("command") == "batch":
        requests = []
        for job in jobs_of(evidence):
            backend = batch_backend(evidence, job)
            request = batch_price_request(job, batch_region(backend, job))
            if request is not None:
                requests.append(request)
        return requests
    return [r for r in map(price_request, entries_of(evidence)) if r is not None]


def bedrock_reference_request() -> PriceRequest:
    return PriceRequest(BEDROCK, bedrock_price_name(REFERENCE_BEDROCK.model_id), PRICING_API_REGION)


def cost_price_requests(evidences: list[JsonObject]) -> list[PriceRequest]:
    """Everything `cost_rows` needs priced for these evidence files: each one's backends or jobs,
    and the Bedrock reference the break-even is taken against."""
    return [*(r for evidence in evidences for r in evidence_price_requests(evidence)), bedrock_reference_request()]


def offline_cost_rows(source: str, evidence: JsonObject) -> list[CostRow]:
    """`runner.cost --offline` of one bench or batch evidence file, without writing evidence: its
    cost rows at the dated offline table's prices (the Pricing API is never asked)."""
    prices, _ = price_all(cost_price_requests([evidence]), None)
    return cost_rows(source, evidence, prices)


def _base_row(
    source: str,
    evidence: JsonObject,
    backend: BackendEntry,
    request: PriceRequest | None,
    price: Price | None,
    records: Sequence[RequestRecord] = (),
) -> CostRow:
    billing = billing_of(backend)
    hourly = price.usd_per_hour if price else None
    return CostRow(
        evidence=source,
        backend=backend.name,
        billing=billing,
        provenance=provenance(evidence, backend, records),
        region=request.region if request else backend.region,
        billed_by=billed_by(backend, request),
        price=price,
        usd_per_hour=hourly,
        usd_per_month_24x7=usd_per_month_24x7(hourly) if hourly and billing_model(billing).hourly else None,
    )


def billed_by(backend: BackendEntry, request: PriceRequest | None) -> str | None:
    """What the row is priced by: the item billed, or, where the user priced it, `as <instance>`
    (--price-as) or `rate given` (--price), so the table never passes it off as AWS's bill."""
    if request is None:
        return None
    if backend.priced_as is None:
        return request.item
    return "rate given" if request.service == GIVEN else f"as {request.item}"


def _per_million(usd: float, tokens: int) -> float | None:
    return usd_per_million(usd, tokens) if tokens else None


def serverless_level_cost(figures: LevelFigures, price: Price) -> tuple[float, float]:
    """(compute $, data $) of one level's warm requests: the sum of their end-to-end times at the
    price per second, and their payload (4 bytes per prompt and output token) at the price per GB."""
    compute = figures.e2e_sum_s * (price.usd_per_second or 0.0)
    gigabytes = payload_gigabytes(figures.prompt_tokens + figures.output_tokens)
    return compute, gigabytes * (price.usd_per_gb_processed or 0.0)


def model_import_level_cost(figures: LevelFigures, price: Price, units: int) -> tuple[int, float]:
    """(5-minute windows, $) of one level: its active time (first send to last end; the sum of its
    requests' times where the level has no wall time) rounded up to windows x CMUs x $/CMU-minute.
    One model copy is assumed (CloudWatch's ModelCopy metric says how many ran)."""
    active = figures.duration_s if figures.duration_s else figures.e2e_sum_s
    windows = max(1, math.ceil(active / (MODEL_IMPORT_WINDOW_MINUTES * 60)))
    return windows, model_import_windows_usd(windows, units, price.usd_per_unit_minute or 0.0)


@dataclass(frozen=True)
class LevelContext:
    """What pricing a level may need beyond its figures and price: the Custom Model Import units its
    records report, and Bedrock's price to break even against."""

    units: int
    units_note: str | None
    bedrock_reference: Price | None


def level_rows(
    base: CostRow,
    backend: BackendEntry,
    figures_list: list[LevelFigures],
    price: Price,
    bedrock_reference: Price | None,
    records: Sequence[RequestRecord],
) -> list[CostRow]:
    """One row per level, priced as the backend's billing model says (`level`)."""
    model = billing_model(billing_of(backend))
    price_level = resolve(model.level) if model.level else None
    context = LevelContext(*custom_model_units(backend, records), bedrock_reference)
    rows = []
    for figures in figures_list or [LevelFigures("", 0, None, "not measured", None)]:
        row = replace(base, level=figures.level or None, figures=figures, output_tok_s=figures.output_tok_s)
        if price_level is not None:
            price_level(row, figures, price, context)
        rows.append(row)
    return rows


def per_token_level(row: CostRow, figures: LevelFigures, price: Price, context: LevelContext) -> None:
    row.usd_per_million_output = bedrock_per_million_output(price, figures.input_per_output)
    row.basis = "output price" + (" + measured input per output token" if figures.input_per_output else "")


def serverless_level(row: CostRow, figures: LevelFigures, price: Price, context: LevelContext) -> None:
    if not figures.requests:
        return
    compute, data = serverless_level_cost(figures, price)
    row.usd_per_million_output = _per_million(compute + data, figures.output_tokens)
    row.basis = (
        f"{figures.requests} req: sum of e2e {figures.e2e_sum_s:.2f} s x ${price.usd_per_second:g}/s"
        f" + data ${data:.2g}, over {figures.output_tokens} output tokens"
    )


def model_unit_level(row: CostRow, figures: LevelFigures, price: Price, context: LevelContext) -> None:
    if not figures.requests:
        return
    units = context.units
    windows, usd = model_import_level_cost(figures, price, units)
    row.usd_per_million_output = _per_million(usd, figures.output_tokens)
    sustained = (
        usd_per_million_output(units * (price.usd_per_unit_minute or 0.0) * 60, figures.output_tok_s)
        if figures.output_tok_s
        else None
    )
    row.sustained_usd_per_million_output = sustained
    row.basis = (
        f"{windows} x {MODEL_IMPORT_WINDOW_MINUTES}-min window x {units} CMU x "
        f"${price.usd_per_unit_minute:g}/CMU-min over {figures.output_tokens} output tokens"
        + (f"; ${sustained:.2f}/M if the windows stay busy" if sustained else "")
        + (f"; {context.units_note}" if context.units_note else "")
    )


def instance_hours_level(row: CostRow, figures: LevelFigures, price: Price, context: LevelContext) -> None:
    """By the hour, always on: its $/M at the level's rate, and where it breaks even with Bedrock."""
    if not price.usd_per_hour:
        return
    if figures.output_tok_s:
        row.usd_per_million_output = usd_per_million_output(price.usd_per_hour, figures.output_tok_s)
    if context.bedrock_reference is not None:
        reference = bedrock_per_million_output(context.bedrock_reference, figures.input_per_output)
        row.breakeven_vs_bedrock_tok_s = breakeven_tok_s(price.usd_per_hour, reference)
        row.bedrock_usd_per_million_output = reference


def while_running_level(row: CostRow, figures: LevelFigures, price: Price, context: LevelContext) -> None:
    """By the hour while an instance runs: its $/M at the level's rate; its idle is a row apart."""
    if not price.usd_per_hour:
        return
    if figures.output_tok_s:
        row.usd_per_million_output = usd_per_million_output(price.usd_per_hour, figures.output_tok_s)
    row.basis = "while an instance runs (it scales to zero between bursts: see leaving zero)"


def cold_rows(base: CostRow, backend: BackendEntry, cold: list[RequestRecord], price: Price) -> list[CostRow]:
    """What a request that finds zero instances costs and takes, apart from the levels, as the
    billing model prices it (`cold`)."""
    model = billing_model(billing_of(backend))
    return resolve(model.cold)(base, cold, price) if model.cold and cold else []


def cold_figures(cold: list[RequestRecord]) -> tuple[list[float], ColdFigures]:
    e2e = [r.e2e_s for r in cold if r.e2e_s is not None]
    output = sum(r.output_tokens or 0 for r in cold)
    return e2e, ColdFigures(requests=len(cold), median_e2e_s=median(e2e), output_tokens=output)


def serverless_cold_rows(base: CostRow, cold: list[RequestRecord], price: Price) -> list[CostRow]:
    e2e, figures = cold_figures(cold)
    usd = sum(e2e) * (price.usd_per_second or 0.0)
    return [
        replace(
            base,
            level="cold start",
            figures=figures,
            usd_per_event=usd / len(cold),
            basis=f"{len(cold)} cold req ({figures.output_tokens} output tokens), median e2e {median(e2e):.2f} s, "
            "billed in full (an upper bound)",
        )
    ]


def leaving_zero_rows(base: CostRow, cold: list[RequestRecord], price: Price) -> list[CostRow]:
    if not price.usd_per_hour:
        return []
    _, figures = cold_figures(cold)
    leave = [(r.phases or {}).get("leave_zero_s") for r in cold]
    leave_s = median(v for v in leave if isinstance(v, int | float))
    measured = leave_s is not None
    leave_s = leave_s or 0.0
    usd = instance_seconds_usd(leave_s + ASYNC_IDLE_TAIL_S, 1, price.usd_per_hour)
    return [
        replace(
            base,
            level="leaving zero",
            figures=replace(figures, phase="leave_zero_s", phase_s=leave_s if measured else None),
            usd_per_event=usd,
            basis=(
                f"each burst after idle: {leave_s:.0f} s leaving zero"
                + ("" if measured else " (not measured: no cold record with phases.leave_zero_s)")
                + f" + {ASYNC_IDLE_TAIL_S // 60} min idle before scale-in (assumed) at ${price.usd_per_hour}/h"
            ),
        )
    ]


def model_unit_cold_rows(base: CostRow, cold: list[RequestRecord], price: Price) -> list[CostRow]:
    e2e, figures = cold_figures(cold)
    not_ready = [(r.phases or {}).get("not_ready_s") for r in cold]
    waited = median(v for v in not_ready if isinstance(v, int | float))
    return [
        replace(
            base,
            level="cold start",
            figures=replace(figures, phase="not_ready_s", phase_s=waited),
            basis=f"{len(cold)} cold req, median e2e {median(e2e):.2f} s"
            + (f", {waited:.1f} s waiting for the copy" if waited is not None else ""),
        )
    ]


def model_unit_storage_rows(
    base: CostRow, backend: BackendEntry, price: Price, records: Sequence[RequestRecord]
) -> list[CostRow]:
    """Custom Model Import's storage: a fixed monthly line while the model exists."""
    if price.usd_per_unit_month is None:
        return []
    units, note = custom_model_units(backend, records)
    return [
        replace(
            base,
            level="storage",
            fixed_usd_per_month=units * price.usd_per_unit_month,
            basis=f"{units} CMU x ${price.usd_per_unit_month}/CMU-month while the model exists"
            + (f"; {note}" if note else ""),
        )
    ]


def batch_rows(source: str, evidence: JsonObject, prices: dict[PriceRequest, Price]) -> list[CostRow]:
    """One row per transform job: its instances for its billable time, over its output tokens."""
    rows = []
    for job in jobs_of(evidence, source):
        backend = batch_backend(evidence, job, source)
        request = batch_price_request(job, batch_region(backend, job))
        price = prices.get(request) if request else None
        base = _base_row(source, evidence, backend, request, price)
        row = replace(
            base,
            level=f"job {job.label}".strip(),
            figures=JobFigures(
                billable_s=job.billable_s,
                instance_count=job.instance_count,
                output_tokens=job.output_tokens,
                records_per_s=job.records_per_s,
            ),
            output_tok_s=job.output_tok_s,
        )
        if price is None or not price.usd_per_hour:
            rows.append(replace(row, note="no price found"))
            continue
        count = job.instances
        usd = instance_seconds_usd(job.billable_s or 0.0, count, price.usd_per_hour)
        row.usd_per_job = usd
        row.usd_per_million_output = _per_million(usd, job.output_tokens)
        row.basis = f"{job.billable_s} billable s x {count} x ${price.usd_per_hour}/h" + (
            f" (runner.batch priced it ${job.price_usd:.4f})" if job.price_usd is not None else ""
        )
        rows.append(row)
    return rows


def cost_rows(
    source: str,
    evidence: JsonObject,
    prices: dict[PriceRequest, Price],
    *,
    backends: list[BackendEntry] | None = None,
) -> list[CostRow]:
    """One row per backend and measured load level (one without figures when none was measured),
    a row apart for cold starts, and for Custom Model Import a storage row (a fixed monthly line)."""
    if evidence.get("command") == "batch":
        return batch_rows(source, evidence, prices)
    bedrock_reference = prices.get(bedrock_reference_request())
    typed = records_of(evidence, where=source)
    levels = load_levels(typed)
    cold = cold_records(evidence, source)
    rows = []
    for backend in entries_of(evidence, source) if backends is None else backends:
        records = [r for r in typed if r.backend == backend.name]
        request = price_request(backend)
        price = prices.get(request) if request else None
        base = _base_row(source, evidence, backend, request, price, records)
        model = billing_model(billing_of(backend))
        if model.priced_by_jobs:
            rows.append(replace(base, note="priced from batch evidence (python -m runner.batch)"))
            continue
        if request is None:
            rows.append(replace(base, note="no price found" if model.billed else NOT_BILLED))
            continue
        if price is None:
            rows.append(replace(base, note="no price found"))
            continue
        rows += level_rows(base, backend, levels.get(backend.name, []), price, bedrock_reference, records)
        rows += cold_rows(base, backend, cold.get(backend.name, []), price)
        if model.fixed:
            rows += resolve(model.fixed)(base, backend, price, records)
    return rows


def max_instances(backend: BackendEntry) -> int:
    return int(backend.output.max_instances or backend.spec.max_instances or 1)


def second_instance(
    evidence: JsonObject, backend: BackendEntry, price: Price | None, bound_s: float | None = None
) -> Scaling | None:
    """For the real-time endpoint: from the closed-loop levels, where one instance stops growing
    (the first level whose tok/s is within 5 % of the next level's, or the last whose p95
    end-to-end is within `bound_s`), and whether the evidence shows a second instance paying for
    itself at the next level (two instances' $/M there below one instance's). The evidence shows
    a second instance only when it came from AWS and a level after the plateau reports 2
    instances (`phases.instances`) or, with max_instances 2 or more, grows past the plateau again;
    otherwise it says what only a real account can show."""
    if not serving(priced_kind(backend)).scales_out or price is None or not price.usd_per_hour:
        return None
    hourly = price.usd_per_hour
    records = records_of(evidence)
    levels = sorted(
        (f for f in load_levels(records).get(backend.name, []) if f.mode == "concurrency" and f.output_tok_s),
        key=lambda f: f.value or 0,
    )
    result = Scaling(backend=backend.name, max_instances=max_instances(backend), bound_s=bound_s)
    if len(levels) < 2:
        result.verdict = (
            "not enough closed-loop levels: bench --concurrency 1,4,16,64 finds where one instance stops growing"
        )
        return result
    capacity = None
    for index, (current, following) in enumerate(itertools.pairwise(levels)):
        over = bound_s is not None and following.p95_e2e_s is not None and following.p95_e2e_s > bound_s
        if following.output_tok_s * (1 - PLATEAU_SHARE) <= current.output_tok_s or over:
            capacity = index
            break
    if capacity is None:
        top = levels[-1]
        result.verdict = (
            f"one instance still grows at the highest level measured ({top.level}: {top.output_tok_s:.1f} tok/s): "
            "sweep higher"
        )
        return result
    cap, following = levels[capacity], levels[capacity + 1]
    one = usd_per_million_output(hourly, cap.output_tok_s)
    result.capacity_level, result.capacity_tok_s, result.one_instance_usd_per_million = cap.level, cap.output_tok_s, one
    result.next_level, result.next_tok_s = following.level, following.output_tok_s
    result.next_p95_e2e_s = following.p95_e2e_s
    facts = (
        f"one instance tops out at {cap.level} ({cap.output_tok_s:.1f} tok/s, ${one:.2f}/M); "
        f"at {following.level} it gives {following.output_tok_s:.1f} tok/s"
        + (f", p95 {following.p95_e2e_s:.2f} s" if following.p95_e2e_s is not None else "")
    )
    if provenance(evidence, backend, records) is not None:
        result.verdict = f"{NOT_EMULATED} ({facts})"
        return result
    later = levels[capacity + 1 :]
    shown = next((f for f in later if (f.instances or 0) >= 2), None)
    if shown is None and result.max_instances >= 2:
        shown = next((f for f in later if f.output_tok_s > cap.output_tok_s * (1 + PLATEAU_SHARE)), None)
    if shown is None:
        why = (
            f"max_instances {result.max_instances}: a second instance is not allowed (sagemaker.maxInstances)"
            if result.max_instances < 2
            else "the evidence does not show a second instance serving"
        )
        result.verdict = f"{NOT_EMULATED}: {why} ({facts})"
        return result
    count = max(shown.instances or 2, 2)
    two = usd_per_million_output(count * hourly, shown.output_tok_s)
    one_misses = bound_s is not None and following.p95_e2e_s is not None and following.p95_e2e_s > bound_s
    pays = two <= one or one_misses
    result.instances, result.scaled_level, result.scaled_tok_s = count, shown.level, shown.output_tok_s
    result.scaled_usd_per_million = two
    result.pays_for_itself = pays
    result.verdict = (
        f"{'a second instance pays for itself' if pays else 'a second instance does not pay for itself'} at "
        f"{shown.level}: {count} instances give {shown.output_tok_s:.1f} tok/s at ${two:.2f}/M against one "
        f"instance's ${one:.2f}/M at its capacity"
        + (" (and one instance misses the bound there)" if one_misses else "")
        + f" ({facts})"
    )
    return result
