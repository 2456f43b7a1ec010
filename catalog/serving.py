"""What each way of serving supports, in one table: the runner asks it instead of branching on the
kind, and a capability a path lacks is one line in the tables, never a wrong figure.

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
- `cold_starts`: the first request after idle starts its compute (timed apart).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from catalog.backends import BackendKind


@dataclass(frozen=True)
class Supports:
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
    # What a user reads when the path lacks a capability a workload asks for.
    why_not: tuple[tuple[str, str], ...] = ()

    def reason(self, capability: str) -> str:
        return dict(self.why_not).get(capability, f"this path has no {capability.replace('_', ' ')}")


VLLM_SERVER = Supports(
    openai=True, forced_output_length=True, usage_per_chunk=True, tokenizer=True, server_metrics=True, in_region=True
)
SAGEMAKER_VLLM = ("tokenizer", "a SageMaker endpoint serves /invocations only: prompt lengths calibrated from usage")
SAGEMAKER_METRICS = ("server_metrics", "a SageMaker endpoint exposes no /metrics (CloudWatch has its own)")

SERVING: dict[BackendKind, Supports] = {
    BackendKind.EC2_VLLM: VLLM_SERVER,
    # AWS's vLLM-Neuron container: vLLM's OpenAI server (0.16), its tokenizer and metrics; its
    # running count per chunk is not relied on.
    BackendKind.EC2_NEURON: replace(VLLM_SERVER, usage_per_chunk=False),
    # llama.cpp's own server (started with its metrics on).
    BackendKind.LOCAL: Supports(
        openai=True, forced_output_length=True, usage_per_chunk=True, tokenizer=True, server_metrics=True
    ),
    # A user's OpenAI-compatible server: asked, and a server that ignores a field is caught by the
    # counts it reports (a level whose output misses its target is flagged).
    BackendKind.OPENAI: Supports(
        openai=True, forced_output_length=True, usage_per_chunk=True, tokenizer=True, server_metrics=True
    ),
    # AWS's vLLM DLC behind /invocations: the request body reaches vLLM as it is.
    BackendKind.SAGEMAKER: Supports(
        forced_output_length=True, aws_api=True, why_not=(SAGEMAKER_VLLM, SAGEMAKER_METRICS)
    ),
    BackendKind.SAGEMAKER_SERVERLESS: Supports(
        streaming=False,
        forced_output_length=True,
        aws_api=True,
        cold_starts=True,
        why_not=(
            ("streaming", "a serverless endpoint answers InvokeEndpoint with one JSON body: no time to first token"),
            SAGEMAKER_VLLM,
            SAGEMAKER_METRICS,
        ),
    ),
    BackendKind.SAGEMAKER_ASYNC: Supports(
        streaming=False,
        forced_output_length=True,
        aws_api=True,
        cold_starts=True,
        why_not=(
            ("streaming", "an asynchronous endpoint writes the whole answer to S3: no time to first token"),
            SAGEMAKER_VLLM,
            SAGEMAKER_METRICS,
        ),
    ),
    BackendKind.SAGEMAKER_BATCH: Supports(
        streaming=False,
        forced_output_length=True,
        chat=False,
        concurrency=False,
        aws_api=True,
        why_not=(("concurrency", "a transform job runs its own batch: python -m runner.batch"),),
    ),
    BackendKind.BEDROCK: Supports(
        aws_api=True,
        why_not=(
            (
                "forced_output_length",
                "Bedrock's Converse cannot be told to ignore the end of the answer: the model chose the length",
            ),
            ("tokenizer", "Bedrock counts tokens only in its usage: prompt lengths calibrated from it"),
            ("server_metrics", "Bedrock is a regional API: no server of ours to read metrics from"),
        ),
    ),
    BackendKind.BEDROCK_IMPORT: Supports(
        aws_api=True,
        cold_starts=True,
        why_not=(
            (
                "forced_output_length",
                "Custom Model Import documents no field that forces the length: the model chose it",
            ),
            ("tokenizer", "an imported model counts tokens only in its usage: prompt lengths calibrated from it"),
            ("server_metrics", "Custom Model Import is a regional API: no server of ours to read metrics from"),
        ),
    ),
}


def supports(kind: BackendKind) -> Supports:
    return SERVING[kind]
