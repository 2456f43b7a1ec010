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
    SAGEMAKER_SERVERLESS = "sagemaker-serverless"
    SAGEMAKER_ASYNC = "sagemaker-async"
    SAGEMAKER_BATCH = "sagemaker-batch"
    SAGEMAKER_COMPONENTS = "sagemaker-components"
    BEDROCK = "bedrock"
    BEDROCK_IMPORT = "bedrock-import"
    LOCAL = "local"
    OPENAI = "openai"


# The kinds a stack runs on an EC2 instance of its own (values compare equal to their strings).
EC2_KINDS = frozenset({BackendKind.EC2_VLLM, BackendKind.EC2_NEURON})
# The kinds SageMaker serves (instance types start with `ml.`), and those reached by endpoint name.
SAGEMAKER_KINDS = frozenset(
    {
        BackendKind.SAGEMAKER,
        BackendKind.SAGEMAKER_SERVERLESS,
        BackendKind.SAGEMAKER_ASYNC,
        BackendKind.SAGEMAKER_BATCH,
        BackendKind.SAGEMAKER_COMPONENTS,
    }
)
ENDPOINT_KINDS = frozenset({BackendKind.SAGEMAKER, BackendKind.SAGEMAKER_SERVERLESS, BackendKind.SAGEMAKER_ASYNC})


class Billing(StrEnum):
    """How AWS bills a backend: what `runner.cost` and `runner.advise` multiply."""

    INSTANCE_HOURS = "instance-hours"  # an instance (EC2 or SageMaker real-time) while it exists
    INSTANCE_HOURS_WHILE_RUNNING = "instance-hours-while-running"  # async: only while scaled above zero
    JOB_INSTANCE_HOURS = "job-instance-hours"  # batch transform: the job's instances for its duration
    SERVERLESS_SECONDS = "serverless-seconds"  # compute seconds at the configured memory size
    MODEL_UNIT_MINUTES = "model-unit-minutes"  # Custom Model Import: CMUs per minute, 5-minute windows
    PER_TOKEN = "per-token"  # Bedrock's managed models
    NONE = "none"  # the embedded model and servers the user runs


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
    ENVIRONMENT = "environment"  # MODEL and the engine's settings in the container's environment


class WeightsLoad(StrEnum):
    """How a server gets its weights when the app's store in its region holds a complete copy
    (catalog/boot.py); without one, every server downloads them from the hub, and says so."""

    # Copied onto the instance's disk before the engine starts, then served from there.
    SYNC = "sync"
    # Read by the engine straight from S3 (vLLM's Run:ai Model Streamer, `--load-format
    # runai_streamer`: vLLM docs, "Loading models with Run:ai Model Streamer"; the vllm-openai
    # image installs runai-model-streamer[s3] in its vllm-openai-base stage, vllm-project/vllm
    # docker/Dockerfile). A stream that fails before the server first served makes the next
    # start copy them first.
    STREAM = "stream"
    # The image carries its model (the survey's Neuron image): nothing to fetch.
    NONE = "none"


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

# Accelerators (GPUs, or Inferentia/Trainium chips) per instance where a family's size has more
# than one; every other size of a family above has one. From the EC2 instance types' accelerated
# computing specifications (G4dn, G5, G6, G6e: 12xlarge and 24xlarge 4 GPUs, 48xlarge 8; g4dn.metal
# 8; G5g 16xlarge and metal 2; P4d 24xlarge 8; P5 48xlarge 8; Inf2 24xlarge 6, 48xlarge 12 chips;
# Trn1 32xlarge and Trn1n 32xlarge 16 chips); a SageMaker `ml.` type is the same machine. An
# inference component's copies take whole accelerators of one instance
# (`NumberOfAcceleratorDevicesRequired`: "Accelerators include GPUs and Amazon Web Services
# Inferentia", SageMaker API reference, InferenceComponentComputeResourceRequirements).
MULTI_ACCELERATOR_SIZES: dict[str, dict[str, int]] = {
    "g4dn": {"12xlarge": 4, "metal": 8},
    "g5": {"12xlarge": 4, "24xlarge": 4, "48xlarge": 8},
    "g6": {"12xlarge": 4, "24xlarge": 4, "48xlarge": 8},
    "g6e": {"12xlarge": 4, "24xlarge": 4, "48xlarge": 8},
    "g5g": {"16xlarge": 2, "metal": 2},
    "p4d": {"24xlarge": 8},
    "p5": {"48xlarge": 8},
    "inf2": {"24xlarge": 6, "48xlarge": 12},
    "trn1": {"32xlarge": 16},
    "trn1n": {"32xlarge": 16},
}

