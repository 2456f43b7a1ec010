"""What the app left in a region, and what bills there whatever its tag: one region's listing
(stacks with their time-to-live, groups, instances, volumes, endpoints and their inference
components, running transform jobs,
network, our buckets, the kept repositories of the images the app builds, Custom Model Import
models and running import jobs, sessions), each list call's failure a line, never a stop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from catalog import CatalogError
from catalog.backends import IMPORT_REGIONS, stack_names
from catalog.boot import S3_USD_PER_GB_MONTH, STORE_STACK_PREFIX, is_store_bucket
from catalog.builds import REPOSITORY_PREFIX, kept_repository
from catalog.config import load_config, read_placements
from catalog.contract import APP_TAG, BACKEND_TAG_KEY, OUTPUT_PREFIX
from catalog.offerings import US_REGIONS
from catalog.prices import ECR_USD_PER_GB_MONTH
from catalog.serving import SERVING
from runner.cloud.aws import boto_client
from runner.cloud.jobs.custom_model_import import (
    IN_PROGRESS,
    import_jobs,
    import_tags_are_ours,
    imported_models,
    resource_tags,
)
from runner.cloud.reach.forwards_file import read_forwards
from runner.core.console import console
from runner.core.errors import RunnerError, aws_error_code, describe
from runner.core.references import resolve

REGIONS = US_REGIONS


INSTANCE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")


BILLING_INSTANCE_STATES = ("pending", "running", "stopping", "shutting-down")

# How Custom Model Import bills (Bedrock pricing): nothing while idle at zero copies, but storage
# while the model exists; an import job itself is not billed.
IMPORTED_MODEL_PRICE = "bills per CMU-minute (5-minute windows) only while active, plus storage per CMU-month"
IMPORT_JOB_PRICE = "an import job is not billed; its model bills once imported"


@dataclass
class Found:
    region: str
    kind: str
    id: str
    state: str
    ours: bool
    billing: bool
    detail: str = ""
    # Left on purpose (an image the next deploy reuses): listed with its cost, removed only when asked.
    kept: bool = False


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
        # Group name -> its stack's expiry: for a group whose one-time action has run (AWS removes it).
        self.group_expiries: dict[str, str] = {}

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = boto_client(service, self.region, 30)
        return self.clients[service]

    def add(
        self, kind: str, id: str, state: str, *, ours: bool, billing: bool, detail: str = "", kept: bool = False
    ) -> None:
        self.found.append(Found(self.region, kind, id, state, ours, billing, detail, kept))

    def scan(self, forwarded_sessions: set[str]) -> RegionScan:
        # What every region may hold of the app (its stacks first: they name the endpoints and
        # groups), then what each way of serving may leave (its serving row's `leftovers`).
        steps = [self.stacks, *(partial(resolve(found), self) for found in serving_leftovers())]
        for step in (*steps, self.network, self.buckets, self.images):
            try:
                step()
            except Exception as error:  # one refused list call never hides the rest
                if step == self.stacks and region_not_enabled(error):
                    # An opt-in region the account has not enabled: nothing can run (or bill) there.
                    self.skipped = f"{self.region}: not enabled for this account (nothing can run there)"
                    return self
                self.problems.append(f"{self.region} {step_name(step)}: {describe(error)}")
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
                    for output in stack_outputs(stack):
                        if output.get("auto_scaling_group") and output.get("expires_at"):
                            self.group_expiries[output["auto_scaling_group"]] = output["expires_at"]
                    for name in endpoint_names(stack):
                        self.endpoint_expiries[name] = expiry
                    detail = f"time-to-live {expiry}" if expiry else "no time-to-live"
                    kept = stack["StackName"].startswith(STORE_STACK_PREFIX)
                    if kept:
                        detail = (
                            "the region's store, image repositories and weights copy (its bucket and repositories "
                            "are retained): kept so the next deploy finds them (--delete --purge-images removes it)"
                        )
                    self.add(
                        "stack", stack["StackName"], stack["StackStatus"], ours=True, billing=False, detail=detail,
                        kept=kept,
                    )  # fmt: skip

    def groups(self) -> None:
        autoscaling = self.client("autoscaling")
        for page in autoscaling.get_paginator("describe_auto_scaling_groups").paginate():
            for group in page["AutoScalingGroups"]:
                tags = [{"Key": t["Key"], "Value": t["Value"]} for t in group.get("Tags", [])]
                if tags_are_ours(tags):
                    detail = f"desired {group['DesiredCapacity']}, {len(group.get('Instances', []))} instance(s)"
                    name = group["AutoScalingGroupName"]
                    # The stack's Scheduler schedule takes it to zero then (its output says when).
                    expiry = self.group_expiries.get(name)
                    detail += f"; time-to-live {expiry}" if expiry else "; no time-to-live"
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

    def inference_components(self) -> None:
        """Inference components, ours by tag or by their endpoint: their copies hold the instances the
        endpoint bills for (the endpoint's row bills), and an endpoint goes only once they are gone."""
        sagemaker = self.client("sagemaker")
        endpoints = self.ours("endpoint")
        for page in sagemaker.get_paginator("list_inference_components").paginate():
            for component in page["InferenceComponents"]:
                tags = sagemaker.list_tags(ResourceArn=component["InferenceComponentArn"]).get("Tags")
                endpoint = component["EndpointName"]
                self.add(
                    "inference-component",
                    component["InferenceComponentName"],
                    component["InferenceComponentStatus"],
                    ours=tags_are_ours(tags) or endpoint in endpoints,
                    billing=False,
                    detail=f"on endpoint {endpoint} (its copies' instances bill as the endpoint's)",
                )

    def transform_jobs(self) -> None:
        """Running batch transform jobs, ours or not: their instances bill while the job runs."""
        sagemaker = self.client("sagemaker")
        for page in sagemaker.get_paginator("list_transform_jobs").paginate(StatusEquals="InProgress"):
            for job in page["TransformJobSummaries"]:
                tags = sagemaker.list_tags(ResourceArn=job["TransformJobArn"]).get("Tags")
                self.add(
                    "transform-job",
                    job["TransformJobName"],
                    job["TransformJobStatus"],
                    ours=tags_are_ours(tags),
                    billing=True,
                    detail=f"started {job.get('CreationTime')}",
                )

    def buckets(self) -> None:
        """Our buckets in this region (the async and import stacks own one each): a bucket with
        objects in it bills storage, and CloudFormation deletes a bucket only once it is empty. The
        app's store (weights and compiled graphs; catalog/boot.py) is its region's store stack's, which
        retains it, and is kept."""
        s3 = self.client("s3")
        for page in s3.get_paginator("list_buckets").paginate(BucketRegion=self.region):
            for bucket in page.get("Buckets", []):
                tags = bucket_tags(s3, bucket["Name"])
                if not tags_are_ours(tags):
                    continue
                if is_store_bucket(bucket["Name"]):
                    gb = stored_bytes(s3, bucket["Name"]) / 1e9
                    detail = (
                        f"the app's store: {gb:.2f} GB: ${gb * S3_USD_PER_GB_MONTH:.2f} a month of storage; kept so the "
                        "next server in the region finds its weights and graphs (--delete --purge-images removes it)"
                    )
                    self.add("bucket", bucket["Name"], "-", ours=True, billing=gb > 0, detail=detail, kept=True)
                    continue
                versions = count_versions(s3, bucket["Name"])
                stack = tag_value(tags, "aws:cloudformation:stack-name")
                detail = f"{versions} object version(s)" if versions < VERSION_COUNT_LIMIT else "1000+ object versions"
                detail += f"; in stack {stack}" if stack else ""
                self.add("bucket", bucket["Name"], "-", ours=True, billing=versions > 0, detail=detail)

    def images(self) -> None:
        """The repositories of the images the app builds: the region's store stack retains them (each
        deploy reuses its image instead of building again), and they bill storage while they hold
        images. One of an older version of the app (a mirror of a public image) is ours, not kept."""
        ecr = self.client("ecr")
        for page in ecr.get_paginator("describe_repositories").paginate():
            for repository in page["repositories"]:
                name = repository["repositoryName"]
                if not name.startswith(REPOSITORY_PREFIX):
                    continue
                tags = ecr.list_tags_for_resource(resourceArn=repository["repositoryArn"]).get("tags", [])
                if not tags_are_ours(tags):
                    continue
                images = [i for p in ecr.get_paginator("describe_images").paginate(repositoryName=name) for i in p["imageDetails"]]  # fmt: skip
                gb = sum(i.get("imageSizeInBytes", 0) for i in images) / 1e9
                kept = kept_repository(name)
                detail = (
                    f"{len(images)} image(s), {gb:.2f} GB: ${gb * ECR_USD_PER_GB_MONTH:.2f} a month of storage; "
                    + (
                        "kept so the next deploy builds nothing (--delete --purge-images removes it)"
                        if kept
                        else "no longer used by this version of the app"
                    )
                )
                self.add("image-repository", name, "-", ours=True, billing=bool(images), detail=detail, kept=kept)

    def model_imports(self) -> None:
        """Custom Model Import (not in CloudFormation, so no stack removes it): every imported
        model, ours by its tags, and the import jobs still running. Only where CMI is offered."""
        if self.region not in IMPORT_REGIONS:
            return
        bedrock = self.client("bedrock")
        for model in imported_models(bedrock):
            detail = " ".join(filter(None, [model.get("modelArchitecture"), IMPORTED_MODEL_PRICE]))
            self.add("imported-model", model["modelName"], "-", ours=model["ours"], billing=True, detail=detail)
        for job in import_jobs(bedrock, IN_PROGRESS):
            ours = import_tags_are_ours(resource_tags(bedrock, job["jobArn"]))
            detail = f"importing {job.get('importedModelName')}; {IMPORT_JOB_PRICE}"
            self.add("import-job", job["jobName"], job["status"], ours=ours, billing=False, detail=detail)

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


# Counting stops here: the listing says how full a bucket is, not how big.
VERSION_COUNT_LIMIT = 1000


def serving_leftovers() -> list[str]:
    """Every way of serving's leftover finders, each once, in the rows' order."""
    return list(dict.fromkeys(found for path in SERVING.values() for found in path.leftovers))


def step_name(step: Callable[[], None]) -> str:
    return step.func.__name__ if isinstance(step, partial) else step.__name__


def bucket_tags(s3: Any, name: str) -> list[dict[str, str]]:
    """A bucket's tags; none when it has no tag set."""
    try:
        return s3.get_bucket_tagging(Bucket=name).get("TagSet", [])
    except Exception as error:
        if aws_error_code(error) in ("NoSuchTagSet", "NoSuchBucket"):
            return []
        raise


def stored_bytes(s3: Any, name: str) -> int:
    """What the bucket's current objects hold, in bytes."""
    return sum(o.get("Size", 0) for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name)
               for o in page.get("Contents", []))  # fmt: skip


def count_versions(s3: Any, name: str) -> int:
    """Object versions and delete markers in the bucket, up to VERSION_COUNT_LIMIT."""
    page = s3.list_object_versions(Bucket=name, MaxKeys=VERSION_COUNT_LIMIT)
    return len(page.get("Versions", [])) + len(page.get("DeleteMarkers", []))


NOT_ENABLED = ("UnrecognizedClientException", "InvalidClientTokenId", "AuthFailure", "OptInRequired")


def region_not_enabled(error: Exception) -> bool:
    code = aws_error_code(error)
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
