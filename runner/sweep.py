"""`python -m runner.sweep [--regions ...|all] [--delete]`: what is left, and billing, and until when.

Across the four US regions plus every region the app deployed to (placement.json) or may fail
over to (its stacks' candidate regions) by default, or every commercial region with `--regions
all` (a region the account has not enabled is one line, not a stop): everything this app made,
told by its tag (`app=inference-survey`,
and for a volume the instance it is attached to), and everything that bills by the hour whatever
its tag: instances, EBS volumes, SageMaker endpoints, NAT gateways and Elastic IPs. Also ours that
do not bill but are left over: endpoint configs, models, Auto Scaling groups, the app's
CloudFormation stacks and open SSM sessions to its instances. A table per region; the exit status
is 1 while anything billing is left. Each of our groups and endpoints shows its time-to-live:
when its scheduled action (or its stack's expiry) takes it to zero. `--delete` prints what it
will remove, then removes ours only (stacks first, so CloudFormation does the rest), and never
touches anything else.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from catalog import CatalogError
from catalog.backends import stack_names
from catalog.config import load_config, read_placements
from catalog.contract import APP_TAG, BACKEND_TAG_KEY, OUTPUT_PREFIX
from catalog.offerings import COMMERCIAL_REGIONS, US_REGIONS
from runner.aws import boto_client, check_region, credentials_configured
from runner.errors import RunnerError, describe
from runner.evidence import DEFAULT_RESULTS, Evidence
from runner.forwards import live_forwards, read_forwards
from runner.session import console, main_guard
from runner.tables import print_report

REGIONS = US_REGIONS
INSTANCE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
BILLING_INSTANCE_STATES = ("pending", "running", "stopping", "shutting-down")
# Deletion order: stacks first (CloudFormation removes what it made), then what it left.
DELETE_ORDER = ("session", "stack", "auto-scaling-group", "instance", "endpoint", "endpoint-config", "model", "volume")


@dataclass
class Found:
    region: str
    kind: str
    id: str
    state: str
    ours: bool
    billing: bool
    detail: str = ""


def tags_are_ours(tags: list[dict[str, str]] | None) -> bool:
    pairs = {(t.get("Key"), t.get("Value")) for t in tags or []}
    keys = {key for key, _ in pairs}
    return (
        APP_TAG in pairs
        or BACKEND_TAG_KEY in keys
        or any(key == "aws:cloudformation:stack-name" and value in stack_names() for key, value in pairs)
    )


def tag_value(tags: list[dict[str, str]] | None, key: str) -> str:
    return next((t["Value"] for t in tags or [] if t.get("Key") == key), "")


class RegionScan:
    """Lists one region; each list call's failure becomes a row, never a stop."""

    def __init__(self, region: str) -> None:
        self.region = region
        self.found: list[Found] = []
        self.problems: list[str] = []
        self.clients: dict[str, Any] = {}
        self.skipped: str | None = None
        # Endpoint name -> its stack's expiry (the schedule that deletes it lives in the stack).
        self.endpoint_expiries: dict[str, str | None] = {}

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = boto_client(service, self.region, 30)
        return self.clients[service]

    def add(self, kind: str, id: str, state: str, *, ours: bool, billing: bool, detail: str = "") -> None:
        self.found.append(Found(self.region, kind, id, state, ours, billing, detail))

    def scan(self, forwarded_sessions: set[str]) -> RegionScan:
        for step in (self.stacks, self.groups, self.instances, self.volumes, self.sagemaker, self.network):
            try:
                step()
            except Exception as error:  # one refused list call never hides the rest
                if step == self.stacks and region_not_enabled(error):
                    # An opt-in region the account has not enabled: nothing can run (or bill) there.
                    self.skipped = f"{self.region}: not enabled for this account (nothing can run there)"
                    return self
                self.problems.append(f"{self.region} {step.__name__}: {describe(error)}")
        try:
            self.sessions(forwarded_sessions)
        except Exception as error:
            self.problems.append(f"{self.region} sessions: {describe(error)}")
        return self

    def ours(self, kind: str) -> set[str]:
        return {f.id for f in self.found if f.kind == kind and f.ours}

    def stacks(self) -> None:
        for page in self.client("cloudformation").get_paginator("describe_stacks").paginate():
            for stack in page["Stacks"]:
                if stack["StackStatus"] == "DELETE_COMPLETE":
                    continue
                if stack["StackName"] in stack_names() or tags_are_ours(stack.get("Tags")):
                    expiry = stack_expiry(stack)
                    for name in endpoint_names(stack):
                        self.endpoint_expiries[name] = expiry
                    detail = f"time-to-live {expiry}" if expiry else "no time-to-live"
                    self.add("stack", stack["StackName"], stack["StackStatus"], ours=True, billing=False, detail=detail)

    def groups(self) -> None:
        autoscaling = self.client("autoscaling")
        zero_at = {}
        for action in autoscaling.describe_scheduled_actions().get("ScheduledUpdateGroupActions", []):
            if action.get("DesiredCapacity") == 0 and action.get("StartTime"):
                start = action["StartTime"]
                zero_at[action["AutoScalingGroupName"]] = (
                    start.strftime("%Y-%m-%dT%H:%M:%SZ") if hasattr(start, "strftime") else str(start)
                )
        for page in autoscaling.get_paginator("describe_auto_scaling_groups").paginate():
            for group in page["AutoScalingGroups"]:
                tags = [{"Key": t["Key"], "Value": t["Value"]} for t in group.get("Tags", [])]
                if tags_are_ours(tags):
                    detail = f"desired {group['DesiredCapacity']}, {len(group.get('Instances', []))} instance(s)"
                    name = group["AutoScalingGroupName"]
                    detail += f"; time-to-live {zero_at[name]}" if name in zero_at else "; no time-to-live"
                    self.add(
                        "auto-scaling-group",
                        group["AutoScalingGroupName"],
                        "active",
                        ours=True,
                        billing=False,
                        detail=detail,
                    )

    def instances(self) -> None:
        groups = self.ours("auto-scaling-group")
        filters = [{"Name": "instance-state-name", "Values": list(INSTANCE_STATES)}]
        for page in self.client("ec2").get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    tags = instance.get("Tags")
                    ours = tags_are_ours(tags) or tag_value(tags, "aws:autoscaling:groupName") in groups
                    state = instance["State"]["Name"]
                    name = tag_value(tags, BACKEND_TAG_KEY) or tag_value(tags, "Name")
                    self.add(
                        "instance",
                        instance["InstanceId"],
                        state,
                        ours=ours,
                        billing=state in BILLING_INSTANCE_STATES,
                        detail=" ".join(filter(None, [instance.get("InstanceType"), name])),
                    )

    def volumes(self) -> None:
        instances = self.ours("instance")
        for page in self.client("ec2").get_paginator("describe_volumes").paginate():
            for volume in page["Volumes"]:
                attached = [a["InstanceId"] for a in volume.get("Attachments", [])]
                ours = tags_are_ours(volume.get("Tags")) or any(i in instances for i in attached)
                detail = f"{volume['Size']} GiB {volume.get('VolumeType', '')}" + (
                    f" on {attached[0]}" if attached else ""
                )
                self.add("volume", volume["VolumeId"], volume["State"], ours=ours, billing=True, detail=detail)

    def sagemaker(self) -> None:
        sagemaker = self.client("sagemaker")

        def ours(arn: str) -> bool:
            return tags_are_ours(sagemaker.list_tags(ResourceArn=arn).get("Tags"))

        for endpoint in sagemaker.list_endpoints(MaxResults=100)["Endpoints"]:
            status = endpoint["EndpointStatus"]
            name = endpoint["EndpointName"]
            expiry = self.endpoint_expiries.get(name)
            self.add(
                "endpoint",
                name,
                status,
                ours=ours(endpoint["EndpointArn"]),
                billing=status != "Failed",
                detail=f"time-to-live {expiry}"
                if expiry
                else ("no time-to-live" if name in self.endpoint_expiries else ""),
            )
        for config in sagemaker.list_endpoint_configs(MaxResults=100)["EndpointConfigs"]:
            if ours(config["EndpointConfigArn"]):
                self.add("endpoint-config", config["EndpointConfigName"], "-", ours=True, billing=False)
        for model in sagemaker.list_models(MaxResults=100)["Models"]:
            if ours(model["ModelArn"]):
                self.add("model", model["ModelName"], "-", ours=True, billing=False)

    def network(self) -> None:
        ec2 = self.client("ec2")
        for gateway in ec2.describe_nat_gateways()["NatGateways"]:
            if gateway["State"] in ("pending", "available"):
                self.add(
                    "nat-gateway",
                    gateway["NatGatewayId"],
                    gateway["State"],
                    ours=tags_are_ours(gateway.get("Tags")),
                    billing=True,
                )
        for address in ec2.describe_addresses()["Addresses"]:
            detail = f"{address.get('PublicIp', '')} " + ("attached" if address.get("AssociationId") else "unattached")
            self.add(
                "elastic-ip",
                address.get("AllocationId", address.get("PublicIp", "?")),
                "-",
                ours=tags_are_ours(address.get("Tags")),
                billing=True,
                detail=detail,
            )

    def sessions(self, forwarded_sessions: set[str]) -> None:
        instances = self.ours("instance")
        for session in self.client("ssm").describe_sessions(State="Active")["Sessions"]:
            if session.get("Target") in instances or session["SessionId"] in forwarded_sessions:
                self.add(
                    "session",
                    session["SessionId"],
                    session.get("Status", "Connected"),
                    ours=True,
                    billing=False,
                    detail=f"to {session.get('Target')}",
                )


