"""What AWS starts on its own, which moto stores but never starts:

- CloudFormation sends "CloudFormation Stack Status Change" events to the default event bus; moto
  sends none. `fire_stack_deployed(region, stack)` builds the event AWS documents (source
  aws.cloudformation, the stack's id in `resources` and `detail.stack-id`, `status-details.status`)
  and delivers it to every rule whose pattern moto's own matcher says it matches: a CodeBuild
  target starts its project, as EventBridge would (StartBuild); a refused start is EventBridge's
  FailedInvocations metric, nothing the stack or the runner sees (kept in
  `emulator.failed_invocations`).
- moto's CloudFormation does not create AWS::Scheduler::Schedule at all. `fire_schedules(region,
  stack)` reads the schedules from the stack's deployed template and does what their target says
  (the universal targets for SageMaker DeleteEndpoint and UpdateInferenceComponentRuntimeConfig,
  CloudWatch DisableAlarmActions and Auto Scaling UpdateAutoScalingGroup,
  with their Input, its Refs resolved to the stack's resources), as Scheduler would at their time.
  A schedule stays after it fires (CloudFormation's AWS::Scheduler::Schedule has no
  ActionAfterCompletion; the API's default is NONE), so firing it again does the same again.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from tests.aws_emulator.account import ACCOUNT

DELETE_ENDPOINT = "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint"
UPDATE_GROUP = "arn:aws:scheduler:::aws-sdk:autoscaling:updateAutoScalingGroup"
UPDATE_COMPONENT = "arn:aws:scheduler:::aws-sdk:sagemaker:updateInferenceComponentRuntimeConfig"
DISABLE_ALARM = "arn:aws:scheduler:::aws-sdk:cloudwatch:disableAlarmActions"


def deployed_stack(region: str, name: str) -> Any:
    from moto.cloudformation.models import cloudformation_backends

    backend = cloudformation_backends[ACCOUNT][region]
    stacks = [s for s in backend.stacks.values() if s.name == name and s.status != "DELETE_COMPLETE"]
    if not stacks:
        raise AssertionError(f"stack {name} is not deployed in {region}")
    return stacks[-1]


def fire_stack_deployed(emulator: Any, region: str, stack: str, status: str = "CREATE_COMPLETE") -> list[str]:
    """Deliver the stack's status-change event; returns the ids of the builds it started."""
    from moto.events.models import events_backends

    stack_id = deployed_stack(region, stack).stack_id
    event = {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "CloudFormation Stack Status Change",
        "source": "aws.cloudformation",
        "account": ACCOUNT,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [stack_id],
        "detail": {
            "stack-id": stack_id,
            "status-details": {"status": status, "status-reason": ""},
            "client-request-token": "",
        },
    }
    started = []
    for bus in events_backends[ACCOUNT][region].event_buses.values():
        for rule in bus.rules.values():
            if rule.state != "ENABLED" or not rule.event_pattern.matches_event(event):
                continue
            for target in rule.targets:
                if ":codebuild:" in target["Arn"] and ":project/" in target["Arn"]:
                    project = target["Arn"].rsplit("/", 1)[1]
                    try:
                        started.append(emulator.builds.start(region, project, {}).id)
                    except Exception as error:  # EventBridge drops a refused target call, unseen
                        emulator.failed_invocations.append((region, project, str(error)))
    return started


def resolved(stack: Any, value: Any) -> Any:
    """A template value as CloudFormation resolved it in this stack (Refs, Joins)."""
    if isinstance(value, dict) and list(value) == ["Ref"]:
        name = value["Ref"]
        if name == "AWS::Partition":
            return "aws"
        return stack.resource_map[name].physical_resource_id
    if isinstance(value, dict) and list(value) == ["Fn::Join"]:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolved(stack, part)) for part in parts)
    return value


def fire_schedules(emulator: Any, region: str, stack: str) -> list[str]:
    """Run every Scheduler schedule of the stack's template; returns what each did."""
    from moto.autoscaling.models import autoscaling_backends
    from moto.cloudwatch.models import cloudwatch_backends
    from moto.sagemaker.models import sagemaker_backends

    deployed = deployed_stack(region, stack)
    done = []
    for logical_id, resource in deployed.template_dict.get("Resources", {}).items():
        if resource["Type"] != "AWS::Scheduler::Schedule":
            continue
        target = resource["Properties"]["Target"]
        arn = resolved(deployed, target["Arn"])
        request = json.loads(resolved(deployed, target["Input"]))
        if arn == DELETE_ENDPOINT:
            sagemaker_backends[ACCOUNT][region].delete_endpoint(request["EndpointName"])
            done.append(f"{logical_id}: deleted endpoint {request['EndpointName']}")
        elif arn == UPDATE_COMPONENT:
            name, copies = request["InferenceComponentName"], request["DesiredRuntimeConfig"]["CopyCount"]
            emulator.inference_components.set_copies(sagemaker_backends[ACCOUNT][region], name, copies)
            done.append(f"{logical_id}: {name} to {copies} copies")
        elif arn == DISABLE_ALARM:
            cloudwatch_backends[ACCOUNT][region].disable_alarm_actions(request["AlarmNames"])
            done.append(f"{logical_id}: actions of {', '.join(request['AlarmNames'])} disabled")
        elif arn == UPDATE_GROUP:
            group = autoscaling_backends[ACCOUNT][region].autoscaling_groups[request["AutoScalingGroupName"]]
            if "MinSize" in request:
                group.min_size = request["MinSize"]
            group.set_desired_capacity(request["DesiredCapacity"])
            done.append(f"{logical_id}: {group.name} to {request['DesiredCapacity']}")
        else:
            fired = ", ".join((DELETE_ENDPOINT, UPDATE_COMPONENT, DISABLE_ALARM, UPDATE_GROUP))
            raise AssertionError(f"{logical_id}: the emulator fires {fired}, not {arn}")
    return done


def install(emulator: Any):
    return lambda: None
