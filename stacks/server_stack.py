"""A stack of EC2 model servers (the GPU stack and the Neuron stack are both this shape).

Each stack owns its network and instance role, so no stack imports another's exports: any change
of `backends` or of a stack's region deploys cleanly, and each stack can live in its own region.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Aws, Stack
from aws_cdk import aws_ecr_assets as ecr_assets
from constructs import Construct

from catalog import Architecture
from catalog.config import BackendConfig, StackConfig
from inference_constructs import ModelServer, ServerInstanceRole, SsmOnlyNetwork
from inference_constructs.stack_marker import StackMarker

IMAGES_DIR = Path(__file__).resolve().parent.parent / "images"
ECR_PREFIX = "ecr:"
ASSET_PREFIX = "asset:"


class ModelServerStack(Stack):
    """Places each backend of `config` on its own one-instance Auto Scaling group."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: StackConfig, hf_token_secret_name: str, **kwargs
    ):
        super().__init__(scope, construct_id, **kwargs)
        self.marker = StackMarker(self, "Marker", config=config)
        self.servers: dict[str, ModelServer] = {}
        if not config.backends:
            return
        network = SsmOnlyNetwork(self, "Network", zones=list(config.zones))
        role = ServerInstanceRole(self, "ServerRole", hf_token_secret_name=hf_token_secret_name).role
        for backend in config.backends:
            self.servers[backend.name] = ModelServer(
                self,
                backend.name.capitalize(),
                backend=backend,
                vpc=network.vpc,
                security_group=network.security_group,
                role=role,
                hf_token_secret_name=hf_token_secret_name,
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
