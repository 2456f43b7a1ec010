"""Waits until a backend answers its health check (or its endpoint is InService)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from catalog import BackendKind
from runner.backends import Backend
from runner.errors import describe
from runner.readiness import read_readiness


@dataclass
class Health:
    healthy: bool
    waited_s: float
    detail: str


def wait_healthy(
    backend: Backend, wait_s: float, *, poll_s: float = 2.0, sagemaker_client=None, ssm_client=None
) -> Health:
    """Poll until healthy or `wait_s` is spent; a server whose readiness parameter says
    `failed: reason` stops the wait at once (give `ssm_client` to read it; never built here)."""
    started = time.monotonic()
    deadline = started + max(wait_s, 0.0)
    if backend.kind is BackendKind.BEDROCK:
        return Health(True, 0.0, "managed API: no health check")
    if backend.kind is BackendKind.SAGEMAKER:
        return _wait_sagemaker(
            backend, started, deadline, max(poll_s, 15.0) if wait_s > 60 else poll_s, sagemaker_client
        )
    detail = "no health URL"
    parameter = backend.output.readiness_parameter if backend.output else None
    with httpx.Client(timeout=httpx.Timeout(5.0)) as http:
        while True:
            if ssm_client is not None and parameter:
                readiness = read_readiness(ssm_client, parameter)
                if readiness.state == "failed":
                    return Health(False, time.monotonic() - started, readiness.line)
                if readiness.state != "ready":
                    detail = f"server {readiness.line}"
            try:
                response = http.get(backend.health_url or "")
                if response.status_code == 200:
                    return Health(True, time.monotonic() - started, "HTTP 200")
                detail = f"HTTP {response.status_code}"
            except Exception as error:
                if not detail.startswith("server "):
                    detail = describe(error)
            if time.monotonic() + poll_s > deadline:
                return Health(False, time.monotonic() - started, detail)
            time.sleep(poll_s)


def _wait_sagemaker(backend: Backend, started: float, deadline: float, poll_s: float, client) -> Health:
    if client is None:
        import boto3

        client = boto3.client("sagemaker", region_name=backend.region)
    while True:
        try:
            status = client.describe_endpoint(EndpointName=backend.endpoint_name)["EndpointStatus"]
        except Exception as error:
            return Health(False, time.monotonic() - started, describe(error))
        if status == "InService":
            return Health(True, time.monotonic() - started, "InService")
        if status in ("Failed", "OutOfService", "Deleting"):
            return Health(False, time.monotonic() - started, f"endpoint {status}")
        if time.monotonic() + poll_s > deadline:
            return Health(False, time.monotonic() - started, f"endpoint {status}")
        time.sleep(poll_s)
