"""InferenceSageMakerStack: every SageMaker option the app measures, in one region.

Real-time (the survey's endpoint, with autoscaling when `sagemaker.maxInstances` > 1), and the
opt-in options: serverless (the app's CPU image), asynchronous (to zero) and batch transform,
the last two sharing one bucket for their inputs and outputs.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_s3 as s3
from constructs import Construct

from catalog import BackendKind
from catalog.boot import store_bucket
from catalog.config import StackConfig
from inference_constructs.image_build import ImageBuild, image_build_for
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
        # The real-time endpoint's weights, copied once into the app's store in this region (the
        # region's store stack): runner.up finds the copy there before a deploy that makes the
        # endpoint, which then reads it from S3.
        for b in config.backends:
            name = f"{ENDPOINT_PREFIX}{b.name}"
            kind = b.spec.kind
            if kind is BackendKind.SAGEMAKER:
                # "Inference": the construct id the real-time endpoint has had since the first version.
                self.endpoints[b.name] = VllmSageMakerEndpoint(
                    self,
                    "Inference",
                    backend=b,
                    endpoint_name=name,
                    expires_at=expires_at,
                    weights_job=COPY_PROJECT,
                    store_bucket=store_bucket(self.account, self.region),
                )
            elif kind is BackendKind.SAGEMAKER_SERVERLESS:
                build = image_build_for(self, b.spec, self.image_builds)
                self.endpoints[b.name] = ServerlessEndpoint(
                    self,
                    "Serverless",
                    backend=b,
                    endpoint_name=name,
                    image_uri=build.image_uri if build else (b.spec.image or ""),
                    image_build=build,
                    image_ready=build is None or f"{build.folder}:{build.tag}" in config.built_images,
                    expires_at=expires_at,
                )
            elif kind is BackendKind.SAGEMAKER_ASYNC:
                self.endpoints[b.name] = AsyncEndpoint(
                    self,
                    "Async",
                    backend=b,
                    endpoint_name=name,
                    bucket=self._bucket(),
                    expires_at=expires_at,
                )
            elif kind is BackendKind.SAGEMAKER_BATCH:
                self.endpoints[b.name] = BatchModel(self, "Batch", backend=b, bucket=self._bucket())

    def _bucket(self) -> s3.Bucket:
        if self.bucket is None:
            self.bucket = options_bucket(self, "Requests")
        return self.bucket
