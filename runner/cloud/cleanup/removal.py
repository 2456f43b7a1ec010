"""Removing what the app left: ours only, stacks first (CloudFormation removes what it made), then
what they left (an endpoint's inference components before the endpoint), each step's outcome kept
and a refusal never stopping the rest. Before the stacks:
our running transform jobs are stopped and our buckets emptied (every object version), since
CloudFormation deletes only an empty bucket; a bucket still there once its stack is gone is
deleted. Custom Model Import models are deleted after the stacks (no stack removes them). The
repositories of the images the app builds and the app's store of weights and compiled graphs (the
region's store stack retains them) are kept unless asked (`purge_kept`)."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from runner.cloud.aws import boto_client
from runner.cloud.cleanup.leftovers import Found
from runner.cloud.jobs.custom_model_import import delete_imported_model
from runner.cloud.reach.forwards_file import live_forwards
from runner.core.console import console
from runner.core.errors import RunnerError, aws_error_code, describe

# Deletion order: what must go before its stack, the stacks (CloudFormation removes what it made),
# then what they left.
DELETE_ORDER = (
    "session",
    "transform-job",
    "bucket",
    "stack",
    "auto-scaling-group",
    "instance",
    # An endpoint that hosts inference components is deleted only once they are gone.
    "inference-component",
    "endpoint",
    "endpoint-config",
    "model",
    "imported-model",
    "volume",
    "image-repository",
)
# Ours, listed, and never removed: the reason is the outcome.
LEFT = {"import-job": "left: Bedrock has no call that stops an import job; sweep again once it has ended"}


def delete_ours(found: list[Found], wait_s: float, *, purge_kept: bool = False) -> list[dict[str, Any]]:
    """Remove ours in DELETE_ORDER; each step's outcome is kept, a refusal never stops the rest.
    What is kept on purpose (the built images) goes only with `purge_kept`."""
    from runner.cloud.reach.ssm_forward import close_forwards

    actions: list[dict[str, Any]] = []
    if live_forwards():
        closed = close_forwards(aws=True)
        actions.append({"region": "-", "kind": "local forwards", "id": f"{len(closed)} plugin(s)", "outcome": "closed"})
    clients: dict[tuple[str, str], Any] = {}

    def client(service: str, region: str) -> Any:
        if (service, region) not in clients:
            clients[(service, region)] = boto_client(service, region, 60)
        return clients[(service, region)]

    remove = {
        "session": lambda f: client("ssm", f.region).terminate_session(SessionId=f.id),
        "stack": lambda f: delete_stack(
            client("cloudformation", f.region), f.id, wait_s, client("sagemaker", f.region)
        ),
        "auto-scaling-group": lambda f: client("autoscaling", f.region).delete_auto_scaling_group(
            AutoScalingGroupName=f.id, ForceDelete=True
        ),
        "instance": lambda f: client("ec2", f.region).terminate_instances(InstanceIds=[f.id]),
        "inference-component": lambda f: delete_inference_component(client("sagemaker", f.region), f.id, wait_s),
        "endpoint": lambda f: client("sagemaker", f.region).delete_endpoint(EndpointName=f.id),
        "endpoint-config": lambda f: client("sagemaker", f.region).delete_endpoint_config(EndpointConfigName=f.id),
        "model": lambda f: client("sagemaker", f.region).delete_model(ModelName=f.id),
        "volume": lambda f: client("ec2", f.region).delete_volume(VolumeId=f.id),
        "transform-job": lambda f: stop_transform_job(client("sagemaker", f.region), f.id),
        "bucket": lambda f: f"emptied ({empty_bucket(client('s3', f.region), f.id)} object version(s))",
        "imported-model": lambda f: "deleted" if delete_imported_model(client("bedrock", f.region), f.id) else "gone",
        "nat-gateway": lambda f: client("ec2", f.region).delete_nat_gateway(NatGatewayId=f.id),
        "elastic-ip": lambda f: client("ec2", f.region).release_address(AllocationId=f.id),
        "image-repository": lambda f: client("ecr", f.region).delete_repository(repositoryName=f.id, force=True),
    }
    order = {kind: index for index, kind in enumerate((*DELETE_ORDER, "nat-gateway", "elastic-ip", *LEFT))}
    emptied: list[Found] = []
    for item in sorted((f for f in found if f.ours), key=lambda f: order[f.kind]):
        if item.kept and not purge_kept:
            actions.append(asdict(item) | {"outcome": "kept (--purge-images removes it)"})
            continue
        if item.kind in LEFT:
            actions.append(asdict(item) | {"outcome": LEFT[item.kind]})
            continue
        if item.kind == "volume" and item.state == "in-use":
            # Its instance was terminated above: wait for the volume to be released, then delete it
            # unless the termination took it along (DeleteOnTermination).
            item.state = released_volume_state(client("ec2", item.region), item.id, wait_s)
            if item.state != "available":
                actions.append(asdict(item) | {"outcome": f"left: {item.state}"})
                continue
        verb = {"bucket": "emptying", "transform-job": "stopping"}.get(item.kind, "deleting")
        console.print(f"[dim]{verb} {item.kind} {item.id} in {item.region} …[/dim]")
        try:
            result = remove[item.kind](item)
            outcome = result if isinstance(result, str) else "deleted"
            emptied += [item] if item.kind == "bucket" else []
        except Exception as error:
            outcome = f"not deleted: {describe(error)}"
        actions.append(asdict(item) | {"outcome": outcome})
    for item in emptied:
        try:
            outcome = delete_left_bucket(client("s3", item.region), item.id)
        except Exception as error:
            outcome = f"not deleted: {describe(error)}"
        actions.append(asdict(item) | {"outcome": outcome})
    return actions


# A component's states in which SageMaker refuses to delete it ("while it is in state
# CREATE_IN_PROGRESS" as its container starts, "UPDATE_RC_IN_PROGRESS" while a scaling changes its
# copies: a public deploy tool's teardown notes, which retry for 15 minutes); they end on their own.
COMPONENT_BUSY = ("Creating", "Updating")


def component_status(sagemaker: Any, name: str) -> str | None:
    """The component's status, None once it is gone."""
    try:
        return sagemaker.describe_inference_component(InferenceComponentName=name)["InferenceComponentStatus"]
    except Exception as error:
        if "Could not find" in str(error):
            return None
        raise


