"""Waits until a backend answers its health check (or its endpoint is InService).

SageMaker endpoints of every kind (real-time, serverless, asynchronous) are healthy when
DescribeEndpoint says InService; an asynchronous endpoint autoscaled to zero instances is still
InService and healthy (its first request starts an instance, and is timed as a cold start). An
endpoint of inference components is healthy once its component is InService too (at zero copies
as well: its first request starts one). A
transform job's model has no endpoint: nothing to wait for (`python -m runner.batch` runs it)."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

from runner.cloud.readiness import read_readiness
from runner.core.backends import Backend
from runner.core.errors import describe
from runner.core.references import resolve
from runner.core.tls import tls_context


@dataclass
class Health:
    healthy: bool
    waited_s: float
    detail: str


@dataclass(frozen=True)
class HealthWait:
    """How long and how often to look, what stops the wait early, and the clients a check may read."""

    wait_s: float
    poll_s: float
    stop: threading.Event
    sagemaker_client: Any = None
    ssm_client: Any = None


def wait_healthy(
    backend: Backend,
    wait_s: float,
    *,
    poll_s: float = 2.0,
    sagemaker_client=None,
    ssm_client=None,
    stop: threading.Event | None = None,
) -> Health:
    """Poll until healthy or `wait_s` is spent, with the check the backend's serving row names
    (`health`); a server whose readiness parameter says `failed: reason` stops the wait at once
    (give `ssm_client` to read it; never built here). Setting `stop` (Ctrl-C) ends the wait early."""
    if backend.blocked:
        return Health(False, 0.0, backend.blocked)
    if not backend.supports.health:
        return Health(False, 0.0, f"no health check for kind {backend.kind.value}")
    check = resolve(backend.supports.health)
    return check(backend, HealthWait(max(wait_s, 0.0), poll_s, stop or threading.Event(), sagemaker_client, ssm_client))


def no_health_check(backend: Backend, wait: HealthWait) -> Health:
    """Nothing to wait for (a managed API, a transform job): the row says why."""
    return Health(True, 0.0, backend.supports.no_health_check)


def http_health(backend: Backend, wait: HealthWait) -> Health:
    """A server of ours or a user's: its health URL answers 200."""
    started = time.monotonic()
    deadline = started + wait.wait_s
    parameter = backend.output.readiness_parameter if backend.output else None
    with httpx.Client(timeout=httpx.Timeout(5.0), verify=tls_context()) as http:
        while True:
            server_says: str | None = None
            if wait.ssm_client is not None and parameter:
                readiness = read_readiness(wait.ssm_client, parameter)
                if readiness.state == "failed":
                    return Health(False, time.monotonic() - started, readiness.line)
                if readiness.state != "ready":
                    server_says = f"server {readiness.line}"
            try:
                response = http.get(backend.health_url or "")
                if response.status_code == 200:
                    return Health(True, time.monotonic() - started, "HTTP 200")
                detail = f"HTTP {response.status_code}"
            except Exception as error:
                detail = backend.explain(error)
            # What the server says of itself explains an unreachable port better than the port does.
            detail = server_says or detail
            if time.monotonic() + wait.poll_s > deadline or wait.stop.wait(wait.poll_s):
                return Health(False, time.monotonic() - started, detail)


def endpoint_health(backend: Backend, wait: HealthWait) -> Health:
    """A SageMaker endpoint of any kind: InService (polled at most every 15 s on a long wait)."""
    poll_s = max(wait.poll_s, 15.0) if wait.wait_s > 60 else wait.poll_s
    return _wait_sagemaker(backend, wait.wait_s, poll_s, wait.sagemaker_client)


