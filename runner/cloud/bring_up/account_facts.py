"""What only the deploying account knows, read before a deploy and passed to the app as context:
its zones of a region (zone letters map to physical zones per account) and the AMI id each
server's public parameter names today (recorded in placement.json and reused, so a later
deploy does not swap the image under a running server unless asked)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from catalog.config import StackConfig
from runner.cloud.aws import boto_client
from runner.core.errors import RunnerError, describe


def account_zones(region: str, ec2: Any | None = None) -> list[str]:
    """Every available Availability Zone of the region in this account (no Local or Wavelength
    zones), sorted by name."""
    ec2 = ec2 or boto_client("ec2", region, 30)
    try:
        zones = ec2.describe_availability_zones(
            Filters=[
                {"Name": "zone-type", "Values": ["availability-zone"]},
                {"Name": "state", "Values": ["available"]},
            ]
        )["AvailabilityZones"]
    except (BotoCoreError, ClientError) as error:
        raise RunnerError(f"could not read the zones of {region}: {describe(error)}") from None
    names = sorted(z["ZoneName"] for z in zones if z.get("ZoneType", "availability-zone") == "availability-zone")
    if not names:
        raise RunnerError(f"{region} has no available zone in this account (is the region enabled?)")
    return names


def resolve_ami(parameter: str, region: str, ssm: Any | None = None) -> str:
    """The AMI id a public SSM parameter names now, in `region`."""
    ssm = ssm or boto_client("ssm", region, 30)
    try:
        return ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    except (BotoCoreError, ClientError) as error:
        raise RunnerError(f"could not read {parameter} in {region}: {describe(error)}") from None


def deploy_context(
    stack: StackConfig, region: str, recorded_amis: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """(context, AMI ids) for deploying `stack` in `region`: the account's zones there, and each
    EC2 server's AMI: the one recorded for this region, else the parameter's value today."""
    context = {f"{region}.zones": ",".join(account_zones(region))}
    amis: dict[str, str] = {}
    for backend in stack.backends:
        if not backend.spec.ami_parameter:
            continue
        pinned = backend.ami_id if region == backend.region else None
        ami = pinned or recorded_amis.get(backend.name) or resolve_ami(backend.spec.ami_parameter, region)
        amis[backend.name] = ami
        context[f"{backend.name}.ami"] = ami
    return context, amis
