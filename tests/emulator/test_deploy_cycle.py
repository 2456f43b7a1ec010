"""The whole real-account flow against the moto emulator on loopback, through the pinned CLI:
bootstrap every region the app uses, deploy every stack, read the outputs (file and
CloudFormation), `runner.up` failing a stack over to its next region on an injected capacity
refusal, destroy, and a listing of what the emulator still holds."""

from __future__ import annotations

import json

import boto3
import pytest

from catalog.config import read_placements
from runner.outputs import read_outputs_file, read_stack_outputs
from runner.up import UpOptions, up
from tests.emulator.cdk_cycle import CONTEXT, bootstrap, deploy, destroy
from tests.moto_emulator import REGIONS, instance_agent

pytestmark = pytest.mark.emulator


def leftovers() -> dict[str, list[str]]:
    """Everything of the app's the emulator still holds, per region."""
    found: dict[str, list[str]] = {}
    for region in REGIONS:
        items = []
        cloudformation = boto3.client("cloudformation", region_name=region)
        for stack in cloudformation.describe_stacks()["Stacks"]:
            if stack["StackName"] != "CDKToolkit" and stack["StackStatus"] != "DELETE_COMPLETE":
                items.append(f"stack {stack['StackName']} {stack['StackStatus']}")
        for group in boto3.client("autoscaling", region_name=region).describe_auto_scaling_groups()[
            "AutoScalingGroups"
        ]:
            items.append(f"group {group['AutoScalingGroupName']}")
        ec2 = boto3.client("ec2", region_name=region)
        for reservation in ec2.describe_instances(
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        )["Reservations"]:
            items += [f"instance {i['InstanceId']}" for i in reservation["Instances"]]
        for parameter in boto3.client("ssm", region_name=region).describe_parameters()["Parameters"]:
            if parameter["Name"].startswith("/inference/"):
                items.append(f"parameter {parameter['Name']}")
        sagemaker = boto3.client("sagemaker", region_name=region)
        items += [f"endpoint {e['EndpointName']}" for e in sagemaker.list_endpoints()["Endpoints"]]
        logs = boto3.client("logs", region_name=region)
        items += [
            f"log group {g['logGroupName']}"
            for g in logs.describe_log_groups()["logGroups"]
            if g["logGroupName"].startswith(("/inference/", "/aws/sagemaker/Endpoints/inference-"))
        ]
        if items:
            found[region] = items
    return found


def test_deploy_read_fail_over_and_destroy(emulator, tmp_path):
    bootstrap()
    # us-east-2 refuses every EC2 launch from now on (capacity, in every zone).
    emulator.refuse_capacity("us-east-2")
    outputs_file = tmp_path / "outputs.json"
    deploy(outputs_file)
    from_file = read_outputs_file(outputs_file)
    from_cloudformation = read_stack_outputs()
    assert from_file.problems == [] and from_cloudformation.problems == []
    assert sorted(b.name for b in from_file.backends) == ["g5g", "g6", "inf2", "sagemaker", "trn1"]
    assert sorted(from_file.backends, key=lambda b: b.name) == sorted(
        from_cloudformation.backends, key=lambda b: b.name
    )
    regions = {b.name: b.region for b in from_file.backends}
    assert regions == {
        "g6": "us-east-1",
        "g5g": "us-east-1",
        "inf2": "us-east-2",
        "trn1": "us-east-2",
        "sagemaker": "us-east-2",
    }

    # us-east-2 refused every launch (since before the deploy): runner.up must move the Neuron
    # stack to us-west-2 by itself.
    with instance_agent(emulator, ("us-west-2",)):
        evidence = up(
            UpOptions(
                stacks=["InferenceNeuronStack"],
                context=CONTEXT,
                launch_timeout_s=2.0,
                ready_timeout_s=60.0,
                poll_s=0.3,
                method="direct",
                results_dir=tmp_path / "results",
            )
        )
    records = {r["backend"]: r for r in evidence.data["records"]}
    assert set(records) == {"inf2", "trn1"}
    for record in records.values():
        assert record["outcome"] == "ready", json.dumps(
            [record["outcome"], evidence.data["notices"], evidence.data.get("errors")], default=str
        )
        assert [a["region"] for a in record["attempts"]] == ["us-east-2", "us-west-2"]
        assert record["attempts"][0]["outcome"] == "no-capacity"
        refusals = record["attempts"][0]["refusals"][record["backend"]]
        assert refusals and "do not have sufficient" in refusals[0]["message"]
        assert record["region"] == "us-west-2" and record["zone"].startswith("us-west-2")
        assert record["launched_at"] and record["ready_at"] and record["launch_to_ready_min"] is not None
    assert records["inf2"]["survey_launch_to_ready_min"] == 17.9
    assert read_placements() == {"InferenceNeuronStack": "us-west-2"}
    # The failed attempt was removed: nothing of the Neuron stack is left in us-east-2.
    assert not [i for i in leftovers().get("us-east-2", []) if "Neuron" in i or "inf2" in i or "trn1" in i]
    saved = json.loads(evidence.path.read_text())
    assert saved["command"] == "up" and saved["finished_at"]

    # The runner now finds the Neuron stack in us-west-2 on its own.
    names = {b.name: b.region for b in read_stack_outputs().backends}
    assert names["inf2"] == "us-west-2"

    destroy()
    # What the emulator still holds is exactly its gap: after that failed first deletion moto drops
    # the stack record but keeps the Auto Scaling groups (and their instances) it had not deleted.
    # On AWS, CloudFormation deletes the group, which terminates its instance.
    left = leftovers()
    assert {r: [i for i in items if not i.startswith(("group ", "instance "))] for r, items in left.items()} == {
        r: [] for r in left
    }
    assert all(i.startswith(("group Inference", "instance ")) for items in left.values() for i in items)
