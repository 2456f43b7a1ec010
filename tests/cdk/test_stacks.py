"""Fine-grained assertions on the synthesized templates: what a deploy would really create."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from catalog import get_backend
from catalog.contract import BackendOutput, output_key
from inference_constructs.user_data import unpack_archive
from tests.cdk.conftest import SYNTH_EXPIRY, render_join, resources

EC2_BACKENDS = {
    "g6": "InferenceGpuStack",
    "g5g": "InferenceGpuStack",
    "inf2": "InferenceNeuronStack",
    "trn1": "InferenceNeuronStack",
}


def test_every_stack_in_the_region_that_offers_its_types(assembly):
    regions = {stack.stack_name: stack.environment.region for stack in assembly.stacks}
    # g5g is not offered in us-east-2, trn1 not in us-east-1 (catalog/offerings.py).
    assert regions == {
        "InferenceGpuStack": "us-east-1",
        "InferenceNeuronStack": "us-east-2",
        "InferenceSageMakerStack": "us-east-2",
        "InferenceBedrockImportStack": "us-east-1",
        # The store of each region with a server or an endpoint, where they are.
        "InferenceStore-us-east-1": "us-east-1",
        "InferenceStore-us-east-2": "us-east-2",
    }


def test_no_stack_imports_another_stacks_exports(templates):
    for name, template in templates.items():
        text = json.dumps(template)
        assert "Fn::ImportValue" not in text, name
        assert not [k for k in template.get("Outputs", {}) if k.startswith("ExportsOutput")], name


def group_of(template, backend):
    (group,) = [
        r
        for k, r in resources(template, "AWS::AutoScaling::AutoScalingGroup").items()
        if k.startswith(backend.capitalize())
    ]
    return group


def launch_data(template, backend):
    group = group_of(template, backend)
    logical_id = group["Properties"]["LaunchTemplate"]["LaunchTemplateId"]["Ref"]
    return template["Resources"][logical_id]["Properties"]["LaunchTemplateData"]


@pytest.mark.parametrize("backend", EC2_BACKENDS)
def test_instance_type_and_ami_parameter(templates, backend):
    template = templates[EC2_BACKENDS[backend]]
    spec = get_backend(backend)
    data = launch_data(template, backend)
    assert data["InstanceType"] == spec.instance_type
    parameter = template["Parameters"][data["ImageId"]["Ref"]]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
    assert parameter["Default"] == spec.ami_parameter
    # The DLAMI whose NVIDIA driver (595.91.07) the CUDA 13 images need: 26.04 on x86_64 (the
    # survey's g6), 24.04 on arm64 (its release notes name G5g); the Neuron DLAMI for inf2 and trn1.
    expected = {
        "g6": "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-26.04/latest/ami-id",
        "g5g": "/aws/service/deeplearning/ami/arm64/base-oss-nvidia-driver-gpu-ubuntu-26.04/latest/ami-id",
        "inf2": "/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id",
        "trn1": "/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id",
    }
    assert parameter["Default"] == expected[backend]


def test_a_default_synth_names_no_fixed_zone_letter(templates):
    for name, template in templates.items():
        assert not re.search(r"(us|eu|ap|sa|ca|me|af|il|mx)-[a-z]+-\d[a-z]\b", json.dumps(template)), name


@pytest.mark.parametrize(("backend", "size"), [("g6", 100), ("g5g", 80), ("inf2", 100), ("trn1", 200)])
def test_one_server_group_across_every_zone_with_the_surveys_root_volume(templates, backend, size):
    template = templates[EC2_BACKENDS[backend]]
    group = group_of(template, backend)["Properties"]
    # At most one instance, and none while the image the app builds for it does not exist yet.
    assert (group["MinSize"], group["MaxSize"]) == ("0", "1")
    assert group.get("DesiredCapacity") == ("1" if backend == "g6" else None)
    subnets = resources(template, "AWS::EC2::Subnet")
    zones = [subnets[ref["Ref"]]["Properties"]["AvailabilityZone"] for ref in group["VPCZoneIdentifier"]]
    # With no account known the zones are the region's own, found at deploy (Fn::GetAZs).
    assert zones == [{"Fn::Select": [i, {"Fn::GetAZs": ""}]} for i in range(len(zones))]
    (device,) = launch_data(template, backend)["BlockDeviceMappings"]
    ebs = device["Ebs"]
    assert (ebs["Encrypted"], ebs["VolumeType"], ebs["DeleteOnTermination"], ebs["VolumeSize"]) == (
        True,
        "gp3",
        True,
        size,
    )


def test_a_new_launch_template_version_replaces_the_server_and_a_deploy_leaves_its_size_alone(templates):
    group = group_of(templates["InferenceGpuStack"], "g6")
    rolling = group["UpdatePolicy"]["AutoScalingRollingUpdate"]
    assert (rolling["MaxBatchSize"], rolling["MinInstancesInService"]) == (1, 0)
    # A later deploy neither starts a server the time-to-live stopped nor stops a running one.
    assert group["UpdatePolicy"]["AutoScalingScheduledAction"] == {"IgnoreUnmodifiedGroupSizeProperties": True}


def zones_synth(tmp_path, context, account=None):
    import aws_cdk as cdk

    from catalog.config import load_config
    from stacks import build_app
    from tests.cdk.conftest import SYNTH_NOW, cdk_json_context

    app = cdk.App(context=cdk_json_context() | context, outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    config = load_config(app.node.get_all_context(), placements={}, now=SYNTH_NOW)
    # cdk-nag on: its findings name the account once it is known, and every one stays acknowledged.
    build_app(app, config, nag=True, account=account)
    template = app.synth().get_stack_by_name("InferenceGpuStack").template
    return sorted(s["Properties"]["AvailabilityZone"] for s in resources(template, "AWS::EC2::Subnet").values())


def test_zones_come_from_the_account(tmp_path):
    six = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"]
    # runner.up passes what DescribeAvailabilityZones said: every one of them, not CDK's default two.
    assert zones_synth(tmp_path / "a", {"us-east-1.zones": ",".join(six)}) == six
    # A plain `cdk deploy` knows the account: the CDK's own lookup answers (cdk.context.json holds it).
    lookup = {"availability-zones:account=123456789012:region=us-east-1": six[:5]}
    assert zones_synth(tmp_path / "b", lookup, account="123456789012") == six[:5]


def test_the_time_to_live_takes_every_server_and_the_endpoint_to_zero(templates, tmp_path):
    for stack in ("InferenceGpuStack", "InferenceNeuronStack"):
        template = templates[stack]
        assert not resources(template, "AWS::AutoScaling::ScheduledAction")
        schedules = resources(template, "AWS::Scheduler::Schedule").values()
        groups = resources(template, "AWS::AutoScaling::AutoScalingGroup")
        named = []
        for schedule in schedules:
            # One time, at the deploy's expiry: no instance, and no minimum to restore one.
            properties = schedule["Properties"]
            assert properties["ScheduleExpression"] == f"at({SYNTH_EXPIRY.removesuffix('Z')})"
            assert (
                render_join(properties["Target"]["Arn"])
                == "arn:<AWS::Partition>:scheduler:::aws-sdk:autoscaling:updateAutoScalingGroup"
            )
            request = json.loads(render_join(properties["Target"]["Input"]))
            assert (request["MinSize"], request["DesiredCapacity"]) == (0, 0)
            named.append(request["AutoScalingGroupName"].strip("<>"))
        assert sorted(named) == sorted(groups)
    template = templates["InferenceSageMakerStack"]
    (schedule,) = resources(template, "AWS::Scheduler::Schedule").values()
    properties = schedule["Properties"]
    assert properties["ScheduleExpression"] == f"at({SYNTH_EXPIRY.removesuffix('Z')})"
    assert properties["ScheduleExpressionTimezone"] == "UTC"
    assert (
        render_join(properties["Target"]["Arn"]) == "arn:<AWS::Partition>:scheduler:::aws-sdk:sagemaker:deleteEndpoint"
    )
    assert json.loads(properties["Target"]["Input"]) == {"EndpointName": "inference-sagemaker"}
    role_id = properties["Target"]["RoleArn"]["Fn::GetAtt"][0]
    role = template["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
    (policy,) = [
        p for p in resources(template, "AWS::IAM::Policy").values() if p["Properties"]["Roles"] == [{"Ref": role_id}]
    ]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "sagemaker:DeleteEndpoint"
    assert render_join(statement["Resource"]).endswith(":endpoint/inference-sagemaker")
    # Every output says when.
    for stack_template in templates.values():
        for key, output in stack_template.get("Outputs", {}).items():
            if key.startswith("Backend"):
                assert f'\\"expires_at\\":\\"{SYNTH_EXPIRY}\\"' in json.dumps(output["Value"]), key

    from tests.cdk.conftest import cdk_json_context, synth

    assembly, _ = synth(cdk_json_context() | {"ttlHours": "0"}, tmp_path, nag=False)
    for stack in assembly.stacks:
        assert not resources(stack.template, "AWS::Scheduler::Schedule")


@pytest.mark.parametrize("backend", EC2_BACKENDS)
def test_each_server_may_take_only_its_own_group_to_zero(templates, backend):
    template = templates[EC2_BACKENDS[backend]]
    data = launch_data(template, backend)
    profile = template["Resources"][data["IamInstanceProfile"]["Arn"]["Fn::GetAtt"][0]]["Properties"]
    (role_ref,) = profile["Roles"]
    (policy,) = [p for p in resources(template, "AWS::IAM::Policy").values() if p["Properties"]["Roles"] == [role_ref]]
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"] if "Sid" in s}
    scale = statements["TakeOwnGroupToZero"]
    assert scale["Action"] == "autoscaling:SetDesiredCapacity"
    assert scale["Condition"] == {"StringEquals": {"aws:ResourceTag/inference:backend": backend}}
    assert render_join(statements["ReportReadiness"]["Resource"]).endswith(f":parameter/inference/{backend}/ready")
    group = group_of(template, backend)
    assert {"Key": "inference:backend", "PropagateAtLaunch": True, "Value": backend} in group["Properties"]["Tags"]
    # No server starts a build (tests/cdk/test_policies.py holds every role of the app to it).
    assert "codebuild:" not in json.dumps(policy)


def test_no_ingress_anywhere(templates):
    for name, template in templates.items():
        assert resources(template, "AWS::EC2::SecurityGroupIngress") == {}, name
        for group in resources(template, "AWS::EC2::SecurityGroup").values():
            assert "SecurityGroupIngress" not in group["Properties"], name
    for stack in ("InferenceGpuStack", "InferenceNeuronStack"):
        (group,) = resources(templates[stack], "AWS::EC2::SecurityGroup").values()
        ports = sorted(rule["FromPort"] for rule in group["Properties"]["SecurityGroupEgress"])
        assert ports == [80, 443]


def test_public_subnets_only_no_nat(templates):
    for stack in ("InferenceGpuStack", "InferenceNeuronStack"):
        template = templates[stack]
        assert resources(template, "AWS::EC2::NatGateway") == {}
        assert all(s["Properties"]["MapPublicIpOnLaunch"] for s in resources(template, "AWS::EC2::Subnet").values())


def test_imdsv2_required(templates):
    for stack in ("InferenceGpuStack", "InferenceNeuronStack"):
        for template in resources(templates[stack], "AWS::EC2::LaunchTemplate").values():
            assert template["Properties"]["LaunchTemplateData"]["MetadataOptions"]["HttpTokens"] == "required"


def test_every_stack_has_its_marker_and_an_empty_stack_still_exists(tmp_path):
    from tests.cdk.conftest import cdk_json_context, synth

    assembly, _ = synth(cdk_json_context() | {"backends": "g6"}, tmp_path, nag=False)
    names = sorted(s.stack_name for s in assembly.stacks)
    # The store stack of g6's region only (g6 alone takes the GPU stack to its first region,
    # us-east-2): no other region has a server or an endpoint.
    assert names == [
        "InferenceBedrockImportStack",
        "InferenceGpuStack",
        "InferenceNeuronStack",
        "InferenceSageMakerStack",
        "InferenceStore-us-east-2",
    ]
    neuron = assembly.get_stack_by_name("InferenceNeuronStack").template
    (marker,) = resources(neuron, "AWS::SSM::Parameter").values()
    assert marker["Properties"]["Name"] == "/inference/stacks/InferenceNeuronStack"
    assert json.loads(marker["Properties"]["Value"])["backends"] == []
    assert len(neuron["Resources"]) == 1


def test_placement_record_moves_a_stack_to_its_failover_region(tmp_path):
    import aws_cdk as cdk

    from catalog.config import load_config
    from stacks import build_app
    from tests.cdk.conftest import SYNTH_NOW

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    config = load_config({}, placements={"InferenceNeuronStack": "us-west-2"}, now=SYNTH_NOW)
    stacks = build_app(app, config, nag=False)
    assert stacks["InferenceNeuronStack"].region == "us-west-2"
    assert stacks["InferenceGpuStack"].region == "us-east-1"


def test_a_satellite_is_synthesized_as_its_family_in_its_own_region_with_only_its_backend(tmp_path):
    import aws_cdk as cdk

    from catalog.config import load_config
    from stacks import build_app
    from tests.cdk.conftest import SYNTH_NOW
    from tests.cdk.test_config import SATELLITE_RECORDS

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    stacks = build_app(app, load_config({}, records=SATELLITE_RECORDS, now=SYNTH_NOW), nag=False)
    satellite, parent = stacks["InferenceNeuronStack-inf2"], stacks["InferenceNeuronStack"]
    assert (satellite.region, parent.region) == ("us-east-1", "us-east-2")
    assert type(satellite) is type(parent) and list(satellite.servers) == ["inf2"] and list(parent.servers) == ["trn1"]
    assert satellite.stack_name == "InferenceNeuronStack-inf2"
    assert "(inf2)" in satellite.template_options.description


def raw_user_data(templates, backend) -> str:
    """The launch template's user data as the instance receives it (tokens shown as <...>)."""
    return render_join(launch_data(templates[EC2_BACKENDS[backend]], backend)["UserData"])


