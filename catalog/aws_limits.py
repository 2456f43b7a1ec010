"""The AWS limits the app's templates touch, each with its source, and the longest value each kind
of CloudFormation token can resolve to.

`inference_constructs/template_limits.py` holds every synthesized template to these limits with
each token counted at its longest, on every synth (app.py refuses a template past one) and in the
tests; docs/deploying.md prints the table (tests/docs holds it to this module).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AwsLimit:
    key: str
    what: str
    value: int
    source: str


EC2_USER_GUIDE = 'EC2 User Guide, "Work with instance user data"'
CFN_QUOTAS = 'CloudFormation User Guide, "Understand CloudFormation quotas"'
IAM_QUOTAS = 'IAM User Guide, "IAM and AWS STS quotas"'
SSM_PARAMETERS = 'Systems Manager User Guide, "Managing parameter tiers"'

LIMITS: dict[str, AwsLimit] = {
    limit.key: limit
    for limit in (
        AwsLimit("user-data", "EC2 user data, bytes before base64", 16_384, EC2_USER_GUIDE),
        AwsLimit(
            "user-data-goal",
            "this app's user data at most, bytes (a quarter of EC2's: only deploy-time values travel in it)",
            4_096,
            "this app (inference_constructs/user_data.py USER_DATA_GOAL)",
        ),
        AwsLimit("parameter-value", "SSM parameter value, standard tier, characters", 4_096, SSM_PARAMETERS),
        AwsLimit(
            "parameter-name",
            "SSM parameter name, fully qualified, characters",
            1_011,
            "Systems Manager API Reference, PutParameter (Name)",
        ),
        AwsLimit(
            "role-inline-policies",
            "IAM role, all inline policies together, characters (whitespace not counted)",
            10_240,
            IAM_QUOTAS,
        ),
        AwsLimit("managed-policy", "IAM managed policy, characters (whitespace not counted)", 6_144, IAM_QUOTAS),
        AwsLimit("trust-policy", "IAM role trust policy, characters (the default quota)", 2_048, IAM_QUOTAS),
        AwsLimit("template-body", "CloudFormation template from S3 (the CDK uploads it), bytes", 1_048_576, CFN_QUOTAS),
        AwsLimit("resources", "CloudFormation resources per template", 500, CFN_QUOTAS),
        AwsLimit("outputs", "CloudFormation outputs per template", 200, CFN_QUOTAS),
        AwsLimit("parameters", "CloudFormation parameters per template", 200, CFN_QUOTAS),
        AwsLimit("mappings", "CloudFormation mappings per template", 200, CFN_QUOTAS),
        AwsLimit("logical-id", "CloudFormation logical id, characters", 255, CFN_QUOTAS),
        AwsLimit("stack-name", "CloudFormation stack name, characters", 128, CFN_QUOTAS),
        AwsLimit(
            "output-value",
            "CloudFormation output value, characters",
            4_096,
            "the app's own bound: AWS publishes no size for an output value (its description's is 4K)",
        ),
        AwsLimit(
            "log-group-name",
            "CloudWatch Logs group name, characters",
            512,
            "CloudWatch Logs API Reference, CreateLogGroup (logGroupName)",
        ),
        AwsLimit(
            "bucket-name", "S3 bucket name, characters", 63, 'S3 User Guide, "General purpose bucket naming rules"'
        ),
        AwsLimit(
            "repository-name",
            "ECR repository name, characters",
            256,
            "ECR API Reference, CreateRepository (repositoryName)",
        ),
        AwsLimit(
            "codebuild-project-name",
            "CodeBuild project name, characters",
            150,
            "CodeBuild API Reference, CreateProject (name: ProjectName, 2 to 150)",
        ),
        AwsLimit(
            "sagemaker-name",
            "SageMaker endpoint, endpoint config and model name, characters",
            63,
            "SageMaker API Reference, CreateEndpoint (EndpointName)",
        ),
        AwsLimit(
            "schedule-name",
            "EventBridge Scheduler schedule name, characters",
            64,
            "EventBridge Scheduler API Reference, CreateSchedule (Name)",
        ),
        AwsLimit(
            "codebuild-description",
            "CodeBuild project description, characters",
            255,
            "CodeBuild API Reference, CreateProject (description)",
        ),
        AwsLimit("role-description", "IAM role description, characters", 1_000, "IAM API Reference, CreateRole"),
        AwsLimit(
            "rule-description", "EventBridge rule description, characters", 512, "EventBridge API Reference, PutRule"
        ),
        AwsLimit(
            "schedule-description",
            "EventBridge Scheduler schedule description, characters",
            512,
            "EventBridge Scheduler API Reference, CreateSchedule",
        ),
        AwsLimit(
            "run-command-document",
            "Run Command document with its runtime parameters, bytes",
            64 * 1024,
            'Systems Manager User Guide, "Creating SSM document content" (the 64 KB quota includes the '
            "parameters given at run time); checked on the commands runner.bench --in-region sends",
        ),
    )
}

# The longest value each pseudo parameter resolves to today: account ids are 12 digits; the
# longest region name is us-isof-south-1 and the longest partition aws-us-gov (botocore
# data/partitions.json); the longest URL suffix amazonaws.com.cn (same file); a stack name is at
# most 128 characters (CFN_QUOTAS); a stack id is its ARN with a 36-character UUID.
PSEUDO_MAX = {
    "AWS::AccountId": 12,
    "AWS::Region": 15,
    "AWS::Partition": 10,
    "AWS::URLSuffix": 16,
    "AWS::StackName": 128,
    "AWS::NoValue": 0,
}
PSEUDO_MAX["AWS::StackId"] = (
    len("arn:") + PSEUDO_MAX["AWS::Partition"] + len(":cloudformation:") + PSEUDO_MAX["AWS::Region"] + 1
) + (PSEUDO_MAX["AWS::AccountId"] + len(":stack/") + PSEUDO_MAX["AWS::StackName"] + 1 + 36)
# An Availability Zone's name: the region's and a letter, or a Local Zone's (us-west-2-lax-1a): at
# most the region's, a group of up to 8 characters and a letter (EC2 User Guide, "Regions and Zones").
AZ_NAME_MAX = PSEUDO_MAX["AWS::Region"] + 10
# An AMI id: ami- and 17 hexadecimal digits (EC2 API Reference, Image).
AMI_ID_MAX = 21
# A dynamic reference resolves to a parameter's or secret's value (standard parameters: 4 KB).
DYNAMIC_REFERENCE_MAX = LIMITS["parameter-value"].value
# Names CloudFormation makes when a template gives none: at most the service's own limit.
GENERATED_NAME_MAX = {
    "AWS::IAM::Role": 64,
    "AWS::IAM::InstanceProfile": 128,
    "AWS::CodeBuild::Project": LIMITS["codebuild-project-name"].value,
    "AWS::S3::Bucket": LIMITS["bucket-name"].value,
    "AWS::ECR::Repository": LIMITS["repository-name"].value,
    "AWS::Logs::LogGroup": LIMITS["log-group-name"].value,
    "AWS::SSM::Parameter": LIMITS["parameter-name"].value,
    "AWS::AutoScaling::AutoScalingGroup": 255,
    "AWS::SNS::Topic": 256,
    "AWS::Events::Rule": 64,
    "AWS::Scheduler::Schedule": LIMITS["schedule-name"].value,
    "AWS::SageMaker::Endpoint": LIMITS["sagemaker-name"].value,
    "AWS::SageMaker::EndpointConfig": LIMITS["sagemaker-name"].value,
    "AWS::SageMaker::Model": LIMITS["sagemaker-name"].value,
}


def limits_markdown() -> str:
    """The table docs/deploying.md prints (tests/cdk/test_template_limits.py holds the two equal)."""
    rows = ["| limit | value | source |", "|---|---|---|"]
    rows += [f"| {limit.what} | {limit.value:,} | {limit.source} |" for limit in LIMITS.values()]
    return "\n".join(rows) + "\n"
