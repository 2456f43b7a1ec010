"""SageMaker gaps of moto 5.

Endpoints by name: moto's CloudFormation gives an AWS::SageMaker::Endpoint a generated name
whatever the template's EndpointName says; AWS uses the given name (the app's is
`inference-sagemaker`, which the runner describes and, after the time-to-live, recreates).

Endpoint quotas: moto has none. `Emulator.refuse_endpoint_quota(region)` makes CreateEndpoint
there fail as an account at its `<type> for endpoint usage` quota does: error code
`ResourceLimitExceeded`, with SageMaker's wording of the account-level service limit. Inside a
stack, CloudFormation then fails the resource (CREATE_FAILED with that message, as the service
error CloudFormation reports for a non-registry resource), rolls the stack back and leaves it in
ROLLBACK_COMPLETE, where moto would instead fail the CreateStack call itself.

Endpoint config instance types: moto accepts a fixed list that lacks the app's families (no
ml.g5, ml.g6, ml.g6e, ml.inf2, ml.trn1; tests that deploy through CloudFormation passed
`sagemaker.instanceType=ml.g4dn.xlarge` for it); AWS accepts them, and so does the emulator now.
Serving those endpoints (and serverless, asynchronous and transform jobs) is `sagemaker_runtime`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from moto.sagemaker.exceptions import SagemakerClientError

# The app's SageMaker instance families AWS offers and moto's list lacks.
APP_INSTANCE_PREFIXES = ("ml.g5.", "ml.g6.", "ml.g6e.", "ml.inf2.", "ml.trn1.")


class EndpointQuotaRefused(SagemakerClientError):
    code = "ResourceLimitExceeded"

    def __init__(self, instance_type: str) -> None:
        super().__init__(
            f"The account-level service limit '{instance_type} for endpoint usage' is 0 Instances, with current "
            "utilization of 0 Instances and a request delta of 1 Instances. Please use AWS Service Quotas to "
            "request an increase for this quota.",
        )


def install(emulator: Any) -> Callable[[], None]:
    from moto.cloudformation import parsing
    from moto.cloudformation.models import Event, Stack
    from moto.cloudformation.parsing import OutputMap
    from moto.sagemaker.models import FakeEndpoint, FakeEndpointConfig, SageMakerModelBackend

    original_name_type = FakeEndpoint.__dict__["cloudformation_name_type"]
    FakeEndpoint.cloudformation_name_type = staticmethod(lambda: "EndpointName")
    parsing.get_name_type_map.cache_clear()

    original_create_endpoint = SageMakerModelBackend.create_endpoint

    def create_endpoint(backend, endpoint_name: str, endpoint_config_name: str, tags: list[dict[str, str]]):
        if backend.region_name in emulator.endpoint_quota_refused:
            config = backend.describe_endpoint_config(endpoint_config_name)
            raise EndpointQuotaRefused(config["ProductionVariants"][0].get("InstanceType", "ml.g6.xlarge"))
        return original_create_endpoint(backend, endpoint_name, endpoint_config_name, tags)

    SageMakerModelBackend.create_endpoint = create_endpoint

    original_create_resources = Stack.create_resources

    def create_resources(stack) -> None:
        try:
            original_create_resources(stack)
        except EndpointQuotaRefused as refusal:
            reason = (
                f"{refusal.message} (Service: AmazonSageMaker; Status Code: 400; Error Code: ResourceLimitExceeded)"
            )
            stack.events.append(
                Event(
                    stack.stack_id,
                    stack.name,
                    "Endpoint",
                    "",
                    "AWS::SageMaker::Endpoint",
                    "CREATE_FAILED",
                    reason,
                    None,
                )
            )
            stack._add_stack_event(
                "ROLLBACK_IN_PROGRESS",
                "The following resource(s) failed to create: [Endpoint]. Rollback requested by user.",
            )
            with contextlib.suppress(Exception):
                stack.resource_map.delete()
            # Rolled back, its resources are gone and it has no outputs (DescribeStacks lists none
            # for a stack that never completed). moto makes a stack's resources on first look: a
            # later DescribeStackResources or DescribeStacks (the CDK CLI's, after the failed
            # deploy) would make the deleted ones again and answer the endpoint's refusal as a
            # CloudFormation error.
            stack.resource_map._resource_json_map = {}
            stack.output_map = OutputMap(stack.resource_map, {}, stack.stack_id)
            stack.status = "ROLLBACK_COMPLETE"
            stack._add_stack_event("ROLLBACK_COMPLETE")

    Stack.create_resources = create_resources

    original_validate_instance_type = FakeEndpointConfig.validate_instance_type

    def validate_instance_type(config, instance_type: str) -> None:
        if not instance_type.startswith(APP_INSTANCE_PREFIXES):
            original_validate_instance_type(config, instance_type)

    FakeEndpointConfig.validate_instance_type = validate_instance_type

    def undo() -> None:
        FakeEndpoint.cloudformation_name_type = original_name_type
        parsing.get_name_type_map.cache_clear()
        SageMakerModelBackend.create_endpoint = original_create_endpoint
        Stack.create_resources = original_create_resources
        FakeEndpointConfig.validate_instance_type = original_validate_instance_type

    return undo
