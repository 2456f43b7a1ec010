"""The EC2 server's constructs, each alone in a bare Stack of a fresh App: SsmOnlyNetwork,
ServerInstanceRole, InRegionBench, ModelServer, StackMarker, the owned log group and the backend
output. A broken promise fails here, naming its construct, with nothing of the stacks around it;
the whole-app synthesis (test_stacks.py, test_in_region.py) keeps what only the app can show:
regions, no exports between stacks, every group of a stack under the time-to-live, cdk-nag, cfn-lint.
No cdk-nag here: the whole-app tests run it."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from catalog.backends import WeightsLoad, get_backend
from catalog.boot import disk_needed_gb
from catalog.builds import built_image, mirror_repository, mirror_tag, repository_name
from catalog.config import BackendConfig, StackConfig
from catalog.contract import BACKEND_TAG_KEY, IMAGE_TAG_KEY, BackendOutput, output_key
from inference_constructs.image_build import ImageBuild, image_build_for
from inference_constructs.in_region import InRegionBench
from inference_constructs.instance_role import ServerInstanceRole
from inference_constructs.log_group import owned_log_group
from inference_constructs.model_server import ModelServer
from inference_constructs.region_store import RegionStore
from inference_constructs.ssm_only_network import SsmOnlyNetwork
from inference_constructs.stack_marker import StackMarker
from inference_constructs.user_data import DEFAULT_READY_MINUTES, USER_DATA_LIMIT
from tests.cdk.conftest import render_join

REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
EXPIRY = "2026-12-01T21:01:00Z"
EXPIRY_DIGITS = "20261201210100"
SECRET = "inference/hf-token"
EC2_BACKENDS = ("g6", "g5g", "inf2", "trn1")
# The statements every server's role holds whatever it is given (ServerInstanceRole).
BASE_SIDS = {"WriteOwnLogs", "ReportReadiness", "FindOwnGroup", "TakeOwnGroupToZero"}


def bare_stack(outdir: Path, region: str | None = REGION, *, account: str | None = None, **context: Any) -> cdk.Stack:
    """One empty Stack in a fresh App: whatever the template holds, the construct under test made."""
    app = cdk.App(outdir=str(outdir), context=context, builtin_cloud_formation_validation=False)
    return cdk.Stack(app, "Bare", env=cdk.Environment(account=account, region=region))


def logical_id(construct: Any) -> str:
    """The logical id CloudFormation knows a construct's resource by (its L1, or the L1 itself)."""
    resource = (getattr(construct, "node", None) and construct.node.default_child) or construct
    stack = cdk.Stack.of(resource)
    return stack.resolve(stack.get_logical_id(resource))


def only(template: Template, type_name: str) -> tuple[str, dict[str, Any]]:
    """The one resource of a type (fails if there are none or several)."""
    found = template.find_resources(type_name)
    assert len(found) == 1, f"{len(found)} resources of type {type_name}: {sorted(found)}"
    return next(iter(found.items()))


def statements(template: Template, role_logical_id: str) -> list[dict[str, Any]]:
    """Every statement of every inline policy attached to one role."""
    policies = template.find_resources("AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": role_logical_id}]}})
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


def resources_of(statement: dict[str, Any]) -> list[Any]:
    value = statement["Resource"]
    return value if isinstance(value, list) else [value]


def by_sid(found: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in found if "Sid" in s}


def actions(statement: dict[str, Any]) -> list[str]:
    value = statement["Action"]
    return [value] if isinstance(value, str) else value


# --- SsmOnlyNetwork ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def network(tmp_path_factory) -> tuple[SsmOnlyNetwork, Template]:
    stack = bare_stack(tmp_path_factory.mktemp("network"))
    made = SsmOnlyNetwork(stack, "Network", zones=list(ZONES))
    return made, Template.from_stack(stack)


