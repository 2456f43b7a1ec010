"""InferenceComponentEndpoint alone in a bare Stack, and its context keys at synth: the endpoint
config's variant with no model (managed instance scaling to zero, the routing asked for), the
component on the real-time endpoint's model definition, its copies scaled on concurrent requests
per copy and brought out of zero by the no-capacity alarm, its time-to-live, its output; then the
copies, instance and routing keys, each bad value refused in one line. Values come from the
catalog's spec, so a change there shows here; cfn-lint checks the synthesized template against
CloudFormation's own schemas (tests/cdk/test_options.py synthesizes it with every option)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from aws_cdk.assertions import Template

from catalog import CatalogError
from catalog.backends import get_backend
from catalog.config import BackendConfig, load_config, sagemaker_environment
from catalog.contract import BackendOutput, output_key
from inference_constructs.endpoint_scaling import SCALE_IN_COOLDOWN_S, SCALE_OUT_COOLDOWN_S
from inference_constructs.inference_components import InferenceComponentEndpoint
from tests.cdk.conftest import SYNTH_NOW, cdk_json_context, render_join
from tests.cdk.test_construct_server import EXPIRY, bare_stack, logical_id, only, statements

REGION = "us-east-2"
ENDPOINT = "inference-sagemaker-components"
COMPONENT = f"{ENDPOINT}-model"
NAME = "sagemaker-components"


def config(**overrides: Any) -> BackendConfig:
    spec = get_backend(NAME)
    return BackendConfig(spec=replace(spec, **overrides) if overrides else spec, region=REGION, zones=())


def build(tmp_path, expires_at: str | None = EXPIRY, **overrides: Any) -> tuple[InferenceComponentEndpoint, Template]:
    stack = bare_stack(tmp_path, REGION)
    made = InferenceComponentEndpoint(
        stack, "Components", backend=config(**overrides), endpoint_name=ENDPOINT, expires_at=expires_at
    )
    return made, Template.from_stack(stack)


@pytest.fixture(scope="module")
def catalog_endpoint(tmp_path_factory) -> tuple[InferenceComponentEndpoint, Template]:
    return build(tmp_path_factory.mktemp("components"))


def test_the_variant_has_no_model_and_scales_its_instances_to_zero_with_the_catalogs_routing(catalog_endpoint):
    made, template = catalog_endpoint
    spec = get_backend(NAME)
    (_, endpoint_config) = only(template, "AWS::SageMaker::EndpointConfig")
    properties = endpoint_config["Properties"]
    assert properties["ProductionVariants"] == [
        {
            "VariantName": "AllTraffic",
            "InstanceType": spec.instance_type,
            "InitialInstanceCount": 1,
            "ManagedInstanceScaling": {
                "Status": "ENABLED",
                "MinInstanceCount": 0,
                "MaxInstanceCount": spec.max_instances,
                "ScaleInPolicy": {"Strategy": "IDLE_RELEASE"},
            },
            "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
        }
    ]
    # SageMaker runs the components with the model's own role.
    assert properties["ExecutionRoleArn"] == {"Fn::GetAtt": [logical_id(made.role), "Arn"]}


def test_the_component_runs_the_real_time_endpoints_model_on_one_gpu_per_copy(catalog_endpoint):
    made, template = catalog_endpoint
    spec = get_backend(NAME)
    (_, component) = only(template, "AWS::SageMaker::InferenceComponent")
    assert component["Properties"] | {"Tags": None} == {
        "InferenceComponentName": COMPONENT,
        "EndpointName": {"Fn::GetAtt": [logical_id(made.endpoint), "EndpointName"]},
        "VariantName": "AllTraffic",
        "Specification": {
            "ModelName": {"Fn::GetAtt": [logical_id(made.model), "ModelName"]},
            "ComputeResourceRequirements": {
                "NumberOfAcceleratorDevicesRequired": 1,
                "MinMemoryRequiredInMb": spec.copy_memory_mb,
            },
            "StartupParameters": {
                "ContainerStartupHealthCheckTimeoutInSeconds": 1800,
                "ModelDataDownloadTimeoutInSeconds": 1800,
            },
        },
        "RuntimeConfig": {"CopyCount": spec.copies},
        "Tags": None,
    }
    (_, model) = only(template, "AWS::SageMaker::Model")
    container = model["Properties"]["PrimaryContainer"]
    # The real-time endpoint's DLC and vLLM settings, from the same catalog entry.
    assert container["Environment"] == sagemaker_environment(spec.serve_flags, spec.model_id)
    assert render_join(container["Image"]).endswith(f"/{get_backend('sagemaker').image}")
    (_, endpoint) = only(template, "AWS::SageMaker::Endpoint")
    assert endpoint["Properties"]["EndpointName"] == ENDPOINT


# The most host memory a copy was seen to reserve and be placed with on a 16 GiB instance (an
# ml.g5.xlarge, as an ml.g6.xlarge has): 1024 MB was placed and 4096 refused ("There is not enough
# hardware resources on the instances for this endpoint to create a copy of the inference
# component"), the schedulable pool being much smaller than the instance's memory (the public
# hf-cloud-sagemaker-production-defaults deploy notes, "Sizing the component").
PLACED_ON_16_GIB_MB = 1024


def test_a_copy_reserves_no_more_host_memory_than_a_16_gib_instance_was_seen_to_place(catalog_endpoint):
    _, template = catalog_endpoint
    spec = get_backend(NAME)
    (_, component) = only(template, "AWS::SageMaker::InferenceComponent")
    requirements = component["Properties"]["Specification"]["ComputeResourceRequirements"]
    assert spec.instance_type == "ml.g6.xlarge"
    assert 0 < requirements["MinMemoryRequiredInMb"] <= PLACED_ON_16_GIB_MB
    # A reservation, not a cap: no maximum is set, so vLLM takes the host memory it needs.
    assert "MaxMemoryRequiredInMb" not in requirements


def test_the_components_container_logs_have_a_group_of_the_stacks_that_its_role_writes_and_the_output_names(
    catalog_endpoint,
):
    made, template = catalog_endpoint
    # SageMaker writes a component's container logs under the component's name, not the endpoint's.
    name = f"/aws/sagemaker/InferenceComponents/{COMPONENT}"
    group_id, group = next(
        (i, g) for i, g in template.find_resources("AWS::Logs::LogGroup").items()
        if g["Properties"]["LogGroupName"] == name
    )  # fmt: skip
    assert group["Properties"]["RetentionInDays"] == 14
    assert (group["DeletionPolicy"], group["UpdateReplacePolicy"]) == ("Delete", "Delete")
    # There before the first copy starts, and its streams the execution role's to write.
    assert group_id in template.to_json()["Resources"][logical_id(made.component)]["DependsOn"]
    (write,) = [s for s in statements(template, logical_id(made.role)) if s.get("Sid") == "WriteLogs"]
    assert set(write["Action"]) == {"logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"}
    resources = write["Resource"] if isinstance(write["Resource"], list) else [write["Resource"]]
    assert any(render_join(r).endswith(f":log-group:{name}:*") for r in resources)
    # The output's log group is where a copy that does not start says why.
    value = template.to_json()["Outputs"][output_key(NAME)]["Value"]
    parsed = BackendOutput.parse(output_key(NAME), json.loads(render_join(value)))
    assert parsed.log_group == f"<{group_id}>"


def test_copies_scale_on_concurrent_requests_per_copy_and_leave_zero_on_the_no_capacity_alarm(catalog_endpoint):
    made, template = catalog_endpoint
    spec = get_backend(NAME)
    (target_id, target) = only(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert target["Properties"] | {"Tags": None} == {
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"inference-component/{COMPONENT}",
        "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
        "MinCapacity": 0,
        "MaxCapacity": spec.max_copies,
        "Tags": None,
    }
    assert target["DependsOn"] == [logical_id(made.component)]
    policies = {p["Properties"]["PolicyType"]: (i, p["Properties"]) for i, p in template.find_resources(
        "AWS::ApplicationAutoScaling::ScalingPolicy").items()}  # fmt: skip
    _, tracking = policies["TargetTrackingScaling"]
    assert tracking["ScalingTargetId"] == {"Ref": target_id}
    assert tracking["TargetTrackingScalingPolicyConfiguration"] == {
        "TargetValue": float(spec.target_concurrency),
        "PredefinedMetricSpecification": {
            "PredefinedMetricType": "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
        },
        "ScaleOutCooldown": SCALE_OUT_COOLDOWN_S,
        "ScaleInCooldown": SCALE_IN_COOLDOWN_S,
    }
    step_id, step = policies["StepScaling"]
    assert step["StepScalingPolicyConfiguration"] == {
        "AdjustmentType": "ChangeInCapacity",
        "MetricAggregationType": "Maximum",
        "Cooldown": 60,
        "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
    }
    (_, alarm) = only(template, "AWS::CloudWatch::Alarm")
    assert alarm["Properties"] | {"Tags": None, "AlarmDescription": None} == {
        "AlarmName": f"{COMPONENT}-no-capacity",
        "ActionsEnabled": True,
        "Namespace": "AWS/SageMaker",
        "MetricName": "NoCapacityInvocationFailures",
        "Dimensions": [{"Name": "InferenceComponentName", "Value": COMPONENT}],
        "Statistic": "Sum",
        "Period": 60,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanThreshold",
        "AlarmActions": [{"Ref": step_id}],
        "Tags": None,
        "AlarmDescription": None,
    }


def test_a_floor_of_copies_needs_no_way_out_of_zero(tmp_path):
    made, template = build(tmp_path, min_copies=1)
    assert made.scaling.leave_zero is None and made.scaling.alarm is None
    template.resource_count_is("AWS::CloudWatch::Alarm", 0)
    template.has_resource_properties("AWS::ApplicationAutoScaling::ScalableTarget", {"MinCapacity": 1})


def schedules(template: Template) -> dict[str, dict[str, Any]]:
    """The stack's schedules by the API each calls ('sagemaker:updateInferenceComponentRuntimeConfig')."""
    found = {}
    for schedule in template.find_resources("AWS::Scheduler::Schedule").values():
        api = render_join(schedule["Properties"]["Target"]["Arn"]).partition(":aws-sdk:")[2]
        found[api] = schedule["Properties"]
    return found


