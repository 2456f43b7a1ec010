"""The SageMaker constructs alone in a bare Stack: the model and its execution role
(sagemaker_model), the endpoint's time-to-live, VllmSageMakerEndpoint, EndpointScaling
(RealTimeScaling, AsyncScaling) on a bare endpoint, and the options (options_bucket,
ServerlessEndpoint, AsyncEndpoint, BatchModel). Values come from the catalog's specs, so a change
there shows here; the whole-app tests keep which options a deploy holds and nag and cfn-lint."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.assertions import Match, Template

from catalog import Architecture
from catalog.backends import get_backend
from catalog.config import BackendConfig, sagemaker_environment
from catalog.contract import BackendOutput, output_key
from inference_constructs.endpoint_scaling import (
    SCALE_IN_COOLDOWN_S,
    SCALE_OUT_COOLDOWN_S,
    AsyncScaling,
    RealTimeScaling,
)
from inference_constructs.image_build import IMAGES_DIR, ImageBuild
from inference_constructs.log_group import owned_log_group
from inference_constructs.sagemaker_model import dlc_image_uri, owned_endpoint, sagemaker_model
from inference_constructs.sagemaker_options import (
    TRANSFORM_LOG_GROUP,
    AsyncEndpoint,
    BatchModel,
    ServerlessEndpoint,
    options_bucket,
)
from inference_constructs.vllm_endpoint import VllmSageMakerEndpoint
from tests.cdk.conftest import render_join
from tests.cdk.test_construct_server import EXPIRY, actions, bare_stack, by_sid, logical_id, only, statements

REGION = "us-east-2"
# AWS's Deep Learning Containers registry in us-east-2 (aws-cdk-lib's region facts).
DLC_REGISTRY = f"763104351884.dkr.ecr.{REGION}.amazonaws.com"
ENDPOINT = "inference-sagemaker"


def config(name: str, **overrides: Any) -> BackendConfig:
    spec = get_backend(name)
    return BackendConfig(spec=replace(spec, **overrides) if overrides else spec, region=REGION, zones=())


def sagemaker_stack(outdir: Path) -> Stack:
    return bare_stack(outdir, REGION)


def role_of(template: Template, model_id: str) -> str:
    return template.to_json()["Resources"][model_id]["Properties"]["ExecutionRoleArn"]["Fn::GetAtt"][0]


# --- sagemaker_model and the endpoint's time-to-live ------------------------------------------


def test_a_dlc_image_is_found_in_the_regions_registry_and_a_full_uri_passes_through(tmp_path):
    stack = sagemaker_stack(tmp_path)
    assert dlc_image_uri(stack, "vllm:0.30.0") == f"{DLC_REGISTRY}/vllm:0.30.0"
    full = "123456789012.dkr.ecr.us-east-2.amazonaws.com/mine:1"
    assert dlc_image_uri(stack, full) == full


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[Template, str]:
    """The survey's real-time model, made by sagemaker_model alone."""
    stack = sagemaker_stack(tmp_path_factory.mktemp("model"))
    spec = get_backend("sagemaker")
    made = sagemaker_model(
        stack,
        purpose="probe",
        image_uri=dlc_image_uri(stack, spec.image or ""),
        environment=sagemaker_environment(spec.serve_flags, spec.model_id),
        log_group_name=f"/aws/sagemaker/Endpoints/{ENDPOINT}",
    )
    return Template.from_stack(stack), logical_id(made.model)


def test_the_model_runs_the_dlc_by_digest_with_the_catalogs_environment(model):
    template, model_id = model
    spec = get_backend("sagemaker")
    container = template.to_json()["Resources"][model_id]["Properties"]["PrimaryContainer"]
    assert container == {
        "Image": f"{DLC_REGISTRY}/{spec.image}",
        "Mode": "SingleModel",
        "Environment": sagemaker_environment(spec.serve_flags, spec.model_id),
    }
    assert "@sha256:" in container["Image"]  # a digest, not a tag that can move


