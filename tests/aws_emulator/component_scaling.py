"""Application Auto Scaling's target tracking of an inference component's copies, which moto does
not run (it stores a scaling policy and never acts on it): a simulation on the emulator's clock,
scaled down so a test of a scale-out runs in seconds, with the copies served by the local servers
behind the fleet's router (tests/aws_emulator/routing.py).

What it follows, and where AWS says it:
- the metric is `ConcurrentRequestsPerCopy` (the policy's predefined
  `SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution`), a high-resolution metric
  SageMaker emits every 10 s (SageMaker developer guide, "Define a scaling policy": the
  high-resolution predefined metrics; Application Auto Scaling API changes of 2024-07-25). Here it
  is the requests in flight at the router over the copies in service, averaged over each period
  from five looks;
- target tracking "creates and manages the CloudWatch alarms" and "scales out proportionally to
  the metric as fast as it can, but scales in more gradually" (Application Auto Scaling user
  guide, "Target tracking scaling policies"): the scale-out alarm fires on 3 data points in a row
  above the target (of the 10 s period: UNCONFIRMED, a real account's DescribeAlarms shows it) and
  the scale-in one on 15 minute data points below it (the alarms it makes, as CloudWatch lists
  them for a target tracking policy; with the high-resolution metrics the policy "scales in at the
  same rate as standard metrics": SageMaker developer guide, "Define a scaling policy"): each
  minute's data point is the mean of its six 10 s ones. The new desired count (UNCONFIRMED) is ceil(copies x metric / target), within
  the scalable target's bounds;
- a copy starts after a delay the test sets (in AWS minutes: an instance from managed instance
  scaling, the container, the weights); DescribeInferenceComponent's DesiredCopyCount moves at
  the decision and CurrentCopyCount when the copies are in service;
- cooldowns (TargetTrackingScalingPolicyConfiguration): after a scale-out completes, no other
  scale-out for ScaleOutCooldown, and no scale-in for ScaleInCooldown after a scale-in (a
  scale-out during it goes ahead); the stack's values, 60 s and 600 s
  (inference_constructs/endpoint_scaling.py).

- a suspended scalable target: with `DynamicScalingOutSuspended` (or `...InSuspended`) in the
  target's SuspendedState, as RegisterScalableTarget stores it (moto keeps it), the policy does not
  scale out (in) (Application Auto Scaling API reference, SuspendedState: "Whether scale out by a
  target tracking scaling policy or a step scaling policy is suspended"; user guide, "Suspend and
  resume scaling for Application Auto Scaling"). No target registered: the policy acts.

Every AWS time (period, cooldowns) is multiplied by `time_scale` (0.02: a 10 s period is 0.2 s);
the copy's start is given in the emulator's own seconds. A step out of zero is not here: the
runtime's leave-zero (tests/aws_emulator/sagemaker_runtime.py) plays the alarm on
NoCapacityInvocationFailures; target tracking cannot leave zero (no copy, no per-copy figure), so
at zero copies a period has no data point, as CloudWatch has none.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.aws_emulator.inference_components import COPY_DIMENSION, Component, components
from tests.aws_emulator.routing import Fleet


@dataclass(frozen=True)
class AwsTiming:
    """AWS's own figures, in AWS seconds (see the module's docstring for each source)."""

    metric_period_s: float = 10.0
    out_datapoints: int = 3
    in_datapoints: int = 15
    # Scale-in's data points are of standard (minute) metrics.
    in_period_s: float = 60.0
    scale_out_cooldown_s: float = 60.0
    scale_in_cooldown_s: float = 600.0


@dataclass(frozen=True)
class TargetTracking:
    """One component's scalable target and policy, and how the simulation runs it."""

    component: str
    target: float
    min_copies: int
    max_copies: int
    # Emulator seconds from the decision to the new copies in service.
    copy_start_s: float
    time_scale: float = 0.02
    timing: AwsTiming = field(default_factory=AwsTiming)
    looks_per_period: int = 5

    @property
    def period_s(self) -> float:
        return self.timing.metric_period_s * self.time_scale


