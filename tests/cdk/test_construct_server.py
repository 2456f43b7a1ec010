"""The EC2 server's constructs, each alone in a bare Stack of a fresh App: SsmOnlyNetwork,
ServerInstanceRole, InRegionBench, ModelServer, StackMarker, the owned log group and the backend
output. A broken promise fails here, naming its construct, with nothing of the stacks around it;
the whole-app synthesis (test_stacks.py, test_in_region.py) keeps what only the app can show:
regions, no exports between stacks, every group of a stack under the time-to-live, cdk-nag, cfn-lint.
No cdk-nag here: the whole-app tests run it."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from catalog.backends import ModelArgument, WeightsLoad, get_backend
from catalog.boot import disk_needed_gb
from catalog.builds import built_image, dlc_public_copy, dlc_reference, repository_name
from catalog.config import BackendConfig, StackConfig
from catalog.contract import BACKEND_TAG_KEY, IMAGE_TAG_KEY, BackendOutput, output_key
from inference_constructs.image_build import ImageBuild, image_build_for
from inference_constructs.in_region import InRegionBench
from inference_constructs.instance_role import SSM_AGENT_ACTIONS, ServerInstanceRole
from inference_constructs.log_group import owned_log_group
from inference_constructs.model_server import ModelServer, ServerImage
from inference_constructs.ssm_only_network import SsmOnlyNetwork
from inference_constructs.stack_marker import StackMarker
from inference_constructs.template_limits import Resolver
from inference_constructs.user_data import (
    DEFAULT_READY_MINUTES,
    SETTINGS_FILE,
    USER_DATA_GOAL,
    boot_archive,
    sha256,
    unpack_archive,
)
from inference_constructs.weights_copy import COPY_PROJECT
from tests.cdk.conftest import render_join

REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
EXPIRY = "2026-12-01T21:01:00Z"
EXPIRY_DIGITS = "20261201210100"
SECRET = "inference/hf-token"
EC2_BACKENDS = ("g6", "g5g", "inf2", "trn1")
# The statements every server's role holds whatever it is given (ServerInstanceRole), and those of
# a server the stack builds: its boot scripts, its image's repository.
BASE_SIDS = {"SsmAgentChannels", "WriteOwnLogs", "ReportReadiness", "FindOwnGroup", "TakeOwnGroupToZero"}
SERVER_SIDS = BASE_SIDS | {"ReadItsBootScripts"}


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
    role = ServerInstanceRole(stack, "Role", backend="g6")
    role.allow_image("arn:aws:ecr:us-east-1:763104351884:repository/vllm")
    return role, Template.from_stack(stack)


def test_the_instance_role_is_for_ec2_with_inline_statements_only(instance_role):
    """No AWS managed policy: AmazonSSMManagedInstanceCore reads every parameter of the account,
    AmazonEC2ContainerRegistryReadOnly every repository."""
    role, template = instance_role
    role_id, props = only(template, "AWS::IAM::Role")
    assert role_id == logical_id(role.role)
    (trust,) = props["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "ec2.amazonaws.com"}
    assert "ManagedPolicyArns" not in props["Properties"]
    sids = by_sid(statements(template, role_id))
    # The SSM agent's channels (Session Manager's port forwarding, Run Command), and no parameter read.
    assert actions(sids["SsmAgentChannels"]) == list(SSM_AGENT_ACTIONS) and sids["SsmAgentChannels"]["Resource"] == "*"
    assert not [a for a in SSM_AGENT_ACTIONS if a.startswith("ssm:Get")]


def test_the_instance_role_pulls_its_one_image_and_reads_no_secret(instance_role):
    role, template = instance_role
    found = statements(template, logical_id(role.role))
    sids = by_sid(found)
    assert sids["PullItsImage"]["Resource"] == "arn:aws:ecr:us-east-1:763104351884:repository/vllm"
    assert sorted(actions(sids["PullItsImage"])) == [
        "ecr:BatchCheckLayerAvailability",
        "ecr:BatchGetImage",
        "ecr:GetDownloadUrlForLayer",
    ]
    assert actions(sids["EcrLogin"]) == ["ecr:GetAuthorizationToken"]
    assert "secretsmanager" not in json.dumps(found)
    assert render_join(sids["WriteOwnLogs"]["Resource"]).endswith(
        f":logs:{REGION}:<AWS::AccountId>:log-group:/inference/g6:*"
    )
    assert sorted(actions(sids["ReportReadiness"])) == ["ssm:GetParameter", "ssm:PutParameter"]
    assert render_join(sids["ReportReadiness"]["Resource"]).endswith(":parameter/inference/g6/ready")
    assert set(sids) == BASE_SIDS | {"EcrLogin", "PullItsImage"}


def test_the_hub_token_is_read_only_when_given(tmp_path):
    stack = bare_stack(tmp_path)
    role = ServerInstanceRole(stack, "Role", backend="g6")
    role.allow_hub_token(SECRET)
    template = Template.from_stack(stack)
    (secret,) = [
        s for s in statements(template, logical_id(role.role)) if "secretsmanager:GetSecretValue" in actions(s)
    ]
    assert (
        render_join(secret["Resource"])
        == f"arn:<AWS::Partition>:secretsmanager:{REGION}:<AWS::AccountId>:secret:{SECRET}-??????"
    )


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
    store: bool
    bench: InRegionBench | None
    template: Template
    image: ServerImage

    @property
    def name(self) -> str:
        return self.backend.name

    def resource(self, construct: Any) -> dict[str, Any]:
        return self.template.to_json()["Resources"][logical_id(construct)]

    @property
    def streams(self) -> bool:
        spec = self.backend.spec
        return (
            self.store and spec.weights_load is WeightsLoad.STREAM and spec.model_argument is ModelArgument.POSITIONAL
        )


def image_of(spec: Any, build: ImageBuild | None) -> ServerImage:
    """What the stack hands a server (stacks/server_stack.py): its build's image, or the DLC."""
    if build:
        return ServerImage(build.image_uri, build.repository.repository_arn)
    dlc = dlc_reference(spec.image) or ""
    return ServerImage(
        f"763104351884.dkr.ecr.{REGION}.amazonaws.com/{dlc}",
        f"arn:aws:ecr:{REGION}:763104351884:repository/vllm",
        dlc_public_copy(dlc),
    )


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
    model_id: str | None = None,
    **context: Any,
) -> Server:
    """One server in a bare stack with the network it needs; `full` also hands it what the stack
    would (its image build, the app's store in the region, the in-region bench)."""
    from dataclasses import replace

    spec = get_backend(name)
    if model_id:
        spec = replace(spec, model_id=model_id)
    stack = bare_stack(outdir, account=account, **context)
    network = SsmOnlyNetwork(stack, "Network", zones=list(ZONES))
    build = image_build_for(stack, spec, {}, expires_at) if full else None
    bench = InRegionBench(stack, "InRegion") if full else None
    backend = BackendConfig(
        spec=spec,
        region=REGION,
        zones=zones,
        ready_minutes=spec.ready_minutes if ready_minutes == -1 else ready_minutes,
        ami_id=ami_id,
    )
    image = image_of(spec, build)
    server = ModelServer(
        stack,
        name.capitalize(),
        backend=backend,
        vpc=network.vpc,
        security_group=network.security_group,
        hf_token_secret_name=SECRET,
        image=image,
        image_build=build,
        store=full,
        expires_at=expires_at,
        in_region=bench,
    )
    return Server(backend, server, network, build, full, bench, Template.from_stack(stack), image)


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


