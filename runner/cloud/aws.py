"""When to talk to AWS at all, and in which region.

The runner touches AWS only when credentials are configured explicitly (environment, profile
or ~/.aws files) or `--aws` is given: it never probes the instance metadata service on a
laptop, and with no credentials it goes straight to the embedded model.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from runner.core.errors import RunnerError

CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
)


def credentials_configured() -> bool:
    if any(os.environ.get(name) for name in CREDENTIAL_VARIABLES):
        return True
    home = Path(os.environ.get("HOME", "~")).expanduser()
    config_file = Path(os.environ.get("AWS_CONFIG_FILE", home / ".aws" / "config"))
    credentials_file = Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", home / ".aws" / "credentials"))
    return config_file.is_file() or credentials_file.is_file()


def require_aws(doing: str, aws: bool | None = None) -> None:
    """The one refusal of a command that works only through AWS, before any AWS call or anything
    is made: `doing` says what it does there (`runner.sweep lists resources through the AWS API`);
    `aws` is its --aws/--no-aws switch (None: neither given)."""
    if aws is False:
        raise RunnerError(f"{doing}, and --no-aws was given")
    if not (aws or credentials_configured()):
        raise RunnerError(f"{doing}, and no AWS credentials are configured (configure them, or pass --aws)")


def aws_environment() -> tuple[tuple[str, str], ...]:
    """What botocore reads from the environment when it builds a client: credentials, profile,
    endpoints, CA bundle, proxies."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_") or k.upper().endswith("_PROXY")))


class _Clients:
    """The boto3 clients built for one AWS environment; another environment starts it afresh."""

    def __init__(self) -> None:
        self.environment: tuple[tuple[str, str], ...] = ()
        self.by_key: dict[tuple[str, str, float], Any] = {}
        self.lock = threading.Lock()


_CLIENTS = _Clients()


def boto_client(service: str, region: str, timeout_s: float) -> Any:
    """A boto3 client with one attempt and our timeout: retries would hide faults and skew timings.
    Its pool holds as many connections as the highest load level asks for (64).

    One per service, region and timeout in a process, built again once the AWS environment has
    changed: a client costs 3 to 16 ms of CPU to build, and a sweep of every region asks for a
    few hundred. Built under a lock: boto3's default session is not safe to build from in threads."""
    import boto3
    from botocore.config import Config

    key = (service, region, timeout_s)
    environment = aws_environment()
    with _CLIENTS.lock:
        if environment != _CLIENTS.environment:
            _CLIENTS.environment, _CLIENTS.by_key = environment, {}
        if key not in _CLIENTS.by_key:
            _CLIENTS.by_key[key] = boto3.client(
                service,
                region_name=region,
                config=Config(
                    read_timeout=timeout_s,
                    connect_timeout=5,
                    retries={"total_max_attempts": 1},
                    max_pool_connections=64,
                ),
            )
        return _CLIENTS.by_key[key]


def forget_clients() -> None:
    """Drop the clients built so far (the next call builds its own)."""
    with _CLIENTS.lock:
        _CLIENTS.by_key = {}


def alarm_actions_enabled(cloudwatch: Any, name: str) -> bool | None:
    """Whether the named CloudWatch alarm acts when it fires; None when there is no such alarm."""
    alarms = cloudwatch.describe_alarms(AlarmNames=[name]).get("MetricAlarms") or []
    return bool(alarms[0].get("ActionsEnabled", True)) if alarms else None


def check_region(name: str) -> str:
    """`name` if botocore knows it as an AWS region; else a one-line error listing the US regions.

    Reads botocore's bundled endpoint data: no client is built and nothing is sent.
    """
    import botocore.session

    from runner.core.errors import RunnerError

    known = botocore.session.get_session().get_available_regions("ec2")
    if name not in known:
        us = ", ".join(sorted(r for r in known if r.startswith("us-") and "gov" not in r))
        raise RunnerError(f"region {name!r} does not exist (AWS regions in the US: {us})")
    return name