def test_the_execution_role_pulls_one_repository_and_writes_only_its_own_logs_and_metrics(model):
    template, model_id = model
    role_id = role_of(template, model_id)
    role = template.to_json()["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert "ManagedPolicyArns" not in role
    found = statements(template, role_id)
    sids = by_sid(found)
    assert set(sids) == {"EcrAuth", "PullImage", "WriteLogs", "PublishMetrics"} and len(found) == 4
    assert (
        render_join(sids["PullImage"]["Resource"]) == f"arn:<AWS::Partition>:ecr:{REGION}:763104351884:repository/vllm"
    )
    assert render_join(sids["WriteLogs"]["Resource"]) == (
        f"arn:<AWS::Partition>:logs:{REGION}:<AWS::AccountId>:log-group:/aws/sagemaker/Endpoints/{ENDPOINT}:*"
    )
    assert sids["PublishMetrics"]["Condition"] == {
        "StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}
    }


def test_the_model_waits_for_its_roles_policy(model):
    """SageMaker validates the image pull when it creates the model: the policy must be there first."""
    template, model_id = model
    role_id = role_of(template, model_id)
    (policy_id,) = template.find_resources("AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": role_id}]}})
    assert template.to_json()["Resources"][model_id]["DependsOn"] == [policy_id]


def test_a_model_from_the_apps_repository_uses_the_repositorys_own_pull_grant(tmp_path):
    stack = sagemaker_stack(tmp_path)
    repository = ecr.Repository.from_repository_name(stack, "Repo", "inference-survey/llama-serverless")
    made = sagemaker_model(
        stack,
        purpose="probe",
        image_uri=repository.repository_uri_for_tag("abc"),
        environment={},
        log_group_name="/aws/sagemaker/Endpoints/x",
        repository=repository,
    )
    template = Template.from_stack(stack)
    found = statements(template, logical_id(made.role))
    assert "PullImage" not in by_sid(found)
    (pull,) = [s for s in found if "ecr:BatchGetImage" in actions(s)]
    assert render_join(pull["Resource"]).endswith(":repository/inference-survey/llama-serverless")


def test_a_bucket_model_reads_one_prefix_writes_another_and_may_make_the_shared_log_group(tmp_path):
    stack = sagemaker_stack(tmp_path)
    bucket = s3.Bucket(stack, "Bucket")
    made = sagemaker_model(
        stack,
        purpose="probe",
        image_uri=f"{DLC_REGISTRY}/vllm:x",
        environment={},
        log_group_name=TRANSFORM_LOG_GROUP,
        bucket=bucket,
        input_prefix="in/",
        output_prefix="out/",
        create_log_group=True,
    )
    template = Template.from_stack(stack)
    found = statements(template, logical_id(made.role))
    bucket_arn = f"<{logical_id(bucket)}.Arn>"
    (read,) = [s for s in found if "s3:GetObject*" in actions(s)]
    assert [render_join(r) for r in read["Resource"]] == [bucket_arn, f"{bucket_arn}/in/*"]
    (write,) = [s for s in found if "s3:PutObject" in actions(s)]
    assert render_join(write["Resource"]) == f"{bucket_arn}/out/*"
    create = by_sid(found)["CreateTheSharedLogGroup"]
    assert actions(create) == ["logs:CreateLogGroup"]
    assert render_join(create["Resource"]).endswith(f":log-group:{TRANSFORM_LOG_GROUP}")


@pytest.fixture(scope="module")
def endpoint_with_ttl(tmp_path_factory) -> Template:
    stack = sagemaker_stack(tmp_path_factory.mktemp("ttl"))
    logs = owned_log_group(stack, "Logs", f"/aws/sagemaker/Endpoints/{ENDPOINT}")
    endpoint_config = sagemaker.CfnEndpointConfig(stack, "Config", production_variants=[])
    owned_endpoint(stack, ENDPOINT, endpoint_config, logs, EXPIRY)
    return Template.from_stack(stack)


def test_the_endpoint_keeps_its_fixed_name_and_is_made_after_its_log_group(endpoint_with_ttl):
    (logs_id, _) = only(endpoint_with_ttl, "AWS::Logs::LogGroup")
    endpoint_with_ttl.has_resource(
        "AWS::SageMaker::Endpoint",
        {"Properties": Match.object_like({"EndpointName": ENDPOINT}), "DependsOn": [logs_id]},
    )


