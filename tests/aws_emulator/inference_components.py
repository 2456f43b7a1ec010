"""SageMaker inference components, which moto 5.2 does not implement (its SageMaker coverage lists
CreateInferenceComponent, DescribeInferenceComponent, UpdateInferenceComponent,
UpdateInferenceComponentRuntimeConfig, DeleteInferenceComponent and ListInferenceComponents as
unimplemented; its CloudFormation skips AWS::SageMaker::InferenceComponent; its Application Auto
Scaling refuses the `sagemaker:inference-component:DesiredCopyCount` dimension; and its endpoint
config check reads every variant's ModelName). Here, with the API's shapes (botocore's service
model serializes every answer):

- an endpoint config whose variant has an instance type and no model (the variant an endpoint of
  inference components has) is accepted; a RoutingStrategy outside the API's enum is refused as
  AWS's request validation refuses a value outside an enum (ValidationException, "1 validation
  error detected: Value 'X' at '...' failed to satisfy constraint: Member must satisfy enum value
  set: [...]": the wording of AWS's own constraint errors, which moto mirrors for its enums);
  PREFIX_AWARE without its PrefixAwareRoutingConfig is refused ("Required when RoutingStrategy is
  PREFIX_AWARE": API reference, PrefixAwareRoutingConfig);
- CreateInferenceComponent (API and CloudFormation) on an existing endpoint and variant; refused
  with ValidationException (HTTP 400, SageMaker's error for input that fails a constraint: API
  reference, Common Errors) for a variant that has a model (components go on a variant without
  one), a copy asking for more accelerators than the instance type has, and copies past what the
  variant's instances can hold (ManagedInstanceScaling's MaxInstanceCount × the type's
  accelerators; catalog/backends.py `accelerators`). The messages are the emulator's: only a real
  account gives AWS's wording;
- DescribeInferenceComponent (a missing one: ValidationException "Could not find inference
  component ...", as moto words a missing endpoint), UpdateInferenceComponent and
  UpdateInferenceComponentRuntimeConfig (the copies), DeleteInferenceComponent (Deleting for
  `emulator.component_deleting_s`, then gone), ListInferenceComponents (EndpointNameEquals,
  StatusEquals), and tags on the component's ARN (ListTags);
- a component is Creating for `emulator.component_settle_s` after it is made and Updating as long
  after a change of its copies (0 by default: at once InService), and DeleteInferenceComponent is
  refused meanwhile, by the API and by CloudFormation's delete alike: SageMaker refuses to delete a
  component "while it is in state CREATE_IN_PROGRESS" (its container starting) or
  "UPDATE_RC_IN_PROGRESS" (a scaling changing its copies), the refusal a public deploy tool's
  teardown waits out (the hf-cloud-sagemaker-production-defaults deploy notes, "Teardown order",
  whose teardown.py retries for 15 minutes). The message is that report's; the error code
  (ValidationException) the emulator's. Whether CloudFormation's own delete handler waits this out
  only a real account shows: here it refuses, the worse case;
- with `emulator.inference_components.refuse_updates_while_busy` set, UpdateInferenceComponent
  RuntimeConfig (and UpdateInferenceComponent's copies) is refused while the component is Creating
  or Updating (ValidationException, the emulator's words, after its delete refusal). AWS's answer
  there is UNCONFIRMED: the API reference lists no such error, and only a real account shows
  whether a change under way is refused, queued or replaced. Off by default; a test that checks a
  caller copes with the refusal sets it;
- the endpoint's instances follow the copies as managed instance scaling makes them follow:
  DescribeEndpoint's CurrentInstanceCount is what the copies need (at least the variant's
  MinInstanceCount), 0 at zero copies;
- DeleteEndpoint is refused while the endpoint hosts components (ValidationException): AWS's
  console deletes the components first, and an endpoint that still hosts one cannot be deleted
  (aws/amazon-sagemaker-feedback#49 and #143, where it could not until the components were gone);
  CloudFormation's deletion order (component, then the endpoint it references) is kept;
- Application Auto Scaling takes the DesiredCopyCount dimension on `inference-component/NAME`.

Serving the components (InvokeEndpoint and InvokeEndpointWithResponseStream with
InferenceComponentName, zero copies, scale from zero) is `sagemaker_runtime`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from catalog.backends import accelerators

# The API's RoutingStrategy enum (botocore's sagemaker service model, 1.44.8).
API_ROUTING_STRATEGIES = ["LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE", "KV_AWARE"]
COPY_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"


@dataclass
class Component:
    """One inference component, as SageMaker keeps it."""

    name: str
    arn: str
    endpoint_name: str
    endpoint_arn: str
    variant_name: str
    specification: dict[str, Any]
    desired_copies: int
    created: datetime
    modified: datetime
    status: str = "InService"
    current_copies: int = 0
    failure_reason: str | None = None
    tags: list[dict[str, str]] = field(default_factory=list)
    # A creation or a change of copies under way ("Creating", "Updating") until this monotonic time.
    busy: str = ""
    busy_until: float = 0.0

    def current_status(self) -> str:
        return self.busy if self.busy and time.monotonic() < self.busy_until else self.status

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "InferenceComponentName": self.name,
            "InferenceComponentArn": self.arn,
            "EndpointName": self.endpoint_name,
            "EndpointArn": self.endpoint_arn,
            "VariantName": self.variant_name,
            "Specification": self.specification,
            "RuntimeConfig": {"DesiredCopyCount": self.desired_copies, "CurrentCopyCount": self.current_copies},
            "CreationTime": self.created,
            "LastModifiedTime": self.modified,
            "InferenceComponentStatus": self.current_status(),
        }
        if self.failure_reason:
            described["FailureReason"] = self.failure_reason
        return described

    def summary(self) -> dict[str, Any]:
        return {
            key: self.describe()[key]
            for key in (
                "CreationTime",
                "InferenceComponentArn",
                "InferenceComponentName",
                "EndpointArn",
                "EndpointName",
                "VariantName",
                "InferenceComponentStatus",
                "LastModifiedTime",
            )
        }


def components(backend: Any) -> dict[str, Component]:
    """The components of one account and region (kept on moto's backend, so a reset forgets them)."""
    return backend.__dict__.setdefault("inference_components", {})


def validation(message: str) -> Exception:
    from moto.sagemaker.exceptions import ValidationError

    return ValidationError(message=message)


def check_routing(production_variants: list[dict[str, Any]]) -> None:
    for index, variant in enumerate(production_variants or [], start=1):
        routing = variant.get("RoutingConfig") or {}
        strategy = routing.get("RoutingStrategy")
        if strategy is not None and strategy not in API_ROUTING_STRATEGIES:
            raise validation(
                f"1 validation error detected: Value '{strategy}' at "
                f"'productionVariants.{index}.member.routingConfig.routingStrategy' failed to satisfy constraint: "
                f"Member must satisfy enum value set: [{', '.join(API_ROUTING_STRATEGIES)}]"
            )
        prefix = routing.get("PrefixAwareRoutingConfig") or {}
        if strategy == "PREFIX_AWARE" and not (prefix.get("PrefixLength") and prefix.get("ConcurrencyThreshold")):
            raise validation(
                f"ProductionVariant {variant.get('VariantName')}: RoutingStrategy PREFIX_AWARE requires "
                "PrefixAwareRoutingConfig with PrefixLength and ConcurrencyThreshold."
            )


def variant_of(backend: Any, endpoint: Any, variant_name: str | None) -> dict[str, Any]:
    config = backend.endpoint_configs.get(endpoint.endpoint_config_name)
    variants = config.production_variants if config else []
    for variant in variants:
        if variant_name in (None, variant["VariantName"]):
            return variant
    raise validation(f"Could not find variant {variant_name!r} on endpoint {endpoint.endpoint_name!r}.")


def copies_held(variant: dict[str, Any], per_copy: float) -> tuple[int, int]:
    """(accelerators of one instance, copies the variant's instances can hold at most)."""
    per_instance = accelerators(variant.get("InstanceType", "")) or 0
    scaling = variant.get("ManagedInstanceScaling") or {}
    most_instances = int(scaling.get("MaxInstanceCount") or variant.get("InitialInstanceCount") or 1)
    return per_instance, int(per_instance // per_copy) * most_instances if per_copy else 0


def instances_needed(variant: dict[str, Any], component: Component) -> int:
    """What managed instance scaling runs for the copies: at least MinInstanceCount, none at zero."""
    per_copy = float(
        (component.specification.get("ComputeResourceRequirements") or {}).get("NumberOfAcceleratorDevicesRequired", 1)
    )
    per_instance, _ = copies_held(variant, per_copy)
    copies_per_instance = max(1, int(per_instance // per_copy)) if per_copy else 1
    low = int((variant.get("ManagedInstanceScaling") or {}).get("MinInstanceCount") or 0)
    return max(low, math.ceil(component.current_copies / copies_per_instance))


class Components:
    """The operations, on moto's SageMaker backends."""

    def __init__(self, emulator: Any) -> None:
        self.emulator = emulator
        self.lock = threading.Lock()
        # Called with (component, copies) before a change of copies, which a hook may refuse
        # (tests/aws_emulator/component_fleet.py: the router in front of a fleet of servers).
        self.copy_hooks: dict[str, Callable[[str, int], None]] = {}
        # Told of every change of a component's copies (tests/aws_emulator/component_scaling.py:
        # the router's servers follow them).
        self.followers: list[Callable[[Component], None]] = []
        # Refuse a change of copies asked while one is under way (AWS's answer UNCONFIRMED).
        self.refuse_updates_while_busy = False

    @staticmethod
    def backend(account_id: str, region: str) -> Any:
        from moto.sagemaker.models import sagemaker_backends

        return sagemaker_backends[account_id][region]

    def create(self, backend: Any, params: dict[str, Any]) -> Component:
        from moto.core.utils import utcnow
        from moto.sagemaker.utils import arn_formatter

        name = params["InferenceComponentName"]
        endpoint = backend.endpoints.get(params["EndpointName"])
        if endpoint is None:
            arn = arn_formatter("endpoint", params["EndpointName"], backend.account_id, backend.region_name)
            raise validation(f"Could not find endpoint '{arn}'.")
        if name in components(backend):
            raise validation(f'Cannot create already existing inference component "{name}".')
        variant = variant_of(backend, endpoint, params.get("VariantName"))
        if variant.get("ModelName"):
            raise validation(
                f"Inference components cannot be hosted on variant {variant['VariantName']} of endpoint "
                f"{endpoint.endpoint_name}: it hosts model {variant['ModelName']}. Use an endpoint config whose "
                "variant names no model."
            )
        specification = params.get("Specification") or {}
        requirements = specification.get("ComputeResourceRequirements") or {}
        per_copy = float(requirements.get("NumberOfAcceleratorDevicesRequired") or 0)
        copies = int((params.get("RuntimeConfig") or {}).get("CopyCount", 1))
        per_instance, held = copies_held(variant, per_copy)
        if per_copy > per_instance:
            raise validation(
                f"NumberOfAcceleratorDevicesRequired {per_copy:g} exceeds the {per_instance} accelerator(s) of "
                f"{variant.get('InstanceType')}."
            )
        if per_copy and copies > held:
            raise validation(
                f"CopyCount {copies} needs {copies * per_copy:g} accelerators; variant {variant['VariantName']} holds "
                f"{held} cop{'y' if held == 1 else 'ies'} ({per_instance} per {variant.get('InstanceType')} × "
                "its MaxInstanceCount)."
            )
        now = utcnow()
        component = Component(
            name=name,
            arn=arn_formatter("inference-component", name, backend.account_id, backend.region_name),
            endpoint_name=endpoint.endpoint_name,
            endpoint_arn=endpoint.arn,
            variant_name=variant["VariantName"],
            specification=specification,
            desired_copies=copies,
            current_copies=copies,
            created=now,
            modified=now,
            tags=list(params.get("Tags") or []),
        )
        components(backend)[name] = component
        self.settle(component, "Creating")
        self.place(backend, component)
        return component

    def settle(self, component: Component, state: str) -> None:
        """`state` (Creating, Updating) for the emulator's settle time, InService after."""
        if self.emulator.component_settle_s:
            component.busy, component.busy_until = state, time.monotonic() + self.emulator.component_settle_s

    def refuse_update_while_busy(self, component: Component) -> None:
        """The refusal of a change of copies while one is under way, where a test asks for it."""
        state = {"Creating": "CREATE_IN_PROGRESS", "Updating": "UPDATE_RC_IN_PROGRESS"}.get(component.current_status())
        if self.refuse_updates_while_busy and state:
            raise validation(f"Cannot update inference component {component.arn} while it is in state {state}.")

    @staticmethod
    def refuse_while_busy(component: Component) -> None:
        """SageMaker's refusal to delete a component while it is created or its copies change."""
        state = {"Creating": "CREATE_IN_PROGRESS", "Updating": "UPDATE_RC_IN_PROGRESS"}.get(component.current_status())
        if state:
            raise validation(f"Cannot delete inference component {component.arn} while it is in state {state}.")

    def get(self, backend: Any, name: str) -> Component:
        from moto.sagemaker.utils import arn_formatter

        component = components(backend).get(name)
        if component is None:
            arn = arn_formatter("inference-component", name, backend.account_id, backend.region_name)
            raise validation(f"Could not find inference component '{arn}'.")
        return component

    def set_copies(self, backend: Any, name: str, copies: int) -> Component:
        from moto.core.utils import utcnow

        component = self.get(backend, name)
        endpoint = backend.endpoints.get(component.endpoint_name)
        variant = variant_of(backend, endpoint, component.variant_name)
        per_copy = float(
            (component.specification.get("ComputeResourceRequirements") or {}).get("NumberOfAcceleratorDevicesRequired")
            or 0
        )
        per_instance, held = copies_held(variant, per_copy)
        if per_copy and copies > held:
            raise validation(
                f"CopyCount {copies} needs {copies * per_copy:g} accelerators; variant {variant['VariantName']} holds "
                f"{held} cop{'y' if held == 1 else 'ies'} ({per_instance} per {variant.get('InstanceType')} × "
                "its MaxInstanceCount)."
            )
        for hook in list(self.copy_hooks.values()):
            hook(name, copies)
        component.desired_copies = component.current_copies = copies
        component.modified = utcnow()
        self.settle(component, "Updating")
        self.place(backend, component)
        for follow in self.followers:
            follow(component)
        return component

    def place(self, backend: Any, component: Component) -> None:
        """The endpoint's instances, as managed instance scaling leaves them for the copies."""
        endpoint = backend.endpoints.get(component.endpoint_name)
        if endpoint is None:
            return
        variant = variant_of(backend, endpoint, component.variant_name)
        count = instances_needed(variant, component)
        for summary in endpoint.production_variants:
            if summary["VariantName"] == component.variant_name:
                summary["CurrentInstanceCount"] = summary["DesiredInstanceCount"] = count

    def delete(self, backend: Any, name: str) -> None:
        component = self.get(backend, name)
        self.refuse_while_busy(component)
        component.status, component.busy = "Deleting", ""
        delay = self.emulator.component_deleting_s

        def gone() -> None:
            components(backend).pop(name, None)

        if delay:
            threading.Timer(delay, gone).start()
        else:
            gone()


def install(emulator: Any) -> Callable[[], None]:
    from moto.applicationautoscaling import models as scaling_models
    from moto.applicationautoscaling import responses as scaling_responses
    from moto.cloudformation import parsing
    from moto.core.common_models import CloudFormationModel
    from moto.core.responses import ActionResult, EmptyResult
    from moto.sagemaker.models import SageMakerModelBackend
    from moto.sagemaker.responses import SageMakerResponse

    operations = Components(emulator)
    emulator.inference_components = operations

    # Endpoint configs: a variant without a model; routing as the API's enum has it.
    original_validate = SageMakerModelBackend.validate_production_variants
    original_create_config = SageMakerModelBackend.create_endpoint_config

    def validate_production_variants(backend, production_variants):
        original_validate(backend, [v for v in production_variants if "ModelName" in v])

    def create_endpoint_config(backend, **kwargs):
        check_routing(kwargs.get("production_variants") or [])
        return original_create_config(backend, **kwargs)

    SageMakerModelBackend.validate_production_variants = validate_production_variants
    SageMakerModelBackend.create_endpoint_config = create_endpoint_config

    # DeleteEndpoint: refused while the endpoint hosts components.
    original_delete_endpoint = SageMakerModelBackend.delete_endpoint

    def delete_endpoint(backend, endpoint_name: str) -> None:
        hosted = sorted(c.name for c in components(backend).values() if c.endpoint_name == endpoint_name)
        if hosted:
            raise validation(
                f"Endpoint {endpoint_name} hosts inference components ({', '.join(hosted)}): delete them first."
            )
        original_delete_endpoint(backend, endpoint_name)

    SageMakerModelBackend.delete_endpoint = delete_endpoint

    # Tags on a component's ARN.
    original_resource_from_arn = SageMakerModelBackend._get_resource_from_arn

    def resource_from_arn(backend, arn: str) -> Any:
        kind, _, name = arn.split(":")[-1].partition("/")
        if kind == "inference-component":
            return operations.get(backend, name)
        return original_resource_from_arn(backend, arn)

    SageMakerModelBackend._get_resource_from_arn = resource_from_arn

    # The API.
    def here(response) -> Any:
        return operations.backend(response.current_account, response.region)

    def create_inference_component(response):
        params = {
            key: response._get_param(key)
            for key in (
                "InferenceComponentName",
                "EndpointName",
                "VariantName",
                "Specification",
                "RuntimeConfig",
                "Tags",
            )
        }
        component = operations.create(here(response), params)
        return ActionResult({"InferenceComponentArn": component.arn})

    def describe_inference_component(response):
        return ActionResult(operations.get(here(response), response._get_param("InferenceComponentName")).describe())

    def update_inference_component(response):
        backend = here(response)
        name = response._get_param("InferenceComponentName")
        component = operations.get(backend, name)
        if response._get_param("Specification"):
            component.specification = response._get_param("Specification")
        runtime = response._get_param("RuntimeConfig") or {}
        if "CopyCount" in runtime:
            operations.refuse_update_while_busy(component)
            operations.set_copies(backend, name, int(runtime["CopyCount"]))
        return ActionResult({"InferenceComponentArn": component.arn})

    def update_inference_component_runtime_config(response):
        backend = here(response)
        name = response._get_param("InferenceComponentName")
        copies = int((response._get_param("DesiredRuntimeConfig") or {})["CopyCount"])
        operations.refuse_update_while_busy(operations.get(backend, name))
        return ActionResult({"InferenceComponentArn": operations.set_copies(backend, name, copies).arn})

    def delete_inference_component(response):
        operations.delete(here(response), response._get_param("InferenceComponentName"))
        return EmptyResult()

    def list_inference_components(response):
        endpoint = response._get_param("EndpointNameEquals")
        status = response._get_param("StatusEquals")
        found = [
            c.summary()
            for c in components(here(response)).values()
            if endpoint in (None, c.endpoint_name) and status in (None, c.current_status())
        ]
        return ActionResult({"InferenceComponents": found})

    added = {
        "create_inference_component": create_inference_component,
        "describe_inference_component": describe_inference_component,
        "update_inference_component": update_inference_component,
        "update_inference_component_runtime_config": update_inference_component_runtime_config,
        "delete_inference_component": delete_inference_component,
        "list_inference_components": list_inference_components,
    }
    for name, method in added.items():
        setattr(SageMakerResponse, name, method)

    # CloudFormation's AWS::SageMaker::InferenceComponent.
    class InferenceComponentResource(CloudFormationModel):
        def __init__(self, component: Component, account_id: str, region: str) -> None:
            self.component, self.account_id, self.region = component, account_id, region

        @staticmethod
        def cloudformation_name_type() -> str:
            return "InferenceComponentName"

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::SageMaker::InferenceComponent"

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr in ("InferenceComponentArn", "InferenceComponentName", "InferenceComponentStatus")

        @property
        def physical_resource_id(self) -> str:
            return self.component.arn

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return {
                "InferenceComponentArn": self.component.arn,
                "InferenceComponentName": self.component.name,
                "InferenceComponentStatus": self.component.status,
            }[attribute_name]

        @classmethod
        def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
            properties = dict(cloudformation_json["Properties"])
            properties.setdefault("InferenceComponentName", resource_name)
            component = operations.create(operations.backend(account_id, region_name), properties)
            return cls(component, account_id, region_name)

        def delete(self, account_id: str, region_name: str) -> None:
            backend = operations.backend(account_id, region_name)
            if self.component.name in components(backend):
                operations.refuse_while_busy(self.component)
                components(backend).pop(self.component.name)

    emulator.component_cfn_model = InferenceComponentResource  # moto holds its models weakly
    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()

    # Application Auto Scaling: the DesiredCopyCount dimension (moto checks against its own enum).
    original_dimensions = scaling_models.ScalableDimensionValueSet
    extended = Enum(  # type: ignore[misc]
        "ScalableDimensionValueSet",
        {
            **{m.name: m.value for m in original_dimensions},
            "SAGEMAKER_INFERENCE_COMPONENT_DESIRED_COPY_COUNT": COPY_DIMENSION,
        },
    )
    scaling_models.ScalableDimensionValueSet = extended
    scaling_responses.ScalableDimensionValueSet = extended

    def undo() -> None:
        SageMakerModelBackend.validate_production_variants = original_validate
        SageMakerModelBackend.create_endpoint_config = original_create_config
        SageMakerModelBackend.delete_endpoint = original_delete_endpoint
        SageMakerModelBackend._get_resource_from_arn = original_resource_from_arn
        for name in added:
            delattr(SageMakerResponse, name)
        scaling_models.ScalableDimensionValueSet = original_dimensions
        scaling_responses.ScalableDimensionValueSet = original_dimensions
        del emulator.component_cfn_model
        for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
            cached.cache_clear()

    return undo