NOT_ENABLED = ("UnrecognizedClientException", "InvalidClientTokenId", "AuthFailure", "OptInRequired")


def region_not_enabled(error: Exception) -> bool:
    code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
    return code in NOT_ENABLED


def stack_outputs(stack: dict[str, Any]) -> list[dict[str, Any]]:
    import json

    values = []
    for output in stack.get("Outputs") or []:
        if output.get("OutputKey", "").startswith(OUTPUT_PREFIX):
            try:
                values.append(json.loads(output.get("OutputValue", "")))
            except ValueError:
                continue
    return [v for v in values if isinstance(v, dict)]


def stack_expiry(stack: dict[str, Any]) -> str | None:
    """The expiry a stack's backends report (the same for every backend of one deploy)."""
    return next((v["expires_at"] for v in stack_outputs(stack) if v.get("expires_at")), None)


def endpoint_names(stack: dict[str, Any]) -> list[str]:
    return [v["endpoint_name"] for v in stack_outputs(stack) if v.get("endpoint_name")]


def default_regions() -> list[str]:
    """The four US regions, where the app deployed (placement.json), and where it may fail over to."""
    regions = list(REGIONS)
    try:
        regions += list(read_placements().values())
        regions += [r for stack in load_config({}).stacks for r in stack.candidate_regions]
    except CatalogError:
        pass  # a damaged placement file: the US regions still get swept
    return list(dict.fromkeys(regions))