def test_at_the_expiry_a_one_time_schedule_deletes_the_endpoint_and_nothing_else(endpoint_with_ttl):
    (_, schedule) = only(endpoint_with_ttl, "AWS::Scheduler::Schedule")
    props = schedule["Properties"]
    # Scheduler's at() takes local time in the schedule's zone: the expiry without its Z, in UTC.
    assert (props["ScheduleExpression"], props["ScheduleExpressionTimezone"]) == (f"at({EXPIRY[:-1]})", "UTC")
    assert props["FlexibleTimeWindow"] == {"Mode": "OFF"}
    target = props["Target"]
    assert render_join(target["Arn"]) == "arn:<AWS::Partition>:scheduler:::aws-sdk:sagemaker:deleteEndpoint"
    assert json.loads(target["Input"]) == {"EndpointName": ENDPOINT}
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    role = endpoint_with_ttl.to_json()["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
    (statement,) = statements(endpoint_with_ttl, role_id)
    assert actions(statement) == ["sagemaker:DeleteEndpoint"]
    assert render_join(statement["Resource"]) == (
        f"arn:<AWS::Partition>:sagemaker:{REGION}:<AWS::AccountId>:endpoint/{ENDPOINT}"
    )
    endpoint_with_ttl.resource_count_is("AWS::Lambda::Function", 0)


# --- VllmSageMakerEndpoint --------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_time(tmp_path_factory) -> tuple[VllmSageMakerEndpoint, Template]:
    """The survey's endpoint as the catalog has it: one instance, no scaling, the time-to-live."""
    stack = sagemaker_stack(tmp_path_factory.mktemp("real-time"))
    endpoint = VllmSageMakerEndpoint(
        stack, "Inference", backend=config("sagemaker"), endpoint_name=ENDPOINT, expires_at=EXPIRY
    )
    return endpoint, Template.from_stack(stack)


def test_the_endpoint_config_is_the_catalogs_instance_count_and_startup_bound(real_time):
    endpoint, template = real_time
    spec = get_backend("sagemaker")
    (_, endpoint_config) = only(template, "AWS::SageMaker::EndpointConfig")
    assert endpoint_config["Properties"]["ProductionVariants"] == [
        {
            "VariantName": "AllTraffic",
            "ModelName": {"Fn::GetAtt": [logical_id(endpoint.model), "ModelName"]},
            "InitialInstanceCount": spec.min_instances,
            "InstanceType": spec.instance_type,
            "ContainerStartupHealthCheckTimeoutInSeconds": 1800,
            "ModelDataDownloadTimeoutInSeconds": 1800,
        }
    ]
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": Match.object_like(
                {"Environment": sagemaker_environment(spec.serve_flags, spec.model_id)}
            )
        },
    )
    template.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": f"/aws/sagemaker/Endpoints/{ENDPOINT}", "RetentionInDays": 14}
    )


def test_one_instance_unless_asked_means_no_scaling(real_time):
    endpoint, template = real_time
    assert endpoint.scaling is None
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 0)
    template.resource_count_is("AWS::Scheduler::Schedule", 1)


def test_the_endpoints_output_names_its_endpoint_config_and_expiry(real_time):
    endpoint, template = real_time
    outputs = template.to_json()["Outputs"]
    parsed = BackendOutput.parse(
        output_key("sagemaker"), json.loads(render_join(outputs[output_key("sagemaker")]["Value"]))
    )
    assert (parsed.endpoint_name, parsed.region, parsed.expires_at) == (ENDPOINT, REGION, EXPIRY)
    assert parsed.endpoint_config_name == f"<{logical_id(endpoint.endpoint_config)}.EndpointConfigName>"
    assert parsed.log_group == f"<{logical_id(endpoint.log_group)}>"
    assert (parsed.min_instances, parsed.max_instances) == (1, 1)


