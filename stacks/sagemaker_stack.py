"""InferenceSageMakerStack: every SageMaker option the app measures, in one region.

Real-time (the survey's endpoint, with autoscaling when `sagemaker.maxInstances` > 1), and the
opt-in options: serverless (the app's CPU image), asynchronous (to zero), batch transform (the
last two sharing one bucket for their inputs and outputs) and an endpoint of inference components
(copies of the model, to zero).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from aws_cdk import Stack
from aws_cdk import aws_s3 as s3
from constructs import Construct

from catalog import BackendKind
from catalog.boot import store_bucket
from catalog.config import BackendConfig, StackConfig
from catalog.serving import serving
from inference_constructs.image_build import ImageBuild, image_build_for
from inference_constructs.inference_components import InferenceComponentEndpoint
from inference_constructs.sagemaker_options import AsyncEndpoint, BatchModel, ServerlessEndpoint, options_bucket
from inference_constructs.stack_marker import StackMarker
from inference_constructs.vllm_endpoint import VllmSageMakerEndpoint
from inference_constructs.weights_copy import COPY_PROJECT

# Endpoint names the runner describes, invokes and (after the time-to-live) recreates.
ENDPOINT_PREFIX = "inference-"


class InferenceSageMakerStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig,
        expires_at: str | None = None,
        hf_token_secret_name: str = "inference/hf-token",
        **kwargs,
    ):
        super().__init__(scope, construct_id, **kwargs)
        self.marker = StackMarker(self, "Marker", config=config)
        self.bucket: s3.Bucket | None = None
        self.image_builds: dict[str, ImageBuild] = {}
        self.endpoints: dict[str, object] = {}
        self.config = config
        self.expires_at = expires_at
        for b in config.backends:
            # The construct each way of serving is built with, named in its serving row (`construct`).
            build = construct_for(b.spec.kind)
            self.endpoints[b.name] = build(self, b, f"{ENDPOINT_PREFIX}{b.name}")

    def requests_bucket(self) -> s3.Bucket:
        if self.bucket is None:
            self.bucket = options_bucket(self, "Requests")
        return self.bucket


def construct_for(kind: BackendKind) -> Callable[[InferenceSageMakerStack, BackendConfig, str], Construct]:
    """The builder a serving row names; a SageMaker stack's backend without one is the catalog's bug."""
    reference = serving(kind).construct
    module_name, _, attribute = reference.partition(":")
    if not module_name.startswith("stacks."):
        raise ValueError(f"kind {kind.value}: no SageMaker construct named in its serving row ({reference!r})")
    return getattr(import_module(module_name), attribute)


def realtime_endpoint(stack: InferenceSageMakerStack, b: BackendConfig, name: str) -> Construct:
    # Its weights, copied once into the app's store in this region (the region's store stack):
    # runner.up finds the copy there before a deploy that makes the endpoint, which reads it from S3.
    # "Inference": the construct id the real-time endpoint has had since the first version.
    return VllmSageMakerEndpoint(
        stack,
        "Inference",
        backend=b,
        endpoint_name=name,
        expires_at=stack.expires_at,
        weights_job=COPY_PROJECT,
        store_bucket=store_bucket(stack.account, stack.region),
    )


def serverless_endpoint(stack: InferenceSageMakerStack, b: BackendConfig, name: str) -> Construct:
    build = image_build_for(stack, b.spec, stack.image_builds)
    return ServerlessEndpoint(
        stack,
        "Serverless",
        backend=b,
        endpoint_name=name,
        image_uri=build.image_uri if build else (b.spec.image or ""),
        image_build=build,
        image_ready=build is None or f"{build.folder}:{build.tag}" in stack.config.built_images,
        expires_at=stack.expires_at,
    )


def async_endpoint(stack: InferenceSageMakerStack, b: BackendConfig, name: str) -> Construct:
    return AsyncEndpoint(
        stack, "Async", backend=b, endpoint_name=name, bucket=stack.requests_bucket(), expires_at=stack.expires_at
    )


def batch_model(stack: InferenceSageMakerStack, b: BackendConfig, name: str) -> Construct:
    return BatchModel(stack, "Batch", backend=b, bucket=stack.requests_bucket())


def components_endpoint(stack: InferenceSageMakerStack, b: BackendConfig, name: str) -> Construct:
    return InferenceComponentEndpoint(stack, "Components", backend=b, endpoint_name=name, expires_at=stack.expires_at)