def parse_env(lines: list[str]) -> dict[str, str]:
    return {key: (shlex.split(value) or [""])[0] for key, value in (line.split("=", 1) for line in lines if line)}


def deploy_env(server: Server) -> dict[str, str]:
    """The deploy-time values the user data writes to /etc/inference/deploy.env (tokens as <LogicalId>)."""
    script = render_join(launch_data(server)["UserData"])
    block = script.split("cat > \"$ROOT/etc/inference/deploy.env\" <<'INFERENCE_EOF'\n", 1)[1]
    return parse_env(block.split("\nINFERENCE_EOF", 1)[0].splitlines())


def server_env(server: Server) -> dict[str, str]:
    """The server's own settings, /etc/inference/server.env of its boot archive."""
    content, mode = unpack_archive(boot_archive(server.server.boot))[SETTINGS_FILE]
    assert mode == 0o600
    return parse_env(content.splitlines())


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


def test_the_launch_template_requires_imdsv2_one_hop_and_boots_the_catalogs_type_ami_and_volume(server):
    spec = server.backend.spec
    data = launch_data(server)
    # One hop: a container on the instance cannot reach the instance's credentials (an engine that
    # streams its weights is given the weights reader's instead).
    assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1}
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
    sids = by_sid(found)
    expected = SERVER_SIDS | {
        "EcrLogin",
        "PullItsImage",
        "ReadTheBenchKit",
        "WriteInRegionEvidence",
        "ReadInRegionRequests",
    }
    if server.build:
        assert render_join(sids["PullItsImage"]["Resource"]).endswith(
            f":repository/{repository_name(server.build.folder)}"
        )
    else:
        assert sids["PullItsImage"]["Resource"] == server.image.repository_arn
    # The boot scripts: that one object of the asset bucket.
    assert actions(sids["ReadItsBootScripts"]) == ["s3:GetObject"]
    assert render_join(sids["ReadItsBootScripts"]["Resource"]).endswith(f"/{server.server.boot_asset.s3_object_key}")
    # The app's store: its own model's weights, its own backend's graphs, in this account only.
    bucket = f"arn:<AWS::Partition>:s3:::inference-survey-<AWS::AccountId>-{REGION}"
    model = server.backend.spec.model_id
    expected |= {"FindTheStore", "ListItsModelsWeights", "ReadItsModelsWeights", "ReadItsGraphs", "KeepItsGraphs",
                 "ReadRecordedGraphs"}  # fmt: skip
    assert sorted(render_join(r) for r in resources_of(sids["ReadItsModelsWeights"])) == [
        f"{bucket}/weights/{model}.complete",
        f"{bucket}/weights/{model}/*",
    ]
    assert sids["ListItsModelsWeights"]["Condition"]["StringLike"] == {"s3:prefix": [f"weights/{model}/*"]}
    assert render_join(sids["KeepItsGraphs"]["Resource"]) == f"{bucket}/graphs/{server.name}/*"
    assert actions(sids["KeepItsGraphs"]) == ["s3:PutObject"]
    # Graphs compiled in the backend's other regions are read, never written; another backend's never.
    stores = [REGION, *(r for r in server.backend.spec.regions if r != REGION)]
    assert [render_join(r) for r in resources_of(sids["ReadItsGraphs"])] == [
        f"arn:<AWS::Partition>:s3:::inference-survey-<AWS::AccountId>-{r}/graphs/{server.name}/*" for r in stores
    ]
    for sid in ("FindTheStore", "ListItsModelsWeights", "ReadItsModelsWeights", "ReadItsGraphs", "KeepItsGraphs"):
        assert sids[sid]["Condition"]["StringEquals"] == {"s3:ResourceAccount": {"Ref": "AWS::AccountId"}}, sid
    assert render_join(sids["ReadRecordedGraphs"]["Resource"]).endswith(f":parameter/inference/{server.name}/graphs")
    assert actions(sids["ReadRecordedGraphs"]) == ["ssm:GetParameter"]
    if server.streams:
        expected.add("LendTheEngineItsWeights")
        assert sids["LendTheEngineItsWeights"]["Resource"] == {
            "Fn::GetAtt": [logical_id(server.server.weights_reader), "Arn"]
        }
    assert set(sids) == expected
    # No build, no secret: the catalog's models are open, and builds are started from outside.
    assert "codebuild:" not in json.dumps(found) and "secretsmanager:" not in json.dumps(found)
    assert not [s for s in found if "Sid" not in s]
    # Given nothing, a server's role holds the base statements, its image and its boot scripts only.
    minimal = statements(minimal_g6.template, logical_id(minimal_g6.server.instance_role.role))
    assert set(by_sid(minimal)) == SERVER_SIDS | {"EcrLogin", "PullItsImage"} and all("Sid" in s for s in minimal)