def settle_component(sagemaker: Any, name: str, deadline: float, poll_s: float = 2.0) -> str | None:
    """Wait while the component is being created or scaled (until `deadline`); its status then."""
    status = component_status(sagemaker, name)
    while status in COMPONENT_BUSY and time.monotonic() < deadline:
        time.sleep(poll_s)
        status = component_status(sagemaker, name)
    return status


def delete_inference_component(sagemaker: Any, name: str, wait_s: float, poll_s: float = 2.0) -> str:
    """DeleteInferenceComponent, then wait until it is gone (it is Deleting a while, and its endpoint
    cannot go before): "gone with its stack" when CloudFormation already took it. Refused while it is
    being created or scaled (a sweep during a scale-out from zero, or the idle scale-in): asked again
    once that ends, within `wait_s`, so its endpoint, which bills, can go after it."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            sagemaker.delete_inference_component(InferenceComponentName=name)
            break
        except Exception as error:
            if "Could not find" in str(error):
                return "gone with its stack"
            if component_status(sagemaker, name) not in COMPONENT_BUSY or time.monotonic() >= deadline:
                raise
            settle_component(sagemaker, name, deadline, poll_s)
    while time.monotonic() < deadline:
        try:
            sagemaker.describe_inference_component(InferenceComponentName=name)
        except Exception as error:
            if "Could not find" in str(error):
                return "deleted"
            raise
        time.sleep(poll_s)
    raise RunnerError(f"inference component {name} still there after {wait_s:g} s")


def stop_transform_job(sagemaker: Any, name: str) -> str:
    """StopTransformJob: SageMaker stops the job's instances (the job ends Stopped)."""
    sagemaker.stop_transform_job(TransformJobName=name)
    return "stopped"


def empty_bucket(s3: Any, name: str) -> int:
    """Delete every object version and delete marker in the bucket; how many there were."""
    removed = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
        doomed = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
        ]
        for start in range(0, len(doomed), 1000):  # DeleteObjects takes 1000 keys at most
            batch = doomed[start : start + 1000]
            errors = s3.delete_objects(Bucket=name, Delete={"Objects": batch, "Quiet": True}).get("Errors", [])
            if errors:
                first = errors[0]
                raise RunnerError(
                    f"bucket {name}: {len(errors)} object(s) not deleted, {first.get('Key')}: "
                    f"{first.get('Code')} {first.get('Message', '')}".strip()
                )
            removed += len(batch)
    return removed


def delete_left_bucket(s3: Any, name: str) -> str:
    """After the stacks: a bucket its stack took along is gone; one left is deleted."""
    from botocore.exceptions import ClientError

    try:
        s3.head_bucket(Bucket=name)
    except ClientError as error:
        if aws_error_code(error) in ("404", "NoSuchBucket", "NotFound"):
            return "gone with its stack"
        raise
    s3.delete_bucket(Bucket=name)
    return "deleted"


def released_volume_state(ec2: Any, volume_id: str, wait_s: float) -> str:
    """`available` once detached, `deleted` once gone; whatever it still is after `wait_s`."""
    from botocore.exceptions import ClientError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            (volume,) = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"]
        except ClientError as error:
            if aws_error_code(error) == "InvalidVolume.NotFound":
                return "deleted"
            raise
        if volume["State"] in ("available", "deleted") or time.monotonic() > deadline:
            return volume["State"]
        time.sleep(2)


def delete_stack(cloudformation: Any, name: str, wait_s: float, sagemaker: Any | None = None) -> None:
    """DeleteStack and wait for it; a deletion that fails is retried once (dependencies). With
    `sagemaker`, the stack's inference components are first waited out of a creation or a scaling
    (within `wait_s`): SageMaker refuses to delete one meanwhile, and CloudFormation's deletion of
    the stack may fail on it and leave its endpoint, which bills (whether its delete handler waits
    the state out itself only a real account shows)."""
    from botocore.exceptions import WaiterError

    if sagemaker is not None:
        deadline = time.monotonic() + wait_s
        for component in stack_components(cloudformation, name):
            settle_component(sagemaker, component, deadline)
    delay = 2 if wait_s < 120 else 15
    for attempt in (1, 2):
        cloudformation.delete_stack(StackName=name)
        try:
            # About `wait_s` in all per attempt: polls every `delay` seconds.
            cloudformation.get_waiter("stack_delete_complete").wait(
                StackName=name, WaiterConfig={"Delay": delay, "MaxAttempts": max(1, int(wait_s // delay))}
            )
            return
        except WaiterError as error:
            if attempt == 2:
                raise RunnerError(f"stack {name} not deleted: {describe(error)}") from None
            time.sleep(1)


def stack_components(cloudformation: Any, stack: str) -> list[str]:
    """The names of the stack's inference components (CloudFormation knows each by its ARN)."""
    names: list[str] = []
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("ResourceType") == "AWS::SageMaker::InferenceComponent" and resource.get(
                "PhysicalResourceId"
            ):
                names.append(resource["PhysicalResourceId"].rpartition("inference-component/")[2])
    return names