def test_a_scaled_endpoint_gets_real_time_scaling_between_its_bounds(tmp_path):
    stack = sagemaker_stack(tmp_path)
    endpoint = VllmSageMakerEndpoint(
        stack, "Inference", backend=config("sagemaker", max_instances=3), endpoint_name=ENDPOINT
    )
    template = Template.from_stack(stack)
    assert endpoint.scaling is not None
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget", {"MinCapacity": 1, "MaxCapacity": 3}
    )
    template.resource_count_is("AWS::Scheduler::Schedule", 0)  # no expiry given


def test_a_backend_without_image_or_instance_type_is_refused(tmp_path):
    stack = sagemaker_stack(tmp_path)
    with pytest.raises(ValueError, match="backend sagemaker-serverless has no image or instance type"):
        VllmSageMakerEndpoint(stack, "Inference", backend=config("sagemaker-serverless"), endpoint_name=ENDPOINT)


# --- EndpointScaling on a bare endpoint -------------------------------------------------------


def bare_endpoint(stack: Stack) -> sagemaker.CfnEndpoint:
    return sagemaker.CfnEndpoint(stack, "Endpoint", endpoint_config_name="config", endpoint_name=ENDPOINT)


def endpoint_resource_id(endpoint: sagemaker.CfnEndpoint) -> dict[str, Any]:
    return {
        "Fn::Join": ["", ["endpoint/", {"Fn::GetAtt": [logical_id(endpoint), "EndpointName"]}, "/variant/AllTraffic"]]
    }


@pytest.mark.parametrize(("low", "high", "target_concurrency", "target"), [(1, 4, 8, 8.0), (2, 3, None, 1.0)])
def test_real_time_scaling_tracks_concurrent_requests_per_model_between_its_bounds(
    tmp_path, low, high, target_concurrency, target
):
    stack = sagemaker_stack(tmp_path)
    endpoint = bare_endpoint(stack)
    spec = replace(
        get_backend("sagemaker"), min_instances=low, max_instances=high, target_concurrency=target_concurrency
    )
    scaling = RealTimeScaling(stack, "Scaling", endpoint=endpoint, backend=spec)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 1)
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ServiceNamespace": "sagemaker",
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "ResourceId": endpoint_resource_id(endpoint),
            "MinCapacity": low,
            "MaxCapacity": high,
        },
    )
    (_, policy) = only(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    assert policy["Properties"] == {
        "PolicyName": "sagemaker-concurrent-requests",
        "PolicyType": "TargetTrackingScaling",
        "ScalingTargetId": {"Ref": logical_id(scaling.target)},
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": target,
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
            },
            "ScaleOutCooldown": SCALE_OUT_COOLDOWN_S,
            "ScaleInCooldown": SCALE_IN_COOLDOWN_S,
        },
    }
    # Scale-in waits longer than scale-out: a burst's tail keeps the instance the next request would use.
    assert (SCALE_OUT_COOLDOWN_S, SCALE_IN_COOLDOWN_S) == (60, 600)
    template.resource_count_is("AWS::CloudWatch::Alarm", 0)


@pytest.fixture(scope="module")
def async_scaling(tmp_path_factory) -> tuple[sagemaker.CfnEndpoint, AsyncScaling, Template]:
    stack = sagemaker_stack(tmp_path_factory.mktemp("async-scaling"))
    endpoint = bare_endpoint(stack)
    scaling = AsyncScaling(
        stack, "Scaling", endpoint=endpoint, backend=replace(get_backend("sagemaker-async"), max_instances=2)
    )
    return endpoint, scaling, Template.from_stack(stack)


def test_async_scaling_goes_between_zero_and_its_maximum(async_scaling):
    endpoint, _, template = async_scaling
    spec = get_backend("sagemaker-async")
    assert spec.min_instances == 0  # AWS's guide to autoscaling an asynchronous endpoint: MinCapacity 0
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"ResourceId": endpoint_resource_id(endpoint), "MinCapacity": 0, "MaxCapacity": 2},
    )


