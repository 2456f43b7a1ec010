"""A survey's way back to zero: what that run created, and nothing else.

Before it deploys, the survey asks CloudFormation which of the app's stacks already exist in
their candidate regions (`existing_stacks`): those it neither deploys nor removes. What it
deploys is recorded (stack name and every region it may land in) before the deploy starts, so an
interrupted deploy is still taken back. `tear_down` then stops the run's transform jobs that are
still running, and per created stack, wherever it stands: empties its buckets (every object
version; CloudFormation deletes only an empty bucket), deletes the stack and waits, and deletes a
bucket the stack left. Each action's outcome is kept; a refusal never stops the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runner.cloud.aws import boto_client
from runner.cloud.cleanup import delete_left_bucket, delete_stack, empty_bucket
from runner.core.console import console
from runner.core.errors import aws_error_code, describe

ClientFor = Callable[[str, str], Any]
GONE = ("DELETE_COMPLETE",)
RUNNING_JOB = ("InProgress",)


@dataclass
class Created:
    """What one survey run made: {stack: candidate regions}, and its transform jobs (region, name)."""

    stacks: dict[str, list[str]] = field(default_factory=dict)
    transform_jobs: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"stacks": self.stacks, "transform_jobs": [list(job) for job in self.transform_jobs]}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Created:
        data = data or {}
        jobs = [(str(region), str(name)) for region, name in data.get("transform_jobs", [])]
        return cls({str(k): list(v) for k, v in (data.get("stacks") or {}).items()}, jobs)


def default_clients(timeout_s: float = 60) -> ClientFor:
    clients: dict[tuple[str, str], Any] = {}

    def client(service: str, region: str) -> Any:
        if (service, region) not in clients:
            clients[(service, region)] = boto_client(service, region, timeout_s)
        return clients[(service, region)]

    return client


def stack_status(cloudformation: Any, name: str) -> str | None:
    """The stack's status in this region, or None when there is none (or only a deleted one)."""
    from botocore.exceptions import ClientError

    try:
        (stack,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError as error:
        if aws_error_code(error) == "ValidationError":  # "Stack with id X does not exist"
            return None
        raise
    return None if stack["StackStatus"] in GONE else stack["StackStatus"]


def existing_stacks(candidates: dict[str, list[str]], client: ClientFor) -> dict[str, str]:
    """{stack: region} for each of these stacks that already stands in one of its regions."""
    found: dict[str, str] = {}
    for stack, regions in candidates.items():
        for region in regions:
            if stack_status(client("cloudformation", region), stack) is not None:
                found[stack] = region
                break
    return found


def tear_down(created: Created, wait_s: float, client: ClientFor | None = None) -> list[dict[str, Any]]:
    """Stop the run's running transform jobs, then remove each created stack wherever it stands."""
    client = client or default_clients()
    actions: list[dict[str, Any]] = []

    def act(region: str, kind: str, name: str, do: Callable[[], str]) -> None:
        console.print(f"[dim]{kind} {name} in {region} …[/dim]")
        try:
            outcome = do()
        except Exception as error:
            outcome = f"not removed: {describe(error)}"
        actions.append({"region": region, "kind": kind, "id": name, "outcome": outcome})

    for region, job in created.transform_jobs:
        act(region, "transform-job", job, lambda r=region, j=job: _stop_job(client("sagemaker", r), j))
    for stack, regions in created.stacks.items():
        for region in regions:
            cloudformation = client("cloudformation", region)
            try:
                status = stack_status(cloudformation, stack)
            except Exception as error:
                actions.append({"region": region, "kind": "stack", "id": stack, "outcome": f"not read: {describe(error)}"})  # fmt: skip
                continue
            if status is None:
                continue
            buckets = _stack_buckets(cloudformation, stack)
            s3 = client("s3", region)
            for bucket in buckets:
                act(
                    region,
                    "bucket",
                    bucket,
                    lambda b=bucket, s3=s3: f"emptied ({empty_bucket(s3, b)} object version(s))",
                )
            act(region, "stack", stack, lambda c=cloudformation, s=stack: _deleted(delete_stack(c, s, wait_s)))
            for bucket in buckets:
                act(region, "bucket", bucket, lambda b=bucket, s3=s3: delete_left_bucket(s3, b))
    return actions


def _deleted(_: None) -> str:
    return "deleted"


def _stop_job(sagemaker: Any, name: str) -> str:
    status = sagemaker.describe_transform_job(TransformJobName=name)["TransformJobStatus"]
    if status not in RUNNING_JOB:
        return f"already {status}"
    sagemaker.stop_transform_job(TransformJobName=name)
    return "stopped"


def _stack_buckets(cloudformation: Any, stack: str) -> list[str]:
    buckets: list[str] = []
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("ResourceType") == "AWS::S3::Bucket" and resource.get("PhysicalResourceId"):
                buckets.append(resource["PhysicalResourceId"])
    return buckets
