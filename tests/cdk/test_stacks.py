"""Fine-grained assertions on the synthesized templates: what a deploy would really create."""

from __future__ import annotations

import json
import re

import pytest

from catalog import get_backend
from catalog.contract import BackendOutput, output_key
from catalog.offerings import REGION_ZONES
from tests.cdk.conftest import render_join, resources

EC2_BACKENDS = {
    "g6": "InferenceGpuStack",
    "g5g": "InferenceGpuStack",
    "inf2": "InferenceNeuronStack",
    "trn1": "InferenceNeuronStack",
}


def test_three_stacks_each_in_the_region_that_offers_its_types(assembly):
    regions = {stack.stack_name: stack.environment.region for stack in assembly.stacks}
    # g5g is not offered in us-east-2, trn1 not in us-east-1 (catalog/offerings.py).
    assert regions == {
        "InferenceGpuStack": "us-east-1",
        "InferenceNeuronStack": "us-east-2",
        "InferenceSageMakerStack": "us-east-2",
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
    arch = "arm64" if backend == "g5g" else "x86_64"
    if spec.accelerator == "nvidia":
        assert f"/deeplearning/ami/{arch}/base-oss-nvidia-driver-gpu-ubuntu-22.04/" in parameter["Default"]
    else:
        assert parameter["Default"] == "/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id"


@pytest.mark.parametrize(("backend", "size"), [("g6", 100), ("g5g", 80), ("inf2", 100), ("trn1", 200)])
def test_one_server_group_across_every_zone_with_the_surveys_root_volume(templates, backend, size):
    template = templates[EC2_BACKENDS[backend]]
    group = group_of(template, backend)["Properties"]
    assert (group["MinSize"], group["MaxSize"]) == ("1", "1")
    subnets = resources(template, "AWS::EC2::Subnet")
    zones = sorted(subnets[ref["Ref"]]["Properties"]["AvailabilityZone"] for ref in group["VPCZoneIdentifier"])
    region = "us-east-1" if backend in ("g6", "g5g") else "us-east-2"
    # Every zone of the region: a capacity refusal in one moves the launch to the next by itself.
    assert zones == sorted(REGION_ZONES[region])
    (device,) = launch_data(template, backend)["BlockDeviceMappings"]
    ebs = device["Ebs"]
    assert (ebs["Encrypted"], ebs["VolumeType"], ebs["DeleteOnTermination"], ebs["VolumeSize"]) == (
        True,
        "gp3",
        True,
        size,
    )


def test_a_new_launch_template_version_replaces_the_server(templates):
    group = group_of(templates["InferenceGpuStack"], "g6")
    rolling = group["UpdatePolicy"]["AutoScalingRollingUpdate"]
    assert (rolling["MaxBatchSize"], rolling["MinInstancesInService"]) == (1, 0)


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
    assert names == ["InferenceGpuStack", "InferenceNeuronStack", "InferenceSageMakerStack"]
    neuron = assembly.get_stack_by_name("InferenceNeuronStack").template
    (marker,) = resources(neuron, "AWS::SSM::Parameter").values()
    assert marker["Properties"]["Name"] == "/inference/stacks/InferenceNeuronStack"
    assert json.loads(marker["Properties"]["Value"])["backends"] == []
    assert len(neuron["Resources"]) == 1


def test_placement_record_moves_a_stack_to_its_failover_region(tmp_path):
    import aws_cdk as cdk

    from catalog.config import load_config
    from stacks import build_app

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    config = load_config({}, placements={"InferenceNeuronStack": "us-west-2"})
    stacks = build_app(app, config, nag=False)
    assert stacks["InferenceNeuronStack"].region == "us-west-2"
    assert stacks["InferenceGpuStack"].region == "us-east-1"


def user_data(templates, backend):
    return render_join(launch_data(templates[EC2_BACKENDS[backend]], backend)["UserData"])


def container_env(script: str) -> list[str]:
    block = script.split("cat > /etc/inference/container.env <<'INFERENCE_EOF'\n", 1)[1]
    return block.split("\nINFERENCE_EOF", 1)[0].split("\n")


def serve_args(script: str) -> list[str]:
    block = script.split("cat > /etc/inference/serve-args <<'INFERENCE_EOF'\n", 1)[1]
    return block.split("\nINFERENCE_EOF", 1)[0].split("\n")


@pytest.mark.parametrize("backend", ["g6", "g5g"])
def test_vllm_flags_reach_the_server(templates, backend):
    script = user_data(templates, backend)
    spec = get_backend(backend)
    # The vLLM images' entrypoint is `vllm serve`: the model is its positional argument.
    assert serve_args(script) == [spec.model_id, *spec.serve_flags]
    for flag in ("--enable-auto-tool-choice", "--tool-call-parser", "gemma4", "--max-model-len", "8192"):
        assert flag in serve_args(script)
    assert "ACCELERATOR_ARGS='--gpus all'" in script
    assert "systemctl enable --now inference-server.service" in script
    assert "Restart=on-failure" in script
    assert "--log-driver awslogs" in script


def test_g6_serves_the_seed_repack_with_pinned_vllm(templates):
    script = user_data(templates, "g6")
    assert "IMAGE=vllm/vllm-openai:v0.30.0" in script
    assert "--gpu-memory-utilization\n0.90" in script


def image_line(script: str) -> str:
    return next(line for line in script.splitlines() if line.startswith("IMAGE="))


def test_g5g_pulls_the_image_its_stack_builds(templates):
    script = user_data(templates, "g5g")
    # This stack's own repository, tagged with the content hash of images/vllm-sm75.
    assert re.fullmatch(
        r"IMAGE='<<BuildVllmSm75Repository\w+\.Arn> split ':' \[4\]>\.dkr\.ecr\.<<BuildVllmSm75Repository\w+\.Arn> "
        r"split ':' \[3\]>\.<AWS::URLSuffix>/<BuildVllmSm75Repository\w+>:[0-9a-f]{16}'",
        image_line(script),
    )
    assert "--dtype\nfloat16" in script
    assert "docker login --username AWS" in script
    # A missing image is reported as failed, with the command that builds it, instead of restarting forever.
    assert "IMAGE_BUILD_HINT='build it with: python -m runner.images build g5g" in script


@pytest.mark.parametrize(("backend", "swap"), [("inf2", True), ("trn1", False)])
def test_neuron_rows_run_the_vendor_engine_from_the_environment(templates, backend, swap):
    script = user_data(templates, backend)
    assert "ACCELERATOR_ARGS=--device=/dev/neuron0" in script
    assert '-p "127.0.0.1:${HOST_PORT}:${CONTAINER_PORT}"' in script
    assert "HOST_PORT=8080" in script and "CONTAINER_PORT=8080" in script
    # No arguments: the entrypoint reads the model and the engine's settings from its environment.
    assert serve_args(script) == [""]
    assert container_env(script) == [
        "MODEL=Qwen/Qwen2.5-3B-Instruct",
        "TENSOR_PARALLEL_SIZE=2",
        "MAX_MODEL_LEN=4096",
        "MAX_NUM_SEQS=4",
        "TOOL_CALL_PARSER=hermes",
    ]
    assert '--env-file "$ROOT/etc/inference/container.env"' in script
    # Compiled graphs persist across restarts on a named volume.
    assert "DATA_VOLUME=neuron-cache:/var/cache/neuron" in script
    assert re.search(r"/<BuildNeuronRepository\w+>:[0-9a-f]{16}'$", image_line(script))
    assert ("fallocate -l 16G /swapfile" in script) is swap


def root_volume(templates, backend):
    (device,) = launch_data(templates[EC2_BACKENDS[backend]], backend)["BlockDeviceMappings"]
    return device["Ebs"]


def test_g5g_root_volume_reads_and_writes_its_weights_faster(templates):
    assert root_volume(templates, "g5g")["Throughput"] == 500
    assert root_volume(templates, "g6")["Throughput"] == 125  # gp3's included baseline


def test_inf2_and_trn1_share_one_build(templates):
    assert image_line(user_data(templates, "inf2")) == image_line(user_data(templates, "trn1"))
    assert len(resources(templates["InferenceNeuronStack"], "AWS::CodeBuild::Project")) == 1


@pytest.mark.parametrize(
    ("stack", "folder", "environment", "hours"),
    [("InferenceGpuStack", "vllm-sm75", "ARM_CONTAINER", 8), ("InferenceNeuronStack", "neuron", "LINUX_CONTAINER", 1)],
)
def test_images_are_built_by_the_apps_own_codebuild_into_its_own_repository(
    templates, stack, folder, environment, hours
):
    template = templates[stack]
    (repository_id, repository), *_ = resources(template, "AWS::ECR::Repository").items()
    properties = repository["Properties"]
    assert properties["RepositoryName"] == f"inference-survey/{folder}"
    assert properties["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert '"countNumber":5' in properties["LifecyclePolicy"]["LifecyclePolicyText"]
    assert properties["EmptyOnDelete"] is True
    (project,) = resources(template, "AWS::CodeBuild::Project").values()
    env = project["Properties"]["Environment"]
    # arm64 compute for the g5g image: built natively, never under emulation.
    assert env["Type"] == environment and env["PrivilegedMode"] is True
    assert project["Properties"]["TimeoutInMinutes"] == hours * 60
    assert project["Properties"]["Source"]["Type"] == "S3"
    (image_uri,) = [v["Value"] for v in env["EnvironmentVariables"] if v["Name"] == "IMAGE_URI"]
    assert render_join(image_uri).endswith(f"/<{repository_id}>:" + render_join(image_uri).rsplit(":", 1)[1])
    # The build role pushes to this one repository and nowhere else.
    role_id = project["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    (policy,) = [
        p for p in resources(template, "AWS::IAM::Policy").values() if p["Properties"]["Roles"] == [{"Ref": role_id}]
    ]
    statements = {s.get("Sid"): s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["PushToItsRepository"]["Resource"] == {"Fn::GetAtt": [repository_id, "Arn"]}
    assert "ecr:PutImage" in statements["PushToItsRepository"]["Action"]
    assert statements["EcrLogin"]["Action"] == "ecr:GetAuthorizationToken"


def test_outputs_name_the_build_project_and_what_the_server_takes(templates):
    outputs = templates["InferenceNeuronStack"]["Outputs"]
    text = json.dumps(outputs["BackendInf2"]["Value"])
    assert "image_build_project" in text and "BuildNeuronProject" in text
    assert '\\"supports_tools\\":true' in text and '\\"max_total_tokens\\":4096' in text


def test_server_reads_the_token_from_the_secret_at_start(templates):
    script = user_data(templates, "g6")
    assert "HF_TOKEN_SECRET=inference/hf-token" in script
    assert "aws secretsmanager get-secret-value" in script
    assert "READY_PARAMETER='<G6Readiness" in script


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
    assert (
        container["Image"]
        == "763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.4"
    )
    (config,) = resources(template, "AWS::SageMaker::EndpointConfig").values()
    (variant,) = config["Properties"]["ProductionVariants"]
    assert variant["InstanceType"] == "ml.g6.xlarge"
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 1800
    (endpoint,) = resources(template, "AWS::SageMaker::Endpoint").values()
    assert endpoint["Properties"]["EndpointName"] == "inference-sagemaker"


def test_sagemaker_role_is_scoped(templates):
    template = templates["InferenceSageMakerStack"]
    (role,) = resources(template, "AWS::IAM::Role").values()
    assert "ManagedPolicyArns" not in role["Properties"]
    (policy,) = resources(template, "AWS::IAM::Policy").values()
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert render_join(statements["PullImage"]["Resource"]).endswith(":repository/vllm")
    assert "763104351884" in render_join(statements["PullImage"]["Resource"])
    assert render_join(statements["WriteLogs"]["Resource"]).endswith(
        ":log-group:/aws/sagemaker/Endpoints/inference-sagemaker:*"
    )


def test_secret_read_is_scoped_to_one_secret(templates):
    policies = resources(templates["InferenceGpuStack"], "AWS::IAM::Policy").values()
    secret_statements = [
        s
        for policy in policies
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if "secretsmanager:GetSecretValue" in s["Action"]
    ]
    (statement,) = secret_statements
    resource = statement["Resource"]
    assert not isinstance(resource, list)
    assert render_join(resource).endswith(":secret:inference/hf-token-??????")


def test_instance_role_has_ssm_and_ecr_pull(templates):
    (role,) = [
        r
        for r in resources(templates["InferenceGpuStack"], "AWS::IAM::Role").values()
        if "ManagedPolicyArns" in r["Properties"]
    ]
    arns = [render_join(a) for a in role["Properties"]["ManagedPolicyArns"]]
    assert sorted(a.rsplit("/", 1)[1] for a in arns) == [
        "AmazonEC2ContainerRegistryReadOnly",
        "AmazonSSMManagedInstanceCore",
    ]


def test_nothing_is_retained_and_logs_expire(templates):
    for name, template in templates.items():
        for logical_id, resource in template["Resources"].items():
            assert resource.get("DeletionPolicy", "Delete") == "Delete", (name, logical_id)
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
    if spec.kind == "sagemaker":
        assert parsed.endpoint_name == "inference-sagemaker"
        assert parsed.log_group == "/aws/sagemaker/Endpoints/inference-sagemaker"
    else:
        assert parsed.auto_scaling_group.endswith("-ASG")
        assert parsed.zones == list(REGION_ZONES[region])
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
