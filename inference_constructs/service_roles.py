"""Roles an AWS service assumes for the app, trusted for this account's own requests only.

Each trust policy names the service and carries the confused-deputy conditions the service
documents: `aws:SourceAccount` (the account whose resource makes the request) and, where the
service sends it, `aws:SourceArn` limited to this account's resources in the region (IAM user
guide, "The confused deputy problem"; SageMaker's "Cross-service confused deputy prevention" asks
for `arn:aws:sagemaker:<region>:<account>:*` as it is; EventBridge and Scheduler send the rule's
or schedule group's ARN). An EC2 instance role has none: EC2 documents no such keys for instance
profiles (inference_constructs/instance_role.py).
"""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

# The ARN pattern of the resources each service makes its requests for, in this account and region.
SOURCE_ARNS = {
    "codebuild.amazonaws.com": "codebuild:{region}:{account}:project/*",
    "sagemaker.amazonaws.com": "sagemaker:{region}:{account}:*",
    "events.amazonaws.com": "events:{region}:{account}:rule/*",
    "scheduler.amazonaws.com": "scheduler:{region}:{account}:schedule-group/*",
}


def trusted_service(scope: Construct, service: str) -> iam.ServicePrincipal:
    region = Stack.of(scope).region
    conditions: dict[str, dict[str, str]] = {"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
    if service in SOURCE_ARNS:
        pattern = SOURCE_ARNS[service].format(region=region, account=Aws.ACCOUNT_ID)
        conditions["ArnLike"] = {"aws:SourceArn": f"arn:{Aws.PARTITION}:{pattern}"}
    return iam.ServicePrincipal(service, conditions=conditions)


def service_role(scope: Construct, construct_id: str, service: str, description: str) -> iam.Role:
    return iam.Role(scope, construct_id, assumed_by=trusted_service(scope, service), description=description)