@dataclass
class Activity:
    """A scaling activity as DescribeScalingActivities would list it: when it was decided and when
    its copies were in service (emulator monotonic seconds)."""

    decided: float
    copies_from: int
    copies_to: int
    done: float | None = None


class ComponentScaling:
    """The simulation, in a thread, for as long as the block of `tracking` runs."""

    def __init__(self, emulator: Any, fleet: Fleet, policy: TargetTracking) -> None:
        self.emulator, self.fleet, self.policy = emulator, fleet, policy
        self.stop = threading.Event()
        self.datapoints: list[tuple[float, float]] = []
        self.activities: list[Activity] = []
        self.held_back: list[float] = []  # when it would have scaled out but scale-out was suspended
        self.out_until = 0.0
        self.in_until = 0.0
        self.pending: Activity | None = None
        self.thread = threading.Thread(target=self.run, name=f"scaling-{policy.component}", daemon=True)

    def located(self) -> tuple[Any, Component]:
        from moto.sagemaker.models import sagemaker_backends

        for account in list(sagemaker_backends):
            for region in list(sagemaker_backends[account]):
                backend = sagemaker_backends[account][region]
                found = components(backend).get(self.policy.component)
                if found is not None:
                    return backend, found
        raise LookupError(f"no inference component {self.policy.component}")

    def suspended(self) -> dict[str, bool]:
        """The SuspendedState of the component's scalable target, where one is registered."""
        from moto.applicationautoscaling.models import applicationautoscaling_backends

        resource = f"inference-component/{self.policy.component}"
        for account in list(applicationautoscaling_backends):
            for region in list(applicationautoscaling_backends[account]):
                targets = applicationautoscaling_backends[account][region].targets.get(COPY_DIMENSION) or {}
                if resource in targets:
                    return dict(targets[resource].suspended_state or {})
        return {}

    def in_flight(self) -> int:
        return sum(copy.in_flight for copy in self.fleet.all)

    def run(self) -> None:
        policy = self.policy
        look = policy.period_s / policy.looks_per_period
        while not self.stop.is_set():
            looks = []
            for _ in range(policy.looks_per_period):
                if self.stop.wait(look):
                    return
                looks.append(self.in_flight())
            _, component = self.located()
            if component.current_copies == 0:
                continue  # no copy, no per-copy data point
            metric = sum(looks) / len(looks) / component.current_copies
            self.datapoints.append((time.monotonic(), metric))
            self.evaluate(component, metric)

    def evaluate(self, component: Component, metric: float) -> None:
        policy, timing = self.policy, self.policy.timing
        now = time.monotonic()
        if self.pending is not None:
            return
        recent = [value for _, value in self.datapoints]
        current = component.current_copies
        wanted = math.ceil(current * metric / policy.target) if metric > 0 else policy.min_copies
        wanted = max(policy.min_copies, min(policy.max_copies, wanted))
        high = len(recent) >= timing.out_datapoints and all(v > policy.target for v in recent[-timing.out_datapoints :])
        minutes = minute_points(recent, timing)
        low = len(minutes) >= timing.in_datapoints and all(v < policy.target for v in minutes[-timing.in_datapoints :])
        suspended = self.suspended()
        if high and wanted > current and now >= self.out_until and suspended.get("DynamicScalingOutSuspended"):
            self.held_back.append(now)
        elif high and wanted > current and now >= self.out_until:
            self.scale(component, current, wanted, timing.scale_out_cooldown_s, out=True)
        elif low and wanted < current and now >= self.in_until and not suspended.get("DynamicScalingInSuspended"):
            self.scale(component, current, wanted, timing.scale_in_cooldown_s, out=False)

    def scale(self, component: Component, current: int, wanted: int, cooldown_s: float, *, out: bool) -> None:
        """DesiredCopyCount at once; the copies (and the router's servers) after the copy's start."""
        activity = Activity(time.monotonic(), current, wanted)
        self.activities.append(activity)
        self.pending = activity
        component.desired_copies = wanted
        delay = self.policy.copy_start_s if out else 0.0

        def done() -> None:
            if self.stop.wait(delay):
                return
            backend, _ = self.located()
            self.emulator.inference_components.set_copies(backend, self.policy.component, wanted)
            activity.done = time.monotonic()
            until = activity.done + cooldown_s * self.policy.time_scale
            if out:
                self.out_until = until
            else:
                self.in_until = until
            self.pending = None

        threading.Thread(target=done, name=f"copies-{self.policy.component}", daemon=True).start()