def deployed_archive(assembly, backend) -> bytes:
    """The boot archive the deploy uploads for `backend`: the file asset the user data names, read
    from the cloud assembly and checked against the sha256 the user data carries."""
    script = raw_user_data({s.stack_name: s.template for s in assembly.stacks}, backend)
    key = re.search(r"^BOOT_KEY=(\S+)$", script, re.MULTILINE).group(1)
    digest = re.search(r"^BOOT_SHA256=([0-9a-f]{64})$", script, re.MULTILINE).group(1)
    manifest = json.loads((Path(assembly.directory) / f"{EC2_BACKENDS[backend]}.assets.json").read_text())
    (path,) = [
        entry["source"]["path"]
        for entry in manifest["files"].values()
        if any(d["objectKey"] == key for d in entry["destinations"].values())
    ]
    data = (Path(assembly.directory) / path).read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest
    return data


def user_data(assembly, backend):
    """The user data with its boot archive's files after it, to read as text."""
    script = raw_user_data({s.stack_name: s.template for s in assembly.stacks}, backend)
    files = unpack_archive(deployed_archive(assembly, backend))
    return script + "".join(f"\n# {path} ({mode:o})\n{content}" for path, (content, mode) in sorted(files.items()))


def archive_file(assembly, backend, path: str) -> list[str]:
    """The lines of one file of the boot archive (none for an empty file)."""
    content, _ = unpack_archive(deployed_archive(assembly, backend))[path]
    return content.splitlines()