def test_async_scaling_tracks_the_backlog_per_instance(async_scaling):
    endpoint, scaling, template = async_scaling
    backlog = template.to_json()["Resources"][logical_id(scaling.backlog)]["Properties"]
    assert backlog["PolicyType"] == "TargetTrackingScaling"
    assert backlog["ScalingTargetId"] == {"Ref": logical_id(scaling.target)}
    assert backlog["TargetTrackingScalingPolicyConfiguration"] == {
        "TargetValue": 5,  # docs/options.md: backlog 5 per instance
        "CustomizedMetricSpecification": {
            "MetricName": "ApproximateBacklogSizePerInstance",
            "Namespace": "AWS/SageMaker",
            "Dimensions": [{"Name": "EndpointName", "Value": {"Fn::GetAtt": [logical_id(endpoint), "EndpointName"]}}],
            "Statistic": "Average",
        },
        "ScaleOutCooldown": SCALE_OUT_COOLDOWN_S,
        "ScaleInCooldown": SCALE_IN_COOLDOWN_S,
    }


def test_async_scaling_leaves_zero_by_a_step_when_requests_wait_with_no_instance(async_scaling):
    """Target tracking cannot leave zero (no instance, no per-instance figure): an alarm on
    HasBacklogWithoutCapacity runs a step policy that adds one instance."""
    endpoint, scaling, template = async_scaling
    step = template.to_json()["Resources"][logical_id(scaling.leave_zero)]["Properties"]
    assert step["PolicyType"] == "StepScaling"
    assert step["StepScalingPolicyConfiguration"] == {
        "AdjustmentType": "ChangeInCapacity",
        "MetricAggregationType": "Average",
        "Cooldown": SCALE_OUT_COOLDOWN_S,
        "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
    }
    (_, alarm) = only(template, "AWS::CloudWatch::Alarm")
    props = alarm["Properties"]
    assert (props["Namespace"], props["MetricName"], props["Statistic"]) == (
        "AWS/SageMaker",
        "HasBacklogWithoutCapacity",
        "Average",
    )
    assert props["Dimensions"] == [
        {"Name": "EndpointName", "Value": {"Fn::GetAtt": [logical_id(endpoint), "EndpointName"]}}
    ]
    assert (props["Period"], props["EvaluationPeriods"], props["DatapointsToAlarm"], props["Threshold"]) == (
        60,
        2,
        2,
        1,
    )
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert props["AlarmActions"] == [{"Ref": logical_id(scaling.leave_zero)}]
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 2)


# --- The options: bucket, serverless, asynchronous, batch --------------------------------------


def test_the_options_bucket_is_private_encrypted_tls_only_expiring_and_destroyed(tmp_path):
    """Inputs and outputs of the app's own requests, expired after a week."""
    stack = sagemaker_stack(tmp_path)
    options_bucket(stack, "Requests")
    template = Template.from_stack(stack)
    (bucket_id, bucket) = only(template, "AWS::S3::Bucket")
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == ("Delete", "Delete")
    assert bucket["Properties"] == {
        "BucketEncryption": {
            "ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
        "PublicAccessBlockConfiguration": dict.fromkeys(
            ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True
        ),
        "LifecycleConfiguration": {
            "Rules": [
                {
                    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                    "ExpirationInDays": 7,
                    "Status": "Enabled",
                }
            ]
        },
    }
    (_, policy) = only(template, "AWS::S3::BucketPolicy")
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert (deny["Effect"], deny["Action"], deny["Condition"]) == (
        "Deny",
        "s3:*",
        {"Bool": {"aws:SecureTransport": "false"}},
    )
    assert policy["Properties"]["Bucket"] == {"Ref": bucket_id}
    template.resource_count_is("AWS::Lambda::Function", 0)  # emptied by the runner's teardown, not on destroy


def serverless(outdir: Path, *, image_ready: bool) -> tuple[ImageBuild, Template]:
    stack = sagemaker_stack(outdir)
    build = ImageBuild(stack, "Build", folder=IMAGES_DIR / "llama-serverless", architecture=Architecture.X86_64)
    ServerlessEndpoint(
        stack,
        "Serverless",
        backend=config("sagemaker-serverless"),
        endpoint_name=f"{ENDPOINT}-serverless",
        image_uri=build.image_uri,
        image_build=build,
        image_ready=image_ready,
        expires_at=EXPIRY,
    )
    return build, Template.from_stack(stack)


def serverless_output(template: Template) -> BackendOutput:
    value = template.to_json()["Outputs"][output_key("sagemaker-serverless")]["Value"]
    return BackendOutput.parse("BackendSagemakerServerless", json.loads(render_join(value)))


def test_a_serverless_endpoint_waits_for_its_image_and_holds_nothing_that_bills(tmp_path):
    _, template = serverless(tmp_path, image_ready=False)
    for type_name in ("AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Endpoint"):
        template.resource_count_is(type_name, 0)
    template.resource_count_is("AWS::Scheduler::Schedule", 0)
    template.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": f"/aws/sagemaker/Endpoints/{ENDPOINT}-serverless"}
    )
    output = serverless_output(template)
    assert (output.waiting_for_image, output.endpoint_name, output.endpoint_config_name) == (
        True,
        f"{ENDPOINT}-serverless",
        None,
    )


