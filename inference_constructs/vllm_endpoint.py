"""A SageMaker real-time endpoint running AWS's vLLM container, with a least-privilege role.

The endpoint's log group is created here (SageMaker would otherwise create it at run time and
`cdk destroy` would leave it behind). At the deploy's expiry an EventBridge Scheduler schedule
(one-time, no Lambda) deletes the endpoint, the part that bills; its model and endpoint config
stay with the stack, and `runner.up` recreates the endpoint from that config under the same name,
so CloudFormation's record of it is true again (an unchanged template would not recreate it).
"""

from __future__ import annotations

import json

from aws_cdk import Aws, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_scheduler as scheduler
from aws_cdk.region_info import FactName
from constructs import Construct

from catalog.config import BackendConfig, sagemaker_environment
from catalog.contract import BackendOutput, output_key
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge


def dlc_image_uri(stack: Stack, repository_and_tag: str) -> str:
    """'vllm:TAG' -> '<DLC account>.dkr.ecr.<region>.<suffix>/vllm:TAG'; a full URI passes through."""
    if "/" in repository_and_tag:
        return repository_and_tag
    account = stack.regional_fact(FactName.DLC_REPOSITORY_ACCOUNT)
    suffix = stack.regional_fact(FactName.DOMAIN_SUFFIX)
    return f"{account}.dkr.ecr.{stack.region}.{suffix}/{repository_and_tag}"


class VllmSageMakerEndpoint(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        backend: BackendConfig,
        endpoint_name: str,
        expires_at: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        spec = backend.spec
        stack = Stack.of(self)
        if not (spec.image and spec.instance_type):
            raise ValueError(f"backend {spec.name} has no image or instance type")
        image = dlc_image_uri(stack, spec.image)
        repository = image.split("/", 1)[1].split(":", 1)[0].split("@", 1)[0]
        registry_account = image.split(".", 1)[0]

        self.log_group = owned_log_group(self, "Logs", f"/aws/sagemaker/Endpoints/{endpoint_name}")
        self.role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"SageMaker endpoint {endpoint_name}: pull the vLLM image, write its logs and metrics",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(sid="EcrAuth", actions=["ecr:GetAuthorizationToken"], resources=["*"])
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="PullImage",
                actions=["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"],
                resources=[f"arn:{stack.partition}:ecr:{stack.region}:{registry_account}:repository/{repository}"],
            )
        )
        log_streams = f"log-group:/aws/sagemaker/Endpoints/{endpoint_name}:*"
        log_streams_arn = f"arn:{Aws.PARTITION}:logs:{stack.region}:{Aws.ACCOUNT_ID}:{log_streams}"
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                resources=[log_streams_arn],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="PublishMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}},
            )
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken and cloudwatch:PutMetricData take no resource; metrics are limited by namespace.",
        )
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:{stack.region}:<AWS::AccountId>:{log_streams}]",
            "Streams inside the endpoint's own log group only.",
        )

        self.model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=self.role.role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image,
                mode="SingleModel",
                environment=sagemaker_environment(spec.serve_flags, spec.model_id),
            ),
        )
        # The image pull needs the policy in place before SageMaker validates the model.
        self.model.node.add_dependency(self.role.node.find_child("DefaultPolicy"))
        acknowledge(
            self.model,
            "AwsSolutions-SM1",
            "The model downloads public weights from Hugging Face; without a VPC it needs no NAT gateway.",
        )
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name="AllTraffic",
                    model_name=self.model.attr_model_name,
                    initial_instance_count=1,
                    instance_type=spec.instance_type,
                    container_startup_health_check_timeout_in_seconds=backend.startup_timeout_seconds,
                    model_data_download_timeout_in_seconds=backend.startup_timeout_seconds,
                )
            ],
        )
        acknowledge(
            self.endpoint_config,
            "AwsSolutions-SM2",
            "Instance storage holds only public model weights; a customer-managed KMS key would outlive cdk destroy.",
        )
        self.endpoint = sagemaker.CfnEndpoint(
            self,
            "Endpoint",
            endpoint_name=endpoint_name,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
        )
        self.endpoint.node.add_dependency(self.log_group)
        self.time_to_live = self._time_to_live(endpoint_name, expires_at) if expires_at else None

        self.output = BackendOutput(
            name=spec.name,
            kind=spec.kind.value,
            region=stack.region,
            model_id=spec.model_id,
            port=spec.port,
            health_path=spec.health_path,
            endpoint_name=endpoint_name,
            instance_type=spec.instance_type,
            log_group=self.log_group.log_group_name,
            expires_at=expires_at,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
        )
        CfnOutput(
            stack,
            output_key(spec.name),
            value=stack.to_json_string(self.output.to_json()),
            description=f"{spec.title}: backend contract v{self.output.contract} (JSON)",
        )

    def _time_to_live(self, endpoint_name: str, expires_at: str) -> scheduler.CfnSchedule:
        """A one-time schedule at the expiry that deletes the endpoint (Scheduler's universal
        target for SageMaker DeleteEndpoint), with a role that may delete this endpoint only."""
        stack = Stack.of(self)
        endpoint_arn = f"arn:{Aws.PARTITION}:sagemaker:{stack.region}:{Aws.ACCOUNT_ID}:endpoint/{endpoint_name}"
        role = iam.Role(
            self,
            "TimeToLiveRole",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"),
            description=f"Deletes endpoint {endpoint_name} at the deploy's time-to-live",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="DeleteThisEndpoint", actions=["sagemaker:DeleteEndpoint"], resources=[endpoint_arn]
            )
        )
        # Scheduler's `at()` takes local time in the schedule's zone: the expiry without its Z, in UTC.
        return scheduler.CfnSchedule(
            self,
            "TimeToLive",
            description=f"Delete endpoint {endpoint_name} at the deploy's time-to-live (runner.up brings it back)",
            schedule_expression=f"at({expires_at.removesuffix('Z')})",
            schedule_expression_timezone="UTC",
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            target=scheduler.CfnSchedule.TargetProperty(
                arn="arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint",
                role_arn=role.role_arn,
                input=json.dumps({"EndpointName": endpoint_name}),
            ),
        )
