"""The SageMaker options beyond one real-time endpoint: serverless, asynchronous and batch transform.

- Serverless: the app's own CPU image (images/llama-serverless, built in AWS by the stack's
  CodeBuild project) behind a serverless endpoint; memory and concurrency from the catalog. An
  endpoint needs its image to exist, so the model, config and endpoint are made only once the
  image is recorded as built (`runner.up` waits for the build and records it in placement.json);
  until then the stack holds the repository and the build, and nothing bills (serverless bills
  per request anyway).
- Asynchronous: the vLLM DLC behind an async endpoint; requests and results in the stack's bucket,
  success and error topics, autoscaling between zero and its maximum (endpoint_scaling.py). AWS
  creates an async endpoint with one instance; the backlog policy takes it to zero once idle.
- Batch transform: the model only (a transform job is started by `python -m runner.batch`, and
  bills only while it runs); inputs and outputs in the stack's bucket.

The bucket is encrypted, private, TLS-only, and expires objects after a week; `cdk destroy`
deletes it only when empty, so the runner's teardown (`runner.sweep --delete`) empties it first
(emptying on destroy would take a custom-resource Lambda).
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from constructs import Construct

from catalog.config import BackendConfig, sagemaker_environment
from inference_constructs.backend_output import backend_output, publish_output
from inference_constructs.endpoint_scaling import AsyncScaling
from inference_constructs.image_build import ImageBuild
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge
from inference_constructs.sagemaker_model import dlc_image_uri, owned_endpoint, sagemaker_model

OBJECT_DAYS = 7
ASYNC_PREFIXES = ("async/inputs/", "async/outputs/", "async/failures/")
BATCH_PREFIXES = ("batch/inputs/", "batch/outputs/")
# SageMaker's own log group for every transform job of the account and region: not the app's.
TRANSFORM_LOG_GROUP = "/aws/sagemaker/TransformJobs"


def options_bucket(scope: Construct, construct_id: str) -> s3.Bucket:
    bucket = s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        lifecycle_rules=[
            s3.LifecycleRule(
                expiration=Duration.days(OBJECT_DAYS), abort_incomplete_multipart_upload_after=Duration.days(1)
            )
        ],
        removal_policy=RemovalPolicy.DESTROY,
    )
    acknowledge(
        bucket,
        "AwsSolutions-S1",
        "Inputs and outputs of the app's own requests, expired after a week; access logs would need a second "
        "bucket that outlives cdk destroy.",
    )
    return bucket


class ServerlessEndpoint(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        backend: BackendConfig,
        endpoint_name: str,
        image_uri: str,
        image_build: ImageBuild | None,
        image_ready: bool,
        expires_at: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        spec = backend.spec
        stack = Stack.of(self)
        self.endpoint: sagemaker.CfnEndpoint | None = None
        config_name = None
        self.log_group = owned_log_group(self, "Logs", f"/aws/sagemaker/Endpoints/{endpoint_name}")
        if image_ready:
            made = sagemaker_model(
                self,
                purpose=f"SageMaker serverless endpoint {endpoint_name}",
                image_uri=image_uri,
                environment={},
                log_group_name=f"/aws/sagemaker/Endpoints/{endpoint_name}",
                repository=image_build.repository if image_build else None,
            )
            config = sagemaker.CfnEndpointConfig(
                self,
                "EndpointConfig",
                production_variants=[
                    sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                        variant_name="AllTraffic",
                        model_name=made.model.attr_model_name,
                        serverless_config=sagemaker.CfnEndpointConfig.ServerlessConfigProperty(
                            memory_size_in_mb=spec.memory_mb or 6144, max_concurrency=spec.max_concurrency or 1
                        ),
                    )
                ],
            )
            acknowledge(config, "AwsSolutions-SM2", "A serverless endpoint has no instance storage to encrypt.")
            config_name = config.attr_endpoint_config_name
            self.endpoint = owned_endpoint(self, endpoint_name, config, self.log_group, expires_at)
        publish_output(
            stack,
            backend,
            backend_output(
                backend,
                stack,
                endpoint_name=endpoint_name,
                log_group=self.log_group.log_group_name,
                image=image_uri,
                image_build_project=image_build.project.project_name if image_build else None,
                waiting_for_image=not image_ready,
                endpoint_config_name=config_name,
                max_total_tokens=spec.max_total_tokens,
                expires_at=expires_at,
                memory_mb=spec.memory_mb,
                max_concurrency=spec.max_concurrency,
            ),
        )


class AsyncEndpoint(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        backend: BackendConfig,
        endpoint_name: str,
        bucket: s3.Bucket,
        expires_at: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        spec = backend.spec
        stack = Stack.of(self)
        inputs, outputs, failures = ASYNC_PREFIXES
        self.success_topic = sns.Topic(self, "Succeeded", display_name=f"{endpoint_name}: results", enforce_ssl=True)
        self.error_topic = sns.Topic(self, "Failed", display_name=f"{endpoint_name}: failures", enforce_ssl=True)
        for topic in (self.success_topic, self.error_topic):
            acknowledge(
                topic,
                "AwsSolutions-SNS2",
                "Notifications carry object locations only (no inference response is included); a customer key "
                "would outlive cdk destroy.",
            )
        self.log_group = owned_log_group(self, "Logs", f"/aws/sagemaker/Endpoints/{endpoint_name}")
        made = sagemaker_model(
            self,
            purpose=f"SageMaker asynchronous endpoint {endpoint_name}",
            image_uri=dlc_image_uri(stack, spec.image or ""),
            environment=sagemaker_environment(spec.serve_flags, spec.model_id),
            log_group_name=f"/aws/sagemaker/Endpoints/{endpoint_name}",
            bucket=bucket,
            input_prefix=inputs,
            output_prefix="async/",
            topics=(self.success_topic, self.error_topic),
        )
        self.model = made.model
        config = sagemaker.CfnEndpointConfig(
            self,
            "EndpointConfig",
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name="AllTraffic",
                    model_name=made.model.attr_model_name,
                    # AWS creates an async endpoint with at least one instance; scaling takes it to zero.
                    initial_instance_count=max(1, spec.min_instances),
                    instance_type=spec.instance_type,
                    container_startup_health_check_timeout_in_seconds=backend.startup_timeout_seconds,
                    model_data_download_timeout_in_seconds=backend.startup_timeout_seconds,
                )
            ],
            async_inference_config=sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty(
                output_config=sagemaker.CfnEndpointConfig.AsyncInferenceOutputConfigProperty(
                    s3_output_path=bucket.s3_url_for_object(outputs),
                    s3_failure_path=bucket.s3_url_for_object(failures),
                    notification_config=sagemaker.CfnEndpointConfig.AsyncInferenceNotificationConfigProperty(
                        success_topic=self.success_topic.topic_arn, error_topic=self.error_topic.topic_arn
                    ),
                ),
                client_config=sagemaker.CfnEndpointConfig.AsyncInferenceClientConfigProperty(
                    max_concurrent_invocations_per_instance=4
                ),
            ),
        )
        acknowledge(
            config,
            "AwsSolutions-SM2",
            "Instance storage holds only public model weights; a customer-managed KMS key would outlive cdk destroy.",
        )
        self.endpoint = owned_endpoint(self, endpoint_name, config, self.log_group, expires_at)
        self.scaling = AsyncScaling(self, "Scaling", endpoint=self.endpoint, backend=spec)
        publish_output(
            stack,
            backend,
            backend_output(
                backend,
                stack,
                endpoint_name=endpoint_name,
                instance_type=spec.instance_type,
                log_group=self.log_group.log_group_name,
                endpoint_config_name=config.attr_endpoint_config_name,
                expires_at=expires_at,
                bucket=bucket.bucket_name,
                input_prefix=inputs,
                output_prefix=outputs,
                min_instances=spec.min_instances,
                max_instances=spec.max_instances,
                success_topic=self.success_topic.topic_arn,
                error_topic=self.error_topic.topic_arn,
            ),
        )


class BatchModel(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, backend: BackendConfig, bucket: s3.Bucket):
        super().__init__(scope, construct_id)
        spec = backend.spec
        stack = Stack.of(self)
        inputs, outputs = BATCH_PREFIXES
        made = sagemaker_model(
            self,
            purpose=f"SageMaker batch transform of {spec.name}",
            image_uri=dlc_image_uri(stack, spec.image or ""),
            environment=sagemaker_environment(spec.serve_flags, spec.model_id),
            log_group_name=TRANSFORM_LOG_GROUP,
            create_log_group=True,
            bucket=bucket,
            input_prefix=inputs,
            output_prefix=outputs,
        )
        self.model = made.model
        publish_output(
            stack,
            backend,
            backend_output(
                backend,
                stack,
                instance_type=spec.instance_type,
                log_group=TRANSFORM_LOG_GROUP,
                bucket=bucket.bucket_name,
                input_prefix=inputs,
                output_prefix=outputs,
                model_name=made.model.attr_model_name,
            ),
        )