def test_the_network_is_public_subnets_one_per_zone_and_no_nat(network):
    """No NAT gateway to pay for: one public subnet in each zone given, and nothing private."""
    _, template = network
    template.has_resource_properties("AWS::EC2::VPC", {"CidrBlock": "10.42.0.0/16"})
    subnets = template.find_resources("AWS::EC2::Subnet")
    assert sorted(s["Properties"]["AvailabilityZone"] for s in subnets.values()) == list(ZONES)
    assert all(s["Properties"]["MapPublicIpOnLaunch"] is True for s in subnets.values())
    template.resource_count_is("AWS::EC2::NatGateway", 0)
    template.resource_count_is("AWS::EC2::EIP", 0)
    # Every subnet routes to the internet gateway: none is private.
    routes = template.find_resources("AWS::EC2::Route")
    (gateway_id, _) = only(template, "AWS::EC2::InternetGateway")
    assert len(routes) == len(ZONES)
    assert all(r["Properties"] == r["Properties"] | {"GatewayId": {"Ref": gateway_id}} for r in routes.values())
    # Leaving the default group alone needs no Lambda-backed custom resource.
    template.resource_count_is("AWS::Lambda::Function", 0)
    template.resource_count_is("Custom::VpcRestrictDefaultSG", 0)


def test_the_network_takes_its_cidr(tmp_path):
    stack = bare_stack(tmp_path)
    SsmOnlyNetwork(stack, "Network", zones=["us-east-1a"], cidr="10.7.0.0/16")
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::EC2::VPC", {"CidrBlock": "10.7.0.0/16"})
    template.resource_count_is("AWS::EC2::Subnet", 1)


def test_the_servers_security_group_accepts_nothing_and_sends_only_https_and_http(network):
    made, template = network
    group_id, group = only(template, "AWS::EC2::SecurityGroup")
    assert group_id == logical_id(made.security_group)
    assert "SecurityGroupIngress" not in group["Properties"]
    template.resource_count_is("AWS::EC2::SecurityGroupIngress", 0)
    egress = sorted(
        (r["IpProtocol"], r["FromPort"], r["ToPort"], r["CidrIp"]) for r in group["Properties"]["SecurityGroupEgress"]
    )
    # No all-traffic rule (allow_all_outbound off): 443 for SSM, ECR and the hub, 80 for package mirrors.
    assert egress == [("tcp", 80, 80, "0.0.0.0/0"), ("tcp", 443, 443, "0.0.0.0/0")]


# --- ServerInstanceRole -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def instance_role(tmp_path_factory) -> tuple[ServerInstanceRole, Template]:
    stack = bare_stack(tmp_path_factory.mktemp("role"))
    role = ServerInstanceRole(stack, "Role", backend="g6", hf_token_secret_name=SECRET)
    role.allow_build("arn:aws:codebuild:us-east-1:123456789012:project/build-it")
    return role, Template.from_stack(stack)


