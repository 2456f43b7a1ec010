"""A SageMaker endpoint from deploy to InService (or Failed), watched by runner.up; recreated from its endpoint config under the same name when the time-to-live deleted it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from catalog.contract import APP_TAG
from catalog.serving import serving
from runner.cloud.aws import alarm_actions_enabled
from runner.cloud.bring_up.watch.common import FAILED, READY, TIMEOUT, Watch, iso, minutes_between
from runner.core.errors import describe
from runner.costing.billing_models import billing_model
from runner.costing.billing_now import BillingNow, endpoint_billing


class EndpointWatch(Watch):
    """A SageMaker endpoint: Creating → InService (or Failed); recreated when the time-to-live deleted it."""

    def describe(self) -> dict[str, Any] | None:
        try:
            return self.client("sagemaker").describe_endpoint(EndpointName=self.output.endpoint_name)
        except ClientError as error:
            if "Could not find endpoint" in str(error):
                return None
            raise

    def step(self) -> str | None:
        description = self.describe()
        if description is None:
            if not self.first or not self.output.endpoint_config_name:
                return self.end(FAILED, f"endpoint {self.output.endpoint_name} does not exist")
            self.first = False
            self.client("sagemaker").create_endpoint(
                EndpointName=self.output.endpoint_name,
                EndpointConfigName=self.output.endpoint_config_name,
                Tags=[{"Key": APP_TAG[0], "Value": APP_TAG[1]}],
            )
            self.record["held_at_zero"] = "endpoint deleted (time-to-live)"
            self.log(
                f"{self.output.name}: endpoint was deleted (time-to-live): recreated from {self.output.endpoint_config_name}"
            )
            return None
        self.first = False
        status = description["EndpointStatus"]
        self.record["readiness"] = status
        self.record["launched_at"] = iso(description["CreationTime"])
        if status == "InService":
            ready = description.get("LastModifiedTime") or datetime.now(UTC)
            self.record.update(ready_at=iso(ready), zone=None)
            self.record["launch_to_ready_min"] = minutes_between(self.record["launched_at"], self.record["ready_at"])
            return self.end(READY)
        if status in ("Failed", "OutOfService"):
            return self.end(FAILED, description.get("FailureReason", status))
        if time.monotonic() - self.started > (self.options.ready_timeout_s or 3600):
            return self.end(TIMEOUT, f"endpoint still {status}")
        return None

    def billing(self) -> list[dict[str, Any]]:
        """Serverless bills per second of compute only while it answers; async only while its
        instances run (it may sit at zero); real-time per instance while it exists."""
        description = self.describe()
        if description is None or description["EndpointStatus"] == "Failed":
            return []
        output, status = self.output, description["EndpointStatus"]
        name = output.endpoint_name or "?"
        if not billing_model(serving(output.kind).billing).hourly:
            what = f"serverless endpoint {name} ({output.memory_mb} MB, {status})"
            return [
                BillingNow(output.name, output.region, what, 0.0, "per second of compute while it answers").to_json()
            ]
        variants = description.get("ProductionVariants") or [{}]
        count = variants[0].get("CurrentInstanceCount", 1)
        if count == 0:
            what = f"endpoint {name} at zero instances ({status})"
            return [
                BillingNow(output.name, output.region, what, 0.0, "starts an instance when requests wait").to_json()
            ]
        row = endpoint_billing(output.name, output.region, output.instance_type or "?", name, status)
        if count > 1 and row.usd_per_hour is not None:
            row = BillingNow(row.backend, row.region, f"{row.what} × {count}", row.usd_per_hour * count, row.note)
        return [row.to_json()]


class ComponentWatch(EndpointWatch):
    """An endpoint of inference components: the endpoint InService, then its component InService
    (or either Failed). Nothing is recreated: the time-to-live takes the component's copies to zero
    and leaves the endpoint and the component standing, so a component InService at zero copies is
    ready (its first request starts a copy). What bills is the endpoint's instances (its billing)."""

    def component(self) -> dict[str, Any] | None:
        try:
            return self.client("sagemaker").describe_inference_component(
                InferenceComponentName=self.output.inference_component_name
            )
        except ClientError as error:
            if "Could not find" in str(error):
                return None
            raise

    def step(self) -> str | None:
        description = self.describe()
        if description is None:
            return self.end(FAILED, f"endpoint {self.output.endpoint_name} does not exist")
        self.first = False
        status = description["EndpointStatus"]
        self.record["readiness"] = status
        self.record["launched_at"] = iso(description["CreationTime"])
        if status in ("Failed", "OutOfService"):
            return self.end(FAILED, description.get("FailureReason", status))
        if status == "InService":
            name = self.output.inference_component_name
            component = self.component()
            if component is None:
                return self.end(FAILED, f"inference component {name} does not exist")
            state = component["InferenceComponentStatus"]
            copies = (component.get("RuntimeConfig") or {}).get("CurrentCopyCount")
            self.record.update(readiness=f"endpoint InService, component {state}", copies=copies)
            if state == "Failed":
                why = component.get("FailureReason") or state
                return self.end(FAILED, f"inference component {name}: {why}{self.where_logged()}")
            if state == "InService":
                self.time_ready(description, component, copies)
                alarm = self.arm_alarm()
                if copies == 0:
                    self.record["held_at_zero"] = (
                        f"zero copies and no way out of zero: {alarm}"
                        if alarm.endswith("disarmed (the time-to-live)")
                        else "zero copies: the first request starts one" + (f"; {alarm}" if alarm else "")
                    )
                return self.end(READY)
        if time.monotonic() - self.started > (self.options.ready_timeout_s or 3600):
            return self.end(TIMEOUT, f"endpoint {status}, {self.record['readiness']}{self.where_logged()}")
        return None

    def time_ready(self, endpoint: dict[str, Any], component: dict[str, Any], copies: int | None) -> None:
        """When the component was ready: the later of its LastModifiedTime and this look, the first
        that saw it InService (a fresh component's LastModifiedTime may stay its creation, leaving
        out the image pull and the model's load: whether it moves then only a real account shows;
        CloudFormation waits for InService before the
        deploy ends, so this look comes at most the rest of the deploy late). Launch to ready only
        for a component this `up` made with a copy to start: the endpoint's creation when this `up`
        made it too (its first instance), else the component's. A component made earlier has its
        LastModifiedTime moved by every scaling of its copies, which says nothing of a launch."""
        modified = component.get("LastModifiedTime")
        looked = datetime.now(UTC)
        self.record.update(ready_at=iso(max(modified, looked) if modified else looked), zone=None)
        self.record["launch_to_ready_min"] = None
        made = component["CreationTime"]
        if made < self.started_at:
            self.record["launch_to_ready_unknown"] = f"the component was made before this up (at {iso(made)})"
        elif not copies:
            self.record["launch_to_ready_unknown"] = "zero copies: no copy was started to time"
        else:
            launched = endpoint["CreationTime"] if endpoint["CreationTime"] >= self.started_at else made
            self.record["launched_at"] = iso(launched)
            self.record["launch_to_ready_min"] = minutes_between(self.record["launched_at"], self.record["ready_at"])

    def arm_alarm(self) -> str:
        """The time-to-live disables the actions of the alarm that starts a copy at zero (else the
        next request would start one with no end date): a deploy, which sets a new expiry, enables
        them again; a look without one leaves them. What was found, "" when all is as deployed."""
        alarm = self.output.no_capacity_alarm
        if not alarm:
            return ""
        cloudwatch = self.client("cloudwatch")
        try:
            if alarm_actions_enabled(cloudwatch, alarm) is not False:
                return ""
            if not self.options.start_builds:
                return f"its alarm {alarm} is disarmed (the time-to-live)"
            cloudwatch.enable_alarm_actions(AlarmNames=[alarm])
        except Exception as error:  # the component serves; what the alarm is, is said
            return f"its alarm {alarm} not read or armed: {describe(error)}"
        self.log(f"{self.output.name}: alarm {alarm} armed again (the time-to-live had disarmed it)")
        return f"its alarm {alarm} armed again"

    def where_logged(self) -> str:
        """Where a copy that does not start wrote why (a crash-looping container stays Creating,
        with no FailureReason, until its startup health check's timeout)."""
        return f" (its container's logs: {self.output.log_group})" if self.output.log_group else ""
