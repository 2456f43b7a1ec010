"""A stack of EC2 model servers (the GPU stack and the Neuron stack are both this shape).

Each stack owns its network and instance role, so no stack imports another's exports: any change
of `backends` or of a stack's region deploys cleanly, and each stack can live in its own region.
"""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk.region_info import FactName
from constructs import Construct

from catalog import Architecture
from catalog.builds import dlc_public_copy, dlc_reference, dlc_repository
from catalog.config import BackendConfig, StackConfig
from inference_constructs.image_build import (
    IMAGES_DIR,
    SOURCE_EXCLUDE,
    ImageBuild,
    image_build_for,
)
from inference_constructs.in_region import InRegionBench
from inference_constructs.model_server import ModelServer, ServerImage
from inference_constructs.sagemaker_model import dlc_image_uri
from inference_constructs.ssm_only_network import SsmOnlyNetwork
from inference_constructs.stack_marker import StackMarker

ECR_PREFIX = "ecr:"
ASSET_PREFIX = "asset:"


class ModelServerStack(Stack):
    """Places each backend of `config` on its own Auto Scaling group of at most one instance."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig,
        hf_token_secret_name: str,
        expires_at: str | None = None,
        **kwargs,
    ):
        super().__init__(scope, construct_id, **kwargs)
        self.expires_at = expires_at
        # A satellite (one backend moved out of its family by a capacity refusal) gives the names it
        # chooses a suffix of its own: its family may later stand in the same region.
        self.name_suffix = f"-{config.backends[0].name}" if config.family and config.backends else ""
        self.marker = StackMarker(self, "Marker", config=config)
        self.servers: dict[str, ModelServer] = {}
        self.image_builds: dict[str, ImageBuild] = {}
        self.in_region: InRegionBench | None = None
        if not config.backends:
            return
        # The account's zones as runner.up read them; else every zone the CDK's lookup finds in the
        # deploying account (cached in cdk.context.json), or, with no account (a synth without
        # credentials), its two Fn::GetAZs placeholders.
        zones = list(config.zones) or list(self.availability_zones)
        network = SsmOnlyNetwork(self, "Network", zones=zones)
        # runner.bench --in-region: the kit the servers run and the bucket their records go to.
        self.in_region = InRegionBench(self, "InRegionBench")
        # The app's store in this region (weights, compiled graphs) is the region's store stack's
        # (stacks/store_stack.py), deployed before this one; the servers name it.
        for backend in config.backends:
            self.servers[backend.name] = ModelServer(
                self,
                backend.name.capitalize(),
                backend=backend,
                vpc=network.vpc,
                security_group=network.security_group,
                hf_token_secret_name=hf_token_secret_name,
                image=self._image(backend),
                image_build=self._image_build(backend),
                store=True,
                expires_at=expires_at,
                in_region=self.in_region,
            )

    def _image_build(self, backend: BackendConfig) -> ImageBuild | None:
        return image_build_for(self, backend.spec, self.image_builds, self.expires_at, self.name_suffix)

    def _image(self, backend: BackendConfig) -> ServerImage:
        """`build:DIR` -> built in AWS by this stack's CodeBuild project into the store stack's
        repository; `dlc:REPO:TAG` -> AWS's Deep Learning Container in the region's ECR (its public
        copy the fallback); `ecr:REPO:TAG` -> this account's ECR; `asset:DIR` -> built from
        images/DIR at deploy; else a public registry's image, as given."""
        image = backend.spec.image or ""
        region = self.region
        build = self._image_build(backend)
        if build is not None:
            return ServerImage(build.image_uri, build.repository.repository_arn)
        dlc = dlc_reference(image)
        if dlc:
            account = self.regional_fact(FactName.DLC_REPOSITORY_ACCOUNT)
            return ServerImage(
                dlc_image_uri(self, dlc),
                f"arn:{Aws.PARTITION}:ecr:{region}:{account}:repository/{dlc_repository(dlc)}",
                dlc_public_copy(dlc),
            )
        if image.startswith(ECR_PREFIX):
            repository = image[len(ECR_PREFIX) :]
            return ServerImage(
                f"{Aws.ACCOUNT_ID}.dkr.ecr.{region}.{Aws.URL_SUFFIX}/{repository}",
                f"arn:{Aws.PARTITION}:ecr:{region}:{Aws.ACCOUNT_ID}:repository/{dlc_repository(repository)}",
            )
        if image.startswith(ASSET_PREFIX):
            folder = IMAGES_DIR / image[len(ASSET_PREFIX) :]
            platform = (
                ecr_assets.Platform.LINUX_ARM64
                if backend.spec.architecture is Architecture.ARM64
                else ecr_assets.Platform.LINUX_AMD64
            )
            asset = ecr_assets.DockerImageAsset(
                self,
                f"{backend.name.capitalize()}Image",
                directory=str(folder),
                platform=platform,
                exclude=SOURCE_EXCLUDE,
            )
            return ServerImage(asset.image_uri, asset.repository.repository_arn)
        return ServerImage(image)
