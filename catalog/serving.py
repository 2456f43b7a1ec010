"""Each way of serving in one table: what it supports, how AWS bills it, whether the agent runs on
it, and what its figures are when they are not AWS's. The runner asks this table instead of
branching on the kind, and a capability a path lacks is one line in the tables, never a wrong
figure. (Behaviour per kind, such as which client class times it, is registered once per concern:
runner/measure/clients.py, runner/measure/health.py, runner/agent/models.py, runner/costing/prices.py.)

The facts, per path:
- `openai`: speaks the OpenAI chat-completions protocol over HTTP (vLLM's and llama.cpp's servers,
  a user's `--endpoint`);
- `streaming`: answers as a stream, so time to first token is measured (SageMaker serverless and
  async answer whole; a transform job is no chat at all);
- `forced_output_length`: the engine can be told to produce exactly the asked number of tokens
  (vLLM's `ignore_eos` and `min_tokens`, llama.cpp's `ignore_eos`); on the others the model chooses
  when to stop and the record says so (Bedrock's Converse has no such field; Custom Model Import's
  engine documents none);
- `usage_per_chunk`: may report a running token count in every chunk (vLLM's
  `continuous_usage_stats`; a server that does not ignores the option and the count is estimated);
- `tokenizer`: the server counts a prompt's tokens on request (vLLM's and llama.cpp's `/tokenize`);
  elsewhere a prompt's length is calibrated from the usage the path reports;
- `server_metrics`: the server exposes Prometheus `/metrics` on the port the runner reaches;
- `chat`: answers a chat request (a transform job's model does not: `python -m runner.batch`);
- `concurrency`: takes load levels (a transform job runs its own batch);
- `in_region`: has a host of the app's own to run the benchmark on (`bench --in-region`);
- `aws_api`: reached through the AWS API (never built or called without AWS in use);
- `cold_starts`: the first request after idle starts its compute (timed apart);
- `agent`: the shared Strands agent runs on it (tools, conversation);
- `billing`: how AWS bills it (catalog/backends.py `Billing`); `provenance`: what its figures are
  when they are not AWS's (the embedded model, a user's server); `answer`: how its answer arrives
  when it is not streamed token by token (`runner.ask` says it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from catalog.backends import BACKENDS, BackendKind, Billing


@dataclass(frozen=True)
class ServingPath:
    openai: bool = False
    streaming: bool = True
    forced_output_length: bool = False
    usage_per_chunk: bool = False
    tokenizer: bool = False
    server_metrics: bool = False
    chat: bool = True
    concurrency: bool = True
    in_region: bool = False
    aws_api: bool = False
    cold_starts: bool = False
    agent: bool = True
    # A real-time endpoint's instances scale out under load (target tracking): sized hour by hour.
    scales_out: bool = False
    # A server of the app's own on EC2 (an SSM forward reaches it; EC2's vCPU quotas apply).
    ec2_server: bool = False
    # A SageMaker endpoint (InService is healthy), and the SageMaker quota its instances count
    # against ("<type> for endpoint usage", "<type> for transform job usage").
    sagemaker_endpoint: bool = False
    quota_usage: str = ""
    # Reads its weights from the region's store when a complete copy is there (a real-time
    # endpoint: runner.up hands it the copy at deploy; stacks/sagemaker_stack.py).
    reads_staged_weights: bool = False
    # An endpoint InService at zero instances (asynchronous): healthy, its first request starts one.
    zero_instances: bool = False
    billing: Billing = Billing.NONE
    provenance: str | None = None
    answer: str = ""
    # Why there is nothing to wait for before measuring (a managed API, a transform job): "" waits.
    no_health_check: str = ""
    # What a deployed stack of it waits for, when nothing runs until asked ("" runs: up watches it).
    runs_when_asked: str = ""
    # Why the benchmark cannot run on a host of its own in the region ("" when it can: bench --in-region).
    not_in_region: str = ""
    # What a user reads when the path lacks a capability a workload asks for.
    why_not: tuple[tuple[str, str], ...] = ()
    # The command that measures it where runner.bench cannot (a name in runner/commands.py): the
    # survey gives it that command's step instead of the chat steps, and bench's table says so.
    measured_by: str = ""

    def reason(self, capability: str) -> str:
        return dict(self.why_not).get(capability, f"this path has no {capability.replace('_', ' ')}")


VLLM_SERVER = ServingPath(
    openai=True,
    forced_output_length=True,
    usage_per_chunk=True,
    tokenizer=True,
    server_metrics=True,
    in_region=True,
    ec2_server=True,
    billing=Billing.INSTANCE_HOURS,
)
NOT_IN_REGION_SAGEMAKER = (
    "a SageMaker endpoint has no shell to run a client on; in {where} that would be a client on another instance "
    "or a Lambda, which this app does not deploy (its row is measured from here through the SageMaker runtime API)"
)
NOT_IN_REGION_BEDROCK = (
    "Bedrock is a regional API with no host of ours; in {where} that would be a client on an instance or a Lambda "
    "there, which this app does not deploy (its row is measured from here)"
)
SAGEMAKER_VLLM = ("tokenizer", "a SageMaker endpoint serves /invocations only: prompt lengths calibrated from usage")
SAGEMAKER_METRICS = ("server_metrics", "a SageMaker endpoint exposes no /metrics (CloudWatch has its own)")

SERVING: dict[BackendKind, ServingPath] = {
    BackendKind.EC2_VLLM: VLLM_SERVER,
    # AWS's vLLM-Neuron container: vLLM's OpenAI server (0.16), its tokenizer and metrics; its
    # running count per chunk is not relied on.
    BackendKind.EC2_NEURON: replace(VLLM_SERVER, usage_per_chunk=False),
    # llama.cpp's own server (started with its metrics on).
    BackendKind.LOCAL: ServingPath(
        openai=True,
        forced_output_length=True,
        usage_per_chunk=True,
        tokenizer=True,
        server_metrics=True,
        provenance="embedded model on this machine",
        not_in_region="the embedded model runs on this machine, so its one row is already on the server's host",
    ),
    # A user's OpenAI-compatible server: asked, and a server that ignores a field is caught by the
    # counts it reports (a level whose output misses its target is flagged).
    BackendKind.OPENAI: ServingPath(
        openai=True,
        forced_output_length=True,
        usage_per_chunk=True,
        tokenizer=True,
        server_metrics=True,
        provenance="OpenAI-compatible server, not AWS",
        not_in_region="an --endpoint server is not an instance of this app's",
    ),
    # AWS's vLLM DLC behind /invocations: the request body reaches vLLM as it is.
    BackendKind.SAGEMAKER: ServingPath(
        forced_output_length=True,
        aws_api=True,
        scales_out=True,
        reads_staged_weights=True,
        sagemaker_endpoint=True,
        quota_usage="endpoint usage",
        billing=Billing.INSTANCE_HOURS,
        not_in_region=NOT_IN_REGION_SAGEMAKER,
        why_not=(SAGEMAKER_VLLM, SAGEMAKER_METRICS),
    ),
    BackendKind.SAGEMAKER_SERVERLESS: ServingPath(
        streaming=False,
        forced_output_length=True,
        aws_api=True,
        cold_starts=True,
        sagemaker_endpoint=True,
        billing=Billing.SERVERLESS_SECONDS,
        not_in_region=NOT_IN_REGION_SAGEMAKER,
        answer="a serverless endpoint answers InvokeEndpoint with one JSON body, no stream",
        why_not=(
            ("streaming", "a serverless endpoint answers InvokeEndpoint with one JSON body: no time to first token"),
            SAGEMAKER_VLLM,
            SAGEMAKER_METRICS,
        ),
    ),
    BackendKind.SAGEMAKER_ASYNC: ServingPath(
        streaming=False,
        forced_output_length=True,
        aws_api=True,
        cold_starts=True,
        agent=False,
        zero_instances=True,
        sagemaker_endpoint=True,
        quota_usage="endpoint usage",
        billing=Billing.INSTANCE_HOURS_WHILE_RUNNING,
        not_in_region=NOT_IN_REGION_SAGEMAKER,
        answer="an asynchronous endpoint writes the whole answer to S3, then it is read",
        why_not=(
            ("streaming", "an asynchronous endpoint writes the whole answer to S3: no time to first token"),
            (
                "agent",
                "an asynchronous endpoint answers through S3, not in a conversation: one plain answer, no agent",
            ),
            SAGEMAKER_VLLM,
            SAGEMAKER_METRICS,
        ),
    ),
    BackendKind.SAGEMAKER_BATCH: ServingPath(
        streaming=False,
        forced_output_length=True,
        chat=False,
        concurrency=False,
        aws_api=True,
        agent=False,
        quota_usage="transform job usage",
        billing=Billing.JOB_INSTANCE_HOURS,
        not_in_region=NOT_IN_REGION_SAGEMAKER,
        measured_by="batch",
        no_health_check="no endpoint: a transform job starts its own instance (python -m runner.batch)",
        runs_when_asked="nothing runs until a transform job: python -m runner.batch",
        why_not=(
            ("concurrency", "a transform job runs its own batch: python -m runner.batch"),
            ("agent", "a transform job, not an endpoint: python -m runner.batch measures it"),
        ),
    ),
    BackendKind.BEDROCK: ServingPath(
        aws_api=True,
        billing=Billing.PER_TOKEN,
        not_in_region=NOT_IN_REGION_BEDROCK,
        no_health_check="managed API: no health check",
        answer="its timed client reads ConverseStream to the end before handing the text over",
        why_not=(
            (
                "forced_output_length",
                "Bedrock's Converse cannot be told to ignore the end of the answer: the model chose the length",
            ),
            ("tokenizer", "Bedrock counts tokens only in its usage: prompt lengths calibrated from it"),
            ("server_metrics", "Bedrock is a regional API: no server of ours to read metrics from"),
        ),
    ),
    BackendKind.BEDROCK_IMPORT: ServingPath(
        aws_api=True,
        cold_starts=True,
        agent=False,
        billing=Billing.MODEL_UNIT_MINUTES,
        not_in_region=NOT_IN_REGION_BEDROCK,
        no_health_check="managed API (Custom Model Import): no health check; a copy starts on first use",
        runs_when_asked="weights bucket and role ready: python -m runner.model_import import",
        why_not=(
            (
                "agent",
                "Converse (Strands' Bedrock model) does not serve Qwen2.5 imports: one plain answer through "
                "InvokeModel, no agent",
            ),
            (
                "forced_output_length",
                "Custom Model Import documents no field that forces the length: the model chose it",
            ),
            ("tokenizer", "an imported model counts tokens only in its usage: prompt lengths calibrated from it"),
            ("server_metrics", "Custom Model Import is a regional API: no server of ours to read metrics from"),
        ),
    ),
}


# The billing models with an hourly price, and what it means under each (the preflight's note).
HOURLY_NOTES = {
    Billing.INSTANCE_HOURS: "",
    Billing.INSTANCE_HOURS_WHILE_RUNNING: "bills only while scaled above zero",
    Billing.JOB_INSTANCE_HOURS: "bills only while a job runs",
}


def serving(kind: BackendKind | str | None) -> ServingPath:
    """The row of a kind (or of its value, as evidence files keep it); an unknown one bills nothing."""
    try:
        return SERVING[BackendKind(kind)]
    except ValueError:
        return UNKNOWN


# A kind this runner does not know (evidence of another version): nothing assumed of it.
UNKNOWN = ServingPath(chat=False, concurrency=False, agent=False, provenance="a kind this runner does not know")


# docs/runner.md's table of what each path supports, written from the rows above (the docs test
# holds the page to it): the capability, its column, and what a user reads in a cell.
CAPABILITY_COLUMNS = (
    ("streaming", "streams (TTFT)"),
    ("forced_output_length", "forced output"),
    ("tokenizer", "tokenizer"),
    ("server_metrics", "`/metrics`"),
    ("concurrency", "load levels"),
    ("agent", "agent"),
)


def capabilities_markdown() -> str:
    """One row per way of serving, each capability `yes` or `no` with the reason a user reads."""
    lines = [
        "| path | " + " | ".join(title for _, title in CAPABILITY_COLUMNS) + " |",
        "|---" * (len(CAPABILITY_COLUMNS) + 1) + "|",
    ]
    for kind, path in SERVING.items():
        names = [b.name for b in BACKENDS if b.kind is kind and b.name != kind.value]
        label = f"`{kind.value}`" + (f" ({', '.join(names)})" if names else "")
        cells = [
            "yes" if getattr(path, capability) else f"no: {path.reason(capability)}"
            for capability, _ in CAPABILITY_COLUMNS
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