def container_env(assembly, backend) -> list[str]:
    return archive_file(assembly, backend, "/etc/inference/container.env")


def serve_args(assembly, backend) -> list[str]:
    return archive_file(assembly, backend, "/etc/inference/serve-args")


@pytest.mark.parametrize("backend", ["g6", "g5g"])
def test_vllm_flags_reach_the_server(assembly, backend):
    script = user_data(assembly, backend)
    spec = get_backend(backend)
    # The vLLM images' entrypoint is `vllm serve`: the model is its positional argument.
    assert serve_args(assembly, backend) == [spec.model_id, *spec.serve_flags]
    for flag in ("--enable-auto-tool-choice", "--tool-call-parser", "gemma4", "--max-model-len", "8192"):
        assert flag in serve_args(assembly, backend)
    assert "ACCELERATOR_ARGS='--gpus all'" in script
    assert "systemctl enable --now inference-server.service" in script
    assert "Restart=on-failure" in script
    assert "--log-driver awslogs" in script


def test_g6_serves_the_seed_repack_on_awss_vllm_dlc_from_the_regions_ecr(assembly):
    script = user_data(assembly, "g6")
    # AWS's EC2 DLC of vLLM 0.30.0 (built FROM vllm/vllm-openai:v0.30.0), from the region's own ECR;
    # its public copy when that fails.
    assert "IMAGE=763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-ec2" in script
    assert (
        "FALLBACK_IMAGE=public.ecr.aws/deep-learning-containers/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-ec2" in script
    )
    assert serve_args(assembly, "g6")[3:5] == ["--gpu-memory-utilization", "0.90"]
    # The DLC's entrypoint would report the container's start to AWS: told not to.
    assert container_env(assembly, "g6") == ["OPT_OUT_TRACKING=true"]


