"""Three CloudFormation gaps of moto 5.

Stack updates that keep a parameter: the CDK CLI sends `UsePreviousValue` for a parameter the
stack had (BootstrapVersion, the AMI parameters), and moto answers HTTP 500 (KeyError) when the
stack was created with that parameter's default, not an explicit value. CloudFormation keeps the
previous value, the default here: moto resolves it again from the template.

Stack deletion: moto's `AWS::EC2::RouteTable` has no delete, so a deleted stack left its route
tables (and their subnet associations) behind, its VPC could never be deleted ("has dependencies"),
and `cdk destroy` failed until moto dropped the stack record while keeping what it had not
deleted. CloudFormation deletes the associations and the table with the stack; here too.

Deleting a change set that does not exist: the CDK CLI removes its change set by name before it
makes one for a stack that exists ("Removing existing change set with name … if it exists", with
no check first: CloudFormation answers a name it does not hold without an error); moto answers
HTTP 500 (UnboundLocalError). Here it does nothing, as CloudFormation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def install(emulator: Any) -> Callable[[], None]:
    from moto.cloudformation.models import CloudFormationBackend

    original = CloudFormationBackend._resolve_update_parameters

    def resolve(backend, instance, incoming_params):
        known = [
            p for p in incoming_params if not p.get("UsePreviousValue") or p["ParameterKey"] in instance.parameters
        ]
        return original(backend, instance, known)

    CloudFormationBackend._resolve_update_parameters = resolve
    original_delete_change_set = CloudFormationBackend.delete_change_set

    def delete_change_set(backend, change_set_name: str) -> None:
        held = change_set_name in backend.change_sets or any(
            c.change_set_name == change_set_name for c in backend.change_sets.values()
        )
        if held:
            original_delete_change_set(backend, change_set_name)

    CloudFormationBackend.delete_change_set = delete_change_set

    from moto.ec2.models import ec2_backends
    from moto.ec2.models.route_tables import RouteTable

    def delete_route_table(table, account_id: str, region_name: str) -> None:
        table._associations.clear()  # the stack's SubnetRouteTableAssociations go with it
        ec2_backends[account_id][region_name].delete_route_table(table.id)

    RouteTable.delete = delete_route_table

    def undo() -> None:
        CloudFormationBackend._resolve_update_parameters = original
        CloudFormationBackend.delete_change_set = original_delete_change_set
        del RouteTable.delete

    return undo
