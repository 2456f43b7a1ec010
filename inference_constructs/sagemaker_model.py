"""A SageMaker model and its least-privilege execution role, shared by every SageMaker option
(real-time, serverless, asynchronous, batch transform), and the deploy's time-to-live for an
endpoint (an EventBridge Scheduler one-time schedule that deletes it: no Lambda)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from aws_cdk.region_info import FactName
from constructs import Construct

from inference_constructs.nag import acknowledge
from inference_constructs.service_roles import service_role
from inference_constructs.time_to_live import scheduled_call


def dlc_image_uri(stack: Stack, repository_and_tag: str) -> str:
    """'vllm:TAG' -> '<DLC account>.dkr.ecr.<region>.<suffix>/vllm:TAG'; a full URI passes through."""
    if "/" in repository_and_tag:
        return repository_and_tag
    account = stack.regional_fact(FactName.DLC_REPOSITORY_ACCOUNT)
    suffix = stack.regional_fact(FactName.DOMAIN_SUFFIX)
    return f"{account}.dkr.ecr.{stack.region}.{suffix}/{repository_and_tag}"


@dataclass(frozen=True)
class SageMakerModel:
    role: iam.Role
    model: sagemaker.CfnModel


def sagemaker_model(
    scope: Construct,
    *,
    purpose: str,
    image_uri: str,
    environment: dict[str, str],
    log_group_name: str,
    repository: ecr.IRepository | None = None,
    bucket: s3.IBucket | None = None,
    input_prefix: str = "",
    output_prefix: str = "",
    topics: tuple[sns.ITopic, ...] = (),
    create_log_group: bool = False,
    weights_uri: str | None = None,
    more_log_groups: tuple[str, ...] = (),
) -> SageMakerModel:
    """The model (one container) and the role SageMaker runs it with, made in `scope` as
    `ExecutionRole` and `Model`: pull its image, write its logs and metrics, and, for the
    options that use the stack's bucket, read inputs under one prefix and write outputs under
    another; publish to the async result topics. With `weights_uri` (the app's store's copy of the
    model), SageMaker copies the weights from there into the container before it starts
    (ModelDataSource, an uncompressed S3 prefix: SageMaker developer guide, "Deploy uncompressed
    models"), instead of the engine downloading them from the hub. `more_log_groups`: other groups
    the role writes streams in (an inference component's container logs under its own name)."""
    stack = Stack.of(scope)
    role = service_role(
        scope, "ExecutionRole", "sagemaker.amazonaws.com", f"{purpose}: pull the image, write its logs and metrics"
    )
    role.add_to_policy(iam.PolicyStatement(sid="EcrAuth", actions=["ecr:GetAuthorizationToken"], resources=["*"]))
    if repository is not None:
        repository.grant_pull(role)
    else:
        path = image_uri.split("/", 1)[1].split(":", 1)[0].split("@", 1)[0]
        registry_account = image_uri.split(".", 1)[0]
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PullImage",
                actions=["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"],
                resources=[f"arn:{stack.partition}:ecr:{stack.region}:{registry_account}:repository/{path}"],
            )
        )
    streams = [f"log-group:{name}:*" for name in (log_group_name, *more_log_groups)]
    if create_log_group:
        # A group SageMaker shares across the account's jobs (not the app's): the first job in a
        # region creates it (SageMaker developer guide: the execution role's CloudWatch Logs actions).
        role.add_to_policy(
            iam.PolicyStatement(
                sid="CreateTheSharedLogGroup",
                actions=["logs:CreateLogGroup"],
                resources=[f"arn:{Aws.PARTITION}:logs:{stack.region}:{Aws.ACCOUNT_ID}:log-group:{log_group_name}"],
            )
        )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="WriteLogs",
            actions=["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            resources=[f"arn:{Aws.PARTITION}:logs:{stack.region}:{Aws.ACCOUNT_ID}:{group}" for group in streams],
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="PublishMetrics",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}},
        )
    )
    acknowledge(
        role,
        "AwsSolutions-IAM5[Resource::*]",
        "ecr:GetAuthorizationToken and cloudwatch:PutMetricData take no resource; metrics are limited by namespace.",
    )
    for group in streams:
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:{stack.region}:<AWS::AccountId>:{group}]",
            "Streams inside the model's own log group only.",
        )
    if bucket is not None:
        bucket.grant_read(role, f"{input_prefix}*")
        bucket.grant_put(role, f"{output_prefix}*")
        for finding in ("Action::s3:GetBucket*", "Action::s3:GetObject*", "Action::s3:List*", "Action::s3:Abort*"):
            acknowledge(role, f"AwsSolutions-IAM5[{finding}]", "CDK's grant on the stack's own bucket.")
        bucket_id = stack.resolve(stack.get_logical_id(bucket.node.default_child))  # type: ignore[arg-type]
        for prefix in (input_prefix, output_prefix):
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{prefix}*]",
                "Objects under this option's own prefix of the stack's bucket.",
            )
    for topic in topics:
        topic.grant_publish(role)
    source = None
    if weights_uri:
        bucket_name, _, prefix = weights_uri.removeprefix("s3://").partition("/")
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadTheStagedWeights",
                actions=["s3:GetObject"],
                resources=[f"arn:{stack.partition}:s3:::{bucket_name}/{prefix}*"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ListTheStagedWeights",
                actions=["s3:ListBucket"],
                resources=[f"arn:{stack.partition}:s3:::{bucket_name}"],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{bucket_name}/{prefix}*]",
            "The one model's files in the app's store in this region.",
        )
        source = sagemaker.CfnModel.ModelDataSourceProperty(
            s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                s3_uri=weights_uri, s3_data_type="S3Prefix", compression_type="None"
            )
        )
    model = sagemaker.CfnModel(
        scope,
        "Model",
        execution_role_arn=role.role_arn,
        primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
            image=image_uri, mode="SingleModel", environment=environment, model_data_source=source
        ),
        # Weights staged from the store: the container needs no network at all (SageMaker developer
        # guide, "Run training and inference containers in internet-free mode"; the model data is
        # still copied in by SageMaker).
        enable_network_isolation=True if weights_uri else None,
    )
    # The image pull needs the policy in place before SageMaker validates the model.
    model.node.add_dependency(role.node.find_child("DefaultPolicy"))
    acknowledge(
        model,
        "AwsSolutions-SM1",
        "The model downloads public weights from Hugging Face; without a VPC it needs no NAT gateway.",
    )
    return SageMakerModel(role=role, model=model)


