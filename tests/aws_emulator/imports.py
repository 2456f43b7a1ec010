"""CloudFormation's import of existing resources, which moto does not have.

A change set made with `ImportExistingResources` (what `cdk deploy --import-existing-resources`
sends) takes into the stack each resource of its template that already exists under the static
name the template gives it and whose DeletionPolicy is Retain (or RetainExceptOnCreate), instead
of failing to create it (CloudFormation User Guide, "Import AWS resources into a CloudFormation
stack automatically": static custom names only; the DeletionPolicy must be Retain or
RetainExceptOnCreate; a resource another stack holds is not imported). Here that is done for the
two kinds the app retains, S3 buckets and ECR repositories: moto creates them otherwise, and
refuses one that exists ("BucketAlreadyExists", "RepositoryAlreadyExistsException") as AWS
does. A change set made without it, or a direct deploy, still fails on an existing one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

RETAINED = ("Retain", "RetainExceptOnCreate")


def install(emulator: Any) -> Callable[[], None]:
    from moto.cloudformation.models import CloudFormationBackend
    from moto.cloudformation.responses import CloudFormationResponse
    from moto.ecr.models import Repository, ecr_backends
    from moto.s3.models import FakeBucket, s3_backends

    importing: set[str] = set()
    executing = threading.local()
    original_create_change_set = CloudFormationResponse.create_change_set
    original_execute = CloudFormationBackend.execute_change_set
    original_bucket = FakeBucket.__dict__["create_from_cloudformation_json"]
    original_repository = Repository.__dict__["create_from_cloudformation_json"]

    def create_change_set(response):
        name = response._get_param("StackName")
        if response._get_bool_param("ImportExistingResources", False):
            importing.add(name)
        else:
            importing.discard(name)
        return original_create_change_set(response)

    def execute_change_set(backend, change_set_name, stack_name=None):
        change_set = backend.change_sets.get(change_set_name) or next(
            (c for c in backend.change_sets.values() if c.change_set_name == change_set_name), None
        )
        stack = backend.stacks.get(change_set.stack_id) if change_set is not None else None
        executing.imports = stack is not None and stack.name in importing
        try:
            return original_execute(backend, change_set_name, stack_name)
        finally:
            executing.imports = False

    def adopts(cloudformation_json: dict[str, Any]) -> bool:
        return bool(getattr(executing, "imports", False)) and cloudformation_json.get("DeletionPolicy") in RETAINED

    def bucket(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        from moto.utilities.utils import get_partition

        backend = s3_backends[account_id][get_partition(region_name)]
        if adopts(cloudformation_json) and resource_name in backend.buckets:
            return backend.buckets[resource_name]
        return original_bucket.__func__(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)

    def repository(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        backend = ecr_backends[account_id][region_name]
        if adopts(cloudformation_json) and resource_name in backend.repositories:
            return backend.repositories[resource_name]
        return original_repository.__func__(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)

    CloudFormationResponse.create_change_set = create_change_set
    CloudFormationBackend.execute_change_set = execute_change_set
    FakeBucket.create_from_cloudformation_json = classmethod(bucket)
    Repository.create_from_cloudformation_json = classmethod(repository)

    def undo() -> None:
        CloudFormationResponse.create_change_set = original_create_change_set
        CloudFormationBackend.execute_change_set = original_execute
        FakeBucket.create_from_cloudformation_json = original_bucket
        Repository.create_from_cloudformation_json = original_repository

    return undo