def image_line(script: str) -> str:
    return next(line for line in script.splitlines() if line.startswith("IMAGE="))


def test_g5g_pulls_the_image_its_stack_builds(assembly):
    script = user_data(assembly, "g5g")
    # The store stack's repository, tagged with the content hash of images/vllm-sm75.
    assert re.fullmatch(
        r"IMAGE='<AWS::AccountId>\.dkr\.ecr\.us-east-1\.<AWS::URLSuffix>/inference-survey/vllm-sm75:[0-9a-f]{16}'",
        image_line(script),
    )
    args = serve_args(assembly, "g5g")
    assert args[args.index("--dtype") + 1] == "float16"
    assert "docker login --username AWS" in script
    # A missing image waits at zero for the build (started by the deploy or runner.up), never by the instance.
    assert "IMAGE_BUILT=1" in script and "codebuild" not in script


@pytest.mark.parametrize(("backend", "swap"), [("inf2", True), ("trn1", False)])
def test_neuron_rows_run_the_vendor_engine_from_the_environment(assembly, backend, swap):
    script = user_data(assembly, backend)
    assert "ACCELERATOR_ARGS=--device=/dev/neuron0" in script
    assert '-p "127.0.0.1:${HOST_PORT}:${CONTAINER_PORT}"' in script
    assert "HOST_PORT=8080" in script and "CONTAINER_PORT=8080" in script
    # No arguments: the entrypoint reads the model and the engine's settings from its environment.
    assert serve_args(assembly, backend) == []
    assert container_env(assembly, backend) == [
        "MODEL=Qwen/Qwen2.5-1.5B-Instruct",
        "TENSOR_PARALLEL_SIZE=2",
        "MAX_MODEL_LEN=4096",
        "MAX_NUM_SEQS=4",
        "TOOL_CALL_PARSER=hermes",
    ]
    assert '--env-file "$ROOT/etc/inference/container.env"' in script
    # Compiled graphs are kept in the app's store in the region and restored before the engine starts.
    assert "COMPILE_CACHE=/var/cache/neuron" in script and "DATA_VOLUME=''" in script
    assert "STORE_BUCKET='inference-survey-<AWS::AccountId>-us-east-2'" in script
    assert re.search(r"/inference-survey/neuron:[0-9a-f]{16}'$", image_line(script))
    assert ("SWAP_GIB=16" in script) is swap and ("SWAP_GIB=0" in script) is not swap