# How a SageMaker endpoint declared in CloudFormation may route requests among its instances and
# copies: the RoutingStrategy enum of AWS::SageMaker::EndpointConfig's RoutingConfig in the
# CloudFormation registry schema (as cfn-lint 1.58.0 ships it for us-east-1, us-east-2 and
# us-west-2: LEAST_OUTSTANDING_REQUESTS, PREFIX_AWARE, RANDOM). The SageMaker API lists a fourth,
# KV_AWARE (API reference, ProductionVariantRoutingConfig; botocore 1.44.8's service model), "only
# with supported containers, such as the SageMaker AI vLLM Deep Learning Container"; the schema a
# template is deployed with does not list it yet, so a deploy of this app cannot ask for it and
# KV_AWARE_NOTE says so. PREFIX_AWARE needs its PrefixAwareRoutingConfig (PrefixLength 1024..65536
# bytes of the request body for InvokeEndpoint, ConcurrencyThreshold 1..1024 in-flight requests per
# copy: API reference and the schema, PrefixAwareRoutingConfig).
ROUTING_STRATEGIES = ("LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE")
KV_AWARE_NOTE = (
    "KV_AWARE is in SageMaker's API (ProductionVariantRoutingConfig) but not in CloudFormation's "
    "AWS::SageMaker::EndpointConfig schema, which this app deploys with"
)
PREFIX_AWARE = "PREFIX_AWARE"
PREFIX_LENGTH_RANGE = (1024, 65536)
CONCURRENCY_THRESHOLD_RANGE = (1, 1024)


def accelerators(instance_type: str) -> int | None:
    """Accelerators of one instance of the type ('ml.g6.12xlarge' -> 4); None for a family the app
    does not place a backend on."""
    family = instance_family(instance_type)
    if family not in INSTANCE_FAMILIES:
        return None
    size = instance_type.rsplit(".", 1)[1]
    return MULTI_ACCELERATOR_SIZES.get(family, {}).get(size, 1)


# The GPU servers' host image: the NVIDIA driver must be at least 580 for the CUDA 13 builds they
# run (vLLM 0.30's image, and images/vllm-sm75 on CUDA 13.2). Both architectures take the Base OSS
# Nvidia Driver DLAMI for Ubuntu 26.04, one OS and one driver line for g6 and g5g:
# - x86_64: the one the survey's g6 served vLLM 0.30 on (driver 595.91.07; AWS DLAMI guide,
#   "aws-deep-learning-x86-base-gpu-ami-ubuntu-26-04");
# - arm64: "Deep Learning ARM64 Base OSS Nvidia Driver GPU AMI (Ubuntu 26.04)", whose release notes
#   list G5g, P6e-GB200 and P6e-GB300 and driver 595.91.07 (AWS DLAMI release notes,
#   aws-deep-learning-ami-gpubaseossarm64-ul2604-2026-10-01, build 20260929). Its parameter follows
#   the DLAMI guide's rule (find-dlami-id: /aws/service/deeplearning/ami/$architecture/$ami_type/
#   latest/ami-id, the AMI's name less "deep", "learning" and "ami"), as the 24.04 one does.
GPU_AMI_PARAMETERS = {
    "x86_64": "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-26.04/latest/ami-id",
    "arm64": "/aws/service/deeplearning/ami/arm64/base-oss-nvidia-driver-gpu-ubuntu-26.04/latest/ami-id",
}
# Neuron DLAMI (Ubuntu 24.04) for Inf2, Trn1, Trn1n, Trn2, Trn3 (Neuron docs, deploy/environments/dlami.rst).
NEURON_AMI_PARAMETER = "/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id"

