"""A survey's way back to zero: what that run created, and nothing else.

Before it deploys, the survey asks CloudFormation which of the app's stacks already exist in
their candidate regions (`existing_stacks`): those it neither deploys nor removes. What it
deploys is recorded (stack name and every region it may land in) before the deploy starts, so an
interrupted deploy is still taken back. `tear_down` then stops the run's transform jobs that are
still running, and per created stack, wherever it stands: lets an operation in progress settle
(an update is cancelled first: CloudFormation refuses DeleteStack during one), empties its
buckets (every object version; CloudFormation deletes only an empty bucket), deletes the stack
and waits, and deletes a bucket the stack left. A created stack found in none of its regions is
said so. Each action's outcome goes to `on_action` as it happens; a refusal never stops the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runner.cloud.aws import boto_client
from runner.cloud.cleanup.removal import delete_left_bucket, delete_stack, empty_bucket
from runner.core.console import console
from runner.core.errors import aws_error_code, describe

ClientFor = Callable[[str, str], Any]
GONE = ("DELETE_COMPLETE",)
RUNNING_JOB = ("InProgress",)
SETTLE_POLL_S = 5.0


@dataclass
class Created:
    """What one survey run made: {stack: the regions it may stand in}, its transform jobs (region,
    name), and whether it started the import of the stack's model (runner.model_import)."""

    stacks: dict[str, list[str]] = field(default_factory=dict)
    transform_jobs: list[tuple[str, str]] = field(default_factory=list)
    imported_model: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "stacks": self.stacks,
            "transform_jobs": [list(job) for job in self.transform_jobs],
            "imported_model": self.imported_model,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Created:
        data = data or {}
        jobs = [(str(region), str(name)) for region, name in data.get("transform_jobs", [])]
        stacks = {str(k): list(v) for k, v in (data.get("stacks") or {}).items()}
        return cls(stacks, jobs, bool(data.get("imported_model")))


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


def tear_down(
    created: Created,
    wait_s: float,
    client: ClientFor | None = None,
    on_action: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Stop the run's running transform jobs, then remove each created stack wherever it stands."""
    client = client or default_clients()
    actions: list[dict[str, Any]] = []

    def act(region: str, kind: str, name: str, do: Callable[[], str]) -> str:
        console.print(f"[dim]{kind} {name} in {region} …[/dim]")
        try:
            outcome = do()
        except Exception as error:
            outcome = f"not removed: {describe(error)}"
        action = {"region": region, "kind": kind, "id": name, "outcome": outcome}
        actions.append(action)
        if on_action is not None:
            on_action(action)
        return outcome

    for region, job in created.transform_jobs:
        act(region, "transform-job", job, lambda r=region, j=job: _stop_job(client("sagemaker", r), j))
    for stack, regions in created.stacks.items():
        found = False
        for region in regions:
            cloudformation = client("cloudformation", region)
            try:
                status = stack_status(cloudformation, stack)
            except Exception as error:
                act(region, "stack", stack, lambda e=error: f"not read: {describe(e)}")
                continue
            if status is None:
                continue
            found = True
            settled = act(region, "stack", stack, lambda c=cloudformation, s=stack: settle(c, s, wait_s))
            buckets: list[str] = []
            act(region, "stack", stack, lambda c=cloudformation, s=stack, b=buckets: _listed(b, _stack_buckets(c, s)))
            s3 = client("s3", region)
            for bucket in buckets:
                act(
                    region,
                    "bucket",
                    bucket,
                    lambda b=bucket, s3=s3: f"emptied ({empty_bucket(s3, b)} object version(s))",
                )
            if settled.startswith("not "):
                continue
            sagemaker = client("sagemaker", region)  # its inference components waited out of a scaling first
            act(
                region,
                "stack",
                stack,
                lambda c=cloudformation, s=stack, m=sagemaker: _deleted(delete_stack(c, s, wait_s, m)),
            )
            for bucket in buckets:
                act(region, "bucket", bucket, lambda b=bucket, s3=s3: delete_left_bucket(s3, b))
        if not found:
            act("-", "stack", stack, lambda r=regions: f"not found in {', '.join(r)}: nothing to remove")
    return actions


def settle(cloudformation: Any, name: str, wait_s: float) -> str:
    """Wait for an operation in progress to end (an update cancelled first); the status it ends in."""
    deadline = time.monotonic() + wait_s
    status = stack_status(cloudformation, name) or "gone"
    if status == "UPDATE_IN_PROGRESS":
        cloudformation.cancel_update_stack(StackName=name)
    while status.endswith("_IN_PROGRESS") and status != "CREATE_IN_PROGRESS":
        if time.monotonic() > deadline:
            return f"not settled: still {status} after {wait_s:.0f} s"
        time.sleep(SETTLE_POLL_S)
        status = stack_status(cloudformation, name) or "gone"
    return f"status {status}"


def _listed(into: list[str], buckets: list[str]) -> str:
    into.extend(buckets)
    return f"{len(buckets)} bucket(s) of its own"


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
