"""What the emulated account holds, read the way a user would read it (boto3 against the emulator,
through the runner's clients: one per service and region, as the runner keeps them)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from catalog.builds import kept_repository
from runner.cloud.aws import boto_client
from tests.aws_emulator import REGIONS


def aws(service: str, region: str):
    return boto_client(service, region, 30)


SERVERS = {"g6": "us-east-1", "g5g": "us-east-1", "inf2": "us-east-2", "trn1": "us-east-2"}


def readiness(region: str, backend: str) -> dict:
    value = aws("ssm", region).get_parameter(Name=f"/inference/{backend}/ready")
    return json.loads(value["Parameter"]["Value"])


def states(servers: dict[str, str], with_reasons: bool = False) -> dict[str, str]:
    found = {name: readiness(region, name) for name, region in servers.items()}
    if with_reasons:
        return {name: f"{r['state']}: {r['reason']}" if r.get("reason") else r["state"] for name, r in found.items()}
    return {name: r["state"] for name, r in found.items()}


def wait_until(check: Callable[[], object], timeout_s: float = 90, what: str = "") -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what or check}")


def wait_for_states(servers: dict[str, str], wanted: str = "ready", timeout_s: float = 90) -> dict[str, str]:
    last: dict[str, str] = {}

    def reached() -> bool:
        last.update(states(servers))
        return all(state == wanted for state in last.values())

    try:
        wait_until(reached, timeout_s)
    except AssertionError:
        raise AssertionError(f"not all {wanted}: {states(servers, with_reasons=True)}") from None
    return last


def group(region: str, backend: str) -> dict:
    """The backend's Auto Scaling group (found by its inference:backend tag)."""
    autoscaling = aws("autoscaling", region)
    for candidate in autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]:
        tags = {t["Key"]: t["Value"] for t in candidate.get("Tags", [])}
        if tags.get("inference:backend") == backend:
            return candidate
    raise AssertionError(f"no group for {backend} in {region}")


def running_instances(region: str) -> list[dict]:
    ec2 = aws("ec2", region)
    reservations = ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return [i for r in reservations["Reservations"] for i in r["Instances"]]


def kept_images() -> dict[str, list[str]]:
    """The repositories of the images the app built, per region: kept on purpose across deploys."""
    found: dict[str, list[str]] = {}
    for region in REGIONS:
        names = [r["repositoryName"] for r in aws("ecr", region).describe_repositories()["repositories"]]
        kept = sorted(n for n in names if kept_repository(n))
        if kept:
            found[region] = kept
    return found


def leftovers() -> dict[str, list[str]]:
    """Everything of the app's the emulator still holds, per region, but the built images it keeps
    on purpose (kept_images)."""
    found: dict[str, list[str]] = {}
    for region in REGIONS:
        items = []
        cloudformation = aws("cloudformation", region)
        for stack in cloudformation.describe_stacks()["Stacks"]:
            if stack["StackName"] != "CDKToolkit" and stack["StackStatus"] != "DELETE_COMPLETE":
                items.append(f"stack {stack['StackName']} {stack['StackStatus']}")
        for candidate in aws("autoscaling", region).describe_auto_scaling_groups()["AutoScalingGroups"]:
            items.append(f"group {candidate['AutoScalingGroupName']}")
        items += [f"instance {i['InstanceId']}" for i in running_instances(region)]
        for parameter in aws("ssm", region).describe_parameters()["Parameters"]:
            if parameter["Name"].startswith("/inference/"):
                items.append(f"parameter {parameter['Name']}")
        sagemaker = aws("sagemaker", region)
        items += [f"endpoint {e['EndpointName']}" for e in sagemaker.list_endpoints()["Endpoints"]]
        items += [
            f"repository {r['repositoryName']}"
            for r in aws("ecr", region).describe_repositories()["repositories"]
            if r["repositoryName"].startswith("inference-survey/") and not kept_repository(r["repositoryName"])
        ]
        logs = aws("logs", region)
        items += [
            f"log group {g['logGroupName']}"
            for g in logs.describe_log_groups()["logGroups"]
            if g["logGroupName"].startswith(("/inference/", "/aws/sagemaker/Endpoints/inference-"))
        ]
        if items:
            found[region] = items
    return found
