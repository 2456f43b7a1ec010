"""Reads what a server says about itself: its readiness parameter and its Auto Scaling group.

The readiness parameter `/inference/<backend>/ready` is written by the stack (`launching`, or
`waiting-for-image` where the app builds the image), by the instance (`booting` first, `starting`
at each start, `ready`, or `failed` with a reason once it took itself to zero) and by the image
build when it fails. A record names the instance that wrote it: one from an instance the group no
longer runs is stale (a rolling update or a replacement), and says nothing of the new one. The
group tells how many instances the app wants (zero: held there on purpose), whether one
launched, and, when none did, the refusals it met (capacity, a zone that does not offer the type).
A server's record carries the phases its boot reached (catalog/boot.py PHASES), each with its
time, and which way each step went (the instance store or the root volume, the image from the
region's ECR or its public copy, the store's weights or the hub, stored graphs or a compile).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from runner.core.errors import aws_error_code
from runner.core.typed_json import JsonObject

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
    # The server took its own group to zero (True), tried and could not (False), or did not say.
    stopped: bool | None = None
    # The image build the record speaks of (waiting for it, or failed in it).
    build_id: str | None = None
    # The phases this boot reached, in order: (name, epoch seconds).
    phases: list[tuple[str, float]] = field(default_factory=list)
    # Which way each step went, and why when it was the slow way.
    paths: dict[str, str] = field(default_factory=dict)
    # The first answer to the readiness question, whether it was right, or why none came.
    answer: str | None = None
    answer_correct: bool | None = None
    answer_error: str | None = None
    # The compiled graphs this boot kept in the store, `KEY:SHA256` (server_scripts/store.sh).
    graphs: str | None = None

    @property
    def kept_graphs(self) -> tuple[str, str] | None:
        """(key, sha256) of the graphs the boot kept, when it says so in that shape."""
        key, _, digest = (self.graphs or "").partition(":")
        if len(key) == 32 and len(digest) == 64 and all(c in "0123456789abcdef" for c in key + digest):
            return key, digest
        return None

    @property
    def line(self) -> str:
        if self.state in ("failed", "waiting-for-image") and self.reason:
            return f"{self.state}: {self.reason}"
        return self.state

    def stale_for(self, instance_id: str | None) -> bool:
        """True when the record was written by another instance than the group's current one."""
        return bool(self.instance_id and instance_id and self.instance_id != instance_id)

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
            stopped=data.get("stopped") if isinstance(data.get("stopped"), bool) else None,
            build_id=data.get("build_id") if isinstance(data.get("build_id"), str) else None,
            phases=parse_phases(data.get("phases")),
            paths={k: v for k, v in (data.get("paths") or {}).items() if isinstance(v, str)}
            if isinstance(data.get("paths"), dict)
            else {},
            answer=str(data["answer"]) if data.get("answer") is not None else None,
            answer_correct=data.get("answer_correct") if isinstance(data.get("answer_correct"), bool) else None,
            answer_error=data.get("answer_error") if isinstance(data.get("answer_error"), str) else None,
            graphs=data.get("graphs") if isinstance(data.get("graphs"), str) else None,
        )


def parse_phases(value: Any) -> list[tuple[str, float]]:
    """`[[NAME, EPOCH], ...]` as the boot writes it; anything else is no phases."""
    if not isinstance(value, list):
        return []
    found = []
    for item in value:
        if (
            isinstance(item, list | tuple)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], int | float)
        ):
            found.append((item[0], float(item[1])))
    return found


def phase_seconds(phases: list[tuple[str, float]], launched: datetime | None) -> JsonObject:
    """The phases as the evidence keeps them: `phases_s`, each phase's moment in seconds from the
    instance's launch, and `phase_s`, the seconds each phase took (from the one before it; the
    first from the launch). Without a launch time, from the first phase."""
    if not phases:
        return {}
    start = launched.timestamp() if launched else phases[0][1]
    marks = {name: round(at - start, 1) for name, at in phases}
    taken, previous = {}, 0.0
    for name, mark in marks.items():
        taken[name] = round(mark - previous, 1)
        previous = mark
    return {"phases_s": marks, "phase_s": taken}


def read_readiness(ssm: Any, parameter: str) -> Readiness:
    from botocore.exceptions import ClientError

    try:
        value = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    except ClientError as error:
        code = aws_error_code(error)
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
    desired: int | None = None
    exists: bool = True


def read_group(autoscaling: Any, group_name: str) -> GroupState:
    groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group_name])["AutoScalingGroups"]
    state = GroupState(exists=bool(groups))
    if groups:
        state.desired = groups[0].get("DesiredCapacity")
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


# The graphs a backend's servers may load, as runner.up records them (newest last), at most this
# many keys: one parameter, well inside a standard parameter's 4 KB.
RECORDED_GRAPHS = 20


def record_graphs(ssm: Any, parameter: str, key: str, digest: str) -> bool:
    """Add (key, sha256) to the backend's record of the graphs its servers may load; True when it
    was not there. The record is the runner's: no server's role may write it."""
    try:
        current = json.loads(ssm.get_parameter(Name=parameter)["Parameter"]["Value"]).get("graphs", {})
    except (ValueError, AttributeError):
        current = {}
    if not isinstance(current, dict) or current.get(key) == digest:
        return False
    kept = {k: v for k, v in current.items() if k != key}
    kept[key] = digest
    kept = dict(list(kept.items())[-RECORDED_GRAPHS:])
    ssm.put_parameter(Name=parameter, Value=json.dumps({"graphs": kept}), Type="String", Overwrite=True)
    return True
