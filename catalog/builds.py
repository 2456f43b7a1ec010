"""The images the app builds in AWS (`build:<folder>` in a backend's image): the CodeBuild compute
each one gets, its time bound, and the account quota that decides whether it can start at all.

Shared by the stacks (the CodeBuild project's compute type and timeout) and the runner's
preflight (the quota it reads before anything bills), so the two can never disagree.

Compute (CodeBuild user guide, "Build environment compute modes and types", on-demand): ARM Large
is 8 vCPUs and 16 GB, ARM XLarge 32 vCPUs and 64 GB, Linux Large 8 vCPUs and 16 GB; ARM_CONTAINER is
offered in us-east-1, us-east-2 and us-west-2 among others (the CodeBuild API reference,
ProjectEnvironment). A build's timeout is at most 480 minutes (CodeBuild quotas, not adjustable).

vllm-sm75 compiles vLLM's CUDA kernels from source: the survey took ~67 min at 12 parallel jobs on
16 vCPUs (xbill9/gemma4-dev, gpu-vllm-g5g-2b/benchmarks/runs/2026-08-12-first-serve-g5g/REPORT.md);
ARM Large fits 3 jobs (about 4 GiB each), which is hours, while ARM XLarge fits 15.

Quotas (Service Quotas, service code `codebuild`): one per environment and compute type,
"Concurrently running builds for ARM/Large environment" as the CodeBuild quotas page names it;
found by name, like SageMaker's. New accounts often have 0 (StartBuild: "Cannot have more than 0
builds in queue for the account"; awslabs/landing-zone-accelerator-on-aws#1013).
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.backends import Architecture, BackendSpec

BUILD_PREFIX = "build:"
# Every ECR repository of the app: `<prefix><folder>` for a built image (kept across deploys).
REPOSITORY_PREFIX = "inference-survey/"
# CodeBuild's most for one build (minutes), not adjustable.
MAX_BUILD_MINUTES = 480


@dataclass(frozen=True)
class ImageBuildSpec:
    """How one `images/<folder>` is built: compute (`LARGE`, `XLARGE`) and its time bound."""

    folder: str
    compute: str
    timeout_hours: int


IMAGE_BUILDS: dict[str, ImageBuildSpec] = {
    "vllm-sm75": ImageBuildSpec("vllm-sm75", compute="XLARGE", timeout_hours=8),
    "neuron": ImageBuildSpec("neuron", compute="LARGE", timeout_hours=1),
    "llama-serverless": ImageBuildSpec("llama-serverless", compute="LARGE", timeout_hours=1),
}
COMPUTE_TYPES = {"MEDIUM": "BUILD_GENERAL1_MEDIUM", "LARGE": "BUILD_GENERAL1_LARGE", "XLARGE": "BUILD_GENERAL1_XLARGE"}
COMPUTE_NAMES = {"MEDIUM": "Medium", "LARGE": "Large", "XLARGE": "XLarge"}
# The weights copy (stacks/store_stack.py) runs on Linux Medium (4 vCPUs, 7 GB): it only streams
# files from the hub to S3. Its quota is "Concurrently running builds for Linux/Medium environment".
WEIGHTS_COPY_COMPUTE = "MEDIUM"


def built_image(spec: BackendSpec) -> str | None:
    """The images/ folder the app builds for this backend, or None for an image it does not build."""
    image = spec.image or ""
    return image.removeprefix(BUILD_PREFIX) if image.startswith(BUILD_PREFIX) else None


def image_build(folder: str) -> ImageBuildSpec:
    return IMAGE_BUILDS.get(folder) or ImageBuildSpec(folder, compute="LARGE", timeout_hours=2)


def build_quota_name(architecture: Architecture | None, compute: str) -> str:
    """The Service Quotas name of the concurrent-build quota a build draws on."""
    environment = "ARM" if architecture is Architecture.ARM64 else "Linux"
    return f"Concurrently running builds for {environment}/{COMPUTE_NAMES[compute]} environment"


def repository_name(folder: str) -> str:
    """The ECR repository an image the app builds is pushed to, in every region it is built in."""
    return f"{REPOSITORY_PREFIX}{folder}"


def kept_repository(name: str) -> bool:
    """A repository of an image the app builds (kept across deploys, in the region's store stack)."""
    return name.startswith(REPOSITORY_PREFIX) and name.removeprefix(REPOSITORY_PREFIX) in IMAGE_BUILDS


# An image in AWS's Deep Learning Containers registry of the server's region: `dlc:vllm:TAG` (or
# `dlc:vllm@sha256:...`) becomes `<DLC account>.dkr.ecr.<region>.<suffix>/vllm:TAG`, with its public
# copy `public.ecr.aws/deep-learning-containers/vllm:TAG` as the fallback (AWS's DLC docs,
# `docs/src/utils.py` build_ecr_uri / build_public_ecr_uri). A pull from the region's own ECR has no
# per-address limit (anonymous Docker Hub pulls do: Docker's documentation, "Usage and limits") and
# no path across the internet, and nothing has to be mirrored first.
DLC_PREFIX = "dlc:"
DLC_PUBLIC_REGISTRY = "public.ecr.aws/deep-learning-containers"
# The accounts of AWS's DLC registries (aws/deep-learning-containers docs/reference/
# region_availability.md): 763104351884 in most regions, one of their own in the opt-in ones. The
# stacks take the account from the CDK's regional fact; the runner tells a DLC from an image in
# the user's own ECR by it.
DLC_ACCOUNTS = frozenset(
    {"763104351884", "626614931356", "871362719292", "692866216735", "217643126080", "780543022126"}
)


def dlc_registry(image: str | None) -> bool:
    """True for an image in one of AWS's DLC registries (`<account>.dkr.ecr.<region>...`)."""
    registry = (image or "").split("/", 1)[0]
    return ".dkr.ecr." in registry and registry.split(".", 1)[0] in DLC_ACCOUNTS


def dlc_reference(image: str | None) -> str | None:
    """'dlc:vllm:TAG' -> 'vllm:TAG'; None for an image that is not a DLC."""
    image = image or ""
    return image.removeprefix(DLC_PREFIX) if image.startswith(DLC_PREFIX) else None


def dlc_public_copy(reference: str) -> str:
    return f"{DLC_PUBLIC_REGISTRY}/{reference}"


def dlc_repository(reference: str) -> str:
    """'vllm:TAG' or 'vllm@sha256:...' -> 'vllm'."""
    return reference.split("@", 1)[0].split(":", 1)[0]
