"""Removing what the app left: ours only, stacks first (CloudFormation removes what it made), then
what they left, each step's outcome kept and a refusal never stopping the rest."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from runner.cloud.aws import boto_client
from runner.cloud.forwards import live_forwards
from runner.cloud.leftovers import Found
from runner.core.console import console
from runner.core.errors import RunnerError, describe

# Deletion order: stacks first (CloudFormation removes what it made), then what it left.
DELETE_ORDER = ("session", "stack", "auto-scaling-group", "instance", "endpoint", "endpoint-config", "model", "volume")


def delete_ours(found: list[Found], wait_s: float) -> list[dict[str, Any]]:
    """Remove ours in DELETE_ORDER; each step's outcome is kept, a refusal never stops the rest."""
    from runner.cloud.port_forward import close_forwards

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
        "stack": lambda f: delete_stack(client("cloudformation", f.region), f.id, wait_s),
        "auto-scaling-group": lambda f: client("autoscaling", f.region).delete_auto_scaling_group(
            AutoScalingGroupName=f.id, ForceDelete=True
        ),
        "instance": lambda f: client("ec2", f.region).terminate_instances(InstanceIds=[f.id]),
        "endpoint": lambda f: client("sagemaker", f.region).delete_endpoint(EndpointName=f.id),
        "endpoint-config": lambda f: client("sagemaker", f.region).delete_endpoint_config(EndpointConfigName=f.id),
        "model": lambda f: client("sagemaker", f.region).delete_model(ModelName=f.id),
        "volume": lambda f: client("ec2", f.region).delete_volume(VolumeId=f.id),
        "nat-gateway": lambda f: client("ec2", f.region).delete_nat_gateway(NatGatewayId=f.id),
        "elastic-ip": lambda f: client("ec2", f.region).release_address(AllocationId=f.id),
    }
    order = {kind: index for index, kind in enumerate((*DELETE_ORDER, "nat-gateway", "elastic-ip"))}
    for item in sorted((f for f in found if f.ours), key=lambda f: order[f.kind]):
        if item.kind == "volume" and item.state == "in-use":
            # Its instance was terminated above: wait for the volume to be released, then delete it
            # unless the termination took it along (DeleteOnTermination).
            item.state = released_volume_state(client("ec2", item.region), item.id, wait_s)
            if item.state != "available":
                actions.append(asdict(item) | {"outcome": f"left: {item.state}"})
                continue
        console.print(f"[dim]deleting {item.kind} {item.id} in {item.region} …[/dim]")
        try:
            remove[item.kind](item)
            outcome = "deleted"
        except Exception as error:
            outcome = f"not deleted: {describe(error)}"
        actions.append(asdict(item) | {"outcome": outcome})
    return actions


def released_volume_state(ec2: Any, volume_id: str, wait_s: float) -> str:
    """`available` once detached, `deleted` once gone; whatever it still is after `wait_s`."""
    from botocore.exceptions import ClientError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            (volume,) = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "InvalidVolume.NotFound":
                return "deleted"
            raise
        if volume["State"] in ("available", "deleted") or time.monotonic() > deadline:
            return volume["State"]
        time.sleep(2)


def delete_stack(cloudformation: Any, name: str, wait_s: float) -> None:
    """DeleteStack and wait for it; a deletion that fails is retried once (dependencies)."""
    from botocore.exceptions import WaiterError

    for attempt in (1, 2):
        cloudformation.delete_stack(StackName=name)
        try:
            cloudformation.get_waiter("stack_delete_complete").wait(
                StackName=name,
                WaiterConfig={"Delay": 2 if wait_s < 120 else 15, "MaxAttempts": max(1, int(wait_s // 2))},
            )
            return
        except WaiterError as error:
            if attempt == 2:
                raise RunnerError(f"stack {name} not deleted: {describe(error)}") from None
            time.sleep(1)