def test_the_instance_role_is_for_ec2_with_ssm_and_ecr_pull_and_nothing_broader(instance_role):
    role, template = instance_role
    role_id, props = only(template, "AWS::IAM::Role")
    assert role_id == logical_id(role.role)
    (trust,) = props["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "ec2.amazonaws.com"}
    managed = sorted(render_join(a).rsplit("/", 1)[1] for a in props["Properties"]["ManagedPolicyArns"])
    assert managed == ["AmazonEC2ContainerRegistryReadOnly", "AmazonSSMManagedInstanceCore"]


def test_the_instance_role_reads_one_secret_and_writes_only_its_own_logs_and_readiness(instance_role):
    role, template = instance_role
    found = statements(template, logical_id(role.role))
    (secret,) = [s for s in found if "secretsmanager:GetSecretValue" in actions(s)]
    assert (
        render_join(secret["Resource"])
        == f"arn:<AWS::Partition>:secretsmanager:{REGION}:<AWS::AccountId>:secret:{SECRET}-??????"
    )
    sids = by_sid(found)
    assert render_join(sids["WriteOwnLogs"]["Resource"]).endswith(
        f":logs:{REGION}:<AWS::AccountId>:log-group:/inference/g6:*"
    )
    assert sorted(actions(sids["ReportReadiness"])) == ["ssm:GetParameter", "ssm:PutParameter"]
    assert render_join(sids["ReportReadiness"]["Resource"]).endswith(":parameter/inference/g6/ready")


def test_the_instance_role_may_set_the_capacity_of_its_own_group_only(instance_role):
    role, template = instance_role
    sids = by_sid(statements(template, logical_id(role.role)))
    scale = sids["TakeOwnGroupToZero"]
    assert actions(scale) == ["autoscaling:SetDesiredCapacity"]
    assert scale["Condition"] == {"StringEquals": {f"aws:ResourceTag/{BACKEND_TAG_KEY}": "g6"}}
    assert actions(sids["FindOwnGroup"]) == ["autoscaling:DescribeAutoScalingInstances"]
    # Nothing else of the role reaches Auto Scaling.
    scaling = [s.get("Sid") for s in statements(template, logical_id(role.role)) if "autoscaling:" in json.dumps(s)]
    assert sorted(scaling) == ["FindOwnGroup", "TakeOwnGroupToZero"]


def test_the_build_grant_names_one_project(instance_role):
    role, template = instance_role
    sids = by_sid(statements(template, logical_id(role.role)))
    assert sids["StartItsImageBuild"]["Resource"] == "arn:aws:codebuild:us-east-1:123456789012:project/build-it"
    assert sorted(actions(sids["StartItsImageBuild"])) == [
        "codebuild:BatchGetBuilds",
        "codebuild:ListBuildsForProject",
        "codebuild:StartBuild",
    ]
    assert set(sids) == BASE_SIDS | {"StartItsImageBuild"}


# --- InRegionBench ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def in_region(tmp_path_factory) -> tuple[InRegionBench, iam.Role, Template]:
    stack = bare_stack(tmp_path_factory.mktemp("in-region"))
    bench = InRegionBench(stack, "InRegion")
    role = iam.Role(stack, "ServerRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    bench.allow(role, "g6")
    return bench, role, Template.from_stack(stack)


def test_the_evidence_bucket_is_private_encrypted_tls_only_expiring_and_destroyed(in_region):
    """docs/runner.md: the in-region records' bucket expires objects after 7 days, cdk destroy removes it."""
    bench, _, template = in_region
    bucket_id, bucket = only(template, "AWS::S3::Bucket")
    assert bucket_id == logical_id(bench.bucket)
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == ("Delete", "Delete")
    props = bucket["Properties"]
    assert "BucketName" not in props
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert props["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True
    )
    assert props["LifecycleConfiguration"]["Rules"] == [
        {
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
            "ExpirationInDays": 7,
            "Status": "Enabled",
        }
    ]
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": bucket_id},
            "PolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {"Effect": "Deny", "Action": "s3:*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                    )
                ]
            },
        },
    )
    # No auto-delete: that would be a Lambda-backed custom resource.
    template.resource_count_is("AWS::Lambda::Function", 0)
    template.resource_count_is("Custom::S3AutoDeleteObjects", 0)


def test_a_server_reads_the_one_kit_object_and_reads_and_writes_under_its_own_prefix_only(in_region):
    bench, role, template = in_region
    found = statements(template, logical_id(role))
    sids = by_sid(found)
    assert actions(sids["ReadTheBenchKit"]) == ["s3:GetObject"]
    assert render_join(sids["ReadTheBenchKit"]["Resource"]).endswith(f"/{bench.kit.s3_object_key}")
    assert bench.kit.s3_object_key.endswith(".zip")
    assert actions(sids["WriteInRegionEvidence"]) == ["s3:PutObject"]
    assert render_join(sids["WriteInRegionEvidence"]["Resource"]) == f"<{logical_id(bench.bucket)}.Arn>/in-region/g6/*"
    assert actions(sids["ReadInRegionRequests"]) == ["s3:GetObject"]
    assert (
        render_join(sids["ReadInRegionRequests"]["Resource"])
        == f"<{logical_id(bench.bucket)}.Arn>/in-region/g6/*/requests.json.gz"
    )
    assert [s.get("Sid") for s in found] == ["ReadTheBenchKit", "WriteInRegionEvidence", "ReadInRegionRequests"]


# --- ModelServer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    """A ModelServer built alone, with what the stack would hand it."""

    backend: BackendConfig
    server: ModelServer
    network: SsmOnlyNetwork
    build: ImageBuild | None
    store: RegionStore | None
    bench: InRegionBench | None
    template: Template

    @property
    def name(self) -> str:
        return self.backend.name

    def resource(self, construct: Any) -> dict[str, Any]:
        return self.template.to_json()["Resources"][logical_id(construct)]


