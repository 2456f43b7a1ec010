"""Reads the stack outputs contract: from `cdk deploy --outputs-file` or from CloudFormation."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.backends import stack_names
from catalog.contract import OUTPUT_PREFIX, BackendOutput
from catalog.errors import CatalogError
from catalog.offerings import US_REGIONS
from runner.core.errors import RunnerError, aws_error_code
from runner.core.files import read_json_file
from runner.core.typed_json import JsonObject


@dataclass
class OutputsReading:
    """Parsed backends, the raw outputs they came from, and one line per problem."""

    backends: list[BackendOutput] = field(default_factory=list)
    raw: dict[str, dict[str, str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    source: str = ""


def parse_outputs(raw: dict[str, JsonObject], source: str) -> OutputsReading:
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


def search_regions() -> dict[str, list[str]]:
    """Per stack (a backend's satellite included), where to look: where runner.up placed it, its
    candidates, then the four US regions (a stack placed by hand elsewhere is found with --region)."""
    from catalog.config import load_config, read_placement_records

    try:
        records = read_placement_records()
        placements = {name: entry["region"] for name, entry in records.items()}
        candidates = {s.name: list(s.candidate_regions) for s in load_config({}, records=records).stacks}
    except CatalogError:
        placements, candidates = {}, {}
    return {
        stack: list(dict.fromkeys([*filter(None, [placements.get(stack)]), *candidates.get(stack, []), *US_REGIONS]))
        for stack in dict.fromkeys([*stack_names(), *candidates])
    }


def read_stack_outputs(region: str | None = None, client_for: Any | None = None) -> OutputsReading:
    """describe_stacks for each of the app's stacks, in `region` or in every region it may be in;
    a stack that is not deployed anywhere is skipped."""
    from botocore.exceptions import BotoCoreError, ClientError

    from runner.cloud.aws import boto_client

    clients: dict[str, Any] = {}

    def client(name: str) -> Any:
        if name not in clients:
            clients[name] = client_for(name) if client_for else boto_client("cloudformation", name, 30)
        return clients[name]

    raw: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    searched: set[str] = set()
    where_to_look = search_regions()
    if region:
        where_to_look = {stack: [region] for stack in where_to_look}
    for stack, regions in where_to_look.items():
        for where in regions:
            searched.add(where)
            try:
                (description,) = client(where).describe_stacks(StackName=stack)["Stacks"]
            except ClientError as error:
                if aws_error_code(error) == "ValidationError":
                    continue  # CloudFormation's answer for a stack that does not exist there
                problems.append(f"CloudFormation {where} {stack}: {error.response['Error'].get('Message', error)}")
                break
            except BotoCoreError as error:
                problems.append(f"CloudFormation {where} {stack}: {error}")
                break
            status = description.get("StackStatus", "")
            if not status.endswith("_COMPLETE") or "ROLLBACK" in status or "DELETE" in status:
                problems.append(f"stack {stack} in {where} is {status}: its outputs are not used")
                break
            raw[stack] = {o["OutputKey"]: o["OutputValue"] for o in description.get("Outputs", [])}
            break
    reading = parse_outputs(raw, source=f"CloudFormation {', '.join(sorted(searched))}")
    reading.problems[:0] = problems
    return reading
