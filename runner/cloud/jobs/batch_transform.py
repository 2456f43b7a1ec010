"""SageMaker batch transform: one job over one JSON-lines object, followed to its end.

The request bodies go up as one JSON-lines object, `s3://<bucket>/<input prefix><run>/prompts.jsonl`.
CreateTransformJob runs the stack's SageMaker model (the vLLM DLC) over that prefix: each line
alone (SplitType Line, BatchStrategy SingleRecord, ContentType application/json), one at a time
(MaxConcurrentTransforms 1, so the answers keep the lines' order), on one instance of the given
type; the answers come back as `<output prefix><run>/prompts.jsonl.out`, one per line
(AssembleWith Line, Accept application/json). The job carries the app's tag, so `runner.sweep`
finds it. DescribeTransformJob is polled until Completed, Failed or Stopped; the job bills its
instances from TransformStartTime to TransformEndTime.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from catalog.contract import APP_TAG, BACKEND_TAG_KEY
from runner.core.errors import RunnerError

INPUT_NAME = "prompts.jsonl"
TERMINAL = ("Completed", "Failed", "Stopped")
# SageMaker's bound on MaxPayloadInMB (x MaxConcurrentTransforms) for a transform job.
MAX_PAYLOAD_MB = 100
# Transform job names: 1 to 63 characters, letters, digits and hyphens.
MAX_JOB_NAME = 63


class TransformTimeout(RunnerError):
    """The job did not end within the wait the user gave."""


@dataclass(frozen=True)
class TransformPlan:
    backend: str
    job_name: str
    model_name: str
    bucket: str
    input_key: str
    output_prefix: str
    instance_type: str
    instance_count: int = 1
    max_payload_mb: int = 1

    @property
    def input_uri(self) -> str:
        """The S3Prefix the job reads: this run's folder, so no other run's input is transformed."""
        return f"s3://{self.bucket}/{self.input_key.rsplit('/', 1)[0]}/"

    @property
    def output_key(self) -> str:
        return f"{self.output_prefix}{self.input_key.rsplit('/', 1)[-1]}.out"


def plan_job(
    *,
    backend: str,
    model_name: str,
    bucket: str,
    input_prefix: str,
    output_prefix: str,
    instance_type: str,
    run: str,
    lines: list[bytes],
) -> TransformPlan:
    """The job for one run; a record too large for any payload is refused before anything is sent."""
    largest = max((len(line) for line in lines), default=0)
    payload_mb = max(1, math.ceil(largest / 2**20))
    if payload_mb > MAX_PAYLOAD_MB:
        raise RunnerError(f"a record of {largest} bytes is over the transform job's {MAX_PAYLOAD_MB} MB payload limit")
    name = f"inference-batch-{run}"[:MAX_JOB_NAME].rstrip("-")
    return TransformPlan(
        backend=backend,
        job_name=name,
        model_name=model_name,
        bucket=bucket,
        input_key=f"{input_prefix}{run}/{INPUT_NAME}",
        output_prefix=f"{output_prefix}{run}/",
        instance_type=instance_type,
        max_payload_mb=payload_mb,
    )


MAX_CONCURRENT_TRANSFORMS = 4


def upload(s3: Any, plan: TransformPlan, lines: list[bytes]) -> None:
    s3.put_object(
        Bucket=plan.bucket, Key=plan.input_key, Body=b"\n".join(lines) + b"\n", ContentType="application/jsonlines"
    )


def remove_input(s3: Any, plan: TransformPlan) -> None:
    """Delete the job's input (the job was never created); a failure to delete is not raised."""
    try:
        s3.delete_object(Bucket=plan.bucket, Key=plan.input_key)
    except Exception:  # the bucket's lifecycle rule expires it anyway
        return


def create(sagemaker: Any, plan: TransformPlan) -> None:
    sagemaker.create_transform_job(
        TransformJobName=plan.job_name,
        ModelName=plan.model_name,
        # Records in flight on the instance at once, as the async endpoint's 4 per instance: vLLM
        # batches them; AssembleWith Line keeps each output line in its input line's place.
        MaxConcurrentTransforms=MAX_CONCURRENT_TRANSFORMS,
        MaxPayloadInMB=plan.max_payload_mb,
        BatchStrategy="SingleRecord",
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": plan.input_uri}},
            "ContentType": "application/json",
            "SplitType": "Line",
        },
        TransformOutput={
            "S3OutputPath": f"s3://{plan.bucket}/{plan.output_prefix}",
            "Accept": "application/json",
            "AssembleWith": "Line",
        },
        TransformResources={"InstanceType": plan.instance_type, "InstanceCount": plan.instance_count},
        Tags=[{"Key": APP_TAG[0], "Value": APP_TAG[1]}, {"Key": BACKEND_TAG_KEY, "Value": plan.backend}],
    )


def pause(seconds: float) -> None:
    """The wait between two polls (one place, so Ctrl-C there can be exercised)."""
    time.sleep(seconds)


def follow(
    sagemaker: Any,
    job_name: str,
    *,
    poll_s: float,
    timeout_s: float,
    on_status: Callable[[dict[str, Any], float], None],
) -> dict[str, Any]:
    """DescribeTransformJob until the job ends; `on_status(description, elapsed_s)` on every change
    of status. Returns the last description; TransformTimeout after `timeout_s`."""
    started = time.monotonic()
    last = None
    while True:
        description = sagemaker.describe_transform_job(TransformJobName=job_name)
        elapsed = time.monotonic() - started
        status = description.get("TransformJobStatus")
        if status != last:
            on_status(description, elapsed)
            last = status
        if status in TERMINAL:
            return description
        if elapsed + poll_s > timeout_s:
            raise TransformTimeout(f"transform job {job_name} still {status} after {elapsed:.0f} s")
        pause(poll_s)


def stop(sagemaker: Any, job_name: str) -> None:
    sagemaker.stop_transform_job(TransformJobName=job_name)


def read_output(s3: Any, plan: TransformPlan) -> list[str]:
    """The job's answers, one per line, in the input's order."""
    body = s3.get_object(Bucket=plan.bucket, Key=plan.output_key)["Body"].read()
    return [line for line in body.decode("utf-8", errors="replace").splitlines() if line.strip()]


def billable(description: dict[str, Any]) -> tuple[str | None, str | None, float | None]:
    """(start, end, seconds) of the job's instances: TransformStartTime to TransformEndTime."""
    start, end = description.get("TransformStartTime"), description.get("TransformEndTime")
    seconds = (end - start).total_seconds() if isinstance(start, datetime) and isinstance(end, datetime) else None
    return _iso(start), _iso(end), seconds


def _iso(value: Any) -> str | None:
    return value.isoformat(timespec="milliseconds") if isinstance(value, datetime) else None
