"""Reads what a server says about itself: its readiness parameter and its Auto Scaling group.

The instance writes `/inference/<backend>/ready` as it boots: `launching` (from the stack),
`starting`, `ready` or `failed` with a reason; the group tells whether an instance launched at all
and, when none did, the refusals it met (capacity, a zone that does not offer the type).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

CAPACITY_MARKERS = (
    "InsufficientInstanceCapacity",
    "insufficient capacity",
    "do not have sufficient",
    "Unsupported",
    "not supported in your requested Availability Zone",
    "ResourceLimitExceeded",
    "VcpuLimitExceeded",
)


def is_capacity_refusal(message: str) -> bool:
    """True for the refusals another zone or region may not give: capacity, offering, quota."""
    lowered = message.lower()
    return any(marker.lower() in lowered for marker in CAPACITY_MARKERS)


@dataclass
class Readiness:
    state: str
    reason: str | None = None
    instance_id: str | None = None
    zone: str | None = None
    at: str | None = None
    # Seconds the server took to load its weights, from its own log (vLLM), when it says.
    weights_load_s: float | None = None

    @property
    def line(self) -> str:
        return f"failed: {self.reason}" if self.state == "failed" else self.state

    @classmethod
    def parse(cls, text: str) -> Readiness:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return cls(state="unknown", reason=f"readiness parameter is not JSON: {text[:80]!r}")
        if not isinstance(data, dict) or not isinstance(data.get("state"), str):
            return cls(state="unknown", reason=f"readiness parameter has no state: {text[:80]!r}")
        return cls(
            state=data["state"],
            reason=data.get("reason"),
            instance_id=data.get("instance_id"),
            zone=data.get("zone"),
            at=data.get("at"),
            weights_load_s=data.get("weights_load_s") if isinstance(data.get("weights_load_s"), int | float) else None,
        )


def read_readiness(ssm: Any, parameter: str) -> Readiness:
    from botocore.exceptions import ClientError

    try:
        value = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ParameterNotFound":
            return Readiness(state="absent", reason=f"no parameter {parameter}: is the stack deployed?")
        raise
    return Readiness.parse(value)


@dataclass
class GroupState:
    """One Auto Scaling group: the instance it runs (if any) and the launches it was refused."""

    instance_id: str | None = None
    zone: str | None = None
    lifecycle: str | None = None
    refusals: list[dict[str, str]] = field(default_factory=list)


def read_group(autoscaling: Any, group_name: str) -> GroupState:
    groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])["AutoScalingGroups"]
    state = GroupState()
    if groups and groups[0].get("Instances"):
        instance = groups[0]["Instances"][0]
        state.instance_id = instance["InstanceId"]
        state.zone = instance.get("AvailabilityZone")
        state.lifecycle = instance.get("LifecycleState")
    activities = autoscaling.describe_scaling_activities(AutoScalingGroupName=group_name).get("Activities", [])
    for activity in activities:
        if activity.get("StatusCode") in ("Failed", "Cancelled"):
            message = activity.get("StatusMessage") or activity.get("Description") or ""
            state.refusals.append(
                {"at": str(activity.get("StartTime", "")), "message": " ".join(message.split())[:300]}
            )
    return state
