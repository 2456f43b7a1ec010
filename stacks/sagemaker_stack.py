"""InferenceSageMakerStack: the AWS vLLM container behind a SageMaker real-time endpoint."""

from __future__ import annotations

from aws_cdk import Stack
from constructs import Construct

from catalog.config import StackConfig
from inference_constructs import VllmSageMakerEndpoint
from inference_constructs.stack_marker import StackMarker


class InferenceSageMakerStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: StackConfig, expires_at: str | None = None, **kwargs
    ):
        super().__init__(scope, construct_id, **kwargs)
        self.marker = StackMarker(self, "Marker", config=config)
        self.endpoints = {
            b.name: VllmSageMakerEndpoint(
                self, "Inference", backend=b, endpoint_name=f"inference-{b.name}", expires_at=expires_at
            )
            for b in config.backends
        }