def sweep_regions(regions: list[str]) -> tuple[list[Found], list[str], list[str]]:
    """(found, problems, skipped regions)."""
    try:
        sessions = {f.session_id for f in read_forwards()}
    except RunnerError:
        sessions = set()
    found: list[Found] = []
    problems: list[str] = []
    skipped: list[str] = []
    for region in regions:
        console.print(f"[dim]sweeping {region} …[/dim]")
        scan = RegionScan(region).scan(sessions)
        found += scan.found
        problems += scan.problems
        skipped += [scan.skipped] if scan.skipped else []
    return found, problems, skipped


def delete_ours(found: list[Found], wait_s: float) -> list[dict[str, Any]]:
    """Remove ours in DELETE_ORDER; each step's outcome is kept, a refusal never stops the rest."""
    from runner.forward import close_forwards

    actions: list[dict[str, Any]] = []
    if live_forwards():
        closed = close_forwards(aws=True)
        actions.append({"region": "-", "kind": "local forwards", "id": f"{len(closed)} plugin(s)", "outcome": "closed"})
    clients: dict[tuple[str, str], Any] = {}

    def client(service: str, region: str) -> Any:
        if (service, region) not in clients:
            clients[(service, region)] = boto_client(service, region, 60)
        return clients[(service, region)]

    remove = {
        "session": lambda f: client("ssm", f.region).terminate_session(SessionId=f.id),
        "stack": lambda f: delete_stack(client("cloudformation", f.region), f.id, wait_s),
        "auto-scaling-group": lambda f: client("autoscaling", f.region).delete_auto_scaling_group(
            AutoScalingGroupName=f.id, ForceDelete=True
        ),
        "instance": lambda f: client("ec2", f.region).terminate_instances(InstanceIds=[f.id]),
        "endpoint": lambda f: client("sagemaker", f.region).delete_endpoint(EndpointName=f.id),
        "endpoint-config": lambda f: client("sagemaker", f.region).delete_endpoint_config(EndpointConfigName=f.id),
        "model": lambda f: client("sagemaker", f.region).delete_model(ModelName=f.id),
        "volume": lambda f: client("ec2", f.region).delete_volume(VolumeId=f.id),
        "nat-gateway": lambda f: client("ec2", f.region).delete_nat_gateway(NatGatewayId=f.id),
        "elastic-ip": lambda f: client("ec2", f.region).release_address(AllocationId=f.id),
    }
    order = {kind: index for index, kind in enumerate((*DELETE_ORDER, "nat-gateway", "elastic-ip"))}
    for item in sorted((f for f in found if f.ours), key=lambda f: order[f.kind]):
        if item.kind == "volume" and item.state == "in-use":
            # Its instance was terminated above: wait for the volume to be released, then delete it
            # unless the termination took it along (DeleteOnTermination).
            item.state = released_volume_state(client("ec2", item.region), item.id, wait_s)
            if item.state != "available":
                actions.append(asdict(item) | {"outcome": f"left: {item.state}"})
                continue
        console.print(f"[dim]deleting {item.kind} {item.id} in {item.region} …[/dim]")
        try:
            remove[item.kind](item)
            outcome = "deleted"
        except Exception as error:
            outcome = f"not deleted: {describe(error)}"
        actions.append(asdict(item) | {"outcome": outcome})
    return actions


