"""The deploy's time-to-live: one EventBridge Scheduler schedule at the expiry that calls one AWS
API (Scheduler's universal target), with a role that may make that one call on that one resource.

Why Scheduler and not an Auto Scaling scheduled action: AWS deletes a one-time scheduled action
once it has run (DescribeScheduledActions lists only actions that have not; a later delete answers
"Scheduled action name not found", hashicorp/terraform-provider-aws#19446), so CloudFormation's
record of it goes stale, and Auto Scaling refuses an action whose start is in the past. A
schedule CloudFormation makes stays after it fires (`AWS::Scheduler::Schedule` has no
ActionAfterCompletion; the API's default is NONE), so `cdk destroy` deletes a schedule that
exists. Its id carries the expiry, so a deploy with a new expiry makes a new schedule.
"""

from __future__ import annotations

import json

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from inference_constructs.nag import acknowledge
from inference_constructs.service_roles import service_role


def expiry_id(expires_at: str) -> str:
    return "".join(c for c in expires_at if c.isdigit())


def scheduled_call(
    scope: Construct,
    *,
    expires_at: str,
    what: str,
    api: str,
    request: dict[str, object],
    action: str,
    resource: str,
    construct_id: str = "TimeToLive",
    wildcard: tuple[str, str] | None = None,
) -> scheduler.CfnSchedule:
    """At `expires_at` (UTC, ISO with Z), `api` ('sagemaker:deleteEndpoint') with `request`;
    `wildcard` is (finding, why) where the resource's ARN cannot be named whole."""
    role = service_role(scope, f"{construct_id}Role", "scheduler.amazonaws.com", f"{what} at the deploy's time-to-live")
    role.add_to_policy(iam.PolicyStatement(sid="TheOneCall", actions=[action], resources=[resource]))
    if wildcard:
        acknowledge(role, f"AwsSolutions-IAM5[{wildcard[0]}]", wildcard[1])
    # Scheduler's `at()` takes local time in the schedule's zone: the expiry without its Z, in UTC.
    return scheduler.CfnSchedule(
        scope,
        construct_id,
        description=f"{what} at the deploy's time-to-live (runner.up brings it back)",
        schedule_expression=f"at({expires_at.removesuffix('Z')})",
        schedule_expression_timezone="UTC",
        flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
        target=scheduler.CfnSchedule.TargetProperty(
            arn=f"arn:{Stack.of(scope).partition}:scheduler:::aws-sdk:{api}",
            role_arn=role.role_arn,
            input=json.dumps(request),
        ),
    )
