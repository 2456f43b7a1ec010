"""Log groups the stacks own, so `cdk destroy` removes them and nothing is kept forever."""

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from constructs import Construct

RETENTION = logs.RetentionDays.TWO_WEEKS


def owned_log_group(scope: Construct, construct_id: str, name: str) -> logs.LogGroup:
    return logs.LogGroup(
        scope, construct_id, log_group_name=name, retention=RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
