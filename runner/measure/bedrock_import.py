"""Timed streaming chat against a Bedrock Custom Model Import model (InvokeModelWithResponseStream).

Converse is not used: AWS's user guide ("Invoke your imported model") says Converse does not
serve Qwen2.5, Qwen2-VL, Qwen2.5-VL and GPT-OSS imports. The same page documents, for every model
imported after 2025-11-11, three InvokeModel body formats: BedrockCompletion, OpenAICompletion and
OpenAIChatCompletion. This client sends the OpenAIChatCompletion body, `{"messages": [...],
"max_tokens": N, "temperature": t}`, so the model's own chat template is applied by the server.
Each `chunk` event's bytes are read as an OpenAI chat-completion chunk (or as SSE `data:` lines of
them); a BedrockCompletion chunk (`generation`, `stop_reason`, `generation_token_count`) is read
too, and the `amazon-bedrock-invocationMetrics` Bedrock adds to the last chunk gives the output
tokens when the chunks carry no usage.

The model ARN is resolved once from its name (GetImportedModel). An imported model scales to zero
when idle: the first request after idle is refused with ModelNotReadyException (HTTP 429) while a
copy starts. It is sent again with backoff within `not_ready_budget_s`; the time spent not ready
is kept in `record.phases["not_ready_s"]` and marks the record a cold start, while time to first
token and end-to-end time are those of the attempt that succeeded. An exception event in the
stream is raised by botocore while the stream is read, and is typed by `runner.core.errors`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from runner.cloud.aws import boto_client
from runner.core.errors import StreamFault, TimedOut, aws_error_code
from runner.core.records import RequestRecord
from runner.core.typed_json import JsonObject
from runner.measure.records import ChatRequest, Stopwatch, usage_counts
from runner.measure.until_served import send_until_served
from runner.timing.stream import ChatStreamAccumulator

NOT_READY = "ModelNotReadyException"
INVOCATION_METRICS = "amazon-bedrock-invocationMetrics"


def chat_body(request: ChatRequest) -> JsonObject:
    """The OpenAIChatCompletion body Custom Model Import takes for imported models."""
    return {
        "messages": request.messages(),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }


def as_chat_chunk(chunk: JsonObject) -> JsonObject:
    """A BedrockCompletion chunk in the OpenAI chunk's shape; any other chunk unchanged."""
    if "generation" not in chunk or "choices" in chunk:
        return chunk
    converted: JsonObject = {
        "choices": [{"delta": {"content": chunk.get("generation") or ""}, "finish_reason": chunk.get("stop_reason")}]
    }
    if chunk.get("generation_token_count") is not None:
        converted["usage"] = {
            "completion_tokens": chunk["generation_token_count"],
            "prompt_tokens": chunk.get("prompt_token_count"),
        }
    return converted


class BedrockImportStreamClient:
    # Backoff between attempts while the model is not ready: doubling from the first, capped.
    first_backoff_s = 1.0
    max_backoff_s = 15.0

    def __init__(
        self,
        model_name: str,
        region: str,
        *,
        client: Any | None = None,
        timeout_s: float = 60.0,
        not_ready_budget_s: float = 600.0,
        control_client: Any | None = None,
    ) -> None:
        self.model_name = model_name
        self.region = region
        self.timeout_s = timeout_s
        self.not_ready_budget_s = not_ready_budget_s
        self.client = client if client is not None else runtime_client(region, timeout_s)
        self._control = control_client
        self._resolving = threading.Lock()  # a load level calls `chat` from many threads at once
        self.model_arn: str | None = None

    def resolve(self) -> str:
        """The imported model's ARN, looked up once by name (GetImportedModel takes the name)."""
        with self._resolving:
            if self.model_arn is None:
                if self._control is None:
                    self._control = boto_client("bedrock", self.region, 30)
                self.model_arn = self._control.get_imported_model(modelIdentifier=self.model_name)["modelArn"]
        return self.model_arn

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        model_arn = self.resolve()
        body = json.dumps(chat_body(request))

        def refusal(waited: float) -> None:
            record.cold_start = True
            record.phases = {"not_ready_s": round(waited, 6)}

        served = send_until_served(
            lambda: self.client.invoke_model_with_response_stream(
                modelId=model_arn, contentType="application/json", accept="application/json", body=body
            ),
            lambda error: aws_error_code(error) == NOT_READY,
            first_backoff_s=self.first_backoff_s,
            max_backoff_s=self.max_backoff_s,
            budget_s=self.not_ready_budget_s,
            on_refusal=refusal,
            too_long=lambda waited, refusals: TimedOut(
                f"imported model {self.model_name} not ready after {waited:.1f} s "
                f"({refusals} x {NOT_READY}; budget {self.not_ready_budget_s:g} s)"
            ),
        )
        # Not ready: from the first attempt to the start of the one that streamed.
        record.cold_start = served.refusals > 0
        record.phases = {"not_ready_s": round(served.waited_s, 6) if served.refusals else 0.0}
        response, watch = served.response, served.watch
        return self._read(response, record, watch)

    def _read(self, response: dict[str, Any], record: RequestRecord, watch: Stopwatch) -> RequestRecord:
        stream = ChatStreamAccumulator(record)
        metrics: dict[str, Any] | None = None
        for event in response["body"]:
            if "chunk" not in event:
                continue
            data = event["chunk"].get("bytes") or b""
            at = watch.now()
            if data.lstrip().startswith(b"data:"):
                for line in data.decode("utf-8", errors="replace").splitlines():
                    stream.feed_line(line, at)
                continue
            try:
                chunk = json.loads(data)
            except ValueError:
                raise StreamFault(f"malformed stream: chunk {record.chunks + 1} is not JSON: {data[:80]!r}") from None
            if not isinstance(chunk, dict):
                raise StreamFault(f"malformed stream: chunk {record.chunks + 1} is not an object")
            metrics = chunk.pop(INVOCATION_METRICS, None) or metrics
            record.chunks += 1
            stream.feed_chunk(as_chat_chunk(chunk), at)
        if metrics is not None:
            record.server_timings = metrics
            if record.output_tokens is None and metrics.get("outputTokenCount") is not None:
                record.output_tokens, record.prompt_tokens = usage_counts(
                    metrics, "outputTokenCount", "inputTokenCount"
                )
                record.token_source = "server"
        return stream.finish(watch.now())

    def close(self) -> None:
        self.client.close()
        if self._control is not None:
            self._control.close()


def runtime_client(region: str, timeout_s: float) -> Any:
    """A bedrock-runtime client that sends each request once. botocore's `max_attempts` counts
    retries (1 is one retry: a ModelNotReadyException or a throttle would be sent again unseen,
    inside the timed attempt), so this asks for `total_max_attempts`, which counts the first."""
    import boto3
    from botocore.config import Config

    config = Config(
        read_timeout=timeout_s, connect_timeout=5, retries={"total_max_attempts": 1}, max_pool_connections=64
    )
    return boto3.client("bedrock-runtime", region_name=region, config=config)