VLLM_TOOL_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser", "gemma4")
# The survey's region order for g6, inf2 and trn1 (stage/up.sh); each list is cut to the regions
# that offer the backend's type (catalog/offerings.py).
SURVEY_REGIONS = ("us-east-2", "us-east-1", "us-west-2")
SURVEY_BENCH_SOURCE = (
    "the survey's bench-chat medians, run 1 (5 repeats) and run 2 (10 repeats), 2026-10-05: "
    "docs/article/evidence/bench-chat*.txt and run2-REPORT.md (repository xbill9/aws-inference-strands)"
)
SURVEY_DEMO_SOURCE = (
    "the survey's demo 1 (results/2026-10-05/demo1-*.json, 20 runs; docs/article/evidence/) and demo 2 "
    "medians over results/2026-10-05-stage/demo2-run1..5 (repository xbill9/aws-inference-strands)"
)
GIB = 1024**3 / 1e9
# The open model every open-model path serves in the `open` lane (catalog/lanes.py), and the
# Neuron rows' model in both lanes.
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
# The Neuron rows' model on the vendor engine (vLLM 0.16 + vllm-neuron 0.5.3, Neuron SDK 2.31: the
# last line the vendor documents for Inf2 and Trn1, in maintenance there; NxD Inference's 2.29
# "Trn2 and newer" note concerns its NKI kernels). Qwen2.5-1.5B-Instruct: Apache-2.0 (Qwen2.5's
# README: every size but 3B and 72B), a family NxD Inference's model reference lists (1.5B "not
# tested, but expected to work"; 0.5B and 7B tested), 12 query and 2 KV heads so tensor parallel 2
# divides them, 3.09 GB in bf16 (its one safetensors file), tool calls in the hermes format. The
# 3B size this row served before is under the Qwen Research licence (no commercial use).
OPEN_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
NEURON_MODEL = OPEN_MODEL
QWEN25_1_5B_BF16_GB = 3.09
# The serverless backend's file: Qwen's own 8-bit GGUF of the same checkpoint (repository
# Qwen/Qwen2.5-1.5B-Instruct-GGUF, 1,894,532,128 bytes), served by llama.cpp on the CPU.
OPEN_GGUF_REPOSITORY = "Qwen/Qwen2.5-1.5B-Instruct-GGUF"
OPEN_GGUF_FILE = "qwen2.5-1.5b-instruct-q8_0.gguf"
OPEN_GGUF_GB = 1.895
# Custom Model Import's regions (Bedrock user guide, "Supported Regions and models for Custom
# Model Import", 2026-11): us-east-1 first, as the survey's Bedrock row ran there.
IMPORT_REGIONS = ("us-east-1", "us-west-2")
# SageMaker Serverless Inference: memory 1024..6144 MB in 1 GB steps, concurrency 1..200 per
# endpoint (SageMaker developer guide, "Serverless endpoint configuration"); vCPUs grow with memory,
# so the default takes the most.
SERVERLESS_MEMORY_SIZES_MB = (1024, 2048, 3072, 4096, 5120, 6144)
SERVERLESS_MAX_CONCURRENCY = 200
# The survey's own Neuron image: a hand-ported Gemma 4 E2B graph traced at 512 tokens in total
# (128 for the prompt) that ignores tool definitions; run with no arguments, as the survey ran it.
SURVEY_NEURON_IMAGE = "docker.io/xbill9/gemma4-optb:slim"
SURVEY_SAGEMAKER_IMAGE = "vllm@sha256:f50ad6bf72933a1d30526e9f4c5793273d7799e9835840f7bacbb0da74dfc835"
GEMMA4_EMB4 = "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4"
GEMMA4_E2B = "google/gemma-4-E2B-it"
# Models the hub serves to anyone, with no access request: Gemma 4 E2B and the survey's int4 repack
# of it (Apache-2.0, not gated: Google's Gemma 4 model page, the survey's downloads without a
# token) and Qwen2.5-1.5B-Instruct (Apache-2.0). Only a role that reads another model (a gated one
# a user deploys with -c <backend>.model=...) is given the Hugging Face token's secret.
OPEN_ACCESS_MODELS = frozenset({GEMMA4_EMB4, GEMMA4_E2B, OPEN_MODEL})


def needs_hub_token(model_id: str) -> bool:
    return model_id not in OPEN_ACCESS_MODELS


# The hub revisions the weights copy takes, where a source pins one: Qwen2.5-1.5B-Instruct at the
# commit public projects pin as its immutable revision (with its model.safetensors sha256
# dd924a11…). For a model not listed the copy takes the commit `main` names when it runs and
# records it in the store's manifest, which every server checks what it reads against.
MODEL_REVISIONS = {OPEN_MODEL: "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"}


