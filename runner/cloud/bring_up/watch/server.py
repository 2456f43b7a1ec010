"""One backend from deploy to ready, watched by `runner.up`: what it is doing, and what to do.

An EC2 server's group may be at zero on purpose: waiting for the image the app builds, stopped by
a fault, or by the time-to-live. The watch tells those apart from a capacity refusal and brings
such a group back (its image present: one instance), or waits for the build (starting one when
the deploy's own build does not show up), instead of failing over. A server that reports
`failed` is at zero already (it took itself there; the watch makes sure); its watch ends there
while the others go on. Only a group that wants an instance and gets none within the launch
bound, its refusals recorded, counts as no capacity; a launch EC2 refuses for what it asks (user
data past its limit, a bad parameter) fails at once, since every other zone and region would
refuse it too. A SageMaker endpoint the time-to-live
deleted is recreated from its endpoint config under the same name.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from catalog import BACKENDS
from catalog.builds import dlc_registry
from runner.cloud.bring_up.watch.common import (
    FAILED,
    NO_CAPACITY,
    READY,
    SETTLE_S,
    STOPPED,
    TIMEOUT,
    Watch,
    iso,
    minutes_between,
    parse_time,
)
from runner.cloud.image_builds import (
    RUNNING,
    BuildRefused,
    image_state,
    last_log_lines,
    latest_build,
    rebuild_hint,
    start_build,
)
from runner.cloud.readiness import (
    Readiness,
    is_capacity_refusal,
    phase_seconds,
    read_group,
    read_readiness,
    record_graphs,
)
from runner.core.errors import describe
from runner.costing.billing_now import instance_billing


class ServerWatch(Watch):
    """An EC2 server: group, readiness, and the image it runs."""

    def end(self, outcome: str, reason: str | None = None) -> str:
        return super().end(outcome, reason + rebuild_hint(self.output, reason) if reason else reason)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waiting_for_image = False
        self.wants_since: float | None = None
        self.launched: float | None = None
        self.instances_seen: set[str] = set()
        self.zero_since: float | None = None
        self.build_started = False
        minutes = self.output.ready_minutes or 60
        self.ready_timeout = self.options.ready_timeout_s or (minutes + 10) * 60

    def take_to_zero(self, why: str) -> None:
        """Make sure a server that does not serve bills nothing, whatever it managed itself."""
        try:
            self.client("autoscaling").set_desired_capacity(
                AutoScalingGroupName=self.output.auto_scaling_group, DesiredCapacity=0
            )
            self.log(f"{self.output.name}: group taken to zero ({why})")
        except ClientError as error:
            self.log(f"{self.output.name}: could not take the group to zero: {describe(error)}")

    def expired(self) -> str | None:
        """The stack's time-to-live when it has passed (a watch without a deploy keeps the old one)."""
        at = parse_time(self.output.expires_at)
        return self.output.expires_at if at is not None and at <= datetime.now(UTC) else None

    def bring_back(self, why: str) -> None:
        self.client("autoscaling").set_desired_capacity(
            AutoScalingGroupName=self.output.auto_scaling_group, DesiredCapacity=1
        )
        self.record["held_at_zero"] = why
        self.record["brought_back_at"] = iso(datetime.now(UTC))
        self.wants_since = time.monotonic()
        self.log(f"{self.output.name}: was held at zero ({why}): brought back to one instance")

    def fresh(self, readiness: Readiness) -> bool:
        """Written during this watch, or by an instance this watch has seen."""
        if readiness.instance_id and readiness.instance_id in self.instances_seen:
            return True
        at = parse_time(readiness.at)
        return at is not None and at >= self.started_at

    # --- images ----------------------------------------------------------------------------------

    def image_built_here(self) -> bool:
        return bool(self.output.image_build_project)

    def in_account_ecr(self) -> bool:
        """The image is in this account's ECR (not one of AWS's DLC registries, which AWS keeps)."""
        return ".dkr.ecr." in (self.output.image or "").split("/", 1)[0] and not dlc_registry(self.output.image)

    def held_at_zero(self, readiness: Readiness) -> str | None:
        """The group is at zero when the watch begins: bring it back, or wait for its image."""
        why = readiness.line
        expiry = self.expired()
        if expiry:
            return self.end(
                STOPPED, f"held at zero: its time-to-live ({expiry}) has passed; python -m runner.up brings it back"
            )
        if not (self.image_built_here() or self.in_account_ecr()):
            self.bring_back(why)
            return None
        state = image_state(self.client("ecr"), self.output.image or "")
        self.record["image_state"] = state
        if state == "present":
            self.bring_back(why)
            return None
        if state == "no-repository" and not self.image_built_here():
            return self.end(
                FAILED, f"the image repository of {self.output.image} does not exist in {self.output.region}"
            )
        # A repository the app's build makes on first use: none yet is an image not built yet.
        if not self.image_built_here():
            return self.end(FAILED, f"image not found: {self.output.image} (this app does not build it; push it first)")
        self.waiting_for_image = True
        self.log(f"{self.output.name}: waiting for its image {self.output.image} (nothing bills while it builds)")
        return None

    def watch_build(self, group: Any, readiness: Readiness) -> str | None:
        project = self.output.image_build_project or ""
        build = latest_build(self.client("codebuild"), project)
        begun = build.get("startTime") if build else None
        fresh = isinstance(begun, datetime) and begun >= self.started_at
        if build is not None and build["buildStatus"] != RUNNING and not fresh and not self.options.start_builds:
            fresh = True  # watching without a deploy: the build that ended is the answer
        if build is None and not self.options.start_builds:
            return self.end(FAILED, f"no build of {self.output.image} in {project}, and this watch starts none")
        if build is None or (build["buildStatus"] != RUNNING and not fresh):
            if time.monotonic() - self.started < self.options.build_grace_s:
                return None  # the deploy's own build is about to show up
            if self.build_started:
                # This watch started one already and the project does not list it: never start a second.
                if time.monotonic() - self.started > 2 * self.options.build_grace_s + 600:
                    return self.end(FAILED, f"image build {self.record['build_id']} never showed in {project}")
                return None
            try:
                build, started = start_build(self.client("codebuild"), project)
            except BuildRefused as error:
                # Nothing runs for it (its group waits at zero): this backend fails, the others go on.
                return self.end(FAILED, f"image {self.output.image} cannot be built: {error}")
            self.build_started = True
            self.log(f"{self.output.name}: {'started' if started else 'following'} image build {build['id']}")
        self.record["build_id"] = build["id"]
        self.record["build_status"] = build["buildStatus"]
        if build["buildStatus"] == RUNNING:
            if group.desired:  # the build brought the group back
                self.waiting_for_image = False
            return None
        if build["buildStatus"] == "SUCCEEDED":
            self.waiting_for_image = False
            expiry = self.expired()
            if expiry and not group.desired:
                return self.end(STOPPED, f"its image was built after its time-to-live ({expiry}): left at zero")
            if not group.desired:
                self.bring_back("its image was built")
            return None
        reason = readiness.reason if readiness.build_id == build["id"] and readiness.reason else None
        if not reason:
            lines = last_log_lines(self.client("logs"), build)
            reason = f"image build {build['id']} {build['buildStatus'].lower()}" + (f": {lines}" if lines else "")
        return self.end(FAILED, reason)

    # --- the step --------------------------------------------------------------------------------

    def step(self) -> str | None:
        """One look; the outcome when the watch of this server is over, else None."""
        group = read_group(self.client("autoscaling"), self.output.auto_scaling_group or "")
        if not group.exists:
            return self.end(FAILED, f"group {self.output.auto_scaling_group} does not exist")
        readiness = read_readiness(self.client("ssm"), self.output.readiness_parameter or "")
        self.record["readiness"] = readiness.line
        self.record["refusals"] = group.refusals
        refused = self.refused_for_what_it_asks(group)
        if refused and not group.instance_id:
            # Auto Scaling keeps trying a group at one: it would launch, unwatched, once the cause went.
            self.take_to_zero("EC2 refused its launch for what it asks")
            return self.end(FAILED, f"EC2 refused the launch for what it asks, in every zone alike: {refused}")
        if self.first:
            self.first = False
            if group.desired == 0 and not group.instance_id:
                return self.held_at_zero(readiness)  # brought back, or waiting: look again next time
            if group.desired:
                self.wants_since = time.monotonic()
        if self.waiting_for_image:
            outcome = self.watch_build(group, readiness)
            if outcome or self.waiting_for_image:
                return outcome
        if group.instance_id:
            return self.watch_instance(group, readiness)
        if group.desired == 0:
            if readiness.state == "waiting-for-image" and self.fresh(readiness):
                self.waiting_for_image = True  # the instance found its image missing and stopped
                return None
            if readiness.state == "failed" and self.fresh(readiness):
                return self.end(FAILED, readiness.reason)
            if readiness.state in ("booting", "starting") or not self.fresh(readiness):
                # A server taking itself to zero says why a moment later: give it that moment (also
                # when what the parameter says is older than this watch: an instance that failed at
                # once may have been gone before any look saw it, its reason not yet written).
                self.zero_since = self.zero_since or time.monotonic()
                if time.monotonic() - self.zero_since < SETTLE_S:
                    return None
            return self.end(STOPPED, f"held at zero ({readiness.line})")
        if self.wants_since is None:
            self.wants_since = time.monotonic()
        if time.monotonic() - self.wants_since > self.options.launch_timeout_s:
            return self.end(NO_CAPACITY, f"no instance launched in {self.options.launch_timeout_s:.0f} s")
        return None

    def refused_for_what_it_asks(self, group: Any) -> str | None:
        """The newest refusal of this watch's launches that is not capacity, offering or quota."""
        for refusal in reversed(group.refusals):
            at = parse_time(refusal.get("at"))
            at = at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at
            if at is not None and at >= self.started_at and not is_capacity_refusal(refusal["message"]):
                return refusal["message"]
        return None

    def watch_instance(self, group: Any, readiness: Readiness) -> str | None:
        instance = group.instance_id
        if instance not in self.instances_seen:
            self.instances_seen.add(instance)
            (reservation,) = self.client("ec2").describe_instances(InstanceIds=[instance])["Reservations"]
            launch_time = reservation["Instances"][0]["LaunchTime"]
            self.record.update(instance_id=instance, zone=group.zone, launched_at=iso(launch_time))
            self.launched = time.monotonic()
        if readiness.instance_id == instance:
            self.keep_phases(readiness)
            if readiness.state == "ready":
                # Ready when it first answered: the report comes after the compiled graphs are kept,
                # an upload that is not part of launch to ready.
                answered = dict(readiness.phases).get("answer")
                self.record.update(
                    ready_at=iso(datetime.fromtimestamp(answered, UTC))
                    if answered
                    else readiness.at or iso(datetime.now(UTC)),
                    zone=readiness.zone or self.record.get("zone"),
                    weights_load_s=readiness.weights_load_s,
                )
                self.record["launch_to_ready_min"] = minutes_between(
                    self.record.get("launched_at"), self.record["ready_at"]
                )
                self.record_kept_graphs(readiness)
                return self.end(READY)
            if readiness.state == "failed":
                if readiness.stopped is not True:
                    self.take_to_zero("it failed and could not stop itself")
                return self.end(FAILED, readiness.reason)
            if readiness.state == "waiting-for-image":
                self.waiting_for_image = True
                return None
        if time.monotonic() - (self.launched or self.started) > self.ready_timeout:
            self.take_to_zero("not ready in time")
            return self.end(TIMEOUT, f"not ready {self.ready_timeout / 60:.0f} min after launch")
        return None

    def record_kept_graphs(self, readiness: Readiness | None = None) -> None:
        """The graphs this watch's server kept in the store, recorded as the ones the backend's next
        servers may load (the record no server can write): what makes a restore trustworthy."""
        if not self.output.graphs_record:
            return
        try:
            readiness = readiness or read_readiness(self.client("ssm"), self.output.readiness_parameter or "")
            kept = readiness.kept_graphs if readiness.instance_id == self.record.get("instance_id") else None
            if kept and record_graphs(self.client("ssm"), self.output.graphs_record, *kept):
                self.record["graphs_recorded"] = f"{kept[0]}:{kept[1]}"
                self.log(f"{self.output.name}: recorded the graphs it compiled ({kept[0]}) for its next servers")
        except ClientError as error:
            self.log(f"{self.output.name}: could not record its compiled graphs: {describe(error)}")

    def keep_phases(self, readiness: Readiness) -> None:
        """What the boot reached and which way each step went, in the evidence with every look."""
        if readiness.phases:
            self.record.update(phase_seconds(readiness.phases, parse_time(self.record.get("launched_at"))))
        if readiness.paths:
            self.record["paths"] = readiness.paths
        for key in ("answer", "answer_correct", "answer_error"):
            if getattr(readiness, key) is not None:
                self.record[key] = getattr(readiness, key)

    def billing(self) -> list[dict[str, Any]]:
        group = read_group(self.client("autoscaling"), self.output.auto_scaling_group or "")
        if not group.instance_id:
            return []
        throughput = next((b.root_volume_throughput_mbs for b in BACKENDS if b.name == self.output.name), 125)
        return [
            instance_billing(
                self.output.name, self.output.region, self.output.instance_type or "?", group.instance_id, throughput
            ).to_json()
        ]
