"""Both ends of the outputs contract: the file `cdk deploy --outputs-file` writes, and
CloudFormation's describe_stacks served by the moto emulator in server mode on loopback."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import boto3
import httpx
import pytest

from catalog.contract import BackendOutput, output_key
from runner.cli.options import CommonOptions
from runner.cli.session import discover
from runner.cloud.outputs import parse_outputs, read_outputs_file, read_stack_outputs
from runner.core.backends import from_output
from runner.core.errors import RunnerError
from runner.core.tls import tls_context

G6 = BackendOutput(
    name="g6",
    kind="ec2-vllm",
    region="us-east-1",
    model_id="xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4",
    port=8000,
    health_path="/health",
    auto_scaling_group="InferenceGpuStack-G6Group-ABC",
    zones=["us-east-1a", "us-east-1b"],
    instance_type="g6.xlarge",
    readiness_parameter="/inference/g6/ready",
    log_group="/inference/g6",
)
SAGEMAKER = BackendOutput(
    name="sagemaker",
    kind="sagemaker",
    region="us-east-1",
    model_id="xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4",
    port=8080,
    health_path="/ping",
    endpoint_name="inference-sagemaker",
)


def outputs_file(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(data))
    return path


def test_outputs_file_round_trip(tmp_path):
    path = outputs_file(
        tmp_path,
        {
            "InferenceGpuStack": {output_key("g6"): json.dumps(G6.to_json()), "ExportsOutputSomething": "x"},
            "InferenceSageMakerStack": {output_key("sagemaker"): json.dumps(SAGEMAKER.to_json())},
        },
    )
    reading = read_outputs_file(path)
    assert reading.problems == []
    assert reading.backends == [G6, SAGEMAKER]
    g6 = from_output(G6, {})
    assert g6.base_url == "http://127.0.0.1:8001/v1" and g6.health_url == "http://127.0.0.1:8001/health"
    # The instance id is known only at run time: the command reads it from the readiness parameter.
    assert "--target $(aws ssm get-parameter --region us-east-1 --name /inference/g6/ready" in g6.notes[0]
    assert "AWS-StartPortForwardingSession" in g6.notes[0] and '"localPortNumber":["8001"]' in g6.notes[0]
    assert from_output(G6, {"g6": 9100}).base_url == "http://127.0.0.1:9100/v1"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{not json", "stack InferenceGpuStack output BackendG6: not JSON"),
        (json.dumps({"contract": 99}), "contract version 99, this runner reads 2"),
        (json.dumps({**G6.to_json(), "contract": 1}), "contract version 1, this runner reads 2 (redeploy"),
        (json.dumps({**G6.to_json(), "kind": "tpu"}), "unknown kind 'tpu'"),
        (json.dumps({k: v for k, v in G6.to_json().items() if k != "model_id"}), "missing model_id"),
        (
            json.dumps({k: v for k, v in G6.to_json().items() if k != "auto_scaling_group"}),
            "kind ec2-vllm needs auto_scaling_group and readiness_parameter",
        ),
        (json.dumps([1, 2]), "expected a JSON object, got list"),
    ],
)
def test_malformed_outputs_are_one_line_problems_and_the_rest_survives(value, problem):
    reading = parse_outputs(
        {
            "InferenceGpuStack": {"BackendG6": value},
            "InferenceSageMakerStack": {"BackendSagemaker": json.dumps(SAGEMAKER.to_json())},
        },
        source="test",
    )
    assert reading.backends == [SAGEMAKER]
    (line,) = reading.problems
    assert problem in line and "\n" not in line


def test_missing_or_broken_outputs_file(tmp_path):
    with pytest.raises(RunnerError, match="does not exist"):
        read_outputs_file(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[")
    with pytest.raises(RunnerError, match="is not JSON"):
        read_outputs_file(bad)


@pytest.fixture
def emulated_aws(moto_url, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    httpx.post(f"{moto_url}/moto-api/reset", verify=tls_context())
    return boto3.client("cloudformation", region_name="us-east-1")


def create_stack(client, name: str, outputs: dict[str, str]) -> None:
    template = {
        "Resources": {
            "Marker": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Type": "String", "Value": "x", "Name": f"/test/{name}"},
            }
        },
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    client.create_stack(StackName=name, TemplateBody=json.dumps(template))


def test_describe_stacks_against_the_emulator(emulated_aws):
    create_stack(emulated_aws, "InferenceGpuStack", {output_key("g6"): json.dumps(G6.to_json())})
    create_stack(emulated_aws, "InferenceSageMakerStack", {output_key("sagemaker"): json.dumps(SAGEMAKER.to_json())})
    reading = read_stack_outputs("us-east-1")
    # InferenceNeuronStack is not deployed: skipped without a problem.
    assert reading.problems == []
    assert sorted(b.name for b in reading.backends) == ["g6", "sagemaker"]
    assert reading.raw["InferenceGpuStack"][output_key("g6")] == json.dumps(G6.to_json())


def test_discovery_with_credentials_finds_stacks_and_bedrock_without_starting_the_local_model(emulated_aws):
    create_stack(emulated_aws, "InferenceGpuStack", {output_key("g6"): json.dumps(G6.to_json())})
    discovery = discover(CommonOptions(region="us-east-1", results_dir=Path(os.devnull)))
    assert [b.name for b in discovery.backends] == ["g6", "bedrock"]
    assert discovery.local_server is None
    bedrock = discovery.backends[1]
    assert (bedrock.model_id, bedrock.region) == ("us.amazon.nova-micro-v1:0", "us-east-1")


def test_selecting_a_backend_that_is_not_deployed_is_a_notice(emulated_aws):
    discovery = discover(CommonOptions(region="us-east-1", backends=["trn1", "bedrock"], results_dir=Path(os.devnull)))
    assert [b.name for b in discovery.backends] == ["bedrock"]
    assert "backend trn1 was asked for but is not deployed or configured" in discovery.notices


def test_wait_stops_at_once_on_a_failed_readiness_and_names_the_reason(emulated_aws, dead_url):
    from runner.measure.health import wait_healthy

    ssm = boto3.client("ssm", region_name="us-east-1")
    reason = "image not found: 1.dkr.ecr.us-east-1.amazonaws.com/vllm-sm75:v1; build the sm_75 vLLM image"
    ssm.put_parameter(
        Name="/inference/g6/ready",
        Type="String",
        Value=json.dumps({"state": "failed", "reason": reason, "instance_id": "i-1"}),
    )
    backend = from_output(G6, {})
    backend.health_url = f"{dead_url}/health"
    started = time.monotonic()
    health = wait_healthy(backend, 60, poll_s=0.2, ssm_client=ssm)
    assert time.monotonic() - started < 5
    assert (health.healthy, health.detail) == (False, f"failed: {reason}")


def test_wait_reports_a_starting_server_as_starting_not_unreachable(emulated_aws, dead_url):
    from runner.measure.health import wait_healthy

    ssm = boto3.client("ssm", region_name="us-east-1")
    ssm.put_parameter(Name="/inference/g6/ready", Type="String", Value=json.dumps({"state": "starting"}))
    backend = from_output(G6, {})
    backend.health_url = f"{dead_url}/health"
    health = wait_healthy(backend, 0.5, poll_s=0.2, ssm_client=ssm)
    assert (health.healthy, health.detail) == (False, "server starting")


def test_sagemaker_wait_uses_the_endpoint_in_service_waiter(emulated_aws):
    from runner.measure.health import wait_healthy

    sagemaker = boto3.client("sagemaker", region_name="us-east-1")
    sagemaker.create_model(
        ModelName="m",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:1"},
    )
    sagemaker.create_endpoint_config(
        EndpointConfigName="c",
        ProductionVariants=[
            # moto 5.2 still validates against an old instance list without ml.g6
            {"VariantName": "v", "ModelName": "m", "InitialInstanceCount": 1, "InstanceType": "ml.g4dn.xlarge"}
        ],
    )
    sagemaker.create_endpoint(EndpointName="inference-sagemaker", EndpointConfigName="c")
    backend = from_output(SAGEMAKER, {})
    health = wait_healthy(backend, 5, poll_s=0.1, sagemaker_client=sagemaker)
    assert (health.healthy, health.detail) == (True, "InService")
    missing = from_output(BackendOutput(**{**SAGEMAKER.to_json(), "endpoint_name": "absent"}), {})
    health = wait_healthy(missing, 5, poll_s=0.1, sagemaker_client=sagemaker)
    assert health.healthy is False and health.detail.startswith("ValidationException:")
    assert "absent" in health.detail


def test_an_unreachable_forward_names_its_port_and_command(dead_url):
    from runner.measure.health import wait_healthy

    port = int(dead_url.rsplit(":", 1)[1])
    health = wait_healthy(from_output(G6, {"g6": port}), 0, poll_s=0.1)
    assert health.detail.startswith("unreachable")
    assert f"(local port {port}: open its SSM port forward with: aws ssm start-session --region" in health.detail