def test_a_serverless_endpoint_with_its_image_has_the_catalogs_memory_and_concurrency_and_no_instance(tmp_path):
    build, template = serverless(tmp_path, image_ready=True)
    spec = get_backend("sagemaker-serverless")
    (_, endpoint_config) = only(template, "AWS::SageMaker::EndpointConfig")
    (variant,) = endpoint_config["Properties"]["ProductionVariants"]
    assert variant["ServerlessConfig"] == {"MemorySizeInMB": spec.memory_mb, "MaxConcurrency": spec.max_concurrency}
    assert "InstanceType" not in variant and "InitialInstanceCount" not in variant
    (model_id, model_) = only(template, "AWS::SageMaker::Model")
    assert model_["Properties"]["PrimaryContainer"]["Image"] == Stack.of(build).resolve(build.image_uri)
    # The image is pulled from the app's own repository (serverless pulls from ECR only), by its grant.
    found = statements(template, role_of(template, model_id))
    assert "PullImage" not in by_sid(found)
    (pull,) = [s for s in found if "ecr:BatchGetImage" in actions(s)]
    assert render_join(pull["Resource"]).endswith(":repository/inference-survey/llama-serverless")
    template.resource_count_is("AWS::SageMaker::Endpoint", 1)
    template.resource_count_is("AWS::Scheduler::Schedule", 1)
    output = serverless_output(template)
    assert (output.waiting_for_image, output.memory_mb, output.max_concurrency) == (
        False,
        spec.memory_mb,
        spec.max_concurrency,
    )


@pytest.fixture(scope="module")
def async_endpoint(tmp_path_factory) -> tuple[AsyncEndpoint, s3.Bucket, Template]:
    stack = sagemaker_stack(tmp_path_factory.mktemp("async"))
    bucket = options_bucket(stack, "Requests")
    endpoint = AsyncEndpoint(
        stack,
        "Async",
        backend=config("sagemaker-async"),
        endpoint_name=f"{ENDPOINT}-async",
        bucket=bucket,
        expires_at=EXPIRY,
    )
    return endpoint, bucket, Template.from_stack(stack)


def test_async_results_and_failures_go_to_the_stacks_bucket_and_its_topics(async_endpoint):
    endpoint, bucket, template = async_endpoint
    (_, endpoint_config) = only(template, "AWS::SageMaker::EndpointConfig")
    output_config = endpoint_config["Properties"]["AsyncInferenceConfig"]["OutputConfig"]
    bucket_ref = f"<{logical_id(bucket)}>"
    assert render_join(output_config["S3OutputPath"]) == f"s3://{bucket_ref}/async/outputs/"
    assert render_join(output_config["S3FailurePath"]) == f"s3://{bucket_ref}/async/failures/"
    assert output_config["NotificationConfig"] == {
        "SuccessTopic": {"Ref": logical_id(endpoint.success_topic)},
        "ErrorTopic": {"Ref": logical_id(endpoint.error_topic)},
    }
    # AWS makes an async endpoint with one instance at least; the scaling takes it to zero.
    (variant,) = endpoint_config["Properties"]["ProductionVariants"]
    assert (variant["InitialInstanceCount"], variant["InstanceType"]) == (
        1,
        get_backend("sagemaker-async").instance_type,
    )