def the_one_statement(template: Template, target: dict[str, Any]) -> dict[str, Any]:
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    (statement,) = statements(template, role_id)
    return statement


def test_at_the_expiry_the_component_goes_to_zero_copies_and_its_wake_up_alarm_is_disarmed(catalog_endpoint):
    _, template = catalog_endpoint
    found = schedules(template)
    assert set(found) == {"sagemaker:updateInferenceComponentRuntimeConfig", "cloudwatch:disableAlarmActions"}
    assert {s["ScheduleExpression"] for s in found.values()} == {f"at({EXPIRY.removesuffix('Z')})"}
    # The copies to zero: their instances go.
    target = found["sagemaker:updateInferenceComponentRuntimeConfig"]["Target"]
    assert json.loads(target["Input"]) == {
        "InferenceComponentName": COMPONENT,
        "DesiredRuntimeConfig": {"CopyCount": 0},
    }
    statement = the_one_statement(template, target)
    assert statement["Action"] == "sagemaker:UpdateInferenceComponentRuntimeConfig"
    assert render_join(statement["Resource"]).endswith(f":inference-component/{COMPONENT}")
    # And the alarm that would start a copy on the next request no longer acts: after the expiry a
    # request is refused for no capacity and starts nothing.
    (_, alarm) = only(template, "AWS::CloudWatch::Alarm")
    name = alarm["Properties"]["AlarmName"]
    target = found["cloudwatch:disableAlarmActions"]["Target"]
    assert json.loads(target["Input"]) == {"AlarmNames": [name]}
    statement = the_one_statement(template, target)
    assert statement["Action"] == "cloudwatch:DisableAlarmActions"
    assert render_join(statement["Resource"]).endswith(f":cloudwatch:{REGION}:<AWS::AccountId>:alarm:{name}")
    # A deploy with a new expiry (runner.up, runner.up --extend) rewrites the alarm with its
    # actions on: its description carries the expiry, so CloudFormation updates it.
    assert alarm["Properties"]["ActionsEnabled"] is True and EXPIRY in alarm["Properties"]["AlarmDescription"]
    value = template.to_json()["Outputs"][output_key(NAME)]["Value"]
    assert BackendOutput.parse(output_key(NAME), json.loads(render_join(value))).no_capacity_alarm == name


