"""The opt-in options and the one-model lane, as synthesized: every open-model backend on one model,
SageMaker serverless, asynchronous (to zero) and batch transform, real-time autoscaling, and what
Custom Model Import needs. moto's CloudFormation skips scaling targets, policies and alarms, so
their shapes are asserted here, on the templates AWS would receive (and cfn-lint checks them)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from catalog import BackendKind
from catalog.backends import OPEN_MODEL
from catalog.contract import BackendOutput
from catalog.lanes import OPEN_MODEL_KINDS
from tests.cdk.conftest import ROOT, cdk_json_context, render_join, resources, synth
from tests.cdk.test_checks import cfn_lint_each_in_its_region
from tests.cdk.test_stacks import serve_args

EVERY_OPTION = "g6,g5g,inf2,trn1,sagemaker,sagemaker-serverless,sagemaker-async,sagemaker-batch,sagemaker-components,bedrock-import"
OPEN_CONTEXT = {"lane": "open", "backends": EVERY_OPTION, "sagemaker.maxInstances": "2"}


def serverless_image_record() -> dict:
    """placement.json as runner.up writes it once the serverless image is built in us-east-2."""
    import aws_cdk as cdk

    from catalog import Architecture
    from inference_constructs.image_build import IMAGES_DIR, ImageBuild

    build = ImageBuild(
        cdk.Stack(cdk.App(), "Probe"),
        "Build",
        folder=IMAGES_DIR / "llama-serverless",
        architecture=Architecture.X86_64,
    )
    return {"InferenceSageMakerStack": {"region": "us-east-2", "images": [f"llama-serverless:{build.tag}"]}}


@pytest.fixture(scope="module")
def open_lane(tmp_path_factory):
    """Every option deployed in the open lane, the serverless image recorded as built (nag on)."""
    return synth(cdk_json_context() | OPEN_CONTEXT, tmp_path_factory.mktemp("open"), records=serverless_image_record())


@pytest.fixture(scope="module")
def open_templates(open_lane):
    return {s.stack_name: s.template for s in open_lane[0].stacks}


def outputs(template: dict) -> dict[str, BackendOutput]:
    found = {}
    for key, output in template.get("Outputs", {}).items():
        if key.startswith("Backend"):
            found[key] = BackendOutput.parse(key, json.loads(render_join(output["Value"])))
    return found


def every_output(templates) -> dict[str, BackendOutput]:
    return {o.name: o for t in templates.values() for o in outputs(t).values()}


def sm_resource(templates, type_name: str, path_part: str) -> dict:
    (found,) = [
        r
        for r in resources(templates["InferenceSageMakerStack"], type_name).values()
        if path_part in r["Metadata"]["aws:cdk:path"]
    ]
    return found["Properties"]


def test_the_open_lane_puts_one_model_on_every_open_model_backend(open_templates, open_lane):
    found = every_output(open_templates)
    assert sorted(found) == sorted(EVERY_OPTION.split(","))
    assert {o.name: o.model_id for o in found.values()} == dict.fromkeys(found, OPEN_MODEL)
    assert {o.lane for o in found.values()} == {"open"}
    assert all(BackendKind(o.kind) in OPEN_MODEL_KINDS for o in found.values())
    # What each server is told, not only what its output says: SageMaker's environment and the
    # EC2 servers' container command, with the hermes tool parser in place of gemma4.
    models = resources(open_templates["InferenceSageMakerStack"], "AWS::SageMaker::Model").values()
    vllm = [m["Properties"]["PrimaryContainer"].get("Environment", {}) for m in models]
    vllm = [env for env in vllm if env]
    # Real-time, async, batch and the inference component (serverless carries its file in its image).
    assert len(vllm) == 4
    assert all(env["SM_VLLM_MODEL"] == OPEN_MODEL and env["SM_VLLM_TOOL_CALL_PARSER"] == "hermes" for env in vllm)
    for backend in ("g6", "g5g"):
        args = serve_args(open_lane[0], backend)
        assert args[0] == OPEN_MODEL
        assert args[args.index("--tool-call-parser") + 1] == "hermes" and "gemma4" not in args


def test_the_survey_lane_keeps_each_path_on_its_own_model(templates):
    found = every_output(templates)
    assert found["g6"].model_id != found["inf2"].model_id
    assert {o.lane for o in found.values()} == {"survey"}
    # A default deploy deploys what it did: no opt-in option.
    assert sorted(found) == ["g5g", "g6", "inf2", "sagemaker", "trn1"]


def test_serverless_has_memory_and_concurrency_and_no_instance(open_templates):
    (variant,) = sm_resource(open_templates, "AWS::SageMaker::EndpointConfig", "/Serverless/")["ProductionVariants"]
    assert variant["ServerlessConfig"] == {"MaxConcurrency": 4, "MemorySizeInMB": 6144}
    assert "InstanceType" not in variant and "InitialInstanceCount" not in variant
    model = sm_resource(open_templates, "AWS::SageMaker::Model", "/Serverless/")
    # The app's own ECR repository (kept across deploys), not a public registry (serverless pulls from ECR only).
    image = render_join(model["PrimaryContainer"]["Image"])
    assert re.fullmatch(
        r"<AWS::AccountId>\.dkr\.ecr\.us-east-2\.<AWS::URLSuffix>/inference-survey/llama-serverless:[0-9a-f]{16}", image
    )
    output = every_output(open_templates)["sagemaker-serverless"]
    assert (output.waiting_for_image, output.memory_mb, output.max_concurrency) == (False, 6144, 4)


def test_a_serverless_endpoint_waits_for_its_image(templates, tmp_path):
    """Before the build is recorded the stack holds the repository and the build, no endpoint."""
    assembly, _ = synth(cdk_json_context() | {"backends": "sagemaker-serverless"}, tmp_path, nag=False)
    template = assembly.get_stack_by_name("InferenceSageMakerStack").template
    assert resources(template, "AWS::SageMaker::Endpoint") == {}
    assert resources(template, "AWS::SageMaker::Model") == {}
    assert len(resources(template, "AWS::CodeBuild::Project")) == 1
    (output,) = outputs(template).values()
    assert output.waiting_for_image is True and output.endpoint_name == "inference-sagemaker-serverless"


def test_async_writes_to_the_stack_bucket_and_scales_between_zero_and_its_maximum(open_templates):
    config = sm_resource(open_templates, "AWS::SageMaker::EndpointConfig", "/Async/")
    output_config = config["AsyncInferenceConfig"]["OutputConfig"]
    assert render_join(output_config["S3OutputPath"]).endswith("/async/outputs/")
    assert render_join(output_config["S3FailurePath"]).endswith("/async/failures/")
    assert set(output_config["NotificationConfig"]) == {"SuccessTopic", "ErrorTopic"}
    target = sm_resource(open_templates, "AWS::ApplicationAutoScaling::ScalableTarget", "/Async/")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 1)
    assert target["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    backlog = sm_resource(open_templates, "AWS::ApplicationAutoScaling::ScalingPolicy", "/Async/Scaling/Backlog")
    metric = backlog["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]
    assert metric["MetricName"] == "ApproximateBacklogSizePerInstance"
    step = sm_resource(open_templates, "AWS::ApplicationAutoScaling::ScalingPolicy", "/Async/Scaling/LeaveZero")
    assert step["StepScalingPolicyConfiguration"]["StepAdjustments"] == [
        {"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}
    ]
    alarm = sm_resource(open_templates, "AWS::CloudWatch::Alarm", "/Async/")
    assert alarm["MetricName"] == "HasBacklogWithoutCapacity"
    (action,) = alarm["AlarmActions"]
    step_id = next(
        k
        for k, r in resources(
            open_templates["InferenceSageMakerStack"], "AWS::ApplicationAutoScaling::ScalingPolicy"
        ).items()
        if r["Metadata"]["aws:cdk:path"].endswith("/Async/Scaling/LeaveZero")
    )
    assert action == {"Ref": step_id}


def test_the_options_bucket_is_private_encrypted_tls_only_and_expires_objects(open_templates):
    (bucket,) = resources(open_templates["InferenceSageMakerStack"], "AWS::S3::Bucket").values()
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True
    )
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"
    }
    assert props["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == 7
    (policy,) = resources(open_templates["InferenceSageMakerStack"], "AWS::S3::BucketPolicy").values()
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_real_time_scales_on_concurrent_requests_only_when_asked(open_templates, templates):
    target = sm_resource(open_templates, "AWS::ApplicationAutoScaling::ScalableTarget", "/Inference/")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 2)
    policy = sm_resource(open_templates, "AWS::ApplicationAutoScaling::ScalingPolicy", "/Inference/")
    tracking = policy["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
    }
    assert tracking["TargetValue"] == 8
    # One instance unless asked (the survey's account had an ml.g6.xlarge endpoint quota of 1).
    assert resources(templates["InferenceSageMakerStack"], "AWS::ApplicationAutoScaling::ScalableTarget") == {}


def test_batch_is_a_model_and_the_bucket_prefixes_the_runner_uses(open_templates):
    output = every_output(open_templates)["sagemaker-batch"]
    assert (output.input_prefix, output.output_prefix) == ("batch/inputs/", "batch/outputs/")
    assert output.model_name and output.bucket and output.instance_type == "ml.g6.xlarge"
    assert resources(open_templates["InferenceSageMakerStack"], "AWS::SageMaker::Endpoint").keys() == {
        k
        for k, r in resources(open_templates["InferenceSageMakerStack"], "AWS::SageMaker::Endpoint").items()
        if "/Batch/" not in r["Metadata"]["aws:cdk:path"]
    }


def test_the_import_role_is_trusted_by_bedrock_for_this_accounts_import_jobs_only(open_templates):
    template = open_templates["InferenceBedrockImportStack"]
    (role,) = [
        r for r in resources(template, "AWS::IAM::Role").values() if "ImportRole" in r["Metadata"]["aws:cdk:path"]
    ]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "bedrock.amazonaws.com"}
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source_arn = render_join(statement["Condition"]["ArnEquals"]["aws:SourceArn"])
    assert source_arn.endswith(":model-import-job/*") and ":bedrock:us-east-1:" in source_arn
    (project,) = resources(template, "AWS::CodeBuild::Project").values()
    env = {v["Name"]: v.get("Value") for v in project["Properties"]["Environment"]["EnvironmentVariables"]}
    assert env["MODEL_ID"] == OPEN_MODEL
    output = every_output(open_templates)["bedrock-import"]
    assert output.model_name == "inference-survey-open-qwen2-5-1-5b-instruct"
    assert output.input_prefix == f"weights/{output.model_name}/"


def test_every_option_passes_nag_and_cfn_lint_in_its_own_region(open_lane):
    assembly, _ = open_lane  # synthesized with AwsSolutionsChecks: a finding would have raised
    linted = cfn_lint_each_in_its_region(assembly)
    assert sorted(name for names, _ in linted.values() for name in names) == sorted(
        s.stack_name for s in assembly.stacks
    )
    for names, result in linted.values():
        assert (result.returncode, result.stdout) == (0, ""), names


# What the copy runs besides its stand-ins. They are linked into the stand-ins' folder, which is
# then the script's whole PATH: nothing on the caller's PATH (a virtual environment's `hf`, say)
# can be found before a stand-in, whatever shell the tests run from.
COPY_TOOLS = ("bash", "mktemp", "rm", "mkdir", "touch", "chmod", "cat", "du", "cut", "sed", "grep", "tail")


@pytest.fixture(params=["the caller's PATH", "a virtual environment's bin first"])
def caller_path(request, monkeypatch) -> str:
    """Each weights-copy test runs twice: under the PATH it was started with, and with the
    project's virtual environment's bin (where pip put the real `hf`) in front of it, as a user
    with the environment activated has it."""
    if request.param != "the caller's PATH":
        scripts = sysconfig.get_path("scripts")
        assert Path(scripts, "hf").is_file(), f"no hf in {scripts}: the case proves nothing"
        monkeypatch.setenv("PATH", f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}")
    return request.param


def run_copy(tmp_path: Path, *, with_config: bool) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The weights copy under bash with stand-ins for pip, hf and aws that log what they were asked,
    on a PATH of the stand-ins' folder alone."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    files = "config.json model.safetensors tokenizer.json" if with_config else "model.safetensors"
    # `hf models info --expand sha --json` answers the commit as the hub's API does (its `sha`).
    hf = f"""#!/bin/bash
