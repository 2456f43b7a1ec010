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
images the servers run are in the region's ECR: the ones the app builds in its store stack's
repositories, AWS's DLCs in AWS's (catalog/builds.py).

The instance types' disks and networks (INSTANCE_DISKS) decide where Docker keeps its data: the
instance store where the type has one and it holds the image and the weights, else the root
volume, whose gp3 throughput is raised where its writes are the slow part (catalog/backends.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from catalog.backends import BackendKind, ModelArgument
from catalog.builds import built_image

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
# The version of the copy's manifest every reader takes (weights_copy.sh MANIFEST_VERSION,
# server_scripts/store.sh WEIGHTS_MANIFEST_VERSION): 2 lists each file's sha256 and the hub revision,
# and holds every file the engines read (a chat template among them); a copy of an older version is
# made again.
WEIGHTS_MANIFEST_VERSION = 2
GRAPHS_PREFIX = "graphs/"
# S3 Standard storage, us-east-1: what the store costs a month (S3 pricing page; the figure every
# public summary quotes for the first 50 TB). UNVERIFIED (not read from the page here).
S3_USD_PER_GB_MONTH = 0.023


# The kinds whose backends read the region's store (weights, graphs) or push to its repositories.
STORE_KINDS = (BackendKind.EC2_VLLM, BackendKind.EC2_NEURON, BackendKind.SAGEMAKER, BackendKind.SAGEMAKER_SERVERLESS)


def store_needs(stacks: Iterable[Any]) -> dict[str, tuple[list[str], list[str]]]:
    """{region: (models the store copies, images built there)} for every region of `stacks` (the
    config's StackConfigs) with a backend that reads the store or runs an image the app builds: the
    regions that get a store stack (stacks/store_stack.py)."""
    needs: dict[str, tuple[list[str], list[str]]] = {}
    for stack in stacks:
        for backend in stack.backends:
            spec = backend.spec
            if spec.kind not in STORE_KINDS:
                continue
            models, images = needs.setdefault(stack.region, ([], []))
            if spec.kind is not BackendKind.SAGEMAKER_SERVERLESS and spec.model_argument is not ModelArgument.NONE:
                models.append(spec.model_id)
            folder = built_image(spec)
            if folder:
                images.append(folder)
    return {region: (list(dict.fromkeys(m)), list(dict.fromkeys(i))) for region, (m, i) in needs.items()}


# The stack that holds a region's store (stacks/store_stack.py), one per region.
STORE_STACK_PREFIX = "InferenceStore-"


def store_stack_name(region: str) -> str:
    return f"{STORE_STACK_PREFIX}{region}"


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
    # AWS's EC2 DLC of the same vLLM: vllm/vllm-openai:v0.30.0 with AWS's pip pins and EFA added.
    "dlc:vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-ec2": Size(
        12.5,
        30.0,
        "assumed: the vllm-openai:v0.30.0 figures above plus AWS's layers (EFA, pinned packages); AWS publishes no "
        "size for the EC2 tag",
        verified=False,
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


# --- the model: each phase's expected seconds before and after, against half the survey's time ---

# What the model rests on that no source gives (runner.up's recorded phases replace each of them
# with a measurement on the first real deploy):
ASSUMPTIONS = {
    "A1": "launch to the boot script: EC2's pending to running and the DLAMI's own boot, 60 s",
    "A2": "a download from the Hugging Face hub to EC2 at 40 MB/s",
    "A3": "Docker extracts an image's layers one at a time on one core (gunzip): 150 MB/s of extracted data",
    "A4": "vLLM's start before it loads weights (imports, the engine's processes, memory profiling): 30 s",
    "A5": "vLLM reading its compiled graphs back from its cache: 2 s",
    "A6": "a first Neuron compile of Qwen2.5-1.5B at tensor parallel 2: 10 min on 4 vCPUs, 5 min on 8 "
    "(the vendor's guide gives about 15 min for a 15 GB model; the compiler runs on the host's CPUs)",
    "A7": "a Neuron engine loading restored graphs and its weights onto the cores, and warming up: 60 s",
    "A8": "SageMaker's own steps to InService (provisioning, its image pull, its health check): what the "
    "survey measured less the hub download this app no longer makes",
}
# Measured by others (sources named): the rate a public registry's image reached in AWS's own
# measurement, 17.7 GB in 333 s on ml.g6.2xlarge (AWS ML blog, "container caching" in SageMaker);
# vLLM's cold compile and its CUDA-graph capture for small models (vllm-project/vllm PRs #11005,
# #11349).
PUBLIC_PULL_MBS = round(17.7e3 / 333, 1)
EXTRACT_MBS = 150.0
HUB_MBS = 40.0
BOOT_S = 60.0
VLLM_START_S, VLLM_COMPILE_S, VLLM_GRAPHS_S, VLLM_CACHED_COMPILE_S = 30.0, 19.0, 14.0, 2.0
NEURON_LOAD_S = 60.0
ANSWER_S = 1.0


@dataclass(frozen=True)
class PhaseModel:
    phase: str
    before_s: float
    before: str
    after_s: float
    after: str


@dataclass(frozen=True)
class BootModel:
    backend: str
    survey_s: float
    phases: tuple[PhaseModel, ...]
    note: str = ""

    @property
    def before_s(self) -> float:
        return sum(p.before_s for p in self.phases)

    @property
    def after_s(self) -> float:
        return sum(p.after_s for p in self.phases)

    @property
    def goal_s(self) -> float:
        """Half the survey's launch to ready, to the tenth of a minute (halves rounded up)."""
        half = (Decimal(str(self.survey_s / 60)) / 2).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
        return float(half) * 60

    @property
    def meets_goal(self) -> bool:
        return self.after_s <= self.goal_s


def _mbs(gb: float, mbs: float) -> float:
    return round(gb * 1000 / mbs)


def _network_mbs(instance_type: str) -> float:
    return round(INSTANCE_DISKS[instance_type].network_baseline_gbps * 125)


def _ec2_image(
    image: str, instance_type: str, volume_mbs: float, public: bool, after_image: str | None = None
) -> tuple[PhaseModel, ...]:
    """The image phase before (public registry or the region's ECR, onto the root volume) and after
    (the region's ECR: `after_image` where the app now runs another image than the survey did)."""
    before_size = IMAGE_SIZES[image]
    size = IMAGE_SIZES[after_image or image]
    disks = INSTANCE_DISKS[instance_type]
    write = round(min(volume_mbs, disks.ebs_baseline_mbs))
    before_bounds = {f"written to gp3 at {write:g} MB/s": _mbs(before_size.disk_gb, write)}
    if public:
        before_bounds[f"pulled from a public registry at {PUBLIC_PULL_MBS} MB/s"] = _mbs(
            before_size.disk_gb, PUBLIC_PULL_MBS
        )
    else:
        before_bounds[f"extracted at {EXTRACT_MBS:g} MB/s (A3)"] = _mbs(before_size.disk_gb, EXTRACT_MBS)
    before_how, before_s = max(before_bounds.items(), key=lambda kv: kv[1])
    network = _network_mbs(instance_type)
    if disks.instance_store_gb:
        after_write, where = None, f"the {disks.instance_store_gb} GB instance store"
    else:
        after_write = round(min(volume_mbs, disks.ebs_max_mbs))
        where = f"gp3 at {volume_mbs:g} MB/s (the instance's EBS bursts to {disks.ebs_max_mbs:.0f})"
    after_bounds = {
        f"{size.download_gb:g} GB from the region's ECR at {network:g} MB/s": _mbs(size.download_gb, network),
        f"extracted at {EXTRACT_MBS:g} MB/s (A3) onto {where}": _mbs(size.disk_gb, EXTRACT_MBS),
    }
    if after_write:
        after_bounds[f"written at {after_write:g} MB/s"] = _mbs(size.disk_gb, after_write)
    after_how, after_s = max(after_bounds.items(), key=lambda kv: kv[1])
    return (
        PhaseModel(
            "image",
            before_s,
            f"{before_size.disk_gb:g} GB {before_how}",
            after_s,
            f"{after_how} (the slowest of {len(after_bounds)} bounds that overlap)",
        ),
    )


def boot_models() -> dict[str, BootModel]:
    """Each backend's phases, modelled; docs/deploying.md prints them (a test holds it to this)."""
    qwen = MODEL_SIZES["Qwen/Qwen2.5-1.5B-Instruct"].disk_gb
    emb4 = MODEL_SIZES["xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4"].disk_gb
    e2b = MODEL_SIZES["google/gemma-4-E2B-it"].disk_gb
    boot = PhaseModel("running", BOOT_S, f"{BOOT_S:g} s (A1)", BOOT_S, f"{BOOT_S:g} s (A1)")
    answer = PhaseModel("answer", ANSWER_S, "one short answer", ANSWER_S, "one short answer")
    g6_net = _network_mbs("g6.xlarge")
    g6 = BootModel(
        "g6",
        13.9 * 60,
        (
            boot,
            *_ec2_image(
                "vllm/vllm-openai:v0.30.0",
                "g6.xlarge",
                125,
                public=True,
                after_image="dlc:vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-ec2",
            ),
            PhaseModel(
                "weights",
                _mbs(emb4, HUB_MBS),
                f"{emb4:g} GB from the hub at {HUB_MBS:g} MB/s (A2)",
                _mbs(emb4, g6_net),
                f"streamed from the region's store at the network's {g6_net:g} MB/s",
            ),
            PhaseModel(
                "engine",
                VLLM_START_S + _mbs(emb4, 125) + VLLM_COMPILE_S + VLLM_GRAPHS_S,
                f"start {VLLM_START_S:g} s (A4) + {emb4:g} GB read at 125 MB/s + compile {VLLM_COMPILE_S:g} s + "
                f"CUDA graphs {VLLM_GRAPHS_S:g} s",
                VLLM_START_S + VLLM_CACHED_COMPILE_S + VLLM_GRAPHS_S,
                f"start {VLLM_START_S:g} s + graphs read back {VLLM_CACHED_COMPILE_S:g} s (A5) + CUDA graphs "
                f"{VLLM_GRAPHS_S:g} s (not cached by vLLM)",
            ),
            answer,
        ),
    )
    g5g_net = round(min(_network_mbs("g5g.2xlarge"), INSTANCE_DISKS["g5g.2xlarge"].ebs_baseline_mbs))
    (g5g_image,) = _ec2_image("build:vllm-sm75", "g5g.2xlarge", 500, public=False)
    g5g = BootModel(
        "g5g",
        23.7 * 60,
        (
            boot,
            PhaseModel(
                "image",
                0,
                "baked into the survey's AMI (its files read lazily: part of the rest)",
                g5g_image.after_s,
                f"{IMAGE_SIZES['build:vllm-sm75'].disk_gb:g} GB (assumed) {g5g_image.after}",
            ),
            PhaseModel(
                "weights",
                521,
                "measured by the survey: 520.97 s, a snapshot's volume read for the first time",
                _mbs(e2b, g5g_net),
                f"{e2b:g} GB copied from the store at {g5g_net:g} MB/s (the network's and the volume's baseline)",
            ),
            PhaseModel(
                "engine",
                23.7 * 60 - BOOT_S - 521 - ANSWER_S,
                "the rest of the survey's 23.7 min, not broken down by it",
                VLLM_START_S + _mbs(e2b, g5g_net) + VLLM_CACHED_COMPILE_S + VLLM_GRAPHS_S,
                f"start {VLLM_START_S:g} s + {e2b:g} GB read at {g5g_net:g} MB/s + graphs read back "
                f"{VLLM_CACHED_COMPILE_S:g} s + CUDA graphs {VLLM_GRAPHS_S:g} s",
            ),
            answer,
        ),
    )
    neuron = {}
    for name, instance_type, volume, survey_min, compile_s in (
        ("inf2", "inf2.xlarge", 500, 17.9, 600.0),
        ("trn1", "trn1.2xlarge", 125, 12.8, 300.0),
    ):
        net = _network_mbs(instance_type)
        (image,) = _ec2_image("build:neuron", instance_type, volume, public=False)
        disk_gb = IMAGE_SIZES["build:neuron"].disk_gb
        neuron[name] = BootModel(
            name,
            survey_min * 60,
            (
                boot,
                PhaseModel(
                    "image",
                    _mbs(disk_gb, 125),
                    f"{disk_gb:g} GB (assumed) written to gp3 at 125 MB/s",
                    image.after_s,
                    f"{disk_gb:g} GB (assumed) {image.after}",
                ),
                PhaseModel(
                    "weights",
                    _mbs(qwen, HUB_MBS),
                    f"{qwen:g} GB from the hub at {HUB_MBS:g} MB/s (A2)",
                    _mbs(qwen, net),
                    f"{qwen:g} GB copied from the store at the network's {net:g} MB/s",
                ),
                PhaseModel(
                    "engine",
                    compile_s + NEURON_LOAD_S,
                    f"compile {compile_s:g} s (A6) + load {NEURON_LOAD_S:g} s (A7)",
                    NEURON_LOAD_S + 2,
                    f"graphs restored from the store (2 s) + load {NEURON_LOAD_S:g} s (A7)",
                ),
                answer,
            ),
            note=f"with graphs stored for these inputs anywhere in the account; a first compile in the account "
            f"adds {compile_s:g} s",
        )
    saved = _mbs(emb4, HUB_MBS) - _mbs(emb4, g6_net)
    sagemaker = BootModel(
        "sagemaker",
        8.0 * 60,
        (
            PhaseModel(
                "engine",
                8.0 * 60 - _mbs(emb4, HUB_MBS),
                "SageMaker's own steps (A8): the survey's 8.0 min less the hub download",
                8.0 * 60 - _mbs(emb4, HUB_MBS),
                "unchanged: provisioning, the DLC's pull (AWS measured 333 s for a 17.7 GB image), the health check",
            ),
            PhaseModel(
                "weights",
                _mbs(emb4, HUB_MBS),
                f"{emb4:g} GB from the hub at {HUB_MBS:g} MB/s (A2)",
                _mbs(emb4, g6_net),
                f"copied by SageMaker from the region's store (ModelDataSource) at {g6_net:g} MB/s: {saved:g} s saved",
            ),
        ),
        note="cannot reach half: the rest is SageMaker's own; its container caching (the AWS blog's), an endpoint "
        "kept instead of deleted at the time-to-live, or a smaller image would",
    )
    return {m.backend: m for m in (g6, g5g, neuron["inf2"], neuron["trn1"], sagemaker)}


def _seconds(value: float) -> str:
    return f"{value:.0f}"


def model_markdown() -> str:
    """The model as docs/deploying.md prints it: per backend, each phase before and after with its
    arithmetic, the totals, and the goal (half the survey's launch to ready)."""
    lines = []
    for model in boot_models().values():
        verdict = "meets it" if model.meets_goal else "does not meet it"
        lines += [
            f"**{model.backend}**: survey {model.survey_s / 60:.1f} min; modelled before {model.before_s / 60:.1f} min, "
            f"after {model.after_s / 60:.1f} min; goal {model.goal_s / 60:.1f} min: {verdict}"
            + (f" ({model.note})" if model.note else ""),
            "",
            "| phase | before s | how | after s | how |",
            "|---|---|---|---|---|",
            *(
                f"| {p.phase} | {_seconds(p.before_s)} | {p.before} | {_seconds(p.after_s)} | {p.after} |"
                for p in model.phases
            ),
            f"| total | {_seconds(model.before_s)} | | {_seconds(model.after_s)} | |",
            "",
        ]
    lines.append("Assumptions (no source gives them; the phases runner.up records replace them):")
    lines.append("")
    lines += [f"- {key}: {text}" for key, text in ASSUMPTIONS.items()]
    return "\n".join(lines) + "\n"