def build_server(
    outdir: Path,
    name: str,
    *,
    full: bool = True,
    expires_at: str | None = EXPIRY,
    zones: tuple[str, ...] = (),
    ami_id: str | None = None,
    ready_minutes: int | None = -1,
    account: str | None = None,
    **context: Any,
) -> Server:
    """One server in a bare stack with the network it needs; `full` also hands it what the stack
    would (its image build, the app's store in the region, the in-region bench)."""
    spec = get_backend(name)
    stack = bare_stack(outdir, account=account, **context)
    network = SsmOnlyNetwork(stack, "Network", zones=list(ZONES))
    build = image_build_for(stack, spec, {}, expires_at) if full else None
    store = RegionStore(stack, "Store", models=[spec.model_id], hf_token_secret_name=SECRET) if full else None
    bench = InRegionBench(stack, "InRegion") if full else None
    backend = BackendConfig(
        spec=spec,
        region=REGION,
        zones=zones,
        ready_minutes=spec.ready_minutes if ready_minutes == -1 else ready_minutes,
        ami_id=ami_id,
    )
    server = ModelServer(
        stack,
        name.capitalize(),
        backend=backend,
        vpc=network.vpc,
        security_group=network.security_group,
        hf_token_secret_name=SECRET,
        image_uri=build.image_uri if build else spec.image or "",
        image_build=build,
        store=store,
        expires_at=expires_at,
        in_region=bench,
    )
    return Server(backend, server, network, build, store, bench, Template.from_stack(stack))


@pytest.fixture(scope="module", params=EC2_BACKENDS)
def server(request, tmp_path_factory) -> Server:
    """Each EC2 backend of the catalog, built as its stack builds it."""
    return build_server(tmp_path_factory.mktemp(f"server-{request.param}"), request.param)


@pytest.fixture(scope="module")
def minimal_g6(tmp_path_factory) -> Server:
    """g6 with only what ModelServer requires: no build, store, bench or expiry."""
    return build_server(tmp_path_factory.mktemp("server-minimal"), "g6", full=False, expires_at=None)


def launch_data(server: Server) -> dict[str, Any]:
    return server.resource(server.server.launch_template)["Properties"]["LaunchTemplateData"]


def server_env(server: Server) -> dict[str, str]:
    """The settings the boot script writes to /etc/inference/server.env (tokens as <LogicalId>)."""
    script = render_join(launch_data(server)["UserData"])
    block = script.split("cat > \"$ROOT/etc/inference/server.env\" <<'INFERENCE_EOF'\n", 1)[1]
    lines = block.split("\nINFERENCE_EOF", 1)[0].splitlines()
    return {key: shlex.split(value)[0] for key, value in (line.split("=", 1) for line in lines)}


def test_a_server_is_a_group_of_at_most_one_and_none_while_its_image_is_built(server):
    group = server.resource(server.server.group)["Properties"]
    assert (group["MinSize"], group["MaxSize"]) == ("0", "1")
    # One instance at creation when the image exists; none while the app builds it (the build brings it up).
    builds_its_image = built_image(server.backend.spec) is not None
    assert (server.build is not None) is builds_its_image
    assert group.get("DesiredCapacity") == (None if builds_its_image else "1")
    readiness = server.resource(server.server.readiness)["Properties"]
    assert readiness["Name"] == f"/inference/{server.name}/ready"
    assert json.loads(readiness["Value"])["state"] == ("waiting-for-image" if builds_its_image else "launching")