def root_volume(templates, backend):
    (device,) = launch_data(templates[EC2_BACKENDS[backend]], backend)["BlockDeviceMappings"]
    return device["Ebs"]


def test_g5g_root_volume_reads_and_writes_its_weights_faster(templates):
    assert root_volume(templates, "g5g")["Throughput"] == 500
    assert root_volume(templates, "g6")["Throughput"] == 125  # gp3's included baseline


def image_builds(template: dict) -> dict[str, dict]:
    """The stack's image build projects (a source folder to build; the copy and the mirrors have none)."""
    return {
        k: v
        for k, v in resources(template, "AWS::CodeBuild::Project").items()
        if v["Properties"]["Source"]["Type"] == "S3"
    }


def test_inf2_and_trn1_share_one_build(templates, assembly):
    assert image_line(user_data(assembly, "inf2")) == image_line(user_data(assembly, "trn1"))
    assert len(image_builds(templates["InferenceNeuronStack"])) == 1


@pytest.mark.parametrize(
    ("stack", "folder", "environment", "compute", "hours"),
    [
        ("InferenceGpuStack", "vllm-sm75", "ARM_CONTAINER", "BUILD_GENERAL1_XLARGE", 8),
        ("InferenceNeuronStack", "neuron", "LINUX_CONTAINER", "BUILD_GENERAL1_LARGE", 1),
    ],
)
def test_images_are_built_by_the_apps_own_codebuild_into_its_own_repository(
    templates, stack, folder, environment, compute, hours
):
    template = templates[stack]
    region = {"InferenceGpuStack": "us-east-1", "InferenceNeuronStack": "us-east-2"}[stack]
    # The image's repository is the region's store stack's (retained), so the next deploy finds the
    # image built; the server stack owns no repository.
    assert resources(template, "AWS::ECR::Repository") == {}
    (project,) = image_builds(template).values()
    env = project["Properties"]["Environment"]
    # arm64 compute for the g5g image: built natively, never under emulation; ARM XLarge for vLLM's kernels.
    assert env["Type"] == environment and env["PrivilegedMode"] is True
    assert env["ComputeType"] == compute
    assert project["Properties"]["TimeoutInMinutes"] == hours * 60
    assert project["Properties"]["Source"]["Type"] == "S3"
    variables = {v["Name"]: v["Value"] for v in env["EnvironmentVariables"]}
    assert re.fullmatch(
        rf"<AWS::AccountId>\.dkr\.ecr\.{region}\.<AWS::URLSuffix>/inference-survey/{folder}:[0-9a-f]{{16}}",
        render_join(variables["IMAGE_URI"]),
    )
    repository_arn = f"arn:<AWS::Partition>:ecr:{region}:<AWS::AccountId>:repository/inference-survey/{folder}"
    # The build role pushes to this one repository and nowhere else.
    role_id = project["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    policies = [
        p for p in resources(template, "AWS::IAM::Policy").values() if p["Properties"]["Roles"] == [{"Ref": role_id}]
    ]
    statements = {s.get("Sid"): s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]}
    assert render_join(statements["PushToItsRepository"]["Resource"]) == repository_arn
    assert "ecr:PutImage" in statements["PushToItsRepository"]["Action"]
    # ... and makes, changes and deletes no repository.
    assert "ecr:CreateRepository" not in json.dumps(statements)
    assert statements["EcrLogin"]["Action"] == "ecr:GetAuthorizationToken"
    # It brings back only the servers tagged with its image, and runs nothing on them.
    condition = {"StringEquals": {"aws:ResourceTag/inference:image": folder}}
    assert statements["BringBackTheServersOfThisImage"]["Condition"] == condition
    assert "ssm:SendCommand" not in json.dumps(statements)
    # No project limit (a new account's own may be 0), and the buildspec runs exactly the build
    # script of the repository.
    assert "ConcurrentBuildLimit" not in project["Properties"]
    from inference_constructs.image_build import BUILD_SCRIPT

    spec = json.loads(project["Properties"]["Source"]["BuildSpec"])
    (command,) = spec["phases"]["build"]["commands"]
    encoded = re.search(r"echo (\S+) \| base64 -d", command).group(1)
    assert base64.b64decode(encoded).decode() == BUILD_SCRIPT.read_text()
    assert command.endswith('&& bash "$script"')