echo "hf $*" >> "$CALLS"
[ "$1 $2" != "models info" ] || {{ echo '{{"id": "{OPEN_MODEL}", "sha": "{"c" * 40}"}}'; exit 0; }}
while [ $# -gt 0 ]; do [ "$1" = --local-dir ] && dir=$2; shift; done
mkdir -p "$dir" && cd "$dir" && touch {files}
"""
    # pip's install is what puts `hf` on the PATH (its scripts folder, this bin), as on CodeBuild's
    # standard image; any other python3 call (reading the hub's JSON) is the real interpreter's.
    python = sys.executable
    stand_ins = {
        "python3": f'case "$2" in *sysconfig*) echo "{bin_dir}"; exit 0;; esac\n'
        f'[ "$1 $2" = "-m pip" ] || exec "{python}" "$@"\necho "python3 $*" >> "$CALLS"\n'
        f'cat > "{bin_dir}/hf" <<\'EOF\'\n{hf}EOF\nchmod +x "{bin_dir}/hf"',
        "aws": 'echo "aws $*" >> "$CALLS"; [ "$1" != secretsmanager ] || exit 254',
    }
    for name, body in stand_ins.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    for tool in COPY_TOOLS:
        found = shutil.which(tool, path=os.defpath) or shutil.which(tool)
        assert found, f"{tool} is not installed"
        (bin_dir / tool).symlink_to(found)
    env = {
        "PATH": str(bin_dir),
        "CALLS": str(log),
        "AWS_REGION": "us-east-1",
        "MODEL_ID": OPEN_MODEL,
        "WEIGHTS_URI": "s3://weights-bucket/weights/m/",
        "HF_TOKEN_SECRET": "inference/hf-token",
        "HF_HUB_VERSION": "2.4.0",
    }
    script = ROOT / "inference_constructs" / "weights_copy.sh"
    result = subprocess.run(
        [str(bin_dir / "bash"), str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert "command not found" not in result.stderr, result.stderr  # a tool missing from COPY_TOOLS
    return result, log.read_text().splitlines() if log.exists() else []


def test_the_weights_copy_stages_then_moves_so_an_import_never_sees_half_a_copy(tmp_path, caller_path):
    result, calls = run_copy(tmp_path, with_config=True)
    assert result.returncode == 0, result.stdout + result.stderr
    s3 = [c.split()[1:] for c in calls if c.startswith("aws s3")]
    # Each copy stages under a prefix of its own (its build's id; "local" outside CodeBuild).
    final, staged = "s3://weights-bucket/weights/m/", "s3://weights-bucket/weights/m.partial-local/"
    marker = "s3://weights-bucket/weights/m.complete"
    assert [c[:2] for c in s3] == [["s3", "rm"], ["s3", "sync"], ["s3", "rm"], ["s3", "mv"], ["s3", "cp"]]
    assert s3[0][2] == marker and s3[1][3] == staged and s3[2][2] == final
    assert s3[3][2:4] == [staged, final] and s3[4][3] == marker
    assert "anonymous" in result.stdout  # no token secret: Qwen's weights are not gated
    assert any(c.startswith("python3 -m pip install") and "huggingface_hub==2.4.0" in c for c in calls)
    assert [c.split()[:3] for c in calls if c.startswith("hf ")] == [
        ["hf", "models", "info"],
        ["hf", "download", OPEN_MODEL],
    ]
    # At the commit the hub named, never a branch that may move meanwhile.
    assert f"--revision {'c' * 40}" in next(c for c in calls if c.startswith("hf download"))


def test_a_model_without_config_json_is_refused_before_anything_is_uploaded(tmp_path, caller_path):
    result, calls = run_copy(tmp_path, with_config=False)
    assert result.returncode == 1
    assert f"error: {OPEN_MODEL} has no config.json" in result.stdout
    assert not [c for c in calls if c.startswith("aws s3")]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"backends": "sagemaker-serverless", "sagemaker-serverless.memoryMb": "3000"},
            "context sagemaker-serverless.memoryMb: serverless endpoints offer 1024, 2048, 3072, 4096, 5120, 6144 MB, not 3000",
        ),
        (
            {"backends": "sagemaker-async", "sagemaker-async.minInstances": "2", "sagemaker-async.maxInstances": "1"},
            "context sagemaker-async.maxInstances: 1 is below sagemaker-async.minInstances (2)",
        ),
        ({"sagemaker.minInstances": "0"}, "context sagemaker.minInstances: 0 is outside the allowed range 1..20"),
        (
            {"sagemaker-serverless.maxConcurrency": "500"},
            "context sagemaker-serverless.maxConcurrency: 500 is outside the allowed range 1..200",
        ),
        ({"lane": "fast"}, "context lane: unknown lane 'fast'; lanes: survey, open"),
        ({"sagemaker-serverless.model": "x/y"}, "unknown context key 'sagemaker-serverless.model'"),
    ],
)
def test_bad_option_context_is_one_line(context, message):
    from catalog import CatalogError
    from catalog.config import load_config

    with pytest.raises(CatalogError) as raised:
        load_config(cdk_json_context() | context, placements={})
    assert str(raised.value).startswith(message)