def pinned(model_id: str) -> str:
    """`MODEL@REVISION` where the revision is pinned, else the model as it is (weights_copy.sh)."""
    revision = MODEL_REVISIONS.get(model_id)
    return f"{model_id}@{revision}" if revision else model_id


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
    # Where the engine keeps what it compiles (a folder in the container): the host keeps it on its
    # data disk and in the app's store, keyed by image, model, instance type and settings, so the
    # next server anywhere in the account restores it instead of compiling (catalog/boot.py).
    compile_cache: str | None = None
    weights_load: WeightsLoad = WeightsLoad.SYNC
    # Engine settings the container reads from its environment (ModelArgument.ENVIRONMENT adds MODEL).
    container_env: tuple[tuple[str, str], ...] = ()
    # Local port of the SSM port forward the runner expects for an EC2 backend.
    forward_port: int | None = None
    # Regions in failover order: the stack goes to the first one every backend of it shares.
    regions: tuple[str, ...] = ()
    # Zones to place the server in (empty: every zone of the region; the ASG skips refusals).
    zones: tuple[str, ...] = ()
    root_volume_gib: int = 0
    # gp3 throughput of the root volume (MB/s; 125 is gp3's included baseline).
    root_volume_throughput_mbs: int = 125
    swap_gib: int = 0
    # The survey's launch-to-ready minutes (run 2, run2-REPORT.md), shown beside a user's own.
    survey_launch_to_ready_min: float | None = None
    # Minutes from launch to ready after which the server takes itself to zero instances: about
    # twice the survey's launch-to-ready, with room for a first Neuron compile (`<b>.readyMinutes`).
    ready_minutes: int | None = None
    # The survey's single-request median tok/s in its two runs (SURVEY_BENCH_SOURCE), shown beside
    # a user's own so a run that does or does not reproduce it is seen at once.
    survey_tok_s: tuple[float, ...] = ()
    # The survey's "Loading weights took" seconds where it recorded them (g5g: 520.97 and 530.83).
    survey_weights_load_s: tuple[float, ...] = ()
    # The survey's demo 1 (the counting demo, 20 runs, run 1 of 2026-10-05): (tools mode, correct,
    # runs) per mode it ran here, and demo 2's median seconds for the one-word question over its
    # five orchestrator runs (SURVEY_DEMO_SOURCE). Empty where the survey did not run it (the
    # Neuron rows had no tool calls, so no demo 1).
    survey_demo1: tuple[tuple[str, int, int], ...] = ()
    survey_demo2_median_s: float | None = None
    # The on-demand price the survey used for its cost figures (us-east, October 2026), and for
    # Bedrock its output-token price: what its $ per million output tokens rest on.
    survey_usd_per_hour: float | None = None
    survey_usd_per_million_output: float | None = None
    supports_tools: bool = True
    max_total_tokens: int | None = None
    memory_bandwidth_gbs: float | None = None
    # Weight bytes a decode step reads (GB, 10^9): with the bandwidth, the single-request decode
    # ceiling (ROOFLINE_SOURCE says where the figures come from and what they leave out).
    decode_read_gb: float | None = None
    # How the weights are stored as served (shown beside the model: int4 W4A16, bf16, Q8_0 GGUF).
    precision: str = ""
    billing: Billing = Billing.INSTANCE_HOURS
    # Opt-in backends are deployed only when `backends` names them (a default deploy stays as it was).
    opt_in: bool = False
    # Serverless: memory size and the most requests served at once (SERVERLESS_* above).
    memory_mb: int | None = None
    max_concurrency: int | None = None
    # Endpoints that scale (real-time, async): instance bounds and the concurrency target per model.
    min_instances: int = 1
    max_instances: int = 1
    target_concurrency: int | None = None
    # An endpoint of inference components: copies of the model at deploy, their bounds under
    # autoscaling, what each copy reserves (whole accelerators, host memory), and how the endpoint
    # routes among the copies (ROUTING_STRATEGIES; a PREFIX_AWARE one with its prefix length in bytes
    # and its in-flight threshold per copy).
    copies: int | None = None
    min_copies: int = 0
    max_copies: int = 1
    accelerators_per_copy: int = 1
    copy_memory_mb: int | None = None
    routing_strategy: str | None = None
    prefix_length: int | None = None
    concurrency_threshold: int | None = None
    notes: str = ""

    @property
    def deployable(self) -> bool:
        """True when a stack of this app deploys the backend."""
        return self.stack is not None


