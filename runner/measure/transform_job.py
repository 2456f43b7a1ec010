"""One SageMaker batch transform job, measured: planned, uploaded, created, followed to its end
(never left running: Ctrl-C, a timeout or a fault stops it), its outputs read back in order as
records, its billable seconds priced at the instance's hourly rate."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from catalog.prices import SAGEMAKER, Price
from runner.cloud.aws import boto_client
from runner.cloud.jobs import batch_transform
from runner.core.backend_entries import BackendEntry
from runner.core.backends import Backend
from runner.core.batch_jobs import BatchJob
from runner.core.console import console
from runner.core.errors import RunnerError, as_fault, describe
from runner.core.evidence import Evidence, EvidenceFile
from runner.core.records import RequestRecord
from runner.core.typed_json import JsonObject, where_set
from runner.costing.arithmetic import instance_seconds_usd
from runner.costing.prices import PriceRequest, price_all, price_request
from runner.measure.sagemaker import batch_records


@dataclass(kw_only=True)
class BatchFile(EvidenceFile):
    """Batch evidence: the job's records (one per prompt, in order, once its outputs are read),
    the job as it ran, and the price it was charged at."""

    COMMAND = "batch"
    records: list[RequestRecord] = field(default_factory=list)
    jobs: list[BatchJob] = field(default_factory=list)
    prices: list[Price] | None = where_set()


def batch_backend(found: list[Backend], wanted: str | None) -> Backend:
    """The batch backend to run: the one named, else the only one in the outputs."""
    if wanted:
        found = [b for b in found if b.name == wanted]
    if not found:
        named = f" named {wanted}" if wanted else ""
        raise RunnerError(
            f"no sagemaker-batch backend{named} in the stack outputs (deploy it with -c backends=...,sagemaker-batch)"
        )
    if len(found) > 1:
        raise RunnerError(f"several batch backends ({', '.join(b.name for b in found)}): pick one with --backend")
    backend = found[0]
    missing = [name for name in ("model_name", "bucket", "input_prefix", "output_prefix", "instance_type") if not getattr(backend, name)]  # fmt: skip
    if missing:
        raise RunnerError(f"backend {backend.name}: its stack output has no {' or '.join(missing)}")
    return backend


def run_job(
    backend: Backend, lines: list[bytes], evidence: Evidence[BatchFile], *, poll_s: float, timeout_s: float
) -> bool:
    """Upload, run, follow and read one job; True when it completed with at least one good answer.
    Whatever happens once the job exists, it is not left running (Ctrl-C included)."""
    region = backend.region or "us-east-1"
    run_id = f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    plan = batch_transform.plan_job(
        backend=backend.name,
        model_name=backend.model_name or "",
        bucket=backend.bucket or "",
        input_prefix=backend.input_prefix or "",
        output_prefix=backend.output_prefix or "",
        instance_type=backend.instance_type or "",
        run=run_id,
        lines=lines,
    )
    job = BatchJob(
        backend=backend.name,
        job_name=plan.job_name,
        status="NotStarted",
        records=len(lines),
        instance_type=plan.instance_type,
        instance_count=plan.instance_count,
        input=f"s3://{plan.bucket}/{plan.input_key}",
        output=f"s3://{plan.bucket}/{plan.output_key}",
    )
    evidence.file.jobs.append(job)
    evidence.save()
    sagemaker = boto_client("sagemaker", region, 60)
    s3 = boto_client("s3", region, 60)
    created = ended = False
    try:
        batch_transform.upload(s3, plan, lines)
        batch_transform.create(sagemaker, plan)
        created = True
        job.status = "InProgress"
        evidence.save()
        console.print(
            f"{backend.name}: transform job {plan.job_name}: {len(lines)} records on {plan.instance_count} x {plan.instance_type}"
        )

        def on_status(description: JsonObject, elapsed: float) -> None:
            job.status = description.get("TransformJobStatus")  # type: ignore[assignment]  # SageMaker's status
            console.print(f"  {job.status} after {elapsed:.0f} s")

        description = batch_transform.follow(
            sagemaker, plan.job_name, poll_s=poll_s, timeout_s=timeout_s, on_status=on_status
        )
        ended = True
    except KeyboardInterrupt:
        if created:
            stop_job(sagemaker, plan.job_name, job, "interrupted")
        evidence.save()
        raise
    except batch_transform.TransformTimeout as error:
        stop_job(sagemaker, plan.job_name, job, str(error))
        job.failure_reason = str(error)
        evidence.save()
        return False
    except Exception as error:
        if as_fault(error) is None:
            raise
        job.failure_reason = describe(error)
        console.print(f"[red]{backend.name}:[/red] {job.failure_reason}")
        if not created:  # refused (a quota of 0, say): nothing half-uploaded is left behind
            batch_transform.remove_input(s3, plan)
        evidence.save()
        return False
    finally:
        if created and not ended and job.status not in ("Stopping", *batch_transform.TERMINAL):
            stop_job(sagemaker, plan.job_name, job, "the runner stopped following it")
    job.status = description.get("TransformJobStatus")
    job.failure_reason = description.get("FailureReason") or None
    job.started_at, job.ended_at, job.billable_s = batch_transform.billable(description)
    price_job(backend, job, evidence)
    if job.status != "Completed":
        console.print(
            f"[red]{backend.name}:[/red] transform job {plan.job_name} {job.status}: {job.failure_reason or 'no reason given'}"
        )
        evidence.save()
        return False
    records = batch_records(backend.name, batch_transform.read_output(s3, plan), len(lines))
    evidence.file.records = records
    good = [r for r in records if r.ok]
    job.ok_records = len(good)
    job.output_tokens = sum(r.output_tokens or 0 for r in good)
    job.prompt_tokens = sum(r.prompt_tokens or 0 for r in good)
    if job.billable_s:
        job.records_per_s = len(good) / job.billable_s
        job.output_tok_s = job.output_tokens / job.billable_s
    evidence.save()
    return bool(good)


def stop_job(sagemaker: Any, job_name: str, job: BatchJob, why: str) -> None:
    """StopTransformJob, said in one line (a failure to stop is said too: the job may still bill)."""
    try:
        batch_transform.stop(sagemaker, job_name)
    except Exception as error:
        console.print(f"[red]could not stop transform job {job_name}: {describe(error)}; stop it by hand[/red]")
        return
    job.status = "Stopping"
    console.print(f"[yellow]{why}: StopTransformJob sent for {job_name}; it bills until it has stopped[/yellow]")


def price_job(backend: Backend, job: BatchJob, evidence: Evidence[BatchFile]) -> None:
    """The job's price: its instances' hourly rate (offline table) over its billable seconds."""
    region = backend.region or "us-east-1"
    request = price_request(BackendEntry.of(backend)) or PriceRequest(SAGEMAKER, job.instance_type or "", region)
    prices, notices = price_all([request], None)
    for line in notices:
        evidence.notice(line)
    price = prices.get(request)
    if price is None:
        return
    evidence.file.prices = [price]
    if price.usd_per_hour is not None and job.billable_s is not None:
        job.usd_per_hour = price.usd_per_hour
        job.price_usd = instance_seconds_usd(job.billable_s, job.instances, price.usd_per_hour)
