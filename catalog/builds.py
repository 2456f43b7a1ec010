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
COMPUTE_TYPES = {"LARGE": "BUILD_GENERAL1_LARGE", "XLARGE": "BUILD_GENERAL1_XLARGE"}
COMPUTE_NAMES = {"LARGE": "Large", "XLARGE": "XLarge"}


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
    """A repository of an image the app builds or mirrors (kept across deploys), not one a stack owns."""
    rest = name.removeprefix(REPOSITORY_PREFIX)
    return name.startswith(REPOSITORY_PREFIX) and (rest in IMAGE_BUILDS or rest.startswith(MIRROR_PREFIX))


# Public images an EC2 server runs are mirrored into the account's ECR in its region, by a
# CodeBuild project of its stack (`docker pull`, `tag`, `push`: the image_build.sh mirror mode):
# a pull from the region's own registry has no per-address limit (anonymous Docker Hub pulls are
# limited per address: Docker's documentation, "Usage and limits") and no path across the
# internet. ECR's pull-through cache was the other way, but for Docker Hub it takes a Secrets
# Manager secret (named `ecr-pullthroughcache/...`) holding a Docker Hub user's credentials (ECR
# user guide, "Creating a pull through cache rule"), which this app would have to ask every user
# for. A server starts the mirror the first time it finds it missing and pulls from the source.
MIRROR_PREFIX = "mirror/"


def mirrored(image: str | None) -> bool:
    """True for a public registry's image (Docker Hub, another public registry), which the app
    mirrors; False for an image the app builds, one in an ECR registry, a local one, or an asset."""
    image = image or ""
    if not image or image.startswith((BUILD_PREFIX, "ecr:", "asset:")):
        return False
    first = image.split("/", 1)[0] if "/" in image else ""
    if not ("." in first or ":" in first or first == "localhost"):
        return True  # Docker Hub (its registry name left implicit)
    return ".dkr.ecr." not in first and "." in first and not first.startswith("localhost")


def mirror_source(image: str) -> tuple[str, str]:
    """('vllm/vllm-openai:v0.30.0') -> ('vllm/vllm-openai', 'v0.30.0'): the public repository
    (Docker Hub's registry name and `library/` left implicit) and the tag (`latest` when none)."""
    name = image.removeprefix("docker.io/")
    if "@" in name:
        name, digest = name.split("@", 1)
        return name, digest
    repository, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "latest")
    return repository, tag


def mirror_repository(image: str) -> str:
    """The ECR repository a public image is mirrored into: `inference-survey/mirror/<repository>`."""
    repository, _ = mirror_source(image)
    return f"{REPOSITORY_PREFIX}{MIRROR_PREFIX}{repository}"


def mirror_tag(image: str) -> str:
    """The mirror's tag: the source's tag, or its digest with ':' made '-' (ECR tags take no ':')."""
    return mirror_source(image)[1].replace(":", "-")
