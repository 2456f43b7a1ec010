"""Application Auto Scaling for SageMaker endpoints: real-time between its bounds on concurrent
requests per model, asynchronous between zero and its maximum on the queue, and the copies of an
inference component between theirs on concurrent requests per copy (ComponentScaling).

Real-time: target tracking on `SageMakerVariantConcurrentRequestsPerModelHighResolution`, the
predefined high-resolution metric (Application Auto Scaling's MetricType list), which scales out
on in-flight requests rather than on a minute of invocations. Asynchronous: AWS's guide to
autoscaling an asynchronous endpoint ("Autoscale an asynchronous endpoint", SageMaker developer
guide): MinCapacity 0, target tracking on `ApproximateBacklogSizePerInstance`, and, since target
tracking cannot leave zero (no instance, no per-instance figure), a step policy that adds one
instance when the `HasBacklogWithoutCapacity` alarm fires. Both use Application Auto Scaling's
service-linked role, which it creates itself.
"""

from __future__ import annotations

from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from catalog.backends import BackendSpec

VARIANT = "AllTraffic"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
# Backlog per instance the async endpoint aims at (requests waiting per running instance): one
# instance drains a handful of generations a minute on an L4.
ASYNC_BACKLOG_TARGET = 5.0
# Seconds; scale-in waits longer than scale-out, so a burst's tail does not stop the instance
# the next request would use.
SCALE_OUT_COOLDOWN_S = 60
SCALE_IN_COOLDOWN_S = 600


def _target(scope: Construct, endpoint: sagemaker.CfnEndpoint, low: int, high: int) -> appscaling.CfnScalableTarget:
    target = appscaling.CfnScalableTarget(
        scope,
        "Target",
        service_namespace="sagemaker",
        resource_id=f"endpoint/{endpoint.attr_endpoint_name}/variant/{VARIANT}",
        scalable_dimension=DIMENSION,
        min_capacity=low,
        max_capacity=high,
    )
    return target  # after the endpoint: its ResourceId reads the endpoint's name attribute


def one_more_on_alarm(
    scope: Construct, target: appscaling.CfnScalableTarget, policy_name: str, *, aggregation: str
) -> appscaling.CfnScalingPolicy:
    """The step policy an alarm of requests finding nothing to serve them drives out of zero: one
    more (an instance, a copy) each time, then the scale-out cooldown."""
    return appscaling.CfnScalingPolicy(
        scope,
        "LeaveZero",
        policy_name=policy_name,
        policy_type="StepScaling",
        scaling_target_id=target.ref,
        step_scaling_policy_configuration=appscaling.CfnScalingPolicy.StepScalingPolicyConfigurationProperty(
            adjustment_type="ChangeInCapacity",
            metric_aggregation_type=aggregation,
            cooldown=SCALE_OUT_COOLDOWN_S,
            step_adjustments=[
                appscaling.CfnScalingPolicy.StepAdjustmentProperty(metric_interval_lower_bound=0, scaling_adjustment=1)
            ],
        ),
    )


class RealTimeScaling(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, endpoint: sagemaker.CfnEndpoint, backend: BackendSpec):
        super().__init__(scope, construct_id)
        self.target = _target(self, endpoint, backend.min_instances, backend.max_instances)
        self.policy = appscaling.CfnScalingPolicy(
            self,
            "ConcurrentRequests",
            policy_name=f"{backend.name}-concurrent-requests",
            policy_type="TargetTrackingScaling",
            scaling_target_id=self.target.ref,
            target_tracking_scaling_policy_configuration=appscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                target_value=float(backend.target_concurrency or 1),
                predefined_metric_specification=appscaling.CfnScalingPolicy.PredefinedMetricSpecificationProperty(
                    predefined_metric_type="SageMakerVariantConcurrentRequestsPerModelHighResolution"
                ),
                scale_out_cooldown=SCALE_OUT_COOLDOWN_S,
                scale_in_cooldown=SCALE_IN_COOLDOWN_S,
            ),
        )


class AsyncScaling(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, endpoint: sagemaker.CfnEndpoint, backend: BackendSpec):
        super().__init__(scope, construct_id)
        name = endpoint.attr_endpoint_name
        self.target = _target(self, endpoint, backend.min_instances, backend.max_instances)
        self.backlog = appscaling.CfnScalingPolicy(
            self,
            "Backlog",
            policy_name=f"{backend.name}-backlog-per-instance",
            policy_type="TargetTrackingScaling",
            scaling_target_id=self.target.ref,
            target_tracking_scaling_policy_configuration=appscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                target_value=ASYNC_BACKLOG_TARGET,
                customized_metric_specification=appscaling.CfnScalingPolicy.CustomizedMetricSpecificationProperty(
                    metric_name="ApproximateBacklogSizePerInstance",
                    namespace="AWS/SageMaker",
                    dimensions=[appscaling.CfnScalingPolicy.MetricDimensionProperty(name="EndpointName", value=name)],
                    statistic="Average",
                ),
                scale_out_cooldown=SCALE_OUT_COOLDOWN_S,
                scale_in_cooldown=SCALE_IN_COOLDOWN_S,
            ),
        )
        self.leave_zero = one_more_on_alarm(
            self, self.target, f"{backend.name}-has-backlog-without-capacity", aggregation="Average"
        )
        self.alarm = cloudwatch.CfnAlarm(
            self,
            "HasBacklogWithoutCapacity",
            alarm_description=f"{backend.name}: requests wait and no instance runs: start one",
            namespace="AWS/SageMaker",
            metric_name="HasBacklogWithoutCapacity",
            dimensions=[cloudwatch.CfnAlarm.DimensionProperty(name="EndpointName", value=name)],
            statistic="Average",
            period=60,
            evaluation_periods=2,
            datapoints_to_alarm=2,
            threshold=1,
            comparison_operator="GreaterThanOrEqualToThreshold",
            treat_missing_data="missing",
            alarm_actions=[self.leave_zero.ref],
        )