def released_volume_state(ec2: Any, volume_id: str, wait_s: float) -> str:
    """`available` once detached, `deleted` once gone; whatever it still is after `wait_s`."""
    from botocore.exceptions import ClientError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            (volume,) = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "InvalidVolume.NotFound":
                return "deleted"
            raise
        if volume["State"] in ("available", "deleted") or time.monotonic() > deadline:
            return volume["State"]
        time.sleep(2)


def delete_stack(cloudformation: Any, name: str, wait_s: float) -> None:
    """DeleteStack and wait for it; a deletion that fails is retried once (dependencies)."""
    from botocore.exceptions import WaiterError

    for attempt in (1, 2):
        cloudformation.delete_stack(StackName=name)
        try:
            cloudformation.get_waiter("stack_delete_complete").wait(
                StackName=name,
                WaiterConfig={"Delay": 2 if wait_s < 120 else 15, "MaxAttempts": max(1, int(wait_s // 2))},
            )
            return
        except WaiterError as error:
            if attempt == 2:
                raise RunnerError(f"stack {name} not deleted: {describe(error)}") from None
            time.sleep(1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.sweep", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--regions",
        help="comma-separated regions, or `all` for every commercial region "
        f"(default: {','.join(REGIONS)} and wherever the app deployed or may fail over to)",
    )
    parser.add_argument("--delete", action="store_true", help="remove what this app left (prints the list first)")
    parser.add_argument("--wait", type=float, default=900.0, help="seconds to wait for each stack deletion")
    parser.add_argument("--aws", dest="aws", action="store_true", default=None, help="use AWS even without credentials")
    parser.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS, help="where evidence files go")
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.regions == "all":
        regions = list(COMMERCIAL_REGIONS)
    elif args.regions:
        regions = [check_region(r.strip()) for r in args.regions.split(",") if r.strip()]
    else:
        regions = default_regions()
    if not regions:
        raise RunnerError("--regions: give at least one region")
    if not (args.aws or credentials_configured()):
        raise RunnerError("runner.sweep lists resources through the AWS API, and no AWS credentials are configured")
    evidence = Evidence("sweep", {"regions": regions, "delete": args.delete}, args.results_dir)
    found, problems, skipped = sweep_regions(regions)
    evidence.data["found"] = [asdict(f) for f in found]
    for line in [*problems, *skipped]:
        evidence.notice(line)
    if args.delete:
        doomed = [f for f in found if f.ours]
        console.print(f"[bold]removing {len(doomed)} item(s) of this app[/bold] (nothing else is touched):")
        for item in doomed:
            console.print(f"  {item.region} {item.kind} {item.id} {item.detail}")
        evidence.data["deleted"] = delete_ours(found, args.wait)
        found, problems, _ = sweep_regions(regions)
        for line in problems:
            evidence.notice(line)
    evidence.data["records"] = [asdict(f) for f in found]
    path = evidence.finish()
    print_report(evidence.data)
    print(f"evidence: {path}")
    return 1 if any(f.billing for f in found) or problems else 0


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    for action in evidence.get("deleted") or []:
        out.print(f"{action['region']} {action['kind']} {action['id']}: {action['outcome']}")
    records = evidence.get("records", [])
    for region in evidence["config"]["regions"]:
        rows = [r for r in records if r["region"] == region]
        billing = sum(1 for r in rows if r["billing"])
        table = Table(title=f"{region}: {len(rows)} found, {billing} billing" if rows else f"{region}: nothing found")
        if not rows:
            out.print(table.title)
            continue
        for column in ("kind", "id", "state", "ours", "billing", "detail"):
            table.add_column(column)
        for row in rows:
            table.add_row(
                row["kind"],
                row["id"],
                row["state"],
                "ours" if row["ours"] else "not ours",
                "yes" if row["billing"] else "no",
                row["detail"],
            )
        out.print(table)
    left = [r for r in records if r["billing"]]
    if left:
        mine = sum(1 for r in left if r["ours"])
        out.print(f"[red]still billing: {len(left)} item(s), {mine} of them this app's[/red]")
    else:
        out.print("[green]nothing billing in the swept regions[/green]")


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