INF2 = BackendSpec(
    name="inf2",
    title="vLLM-Neuron on EC2 inf2 (Inferentia2)",
    kind=BackendKind.EC2_NEURON,
    stack="InferenceNeuronStack",
    model_id=NEURON_MODEL,
    instance_type="inf2.xlarge",
    architecture=Architecture.X86_64,
    accelerator=Accelerator.NEURON,
    ami_parameter=NEURON_AMI_PARAMETER,
    # images/neuron: AWS's vLLM-Neuron container (vLLM 0.16, vllm-neuron 0.5.3, Neuron SDK 2.31),
    # built by the stack's CodeBuild project into the stack's ECR repository.
    image="build:neuron",
    model_argument=ModelArgument.ENVIRONMENT,
    container_env=(
        ("TENSOR_PARALLEL_SIZE", "2"),  # both NeuronCores of the one chip
        ("MAX_MODEL_LEN", "4096"),  # room for a Strands agent's system prompt and tool schemas
        ("MAX_NUM_SEQS", "4"),
        ("TOOL_CALL_PARSER", "hermes"),  # Qwen2.5 writes <tool_call>{json}</tool_call>
    ),
    port=8080,
    container_port=8080,
    # Compiled graphs, per model and shape (images/neuron/serve.sh's COMPILED_ARTIFACTS): kept in the
    # app's store and restored before the engine starts (NxD Inference's vLLM guide: with
    # NEURON_COMPILED_ARTIFACTS pointing at compiled graphs, the engine loads them without compiling).
    compile_cache="/var/cache/neuron",
    forward_port=8003,
    regions=SURVEY_REGIONS,
    root_volume_gib=100,
    # No instance store on inf2.xlarge (catalog/boot.py INSTANCE_DISKS): the image is written to the
    # root volume, which gp3 gives 125 MB/s; the instance's EBS bandwidth bursts to 1250 MB/s (156
    # MB/s baseline), so 500 MB/s writes the extracted image four times as fast while the burst
    # lasts, for about $0.02 an hour (catalog/prices.py GP3_USD_PER_MBS_MONTH: 375 MB/s x $0.040 / 730 h).
    root_volume_throughput_mbs=500,
    # inf2.xlarge has 16 GiB of RAM: room for the compiler's peaks (the survey ran it with 16 GiB of swap).
    swap_gib=16,
    supports_tools=True,
    max_total_tokens=4096,
    memory_bandwidth_gbs=817,
    decode_read_gb=QWEN25_1_5B_BF16_GB,
    precision="bf16",
    survey_tok_s=(36.4, 36.6),
    survey_usd_per_hour=0.7582,
    survey_demo2_median_s=0.291,
    survey_launch_to_ready_min=17.9,
    # A first boot downloads the weights and compiles the graphs (tens of minutes on a 4-vCPU host).
    ready_minutes=75,
    notes=f"{NEURON_MODEL} on the vendor engine, not the g6 weights; the survey's rows served Gemma 4 E2B",
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
    ami_parameter=GPU_AMI_PARAMETERS["x86_64"],
    # AWS's vLLM DLC for EC2, from the region's own ECR: built FROM vllm/vllm-openai:v0.30.0, the
    # survey's image (aws/deep-learning-containers .github/config/image/vllm/ec2-ubuntu.yml:
    # base_image vllm/vllm-openai:v0.30.0, Python 3.12, CUDA 13.0.2, Ubuntu 24.04; tags in
    # docs/src/data/vllm/0.30.0-gpu-ec2.yml), whose entrypoint runs `vllm serve "$@"`
    # (scripts/docker/vllm/dockerd_entrypoint.sh): the same vLLM, flags and tool parsers. AWS
    # publishes no digest for the EC2 tags: each server records the digest it pulled (readiness
    # `image_digest`), and `-c g6.image=dlc:vllm@sha256:...` pins one (docs/design.md).
    image="dlc:vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-ec2",
    serve_flags=(
        "--max-model-len",
        "8192",
        "--gpu-memory-utilization",
        "0.90",
        *VLLM_TOOL_FLAGS,
    ),
    # The DLC's entrypoint reports the container's start to AWS unless told not to
    # (scripts/docker/telemetry/bash_telemetry.sh.template: OPT_OUT_TRACKING=true).
    container_env=(("OPT_OUT_TRACKING", "true"),),
    forward_port=8001,
    regions=SURVEY_REGIONS,
    # g6.xlarge has a 250 GB NVMe instance store (catalog/boot.py INSTANCE_DISKS): Docker's data, the
    # weights and the compile cache go there, not to the root volume's 125 MB/s.
    root_volume_gib=100,
    # vLLM's compile cache (VLLM_CACHE_ROOT, ~/.cache/vllm by default: vllm/envs.py), kept and restored.
    compile_cache="/root/.cache/vllm",
    weights_load=WeightsLoad.STREAM,
    memory_bandwidth_gbs=300,
    decode_read_gb=E2B_INT4_GB,
    precision="int4 (W4A16)",
    survey_launch_to_ready_min=13.9,
    ready_minutes=30,
    survey_tok_s=(131.5, 132.5),
    survey_usd_per_hour=0.8048,
    survey_demo1=(("filter", 20, 20), ("rows", 20, 20)),
    survey_demo2_median_s=0.153,
)

