"""The moto emulator in server mode on loopback, prepared for the app's real CDK CLI cycle.

moto runs in this process (ThreadedMotoServer) so the tests can fill the gaps the real CLI
would trip on, each named here:
- the DLAMI and Neuron AMI parameters (`/aws/service/...`) are not preloaded and cannot be put
  through the API: they are appended to the SSM backend, pointing at moto's own AMIs;
- CloudFormation gives `AWS::SSM::Parameter` Tags as a map, moto expects a list;
- capacity: moto launches every instance asked for. `refuse_capacity(region)` makes Auto Scaling
  launch nothing there and answer DescribeScalingActivities with the failed activities a real
  account returns (moto's own answer is always empty);
- CodeBuild projects: moto's CloudFormation does not create AWS::CodeBuild::Project (its Ref
  comes back as "None"); a small model creates the project in moto's CodeBuild backend, whose
  StartBuild and BatchGetBuilds then answer (every build succeeds at once there);
- Session Manager: moto has no StartSession, TerminateSession, DescribeSessions or
  DescribeInstanceInformation. They are added with the real API's shapes: a running EC2 instance
  is `Online` unless `take_offline(instance_id)`, StartSession on anything else answers
  TargetNotConnected, and sessions are kept per region until terminated.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

ACCOUNT = "123456789012"
REGIONS = ("us-east-1", "us-east-2", "us-west-2")
AMI_PARAMETERS = {
    "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id": "x86_64",
    "/aws/service/deeplearning/ami/arm64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id": "arm64",
    "/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id": "x86_64",
}
MOTO_AMI_PARAMETERS = {
    "x86_64": "/aws/service/ami-amazon-linux-latest/amzn2-ami-hvm-x86_64-gp2",
    "arm64": "/aws/service/ami-amazon-linux-latest/amzn2-ami-hvm-arm64-gp2",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Emulator:
    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        # localhost, not 127.0.0.1: the CDK CLI builds template URLs from it.
        self.url = f"http://localhost:{self.port}"
        self.refused: dict[str, list[dict[str, Any]]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.offline: set[str] = set()
        self._undo: list[Any] = []

    def start(self) -> Emulator:
        self.server.start()
        self._patch_parameter_tags()
        self._patch_capacity()
        self._patch_sessions()
        register_codebuild_projects()
        self.reset()
        return self

    def reset(self) -> None:
        """Forget everything (moto keeps its state per process, across emulator instances)."""
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{self.url}/moto-api/reset", method="POST"), timeout=30).read()
        self.refused.clear()
        self.sessions.clear()
        self.offline.clear()
        self.seed_ami_parameters()

    def forget_volumes(self, volumes: set[tuple[str, str]]) -> None:
        """Drop (region, volume id) pairs from the emulator: what AWS deletes with a terminated
        instance, moto keeps attached to it and cannot detach."""
        from moto.ec2.models import ec2_backends

        for region, volume_id in volumes:
            ec2_backends[ACCOUNT][region].volumes.pop(volume_id, None)

    def take_offline(self, instance_id: str) -> None:
        self.offline.add(instance_id)

    def stop(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self.server.stop()

    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def seed_ami_parameters(self) -> None:
        from moto.ssm.models import Parameter, ssm_backends

        for region in REGIONS:
            backend = ssm_backends[ACCOUNT][region]
            for name, arch in AMI_PARAMETERS.items():
                image_id = backend.get_parameter(MOTO_AMI_PARAMETERS[arch]).value
                backend._parameters[name] = [
                    Parameter(
                        account_id=ACCOUNT,
                        name=name,
                        value=image_id,
                        parameter_type="String",
                        description=None,
                        allowed_pattern=None,
                        keyid=None,
                        last_modified_date=time.time(),
                        version=1,
                        data_type="text",
                    )
                ]

    def _patch_parameter_tags(self) -> None:
        from moto.ssm.models import Parameter

        original = Parameter.create_from_cloudformation_json.__func__

        def create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
            tags = cloudformation_json.get("Properties", {}).get("Tags")
            if isinstance(tags, dict):
                cloudformation_json["Properties"]["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
            return original(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)

        Parameter.create_from_cloudformation_json = classmethod(create)
        self._undo.append(lambda: setattr(Parameter, "create_from_cloudformation_json", classmethod(original)))

    def refuse_capacity(self, region: str) -> None:
        self.refused.setdefault(region, [])

    def _patch_capacity(self) -> None:
        from moto.autoscaling.models import FakeAutoScalingGroup
        from moto.autoscaling.responses import AutoScalingResponse
        from moto.core.responses import ActionResult

        emulator = self
        original_replace = FakeAutoScalingGroup.replace_autoscaling_group_instances
        original_describe = AutoScalingResponse.describe_scaling_activities

        def replace(group, count_needed, propagated_tags):
            if group.region in emulator.refused and count_needed > 0:
                for zone in group.availability_zones:
                    emulator.refused[group.region].append(
                        {
                            "ActivityId": str(uuid.uuid4()),
                            "AutoScalingGroupName": group.name,
                            "Cause": "At 2026-10-05T16:40:00Z an instance was started in response to a difference "
                            "between desired and actual capacity, increasing the capacity from 0 to 1.",
                            "Description": "Launching a new EC2 instance.  Status Reason: ",
                            "StartTime": datetime.now(UTC),
                            "EndTime": datetime.now(UTC),
                            "StatusCode": "Failed",
                            "StatusMessage": "We currently do not have sufficient "
                            f"{group.instance_type or 'requested'} capacity in the Availability Zone you requested "
                            f"({zone}). Our system will be working on provisioning additional capacity. Launching "
                            "EC2 instance failed.",
                            "Progress": 100,
                        }
                    )
                return None
            return original_replace(group, count_needed, propagated_tags)

        def describe(response):
            name = response._get_param("AutoScalingGroupName")
            activities = [a for a in emulator.refused.get(response.region, []) if a["AutoScalingGroupName"] == name]
            return ActionResult({"Activities": activities})

        FakeAutoScalingGroup.replace_autoscaling_group_instances = replace
        AutoScalingResponse.describe_scaling_activities = describe
        self._undo.append(
            lambda: setattr(FakeAutoScalingGroup, "replace_autoscaling_group_instances", original_replace)
        )
        self._undo.append(lambda: setattr(AutoScalingResponse, "describe_scaling_activities", original_describe))

    def _patch_sessions(self) -> None:
        from moto.core.exceptions import JsonRESTError
        from moto.core.responses import ActionResult
        from moto.ec2.models import ec2_backends
        from moto.ssm.responses import SimpleSystemManagerResponse

        emulator = self

        def running(response) -> dict[str, Any]:
            backend = ec2_backends[response.current_account][response.region]
            return {i.id: i for i in backend.all_instances() if i.state == "running"}

        def describe_instance_information(response):
            wanted = None
            for item in response._get_param("Filters") or []:
                if item.get("Key") == "InstanceIds":
                    wanted = set(item.get("Values", []))
            listed = []
            for instance_id, instance in running(response).items():
                if wanted is not None and instance_id not in wanted:
                    continue
                online = instance_id not in emulator.offline
                listed.append(
                    {
                        "InstanceId": instance_id,
                        "PingStatus": "Online" if online else "ConnectionLost",
                        "LastPingDateTime": datetime.now(UTC),
                        "AgentVersion": "3.3.1802.0",
                        "IsLatestVersion": True,
                        "PlatformType": "Linux",
                        "PlatformName": "Ubuntu",
                        "ResourceType": "EC2Instance",
                        "IPAddress": instance.private_ip,
                        "ComputerName": instance.private_dns_name
                        if hasattr(instance, "private_dns_name")
                        else instance.id,
                    }
                )
            return ActionResult({"InstanceInformationList": listed})

        def start_session(response):
            target = response._get_param("Target")
            if target not in running(response) or target in emulator.offline:
                raise JsonRESTError("TargetNotConnected", f"{target} is not connected.")
            session_id = f"botocore-session-{uuid.uuid4().hex[:17]}"
            emulator.sessions[session_id] = {
                "SessionId": session_id,
                "Target": target,
                "Status": "Connected",
                "StartDate": datetime.now(UTC),
                "Owner": f"arn:aws:sts::{ACCOUNT}:assumed-role/tests/botocore-session",
                "DocumentName": response._get_param("DocumentName"),
                "Region": response.region,
            }
            return ActionResult(
                {
                    "SessionId": session_id,
                    "TokenValue": uuid.uuid4().hex,
                    "StreamUrl": f"wss://ssmmessages.{response.region}.amazonaws.com/v1/data-channel/{session_id}"
                    "?role=publish_subscribe&cell-number=AAEAAQ",
                }
            )

        def terminate_session(response):
            session_id = response._get_param("SessionId")
            session = emulator.sessions.get(session_id)
            if session is not None and session["Status"] == "Connected":
                session["Status"] = "Terminated"
                session["EndDate"] = datetime.now(UTC)
            return ActionResult({"SessionId": session_id})

        def describe_sessions(response):
            active = response._get_param("State") == "Active"
            sessions = [
                {k: v for k, v in s.items() if k != "Region"}
                for s in emulator.sessions.values()
                if s["Region"] == response.region and (s["Status"] == "Connected") == active
            ]
            return ActionResult({"Sessions": sessions})

        added = {
            "describe_instance_information": describe_instance_information,
            "start_session": start_session,
            "terminate_session": terminate_session,
            "describe_sessions": describe_sessions,
        }
        for name, method in added.items():
            setattr(SimpleSystemManagerResponse, name, method)
        self._undo.append(lambda: [delattr(SimpleSystemManagerResponse, name) for name in added])


def register_codebuild_projects() -> None:
    """Teach moto's CloudFormation AWS::CodeBuild::Project (a subclass registers itself)."""
    from moto.cloudformation import parsing
    from moto.codebuild.models import codebuild_backends
    from moto.core.common_models import CloudFormationModel

    if "AWS::CodeBuild::Project" in parsing.get_model_map():
        return

    class CodeBuildProject(CloudFormationModel):
        def __init__(self, name: str, arn: str) -> None:
            self.name, self.arn = name, arn

        @staticmethod
        def cloudformation_name_type() -> str:
            return "Name"

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::CodeBuild::Project"

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Arn"

        @property
        def physical_resource_id(self) -> str:
            return self.name

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return self.arn

        @classmethod
        def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
            properties = cloudformation_json["Properties"]
            codebuild_backends[account_id][region_name].create_project(
                project_name=resource_name,
                description=properties.get("Description"),
                project_source=properties["Source"],
                artifacts=properties.get("Artifacts", {"Type": "NO_ARTIFACTS"}),
                environment=properties["Environment"],
                service_role=properties.get("ServiceRole", ""),
                tags=None,
                cache=None,
                timeout=properties.get("TimeoutInMinutes"),
                queued_timeout=None,
                source_version=None,
                logs_config=None,
                vpc_config=None,
            )
            return cls(resource_name, f"arn:aws:codebuild:{region_name}:{account_id}:project/{resource_name}")

        @classmethod
        def update_from_cloudformation_json(
            cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
        ):
            return original_resource

        @classmethod
        def delete_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name):
            codebuild_backends[account_id][region_name].delete_project(resource_name)

    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()