def test_the_launch_template_requires_imdsv2_and_boots_the_catalogs_type_ami_and_volume(server):
    spec = server.backend.spec
    data = launch_data(server)
    # An engine that streams its weights from the store reads credentials from its container: one hop more.
    streams = server.store is not None and spec.weights_load is WeightsLoad.STREAM
    assert data["MetadataOptions"] == {"HttpTokens": "required"} | ({"HttpPutResponseHopLimit": 2} if streams else {})
    assert data["InstanceType"] == spec.instance_type
    parameter = server.template.to_json()["Parameters"][data["ImageId"]["Ref"]]
    assert parameter == {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", "Default": spec.ami_parameter}
    (device,) = data["BlockDeviceMappings"]
    assert device == {
        "DeviceName": "/dev/sda1",
        "Ebs": {
            "DeleteOnTermination": True,
            "Encrypted": True,
            "VolumeType": "gp3",
            "VolumeSize": spec.root_volume_gib,
            "Throughput": spec.root_volume_throughput_mbs,
        },
    }


def test_a_server_opens_no_port_and_uses_the_networks_group(server):
    """SSM only: the server adds no security group and no ingress of its own."""
    template = server.template
    template.resource_count_is("AWS::EC2::SecurityGroup", 1)
    template.resource_count_is("AWS::EC2::SecurityGroupIngress", 0)
    assert launch_data(server)["SecurityGroupIds"] == [
        {"Fn::GetAtt": [logical_id(server.network.security_group), "GroupId"]}
    ]


def test_the_role_holds_exactly_what_this_server_was_given(server, minimal_g6):
    profile_id = launch_data(server)["IamInstanceProfile"]["Arn"]["Fn::GetAtt"][0]
    profile = server.template.to_json()["Resources"][profile_id]["Properties"]
    role_id = logical_id(server.server.instance_role.role)
    assert profile["Roles"] == [{"Ref": role_id}]
    found = statements(server.template, role_id)
    expected = BASE_SIDS | {"ReadTheBenchKit", "WriteInRegionEvidence", "ReadInRegionRequests"}
    if server.build:
        expected.add("StartItsImageBuild")
        assert by_sid(found)["StartItsImageBuild"]["Resource"] == {
            "Fn::GetAtt": [logical_id(server.build.project), "Arn"]
        }
    if server.store:
        expected |= {
            "FindTheStore",
            "ReadTheWeightsAndGraphs",
            "KeepCompiledGraphs",
            "ReadGraphsCompiledElsewhere",
            "StartTheCopyOrTheMirror",
        }
        sids = by_sid(found)
        bucket = f"arn:<AWS::Partition>:s3:::inference-survey-<AWS::AccountId>-{REGION}"
        assert render_join(sids["KeepCompiledGraphs"]["Resource"]) == f"{bucket}/graphs/*"
        assert actions(sids["KeepCompiledGraphs"]) == ["s3:PutObject"]
        assert sorted(render_join(r) for r in resources_of(sids["ReadTheWeightsAndGraphs"])) == [
            f"{bucket}/graphs/*",
            f"{bucket}/weights/*",
        ]
        # Graphs compiled in the backend's other regions are read, never written.
        elsewhere = sorted(render_join(r) for r in resources_of(sids["ReadGraphsCompiledElsewhere"]))
        others = [r for r in server.backend.spec.regions if r != REGION]
        assert elsewhere == sorted(
            f"arn:<AWS::Partition>:s3:::inference-survey-<AWS::AccountId>-{r}/graphs/*" for r in others
        )
        assert actions(sids["ReadGraphsCompiledElsewhere"]) == ["s3:GetObject"]
        projects = [
            server.store.copy,
            *([server.store.mirrors[server.backend.spec.image]] if server.server.boot.fallback_image else []),
        ]
        assert resources_of(sids["StartTheCopyOrTheMirror"]) == [
            {"Fn::GetAtt": [logical_id(p), "Arn"]} for p in projects
        ]
    assert set(by_sid(found)) == expected
    # The one statement without a Sid is the read of the token secret.
    assert [sorted(actions(s)) for s in found if "Sid" not in s] == [
        ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"]
    ]
    # Given nothing, a server's role holds the base statements and the secret only.
    minimal = statements(minimal_g6.template, logical_id(minimal_g6.server.instance_role.role))
    assert set(by_sid(minimal)) == BASE_SIDS and len(minimal) == len(BASE_SIDS) + 1


def test_the_group_carries_the_tags_the_runner_and_the_build_read(server, minimal_g6):
    tags = server.resource(server.server.group)["Properties"]["Tags"]
    assert {"Key": BACKEND_TAG_KEY, "PropagateAtLaunch": True, "Value": server.name} in tags
    folder = built_image(server.backend.spec)
    image_tags = [t for t in tags if t["Key"] == IMAGE_TAG_KEY]
    assert image_tags == ([{"Key": IMAGE_TAG_KEY, "PropagateAtLaunch": True, "Value": folder}] if folder else [])
    minimal_tags = minimal_g6.resource(minimal_g6.server.group)["Properties"]["Tags"]
    assert minimal_tags == [{"Key": BACKEND_TAG_KEY, "PropagateAtLaunch": True, "Value": "g6"}]


def test_a_new_template_version_replaces_the_server_and_a_deploy_leaves_its_size_alone(server):
    policy = server.resource(server.server.group)["UpdatePolicy"]
    assert policy == {
        "AutoScalingRollingUpdate": {"MaxBatchSize": 1, "MinInstancesInService": 0},
        "AutoScalingScheduledAction": {"IgnoreUnmodifiedGroupSizeProperties": True},
    }


def test_the_time_to_live_is_one_action_at_the_expiry_that_takes_the_group_to_zero(server, minimal_g6):
    (action_id, action) = only(server.template, "AWS::AutoScaling::ScheduledAction")
    assert action_id == logical_id(server.server.time_to_live)
    assert action["Properties"] == {
        "AutoScalingGroupName": {"Ref": logical_id(server.server.group)},
        "StartTime": EXPIRY,
        "DesiredCapacity": 0,
        "MinSize": 0,
    }
    # Its id carries the expiry, so a later deploy makes a new action instead of updating one AWS removed.
    assert action_id.startswith(f"{server.name.capitalize()}TimeToLive{EXPIRY_DIGITS}")
    minimal_g6.template.resource_count_is("AWS::AutoScaling::ScheduledAction", 0)
    assert minimal_g6.server.time_to_live is None


def test_another_expiry_is_another_action(tmp_path):
    later = build_server(tmp_path, "g6", full=False, expires_at="2026-12-02T09:30:00Z")
    (action_id, action) = only(later.template, "AWS::AutoScaling::ScheduledAction")
    assert action_id.startswith("G6TimeToLive20261202093000")
    assert action["Properties"]["StartTime"] == "2026-12-02T09:30:00Z"


def test_the_servers_log_group_and_readiness_are_its_own_and_go_with_the_stack(server):
    log_group = server.resource(server.server.log_group)
    assert log_group["Properties"] == {"LogGroupName": f"/inference/{server.name}", "RetentionInDays": 14}
    assert (log_group["DeletionPolicy"], log_group["UpdateReplacePolicy"]) == ("Delete", "Delete")
    assert server.resource(server.server.readiness).get("DeletionPolicy", "Delete") == "Delete"


def test_the_boot_script_is_wired_to_the_servers_own_resources(server, minimal_g6):
    spec = server.backend.spec
    env = server_env(server)
    assert env["BACKEND"] == server.name and env["MODEL_ID"] == spec.model_id
    assert env["READY_PARAMETER"] == f"<{logical_id(server.server.readiness)}>"
    assert env["LOG_GROUP"] == f"<{logical_id(server.server.log_group)}>"
    assert env["HF_TOKEN_SECRET"] == SECRET and env["AWS_REGION"] == REGION
    assert env["READY_MINUTES"] == str(spec.ready_minutes)
    assert (env["HOST_PORT"], env["CONTAINER_PORT"]) == (str(spec.port), str(spec.container_port))
    if server.build:
        assert env["IMAGE_BUILD_PROJECT"] == f"<{logical_id(server.build.project)}>"
        assert env["IMAGE"].endswith(f"/{repository_name(server.build.folder)}:{server.build.tag}")
        assert env["MISSING_IMAGE_HINT"] == ""
    else:
        # A public image runs from its mirror in the region's ECR, the image itself when that fails.
        assert env["IMAGE_BUILD_PROJECT"] == ""
        assert env["IMAGE"].endswith(f"/{mirror_repository(spec.image or '')}:{mirror_tag(spec.image or '')}")
        assert env["FALLBACK_IMAGE"] == spec.image
        assert env["MIRROR_PROJECT"] == f"<{logical_id(server.store.mirrors[spec.image or ''])}>"
        assert env["MISSING_IMAGE_HINT"].endswith(f"-c {server.name}.image=URI")
    # The app's store in the region, the copy that fills it, the engine's compile cache, the weights' way.
    if server.store:
        assert env["STORE_BUCKET"] == f"inference-survey-<AWS::AccountId>-{REGION}"
        assert env["ACCOUNT_ID"] == "<AWS::AccountId>"
        assert env["COPY_PROJECT"] == f"<{logical_id(server.store.copy)}>"
        assert env["STORE_REGIONS"] == " ".join(spec.regions)
    assert env["COMPILE_CACHE"] == (spec.compile_cache or "")
    assert env["WEIGHTS_MODE"] == spec.weights_load.value
    assert int(env["NEEDS_DISK_GB"]) == disk_needed_gb(spec.image, spec.model_id)
    minimal = server_env(minimal_g6)
    assert minimal["IMAGE_BUILD_PROJECT"] == minimal["STORE_BUCKET"] == minimal["COPY_PROJECT"] == ""
    assert (
        minimal["FALLBACK_IMAGE"] == minimal["MIRROR_PROJECT"] == "" and minimal["IMAGE"] == "vllm/vllm-openai:v0.30.0"
    )


def test_the_user_data_fits_ec2s_16_kb_with_room(server):
    """EC2 refuses a launch over 16 KB of user data (counted before base64), which the runner would
    read as a capacity refusal; every token is counted at 128 characters."""
    script = render_join(launch_data(server)["UserData"])
    worst = len(re.sub(r"<[^<>]*(<[^<>]*>[^<>]*)*>", "x" * 128, script).encode())
    assert worst <= USER_DATA_LIMIT * 3 // 4, f"{server.name}: {worst} bytes of user data at worst"


def test_the_output_is_the_contract_the_runner_reads(server):
    spec = server.backend.spec
    template = server.template.to_json()
    refs = {
        logical_id(server.server.group): "the-group",
        logical_id(server.server.readiness): f"/inference/{server.name}/ready",
        logical_id(server.server.log_group): f"/inference/{server.name}",
    }
    output = template["Outputs"][output_key(server.name)]
    assert output["Description"] == f"{spec.title}: backend contract v2 (JSON)"
    parsed = BackendOutput.parse(output_key(server.name), json.loads(render_join(output["Value"], refs)))
    assert (parsed.name, parsed.kind, parsed.region, parsed.model_id) == (server.name, spec.kind, REGION, spec.model_id)
    assert (parsed.auto_scaling_group, parsed.readiness_parameter, parsed.log_group) == (
        "the-group",
        f"/inference/{server.name}/ready",
        f"/inference/{server.name}",
    )
    # No zones of its own: every zone of the network.
    assert parsed.zones == list(ZONES)
    assert (parsed.instance_type, parsed.ready_minutes, parsed.expires_at) == (
        spec.instance_type,
        spec.ready_minutes,
        EXPIRY,
    )
    assert (parsed.supports_tools, parsed.max_total_tokens) == (spec.supports_tools, spec.max_total_tokens)
    assert parsed.evidence_prefix == f"in-region/{server.name}/"
    if server.build:
        assert parsed.image_build_project == f"<{logical_id(server.build.project)}>"
    else:
        # The image it serves, and where its mirror is.
        assert parsed.image == spec.image and parsed.image_build_project is None
        assert (parsed.image_mirror or "").endswith(f"/{mirror_repository(spec.image or '')}:v0.30.0")
    assert parsed.store_bucket == f"inference-survey-<AWS::AccountId>-{REGION}"
    assert parsed.weights_job == f"<{logical_id(server.store.copy)}>"


def test_a_servers_own_zones_narrow_its_group_to_their_subnets(tmp_path):
    narrowed = build_server(tmp_path, "g6", full=False, zones=("us-east-1b", "us-east-1c"))
    subnets = narrowed.template.find_resources("AWS::EC2::Subnet")
    group = narrowed.resource(narrowed.server.group)["Properties"]
    zones = [subnets[ref["Ref"]]["Properties"]["AvailabilityZone"] for ref in group["VPCZoneIdentifier"]]
    assert zones == ["us-east-1b", "us-east-1c"]
    output = narrowed.template.to_json()["Outputs"][output_key("g6")]
    assert '\\"zones\\":[\\"us-east-1b\\",\\"us-east-1c\\"]' in json.dumps(output["Value"])


def test_without_zones_of_its_own_a_server_may_launch_in_every_zone_of_the_network(minimal_g6):
    subnets = minimal_g6.template.find_resources("AWS::EC2::Subnet")
    group = minimal_g6.resource(minimal_g6.server.group)["Properties"]
    assert sorted(subnets[r["Ref"]]["Properties"]["AvailabilityZone"] for r in group["VPCZoneIdentifier"]) == list(
        ZONES
    )


def test_a_pinned_ami_never_changes_under_the_server(tmp_path):
    """An AMI id from context or placement.json is the image, whatever the parameter says later."""
    pinned = build_server(tmp_path, "g6", full=False, ami_id="ami-0123456789abcdef0")
    assert launch_data(pinned)["ImageId"] == "ami-0123456789abcdef0"
    assert not [p for p in pinned.template.to_json().get("Parameters", {}) if p.startswith("SsmParameterValue")]


def test_with_the_account_known_the_ami_is_the_cached_lookup_not_a_deploy_time_parameter(tmp_path):
    spec = get_backend("g5g")
    account = "123456789012"
    key = f"ssm:account={account}:parameterName={spec.ami_parameter}:region={REGION}"
    looked_up = build_server(tmp_path, "g5g", full=False, account=account, **{key: "ami-0fedcba9876543210"})
    assert launch_data(looked_up)["ImageId"] == "ami-0fedcba9876543210"


def test_a_backend_that_is_not_ec2_is_refused(tmp_path):
    stack = bare_stack(tmp_path)
    network = SsmOnlyNetwork(stack, "Network", zones=["us-east-1a"])
    with pytest.raises(ValueError, match="backend sagemaker is not an EC2 backend"):
        ModelServer(
            stack,
            "Sagemaker",
            backend=BackendConfig(spec=get_backend("sagemaker"), region=REGION, zones=()),
            vpc=network.vpc,
            security_group=network.security_group,
            hf_token_secret_name=SECRET,
            image_uri="image",
        )


def test_a_server_without_a_bound_of_its_own_takes_the_default(tmp_path):
    unbound = build_server(tmp_path, "g6", full=False, expires_at=None, ready_minutes=None)
    assert server_env(unbound)["READY_MINUTES"] == str(DEFAULT_READY_MINUTES)
    assert '\\"ready_minutes\\":60' in json.dumps(unbound.template.to_json()["Outputs"][output_key("g6")]["Value"])


# --- StackMarker, the owned log group, the backend output ---------------------------------------


def test_the_marker_names_its_stack_region_and_backends_and_is_the_stacks_only_resource(tmp_path):
    stack = bare_stack(tmp_path, "us-east-2")
    config = StackConfig(
        name="InferenceNeuronStack",
        region="us-east-2",
        candidate_regions=("us-east-2", "us-west-2"),
        backends=tuple(BackendConfig(spec=get_backend(n), region="us-east-2", zones=()) for n in ("inf2", "trn1")),
    )
    StackMarker(stack, "Marker", config=config)
    template = Template.from_stack(stack)
    assert len(template.to_json()["Resources"]) == 1
    (_, parameter) = only(template, "AWS::SSM::Parameter")
    assert parameter["Properties"]["Name"] == "/inference/stacks/InferenceNeuronStack"
    assert json.loads(parameter["Properties"]["Value"]) == {
        "stack": "InferenceNeuronStack",
        "region": "us-east-2",
        "candidate_regions": ["us-east-2", "us-west-2"],
        "backends": ["inf2", "trn1"],
    }


def test_an_empty_stacks_marker_says_so(tmp_path):
    stack = bare_stack(tmp_path)
    StackMarker(
        stack, "Marker", config=StackConfig(name="Empty", region=REGION, candidate_regions=(REGION,), backends=())
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::SSM::Parameter",
        {"Name": "/inference/stacks/Empty", "Value": Match.serialized_json(Match.object_like({"backends": []}))},
    )


def test_an_owned_log_group_keeps_two_weeks_and_goes_with_the_stack(tmp_path):
    stack = bare_stack(tmp_path)
    owned_log_group(stack, "Logs", "/inference/anything")
    template = Template.from_stack(stack)
    template.has_resource(
        "AWS::Logs::LogGroup",
        {
            "Properties": {"LogGroupName": "/inference/anything", "RetentionInDays": 14},
            "DeletionPolicy": "Delete",
            "UpdateReplacePolicy": "Delete",
        },
    )


def test_publish_output_writes_the_common_fields_from_the_config_and_the_stacks_region(tmp_path):
    from inference_constructs.backend_output import backend_output, publish_output

    stack = bare_stack(tmp_path, "us-east-2")
    spec = get_backend("sagemaker")
    backend = BackendConfig(spec=spec, region="us-east-2", zones=(), lane="open")
    publish_output(stack, backend, backend_output(backend, stack, endpoint_name="inference-sagemaker"))
    outputs = Template.from_stack(stack).to_json()["Outputs"]
    assert list(outputs) == ["BackendSagemaker"]
    parsed = BackendOutput.parse("BackendSagemaker", outputs["BackendSagemaker"]["Value"])
    assert (parsed.name, parsed.kind, parsed.region, parsed.port, parsed.health_path) == (
        "sagemaker",
        "sagemaker",
        "us-east-2",
        spec.port,
        "/ping",
    )
    assert (parsed.lane, parsed.precision, parsed.endpoint_name) == ("open", spec.precision, "inference-sagemaker")