def test_the_weights_reader_may_read_one_models_weights_and_is_trusted_by_its_server_alone(tmp_path):
    g6 = build_server(tmp_path, "g6")
    assert g6.streams
    reader = g6.resource(g6.server.weights_reader)["Properties"]
    (trust,) = reader["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"AWS": {"Fn::GetAtt": [logical_id(g6.server.instance_role.role), "Arn"]}}
    sids = by_sid(statements(g6.template, logical_id(g6.server.weights_reader)))
    assert set(sids) == {"FindTheStore", "ListItsModelsWeights", "ReadItsModelsWeights"}
    # Its ARN reaches the boot as a deploy-time value; its credentials last an hour.
    assert deploy_env(g6)["WEIGHTS_READER_ROLE"] == f"<{logical_id(g6.server.weights_reader)}.Arn>"
    assert reader.get("MaxSessionDuration", 3600) == 3600


def test_a_gated_model_gives_its_server_the_token_and_an_open_one_does_not(tmp_path, minimal_g6):
    gated = build_server(tmp_path, "g6", full=False, expires_at=None, model_id="meta-llama/Llama-3.2-1B-Instruct")
    found = statements(gated.template, logical_id(gated.server.instance_role.role))
    (secret,) = [s for s in found if "secretsmanager:GetSecretValue" in actions(s)]
    assert render_join(secret["Resource"]).endswith(f":secret:{SECRET}-??????")
    assert server_env(gated)["HF_TOKEN_SECRET"] == SECRET
    assert server_env(minimal_g6)["HF_TOKEN_SECRET"] == ""


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


def test_the_time_to_live_is_one_schedule_at_the_expiry_that_takes_the_group_to_zero(server, minimal_g6):
    """A Scheduler schedule, which stays after it fires (CloudFormation has no ActionAfterCompletion
    for it), so `cdk destroy` deletes something that exists: not an Auto Scaling one-time action,
    which AWS deletes once it has run."""
    (schedule_id, schedule) = only(server.template, "AWS::Scheduler::Schedule")
    assert schedule_id == logical_id(server.server.time_to_live)
    props = schedule["Properties"]
    assert (props["ScheduleExpression"], props["ScheduleExpressionTimezone"]) == (
        f"at({EXPIRY.removesuffix('Z')})",
        "UTC",
    )
    assert props["FlexibleTimeWindow"] == {"Mode": "OFF"}
    target = props["Target"]
    assert render_join(target["Arn"]) == "arn:<AWS::Partition>:scheduler:::aws-sdk:autoscaling:updateAutoScalingGroup"
    group_ref = {logical_id(server.server.group): "the-group"}
    assert json.loads(render_join(target["Input"], group_ref)) == {
        "AutoScalingGroupName": "the-group",
        "MinSize": 0,
        "DesiredCapacity": 0,
    }
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    (call,) = statements(server.template, role_id)
    assert actions(call) == ["autoscaling:UpdateAutoScalingGroup"]
    assert render_join(call["Resource"], group_ref).endswith(":autoScalingGroup:*:autoScalingGroupName/the-group")
    (trust,) = server.template.to_json()["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    # Its id carries the expiry, so a later deploy makes a new schedule instead of moving the old one.
    assert schedule_id.startswith(f"{server.name.capitalize()}TimeToLive{EXPIRY_DIGITS}")
    server.template.resource_count_is("AWS::AutoScaling::ScheduledAction", 0)
    minimal_g6.template.resource_count_is("AWS::Scheduler::Schedule", 0)
    assert minimal_g6.server.time_to_live is None


def test_another_expiry_is_another_schedule(tmp_path):
    later = build_server(tmp_path, "g6", full=False, expires_at="2026-12-02T09:30:00Z")
    (schedule_id, schedule) = only(later.template, "AWS::Scheduler::Schedule")
    assert schedule_id.startswith("G6TimeToLive20261202093000")
    assert schedule["Properties"]["ScheduleExpression"] == "at(2026-12-02T09:30:00)"


def test_the_servers_log_group_and_readiness_are_its_own_and_go_with_the_stack_after_its_group(server):
    log_group = server.resource(server.server.log_group)
    assert log_group["Properties"] == {"LogGroupName": f"/inference/{server.name}", "RetentionInDays": 14}
    assert (log_group["DeletionPolicy"], log_group["UpdateReplacePolicy"]) == ("Delete", "Delete")
    assert server.resource(server.server.readiness).get("DeletionPolicy", "Delete") == "Delete"
    # The group goes first at a destroy (CloudFormation deletes in reverse order of DependsOn): a
    # server still running cannot write the parameters back after the stack deleted them.
    depends = server.resource(server.server.group)["DependsOn"]
    assert logical_id(server.server.readiness) in depends
    assert logical_id(server.server.graphs_record) in depends


def test_the_user_data_carries_the_deploys_values_and_the_archive_the_servers_settings(server, minimal_g6):
    spec = server.backend.spec
    deploy = deploy_env(server)
    # Only what CloudFormation fills in, and where the boot archive is with its sha256.
    assert set(deploy) == {"AWS_REGION", "ACCOUNT_ID", "IMAGE", "FALLBACK_IMAGE", "STORE_BUCKET",
                           "WEIGHTS_READER_ROLE", "BOOT_BUCKET", "BOOT_KEY", "BOOT_SHA256"}  # fmt: skip
    assert (deploy["AWS_REGION"], deploy["ACCOUNT_ID"]) == (REGION, "<AWS::AccountId>")
    assert deploy["STORE_BUCKET"] == f"inference-survey-<AWS::AccountId>-{REGION}"
    assert deploy["BOOT_KEY"] == server.server.boot_asset.s3_object_key
    assert deploy["BOOT_BUCKET"].startswith("cdk-hnb659fds-assets-")
    assert deploy["BOOT_SHA256"] == sha256(boot_archive(server.server.boot))
    env = server_env(server)
    assert env["BACKEND"] == server.name and env["MODEL_ID"] == spec.model_id
    assert env["READY_PARAMETER"] == f"/inference/{server.name}/ready"
    assert env["LOG_GROUP"] == f"/inference/{server.name}"
    assert env["READY_MINUTES"] == str(spec.ready_minutes)
    assert (env["HOST_PORT"], env["CONTAINER_PORT"]) == (str(spec.port), str(spec.container_port))
    if server.build:
        assert env["IMAGE_BUILT"] == "1"
        assert deploy["IMAGE"].endswith(f"/{repository_name(server.build.folder)}:{server.build.tag}")
        assert env["MISSING_IMAGE_HINT"] == "" and deploy["FALLBACK_IMAGE"] == ""
    else:
        # AWS's DLC from the region's ECR, its public copy when that fails.
        assert env["IMAGE_BUILT"] == ""
        assert deploy["IMAGE"] == server.image.uri and deploy["FALLBACK_IMAGE"] == server.image.fallback_uri
        assert deploy["FALLBACK_IMAGE"].startswith("public.ecr.aws/deep-learning-containers/vllm:")
        assert env["MISSING_IMAGE_HINT"].endswith(f"-c {server.name}.image=URI")
    assert env["STORE_REGIONS"] == " ".join(spec.regions)
    assert env["GRAPHS_PARAMETER"] == f"/inference/{server.name}/graphs"
    assert env["COMPILE_CACHE"] == (spec.compile_cache or "")
    assert env["WEIGHTS_MODE"] == spec.weights_load.value
    assert int(env["NEEDS_DISK_GB"]) == disk_needed_gb(spec.image, spec.model_id)
    assert env["SWAP_GIB"] == str(spec.swap_gib)
    minimal = deploy_env(minimal_g6)
    assert minimal["STORE_BUCKET"] == minimal["WEIGHTS_READER_ROLE"] == ""
    assert server_env(minimal_g6)["GRAPHS_PARAMETER"] == ""


def test_the_user_data_stays_small_with_every_token_at_its_longest(server):
    """EC2 refuses a launch over 16 KB of user data (counted before base64); this app keeps a
    quarter of that, however its scripts grow: they are in the archive."""
    worst = len(Resolver(server.template.to_json()).string(launch_data(server)["UserData"]).encode())
    assert worst <= USER_DATA_GOAL, f"{server.name}: {worst} bytes of user data at worst"


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
        assert parsed.image == server.image.uri and parsed.image_build_project is None
    assert parsed.store_bucket == f"inference-survey-<AWS::AccountId>-{REGION}"
    assert parsed.weights_job == COPY_PROJECT
    assert parsed.graphs_record == f"/inference/{server.name}/graphs"


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
            image=ServerImage("image"),
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