def test_async_topics_take_tls_only_and_the_model_may_publish_to_them(async_endpoint):
    endpoint, _, template = async_endpoint
    template.resource_count_is("AWS::SNS::Topic", 2)
    for topic in (endpoint.success_topic, endpoint.error_topic):
        template.has_resource_properties(
            "AWS::SNS::TopicPolicy",
            {
                "Topics": [{"Ref": logical_id(topic)}],
                "PolicyDocument": {
                    "Statement": [
                        Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})
                    ]
                },
            },
        )
    found = statements(template, role_of(template, logical_id(endpoint.model)))
    published = sorted(s["Resource"]["Ref"] for s in found if actions(s) == ["sns:Publish"])
    assert published == sorted([logical_id(endpoint.success_topic), logical_id(endpoint.error_topic)])


def test_the_async_model_reads_its_inputs_and_writes_under_the_async_prefix(async_endpoint):
    endpoint, bucket, template = async_endpoint
    found = statements(template, role_of(template, logical_id(endpoint.model)))
    bucket_arn = f"<{logical_id(bucket)}.Arn>"
    (read,) = [s for s in found if "s3:GetObject*" in actions(s)]
    assert [render_join(r) for r in read["Resource"]] == [bucket_arn, f"{bucket_arn}/async/inputs/*"]
    (write,) = [s for s in found if "s3:PutObject" in actions(s)]
    assert render_join(write["Resource"]) == f"{bucket_arn}/async/*"


def test_the_async_endpoint_scales_to_zero_and_expires(async_endpoint):
    endpoint, _, template = async_endpoint
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"MinCapacity": 0, "MaxCapacity": get_backend("sagemaker-async").max_instances},
    )
    template.resource_count_is("AWS::CloudWatch::Alarm", 1)
    template.resource_count_is("AWS::Scheduler::Schedule", 1)
    value = template.to_json()["Outputs"][output_key("sagemaker-async")]["Value"]
    output = BackendOutput.parse("BackendSagemakerAsync", json.loads(render_join(value)))
    assert (output.input_prefix, output.output_prefix, output.min_instances) == ("async/inputs/", "async/outputs/", 0)
    assert output.success_topic == f"<{logical_id(endpoint.success_topic)}>"


def test_batch_is_a_model_only_with_the_shared_transform_log_group(tmp_path):
    """A transform job bills only while it runs, and python -m runner.batch starts it: no endpoint."""
    stack = sagemaker_stack(tmp_path)
    bucket = options_bucket(stack, "Requests")
    batch = BatchModel(stack, "Batch", backend=config("sagemaker-batch"), bucket=bucket)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SageMaker::Model", 1)
    template.resource_count_is("AWS::SageMaker::EndpointConfig", 0)
    template.resource_count_is("AWS::SageMaker::Endpoint", 0)
    template.resource_count_is("AWS::Logs::LogGroup", 0)  # SageMaker's own group, not the app's
    found = statements(template, role_of(template, logical_id(batch.model)))
    assert render_join(by_sid(found)["CreateTheSharedLogGroup"]["Resource"]).endswith(
        f":log-group:{TRANSFORM_LOG_GROUP}"
    )
    bucket_arn = f"<{logical_id(bucket)}.Arn>"
    (read,) = [s for s in found if "s3:GetObject*" in actions(s)]
    assert render_join(read["Resource"][1]) == f"{bucket_arn}/batch/inputs/*"
    (write,) = [s for s in found if "s3:PutObject" in actions(s)]
    assert render_join(write["Resource"]) == f"{bucket_arn}/batch/outputs/*"
    value = template.to_json()["Outputs"][output_key("sagemaker-batch")]["Value"]
    output = BackendOutput.parse("BackendSagemakerBatch", json.loads(render_join(value)))
    assert output.model_name == f"<{logical_id(batch.model)}.ModelName>"
    assert (output.instance_type, output.log_group) == (
        get_backend("sagemaker-batch").instance_type,
        TRANSFORM_LOG_GROUP,
    )
