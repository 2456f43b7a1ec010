"""A stack of EC2 model servers (the GPU stack and the Neuron stack are both this shape)."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Aws, Stack
from aws_cdk import aws_ecr_assets as ecr_assets
from constructs import Construct

from catalog import Architecture
from catalog.config import BackendConfig
from inference_constructs import ModelServerInstance
from stacks.base_stack import InferenceBaseStack

IMAGES_DIR = Path(__file__).resolve().parent.parent / "images"
ECR_PREFIX = "ecr:"
ASSET_PREFIX = "asset:"


class ModelServerStack(Stack):
    """Places each backend of `backends` on its own instance in the base network."""

    def __init__(
        self, scope: Construct, construct_id: str, *, base: InferenceBaseStack, backends: list[BackendConfig], **kwargs
    ):
        super().__init__(scope, construct_id, **kwargs)
        self.servers: dict[str, ModelServerInstance] = {}
        for backend in backends:
            self.servers[backend.name] = ModelServerInstance(
                self,
                backend.name.capitalize(),
                backend=backend,
                vpc=base.vpc,
                security_group=base.security_group,
                role=base.instance_role,
                hf_token_secret_name=base.hf_token_secret_name,
                image_uri=self._image_uri(backend),
            )

    def _image_uri(self, backend: BackendConfig) -> str:
        """`ecr:REPO:TAG` -> this account's ECR; `asset:DIR` -> built from images/DIR; else as given."""
        image = backend.spec.image or ""
        if image.startswith(ECR_PREFIX):
            return f"{Aws.ACCOUNT_ID}.dkr.ecr.{self.region}.{Aws.URL_SUFFIX}/{image[len(ECR_PREFIX) :]}"
        if image.startswith(ASSET_PREFIX):
            folder = IMAGES_DIR / image[len(ASSET_PREFIX) :]
            platform = (
                ecr_assets.Platform.LINUX_ARM64
                if backend.spec.architecture is Architecture.ARM64
                else ecr_assets.Platform.LINUX_AMD64
            )
            asset = ecr_assets.DockerImageAsset(
                self, f"{backend.name.capitalize()}Image", directory=str(folder), platform=platform
            )
            return asset.image_uri
        return image