# An endpoint of inference components scales its copies: Application Auto Scaling's scalable
# dimension for them, and its predefined high-resolution metric of concurrent requests per copy
# (Application Auto Scaling API reference, ScalableDimension and MetricType; the CloudFormation
# schemas of AWS::ApplicationAutoScaling::ScalableTarget and ::ScalingPolicy list both).
COPY_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
COPY_METRIC = "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
# What SageMaker counts when a request finds no copy to serve it ("SageMaker AI emits this metric
# when an endpoint receives an inference request, but the endpoint has no active instances to
# serve the request": SageMaker developer guide, "Scale an endpoint to zero instances").
NO_CAPACITY_METRIC = "NoCapacityInvocationFailures"


def no_capacity_alarm_name(component_name: str) -> str:
    return f"{component_name}-no-capacity"


class ComponentScaling(Construct):
    """An inference component's copies between their bounds on concurrent requests per copy, and,
    with a minimum of 0, out of zero as AWS's "Scale an endpoint to zero instances" sets it up: a
    step policy (ChangeInCapacity +1 from a lower bound of 0, Maximum, a 60 s cooldown) that a
    CloudWatch alarm on `NoCapacityInvocationFailures` for the component starts (Sum over 60 s,
    one datapoint, GreaterThanThreshold 1: the guide's values, so a lone request that is not sent
    again does not wake it; the runner's client sends it again until a copy answers). Target
    tracking alone cannot leave zero: with no copy there is no per-copy figure. Managed instance
    scaling then adds and removes the instances the copies need."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        component: sagemaker.CfnInferenceComponent,
        component_name: str,
        backend: BackendSpec,
        expires_at: str | None = None,
    ):
        super().__init__(scope, construct_id)
        self.target = appscaling.CfnScalableTarget(
            self,
            "Target",
            service_namespace="sagemaker",
            resource_id=f"inference-component/{component_name}",
            scalable_dimension=COPY_DIMENSION,
            min_capacity=backend.min_copies,
            max_capacity=backend.max_copies,
        )
        # The name is fixed text, not the component's attribute: register once it exists.
        self.target.node.add_dependency(component)
        self.policy = appscaling.CfnScalingPolicy(
            self,
            "ConcurrentRequestsPerCopy",
            policy_name=f"{backend.name}-concurrent-requests-per-copy",
            policy_type="TargetTrackingScaling",
            scaling_target_id=self.target.ref,
            target_tracking_scaling_policy_configuration=appscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                target_value=float(backend.target_concurrency or 1),
                predefined_metric_specification=appscaling.CfnScalingPolicy.PredefinedMetricSpecificationProperty(
                    predefined_metric_type=COPY_METRIC
                ),
                scale_out_cooldown=SCALE_OUT_COOLDOWN_S,
                scale_in_cooldown=SCALE_IN_COOLDOWN_S,
            ),
        )
        self.leave_zero: appscaling.CfnScalingPolicy | None = None
        self.alarm: cloudwatch.CfnAlarm | None = None
        if backend.min_copies > 0:
            return
        self.leave_zero = one_more_on_alarm(self, self.target, f"{backend.name}-no-capacity", aggregation="Maximum")
        # Named, so the time-to-live's call can disable its actions by name. Its description carries
        # the expiry: a deploy with a new one (runner.up, --extend) makes CloudFormation write the
        # alarm again, with its actions on (ActionsEnabled, the schema's default too), which re-arms
        # an alarm the time-to-live disarmed.
        armed = f" (armed until {expires_at}: the time-to-live disables its actions)" if expires_at else ""
        self.alarm = cloudwatch.CfnAlarm(
            self,
            "NoCapacity",
            alarm_name=no_capacity_alarm_name(component_name),
            alarm_description=f"{backend.name}: a request found no copy to serve it: start one{armed}",
            actions_enabled=True,
            namespace="AWS/SageMaker",
            metric_name=NO_CAPACITY_METRIC,
            dimensions=[cloudwatch.CfnAlarm.DimensionProperty(name="InferenceComponentName", value=component_name)],
            statistic="Sum",
            period=60,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            threshold=1,
            comparison_operator="GreaterThanThreshold",
            alarm_actions=[self.leave_zero.ref],
        )
