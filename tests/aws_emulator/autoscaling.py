"""Auto Scaling as a stack update and a schedule leave it:

- a stack update that changes a group: moto deletes the group and creates a new one (new
  instances, the template's size). Here it is changed in place: a new launch template version
  replaces the instance (the rolling update), and the size is left as it is unless the template's
  own size properties changed (IgnoreUnmodifiedGroupSizeProperties, which the app sets);
- a scheduled action is not updated by moto's CloudFormation (its StartTime stays the first
  deploy's): here it is put again with the new properties, unless it no longer exists, which
  fails the update as AWS's handler does (the API's `ValidationError: Scheduled action name not
  found`, hashicorp/terraform-provider-aws#19446);
- moto's CloudFormation never deletes a scheduled action it created (the resource has no delete):
  here a removed one is deleted, and one already gone counts as deleted (CloudFormation's
  resource-handler contract: a delete that finds nothing is NotFound, and the stack goes on);
- moto never runs a scheduled action: `fire_scheduled_actions(region)` applies each one, as AWS
  does at its StartTime, when a test says that time has come, and then removes each one-time
  action, as AWS does (DescribeScheduledActions "describes the actions that have not run").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SIZE_PROPERTIES = ("MinSize", "MaxSize", "DesiredCapacity")


def fire_scheduled_actions(account: str, region: str) -> list[str]:
    from moto.autoscaling.models import autoscaling_backends

    backend = autoscaling_backends[account][region]
    fired = []
    for name, action in list(backend.scheduled_actions.items()):
        group = backend.autoscaling_groups.get(action.auto_scaling_group_name)
        if group is None:
            continue
        if action.min_size is not None:
            group.min_size = action.min_size
        if action.max_size is not None:
            group.max_size = action.max_size
        if action.desired_capacity is not None:
            group.set_desired_capacity(action.desired_capacity)
        fired.append(name)
        if not action.recurrence:
            del backend.scheduled_actions[name]  # a one-time action is gone once it has run
    return fired


def install(emulator: Any) -> Callable[[], None]:
    from moto.autoscaling.models import FakeAutoScalingGroup, FakeScheduledAction, autoscaling_backends

    original_group_update = FakeAutoScalingGroup.__dict__["update_from_cloudformation_json"]
    original_action_update = FakeScheduledAction.__dict__.get("update_from_cloudformation_json")
    templates: dict[str, dict[str, Any]] = {}
    original_create = FakeAutoScalingGroup.__dict__["create_from_cloudformation_json"]

    def create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        group = original_create.__func__(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        templates[group.name] = dict(cloudformation_json["Properties"])
        return group

    def update_group(cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name):
        group = original_resource
        new = cloudformation_json["Properties"]
        old = templates.get(group.name, {})
        changed = {key: new.get(key) for key in SIZE_PROPERTIES if new.get(key) != old.get(key)}
        version_before = group.launch_template_version
        group._set_launch_configuration(None, new.get("LaunchTemplate", {}), mixed_instances_policy=None)
        if "MinSize" in changed:
            group.min_size = int(new["MinSize"])
        if "MaxSize" in changed:
            group.max_size = int(new["MaxSize"])
        if changed.get("DesiredCapacity") is not None:
            group.set_desired_capacity(int(new["DesiredCapacity"]))
        if group.launch_template_version != version_before and group.instance_states:
            # The rolling update (MaxBatchSize 1, MinInstancesInService 0): replace the instance.
            desired = group.desired_capacity
            ids = [state.instance.id for state in group.instance_states]
            group.autoscaling_backend.ec2_backend.terminate_instances(ids)
            group.instance_states = []
            group.set_desired_capacity(desired)
        templates[group.name] = dict(new)
        return group

    def update_action(cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name):
        from moto.autoscaling.exceptions import ValidationError

        properties = cloudformation_json["Properties"]
        backend = autoscaling_backends[account_id][region_name]
        if original_resource.scheduled_action_name not in backend.scheduled_actions:
            raise ValidationError("Scheduled action name not found")
        return backend.put_scheduled_update_group_action(
            name=properties.get("AutoScalingGroupName"),
            desired_capacity=properties.get("DesiredCapacity"),
            max_size=properties.get("MaxSize"),
            min_size=properties.get("MinSize"),
            scheduled_action_name=original_resource.scheduled_action_name,
            start_time=properties.get("StartTime"),
            end_time=properties.get("EndTime"),
            recurrence=properties.get("Recurrence"),
            timezone=properties.get("TimeZone"),
        )

    def delete_action(action, account_id, region_name):
        autoscaling_backends[account_id][region_name].scheduled_actions.pop(action.scheduled_action_name, None)

    FakeAutoScalingGroup.create_from_cloudformation_json = classmethod(create)
    FakeAutoScalingGroup.update_from_cloudformation_json = classmethod(update_group)
    FakeScheduledAction.update_from_cloudformation_json = classmethod(update_action)
    FakeScheduledAction.delete = delete_action

    def undo() -> None:
        FakeAutoScalingGroup.create_from_cloudformation_json = original_create
        FakeAutoScalingGroup.update_from_cloudformation_json = original_group_update
        if original_action_update is None:
            del FakeScheduledAction.update_from_cloudformation_json
        else:
            FakeScheduledAction.update_from_cloudformation_json = original_action_update
        del FakeScheduledAction.delete

    return undo
