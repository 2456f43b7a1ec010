"""Reads the stack outputs contract: from `cdk deploy --outputs-file` or from CloudFormation."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.backends import stack_names
from catalog.contract import OUTPUT_PREFIX, BackendOutput
from catalog.errors import CatalogError
from runner.errors import RunnerError, read_json_file


@dataclass
class OutputsReading:
    """Parsed backends, the raw outputs they came from, and one line per problem."""

    backends: list[BackendOutput] = field(default_factory=list)
    raw: dict[str, dict[str, str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    source: str = ""


def parse_outputs(raw: dict[str, dict[str, Any]], source: str) -> OutputsReading:
    reading = OutputsReading(raw={k: dict(v) for k, v in raw.items()}, source=source)
    for stack, outputs in raw.items():
        if not isinstance(outputs, dict):
            reading.problems.append(f"{source}: stack {stack}: expected an object of outputs")
            continue
        for key, value in outputs.items():
            if not key.startswith(OUTPUT_PREFIX):
                continue
            try:
                reading.backends.append(BackendOutput.parse(key, value, stack=stack))
            except CatalogError as error:
                reading.problems.append(str(error))
    return reading


def read_outputs_file(path: Path) -> OutputsReading:
    data = read_json_file(path, "outputs file", " (write it with cdk deploy --outputs-file)")
    if not isinstance(data, dict):
        raise RunnerError(f"outputs file {path}: expected an object keyed by stack name")
    return parse_outputs(data, source=str(path))


def read_stack_outputs(region: str, client: Any | None = None) -> OutputsReading:
    """describe_stacks for each of the app's stacks; a stack that is not deployed is skipped."""
    if client is None:
        import boto3

        client = boto3.client("cloudformation", region_name=region)
    from botocore.exceptions import BotoCoreError, ClientError

    raw: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for stack in stack_names():
        try:
            (description,) = client.describe_stacks(StackName=stack)["Stacks"]
        except ClientError as error:
            message = error.response.get("Error", {}).get("Message", str(error))
            if "does not exist" in message:
                continue
            problems.append(f"CloudFormation {region} {stack}: {message}")
            continue
        except BotoCoreError as error:
            problems.append(f"CloudFormation {region} {stack}: {error}")
            continue
        status = description.get("StackStatus", "")
        if not status.endswith("_COMPLETE") or "ROLLBACK" in status or "DELETE" in status:
            problems.append(f"stack {stack} is {status}: its outputs are not used")
            continue
        raw[stack] = {o["OutputKey"]: o["OutputValue"] for o in description.get("Outputs", [])}
    reading = parse_outputs(raw, source=f"CloudFormation {region}")
    reading.problems[:0] = problems
    return reading
