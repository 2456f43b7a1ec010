"""A SageMaker endpoint of inference components: the endpoint holds no model; the model (the same
vLLM DLC model definition as the real-time endpoint, sagemaker_model.py) runs as copies of one
inference component, each on whole accelerators of an instance, that Application Auto Scaling
adds and removes (endpoint_scaling.py ComponentScaling) while SageMaker's managed instance
scaling adds and removes the instances they need, down to none.

Declared as AWS documents it (every name below is in CloudFormation's registry schema of
AWS::SageMaker::EndpointConfig and AWS::SageMaker::InferenceComponent, as cfn-lint 1.58.0 ships
them, and in the SageMaker API reference):
- the endpoint config's one production variant has an instance type and no ModelName,
  `ManagedInstanceScaling` (Status ENABLED, MinInstanceCount from `minInstances`, 0 by default,
  MaxInstanceCount from `maxInstances`; ScaleInPolicy IDLE_RELEASE, "releases instances that have
  no hosted inference component copies"), and `RoutingConfig` (its RoutingStrategy, with a
  PrefixAwareRoutingConfig for PREFIX_AWARE); the config names the execution role SageMaker runs
  the components with (`ExecutionRoleArn`), the model's own;
- InitialInstanceCount is at least 1, as in AWS's scale-to-zero example: the endpoint starts with
  one instance, and scaling takes it to zero once no copy runs;
- the inference component: Specification (ModelName, ComputeResourceRequirements with
  NumberOfAcceleratorDevicesRequired and MinMemoryRequiredInMb, StartupParameters with the
  startup bound) and RuntimeConfig CopyCount (`copies`).

The deploy's time-to-live sets the component's copies to zero (UpdateInferenceComponentRuntime
Config, one call on one resource): its instances go once no copy runs, and the component, its
scaling and CloudFormation's record of them stay. A second call at the same time disables the
actions of the alarm that starts a copy at zero (DisableAlarmActions on that alarm alone), so a
request after the expiry starts nothing; `runner.up` enables them again, and so does any deploy
with a new expiry (the alarm's description carries it, so CloudFormation writes the alarm again
with ActionsEnabled on; only a real account confirms that update re-arms it).

A first deploy keeps its instance until scale-in: CopyCount 1 and InitialInstanceCount 1, and
scale-in waits for 15 minutes of idle data points (docs/options.md). A later deploy that changes
the model (a lane, an image) updates the component's Specification in place: with every GPU of
`maxInstances` instances taken by copies, there is no room for a new copy beside the old one, and
only a real account shows whether SageMaker then replaces it in place or waits (docs/options.md).
"""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from catalog.backends import PREFIX_AWARE
from catalog.config import BackendConfig, sagemaker_environment
from inference_constructs.backend_output import backend_output, publish_output
from inference_constructs.endpoint_scaling import VARIANT, ComponentScaling
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge
from inference_constructs.sagemaker_model import dlc_image_uri, owned_endpoint, sagemaker_model
from inference_constructs.time_to_live import expiry_id, scheduled_call


def component_name(endpoint_name: str) -> str:
    """The component's fixed name: every request names it, and its scaling target is made from it."""
    return f"{endpoint_name}-model"


def component_log_group(component: str) -> str:
    """Where SageMaker writes a component's container logs."""
    return f"/aws/sagemaker/InferenceComponents/{component}"


