"""Waits until a backend answers its health check (or its endpoint is InService).

SageMaker endpoints of every kind (real-time, serverless, asynchronous) are healthy when
DescribeEndpoint says InService; an asynchronous endpoint autoscaled to zero instances is still
InService and healthy (its first request starts an instance, and is timed as a cold start). A
transform job's model has no endpoint: nothing to wait for (`python -m runner.batch` runs it)."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import httpx

from runner.cloud.readiness import read_readiness
from runner.core.backends import Backend
from runner.core.errors import describe
from runner.core.tls import tls_context


@dataclass
class Health:
    healthy: bool
    waited_s: float
    detail: str


def wait_healthy(
    backend: Backend,
    wait_s: float,
    *,
    poll_s: float = 2.0,
    sagemaker_client=None,
    ssm_client=None,
    stop: threading.Event | None = None,
) -> Health:
    """Poll until healthy or `wait_s` is spent; a server whose readiness parameter says
    `failed: reason` stops the wait at once (give `ssm_client` to read it; never built here).
    Setting `stop` (Ctrl-C) ends the wait early."""
    stop = stop or threading.Event()
    started = time.monotonic()
    deadline = started + max(wait_s, 0.0)
    if backend.blocked:
        return Health(False, 0.0, backend.blocked)
    if backend.supports.no_health_check:
        return Health(True, 0.0, backend.supports.no_health_check)
    if backend.supports.sagemaker_endpoint:
        return _wait_sagemaker(backend, wait_s, max(poll_s, 15.0) if wait_s > 60 else poll_s, sagemaker_client)
    parameter = backend.output.readiness_parameter if backend.output else None
    with httpx.Client(timeout=httpx.Timeout(5.0), verify=tls_context()) as http:
        while True:
            server_says: str | None = None
            if ssm_client is not None and parameter:
                readiness = read_readiness(ssm_client, parameter)
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
            if time.monotonic() + poll_s > deadline or stop.wait(poll_s):
                return Health(False, time.monotonic() - started, detail)


def _wait_sagemaker(backend: Backend, wait_s: float, poll_s: float, client) -> Health:
    """boto3's own `endpoint_in_service` waiter: it stops at once on Failed, and polls otherwise.
    An asynchronous endpoint InService at zero instances is healthy, and the detail says so."""
    from botocore.exceptions import WaiterError

    if client is None:
        from runner.cloud.aws import boto_client

        client = boto_client("sagemaker", backend.region or "us-east-1", 30)
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
    if backend.supports.zero_instances:
        try:
            variants = client.describe_endpoint(EndpointName=backend.endpoint_name).get("ProductionVariants") or []
        except Exception as error:
            return Health(True, waited, f"InService (instances unknown: {describe(error)})")
        if sum(v.get("CurrentInstanceCount", 0) for v in variants) == 0:
            return Health(True, waited, "InService at zero instances; the first request starts one")
    return Health(True, waited, "InService")