def test_a_floor_of_copies_has_no_alarm_to_disarm_at_the_expiry(tmp_path):
    _, template = build(tmp_path, min_copies=1)
    assert set(schedules(template)) == {"sagemaker:updateInferenceComponentRuntimeConfig"}


def test_prefix_aware_routing_carries_its_settings(tmp_path):
    _, template = build(
        tmp_path, expires_at=None, routing_strategy="PREFIX_AWARE", prefix_length=2048, concurrency_threshold=6
    )
    (_, endpoint_config) = only(template, "AWS::SageMaker::EndpointConfig")
    (variant,) = endpoint_config["Properties"]["ProductionVariants"]
    assert variant["RoutingConfig"] == {
        "RoutingStrategy": "PREFIX_AWARE",
        "PrefixAwareRoutingConfig": {"PrefixLength": 2048, "ConcurrencyThreshold": 6},
    }
    template.resource_count_is("AWS::Scheduler::Schedule", 0)


def test_the_output_names_the_component_its_copies_and_its_routing(catalog_endpoint):
    _, template = catalog_endpoint
    value = template.to_json()["Outputs"][output_key(NAME)]["Value"]
    parsed = BackendOutput.parse(output_key(NAME), json.loads(render_join(value)))
    assert (parsed.kind, parsed.endpoint_name, parsed.inference_component_name) == (NAME, ENDPOINT, COMPONENT)
    assert (parsed.copies, parsed.min_copies, parsed.max_copies) == (1, 0, 1)
    assert (parsed.min_instances, parsed.max_instances, parsed.routing_strategy) == (0, 1, "LEAST_OUTSTANDING_REQUESTS")
    spec = get_backend(NAME)
    assert (parsed.accelerators_per_copy, parsed.copy_memory_mb, parsed.expires_at) == (1, spec.copy_memory_mb, EXPIRY)


