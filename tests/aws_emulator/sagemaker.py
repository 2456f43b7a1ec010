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
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from moto.sagemaker.exceptions import SagemakerClientError


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
    from moto.sagemaker.models import FakeEndpoint, SageMakerModelBackend

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
            stack.status = "ROLLBACK_COMPLETE"
            stack._add_stack_event("ROLLBACK_COMPLETE")

    Stack.create_resources = create_resources

    def undo() -> None:
        FakeEndpoint.cloudformation_name_type = original_name_type
        parsing.get_name_type_map.cache_clear()
        SageMakerModelBackend.create_endpoint = original_create_endpoint
        Stack.create_resources = original_create_resources

    return undo
