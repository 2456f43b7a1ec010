"""A SageMaker real-time endpoint running AWS's vLLM container, with a least-privilege role.

The endpoint's log group is created here (SageMaker would otherwise create it at run time and
`cdk destroy` would leave it behind). At the deploy's expiry an EventBridge Scheduler schedule
(one-time, no Lambda) deletes the endpoint, the part that bills; its model and endpoint config
stay with the stack, and `runner.up` recreates the endpoint from that config under the same name,
so CloudFormation's record of it is true again (an unchanged template would not recreate it).
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from catalog.config import BackendConfig, sagemaker_environment
from inference_constructs.backend_output import backend_output, publish_output
from inference_constructs.endpoint_scaling import RealTimeScaling
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge
from inference_constructs.sagemaker_model import dlc_image_uri, owned_endpoint, sagemaker_model


class VllmSageMakerEndpoint(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        backend: BackendConfig,
        endpoint_name: str,
        expires_at: str | None = None,
        weights_job: str | None = None,
        store_bucket: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        spec = backend.spec
        stack = Stack.of(self)
        if not (spec.image and spec.instance_type):
            raise ValueError(f"backend {spec.name} has no image or instance type")
        image = dlc_image_uri(stack, spec.image)

        self.log_group = owned_log_group(self, "Logs", f"/aws/sagemaker/Endpoints/{endpoint_name}")
        made = sagemaker_model(
            self,
            purpose=f"SageMaker endpoint {endpoint_name}",
            image_uri=image,
            environment=sagemaker_environment(spec.serve_flags, spec.model_id, staged=bool(backend.staged_weights)),
            log_group_name=f"/aws/sagemaker/Endpoints/{endpoint_name}",
            weights_uri=backend.staged_weights,
        )
        self.role, self.model = made.role, made.model
        self.endpoint_config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name="AllTraffic",
                    model_name=self.model.attr_model_name,
                    initial_instance_count=spec.min_instances,
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
        self.endpoint = owned_endpoint(self, endpoint_name, self.endpoint_config, self.log_group, expires_at)
        self.scaling = (
            RealTimeScaling(self, "Scaling", endpoint=self.endpoint, backend=spec)
            if spec.max_instances > spec.min_instances
            else None
        )

        self.output = backend_output(
            backend,
            stack,
            endpoint_name=endpoint_name,
            instance_type=spec.instance_type,
            log_group=self.log_group.log_group_name,
            expires_at=expires_at,
            endpoint_config_name=self.endpoint_config.attr_endpoint_config_name,
            min_instances=spec.min_instances,
            max_instances=spec.max_instances,
            weights_job=weights_job,
            store_bucket=store_bucket,
            staged_weights=backend.staged_weights,
        )
        publish_output(stack, backend, self.output)
