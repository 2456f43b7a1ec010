"""Each way of serving in one table: what it supports, how AWS bills it, whether the agent runs on
it, and what its figures are when they are not AWS's. The runner asks this table instead of
branching on the kind, and a capability a path lacks is one line in the tables, never a wrong
figure. (Behaviour per kind, such as which client class times it, is named in the row: see below.)

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

Its behaviour is named in the row by reference, `"package.module:name"`, as pip's `CommandInfo`
names a command's module and class: the layer that needs it resolves it (runner/core/references.py;
the stacks for `construct`), importing only the modules of the kinds in use. The catalog imports
nothing of the app, so a reference is text here, and tests/runner/test_serving_registry.py resolves
every one and holds each to the layer that reads it.
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
    # Reached through an SSM port forward from this machine (needs the Session Manager plugin).
    port_forward: bool = False
    # The SageMaker quota its instances count against ("<type> for endpoint usage", "<type> for
    # transform job usage"); the preflight's check of it is `quota`.
    quota_usage: str = ""
    # Its instances may scale to zero between bursts (`minInstances` may be 0): an asynchronous
    # endpoint (a real-time one keeps one; scaling it to zero needs inference components).
    scales_to_zero: bool = False
    # Reads its weights from the region's store when a complete copy is there (a real-time
    # endpoint: runner.up hands it the copy at deploy; stacks/sagemaker_stack.py).
    reads_staged_weights: bool = False
    billing: Billing = Billing.NONE
    provenance: str | None = None
    answer: str = ""
    # Why there is nothing to wait for before measuring (a managed API, a transform job): "" waits.
    no_health_check: str = ""
    # Why the benchmark cannot run on a host of its own in the region ("" when it can: bench --in-region).
    not_in_region: str = ""
    # What a user reads when the path lacks a capability a workload asks for.
    why_not: tuple[tuple[str, str], ...] = ()
    # The command that measures it where runner.bench cannot (a name in runner/commands.py): the
    # survey gives it that command's step instead of the chat steps, and bench's table says so.
    measured_by: str = ""
    # The context keys (-c) a deploy of it takes (catalog/config.py checks them at synth).
    context_keys: tuple[str, ...] = ()
    # The stack outputs it cannot be reached without (catalog/contract.py refuses an output without).
    outputs: tuple[str, ...] = ()
    # Its rank as the agent's default backend where none is asked for (highest first; 0 never by
    # default): AWS's managed model, then the embedded one, as the survey drove its demos.
    agent_default: int = 0
    # The command (and its arguments) that makes a deployed stack of it servable, which the survey
    # runs after `up` (a name in runner/commands.py): Custom Model Import's import.
    prepared_by: tuple[str, ...] = ()
    # Its behaviour, by reference (each "" where the path has none):
    # the timed client (runner.measure.clients), called (backend, timeout_s, region, connections);
    client: str = ""
    # the Strands model the agent runs on (runner.agent.models), (backend, max_tokens, temperature,
    # timeout_s, force_first_tool);
    agent_model: str = ""
    # what AWS prices it by (runner.costing.prices), (backend, instance_type, region) -> PriceRequest;
    price_request: str = ""
    # what it waits on before it is measured (runner.measure.health), (backend, wait_s, poll_s, ...);
    health: str = ""
    # what `up` watches once its stack is deployed (runner.cloud.bring_up.watch);
    watch: str = ""
    # the preflight's quota check (runner.cloud.bring_up.preflight);
    quota: str = ""
    # what it may leave billing in a region, found by the sweep (runner.cloud.cleanup.leftovers);
    leftovers: tuple[str, ...] = ()
    # the construct its stack builds it with (stacks/), (stack, backend, endpoint_name).
    construct: str = ""

    def reason(self, capability: str) -> str:
        return dict(self.why_not).get(capability, f"this path has no {capability.replace('_', ' ')}")


# The context keys (-c) each kind of deploy takes, checked at synth (catalog/config.py).
EC2_KEYS = ("regions", "zones", "instanceType", "model", "image", "flags", "ami", "readyMinutes")
SAGEMAKER_KEYS = ("regions", "instanceType", "model", "image", "flags", "startupTimeoutSeconds")
SCALING_KEYS = ("minInstances", "maxInstances")

# The SageMaker quota real-time and asynchronous endpoints draw on ("<type> for endpoint usage").
ENDPOINT_USAGE = "endpoint usage"

# References shared by several rows.
OPENAI_CLIENT = "runner.measure.clients:openai_client"
OPENAI_AGENT = "runner.agent.models:openai_agent_model"
SAGEMAKER_AGENT = "runner.agent.models:sagemaker_agent_model"
HTTP_HEALTH = "runner.measure.health:http_health"
ENDPOINT_HEALTH = "runner.measure.health:endpoint_health"
NO_HEALTH_CHECK = "runner.measure.health:no_health_check"
ENDPOINT_WATCH = "runner.cloud.bring_up.watch.endpoint:EndpointWatch"
SAGEMAKER_QUOTA = "runner.cloud.bring_up.preflight:sagemaker_instances"
LEFTOVERS = "runner.cloud.cleanup.leftovers:RegionScan"
SAGEMAKER_LEFTOVERS = (f"{LEFTOVERS}.sagemaker",)

VLLM_SERVER = ServingPath(
    openai=True,
    forced_output_length=True,
    usage_per_chunk=True,
    tokenizer=True,
    server_metrics=True,
    in_region=True,
    port_forward=True,
    billing=Billing.INSTANCE_HOURS,
    context_keys=EC2_KEYS,
    outputs=("auto_scaling_group", "readiness_parameter"),
    client=OPENAI_CLIENT,
    agent_model=OPENAI_AGENT,
    price_request="runner.costing.prices:ec2_server_request",
    health=HTTP_HEALTH,
    watch="runner.cloud.bring_up.watch.server:ServerWatch",
    quota="runner.cloud.bring_up.preflight:ec2_vcpus",
    leftovers=(f"{LEFTOVERS}.groups", f"{LEFTOVERS}.instances", f"{LEFTOVERS}.volumes"),
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
        agent_default=1,
        client=OPENAI_CLIENT,
        agent_model=OPENAI_AGENT,
        health=HTTP_HEALTH,
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
        client=OPENAI_CLIENT,
        agent_model=OPENAI_AGENT,
        health=HTTP_HEALTH,
        not_in_region="an --endpoint server is not an instance of this app's",
    ),
    # AWS's vLLM DLC behind /invocations: the request body reaches vLLM as it is.
    BackendKind.SAGEMAKER: ServingPath(
        forced_output_length=True,
        aws_api=True,
        scales_out=True,
        reads_staged_weights=True,
        quota_usage=ENDPOINT_USAGE,
        billing=Billing.INSTANCE_HOURS,
        not_in_region=NOT_IN_REGION_SAGEMAKER,
        why_not=(SAGEMAKER_VLLM, SAGEMAKER_METRICS),
        # stagedWeights: the app's store's complete copy of the model in the stack's region
        # (s3://BUCKET/weights/<model>/), which runner.up passes when the store holds one.
        context_keys=(*SAGEMAKER_KEYS, *SCALING_KEYS, "targetConcurrency", "stagedWeights"),
        outputs=("endpoint_name",),
        client="runner.measure.clients:sagemaker_client",
        agent_model=SAGEMAKER_AGENT,
        price_request="runner.costing.prices:sagemaker_instance_request",
        health=ENDPOINT_HEALTH,
        watch=ENDPOINT_WATCH,
        quota=SAGEMAKER_QUOTA,
        leftovers=SAGEMAKER_LEFTOVERS,
        construct="stacks.sagemaker_stack:realtime_endpoint",
    ),
    BackendKind.SAGEMAKER_SERVERLESS: ServingPath(
        streaming=False,
        forced_output_length=True,
        aws_api=True,
        cold_starts=True,
        billing=Billing.SERVERLESS_SECONDS,
        # The image carries its model file: no model key.
        context_keys=("regions", "image", "memoryMb", "maxConcurrency"),
        outputs=("endpoint_name",),
        client="runner.measure.clients:serverless_client",
        agent_model=SAGEMAKER_AGENT,
        price_request="runner.costing.prices:serverless_request",
        health=ENDPOINT_HEALTH,
        watch=ENDPOINT_WATCH,
        leftovers=SAGEMAKER_LEFTOVERS,
        construct="stacks.sagemaker_stack:serverless_endpoint",
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
        scales_to_zero=True,
        quota_usage=ENDPOINT_USAGE,
        billing=Billing.INSTANCE_HOURS_WHILE_RUNNING,
        context_keys=(*SAGEMAKER_KEYS, *SCALING_KEYS),
        outputs=("endpoint_name", "bucket", "input_prefix", "output_prefix"),
        client="runner.measure.clients:async_client",
        price_request="runner.costing.prices:sagemaker_async_request",
        health=ENDPOINT_HEALTH,
        watch=ENDPOINT_WATCH,
        quota=SAGEMAKER_QUOTA,
        leftovers=SAGEMAKER_LEFTOVERS,
        construct="stacks.sagemaker_stack:async_endpoint",
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
        context_keys=("regions", "instanceType", "model", "image", "flags"),
        outputs=("model_name", "bucket", "input_prefix", "output_prefix", "instance_type"),
        price_request="runner.costing.prices:sagemaker_batch_request",
        health=NO_HEALTH_CHECK,
        watch="runner.cloud.bring_up.watch.when_asked:TransformJobWhenAsked",
        quota=SAGEMAKER_QUOTA,
        leftovers=(*SAGEMAKER_LEFTOVERS, f"{LEFTOVERS}.transform_jobs"),
        construct="stacks.sagemaker_stack:batch_model",
        why_not=(
            ("concurrency", "a transform job runs its own batch: python -m runner.batch"),
            ("agent", "a transform job, not an endpoint: python -m runner.batch measures it"),
        ),
    ),
    # An endpoint of inference components: the same DLC and model as the real-time endpoint, as
    # copies on instances SageMaker adds and removes (managed instance scaling, down to zero), each
    # request naming its component (InvokeEndpointWithResponseStream's InferenceComponentName).
    BackendKind.SAGEMAKER_COMPONENTS: ServingPath(
        forced_output_length=True,
        aws_api=True,
        cold_starts=True,
        scales_out=True,
        scales_to_zero=True,
        quota_usage=ENDPOINT_USAGE,
        # Instances by the hour, and none while it sits at zero copies (MinInstanceCount 0).
        billing=Billing.INSTANCE_HOURS_WHILE_RUNNING,
        not_in_region=NOT_IN_REGION_SAGEMAKER,
        why_not=(SAGEMAKER_VLLM, SAGEMAKER_METRICS),
        context_keys=(
            *SAGEMAKER_KEYS,
            *SCALING_KEYS,
            "targetConcurrency",
            "copies",
            "minCopies",
            "maxCopies",
            "routingStrategy",
            "prefixLength",
            "concurrencyThreshold",
        ),
        outputs=("endpoint_name", "inference_component_name"),
        client="runner.measure.clients:component_client",
        agent_model="runner.agent.models:component_agent_model",
        price_request="runner.costing.prices:sagemaker_instance_request",
        health="runner.measure.health:component_health",
        watch="runner.cloud.bring_up.watch.endpoint:ComponentWatch",
        quota=SAGEMAKER_QUOTA,
        leftovers=(*SAGEMAKER_LEFTOVERS, f"{LEFTOVERS}.inference_components"),
        construct="stacks.sagemaker_stack:components_endpoint",
    ),
    BackendKind.BEDROCK: ServingPath(
        aws_api=True,
        billing=Billing.PER_TOKEN,
        not_in_region=NOT_IN_REGION_BEDROCK,
        no_health_check="managed API: no health check",
        agent_default=2,
        client="runner.measure.clients:bedrock_client",
        agent_model="runner.agent.models:bedrock_agent_model",
        price_request="runner.costing.prices:bedrock_request",
        health=NO_HEALTH_CHECK,
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
        context_keys=("regions", "model"),
        prepared_by=("model_import", "import"),
        outputs=("bucket", "input_prefix", "import_role_arn", "weights_job"),
        client="runner.measure.clients:import_client",
        price_request="runner.costing.prices:bedrock_import_request",
        health=NO_HEALTH_CHECK,
        watch="runner.cloud.bring_up.watch.when_asked:ImportWhenAsked",
        leftovers=(f"{LEFTOVERS}.model_imports",),
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
