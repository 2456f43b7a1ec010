"""One inference server's instance role, inline statements only: the SSM agent's channels, its own
image's repository, its logs, its own readiness parameter, its boot scripts, and the one action
that stops it billing: setting its own group to zero instances.

A role per server (not per stack) so each permission names one backend: the group it may scale is
told by its `inference:backend` tag, the parameters by their names, the store's objects by the
backend's and the model's prefixes (inference_constructs/store_access.py). No AWS managed policy:
`AmazonSSMManagedInstanceCore` reads every parameter of the account and
`AmazonEC2ContainerRegistryReadOnly` every repository. The SSM statement is what Session Manager
(port forwarding) and Run Command need of the instance: `ssm:UpdateInstanceInformation` and the
Message Gateway Service's four channel actions (Systems Manager user guide, "Step 2: Verify or
create an IAM role with Session Manager permissions"), and the Message Delivery Service's six
(`ec2messages:*`, which agents that cannot reach the gateway take commands by: "Reference:
ec2messages, ssmmessages, and other API operations"); none of these actions takes a resource. The
role may start no build (tests/cdk/test_policies.py).
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
SSM_AGENT_ACTIONS = (
    "ssm:UpdateInstanceInformation",
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
    "ec2messages:AcknowledgeMessage",
    "ec2messages:DeleteMessage",
    "ec2messages:FailMessage",
    "ec2messages:GetEndpoint",
    "ec2messages:GetMessages",
    "ec2messages:SendReply",
)
ECR_PULL_ACTIONS = ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")


def readiness_parameter_name(backend: str) -> str:
    return f"{PARAMETER_PREFIX}{backend}/ready"


def graphs_parameter_name(backend: str) -> str:
    """Where runner.up records the compiled graphs a backend's servers may load (no server writes it)."""
    return f"{PARAMETER_PREFIX}{backend}/graphs"


def parameter_arn(name: str) -> str:
    return f"arn:{Aws.PARTITION}:ssm:{Aws.REGION}:{Aws.ACCOUNT_ID}:parameter{name}"


class ServerInstanceRole(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, backend: str) -> None:
        super().__init__(scope, construct_id)
        self.backend = backend
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"Inference server {backend}: SSM, its image, its logs and readiness, its own group's capacity",
        )
        stack = Stack.of(self)
        self.role.add_to_policy(
            iam.PolicyStatement(sid="SsmAgentChannels", actions=list(SSM_AGENT_ACTIONS), resources=["*"])
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteOwnLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                resources=[
                    f"arn:{Aws.PARTITION}:logs:{stack.region}:{Aws.ACCOUNT_ID}:log-group:{LOG_GROUP_PREFIX}{backend}:*"
                ],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReportReadiness",
                actions=["ssm:PutParameter", "ssm:GetParameter"],
                resources=[parameter_arn(readiness_parameter_name(backend))],
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
            "AwsSolutions-IAM5[Resource::*]",
            "The SSM agent's channel actions and DescribeAutoScalingInstances take no resource; ecr:GetAuthorizationToken "
            "takes none either; SetDesiredCapacity is limited to the group tagged with this backend "
            "(aws:ResourceTag condition).",
        )
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:{stack.region}:<AWS::AccountId>:"
            f"log-group:{LOG_GROUP_PREFIX}{backend}:*]",
            "Streams inside this server's own log group.",
        )

    def allow_image(self, repository_arn: str) -> None:
        """Pull its image from that one ECR repository (the app's, or AWS's DLC repository)."""
        self.role.add_to_policy(
            iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"])
        )
        self.role.add_to_policy(
            iam.PolicyStatement(sid="PullItsImage", actions=list(ECR_PULL_ACTIONS), resources=[repository_arn])
        )

    def allow_hub_token(self, secret_name: str) -> None:
        """A gated model only: the Hugging Face token's secret."""
        secretsmanager.Secret.from_secret_name_v2(self, "HfToken", secret_name).grant_read(self.role)

    def allow_graphs_record(self) -> None:
        """Read (never write) the graphs runner.up recorded for this backend."""
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadRecordedGraphs",
                actions=["ssm:GetParameter"],
                resources=[parameter_arn(graphs_parameter_name(self.backend))],
            )
        )