@pytest.mark.parametrize("stack", ["InferenceGpuStack", "InferenceNeuronStack"])
def test_every_deploy_of_the_stack_starts_its_image_build(templates, stack):
    """Images before servers: CloudFormation's own stack events start the build, no Lambda needed."""
    template = templates[stack]
    (rule,) = resources(template, "AWS::Events::Rule").values()
    pattern = rule["Properties"]["EventPattern"]
    assert pattern == {
        "source": ["aws.cloudformation"],
        "detail-type": ["CloudFormation Stack Status Change"],
        "detail": {
            "stack-id": [{"Ref": "AWS::StackId"}],
            "status-details": {"status": ["CREATE_COMPLETE", "UPDATE_COMPLETE"]},
        },
    }
    ((project_id, _),) = image_builds(template).items()
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [project_id, "Arn"]}
    assert not resources(template, "AWS::Lambda::Function")


def test_outputs_name_the_build_project_and_what_the_server_takes(templates):
    outputs = templates["InferenceNeuronStack"]["Outputs"]
    text = json.dumps(outputs["BackendInf2"]["Value"])
    assert "image_build_project" in text and "BuildNeuronProject" in text
    assert '\\"supports_tools\\":true' in text and '\\"max_total_tokens\\":4096' in text


def test_a_server_of_an_open_model_reads_no_token(assembly):
    script = user_data(assembly, "g6")
    assert "HF_TOKEN_SECRET=''" in script
    # The token is asked for only when the archive names a secret (a gated model).
    assert 'if [[ -n "$HF_TOKEN_SECRET" ]]; then' in script
    assert "READY_PARAMETER=/inference/g6/ready" in script


def test_sagemaker_environment_and_health_timeout(templates):
    template = templates["InferenceSageMakerStack"]
    (model,) = resources(template, "AWS::SageMaker::Model").values()
    container = model["Properties"]["PrimaryContainer"]
    assert container["Environment"] == {
        "SM_VLLM_MODEL": "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4",
        "SM_VLLM_MAX_MODEL_LEN": "8192",
        "SM_VLLM_ENABLE_AUTO_TOOL_CHOICE": "true",
        "SM_VLLM_TOOL_CALL_PARSER": "gemma4",
    }
    # The image the survey's endpoint ran, by digest (its ResolvedImage), not a tag that can move.
    assert container["Image"] == (
        "763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm@sha256:"
        "f50ad6bf72933a1d30526e9f4c5793273d7799e9835840f7bacbb0da74dfc835"
    )
    (config,) = resources(template, "AWS::SageMaker::EndpointConfig").values()
    (variant,) = config["Properties"]["ProductionVariants"]
    assert variant["InstanceType"] == "ml.g6.xlarge"
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 1800
    (endpoint,) = resources(template, "AWS::SageMaker::Endpoint").values()
    assert endpoint["Properties"]["EndpointName"] == "inference-sagemaker"


