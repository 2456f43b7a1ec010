"""runner.up's watch of one server, against clients that answer as the AWS APIs do (shapes from
the Auto Scaling, SSM, ECR and EC2 references): held at zero is not a capacity refusal."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from catalog.contract import BackendOutput
from runner.cloud.bring_up.watch.common import FAILED, NO_CAPACITY, WatchOptions
from runner.cloud.bring_up.watch.server import ServerWatch

OUTPUT = BackendOutput(
    name="g5g",
    kind="ec2-vllm",
    region="us-east-1",
    model_id="google/gemma-4-E2B-it",
    port=8000,
    health_path="/health",
    auto_scaling_group="InferenceGpuStack-G5gGroup-1",
    readiness_parameter="/inference/g5g/ready",
    image="123456789012.dkr.ecr.us-east-1.amazonaws.com/inference-survey/vllm-sm75:0123456789abcdef",
    image_build_project="InferenceGpuStack-BuildVllmSm75Project-1",
    instance_type="g5g.2xlarge",
    ready_minutes=50,
)


class Account:
    """One region's answers: a group, its readiness, its repository (or none)."""

    def __init__(self, *, desired: int, readiness: dict[str, Any], repository: bool = True) -> None:
        self.desired = desired
        self.readiness = readiness
        self.repository = repository
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, service: str) -> Account:
        return self

    def describe_auto_scaling_groups(self, **kwargs):
        group = {"AutoScalingGroupName": OUTPUT.auto_scaling_group, "DesiredCapacity": self.desired, "Instances": []}
        return {"AutoScalingGroups": [group]}

    def describe_scaling_activities(self, **kwargs):
        return {"Activities": []}

    def get_parameter(self, **kwargs):
        return {"Parameter": {"Value": json.dumps(self.readiness)}}

    def describe_images(self, **kwargs):
        code = "ImageNotFoundException" if self.repository else "RepositoryNotFoundException"
        raise ClientError({"Error": {"Code": code, "Message": "not found"}}, "DescribeImages")

    def set_desired_capacity(self, **kwargs):
        self.calls.append(("set_desired_capacity", kwargs))
        self.desired = kwargs["DesiredCapacity"]


def watch(account: Account, **options) -> tuple[ServerWatch, dict[str, Any]]:
    record: dict[str, Any] = {}
    return ServerWatch(OUTPUT, record, account, WatchOptions(**options), lambda line: None), record


def test_a_repository_the_apps_build_has_not_made_yet_is_an_image_being_built_not_a_failure():
    """The build makes the kept repository on first use: none yet means the image is not built yet."""
    account = Account(desired=0, readiness={"state": "waiting-for-image"}, repository=False)
    server, record = watch(account, build_grace_s=3600)
    assert server.step() is None
    assert record["image_state"] == "no-repository" and "outcome" not in record
    assert server.waiting_for_image and account.calls == []  # held at zero, never brought to one


def test_a_repository_that_does_not_exist_for_an_image_the_app_does_not_build_is_one_line():
    from dataclasses import replace

    account = Account(desired=0, readiness={"state": "launching"}, repository=False)
    record: dict[str, Any] = {}
    server = ServerWatch(replace(OUTPUT, image_build_project=None), record, account, WatchOptions(), lambda line: None)
    assert server.step() == FAILED
    assert record["reason"] == (f"the image repository of {OUTPUT.image} does not exist in us-east-1")
    assert account.calls == []  # never brought to one instance


def test_a_group_held_at_zero_by_its_time_to_live_is_brought_back_not_failed_over():
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    account = Account(desired=0, readiness={"state": "ready", "instance_id": "i-old", "at": at})
    account.describe_images = lambda **kwargs: {"imageDetails": [{}]}  # its image is there
    server, record = watch(account, launch_timeout_s=0.0)
    assert server.step() is None
    assert account.calls == [
        ("set_desired_capacity", {"AutoScalingGroupName": OUTPUT.auto_scaling_group, "DesiredCapacity": 1})
    ]
    assert record["held_at_zero"] == "ready"
    # Now it wants an instance and gets none within the (zero) bound: that is no capacity.
    assert server.step() == NO_CAPACITY


def test_watching_without_a_deploy_never_brings_a_server_back_past_its_time_to_live():
    from dataclasses import replace

    account = Account(desired=0, readiness={"state": "waiting-for-image"})
    account.describe_images = lambda **kwargs: {"imageDetails": [{}]}  # its image is there
    record: dict[str, Any] = {}
    past = replace(OUTPUT, expires_at="2026-01-01T00:00:00Z")
    server = ServerWatch(past, record, account, WatchOptions(start_builds=False), lambda line: None)
    assert server.step() == "stopped"
    assert "time-to-live (2026-01-01T00:00:00Z) has passed" in record["reason"]
    assert account.calls == []  # left at zero


def test_watching_without_a_deploy_takes_a_finished_failed_build_as_the_answer_and_starts_none():
    """The survey's late round must not start again an hour-long build that already failed."""
    account = Account(desired=0, readiness={"state": "waiting-for-image"})
    started: list[dict] = []
    old = datetime(2026, 1, 1, tzinfo=UTC)
    account.list_builds_for_project = lambda **kwargs: {"ids": ["b1"]}
    account.batch_get_builds = lambda **kwargs: {
        "builds": [{"id": "b1", "buildStatus": "FAILED", "startTime": old, "logs": {}}]
    }
    account.start_build = lambda **kwargs: started.append(kwargs)
    record: dict[str, Any] = {}
    server = ServerWatch(OUTPUT, record, account, WatchOptions(start_builds=False, build_grace_s=0), lambda line: None)
    assert server.step() is None  # held at zero: waiting for its image
    assert server.step() == FAILED
    assert record["reason"].startswith("image build b1 failed")
    assert started == [] and account.calls == []


class Running(Account):
    """A group with its instance up, launched at `launched`, and its readiness."""

    def __init__(self, launched: datetime, readiness: dict[str, Any]) -> None:
        super().__init__(desired=1, readiness=readiness)
        self.launched = launched

    def describe_auto_scaling_groups(self, **kwargs):
        instance = {"InstanceId": "i-0abc", "AvailabilityZone": "us-east-1a", "LifecycleState": "InService"}
        group = {"AutoScalingGroupName": OUTPUT.auto_scaling_group, "DesiredCapacity": 1, "Instances": [instance]}
        return {"AutoScalingGroups": [group]}

    def describe_instances(self, **kwargs):
        return {"Reservations": [{"Instances": [{"InstanceId": "i-0abc", "LaunchTime": self.launched}]}]}


def test_ready_is_when_the_server_first_answered_not_when_its_report_came_after_keeping_the_graphs():
    from dataclasses import replace

    launched = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)
    answered = launched.timestamp() + 1500  # 25 min: a first compile
    readiness = {
        "state": "ready",
        "instance_id": "i-0abc",
        "zone": "us-east-1a",
        # The report itself, 90 s later: the compiled graphs were uploaded between.
        "at": datetime.fromtimestamp(answered + 90, UTC).isoformat(),
        "phases": [["running", launched.timestamp() + 40], ["answer", answered]],
    }
    server = ServerWatch(
        replace(OUTPUT, image_build_project=None), {}, Running(launched, readiness), WatchOptions(), lambda line: None
    )
    assert server.step() == "ready"
    assert server.record["ready_at"] == datetime.fromtimestamp(answered, UTC).isoformat(timespec="seconds")
    assert server.record["launch_to_ready_min"] == 25.0