SAGEMAKER = BackendSpec(
    name="sagemaker",
    title="SageMaker endpoint (AWS vLLM DLC, L4)",
    kind=BackendKind.SAGEMAKER,
    stack="InferenceSageMakerStack",
    model_id=GEMMA4_EMB4,
    instance_type="ml.g6.xlarge",
    architecture=Architecture.X86_64,
    accelerator=Accelerator.NVIDIA,
    # Repository and digest inside the region's DLC registry account: the vLLM 0.30.0 DLC exactly as
    # the survey's endpoint ran it, the digest SageMaker resolved (its ResolvedImage, recorded in
    # results/2026-10-05-stage/sagemaker-status.json; "vllm@sha256:f50ad6bf…" in run2-REPORT.md),
    # not a tag that a later release of the DLC may move. The line's tag is
    # vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker-v1.4 (results/2026-10-08-stock-vs-repack);
    # that it resolves to this digest in every region is not recorded.
    image=SURVEY_SAGEMAKER_IMAGE,
    serve_flags=("--max-model-len", "8192", *VLLM_TOOL_FLAGS),
    port=8080,
    container_port=8080,
    health_path="/ping",
    regions=("us-east-2", "us-east-1"),
    memory_bandwidth_gbs=300,
    decode_read_gb=E2B_INT4_GB,
    survey_launch_to_ready_min=8.0,
    precision="int4 (W4A16)",
    survey_tok_s=(106.3, 105.2),
    survey_usd_per_hour=1.1267,
    survey_demo1=(("filter", 20, 20), ("rows", 20, 20)),
    survey_demo2_median_s=0.340,
    # Real-time autoscaling (`sagemaker.maxInstances`): one instance unless asked (the survey's
    # account had an ml.g6.xlarge endpoint quota of 1); target tracking on concurrent requests per
    # model (SageMaker's high-resolution predefined metric) at this many.
    target_concurrency=8,
)