class InferenceComponentEndpoint(Construct):
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
        name = component_name(endpoint_name)
        log_group_name = f"/aws/sagemaker/Endpoints/{endpoint_name}"
        self.log_group = owned_log_group(self, "Logs", log_group_name)
        # A component's container writes under the component's name, not the endpoint's (the
        # group public deploy tools read a copy's logs from): the stack owns it as it owns the
        # endpoint's, so a copy that does not start says why, and `cdk destroy` removes it. That
        # SageMaker writes there with streams alone granted only a real account confirms.
        self.component_logs = owned_log_group(self, "ComponentLogs", component_log_group(name))
        made = sagemaker_model(
            self,
            purpose=f"SageMaker inference component {name}",
            image_uri=dlc_image_uri(stack, spec.image),
            environment=sagemaker_environment(spec.serve_flags, spec.model_id),
            log_group_name=log_group_name,
            more_log_groups=(component_log_group(name),),
        )
        self.role, self.model = made.role, made.model
        prefix_aware = (
            sagemaker.CfnEndpointConfig.PrefixAwareRoutingConfigProperty(
                prefix_length=spec.prefix_length, concurrency_threshold=spec.concurrency_threshold
            )
            if spec.routing_strategy == PREFIX_AWARE
            else None
        )
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            execution_role_arn=self.role.role_arn,
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=VARIANT,
                    instance_type=spec.instance_type,
                    initial_instance_count=max(1, spec.min_instances),
                    managed_instance_scaling=sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty(
                        status="ENABLED",
                        min_instance_count=spec.min_instances,
                        max_instance_count=spec.max_instances,
                        scale_in_policy=sagemaker.CfnEndpointConfig.ScaleInPolicyProperty(strategy="IDLE_RELEASE"),
                    ),
                    routing_config=sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                        routing_strategy=spec.routing_strategy, prefix_aware_routing_config=prefix_aware
                    ),
                )
            ],
        )
        acknowledge(
            self.endpoint_config,
            "AwsSolutions-SM2",
            "Instance storage holds only public model weights; a customer-managed KMS key would outlive cdk destroy.",
        )
        # The endpoint itself bills nothing once no copy runs: the time-to-live is the component's.
        self.endpoint = owned_endpoint(self, endpoint_name, self.endpoint_config, self.log_group, None)
        self.component = sagemaker.CfnInferenceComponent(
            self,
            "Component",
            inference_component_name=name,
            endpoint_name=self.endpoint.attr_endpoint_name,
            variant_name=VARIANT,
            specification=sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty(
                model_name=self.model.attr_model_name,
                compute_resource_requirements=sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty(
                    number_of_accelerator_devices_required=spec.accelerators_per_copy,
                    min_memory_required_in_mb=spec.copy_memory_mb,
                ),
                startup_parameters=sagemaker.CfnInferenceComponent.InferenceComponentStartupParametersProperty(
                    container_startup_health_check_timeout_in_seconds=backend.startup_timeout_seconds,
                    model_data_download_timeout_in_seconds=backend.startup_timeout_seconds,
                ),
            ),
            runtime_config=sagemaker.CfnInferenceComponent.InferenceComponentRuntimeConfigProperty(
                copy_count=spec.copies
            ),
        )
        self.component.node.add_dependency(self.component_logs)
        self.scaling = ComponentScaling(
            self, "Scaling", component=self.component, component_name=name, backend=spec, expires_at=expires_at
        )
        alarm = self.scaling.alarm
        if expires_at:
            self.time_to_live = scheduled_call(
                self,
                expires_at=expires_at,
                what=f"Take inference component {name} to zero copies",
                api="sagemaker:updateInferenceComponentRuntimeConfig",
                request={"InferenceComponentName": name, "DesiredRuntimeConfig": {"CopyCount": 0}},
                action="sagemaker:UpdateInferenceComponentRuntimeConfig",
                resource=f"arn:{Aws.PARTITION}:sagemaker:{stack.region}:{Aws.ACCOUNT_ID}:inference-component/{name}",
                construct_id=f"TimeToLive{expiry_id(expires_at)}",
            )
        if expires_at and alarm is not None:
            # Zero copies alone would not stay zero: the next request (a stray client, a runner's
            # retries) would fire the alarm and start a copy with no end date. So the alarm's
            # actions are disabled at the same time; runner.up enables them again.
            self.alarm_time_to_live = scheduled_call(
                self,
                expires_at=expires_at,
                what=f"Disable the actions of alarm {alarm.alarm_name}, which starts a copy of {name}",
                api="cloudwatch:disableAlarmActions",
                request={"AlarmNames": [alarm.alarm_name]},
                action="cloudwatch:DisableAlarmActions",
                resource=f"arn:{Aws.PARTITION}:cloudwatch:{stack.region}:{Aws.ACCOUNT_ID}:alarm:{alarm.alarm_name}",
                construct_id=f"TimeToLiveAlarm{expiry_id(expires_at)}",
            )
        self.output = backend_output(
            backend,
            stack,
            endpoint_name=endpoint_name,
            inference_component_name=name,
            instance_type=spec.instance_type,
            log_group=self.component_logs.log_group_name,
            expires_at=expires_at,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
            min_instances=spec.min_instances,
            max_instances=spec.max_instances,
            copies=spec.copies,
            min_copies=spec.min_copies,
            max_copies=spec.max_copies,
            accelerators_per_copy=spec.accelerators_per_copy,
            copy_memory_mb=spec.copy_memory_mb,
            routing_strategy=spec.routing_strategy,
            no_capacity_alarm=alarm.alarm_name if alarm is not None else None,
        )
        publish_output(stack, backend, self.output)
