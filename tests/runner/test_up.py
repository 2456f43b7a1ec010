"""runner.up's bad input stops before anything is deployed or written; its readiness reading."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.cloud.readiness import Readiness, is_capacity_refusal
from tests.cdk.conftest import ROOT


def run_up(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    """runner.up as a process with no AWS credentials anywhere (`--aws` takes it past the refusal
    that brings, to the input checks that come before any AWS call)."""
    env = {"PATH": "/usr/bin:/bin", "AWS_EC2_METADATA_DISABLED": "true", "HOME": str(tmp_path)}
    env["INFERENCE_PLACEMENT_FILE"] = str(tmp_path / "placement.json")
    return subprocess.run(
        [sys.executable, "-m", "runner.up", "--results-dir", str(tmp_path / "results"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["InferenceTpuStack"], "unknown stack 'InferenceTpuStack'; stacks: InferenceGpuStack, InferenceNeuronStack"),
        (["-c", "trn1.regions=us-east-1"], "trn1.2xlarge is not offered in us-east-1; regions that offer it"),
        (["-c", "g6.regions="], "context g6.regions: at least one region is needed"),
        (["-c", "g6.regions=eu-mars-1"], "unknown region 'eu-mars-1'"),
        (["-c", "g6.zones=us-west-2a"], "'us-west-2a' is not a zone of us-east-1"),
        (["-c", "inf2.regions=us-west-2", "-c", "trn1.regions=us-east-2"], "asked for in two regions at once"),
        (["-c", "novalue"], "--context 'novalue': expected KEY=VALUE"),
        (["-c", "ttlHours=-1"], "context ttlHours: '-1' is outside 0..744 hours (0 turns it off)"),
        (["-c", "ttlHours=soon"], "context ttlHours: expected a number of hours (0 turns it off), got 'soon'"),
        (["-c", "g6.regions=eu-central-1", "-c", "g5g.regions=eu-west-1"], "g5g.2xlarge is not offered in eu-west-1"),
        (["--extend", "2"], "--extend: nothing deployed by runner.up to extend (placement.json lists no stack)"),
        (["--extend", "0"], "--extend 0: give a number of hours above 0 (to turn the time-to-live off: -c ttlHours=0)"),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_deployed_or_written(tmp_path, args, message):
    result = run_up(tmp_path, "--aws", *args)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "placement.json").exists()


@pytest.mark.parametrize("args", [[], ["InferenceGpuStack"], ["--extend", "2"]])
def test_without_credentials_it_refuses_in_one_line_as_every_aws_command_does(tmp_path, args):
    """No credential chain walked, no time-to-live promised, no evidence: the one line the other
    commands that work only through AWS give (runner/cloud/aws.py `require_aws`)."""
    result = run_up(tmp_path, *args)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "error: runner.up deploys with the CDK CLI and watches through the AWS API, and no AWS credentials are "
        "configured (configure them, or pass --aws)"
    ]
    assert not (tmp_path / "results").exists() and not (tmp_path / "placement.json").exists()


@pytest.mark.parametrize(
    ("message", "refused"),
    [
        ("We currently do not have sufficient inf2.xlarge capacity in the Availability Zone you requested", True),
        ("An error occurred (InsufficientInstanceCapacity) when calling the RunInstances operation", True),
        ("Your requested instance type (trn1.2xlarge) is not supported in your requested Availability Zone", True),
        (
            "The account-level service limit 'ml.g6.xlarge for endpoint usage' is 1 Instances (ResourceLimitExceeded)",
            True,
        ),
        ("Resource handler returned message: The security group 'sg-1' does not exist", False),
    ],
)
def test_capacity_refusals_are_told_from_other_faults(message, refused):
    assert is_capacity_refusal(message) is refused


def test_a_record_from_another_instance_is_stale():
    """A rolling update or a replacement: the group runs a new instance, the record is the old one's."""
    record = Readiness.parse('{"state": "ready", "instance_id": "i-old"}')
    assert record.stale_for("i-new") and not record.stale_for("i-old")
    assert not Readiness.parse('{"state": "launching"}').stale_for("i-new")  # the stack's own, no instance


def test_readiness_lines():
    failed = Readiness.parse('{"state": "failed", "reason": "no Neuron device", "instance_id": "i-1", "zone": "a"}')
    assert (failed.line, failed.instance_id) == ("failed: no Neuron device", "i-1")
    assert Readiness.parse('{"state": "launching"}').line == "launching"
    assert Readiness.parse("{oops").state == "unknown"


def test_readiness_keeps_the_weight_loading_time_when_it_is_a_number():
    assert Readiness.parse('{"state": "ready", "weights_load_s": 520.97}').weights_load_s == 520.97
    assert Readiness.parse('{"state": "ready", "weights_load_s": "soon"}').weights_load_s is None
    assert Readiness.parse('{"state": "ready"}').weights_load_s is None


def test_a_satellites_name_stands_for_its_family_and_each_stack_comes_once():
    """A survey's plan names what stands, satellites included: up brings each family up with its
    satellites, once, however it was named."""
    from runner.cloud.bring_up.all_stacks import chosen_stacks
    from runner.cloud.bring_up.one_stack import UpOptions
    from tests.cdk.test_config import SATELLITE_RECORDS

    options = UpOptions(stacks=["InferenceNeuronStack-inf2", "InferenceNeuronStack"])
    chosen, _ = chosen_stacks(options, SATELLITE_RECORDS)
    assert [s.name for s in chosen] == ["InferenceNeuronStack", "InferenceNeuronStack-inf2"]
    with pytest.raises(Exception, match="unknown stack 'InferenceNeuronStack-g6'"):
        chosen_stacks(UpOptions(stacks=["InferenceNeuronStack-g6"]), SATELLITE_RECORDS)