def test_sagemaker_role_is_scoped(templates):
    template = templates["InferenceSageMakerStack"]
    roles = resources(template, "AWS::IAM::Role")
    (role_id,) = [k for k, r in roles.items() if "sagemaker.amazonaws.com" in json.dumps(r)]
    assert "ManagedPolicyArns" not in roles[role_id]["Properties"]
    (policy,) = [
        p for p in resources(template, "AWS::IAM::Policy").values() if p["Properties"]["Roles"] == [{"Ref": role_id}]
    ]
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert render_join(statements["PullImage"]["Resource"]).endswith(":repository/vllm")
    assert "763104351884" in render_join(statements["PullImage"]["Resource"])
    assert render_join(statements["WriteLogs"]["Resource"]).endswith(
        ":log-group:/aws/sagemaker/Endpoints/inference-sagemaker:*"
    )


def test_no_role_reads_the_token_of_an_open_model(templates):
    """The catalog's models are open (catalog/backends.py OPEN_ACCESS_MODELS): no role of a default
    deploy may read the Hugging Face token."""
    for name, template in templates.items():
        assert "secretsmanager:GetSecretValue" not in json.dumps(resources(template, "AWS::IAM::Policy")), name


def test_no_role_holds_an_aws_managed_policy(templates):
    for name, template in templates.items():
        for logical_id, role in resources(template, "AWS::IAM::Role").items():
            assert "ManagedPolicyArns" not in role["Properties"], (name, logical_id)


def test_only_the_stores_bucket_and_repositories_are_retained_and_logs_expire(templates):
    for name, template in templates.items():
        for logical_id, resource in template["Resources"].items():
            retained = resource.get("DeletionPolicy", "Delete") == "Retain"
            # Named statically, so the next deploy's import adopts them (a bucket policy names its
            # bucket by Ref: retained, it would be refused as existing).
            assert retained is (name.startswith("InferenceStore-") and resource["Type"] in (
                "AWS::S3::Bucket", "AWS::ECR::Repository")), (name, logical_id)  # fmt: skip
        for group in resources(template, "AWS::Logs::LogGroup").values():
            assert group["Properties"]["RetentionInDays"] == 14


def fake_refs(template):
    refs = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::AutoScaling::AutoScalingGroup":
            refs[logical_id] = f"{logical_id}-ASG"
        elif resource["Type"] == "AWS::SSM::Parameter":
            refs[logical_id] = resource["Properties"]["Name"]
        elif resource["Type"] == "AWS::Logs::LogGroup":
            refs[logical_id] = resource["Properties"]["LogGroupName"]
    return refs


@pytest.mark.parametrize("backend", ["g6", "g5g", "inf2", "trn1", "sagemaker"])
def test_outputs_follow_the_contract_the_runner_reads(templates, backend):
    spec = get_backend(backend)
    template = templates[spec.stack]
    output = template["Outputs"][output_key(backend)]
    value = render_join(output["Value"], fake_refs(template))
    parsed = BackendOutput.parse(output_key(backend), json.loads(value), stack=spec.stack)
    region = "us-east-1" if spec.stack == "InferenceGpuStack" else "us-east-2"
    assert (parsed.name, parsed.kind, parsed.region, parsed.model_id) == (backend, spec.kind, region, spec.model_id)
    assert (parsed.port, parsed.health_path) == (spec.port, spec.health_path)
    assert parsed.expires_at == SYNTH_EXPIRY
    if spec.kind == "sagemaker":
        assert parsed.endpoint_name == "inference-sagemaker"
        assert parsed.log_group == "/aws/sagemaker/Endpoints/inference-sagemaker"
        assert parsed.endpoint_config_name.startswith("<")
    else:
        assert parsed.auto_scaling_group.endswith("-ASG")
        assert parsed.zones == ["<zone 0>", "<zone 1>"]
        assert parsed.ready_minutes == spec.ready_minutes
        assert parsed.readiness_parameter == f"/inference/{backend}/ready"
        assert parsed.log_group == f"/inference/{backend}"


def test_every_server_is_tagged_for_cleanup(templates):
    group = group_of(templates["InferenceGpuStack"], "g6")
    # The group passes the app's tag to the instance (and its volume) it launches.
    assert {"Key": "app", "PropagateAtLaunch": True, "Value": "inference-survey"} in group["Properties"]["Tags"]


