"""Capacity failover against the moto emulator on loopback, through the pinned CLI: bootstrap
every region the app uses, deploy every stack, read the outputs (file and CloudFormation),
`runner.up` failing a stack over to its next region on an injected capacity refusal (the
servers boot for real there: tests/host), destroy, and a listing of what the emulator still
holds."""

from __future__ import annotations

import json
import time

import pytest

from catalog.config import read_placements
from runner.cloud.outputs import read_outputs_file, read_stack_outputs
from runner.up import UpOptions, up
from tests.aws_emulator import REGIONS
from tests.aws_emulator.parameters import AMI_PARAMETERS
from tests.emulator.cdk_cycle import CONTEXT, bootstrap, deploy, destroy
from tests.emulator.observe import aws, leftovers, running_instances

pytestmark = pytest.mark.emulator


def test_deploy_read_fail_over_and_destroy(emulator, tmp_path):
    emulator.reset()
    bootstrap(emulator.scratch)
    # us-east-2 refuses every EC2 launch from now on (capacity, in every zone).
    emulator.refuse_capacity("us-east-2")
    outputs_file = tmp_path / "outputs.json"
    # As an earlier version of the app deployed: no time-to-live.
    deploy(emulator.scratch, outputs_file, {"ttlHours": "0"})
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

    # us-east-2 refused every launch (since before the deploy): runner.up builds the image there
    # (nothing bills meanwhile), brings the groups to one instance, gets none, and moves the Neuron
    # stack to us-west-2 by itself, where the servers boot and report ready.
    evidence = up(
        UpOptions(
            stacks=["InferenceNeuronStack"],
            context=CONTEXT,
            launch_timeout_s=3.0,
            ready_timeout_s=60.0,
            poll_s=0.3,
            build_grace_s=0.5,
            method="direct",
            results_dir=tmp_path / "results",
        )
    )
    records = {r["backend"]: r for r in evidence.data["records"]}
    assert set(records) == {"inf2", "trn1"}
    # The deploy says that it adds the time-to-live the stack did not have.
    assert any("was deployed without a time-to-live: this deploy adds one" in n for n in evidence.data["notices"])
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

    destroy(emulator.scratch)
    # Nothing of the app is left anywhere: stacks, groups, instances, endpoints, parameters.
    assert leftovers() == {}


def test_a_refusal_for_one_server_moves_that_server_alone_and_its_ready_sibling_stays(emulator, tmp_path):
    """The survey's run 2: inf2 refused in us-east-2 and us-east-1 and launched in us-west-2, while
    trn1 launched in us-east-2. inf2 moves alone, as a satellite stack, region after region; trn1,
    the image built for it and its stack stay where they serve."""
    emulator.reset()
    bootstrap(emulator.scratch)
    emulator.refuse_capacity("us-east-2", "inf2.xlarge")
    emulator.refuse_capacity("us-east-1", "inf2.xlarge")
    options = UpOptions(
        stacks=["InferenceNeuronStack"],
        context=CONTEXT,
        launch_timeout_s=3.0,
        ready_timeout_s=60.0,
        poll_s=0.3,
        build_grace_s=0.5,
        method="direct",
        results_dir=tmp_path / "results",
    )
    evidence = up(options)
    records = {r["backend"]: r for r in evidence.data["records"]}
    assert {n: (r["outcome"], r["region"], r["stack"]) for n, r in records.items()} == {
        "trn1": ("ready", "us-east-2", "InferenceNeuronStack"),
        "inf2": ("ready", "us-west-2", "InferenceNeuronStack-inf2"),
    }, json.dumps(evidence.data["notices"])
    # trn1 was deployed once and never moved; inf2 tried its own regions in its own order.
    assert [a["region"] for a in records["trn1"]["attempts"]] == ["us-east-2"]
    assert [a["region"] for a in records["inf2"]["attempts"]] == ["us-east-2", "us-east-1", "us-west-2"]
    assert [a["outcome"] for a in records["inf2"]["attempts"]][:2] == ["no-capacity", "no-capacity"]
    assert read_placements() == {"InferenceNeuronStack": "us-east-2", "InferenceNeuronStack-inf2": "us-west-2"}
    # trn1's server is the one that came up first (not replaced), its image and the region's store (its
    # weights and compiled graphs, no stack's) stay, and nothing of inf2 is left in the two regions that refused it.
    assert records["trn1"]["instance_id"] in {i["InstanceId"] for i in running_instances("us-east-2")}
    ecr = aws("ecr", "us-east-2")
    assert {r["repositoryName"] for r in ecr.describe_repositories()["repositories"]} >= {"inference-survey/neuron"}
    emulator.builds.wait()
    assert aws("s3", "us-east-2").head_bucket(Bucket="inference-survey-123456789012-us-east-2")
    for region in ("us-east-2", "us-east-1"):
        assert not [i for i in leftovers().get(region, []) if "inf2" in i.lower()], leftovers()
    assert {row["backend"]: row["region"] for row in evidence.data["billing"]} == {
        "trn1": "us-east-2",
        "inf2": "us-west-2",
    }
    # The runner finds each where it serves; a later runner.up brings up the stack with its satellite.
    assert {b.name: b.region for b in read_stack_outputs().backends} == {"trn1": "us-east-2", "inf2": "us-west-2"}

    destroy(emulator.scratch)
    assert leftovers() == {}