# The SageMaker options beyond real-time, each opt-in (`-c backends=...,sagemaker-async`).
SAGEMAKER_OPTIONS: tuple[BackendSpec, ...] = (
    BackendSpec(
        name="sagemaker-serverless",
        title="SageMaker serverless endpoint (llama.cpp on CPU, Q8_0)",
        kind=BackendKind.SAGEMAKER_SERVERLESS,
        stack="InferenceSageMakerStack",
        model_id=OPEN_MODEL,
        architecture=Architecture.X86_64,
        # images/llama-serverless: llama.cpp's CPU server with Qwen's Q8_0 file of the open model,
        # behind the SageMaker container contract (/ping, /invocations on 8080), built into ECR.
        image="build:llama-serverless",
        port=8080,
        container_port=8080,
        health_path="/ping",
        regions=("us-east-2", "us-east-1"),
        billing=Billing.SERVERLESS_SECONDS,
        opt_in=True,
        memory_mb=6144,
        # Enough for the bench's sweep at 1, 2 and 4; each concurrent request gets its own compute.
        max_concurrency=4,
        precision="Q8_0 GGUF",
        decode_read_gb=OPEN_GGUF_GB,
        max_total_tokens=4096,
        notes="CPU only (serverless offers no GPU); the first request after idle is a cold start, timed apart",
    ),
    replace(
        SAGEMAKER,
        name="sagemaker-async",
        title="SageMaker asynchronous endpoint (AWS vLLM DLC, L4, scales to zero)",
        kind=BackendKind.SAGEMAKER_ASYNC,
        billing=Billing.INSTANCE_HOURS_WHILE_RUNNING,
        opt_in=True,
        # Zero between bursts (AWS's async guide: MinCapacity 0, scale-out from zero on the
        # HasBacklogWithoutCapacity metric), one instance at most unless asked.
        min_instances=0,
        max_instances=1,
        target_concurrency=None,
        survey_launch_to_ready_min=None,
        survey_tok_s=(),
        survey_demo1=(),
        survey_demo2_median_s=None,
        survey_usd_per_hour=None,
        notes="inputs and outputs in the stack's bucket; the runner's teardown empties it",
    ),
    replace(
        SAGEMAKER,
        name="sagemaker-batch",
        title="SageMaker batch transform (AWS vLLM DLC, L4)",
        kind=BackendKind.SAGEMAKER_BATCH,
        billing=Billing.JOB_INSTANCE_HOURS,
        opt_in=True,
        target_concurrency=None,
        survey_launch_to_ready_min=None,
        survey_tok_s=(),
        survey_demo1=(),
        survey_demo2_median_s=None,
        survey_usd_per_hour=None,
        notes="python -m runner.batch runs one transform job over a JSON-lines prompt set",
    ),
    replace(
        SAGEMAKER,
        name="sagemaker-components",
        title="SageMaker endpoint of inference components (AWS vLLM DLC, L4, copies scale to zero)",
        kind=BackendKind.SAGEMAKER_COMPONENTS,
        billing=Billing.INSTANCE_HOURS_WHILE_RUNNING,
        opt_in=True,
        # The endpoint holds no model: the model is one inference component, `copies` copies of it
        # at deploy, each on one whole L4 and reserving 1 GiB of host memory; copies between 0 and
        # 1 and instances between 0 and 1 unless asked (`<b>.maxCopies`, `<b>.maxInstances`; AWS's
        # "Scale an endpoint to zero instances" wants MinInstanceCount 0 and the copies' MinCapacity
        # 0). MinMemoryRequiredInMb is what SageMaker reserves to place a copy, not a cap (the API
        # keeps MaxMemoryRequiredInMb apart, unset here: vLLM takes the host memory it needs), and
        # the pool it places from is much smaller than the instance's memory: on a 16 GiB
        # ml.g5.xlarge 1024 MB was placed and 4096 refused ("There is not enough hardware
        # resources on the instances for this endpoint to create a copy of the inference
        # component": the public hf-cloud-sagemaker-production-defaults deploy notes, "Sizing the
        # component"). Only a real account shows the most an ml.g6.xlarge places.
        copies=1,
        min_copies=0,
        max_copies=1,
        min_instances=0,
        max_instances=1,
        accelerators_per_copy=1,
        copy_memory_mb=1024,
        routing_strategy="LEAST_OUTSTANDING_REQUESTS",
        survey_launch_to_ready_min=None,
        survey_tok_s=(),
        survey_demo1=(),
        survey_demo2_median_s=None,
        survey_usd_per_hour=None,
        notes=(
            "copies of one model on an endpoint that holds none; at zero copies a request is refused "
            "(no capacity) and starts one, timed apart as the cold start"
        ),
    ),
)