def test_neuron_image_can_be_built_from_the_images_folder(tmp_path):
    """`asset:neuron` becomes a DockerImageAsset (synth copies the folder; no Docker engine needed)."""
    from tests.cdk.conftest import cdk_json_context, synth

    context = cdk_json_context() | {"backends": "inf2", "inf2.image": "asset:neuron"}
    assembly, _ = synth(context, tmp_path, nag=False)
    stack = assembly.get_stack_by_name("InferenceNeuronStack")
    script = render_join(launch_data(stack.template, "inf2")["UserData"])
    assert ".dkr.ecr.us-east-2." in script and "cdk-hnb659fds-container-assets" in script
    manifest = json.loads(next(tmp_path.glob("InferenceNeuronStack.assets.json")).read_text())
    (image,) = manifest["dockerImages"].values()
    assert image["source"]["platform"] == "linux/amd64"
    copied = tmp_path / image["source"]["directory"]
    assert (copied / "Dockerfile").is_file() and (copied / "serve.sh").is_file()


def with_bytecode(source, target):
    """A copy of an images folder with what importing its Python files writes beside them."""
    from inference_constructs.image_build import SOURCE_EXCLUDE

    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*SOURCE_EXCLUDE))
    (target / "__pycache__").mkdir(exist_ok=True)
    (target / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"\x00bytecode")
    (target / "stray.pyc").write_bytes(b"\x00bytecode")
    return target


def test_bytecode_caches_change_no_image_tag_and_are_not_uploaded(tmp_path, monkeypatch):
    """An image's tag is its source's hash: a folder a test or a user imported from (and so holds
    `__pycache__`) must give the same tag, or two checkouts of one source build two images."""
    import aws_cdk as cdk

    from catalog import Architecture
    from inference_constructs.image_build import IMAGES_DIR, SOURCE_EXCLUDE, ImageBuild
    from tests.cdk.conftest import cdk_json_context, synth

    def tag(folder):
        stack = cdk.Stack(cdk.App(outdir=str(tmp_path / f"out-{folder.name}")), "Probe")
        return ImageBuild(stack, "Build", folder=folder, architecture=Architecture.ARM64).tag

    clean = tmp_path / "clean" / "vllm-sm75"
    shutil.copytree(IMAGES_DIR / "vllm-sm75", clean, ignore=shutil.ignore_patterns(*SOURCE_EXCLUDE))
    imported = with_bytecode(clean, tmp_path / "imported" / "vllm-sm75")
    assert tag(imported) == tag(clean)

    # An `asset:` image (a Docker image asset of the CDK's own): the same rule.
    images = tmp_path / "images"
    with_bytecode(IMAGES_DIR / "neuron", images / "neuron")
    monkeypatch.setattr("stacks.server_stack.IMAGES_DIR", images)
    context = cdk_json_context() | {"backends": "inf2", "inf2.image": "asset:neuron"}
    synth(context, tmp_path / "out", nag=False)
    manifest = json.loads(next((tmp_path / "out").glob("InferenceNeuronStack.assets.json")).read_text())
    (image,) = manifest["dockerImages"].values()
    copied = tmp_path / "out" / image["source"]["directory"]
    assert sorted(p.name for p in copied.iterdir()) == ["Dockerfile", "serve.sh"]


def test_the_archive_unpacks_to_exactly_the_files_the_boot_installs(app_stacks, assembly):
    from inference_constructs.user_data import INSTALLED, LIBRARIES, SETTINGS_FILE, script

    files = unpack_archive(deployed_archive(assembly, "inf2"))
    for name, path in INSTALLED.items():
        assert files[path] == (script(name), 0o644 if name in LIBRARIES else 0o755)
    assert {p for p in files if p.startswith("/etc/systemd/system/")} == {
        f"/etc/systemd/system/inference-{unit}"
        for unit in ("server.service", "ready.service", "failed.service", "deadline.service", "deadline.timer")
    }
    assert files[SETTINGS_FILE][1] == 0o600 and {
        "/etc/inference/serve-args",
        "/etc/inference/container.env",
    } <= set(files)


def test_no_two_stacks_in_one_region_name_the_same_log_group(assembly):
    """A named log group is the region's, not the stack's: two stacks naming one fail the second
    deploy (the Neuron and the SageMaker stacks share us-east-2 and each copies weights)."""
    seen: dict[tuple[str, str], str] = {}
    for stack in assembly.stacks:
        for resource in stack.template.get("Resources", {}).values():
            if resource["Type"] != "AWS::Logs::LogGroup" or "LogGroupName" not in resource["Properties"]:
                continue
            key = (stack.environment.region, render_join(resource["Properties"]["LogGroupName"]))
            assert key not in seen, f"{key} in {seen.get(key)} and {stack.stack_name}"
            seen[key] = stack.stack_name