def endpoint_time_to_live(scope: Construct, endpoint_name: str, expires_at: str) -> scheduler.CfnSchedule:
    """A one-time schedule at the expiry that deletes the endpoint, with a role that may delete this
    endpoint only."""
    stack = Stack.of(scope)
    return scheduled_call(
        scope,
        expires_at=expires_at,
        what=f"Delete endpoint {endpoint_name}",
        api="sagemaker:deleteEndpoint",
        request={"EndpointName": endpoint_name},
        action="sagemaker:DeleteEndpoint",
        resource=f"arn:{Aws.PARTITION}:sagemaker:{stack.region}:{Aws.ACCOUNT_ID}:endpoint/{endpoint_name}",
    )


def owned_endpoint(
    scope: Construct,
    endpoint_name: str,
    config: sagemaker.CfnEndpointConfig,
    log_group: logs.LogGroup,
    expires_at: str | None,
) -> sagemaker.CfnEndpoint:
    """The endpoint under its fixed name (the runner describes it, and recreates it after the
    time-to-live, by that name), made after its owned log group, with the deploy's time-to-live."""
    endpoint = sagemaker.CfnEndpoint(
        scope, "Endpoint", endpoint_name=endpoint_name, endpoint_config_name=config.attr_endpoint_config_name
    )
    endpoint.node.add_dependency(log_group)
    if expires_at:
        endpoint_time_to_live(scope, endpoint_name, expires_at)
    return endpoint