@contextmanager
def instance_agent(emulator: Emulator, regions: tuple[str, ...] = REGIONS) -> Iterator[list[str]]:
    """Stands in for the servers' boot scripts (moto runs no user data): once a group has an
    instance, write `ready` into the backend's readiness parameter, as inference-ready does."""
    import json

    import boto3

    stop = threading.Event()
    reported: list[str] = []

    def loop() -> None:
        from runner.outputs import read_stack_outputs

        while not stop.is_set():
            for region in regions:
                autoscaling = boto3.client("autoscaling", region_name=region, endpoint_url=emulator.url)
                ssm = boto3.client("ssm", region_name=region, endpoint_url=emulator.url)
                for output in read_stack_outputs(region).backends:
                    if not output.auto_scaling_group:
                        continue
                    groups = autoscaling.describe_auto_scaling_groups(
                        AutoScalingGroupNames=[output.auto_scaling_group]
                    )["AutoScalingGroups"]
                    if not groups or not groups[0]["Instances"]:
                        continue
                    instance = groups[0]["Instances"][0]
                    key = f"{region}/{instance['InstanceId']}"
                    if key in reported:
                        continue
                    ssm.put_parameter(
                        Name=output.readiness_parameter,
                        Type="String",
                        Overwrite=True,
                        Value=json.dumps(
                            {
                                "state": "ready",
                                "instance_id": instance["InstanceId"],
                                "zone": instance["AvailabilityZone"],
                                "model": output.model_id,
                                "at": datetime.now(UTC).isoformat(timespec="seconds"),
                            }
                        ),
                    )
                    reported.append(key)
            stop.wait(0.3)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield reported
    finally:
        stop.set()
        thread.join(timeout=5)
