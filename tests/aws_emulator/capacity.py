"""Capacity: moto launches every instance asked for. `Emulator.refuse_capacity(region)` makes
Auto Scaling launch nothing there (`refuse_capacity(region, instance_type)`: no instance of that
type, as the survey's inf2 was refused in two regions while trn1 launched) and answer
DescribeScalingActivities with the failed activities a real account returns (moto's own answer is
always empty).

A launch template whose user data passes EC2's 16,384 bytes before base64 launches nothing, and
its group's activity fails with EC2's reason, as RunInstances refuses it (EC2 User Guide, "Work
with instance user data"; the API's InvalidParameterValue "User data is limited to 16384 bytes"):
moto launches it. `Emulator.refuse_launches(region, reason)` refuses every launch there so, with
another of EC2's reasons."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any


def refusal(group: Any, zone: str) -> dict[str, Any]:
    """A failed launch activity in AWS's words (the survey's capacity-and-quota-events.txt)."""
    return {
        "ActivityId": str(uuid.uuid4()),
        "AutoScalingGroupName": group.name,
        "Cause": "At 2026-10-05T16:40:00Z an instance was started in response to a difference "
        "between desired and actual capacity, increasing the capacity from 0 to 1.",
        "Description": "Launching a new EC2 instance.  Status Reason: ",
        "StartTime": datetime.now(UTC),
        "EndTime": datetime.now(UTC),
        "StatusCode": "Failed",
        "StatusMessage": "We currently do not have sufficient "
        f"{group.instance_type or 'requested'} capacity in the Availability Zone you requested "
        f"({zone}). Our system will be working on provisioning additional capacity. Launching "
        "EC2 instance failed.",
        "Progress": 100,
    }


# EC2's limit on user data before base64 (inference_constructs/user_data.py USER_DATA_LIMIT).
USER_DATA_LIMIT = 16_384
USER_DATA_REFUSAL = "User data is limited to 16384 bytes"


def too_much_user_data(group: Any) -> bool:
    data = group.user_data
    return data is not None and len(base64.b64decode(data.as_bytes())) > USER_DATA_LIMIT


def failed_launch(group: Any, reason: str) -> dict[str, Any]:
    return refusal(group, "") | {
        "StatusMessage": f"{reason}. Launching EC2 instance failed.",
        "Description": "Launching a new EC2 instance.  Status Reason: " + reason,
    }


def install(emulator: Any) -> Callable[[], None]:
    from moto.autoscaling.models import FakeAutoScalingGroup
    from moto.autoscaling.responses import AutoScalingResponse
    from moto.core.responses import ActionResult

    original_replace = FakeAutoScalingGroup.replace_autoscaling_group_instances
    original_describe = AutoScalingResponse.describe_scaling_activities

    def refused(group) -> bool:
        if group.region not in emulator.refused:
            return False
        types = emulator.refused_types.get(group.region)
        return not types or group.instance_type in types

    def replace(group, count_needed, propagated_tags):
        reason = USER_DATA_REFUSAL if too_much_user_data(group) else emulator.launch_refusals.get(group.region)
        if count_needed > 0 and reason:
            emulator.launch_failures.setdefault(group.region, []).append(failed_launch(group, reason))
            return None
        if count_needed > 0 and refused(group):
            emulator.refused[group.region].extend(refusal(group, zone) for zone in group.availability_zones)
            return None
        return original_replace(group, count_needed, propagated_tags)

    def describe(response):
        name = response._get_param("AutoScalingGroupName")
        failed = [*emulator.refused.get(response.region, []), *emulator.launch_failures.get(response.region, [])]
        activities = [a for a in failed if a["AutoScalingGroupName"] == name]
        return ActionResult({"Activities": activities})

    FakeAutoScalingGroup.replace_autoscaling_group_instances = replace
    AutoScalingResponse.describe_scaling_activities = describe

    def undo() -> None:
        FakeAutoScalingGroup.replace_autoscaling_group_instances = original_replace
        AutoScalingResponse.describe_scaling_activities = original_describe

    return undo