BEDROCK_IMPORT = BackendSpec(
    name="bedrock-import",
    title="Bedrock Custom Model Import (Qwen2.5 1.5B)",
    kind=BackendKind.BEDROCK_IMPORT,
    stack="InferenceBedrockImportStack",
    model_id=OPEN_MODEL,
    health_path="",
    regions=IMPORT_REGIONS,
    billing=Billing.MODEL_UNIT_MINUTES,
    opt_in=True,
    precision="bf16",
    decode_read_gb=QWEN25_1_5B_BF16_GB,
    notes=(
        "not in CloudFormation: python -m runner.model_import imports the weights the stack copied; "
        "invoked with InvokeModel (Converse does not serve Qwen2.5 imports)"
    ),
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
        ami_parameter=GPU_AMI_PARAMETERS["arm64"],
        # images/vllm-sm75: vLLM built for sm_75 on arm64 by the stack's CodeBuild project.
        image="build:vllm-sm75",
        serve_flags=("--dtype", "float16", *G6.serve_flags),
        forward_port=8002,
        # The sm_75 build carries no Run:ai streamer: the weights are copied to the disk first.
        weights_load=WeightsLoad.SYNC,
        # The survey ran g5g in us-east-1 only; us-east-2 does not offer g5g.
        regions=("us-east-1", "us-west-2"),
        root_volume_gib=80,
        # ~10 GB of fp16 weights are written once (download) and read at load: at gp3's 125 MB/s
        # floor that is 80 s each way; 500 MB/s costs about $0.02 an hour more (us-east-1 gp3
        # throughput price) and cuts both to ~20 s. The survey's 521-531 s was a snapshot-backed
        # volume read for the first time; these servers download to a fresh volume instead.
        root_volume_throughput_mbs=500,
        survey_weights_load_s=(520.97, 530.83),
        memory_bandwidth_gbs=320,
        decode_read_gb=E2B_BF16_GB,
        precision="fp16",
        survey_launch_to_ready_min=23.7,
        ready_minutes=50,
        survey_tok_s=(37.2, 35.8),
        survey_usd_per_hour=0.556,
        survey_demo1=(("filter", 20, 20), ("rows", 20, 20)),
        survey_demo2_median_s=0.187,
        # Gemma 4 E2B is Apache-2.0 and not gated (Google's Gemma 4 model page): no token needed.
        notes="the base Gemma 4 E2B weights in fp16 (Apache-2.0), not g6's int4 repack",
    ),
    INF2,
    replace(
        INF2,
        name="trn1",
        title="vLLM-Neuron on EC2 trn1 (Trainium)",
        instance_type="trn1.2xlarge",
        forward_port=8004,
        # trn1.2xlarge is not offered in us-east-1 (survey, 2026-10-04).
        regions=("us-east-2", "us-west-2"),
        root_volume_gib=200,
        # A 474 GB NVMe instance store (catalog/boot.py INSTANCE_DISKS) takes the image and weights.
        root_volume_throughput_mbs=125,
        # 32 GiB of RAM: no swap needed.
        swap_gib=0,
        memory_bandwidth_gbs=613,
        survey_launch_to_ready_min=12.8,
        ready_minutes=60,
        survey_tok_s=(37.1, 36.9),
        survey_usd_per_hour=1.3438,
        survey_demo2_median_s=0.192,
        notes=f"{NEURON_MODEL} on the vendor engine, the same image as inf2",
    ),
    SAGEMAKER,
    *SAGEMAKER_OPTIONS,
    BackendSpec(
        name="bedrock",
        title="Amazon Bedrock (Nova Micro)",
        kind=BackendKind.BEDROCK,
        model_id="us.amazon.nova-micro-v1:0",
        regions=("us-east-1",),
        health_path="",
        billing=Billing.PER_TOKEN,
        survey_tok_s=(111.9, 115.9),
        survey_usd_per_million_output=0.14,
        survey_demo1=(("filter", 20, 20), ("rows", 20, 20)),
        survey_demo2_median_s=0.623,
        notes="the inference profile id is required for on-demand throughput",
    ),
    BEDROCK_IMPORT,
    BackendSpec(
        name="local",
        title="Embedded llama.cpp server (Gemma 3 270M base, Q4_K_M)",
        kind=BackendKind.LOCAL,
        model_id="gemma-3-270m-q4_k_m",
        port=0,
        container_port=0,
        billing=Billing.NONE,
        precision="Q4_K_M GGUF",
        # The embedded server's context (runner/servers/llama_cpp.py starts it with this `--context`):
        # a length past it is one line, not sent; a reply it cuts short is no success.
        max_total_tokens=4096,
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


# What a known image implies for the backend that runs it: selecting the survey's Neuron image
# (`-c inf2.image=docker.io/xbill9/gemma4-optb:slim`) brings back the survey's model, its
# no-argument start, its data volume, its 512-token limit and its lack of tools.
IMAGE_PROFILES: dict[str, dict[str, object]] = {
    SURVEY_NEURON_IMAGE: {
        "model_id": GEMMA4_E2B,
        "model_argument": ModelArgument.NONE,
        "container_env": (),
        "data_volume": "gemma4-data:/data",
        "compile_cache": None,
        "weights_load": WeightsLoad.NONE,
        "supports_tools": False,
        "max_total_tokens": 512,
        "decode_read_gb": E2B_BF16_GB,
        "notes": "the survey's hand-ported Gemma 4 graph: 512 tokens in total, 128 for the prompt; ignores tools",
    }
}
