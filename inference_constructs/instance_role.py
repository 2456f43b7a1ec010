"""The one instance role every inference server uses: SSM, ECR pull, its logs, one secret."""

from __future__ import annotations

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from inference_constructs.nag import acknowledge

LOG_GROUP_PREFIX = "/inference/"
PARAMETER_PREFIX = "/inference/"


class ServerInstanceRole(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, hf_token_secret_name: str) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="Inference servers: SSM sessions, ECR pull, their CloudWatch logs, the Hugging Face token",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore"),
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonEC2ContainerRegistryReadOnly"),
            ],
        )
        self.hf_token_secret = secretsmanager.Secret.from_secret_name_v2(self, "HfToken", hf_token_secret_name)
        self.hf_token_secret.grant_read(self.role)
        stack = Stack.of(self)
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteOwnLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                resources=[
                    stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name=f"{LOG_GROUP_PREFIX}*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReportReadiness",
                actions=["ssm:PutParameter", "ssm:GetParameter"],
                resources=[f"arn:{Aws.PARTITION}:ssm:{Aws.REGION}:{Aws.ACCOUNT_ID}:parameter{PARAMETER_PREFIX}*"],
            )
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
            "AWS's own minimal policy for SSM Session Manager, the only way in to these servers.",
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly]",
            "Read-only ECR pull for server images; ecr:GetAuthorizationToken cannot be scoped to a repository.",
        )
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:{stack.region}:<AWS::AccountId>:log-group:{LOG_GROUP_PREFIX}*]",
            "Scoped to this app's log-group prefix; each server writes streams into its own group.",
        )
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter{PARAMETER_PREFIX}*]",
            "Scoped to this app's parameter prefix; each server overwrites its own readiness parameter.",
        )