# --- its context keys, checked at synth -------------------------------------------------------


def spec_with(**context: Any):
    keys = {f"{NAME}.{k}": v for k, v in context.items()}
    loaded = load_config(cdk_json_context() | {"backends": NAME} | keys, placements={}, now=SYNTH_NOW)
    (backend,) = loaded.backends
    return backend.spec


def test_copies_instances_and_routing_from_context_reach_the_spec():
    spec = spec_with(
        instanceType="ml.g6.12xlarge", copies=2, minCopies=1, maxCopies=8, maxInstances=2, routingStrategy="RANDOM"
    )
    assert (spec.instance_type, spec.copies, spec.min_copies, spec.max_copies) == ("ml.g6.12xlarge", 2, 1, 8)
    assert (spec.max_instances, spec.routing_strategy) == (2, "RANDOM")
    spec = spec_with(routingStrategy="PREFIX_AWARE", prefixLength=4096, concurrencyThreshold=8)
    assert (spec.prefix_length, spec.concurrency_threshold) == (4096, 8)


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        # Copies beyond the instance's accelerators: one L4 per ml.g6.xlarge, one instance at most.
        (
            {"maxCopies": 2},
            "context sagemaker-components.maxCopies: 2 copies of 1 accelerator(s) each do not fit 1 ml.g6.xlarge "
            "(1 per instance, 1 copies at most): raise sagemaker-components.maxInstances",
        ),
        ({"instanceType": "ml.g6.12xlarge", "maxCopies": 9, "maxInstances": 2}, "(4 per instance, 8 copies at most)"),
        ({"copies": 3, "maxCopies": 2, "maxInstances": 2}, "copies: 3 is outside sagemaker-components.minCopies"),
        (
            {"minCopies": 1, "copies": 0},
            "copies: 0 is outside sagemaker-components.minCopies..sagemaker-components.maxCopies (1..1)",
        ),
        ({"maxCopies": 0}, "maxCopies: at least one copy is needed"),
        # A routing value AWS does not list, and one its API lists that CloudFormation's schema does not.
        (
            {"routingStrategy": "ROUND_ROBIN"},
            "context sagemaker-components.routingStrategy: a CloudFormation endpoint config routes by "
            "LEAST_OUTSTANDING_REQUESTS, RANDOM, PREFIX_AWARE, not 'ROUND_ROBIN'",
        ),
        ({"routingStrategy": "KV_AWARE"}, "not in CloudFormation's AWS::SageMaker::EndpointConfig schema"),
        ({"routingStrategy": "PREFIX_AWARE"}, "PREFIX_AWARE needs sagemaker-components.prefixLength"),
        ({"prefixLength": 2048}, "only with sagemaker-components.routingStrategy=PREFIX_AWARE"),
        (
            {"routingStrategy": "PREFIX_AWARE", "prefixLength": 100, "concurrencyThreshold": 4},
            "outside the allowed range 1024..65536",
        ),
        ({"instanceType": "ml.inf2.xlarge"}, "does not match backend sagemaker-components"),
    ],
)
def test_bad_copies_or_routing_is_one_line_at_synth(context, expected):
    with pytest.raises(CatalogError) as caught:
        spec_with(**context)
    assert expected in str(caught.value) and "\n" not in str(caught.value)