def test_a_deploy_refused_for_quota_moves_the_stack_to_its_next_region(emulator, tmp_path):
    """Not a launch timeout: the deploy itself fails (SageMaker refuses the endpoint at a zero
    quota, the stack rolls back), so runner.up removes the rolled-back stack and deploys the next
    region of the stack's list."""
    emulator.reset()
    bootstrap(emulator.scratch)
    emulator.refuse_endpoint_quota("us-east-2")
    evidence = up(
        UpOptions(
            stacks=["InferenceSageMakerStack"],
            context=CONTEXT,
            launch_timeout_s=3.0,
            ready_timeout_s=60.0,
            poll_s=0.3,
            method="direct",
            results_dir=tmp_path / "results",
        )
    )
    (record,) = evidence.data["records"]
    assert (record["backend"], record["outcome"], record["region"]) == ("sagemaker", "ready", "us-east-1")
    first, second = record["attempts"]
    assert (first["region"], first["outcome"], second["region"]) == ("us-east-2", "no-capacity", "us-east-1")
    assert "ResourceLimitExceeded" in first["deploy_error"]
    assert read_placements() == {"InferenceSageMakerStack": "us-east-1"}
    # The rolled-back stack was deleted: nothing of the app is left in us-east-2.
    assert "us-east-2" not in leftovers()
    destroy(emulator.scratch)
    assert leftovers() == {}


ENDPOINT_TEMPLATE = {
    "Resources": {
        "Model": {
            "Type": "AWS::SageMaker::Model",
            "Properties": {
                "ExecutionRoleArn": "arn:aws:iam::123456789012:role/inference-sagemaker",
                "PrimaryContainer": {"Image": "123456789012.dkr.ecr.us-east-2.amazonaws.com/vllm:v1"},
            },
        },
        "Config": {
            "Type": "AWS::SageMaker::EndpointConfig",
            "Properties": {
                "ProductionVariants": [
                    {
                        "ModelName": {"Fn::GetAtt": ["Model", "ModelName"]},
                        "VariantName": "AllTraffic",
                        "InitialInstanceCount": 1,
                        "InstanceType": "ml.g6.xlarge",
                    }
                ]
            },
        },
        "Endpoint": {
            "Type": "AWS::SageMaker::Endpoint",
            "Properties": {"EndpointConfigName": {"Fn::GetAtt": ["Config", "EndpointConfigName"]}},
        },
    }
}


def test_a_stack_rolled_back_for_quota_lists_its_resources_without_making_them_again(emulator):
    """moto makes a stack's resources on first look: asked for a rolled-back stack's resources or
    outputs (the CDK CLI asks after a failed deploy), it made the deleted model and configuration
    again and answered the endpoint's refusal as a CloudFormation error, which CloudFormation has
    none of. tests/aws_emulator/sagemaker.py empties the stack's resources and outputs when it
    rolls back."""
    emulator.reset()
    emulator.refuse_endpoint_quota("us-east-2")
    cloudformation = aws("cloudformation", "us-east-2")
    template = ENDPOINT_TEMPLATE | {"Outputs": {"Name": {"Value": {"Fn::GetAtt": ["Endpoint", "EndpointName"]}}}}
    cloudformation.create_stack(StackName="InferenceQuotaProbe", TemplateBody=json.dumps(template))
    (stack,) = cloudformation.describe_stacks(StackName="InferenceQuotaProbe")["Stacks"]
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE" and "Outputs" not in stack
    failed = [
        e for e in cloudformation.describe_stack_events(StackName="InferenceQuotaProbe")["StackEvents"]
        if e["ResourceStatus"] == "CREATE_FAILED"
    ]  # fmt: skip
    assert [e["LogicalResourceId"] for e in failed] == ["Endpoint"]
    assert "Error Code: ResourceLimitExceeded" in failed[0]["ResourceStatusReason"]
    assert cloudformation.describe_stack_resources(StackName="InferenceQuotaProbe")["StackResources"] == []
    assert cloudformation.list_stack_resources(StackName="InferenceQuotaProbe")["StackResourceSummaries"] == []
    sagemaker = aws("sagemaker", "us-east-2")
    assert sagemaker.list_models()["Models"] == [] and sagemaker.list_endpoint_configs()["EndpointConfigs"] == []
    cloudformation.delete_stack(StackName="InferenceQuotaProbe")
    assert leftovers() == {}


