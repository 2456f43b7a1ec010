"""What a server's boot goes through, and where what it needs already waits for it.

A boot records five phases (PHASES), each the moment it was reached, into its readiness record
(inference_constructs/server_scripts): the instance running its boot script, the image present,
the weights present, the engine answering its health path, and the first answer to a question
with a known answer. `runner.up` turns them into seconds from the instance's launch.

What makes a phase short is kept in the app's store, one bucket per region and account
(`store_bucket`), which no stack owns: the weights, copied once per region by the weights copy
(inference_constructs/weights_copy.sh) under `weights/<model>/` with a manifest beside them
(`weights/<model>.complete`, written last), and the engines' compiled graphs under
`graphs/<kind>/<key>.tar.gz`, each with its manifest (the key's inputs, written last). The public
images the servers run are mirrored into the account's ECR in the region (catalog/builds.py).

The instance types' disks and networks (INSTANCE_DISKS) decide where Docker keeps its data: the
instance store where the type has one and it holds the image and the weights, else the root
volume, whose gp3 throughput is raised where its writes are the slow part (catalog/backends.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The phases a boot records, in the order they are reached.
PHASES = ("running", "image", "weights", "engine", "answer")
PHASE_TITLES = {
    "running": "instance running (its boot script starts)",
    "image": "image present",
    "weights": "weights present",
    "engine": "engine started (its health path answers)",
    "answer": "first answer",
}
# The question whose answer is the last phase (server_scripts/ready.sh asks it): one any
# instruction-tuned model gets right in a word, so a wrong answer says something is wrong.
READINESS_QUESTION = "What is the capital of France? Answer with one word."
READINESS_ANSWER = "Paris"
# The steps whose way (fast path or fallback, and why) a boot records beside its phases.
PATHS = ("storage", "image", "weights", "graphs")

# The app's store: one bucket per account and region, made by the weights copy on first use and
# kept across deploys (`runner.sweep --delete --purge-images` removes it).
STORE_PREFIX = "inference-survey-"
STORE_BUCKET = re.compile(r"^inference-survey-\d{12}-[a-z]{2}(-[a-z]+)+-\d$")
WEIGHTS_PREFIX = "weights/"
GRAPHS_PREFIX = "graphs/"
# S3 Standard storage, us-east-1: what the store costs a month (S3 pricing page; the figure every
# public summary quotes for the first 50 TB). UNVERIFIED (not read from the page here).
S3_USD_PER_GB_MONTH = 0.023


def store_bucket(account: str, region: str) -> str:
    """The app's store in one region of one account (a CloudFormation token works as the account)."""
    return f"{STORE_PREFIX}{account}-{region}"


def is_store_bucket(name: str) -> bool:
    return STORE_BUCKET.fullmatch(name) is not None


def weights_prefix(model_id: str) -> str:
    """Where one model's serving files are kept in the store."""
    return f"{WEIGHTS_PREFIX}{model_id}/"


def weights_marker(model_id: str) -> str:
    """The copy's manifest, beside its files and written last: a copy without it is not complete."""
    return f"{WEIGHTS_PREFIX}{model_id}.complete"


@dataclass(frozen=True)
class InstanceDisks:
    """What an instance type has to write an image to and read weights from (GB = 10^9 bytes)."""

    instance_store_gb: int
    ebs_baseline_mbs: float
    ebs_max_mbs: float
    network_baseline_gbps: float
    network_peak_gbps: float


INSTANCE_DISKS_SOURCE = (
    "EC2 DescribeInstanceTypes (InstanceStorageInfo, EbsInfo.EbsOptimizedInfo, NetworkInfo.NetworkCards), "
    "as moto 5.2.5 ships it (moto/ec2/resources/instance_types.json.gz); tests/cdk/test_boot_model.py reads it again"
)
# The maximum EBS and network figures hold for bursts (at least 30 minutes once a day for EBS, per
# the EC2 user guide's EBS-optimized instances page); the baselines hold always.
INSTANCE_DISKS: dict[str, InstanceDisks] = {
    "g6.xlarge": InstanceDisks(250, 125.0, 625.0, 2.5, 10.0),
    "g5g.2xlarge": InstanceDisks(0, 296.875, 593.75, 2.5, 10.0),
    "inf2.xlarge": InstanceDisks(0, 156.25, 1250.0, 2.083, 15.0),
    "trn1.2xlarge": InstanceDisks(474, 625.0, 2500.0, 3.125, 12.5),
}


def instance_store_gb(instance_type: str | None) -> int:
    disks = INSTANCE_DISKS.get(instance_type or "")
    return disks.instance_store_gb if disks else 0


@dataclass(frozen=True)
class Size:
    """How big an image or a model's files are (GB = 10^9 bytes), and on what the figure rests."""

    download_gb: float
    disk_gb: float
    source: str
    verified: bool = True


# The images' sizes: to download (compressed layers) and on disk (extracted).
IMAGE_SIZES: dict[str, Size] = {
    "vllm/vllm-openai:v0.30.0": Size(
        12.0,
        28.6,
        "vllm-project/vllm#27154 and PR #22377: the vllm-openai image is about 12 GB to download and 28.6 GB on disk",
    ),
    "build:vllm-sm75": Size(
        8.0,
        20.0,
        "assumed: CUDA 13 runtime, conda-forge's torch and vLLM for one architecture; not measured (no arm64 build ran "
        "here)",
        verified=False,
    ),
    "build:neuron": Size(
        10.0,
        25.0,
        "assumed: AWS publishes no size for pytorch-inference-vllm-neuronx:0.16.0; not measured here",
        verified=False,
    ),
}
# A model's serving files (safetensors, config, tokenizer), by hub id.
MODEL_SIZES: dict[str, Size] = {
    "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4": Size(
        4.0,
        4.0,
        "assumed: int4 weights (2.85 GiB, the survey's figure) with 4-bit embeddings; not measured",
        verified=False,
    ),
    "google/gemma-4-E2B-it": Size(10.0, 10.0, "docs/stacks.md: about 10 GB of fp16 weights (the survey's g5g)"),
    "Qwen/Qwen2.5-1.5B-Instruct": Size(3.09, 3.09, "its one safetensors file, 3.09 GB in bf16 (catalog/backends.py)"),
}
# Room left beside the image and the weights on the disk Docker's data goes to (logs, caches).
DISK_MARGIN_GB = 10


def image_size(image: str | None) -> Size | None:
    image = (image or "").removeprefix("docker.io/")
    return IMAGE_SIZES.get(image)


def disk_needed_gb(image: str | None, model_id: str) -> int:
    """GB the disk holding Docker's data and the weights must have free (0: nothing known)."""
    image_gb = (image_size(image) or Size(0, 0, "")).disk_gb
    model_gb = (MODEL_SIZES.get(model_id) or Size(0, 0, "")).disk_gb
    if not image_gb and not model_gb:
        return 0
    return int(image_gb + model_gb + DISK_MARGIN_GB + 0.999)