def component_health(backend: Backend, wait: HealthWait) -> Health:
    """An endpoint of inference components: the endpoint InService, then its component InService
    (DescribeInferenceComponent; Failed stops the wait with its reason)."""
    started = time.monotonic()
    poll_s = max(wait.poll_s, 15.0) if wait.wait_s > 60 else wait.poll_s
    client = wait.sagemaker_client or _sagemaker(backend)
    endpoint = _wait_sagemaker(backend, wait.wait_s, poll_s, client)
    component = backend.output.inference_component_name if backend.output else None
    if not endpoint.healthy:
        return endpoint
    if not component:
        return Health(False, endpoint.waited_s, "no inference component in its stack output")
    deadline = started + wait.wait_s
    while True:
        try:
            described = client.describe_inference_component(InferenceComponentName=component)
        except Exception as error:
            return Health(False, time.monotonic() - started, f"inference component {component}: {describe(error)}")
        status = described.get("InferenceComponentStatus")
        copies = (described.get("RuntimeConfig") or {}).get("CurrentCopyCount")
        if status == "InService":
            if copies == 0 and not _wakes(backend):
                return Health(
                    False,
                    time.monotonic() - started,
                    f"{component} at zero copies with its alarm {backend.output.no_capacity_alarm} disarmed (the "
                    "time-to-live): no request starts a copy; runner.up brings it back",
                )
            detail = (
                f"InService at zero copies of {component}; the first request starts one"
                if copies == 0
                else f"InService, {component} InService with {copies} copies"
            )
            return Health(True, time.monotonic() - started, detail)
        if status == "Failed":
            reason = described.get("FailureReason") or "no reason given"
            return Health(False, time.monotonic() - started, f"inference component {component} Failed: {reason}")
        if time.monotonic() + poll_s > deadline or wait.stop.wait(poll_s):
            return Health(False, time.monotonic() - started, f"inference component {component} still {status}")


def _wakes(backend: Backend) -> bool:
    """False when the alarm that starts a copy at zero has its actions disabled (the time-to-live);
    True when it acts, when there is none (a floor of copies) or when it cannot be read."""
    from runner.cloud.aws import alarm_actions_enabled, boto_client

    alarm = backend.output.no_capacity_alarm if backend.output else None
    if not alarm:
        return True
    try:
        return alarm_actions_enabled(boto_client("cloudwatch", backend.region or "us-east-1", 30), alarm) is not False
    except Exception:
        return True  # unread (a role without cloudwatch:DescribeAlarms): the wait for a copy still bounds it


def _sagemaker(backend: Backend) -> Any:
    from runner.cloud.aws import boto_client

    return boto_client("sagemaker", backend.region or "us-east-1", 30)


def _wait_sagemaker(backend: Backend, wait_s: float, poll_s: float, client) -> Health:
    """boto3's own `endpoint_in_service` waiter: it stops at once on Failed, and polls otherwise.
    An asynchronous endpoint InService at zero instances is healthy, and the detail says so."""
    from botocore.exceptions import WaiterError

    if client is None:
        client = _sagemaker(backend)
    started = time.monotonic()
    attempts = max(1, math.floor(wait_s / poll_s) + 1)
    try:
        client.get_waiter("endpoint_in_service").wait(
            EndpointName=backend.endpoint_name, WaiterConfig={"Delay": poll_s, "MaxAttempts": attempts}
        )
    except WaiterError as error:
        last = error.last_response or {}
        if "Error" in last:
            detail = f"{last['Error'].get('Code')}: {last['Error'].get('Message')}"
        elif last.get("EndpointStatus"):
            reason = last.get("FailureReason")
            detail = f"endpoint {last['EndpointStatus']}" + (f": {reason}" if reason else "")
        else:
            detail = describe(error)
        return Health(False, time.monotonic() - started, detail)
    except Exception as error:
        return Health(False, time.monotonic() - started, describe(error))
    waited = time.monotonic() - started
    # Scaled to zero instances (an asynchronous endpoint; an endpoint of inference components with
    # a minimum of 0) is InService: its first request starts one. A serverless variant reports no
    # instance count, so it is not counted.
    try:
        variants = client.describe_endpoint(EndpointName=backend.endpoint_name).get("ProductionVariants") or []
    except Exception as error:
        return Health(True, waited, f"InService (instances unknown: {describe(error)})")
    counts = [v["CurrentInstanceCount"] for v in variants if "CurrentInstanceCount" in v]
    if counts and sum(counts) == 0:
        return Health(True, waited, "InService at zero instances; the first request starts one")
    return Health(True, waited, "InService")