def test_each_region_holds_the_images_its_ami_parameters_name(emulator):
    emulator.reset()
    for region in REGIONS:
        images = {image["ImageId"] for image in aws("ec2", region).describe_images(Owners=["amazon"])["Images"]}
        named = {aws("ssm", region).get_parameter(Name=p)["Parameter"]["Value"] for p in AMI_PARAMETERS}
        assert named <= images, region


def test_a_launch_refused_for_what_it_asks_fails_at_once_without_walking_zones_or_regions(emulator, tmp_path):
    """Not capacity: EC2 refuses the launch for what it asks, in every zone alike (here the words
    RunInstances gives an instance profile the caller may not pass). Another zone or region would
    refuse it the same, so runner.up fails the server at once, with EC2's words, and leaves its
    group at zero, where a capacity refusal waits --launch-timeout and moves on."""
    emulator.reset()
    bootstrap(emulator.scratch)
    reason = "Value (inference-g6) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name"
    # With g6 alone, the GPU stack follows g6's own list: us-east-2 first.
    emulator.refuse_launches("us-east-2", reason)
    options = UpOptions(
        stacks=["InferenceGpuStack"],
        context=CONTEXT | {"backends": "g6"},
        launch_timeout_s=120.0,
        ready_timeout_s=120.0,
        poll_s=0.3,
        method="direct",
        results_dir=tmp_path / "results",
    )
    started = time.monotonic()
    evidence = up(options)
    took = time.monotonic() - started
    (record,) = evidence.data["records"]
    assert (record["backend"], record["outcome"]) == ("g6", "failed"), record
    assert record["reason"].startswith("EC2 refused the launch for what it asks, in every zone alike: " + reason)
    assert [a["region"] for a in record["attempts"]] == ["us-east-2"]  # no failover
    # The deploy and one look, well inside the launch timeout it would otherwise have waited.
    assert took < options.launch_timeout_s - 10
    (server_group,) = aws("autoscaling", "us-east-2").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert server_group["DesiredCapacity"] == 0
    destroy(emulator.scratch, {"backends": "g6"})


def test_the_emulator_refuses_user_data_past_ec2s_16384_bytes_and_launches_it_at_the_limit(emulator):
    """The stand-in's own limit, against the case past it: what RunInstances refuses (EC2 User
    Guide, "Work with instance user data": 16 KB before base64) launches nothing here either."""
    import base64

    emulator.reset()
    ec2, autoscaling = aws("ec2", "us-east-2"), aws("autoscaling", "us-east-2")
    image = ec2.describe_images()["Images"][0]["ImageId"]
    launched = {}
    for size in (16_384, 16_385):
        name = f"user-data-{size}"
        data = base64.b64encode(b"#!/bin/bash\n" + b"#" * (size - 12)).decode()
        ec2.create_launch_template(
            LaunchTemplateName=name,
            LaunchTemplateData={"ImageId": image, "InstanceType": "t3.micro", "UserData": data},
        )
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=name,
            LaunchTemplate={"LaunchTemplateName": name, "Version": "$Latest"},
            MinSize=0,
            MaxSize=1,
            DesiredCapacity=1,
            AvailabilityZones=["us-east-2a"],
        )
        (described,) = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
        activities = autoscaling.describe_scaling_activities(AutoScalingGroupName=name)["Activities"]
        launched[size] = (len(described["Instances"]), [a["StatusMessage"] for a in activities])
        autoscaling.delete_auto_scaling_group(AutoScalingGroupName=name, ForceDelete=True)
    assert launched[16_384] == (1, [])
    assert launched[16_385] == (0, ["User data is limited to 16384 bytes. Launching EC2 instance failed."])