def minute_points(recent: list[float], timing: AwsTiming) -> list[float]:
    """The scale-in alarm's data points: the mean of each minute's high-resolution ones, counted
    back from the latest (a minute not yet whole is not a data point)."""
    per = max(1, round(timing.in_period_s / timing.metric_period_s))
    whole = len(recent) - len(recent) % per
    tail = recent[len(recent) - whole :]
    return [sum(tail[i : i + per]) / per for i in range(0, whole, per)]


def follow_copies(emulator: Any, fleet: Fleet, component: str) -> Callable[[Component], None]:
    """The router serves as many of its servers as the component has copies in service (at least
    one: at zero the runtime refuses before the router); the follower, to remove when done."""

    def follow(changed: Component) -> None:
        if changed.name == component:
            fleet.set_copies(max(1, min(changed.current_copies, len(fleet.all))))

    emulator.inference_components.followers.append(follow)
    return follow


@contextlib.contextmanager
def tracking(emulator: Any, fleet: Fleet, policy: TargetTracking) -> Iterator[ComponentScaling]:
    """The copies of `policy.component` scaled by target tracking on the fleet's load, and the
    router following them, until the block ends."""
    follower = follow_copies(emulator, fleet, policy.component)
    simulation = ComponentScaling(emulator, fleet, policy)
    simulation.thread.start()
    try:
        yield simulation
    finally:
        simulation.stop.set()
        simulation.thread.join(timeout=5)
        emulator.inference_components.followers.remove(follower)


def arm_scale_from_zero(region: str, component: str, min_copies: int = 0, actions: bool = True) -> str:
    """What the stack sets up at minCopies 0 (inference_constructs/endpoint_scaling.py), made through
    the APIs: the copies' scalable target from `min_copies`, a step policy adding one copy, and the
    alarm on the component's NoCapacityInvocationFailures that runs it (its actions on or off).
    The alarm's name."""
    import boto3

    target = {"ServiceNamespace": "sagemaker", "ResourceId": f"inference-component/{component}",
              "ScalableDimension": COPY_DIMENSION}  # fmt: skip
    scaling = boto3.client("application-autoscaling", region_name=region)
    scaling.register_scalable_target(**target, MinCapacity=min_copies, MaxCapacity=4)
    policy = scaling.put_scaling_policy(
        PolicyName=f"{component}-leave-zero", PolicyType="StepScaling", **target,
        StepScalingPolicyConfiguration={"AdjustmentType": "ChangeInCapacity", "Cooldown": 60,
                                        "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]},
    )  # fmt: skip
    alarm = f"{component}-no-capacity"
    boto3.client("cloudwatch", region_name=region).put_metric_alarm(
        AlarmName=alarm, ActionsEnabled=actions, Namespace="AWS/SageMaker", MetricName="NoCapacityInvocationFailures",
        Dimensions=[{"Name": "InferenceComponentName", "Value": component}], Statistic="Sum", Period=60,
        EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold",
        AlarmActions=[policy["PolicyARN"]],
    )  # fmt: skip
    return alarm


def disarm_scale_from_zero(region: str, component: str) -> None:
    """Takes away what `arm_scale_from_zero` made."""
    import boto3

    boto3.client("application-autoscaling", region_name=region).deregister_scalable_target(
        ServiceNamespace="sagemaker", ResourceId=f"inference-component/{component}", ScalableDimension=COPY_DIMENSION
    )
    boto3.client("cloudwatch", region_name=region).delete_alarms(AlarmNames=[f"{component}-no-capacity"])
