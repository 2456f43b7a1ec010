"""The Application Auto Scaling target on an inference component's copies, which the stack
registers (inference_constructs/endpoint_scaling.py): `inference-component/NAME`, dimension
`sagemaker:inference-component:DesiredCopyCount`, with a target tracking policy and, at a minimum of
0, the step policy its no-capacity alarm starts.

Application Auto Scaling owns that dimension: its policies act on DesiredCopyCount whatever the
runner set by hand. A measurement that sets the copies itself suspends dynamic scaling first
(RegisterScalableTarget again with the same bounds and a SuspendedState: Application Auto Scaling
API reference, SuspendedState, "DynamicScalingInSuspended / DynamicScalingOutSuspended") and puts
the state it found back at the end. Here too what both the copies' measurements share: the
instances an endpoint has in service, and setting the copies back after a change still under way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from runner.core.waits import doubling_waits

NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
SUSPENDED_KEYS = ("DynamicScalingInSuspended", "DynamicScalingOutSuspended", "ScheduledScalingSuspended")


def resource_id(component: str) -> str:
    return f"inference-component/{component}"


@dataclass(frozen=True)
class CopyTarget:
    """The scalable target as DescribeScalableTargets gives it: its bounds and SuspendedState."""

    component: str
    min_capacity: int
    max_capacity: int
    suspended: dict[str, bool]

    @property
    def dynamic_suspended(self) -> bool:
        return bool(
            self.suspended.get("DynamicScalingInSuspended") and self.suspended.get("DynamicScalingOutSuspended")
        )

    def bounds(self) -> str:
        return f"{resource_id(self.component)} DesiredCopyCount {self.min_capacity}-{self.max_capacity}"

    def state_text(self) -> str:
        on = [key for key in SUSPENDED_KEYS if self.suspended.get(key)]
        return ", ".join(on) if on else "nothing suspended"


def read_target(client: Any, component: str) -> CopyTarget | None:
    """The component's scalable target; None where none is registered."""
    found = client.describe_scalable_targets(
        ServiceNamespace=NAMESPACE, ResourceIds=[resource_id(component)], ScalableDimension=DIMENSION
    ).get("ScalableTargets")
    for target in found or []:
        if target.get("ResourceId") == resource_id(component):
            state = target.get("SuspendedState") or {}
            return CopyTarget(
                component,
                int(target["MinCapacity"]),
                int(target["MaxCapacity"]),
                {key: bool(state.get(key)) for key in SUSPENDED_KEYS},
            )
    return None


def register(client: Any, target: CopyTarget, suspended: dict[str, bool]) -> None:
    """RegisterScalableTarget again with the target's own bounds: only its SuspendedState changes."""
    client.register_scalable_target(
        ServiceNamespace=NAMESPACE,
        ResourceId=resource_id(target.component),
        ScalableDimension=DIMENSION,
        MinCapacity=target.min_capacity,
        MaxCapacity=target.max_capacity,
        SuspendedState={key: bool(suspended.get(key)) for key in SUSPENDED_KEYS},
    )


def dynamic_held(target: CopyTarget) -> dict[str, bool]:
    """Dynamic scaling suspended both ways; scheduled scaling as it was."""
    return target.suspended | {"DynamicScalingInSuspended": True, "DynamicScalingOutSuspended": True}


def restore_command(target: CopyTarget) -> str:
    """The command that puts the SuspendedState back by hand."""
    state = ",".join(f"{key}={str(target.suspended.get(key, False)).lower()}" for key in SUSPENDED_KEYS)
    return (
        f"aws application-autoscaling register-scalable-target --service-namespace {NAMESPACE} "
        f"--resource-id {resource_id(target.component)} --scalable-dimension {DIMENSION} "
        f"--min-capacity {target.min_capacity} --max-capacity {target.max_capacity} --suspended-state {state}"
    )


def instances_in_service(client: Any, endpoint: str) -> int | None:
    """DescribeEndpoint's CurrentInstanceCount over its variants; None where a variant gives none
    (the field is optional in ProductionVariantSummary: unknown, not zero)."""
    variants = client.describe_endpoint(EndpointName=endpoint).get("ProductionVariants") or []
    counts = [v.get("CurrentInstanceCount") for v in variants]
    return None if not counts or None in counts else sum(int(c) for c in counts)


# A change of copies under way (DescribeInferenceComponent's InferenceComponentStatus).
BUSY = ("Creating", "Updating")
# The first look after a change: a count that settles at once (copies removed, a copy already
# loaded on the instance) is seen then, not a whole poll later.
FIRST_LOOK_S = 0.5


def look_delays(poll_s: float) -> Iterator[float]:
    """Seconds between looks at a component's change: from FIRST_LOOK_S, doubling up to `poll_s`."""
    return doubling_waits(FIRST_LOOK_S, poll_s)


def set_once_settled(
    set_copies: Callable[[], None],
    status: Callable[[], str],
    wait_s: float,
    poll_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Set the copies; where that is refused (a change that timed out may still be under way: the
    component Creating or Updating), wait while it is, at most `wait_s`, and try once more (its
    refusal raised). Once more whatever the status read after the refusal: the change may have
    ended between the two. True when it took the second try."""
    try:
        set_copies()
        return False
    except Exception:
        pass
    deadline = time.monotonic() + wait_s
    delays = look_delays(poll_s)
    while status() in BUSY and time.monotonic() < deadline:
        sleep(min(next(delays), max(0.0, deadline - time.monotonic())))
    set_copies()
    return True
