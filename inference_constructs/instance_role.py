"""One inference server's instance role: SSM, ECR pull, its logs, one secret, its own readiness
parameter, and the one action that stops it billing: setting its own group to zero instances.

A role per server (not per stack) so each permission names one backend: the group it may scale is
told by its `inference:backend` tag, the parameter by its name, the build by its project.
"""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from catalog.contract import BACKEND_TAG_KEY
from inference_constructs.nag import acknowledge

LOG_GROUP_PREFIX = "/inference/"
PARAMETER_PREFIX = "/inference/"


def readiness_parameter_name(backend: str) -> str:
    return f"{PARAMETER_PREFIX}{backend}/ready"


class ServerInstanceRole(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, backend: str, hf_token_secret_name: str) -> None:
        super().__init__(scope, construct_id)
        self.backend = backend
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"Inference server {backend}: SSM, ECR pull, its logs and readiness, its own group's capacity",
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
                    f"arn:{Aws.PARTITION}:logs:{stack.region}:{Aws.ACCOUNT_ID}:log-group:{LOG_GROUP_PREFIX}{backend}:*"
                ],
            )
        )
        parameter = readiness_parameter_name(backend)
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReportReadiness",
                actions=["ssm:PutParameter", "ssm:GetParameter"],
                resources=[f"arn:{Aws.PARTITION}:ssm:{Aws.REGION}:{Aws.ACCOUNT_ID}:parameter{parameter}"],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="FindOwnGroup", actions=["autoscaling:DescribeAutoScalingInstances"], resources=["*"]
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="TakeOwnGroupToZero",
                actions=["autoscaling:SetDesiredCapacity"],
                resources=["*"],
                conditions={"StringEquals": {f"aws:ResourceTag/{BACKEND_TAG_KEY}": backend}},
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
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:{stack.region}:<AWS::AccountId>:"
            f"log-group:{LOG_GROUP_PREFIX}{backend}:*]",
            "Streams inside this server's own log group.",
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "DescribeAutoScalingInstances takes no resource; SetDesiredCapacity is limited to the group tagged "
            "with this backend (aws:ResourceTag condition).",
        )

    def allow_build(self, project_arn: str) -> None:
        """Start (or find) the build of its image when it finds the image missing."""
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="StartItsImageBuild",
                actions=["codebuild:StartBuild", "codebuild:ListBuildsForProject", "codebuild:BatchGetBuilds"],
                resources=[project_arn],
            )
        )
