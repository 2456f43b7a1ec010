"""Every backend the survey knows, in one place.

A backend is added here once: the stacks build its infrastructure from this entry and the
runner builds its model client from this entry plus the stack outputs. Bandwidths are the
accelerator's memory bandwidth from the survey's published figures; prices live in
`catalog/prices.py` (dated, with their source) and `runner.cost` refreshes them from the Pricing API.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from catalog.errors import CatalogError


class BackendKind(StrEnum):
    """How a backend is served; decides which construct deploys it and which client reads it."""

    EC2_VLLM = "ec2-vllm"
    EC2_NEURON = "ec2-neuron"
    SAGEMAKER = "sagemaker"
    BEDROCK = "bedrock"
    LOCAL = "local"
    OPENAI = "openai"


class Architecture(StrEnum):
    X86_64 = "x86_64"
    ARM64 = "arm64"


class Accelerator(StrEnum):
    NVIDIA = "nvidia"
    NEURON = "neuron"
    NONE = "none"


class ModelArgument(StrEnum):
    """How the server container is told which model to serve."""

    POSITIONAL = "positional"  # `vllm serve MODEL FLAGS...` (the vLLM images' entrypoint)
    NONE = "none"  # the image carries its model and command: run it with no arguments


# Instance families the app may place a backend on: family -> (CPU architecture, accelerator).
INSTANCE_FAMILIES: dict[str, tuple[Architecture, Accelerator]] = {
    "g4dn": (Architecture.X86_64, Accelerator.NVIDIA),
    "g5": (Architecture.X86_64, Accelerator.NVIDIA),
    "g6": (Architecture.X86_64, Accelerator.NVIDIA),
    "g6e": (Architecture.X86_64, Accelerator.NVIDIA),
    "gr6": (Architecture.X86_64, Accelerator.NVIDIA),
    "p4d": (Architecture.X86_64, Accelerator.NVIDIA),
    "p5": (Architecture.X86_64, Accelerator.NVIDIA),
    "g5g": (Architecture.ARM64, Accelerator.NVIDIA),
    "inf2": (Architecture.X86_64, Accelerator.NEURON),
    "trn1": (Architecture.X86_64, Accelerator.NEURON),
    "trn1n": (Architecture.X86_64, Accelerator.NEURON),
}

GPU_AMI_PARAMETER = "/aws/service/deeplearning/ami/{arch}/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
NEURON_AMI_PARAMETER = "/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id"

VLLM_TOOL_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser", "gemma4")
# The survey's region order for g6, inf2 and trn1 (stage/up.sh); each list is cut to the regions
# that offer the backend's type (catalog/offerings.py).
SURVEY_REGIONS = ("us-east-2", "us-east-1", "us-west-2")
SURVEY_BENCH_SOURCE = (
    "the survey's bench-chat medians, run 1 (5 repeats) and run 2 (10 repeats), 2026-10-05: "
    "docs/article/evidence/bench-chat*.txt and run2-REPORT.md (repository xbill9/aws-inference-strands)"
)
GIB = 1024**3 / 1e9
# Weight sizes of Gemma 4 E2B as the survey gives them: 6.32 GiB in bf16 (fp16 is the same size),
# 2.85 GiB in int4; bandwidths are the accelerators' published figures the survey quotes. The
# full weights are an upper bound on what a decode step reads: E2B's per-layer embedding tables
# are looked up a row at a time, so a server can beat this ceiling (the survey's g6 did: 131.9
# tok/s against ~105). The Neuron rows widen int4 to bf16 before each matmul, so they read the
# bf16 size.
ROOFLINE_SOURCE = (
    "the survey's bandwidth table and weight sizes (bf16 6.32 GiB, int4 2.85 GiB), 2026-10-12; "
    "full weights per token, an upper bound on the bytes a decode step reads"
)
E2B_BF16_GB = round(6.32 * GIB, 3)
E2B_INT4_GB = round(2.85 * GIB, 3)
GEMMA4_EMB4 = "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4"
GEMMA4_E2B = "google/gemma-4-E2B-it"


def instance_family(instance_type: str) -> str:
    """'g6.xlarge' -> 'g6'; 'ml.g6.xlarge' -> 'g6'."""
    parts = instance_type.split(".")
    if parts and parts[0] == "ml":
        parts = parts[1:]
    if len(parts) != 2 or not all(parts):
        raise CatalogError(f"instance type {instance_type!r} is not of the form FAMILY.SIZE")
    return parts[0]


@dataclass(frozen=True)
class BackendSpec:
    """One backend: what runs where, how it is reached, and what it costs."""

    name: str
    title: str
    kind: BackendKind
    model_id: str
    stack: str | None = None
    instance_type: str | None = None
    architecture: Architecture | None = None
    accelerator: Accelerator = Accelerator.NONE
    ami_parameter: str | None = None
    image: str | None = None
    serve_flags: tuple[str, ...] = ()
    model_argument: ModelArgument = ModelArgument.POSITIONAL
    port: int = 8000
    container_port: int = 8000
    health_path: str = "/health"
    # Docker named volume the container keeps its data in (`name:/path`), kept across restarts.
    data_volume: str | None = None
    # Local port of the SSM port forward the runner expects for an EC2 backend.
    forward_port: int | None = None
    # Regions in failover order: the stack goes to the first one every backend of it shares.
    regions: tuple[str, ...] = ()
    # Zones to place the server in (empty: every zone of the region; the ASG skips refusals).
    zones: tuple[str, ...] = ()
    root_volume_gib: int = 0
    swap_gib: int = 0
    # How to make the image when the stack points at one nobody has built yet.
    image_build_hint: str = ""
    # The survey's launch-to-ready minutes (run 2, run2-REPORT.md), shown beside a user's own.
    survey_launch_to_ready_min: float | None = None
    # The survey's single-request median tok/s in its two runs (SURVEY_BENCH_SOURCE), shown beside
    # a user's own so a run that does or does not reproduce it is seen at once.
    survey_tok_s: tuple[float, ...] = ()
    supports_tools: bool = True
    max_total_tokens: int | None = None
    memory_bandwidth_gbs: float | None = None
    # Weight bytes a decode step reads (GB, 10^9): with the bandwidth, the single-request decode
    # ceiling (ROOFLINE_SOURCE says where the figures come from and what they leave out).
    decode_read_gb: float | None = None
    notes: str = ""

    @property
    def deployable(self) -> bool:
        """True when a stack of this app deploys the backend."""
        return self.stack is not None


INF2 = BackendSpec(
    name="inf2",
    title="Neuron image on EC2 inf2 (Inferentia2)",
    kind=BackendKind.EC2_NEURON,
    stack="InferenceNeuronStack",
    model_id=GEMMA4_E2B,
    instance_type="inf2.xlarge",
    architecture=Architecture.X86_64,
    accelerator=Accelerator.NEURON,
    ami_parameter=NEURON_AMI_PARAMETER,
    image="docker.io/xbill9/gemma4-optb:slim",
    # The survey ran it as `docker run --device=/dev/neuron0 -v gemma4-data:/data -p 8080:8080 IMAGE`:
    # model, compiled graphs and command are inside the image.
    model_argument=ModelArgument.NONE,
    port=8080,
    container_port=8080,
    data_volume="gemma4-data:/data",
    forward_port=8003,
    regions=SURVEY_REGIONS,
    root_volume_gib=100,
    # inf2.xlarge has 16 GiB of RAM; loading the E2B graph peaks near 19.5 GB.
    swap_gib=16,
    supports_tools=False,
    max_total_tokens=512,
    memory_bandwidth_gbs=817,
    decode_read_gb=E2B_BF16_GB,
    survey_launch_to_ready_min=17.9,
    survey_tok_s=(36.4, 36.6),
    notes="fixed-shape graph: 512 tokens in total, 128 for the prompt; ignores tools",
)

G6 = BackendSpec(
    name="g6",
    title="vLLM on EC2 g6 (L4)",
    kind=BackendKind.EC2_VLLM,
    stack="InferenceGpuStack",
    model_id=GEMMA4_EMB4,
    instance_type="g6.xlarge",
    architecture=Architecture.X86_64,
    accelerator=Accelerator.NVIDIA,
    ami_parameter=GPU_AMI_PARAMETER.format(arch="x86_64"),
    image="vllm/vllm-openai:v0.30.0",
    serve_flags=(
        "--max-model-len",
        "8192",
        "--gpu-memory-utilization",
        "0.90",
        *VLLM_TOOL_FLAGS,
    ),
    forward_port=8001,
    regions=SURVEY_REGIONS,
    root_volume_gib=100,
    memory_bandwidth_gbs=300,
    decode_read_gb=E2B_INT4_GB,
    survey_launch_to_ready_min=13.9,
    survey_tok_s=(131.5, 132.5),
)

BACKENDS: tuple[BackendSpec, ...] = (
    G6,
    replace(
        G6,
        name="g5g",
        title="vLLM on EC2 g5g (Graviton2 + T4G, sm_75 build)",
        model_id=GEMMA4_E2B,
        instance_type="g5g.2xlarge",
        architecture=Architecture.ARM64,
        ami_parameter=GPU_AMI_PARAMETER.format(arch="arm64"),
        # Built for sm_75 by the images/ work and pushed to this account's ECR.
        image="ecr:vllm-sm75:v0.27.2rc0-sm75",
        serve_flags=("--dtype", "float16", *G6.serve_flags),
        forward_port=8002,
        # The survey ran g5g in us-east-1 only; us-east-2 does not offer g5g.
        regions=("us-east-1", "us-west-2"),
        root_volume_gib=80,
        image_build_hint=(
            "build the sm_75 vLLM image for linux/arm64 and push it to this account's ECR repository "
            "vllm-sm75 (README: 'The g5g image'), or deploy with -c g5g.image=URI"
        ),
        memory_bandwidth_gbs=320,
        decode_read_gb=E2B_BF16_GB,
        survey_launch_to_ready_min=23.7,
        survey_tok_s=(37.2, 35.8),
        notes="gated weights: needs the Hugging Face token secret",
    ),
    INF2,
    replace(
        INF2,
        name="trn1",
        title="Neuron image on EC2 trn1 (Trainium)",
        instance_type="trn1.2xlarge",
        forward_port=8004,
        # trn1.2xlarge is not offered in us-east-1 (survey, 2026-10-04).
        regions=("us-east-2", "us-west-2"),
        root_volume_gib=200,
        # 32 GiB of RAM: the ~19.5 GB load peak fits without swap.
        swap_gib=0,
        memory_bandwidth_gbs=613,
        survey_launch_to_ready_min=12.8,
        survey_tok_s=(37.1, 36.9),
        notes="same image as inf2",
    ),
    BackendSpec(
        name="sagemaker",
        title="SageMaker endpoint (AWS vLLM DLC, L4)",
        kind=BackendKind.SAGEMAKER,
        stack="InferenceSageMakerStack",
        model_id=GEMMA4_EMB4,
        instance_type="ml.g6.xlarge",
        architecture=Architecture.X86_64,
        accelerator=Accelerator.NVIDIA,
        # Repository and tag inside the region's DLC registry account: the vLLM 0.30.0 DLC the
        # survey's endpoint ran (run2-REPORT.md).
        image="vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.4",
        serve_flags=("--max-model-len", "8192", *VLLM_TOOL_FLAGS),
        port=8080,
        container_port=8080,
        health_path="/ping",
        regions=("us-east-2", "us-east-1"),
        memory_bandwidth_gbs=300,
        decode_read_gb=E2B_INT4_GB,
        survey_launch_to_ready_min=8.0,
        survey_tok_s=(106.3, 105.2),
    ),
    BackendSpec(
        name="bedrock",
        title="Amazon Bedrock (Nova Micro)",
        kind=BackendKind.BEDROCK,
        model_id="us.amazon.nova-micro-v1:0",
        regions=("us-east-1",),
        health_path="",
        survey_tok_s=(111.9, 115.9),
        notes="the inference profile id is required for on-demand throughput",
    ),
    BackendSpec(
        name="local",
        title="Embedded llama.cpp server (Gemma 3 270M base, Q4_K_M)",
        kind=BackendKind.LOCAL,
        model_id="gemma-3-270m-q4_k_m",
        port=0,
        container_port=0,
        notes="a small BASE model: proves the harness and measures speed, not answer quality",
    ),
)


def backend_names(*, deployable_only: bool = False) -> list[str]:
    return [b.name for b in BACKENDS if b.deployable or not deployable_only]


def get_backend(name: str) -> BackendSpec:
    for spec in BACKENDS:
        if spec.name == name:
            return spec
    raise CatalogError(f"unknown backend {name!r}; known backends: {', '.join(backend_names())}")


def stack_names() -> list[str]:
    """Backend stacks in catalog order, each once."""
    return list(dict.fromkeys(b.stack for b in BACKENDS if b.stack))
