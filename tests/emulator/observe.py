"""What the emulated account holds, read the way a user would read it (boto3 against the emulator,
through the runner's clients: one per service and region, as the runner keeps them)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from catalog.boot import STORE_STACK_PREFIX
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


def store_stacks() -> dict[str, str]:
    """The region's store stack where one stands, by region: kept on purpose across deploys."""
    found = {}
    for region in REGIONS:
        for stack in aws("cloudformation", region).describe_stacks()["Stacks"]:
            if stack["StackName"].startswith(STORE_STACK_PREFIX) and stack["StackStatus"] != "DELETE_COMPLETE":
                found[region] = stack["StackStatus"]
    return found


def leftovers() -> dict[str, list[str]]:
    """Everything of the app's the emulator still holds, per region, but what it keeps on purpose:
    the built images (kept_images) and the region's store stack with the weights copy's log group
    it owns (store_stacks)."""
    found: dict[str, list[str]] = {}
    stores = store_stacks()
    for region in REGIONS:
        items = []
        cloudformation = aws("cloudformation", region)
        for stack in cloudformation.describe_stacks()["Stacks"]:
            if stack["StackName"].startswith(STORE_STACK_PREFIX):
                continue
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
            f"inference component {c['InferenceComponentName']}"
            for c in sagemaker.list_inference_components()["InferenceComponents"]
        ]
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
            and not (g["logGroupName"] == f"/inference/weights-copy/{region}" and region in stores)
        ]
        if items:
            found[region] = items
    return found


def graphs_record(region: str, backend: str) -> dict[str, str]:
    """The compiled graphs runner.up recorded as the ones a backend's servers may load."""
    value = aws("ssm", region).get_parameter(Name=f"/inference/{backend}/graphs")
    return json.loads(value["Parameter"]["Value"]).get("graphs", {})


def image_builds(build_ids: list[str]) -> list[str]:
    """The image builds among builds an event started (the store stack's rule starts the weights copy)."""
    from inference_constructs.weights_copy import COPY_PROJECT

    return [b for b in build_ids if not b.startswith(f"{COPY_PROJECT}:")]


def ttl_schedules(region: str, stack: str) -> dict[str, dict]:
    """The stack's Scheduler schedules as CloudFormation holds them, by logical id (moto's
    CloudFormation keeps the template but creates no schedule: tests/aws_emulator/schedules.py)."""
    from tests.aws_emulator.schedules import deployed_stack

    resources = deployed_stack(region, stack).template_dict.get("Resources", {})
    return {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::Scheduler::Schedule"}
